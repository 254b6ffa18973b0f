"""The `monitor:` section (params/base.yaml, recipes, a run's recipe.yaml) and grpolab.monitor.thresholds: one
home for the numbers, a recipe overriding what fits it, strict loading with errors that say the fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from grpolab.monitor.thresholds import ThresholdsError, default_path, from_recipe, load_thresholds, thresholds_for

ROOT = Path(__file__).resolve().parents[1]


def test_the_one_home_is_base_yaml_and_the_gate_holds_the_recipes_thresholds():
    assert not (Path(__file__).resolve().parents[1] / "params" / "monitor").exists()  # no second home
    th = load_thresholds()
    assert th.source == f"{default_path()} (monitor:)" and default_path().name == "base.yaml"
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


def test_every_rule_in_base_yaml_is_documented():
    text = default_path().read_text()
    section = text[text.index("\nmonitor:") :]
    for rule in (
        "nan",
        "reward-flat",
        "entropy-collapse",
        "kl-spike",
        "length-clipped",
        "grad-spike",
        "throughput-drop",
    ):
        assert f"# {rule}:" in section, f"rule {rule} is not documented in base.yaml"


def test_a_recipe_overrides_only_what_fits_it():
    tiny, base = from_recipe("tiny"), load_thresholds()
    assert tiny.source == "recipe tiny (monitor:)"
    assert tiny.alerts.kl_spike.factor > base.alerts.kl_spike.factor and not tiny.alerts.throughput_drop.enabled
    assert tiny.alerts.nan == base.alerts.nan and tiny.regression == base.regression  # the rest is inherited
    assert load_thresholds(ROOT / "params" / "recipes" / "tiny.yaml") == tiny  # a recipe file: its layers merged
    assert any(line.startswith("throughput-drop   off") for line in tiny.describe())


def test_a_run_uses_the_thresholds_of_its_recipe(tmp_path):
    from grpolab.jobs.runs import Run
    from grpolab.recipe.loader import load_recipe, to_yaml

    (tmp_path / "recipe.yaml").write_text(to_yaml(load_recipe("tiny", ["monitor.alerts.kl_spike.factor=12"])))
    th = thresholds_for(Run(tmp_path))
    assert th.alerts.kl_spike.factor == 12 and th.source == f"{tmp_path / 'recipe.yaml'} (monitor:)"
    assert thresholds_for(Run(tmp_path / "elsewhere")).source == load_thresholds().source  # no recipe: base
    from grpolab.jobs.runs import create_run

    old = create_run("tiny", run_id="old-run", root=tmp_path)  # recorded before recipes had `monitor:`: by name
    (old.path / "recipe.yaml").write_text("trainer: {seed: 1}\n")
    old.write_status(state="SUCCEEDED", recipe="tiny")
    assert thresholds_for(old).source == "recipe tiny (monitor:)"


def test_grpolab_show_prints_the_monitor_section():
    import subprocess
    import sys

    out = subprocess.run(
        [str(Path(sys.executable).with_name("grpolab")), "show", "tiny"], capture_output=True, text=True, cwd=ROOT
    )
    shown = yaml.safe_load(out.stdout)["monitor"]
    assert shown["alerts"]["kl_spike"]["factor"] == 10.0 and shown["alerts"]["throughput_drop"]["enabled"] is False


def _write(tmp_path, mutate) -> Path:
    data = yaml.safe_load(default_path().read_text())["monitor"]
    mutate(data)
    path = tmp_path / "health.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_misspelled_key_names_file_key_and_closest_valid_key(tmp_path):
    def typo(data):
        data["alerts"]["entropy_collapse"]["flor"] = data["alerts"]["entropy_collapse"].pop("floor")

    path = _write(tmp_path, typo)
    with pytest.raises(ThresholdsError) as err:
        load_thresholds(path)
    message = str(err.value)
    assert str(path) in message
    assert "alerts.entropy_collapse.flor" in message and "did you mean 'floor'" in message
    assert "missing key 'alerts.entropy_collapse.floor'" in message


def test_unknown_rule_and_unknown_figure_key(tmp_path):
    def bad(data):
        data["alerts"]["kl_spkie"] = {}
        data["regression"]["figures"]["memory"]["metrc"] = "x"

    with pytest.raises(ThresholdsError) as err:
        load_thresholds(_write(tmp_path, bad))
    message = str(err.value)
    assert "did you mean 'kl_spike'" in message
    assert "regression.figures.memory.metrc" in message and "did you mean 'metric'" in message


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda d: d["alerts"]["length_clipped"].update(max_ratio=1.5), "alerts.length_clipped.max_ratio"),
        (lambda d: d["alerts"]["reward_flat"].update(window=0), "alerts.reward_flat.window"),
        (lambda d: d["regression"].update(steps=[14, 5]), "regression.steps"),
        (lambda d: d["regression"]["figures"]["reward"].update(fails_on="up"), "regression.figures.reward.fails_on"),
        (lambda d: d["alerts"]["nan"].update(metrics=[]), "alerts.nan.metrics"),
        (lambda d: d["alerts"]["kl_spike"].update(min_count=4, of_last=3), "alerts.kl_spike"),
    ],
)
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
    with pytest.raises(ValidationError):
        th.alerts.nan.enabled = False
