"""A ruined run never looks healthy (issue 44): tiny at lr 1000 ended SUCCEEDED with its validation accuracy at 0,
its gradient norm 0 and its entropy at its maximum, and every view said it was fine. Now every view of its state
says "SUCCEEDED, but training collapsed at step N" (monitor, runs, status, diagnose, 04_monitor's verdict), the
regression gate fails it, and a healthy tiny run (recorded, real) raises none of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import grpolab.cli
from grpolab import notebook as nb
from grpolab.jobs.runs import create_run
from grpolab.monitor import alerts, compare, load_metrics, synthetic
from grpolab.monitor.collapse import collapse_of, run_collapse, state_text
from grpolab.monitor.thresholds import from_recipe, thresholds_for
from grpolab.recipe.loader import load_recipe, to_yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "monitor"
LR1000 = DATA / "tiny_lr1000.jsonl"  # a real tiny run at algorithm.lr=1000 (its first 300 steps; README there)
HEALTHY = sorted(DATA.glob("tiny_seed*.jsonl"))


@pytest.fixture
def views(monkeypatch):
    """grpolab's command line in-process, with the verbs a user asks about a run."""
    verbs = {"monitor": "monitor", "runs": "runs", "status": "runs", "diagnose": "diagnose", "compare": "compare"}
    monkeypatch.setattr(grpolab.cli, "VERBS", verbs)
    return grpolab.cli.main


def _run(run_id: str, metrics: Path, state: str = "SUCCEEDED"):
    """A tiny run as a launch records it (its resolved recipe, tiny's wider alert limits in it), whose metrics are
    a recorded file, ended in `state`."""
    run = create_run("tiny", run_id=run_id, recipe="tiny")
    run.recipe_file.write_text(to_yaml(load_recipe("tiny")))
    shutil.copyfile(metrics, run.metrics_file)
    run.write_status(state=state)
    return run


def test_the_lr1000_run_collapsed_at_step_2_and_healthy_tiny_runs_did_not():
    tiny = from_recipe("tiny")
    found = collapse_of(alerts(load_metrics(LR1000), tiny))
    assert found is not None and found.step == 2
    # the three things the issue saw, each its own error alert: the score fell, no gradient, entropy at its maximum
    assert {"accuracy-collapse", "grad-vanish", "entropy-pinned", "reward-collapse"} == set(found.rules)
    assert "pinned at its maximum" in found.reasons() and "val-core/arith/acc/mean@1 fell to 0" in found.reasons()
    for path in HEALTHY:
        assert [a for a in alerts(load_metrics(path), tiny) if a.severity == "error"] == [], path.name


