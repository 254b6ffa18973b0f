"""The regression gate: grpolab.monitor.compare and `grpolab compare` (through grpolab.cli.main)."""

from __future__ import annotations

import json

import pytest

from grpolab.monitor import compare, synthetic


def _scaled(records, metric, factor):
    for record in records:
        record["data"][metric] *= factor
    return records


def test_run_against_itself_passes(runs_root, monitor_cli, capsys, finished_run):
    finished_run("base", synthetic.healthy(20))
    assert monitor_cli(["compare", "base", "--baseline", "base"]) == 0
    out = capsys.readouterr().out
    for label in ("device memory", "throughput", "step time", "reward mean"):
        assert label in out
    assert "result: PASS" in out and "steps 5-14" in out


def test_planted_ten_percent_throughput_drop_fails(runs_root, monitor_cli, capsys, finished_run):
    finished_run("base", synthetic.healthy(20))
    finished_run("slow", _scaled(synthetic.healthy(20), "perf/throughput", 0.9))
    assert monitor_cli(["compare", "slow", "--baseline", "base"]) == 1
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("throughput"))
    assert "FAIL" in row and "-10.00 %" in row and ">= -5 %" in row
    assert "result: REGRESSION (1 of 4 figures failed" in out
    # the other way round the throughput is up 11 %: not a regression
    assert monitor_cli(["compare", "base", "--baseline", "slow"]) == 0


def test_json_output(runs_root, monitor_cli, capsys, finished_run):
    finished_run("base", synthetic.healthy(20))
    finished_run("slow", _scaled(synthetic.healthy(20), "perf/throughput", 0.9))
    assert monitor_cli(["compare", "slow", "--baseline", "base", "--json", "--steps", "3-12"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["passed"] is False and data["steps"] == [3, 12] and data["run_steps"] == 10
    figures = {f["name"]: f for f in data["figures"]}
    assert figures["throughput"]["status"] == "fail"
    assert figures["throughput"]["change"] == pytest.approx(-0.1)
    assert {f["status"] for n, f in figures.items() if n != "throughput"} == {"pass"}


@pytest.mark.parametrize(
    "metric, factor, figure",
    [
        ("timing_s/step", 1.06, "step_time"),
        ("actor/perf/max_memory_allocated_gb", 1.05, "memory"),  # ~41 GB x 1.05: +2 GB
    ],
)
def test_each_figure_can_fail(runs_root, metric, factor, figure, finished_run):
    finished_run("base", synthetic.healthy(20))
    finished_run("worse", _scaled(synthetic.healthy(20), metric, factor))
    result = compare("worse", "base")
    assert [f.name for f in result.failed_figures] == [figure]


def test_reward_moves_either_way(runs_root, finished_run):
    finished_run("base", synthetic.healthy(20))
    up = synthetic.healthy(20)
    for record in up:
        record["data"]["critic/score/mean"] += 0.06
    finished_run("up", up)
    assert [f.name for f in compare("up", "base").failed_figures] == ["reward"]
    assert [f.name for f in compare("base", "up").failed_figures] == ["reward"]


def test_metric_missing_in_both_is_skipped_in_one_fails(runs_root, monitor_cli, capsys, finished_run):
    def without_memory(records):
        for record in records:
            del record["data"]["actor/perf/max_memory_allocated_gb"]
        return records

    finished_run("a", without_memory(synthetic.healthy(20)))
    finished_run("b", without_memory(synthetic.healthy(20)))
    finished_run("c", synthetic.healthy(20))
    result = compare("a", "b")
    assert result.passed
    memory = next(f for f in result.figures if f.name == "memory")
    assert memory.status == "skipped" and "neither" in memory.note
    assert monitor_cli(["compare", "a", "--baseline", "b"]) == 0
    assert "skipped" in capsys.readouterr().out
    one_sided = compare("a", "c")
    assert not one_sided.passed
    memory = next(f for f in one_sided.figures if f.name == "memory")
    assert memory.status == "fail" and "baseline only" in memory.note


def test_run_that_has_not_reached_the_window_fails(runs_root, monitor_cli, capsys, finished_run):
    finished_run("base", synthetic.healthy(20))
    finished_run("short", synthetic.healthy(3), state="RUNNING")
    result = compare("short", "base")
    assert not result.passed and "has no step in 5-14" in result.problems[0]
    assert monitor_cli(["compare", "short", "--baseline", "base"]) == 1
    assert "problem:" in capsys.readouterr().out
    finished_run("partial", synthetic.healthy(9), state="RUNNING")
    partial = compare("partial", "base")
    assert partial.passed and "5 of the 10 steps" in partial.notes[0]


def test_nan_in_the_window_fails(runs_root, finished_run):
    finished_run("base", synthetic.healthy(20))
    records = synthetic.healthy(20)
    records[7]["data"]["critic/score/mean"] = float("nan")
    finished_run("nan", records)
    reward = next(f for f in compare("nan", "base").figures if f.name == "reward")
    assert reward.status == "fail" and "NaN" in reward.note


def test_a_baseline_that_logged_only_nan_is_named_as_such(runs_root, finished_run):
    records = synthetic.healthy(20)
    for record in records:
        record["data"]["critic/score/mean"] = None  # verl's file logger writes NaN as null
    finished_run("nanbase", records)
    finished_run("good", synthetic.healthy(20))
    reward = next(f for f in compare("good", "nanbase").figures if f.name == "reward")
    assert reward.status == "fail" and "the baseline has only NaN/inf values (10)" in reward.note
    assert "not by" not in reward.note  # it did log the metric


@pytest.mark.parametrize(
    "argv, message",
    [
        (["compare", "ghost", "--baseline", "base"], "no run 'ghost'"),
        (["compare", "base", "--baseline", "ghost"], "no run 'ghost'"),
        (["compare", "base", "--baseline", "base", "--steps", "five"], "expected FIRST-LAST"),
        (["compare", "base", "--baseline", "base", "--steps", "14-5"], "write it as 5-14"),
        (["compare", "base", "--baseline", "base", "--thresholds", "/nonexistent.yaml"], "no such thresholds file"),
    ],
)
def test_unusable_input_exits_2_without_traceback(runs_root, monitor_cli, capsys, argv, message, finished_run):
    finished_run("base", synthetic.healthy(20))
    assert monitor_cli(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_metrics_files_can_be_compared_directly(tmp_path):
    a = synthetic.write_jsonl(tmp_path / "a" / "metrics.jsonl", synthetic.healthy(20))
    b = synthetic.write_jsonl(tmp_path / "b.jsonl", synthetic.healthy(20))
    result = compare(a, b, steps=(5, 14))
    assert result.passed and result.baseline.endswith("b.jsonl")
    assert "result: PASS" in result.table()
