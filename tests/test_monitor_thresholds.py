"""params/monitor/*.yaml and grpolab.monitor.thresholds.load_thresholds: strict, with errors that say the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grpolab.monitor.thresholds import Thresholds, ThresholdsError, default_path, load_thresholds

MONITOR_PARAMS = sorted((Path(__file__).resolve().parents[1] / "params" / "monitor").glob("*.yaml"))


@pytest.mark.parametrize("path", MONITOR_PARAMS, ids=lambda p: p.name)
def test_every_monitor_params_file_loads(path):
    assert isinstance(load_thresholds(path), Thresholds)


def test_default_file_holds_the_recipes_gate_thresholds():
    th = load_thresholds()
    assert th.source == str(default_path())
    gate = th.regression
    assert gate.steps == (5, 14)
    figures = {f.metric: f for f in gate.figures.values()}
    memory = figures["actor/perf/max_memory_allocated_gb"]
    assert (memory.limit, memory.relative, memory.fails_on) == (1.0, False, "increase")
    throughput = figures["perf/throughput"]
    assert (throughput.limit, throughput.relative, throughput.fails_on) == (0.05, True, "decrease")
    step_time = figures["timing_s/step"]
    assert (step_time.limit, step_time.relative, step_time.fails_on) == (0.05, True, "increase")
    reward = figures["critic/score/mean"]
    assert (reward.limit, reward.relative, reward.fails_on) == (0.05, False, "change")


def test_every_value_in_the_default_file_is_commented():
    # Documentation is part of the contract: each leaf value carries a comment on its line or its block.
    text = default_path().read_text()
    assert text.count("#") > 40
    for rule in ("nan", "reward-flat", "entropy-collapse", "kl-spike", "length-clipped", "grad-spike",
                 "throughput-drop"):
        assert f"# {rule}:" in text, f"rule {rule} is not documented in health.yaml"


def _write(tmp_path, mutate) -> Path:
    data = yaml.safe_load(default_path().read_text())
    mutate(data)
    path = tmp_path / "health.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_misspelled_key_names_file_key_and_closest_valid_key(tmp_path):
    def typo(data):
        data["alerts"]["entropy-collapse"]["flor"] = data["alerts"]["entropy-collapse"].pop("floor")

    path = _write(tmp_path, typo)
    with pytest.raises(ThresholdsError) as err:
        load_thresholds(path)
    message = str(err.value)
    assert str(path) in message
    assert "alerts.entropy-collapse.flor" in message and "did you mean 'floor'" in message
    assert "missing key 'alerts.entropy-collapse.floor'" in message


def test_unknown_rule_and_unknown_figure_key(tmp_path):
    def bad(data):
        data["alerts"]["kl-spkie"] = {}
        data["regression"]["figures"]["memory"]["metrc"] = "x"

    with pytest.raises(ThresholdsError) as err:
        load_thresholds(_write(tmp_path, bad))
    message = str(err.value)
    assert "did you mean 'kl-spike'" in message
    assert "regression.figures.memory.metrc" in message and "did you mean 'metric'" in message


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["alerts"]["length-clipped"].update(max_ratio=1.5), "alerts.length-clipped.max_ratio"),
    (lambda d: d["alerts"]["reward-flat"].update(window=0), "alerts.reward-flat.window"),
    (lambda d: d["regression"].update(steps=[14, 5]), "regression.steps"),
    (lambda d: d["regression"]["figures"]["reward"].update(fails_on="up"), "regression.figures.reward.fails_on"),
    (lambda d: d["alerts"]["nan"].update(metrics=[]), "alerts.nan.metrics"),
])
def test_bad_values_name_the_key(tmp_path, mutate, expected):
    with pytest.raises(ThresholdsError, match=expected.replace(".", r"\.")):
        load_thresholds(_write(tmp_path, mutate))


def test_missing_unreadable_and_malformed_files(tmp_path):
    with pytest.raises(ThresholdsError, match="no such thresholds file"):
        load_thresholds(tmp_path / "absent.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("alerts: [unclosed\n")
    with pytest.raises(ThresholdsError, match="not valid YAML at line"):
        load_thresholds(broken)
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n- 2\n")
    with pytest.raises(ThresholdsError, match="expected a mapping"):
        load_thresholds(listing)


def test_thresholds_are_frozen():
    th = load_thresholds()
    with pytest.raises(Exception):
        th.alerts.nan.enabled = False
