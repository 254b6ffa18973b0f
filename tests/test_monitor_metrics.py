"""grpolab.monitor.metrics: incremental reading of metrics.jsonl and the console-line fallback."""

from __future__ import annotations

import json
import math

import pytest

from grpolab.jobs.runs import RunNotFound, create_run
from grpolab.monitor import synthetic
from grpolab.monitor.metrics import MetricsView, load_metrics, parse_console_line, parse_console_value


def _line(step, **data) -> str:
    return json.dumps({"step": step, "data": data}) + "\n"


def test_reads_columns_aligned_on_steps_with_missing_and_nan(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(_line(1, a=1.0, b=2) + _line(2, a=float("nan")) + _line(3, b=5.5, c=True))
    view = load_metrics(path)
    assert view.steps == [1, 2, 3]
    assert view.names == ["a", "b", "c"]
    a = view.column("a")
    assert a[0] == 1.0 and math.isnan(a[1]) and a[2] is None  # NaN as logged, None where not logged
    assert view.column("b") == [2.0, None, 5.5]
    assert view.column("c") == [None, None, 1.0]
    assert view.column("unknown") == [None, None, None]
    assert view.latest("a")[0] == 2 and math.isnan(view.latest("a")[1])
    assert view.latest("b") == (3, 5.5)
    assert view.latest("unknown") is None
    assert "a" in view and "unknown" not in view
    assert view.last_step == 3 and len(view) == 3
    assert view.series("b") == ([1, 3], [2.0, 5.5])
    assert view.values_between("b", 2, 3) == [5.5]
    arr = view.array("b")
    assert arr.shape == (3,) and math.isnan(arr[1])


def test_refresh_reads_only_new_bytes(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(_line(1, x=1.0) + _line(2, x=2.0))
    view = load_metrics(path)
    offset = view._tail.offset
    assert offset == path.stat().st_size
    assert view.refresh() == 0  # nothing new
    with open(path, "a") as handle:
        handle.write(_line(3, x=3.0, y=9.0))
    assert view.refresh() == 1
    assert view._tail.offset == path.stat().st_size
    assert view.column("x") == [1.0, 2.0, 3.0]
    assert view.column("y") == [None, None, 9.0]  # a new metric is padded for the earlier steps


def test_half_written_last_line_waits_for_the_next_refresh(tmp_path):
    path = tmp_path / "metrics.jsonl"
    full = _line(2, x=2.0, y=1.0)
    path.write_text(_line(1, x=1.0) + full[:15])  # the writer is in the middle of step 2
    view = load_metrics(path)
    assert view.steps == [1] and view.bad_lines == 0
    with open(path, "a") as handle:
        handle.write(full[15:-1])  # complete object, newline not written yet: a whole record
    assert view.refresh() == 1 and view.steps == [1, 2]
    with open(path, "a") as handle:
        handle.write("\n" + _line(3, x=3.0))
    assert view.refresh() == 1
    assert view.steps == [1, 2, 3] and view.column("y") == [None, 1.0, None]
    assert view.bad_lines == 0


def test_invalid_json_at_the_end_is_not_an_error(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(_line(1, x=1.0) + '{"step": 2, "data": {"x": 1.')
    view = load_metrics(path)
    assert view.steps == [1] and view.bad_lines == 0 and view.problems == []


def test_corrupt_line_in_the_middle_is_skipped_and_reported(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(_line(1, x=1.0) + "garbage\n" + '{"step": "two", "data": {}}\n' + _line(3, x=3.0))
    view = load_metrics(path)
    assert view.steps == [1, 3]
    assert view.bad_lines == 2 and "line 2" in view.problems[0]


def test_repeated_step_is_merged_and_extra_top_level_keys_ignored(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(
        json.dumps({"step": 1, "elapsed_seconds": 5.5, "data": {"x": 1.0}})
        + "\n"
        + _line(2, x=2.0)
        + _line(2, **{"val-core/arith/acc/mean@1": 0.5})
        + _line(1, x=1.5)
    )
    view = load_metrics(path)
    assert view.steps == [1, 2]
    assert view.column("x") == [1.5, 2.0]
    assert view.column("val-core/arith/acc/mean@1") == [None, 0.5]


def test_truncated_file_is_read_again_from_the_start(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text(_line(1, x=1.0) + _line(2, x=2.0) + _line(3, x=3.0))
    view = load_metrics(path)
    path.write_text(_line(101, x=7.0))  # verl truncates the file when a run restarts (resume from step 100)
    assert view.refresh() > 0
    assert view.steps == [101] and view.column("x") == [7.0]
    # rewritten with a different beginning and longer than before: still noticed
    path.write_text(_line(5, x=5.0) * 1 + _line(6, x=6.0) + _line(7, x=7.0) + _line(8, x=8.0))
    view.refresh()
    assert view.steps == [5, 6, 7, 8]


def test_missing_file_is_empty_and_appears_later(tmp_path):
    path = tmp_path / "metrics.jsonl"
    view = MetricsView(path)
    assert view.refresh() == 0 and view.steps == []
    path.write_text(_line(1, x=1.0))
    assert view.refresh() == 1 and view.steps == [1]


def test_large_file_is_read_in_blocks(tmp_path, monkeypatch):
    import grpolab.monitor.metrics as metrics

    monkeypatch.setattr(metrics, "_CHUNK_BYTES", 64)  # many blocks, lines straddling block boundaries
    records = synthetic.healthy(30)
    path = synthetic.write_jsonl(tmp_path / "metrics.jsonl", records)
    view = load_metrics(path)
    assert view.steps == list(range(1, 31))
    assert view.column("critic/score/mean") == [r["data"]["critic/score/mean"] for r in records]


@pytest.mark.parametrize(
    "text, value",
    [
        ("0.15", 0.15),
        ("np.float64(0.15)", 0.15),
        ("np.int64(3)", 3.0),
        ("np.float32(-2.5e-05)", -2.5e-05),
        ("3", 3.0),
        ("True", 1.0),
        ("np.True_", None),
        ("'text'", None),
    ],
)
def test_console_values(text, value):
    assert parse_console_value(text) == value


def test_console_values_nan_inf():
    assert math.isnan(parse_console_value("nan"))
    assert math.isnan(parse_console_value("np.float64(nan)"))
    assert parse_console_value("inf") == math.inf and parse_console_value("np.float64(-inf)") == -math.inf


def test_console_line_with_ray_prefix_and_colours():
    line = (
        "\x1b[36m(TaskRunner pid=2817)\x1b[0m step:12 - actor/entropy:np.float64(0.4312) - "
        "critic/score/mean:np.float64(0.3125) - val-core/arith/acc/mean@1:0.25 - "
        "actor/pg_loss:nan - perf/total_num_tokens:np.int64(40960) - timing_s/step:3.1 [repeated 2x across cluster]"
    )
    step, data = parse_console_line(line)
    assert step == 12
    assert data["actor/entropy"] == 0.4312 and data["critic/score/mean"] == 0.3125
    assert data["val-core/arith/acc/mean@1"] == 0.25 and data["perf/total_num_tokens"] == 40960.0
    assert math.isnan(data["actor/pg_loss"]) and data["timing_s/step"] == 3.1
    assert parse_console_line("INFO 12-01 step:abc nothing") is None
    assert parse_console_line("Training Progress: 10%|█ | 3/30 [00:10<01:30]") is None


def test_run_without_metrics_file_falls_back_to_console_lines(runs_root):
    run = create_run("tiny", run_id="console-run")
    records = synthetic.healthy(12)
    noise = ["INFO 2026-01-01 ray_trainer.py:123 -- starting", "(WorkerDict pid=77) loading weights"]
    run.job_log.write_text("\n".join(noise + synthetic.console_lines(records)) + "\n")
    view = load_metrics("console-run")
    assert view.kind == "console" and view.path == run.job_log
    assert view.steps == list(range(1, 13))
    assert view.column("actor/entropy") == pytest.approx([r["data"]["actor/entropy"] for r in records])
    with open(run.job_log, "a") as handle:
        handle.write(synthetic.console_lines(synthetic.healthy(13)[-1:])[0] + "\n")
    assert view.refresh() == 1 and view.last_step == 13


def test_run_view_switches_to_metrics_file_when_it_appears(runs_root):
    run = create_run("tiny", run_id="late-metrics")
    run.job_log.write_text("starting\n")
    view = load_metrics(run)
    assert view.kind == "console" and view.steps == []
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(3))
    view.refresh()
    assert view.kind == "jsonl" and view.steps == [1, 2, 3]


def test_load_by_run_id_directory_and_file(runs_root, tmp_path):
    run = create_run("tiny", run_id="r1")
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(5))
    other = synthetic.write_jsonl(tmp_path / "elsewhere" / "my-metrics.jsonl", synthetic.healthy(4))
    assert load_metrics("r1").steps == [1, 2, 3, 4, 5]
    assert load_metrics(run.path).steps == [1, 2, 3, 4, 5]
    assert load_metrics(run.metrics_file).steps == [1, 2, 3, 4, 5]
    assert load_metrics(str(other)).steps == [1, 2, 3, 4]  # any metrics file, any name
    with pytest.raises(RunNotFound, match="no run 'nope'"):
        load_metrics("nope")


def test_to_pandas(tmp_path):
    pytest.importorskip("pandas")
    path = synthetic.write_jsonl(tmp_path / "m.jsonl", synthetic.healthy(5))
    frame = load_metrics(path).to_pandas()
    assert list(frame.index) == [1, 2, 3, 4, 5] and "critic/score/mean" in frame.columns


def test_a_refresh_cleans_only_the_new_rows_and_a_rewritten_step_is_seen(tmp_path):
    from grpolab.monitor import synthetic

    path = synthetic.write_jsonl(tmp_path / "m.jsonl", synthetic.healthy(30))
    view = load_metrics(path)
    before = view.column("critic/score/mean")
    records = synthetic.healthy(35)[30:]
    records[0]["data"]["critic/score/mean"] = "n/a"
    synthetic.write_jsonl(path, records, append=True)
    view.refresh()
    after = view.column("critic/score/mean")
    assert len(before) == 30 and after[:30] == before and len(after) == 35 and after[30] is None
    assert view.dropped() == {"critic/score/mean": 1}
    synthetic.write_jsonl(path, [{"step": 3, "data": {"critic/score/mean": 0.99}}], append=True)  # step 3 again
    view.refresh()
    assert view.column("critic/score/mean")[2] == 0.99 and view.duplicate_steps == 1


def test_last_step_follows_growth_restarts_and_steps_that_go_back(tmp_path):
    """last_step is the highest step logged, kept up to date without rescanning every step on each refresh."""
    path = tmp_path / "metrics.jsonl"
    synthetic.write_jsonl(path, synthetic.healthy(30))
    view = load_metrics(path)
    assert view.last_step == 30 and "critic/score/mean" in view and "nope" not in view
    synthetic.write_jsonl(path, [{"step": 12, "data": {"critic/score/mean": 0.5}}], append=True)  # a resumed run
    view.refresh()
    assert view.last_step == 30
    synthetic.write_jsonl(path, synthetic.healthy(35)[30:], append=True)
    view.refresh()
    assert view.last_step == 35
    synthetic.write_jsonl(path, synthetic.healthy(4))  # rewritten from the start: a restarted run
    view.refresh()
    assert view.last_step == 4
