"""grpolab.monitor.alerts: each planted pathology fires its alert at the right step; a healthy run raises none."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import yaml

from grpolab.monitor import RULES, alerts, load, load_thresholds, synthetic
from grpolab.monitor.alerts import _previous_medians
from grpolab.monitor.thresholds import default_path

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("seed", range(6))
def test_healthy_run_raises_no_alert(tmp_path, seed):
    path = synthetic.write_jsonl(tmp_path / "metrics.jsonl", synthetic.healthy(80, seed=seed))
    assert alerts(path) == []


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("at", [25, 41])
def test_planted_pathology_fires_its_alert_at_its_step(tmp_path, rule, at):
    records = synthetic.plant(synthetic.healthy(80, seed=3), rule, at)
    path = synthetic.write_jsonl(tmp_path / "metrics.jsonl", records)
    found = alerts(path)
    assert [(a.rule, a.step) for a in found] == [(rule, at)], [a.message for a in found]
    alert = found[0]
    assert alert.metrics and all(m in load(path).names for m in alert.metrics)
    assert str(at) in alert.message
    json.dumps(alert.to_dict(), allow_nan=False)  # NaN/inf values are reported as strings, valid JSON


def test_every_rule_has_a_plant_and_a_threshold_block():
    assert set(RULES) == set(synthetic.PLANTS)
    text = default_path().read_text()
    for rule in RULES:
        assert f"\n  {rule}:" in text


def test_nan_alert_names_the_metrics_and_ignores_missing_values(tmp_path):
    records = synthetic.healthy(20)
    for record in records[5:8]:
        del record["data"]["actor/pg_loss"]  # not logged is not NaN
    records = synthetic.plant(records, "nan", 12)
    found = alerts(synthetic.write_jsonl(tmp_path / "m.jsonl", records))
    assert [(a.rule, a.step) for a in found] == [("nan", 12)]
    assert set(found[0].metrics) == {"actor/pg_loss", "actor/grad_norm"}
    assert found[0].to_dict()["value"] == "nan"


def test_nan_rearms_after_recovery(tmp_path):
    records = synthetic.plant(synthetic.plant(synthetic.healthy(30), "nan", 10), "nan", 20)
    records[10]["data"]["actor/pg_loss"] = math.nan  # step 11: the same episode as step 10
    found = alerts(synthetic.write_jsonl(tmp_path / "m.jsonl", records))
    assert [(a.rule, a.step) for a in found] == [("nan", 10), ("nan", 20)]


def test_two_pathologies_in_one_run_are_ordered_by_step(tmp_path):
    records = synthetic.plant(synthetic.plant(synthetic.healthy(80), "throughput-drop", 50), "kl-spike", 30)
    found = alerts(synthetic.write_jsonl(tmp_path / "m.jsonl", records))
    assert [(a.rule, a.step) for a in found] == [("kl-spike", 30), ("throughput-drop", 50)]


def test_short_blips_below_patience_do_not_fire(tmp_path):
    records = synthetic.healthy(60)
    for step in (30, 31):  # two clipped steps; patience is 3
        records[step - 1]["data"]["response_length/clip_ratio"] = 0.5
    records[40]["data"]["perf/throughput"] *= 0.3  # one slow step (a checkpoint save)
    assert alerts(synthetic.write_jsonl(tmp_path / "m.jsonl", records)) == []


def test_level_alert_hovering_around_its_limit_fires_once(tmp_path):
    records = synthetic.plant(synthetic.healthy(80), "entropy-collapse", 30)
    for record in records[35:60:4]:  # a few steps back above the limit now and then: still one episode
        record["data"]["actor/entropy"] = 0.5
    for record in records[70:]:  # a clear recovery (more than rearm_steps) would re-arm it
        record["data"]["actor/entropy"] = 0.6
    found = alerts(synthetic.write_jsonl(tmp_path / "m.jsonl", records))
    assert [(a.rule, a.step) for a in found] == [("entropy-collapse", 30)]


def test_level_alert_fires_again_after_a_real_recovery(tmp_path):
    records = synthetic.plant(synthetic.healthy(80), "length-clipped", 20)
    for record in records[29:55]:  # steps 30-55 healthy again, then clipped from 56 on
        record["data"]["response_length/clip_ratio"] = 0.01
    found = alerts(synthetic.write_jsonl(tmp_path / "m.jsonl", records))
    assert [(a.rule, a.step) for a in found] == [("length-clipped", 20), ("length-clipped", 56)]


def test_absent_metrics_raise_nothing(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_text("".join(json.dumps({"step": s, "data": {"other/x": 1.0}}) + "\n" for s in range(1, 40)))
    assert alerts(path) == []
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert alerts(empty) == []


def _custom(tmp_path, mutate) -> Path:
    data = yaml.safe_load(default_path().read_text())
    mutate(data)
    path = tmp_path / "custom.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_thresholds_come_from_the_file(tmp_path):
    records = synthetic.plant(synthetic.healthy(60), "entropy-collapse", 30)
    path = synthetic.write_jsonl(tmp_path / "m.jsonl", records)
    disabled = _custom(tmp_path, lambda d: d["alerts"]["entropy-collapse"].update(enabled=False))
    assert alerts(path, disabled) == []
    assert alerts(path, load_thresholds(disabled)) == []
    # a strict clip-ratio limit turns the healthy run's ~1 % clipped responses into an alert at the start
    strict = _custom(tmp_path, lambda d: d["alerts"]["length-clipped"].update(max_ratio=0.0, patience=1))
    assert [a.rule for a in alerts(synthetic.write_jsonl(tmp_path / "h.jsonl", synthetic.healthy(10)), strict)] \
        == ["length-clipped"]


def test_previous_medians():
    assert _previous_medians([1, 2, 3, 4, 100, 5], 3) == [None, None, None, 2, 3, 4]
    assert _previous_medians([4, 1, 3, 2, 9], 2) == [None, None, 2.5, 2, 2.5]


def _real_metrics_files() -> list[Path]:
    # Real runs' metrics (e.g. a `tiny` run's metrics.jsonl) dropped into tests/data/monitor/, or named by
    # GRPOLAB_REAL_METRICS (os.pathsep-separated): the monitor must read them and alert sensibly.
    files = sorted((ROOT / "tests" / "data" / "monitor").glob("*.jsonl"))
    files += [Path(p) for p in os.environ.get("GRPOLAB_REAL_METRICS", "").split(os.pathsep) if p]
    return files


@pytest.mark.parametrize("path", _real_metrics_files() or [None], ids=lambda p: getattr(p, "name", "none"))
def test_real_metrics_file(path, tmp_path):
    if path is None:
        pytest.skip("no real metrics file yet: copy a tiny run's metrics.jsonl into tests/data/monitor/")
    view = load(path)
    assert view.steps, f"{path}: no steps read ({view.problems[:3]})"
    assert view.bad_lines == 0, view.problems[:3]
    steps = set(view.steps)
    for alert in alerts(view):
        assert alert.step in steps and alert.rule in RULES