def test_every_view_of_a_collapsed_run_says_so(views, capsys):
    _run("tiny-lr1000", LR1000)
    _run("tiny-healthy", HEALTHY[0])
    said = "SUCCEEDED, but training collapsed at step 2"

    assert views(["monitor", "tiny-lr1000", "--no-refresh", "--no-png"]) == 1
    out = capsys.readouterr().out
    assert f"state     {said}" in out and "ERROR   grad-vanish" in out and "ERROR   accuracy-collapse" in out
    assert views(["monitor", "tiny-lr1000", "--no-refresh", "--no-png", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["state"] == "SUCCEEDED" and data["collapse"]["step"] == 2  # the job's state stays the job's

    assert views(["runs"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "but training collapsed at step 2 (reward-collapse, grad-vanish" in rows["tiny-lr1000"]
    assert "training collapsed" not in rows["tiny-healthy"]
    assert views(["runs", "--json"]) == 0
    listed = {r["run_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed["tiny-lr1000"]["collapse"]["step"] == 2 and listed["tiny-healthy"]["collapse"] is None

    assert views(["status", "tiny-lr1000"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"run tiny-lr1000: {said}") and "lower algorithm.lr" in out

    assert views(["diagnose", "tiny-lr1000", "--no-refresh"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("run tiny-lr1000: training-collapse") and "Training collapsed at step 2" in out

    for argv in (["monitor", "tiny-healthy", "--no-refresh", "--no-png"], ["status", "tiny-healthy"]):
        assert views(argv) == 0, argv
        assert "training collapsed" not in capsys.readouterr().out
    assert views(["diagnose", "tiny-healthy", "--no-refresh"]) == 0


def test_04_monitors_verdict_fails_a_collapsed_run(capsys):
    run = _run("tiny-lr1000", LR1000)
    with pytest.raises(nb.NotebookStop, match="SUCCEEDED, but training collapsed at step 2"):
        nb.verdict(run, strict=True)
    nb.verdict(_run("tiny-healthy", HEALTHY[0]), strict=True)
    assert "training collapsed" not in capsys.readouterr().out


def test_the_regression_gate_fails_a_collapsed_run_whatever_its_figures(finished_run):
    finished_run("baseline", synthetic.healthy(150, seed=1))
    # the same healthy run, its gradient gone from step 100: the gate's window (steps 5-14) sees nothing wrong
    finished_run("ruined", synthetic.plant(synthetic.healthy(150, seed=1), "grad-vanish", 100))
    result = compare("ruined", "baseline")
    assert all(f.status != "fail" for f in result.figures)
    assert not result.passed and "the run ruined: training collapsed at step 100 (grad-vanish)" in result.problems[0]
    assert compare("baseline", "baseline").passed
    swapped = compare("baseline", "ruined")  # a ruined baseline is no yardstick either
    assert not swapped.passed and "pick a healthy baseline" in swapped.problems[0]


def test_a_recovered_episode_is_an_alert_not_a_collapse(tmp_path):
    records = synthetic.plant(synthetic.healthy(120), "grad-vanish", 40)
    for record in records[70:]:  # the gradient is back for good from step 71
        record["data"]["actor/grad_norm"] = 0.3 + 0.01 * (record["step"] % 3)
    view = load_metrics(synthetic.write_jsonl(tmp_path / "m.jsonl", records))
    found = alerts(view)
    assert [(a.rule, a.step, a.ongoing) for a in found] == [("grad-vanish", 40, False)]
    assert collapse_of(found) is None


def test_a_nan_that_stays_is_a_collapse_too_and_the_states_words():
    records = synthetic.plant(synthetic.healthy(40), "nan", 30)
    found = collapse_of(alerts(load_metrics_of(records)))
    assert found is not None and found.rules == ("nan",) and found.step == 30
    assert state_text("RUNNING", found) == "RUNNING, but training collapsed at step 30"
    assert state_text("FAILED", found.to_dict()) == "FAILED; training had collapsed at step 30"
    assert state_text("SUCCEEDED", None) == "SUCCEEDED"


def load_metrics_of(records):
    import tempfile

    with tempfile.TemporaryDirectory(prefix="grpolab-collapse-") as folder:  # (read whole: nothing is left behind)
        return load_metrics(synthetic.write_jsonl(Path(folder) / "metrics.jsonl", records))


def test_a_run_recorded_before_the_collapse_rules_gets_them_from_its_recipe():
    """A run's recipe.yaml keeps the `monitor:` section it was launched with; a rule added since comes from its
    recipe as it is today (else base.yaml), and what the run recorded still wins."""
    run = _run("old-run", LR1000)
    recipe = yaml.safe_load(run.recipe_file.read_text())
    for rule in ("reward_collapse", "accuracy_collapse", "grad_vanish", "entropy_pinned", "kl_explode"):
        del recipe["monitor"]["alerts"][rule]
    recipe["monitor"]["alerts"]["slow_steps"]["min_count"] = 17  # what this run was launched with
    run.recipe_file.write_text(yaml.safe_dump(recipe))
    limits = thresholds_for(run)
    assert limits.alerts.grad_vanish.enabled and limits.alerts.slow_steps.min_count == 17
    assert run_collapse(run).step == 2


@pytest.mark.slow(40)
def test_a_real_tiny_run_at_lr_1000_ends_collapsed_in_every_view(no_head, cli):
    """The issue's run itself, from no head: `grpolab check` warns on the lr first; the run ends SUCCEEDED, and
    `run --wait`, `monitor`, `runs` and `diagnose` all say its training collapsed (the healthy full run of tiny is
    `make run`'s test: tests/test_readme.py asserts it raises none of this)."""
    sets = ["--set", "algorithm.lr=1000", "--set", "trainer.total_steps=30", "--set", "trainer.test_freq=10"]
    checked = cli("check", "tiny", *sets, env=no_head)
    assert checked.returncode == 0 and "WARNING [learning-rate] algorithm.lr = 1000" in checked.stdout
    ran = cli("run", "tiny", *sets, "--run-id", "lr1000", "--wait", env=no_head, timeout=420)
    assert ran.returncode == 1 and "internal error" not in ran.stdout + ran.stderr, ran.stdout[-3000:] + ran.stderr
    assert "run lr1000: SUCCEEDED, but training collapsed at step" in ran.stdout
    monitor = cli("monitor", "lr1000", "--no-png", env=no_head)
    assert monitor.returncode == 1 and "SUCCEEDED, but training collapsed at step" in monitor.stdout
    assert "ERROR   grad-vanish" in monitor.stdout
    listed = cli("runs", env=no_head)
    assert "but training collapsed at step" in next(line for line in listed.stdout.splitlines() if "lr1000" in line)
    diagnosed = cli("diagnose", "lr1000", env=no_head)
    assert diagnosed.returncode == 1 and diagnosed.stdout.startswith("run lr1000: training-collapse")
