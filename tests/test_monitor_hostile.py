"""What a careless or hostile input does to `grpolab monitor` and `grpolab compare` (issue 19): nothing hangs,
nothing reads without bound, nothing crashes; an empty comparison is an error, never a PASS; and the run's
elapsed time is its own (issue 23). Each case asserts what the user sees: the exit status, the message, the
document. Cases that would hang if they regressed run the real command in a subprocess with a time limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import grpolab.cli
from grpolab.jobs import state
from grpolab.jobs.runs import create_run
from grpolab.monitor import compare, load_metrics, metrics, summary, synthetic
from grpolab.monitor.outcome import describe_outcome

HUGE = "1" + "0" * 400  # 10^400: beyond a float, as a JSON integer


def _renamed(records, prefix):
    """The same steps with every metric under another name: two trainers that share no metric."""
    return [{"step": r["step"], "data": {f"{prefix}/{k}": v for k, v in r["data"].items()}} for r in records]


# ---------------------------------------------------------------------------------------------- compare


def test_compare_with_no_metric_in_common_is_an_error_not_a_pass(runs_root, monitor_cli, capsys, finished_run):
    finished_run("a", synthetic.healthy(20))
    finished_run("b", _renamed(synthetic.healthy(20), "other"))
    result = compare("a", "b")
    assert not result.passed and result.nothing_to_compare and result.problems[0].startswith("nothing to compare")
    assert monitor_cli(["compare", "a", "--baseline", "b"]) == 1
    out, err = capsys.readouterr()
    assert "result: NOTHING TO COMPARE" in out and "grpolab compare: nothing to compare: " in err
    assert monitor_cli(["compare", "a", "--baseline", "b", "--json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["exit"] == 1 and document["error"].startswith("nothing to compare: no figure of the gate")
    # one figure in common is a comparison: the others, logged by one run only, fail it as before
    finished_run(
        "c",
        [
            {"step": r["step"], "data": {"critic/score/mean": r["data"]["critic/score/mean"]}}
            for r in synthetic.healthy(20)
        ],
    )
    assert not compare("a", "c").nothing_to_compare and monitor_cli(["compare", "c", "--baseline", "c"]) == 0


def test_a_metric_of_ten_to_the_400_is_inf_with_a_flag_never_a_crash(
    runs_root, monitor_cli, capsys, tmp_path, finished_run
):
    run = finished_run("huge", synthetic.healthy(20))
    with open(run.metrics_file, "a") as fh:
        fh.write(f'{{"step": 21, "data": {{"critic/score/mean": {HUGE}, "actor/entropy": 1e400}}}}\n')
        fh.write('{"step": 22, "data": {"critic/score/mean": -' + HUGE + "}}\n")
    view = load_metrics(run.metrics_file)
    assert view.column("critic/score/mean")[-2:] == [float("inf"), float("-inf")] and view.huge_values == 3
    assert monitor_cli(["monitor", "huge", "--json", "--no-png"]) == 1  # a reward of -inf at the end: collapsed
    data = json.loads(capsys.readouterr().out)
    assert data["source"]["huge_values"] == 3 and any("beyond a float's range" in n for n in data["notes"])
    reward = next(m for m in data["latest"] if m["metric"] == "critic/score/mean")
    assert reward["value"] == "-inf" and reward["step"] == 22
    assert monitor_cli(["monitor", "huge", "--no-png"]) == 1 and "beyond a float's range" in capsys.readouterr().out
    assert monitor_cli(["compare", "huge", "--baseline", "huge", "--steps", "15-22"]) == 1  # inf fails the gate, loudly
    assert "NaN/inf" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------- records


def test_an_ill_typed_record_is_a_bad_record_in_every_view_naming_each_bad_field(
    runs_root, monitor_cli, capsys, monkeypatch, finished_run
):
    """One policy (grpolab.jobs.runs.StatusRecord): `runs` shows the run as a bad row while the others list;
    `monitor`, `monitor --json`, `status` and the notebooks stop with one clean error naming every bad field."""
    from grpolab.notebook import NotebookStop, find_run

    finished_run("good", synthetic.healthy(5))
    run = finished_run("typed", synthetic.healthy(10), state="FAILED", job_id="j")
    run.write_status(message=5, total_steps="many", log_tail=[7], started="yesterday", ended=1e308 * 10)
    named = ("message = 5", 'total_steps = "many"', "log_tail.0 = 7", 'started = "yesterday"', "ended = Infinity")
    monkeypatch.setattr(grpolab.cli, "VERBS", {"monitor": "monitor", "runs": "runs", "status": "runs"})
    for argv in (
        ["monitor", "typed", "--no-png"],
        ["monitor", "typed", "--no-png", "--no-refresh"],
        ["status", "typed"],
    ):
        assert monitor_cli(argv) == 2, argv
        out, err = capsys.readouterr()
        assert not out and len(err.splitlines()) == 1 and "Traceback" not in err, (argv, out, err)
        assert all(field in err for field in named), (argv, err)
    assert monitor_cli(["monitor", "typed", "--json", "--no-png"]) == 2
    document = json.loads(capsys.readouterr().out)
    assert document["exit"] == 2 and all(field in document["error"] for field in named)
    with pytest.raises(NotebookStop) as stopped:  # 04_monitor's first cell
        find_run("typed")
    assert all(field in str(stopped.value) for field in named)
    assert monitor_cli(["runs"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "SUCCEEDED" in rows["good"] and "unreadable record: " in rows["typed"] and "message = 5" in rows["typed"]
    assert summary("good", refresh=False)["state"] == "SUCCEEDED"  # the other run is untouched


def test_elapsed_is_the_runs_own_time_from_its_record(runs_root, monitor_cli, capsys, finished_run):
    """A run that ran 2:42 says 2:42, whenever and however often it is looked at (issue 23 item 2)."""
    run = finished_run("timed", synthetic.healthy(10), started=1_000_000.0, ended=1_000_162.0)
    for _ in range(2):
        assert summary("timed", refresh=False)["elapsed_s"] == 162.0
    assert monitor_cli(["monitor", "timed", "--no-png", "--no-refresh"]) == 0
    assert "state     SUCCEEDED  ran 2:42" in capsys.readouterr().out
    (run.path / "job.json").write_text(json.dumps({"started": 1_000_010.0}))  # the job's own start wins
    assert summary("timed", refresh=False)["elapsed_s"] == 152.0
    running = finished_run("running", synthetic.healthy(5), state="RUNNING", started=time.time() - 95)
    data = summary(running.run_id, refresh=False)
    assert data["ended"] is None and 95 <= data["elapsed_s"] < 140
    # the one home of a run's times (grpolab.jobs.state.run_times): a finished record from before runs kept their
    # end ends at its last update, in the monitor and in `status --json` alike, and never keeps counting
    old = finished_run("old", synthetic.healthy(3))
    record = json.loads(old.status_file.read_text())
    old.status_file.write_text(json.dumps({**record, "started": 1_000_000.0, "updated": 1_000_100.0}))
    assert summary("old", refresh=False)["elapsed_s"] == 100.0 == state.elapsed_s(old.record())
    assert "ran 1:40 (" in describe_outcome(old, old.record())


# ---------------------------------------------------------------------------------------------- bounded reads


def test_a_fifo_as_metrics_jsonl_is_refused_not_waited_on(runs_root, monitor_cli, tmp_path):
    run = create_run("tiny", run_id="fifo")
    run.write_status(state="RUNNING")
    os.mkfifo(run.metrics_file)  # opened for a plain read, it blocks until a writer comes: forever
    proc = grpolab_cli("monitor", "fifo", "--json", "--no-png", "--no-refresh")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert any("a FIFO (named pipe), not a regular file: not read" in n for n in data["notes"])
    proc = grpolab_cli("monitor", str(run.metrics_file), "--no-png")  # the FIFO itself as RUN
    assert proc.returncode == 2 and "is a FIFO (named pipe), not a run or a metrics file" in proc.stderr
    proc = grpolab_cli("compare", str(run.metrics_file), "--baseline", str(run.metrics_file))
    assert proc.returncode == 2 and "FIFO" in proc.stderr
    os.mkfifo(tmp_path / "curves.png")  # written into, a FIFO blocks until someone reads it
    proc = grpolab_cli("monitor", "fifo", "--no-refresh", "--png", str(tmp_path / "curves.png"))
    assert proc.returncode == 0 and "could not write the curves to" in proc.stdout  # a note; the report shows
    assert "a FIFO (named pipe), not a file" in proc.stdout


@pytest.mark.parametrize("thresholds", ["fifo", "/dev/zero"])
def test_special_files_as_thresholds_are_refused_at_once(runs_root, tmp_path, thresholds, finished_run):
    run = finished_run("t", synthetic.healthy(10))
    if thresholds == "fifo":
        thresholds = str(tmp_path / "thresholds.yaml")
        os.mkfifo(thresholds)
    for argv in (["monitor", "t", "--no-png"], ["compare", "t", "--baseline", "t"]):
        proc = grpolab_cli(*argv, "--thresholds", thresholds)
        assert proc.returncode == 2 and "not a regular file; give a YAML file" in proc.stderr, proc.stderr
        assert "MemoryError" not in proc.stderr and "Traceback" not in proc.stderr
    assert run.metrics_file.exists()


def test_a_thresholds_file_is_read_by_the_hardened_yaml_reader(runs_root, monitor_cli, capsys, tmp_path, finished_run):
    finished_run("y", synthetic.healthy(10))
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
            for p, c in zip("abcdefg", "bcdefgh")
        )
    )
    assert monitor_cli(["monitor", "y", "--no-png", "--thresholds", str(bomb)]) == 2
    assert "expands to more than" in capsys.readouterr().err
    twice = tmp_path / "twice.yaml"
    twice.write_text("alerts: {}\nalerts: {}\n")
    assert monitor_cli(["monitor", "y", "--no-png", "--thresholds", str(twice)]) == 2
    assert "twice.yaml" in capsys.readouterr().err


def test_a_file_over_the_cap_is_read_from_its_end_and_a_huge_line_is_skipped(tmp_path, monkeypatch):
    path = tmp_path / "metrics.jsonl"
    synthetic.write_jsonl(path, synthetic.healthy(200))
    monkeypatch.setattr(metrics, "MAX_BYTES", path.stat().st_size // 4)
    view = load_metrics(path)
    assert (
        view.steps[-1] == 200 and 30 < len(view.steps) < 60 and view.bad_lines == 0
    )  # the latest quarter, whole lines
    assert "only its last" in view.skipped[0]
    monkeypatch.setattr(metrics, "MAX_LINE_BYTES", 4096)
    monkeypatch.setattr(metrics, "_CHUNK_BYTES", 1024)  # the long line arrives over several blocks, as it grows
    with open(path, "a") as fh:
        fh.write('{"step": 201, "data": {"x": "' + "y" * 20_000 + '"}}\n')
    synthetic.write_jsonl(path, synthetic.healthy(202)[201:], append=True)
    view.refresh()
    assert view.steps[-1] == 202 and 201 not in view.steps and "was skipped" in view.skipped[-1]


def grpolab_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The real command in a subprocess: a case that hangs fails here by its time limit instead of hanging."""
    return subprocess.run(
        [str(Path(sys.executable).with_name("grpolab")), *args], capture_output=True, text=True, timeout=timeout
    )
