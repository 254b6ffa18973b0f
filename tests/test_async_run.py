"""An asynchronous CPU run (issue 42): `tiny_async` trains in colocate_async mode (grpolab.local.async_loop: TRL's own
async trainer needs CUDA), its metrics carry verl's V1 off-policy names, 04_monitor shows its staleness and
importance-ratio curves (headless here; tests/test_browser.py in JupyterLab), and the off-policy alerts stay quiet on
a real healthy async run and speak on a planted pathology.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grpolab.local.mapping import settings_from_recipe
from grpolab.monitor import alerts, load_metrics, synthetic
from grpolab.monitor.offpolicy import IS_MEAN, STALENESS_MAX, STALENESS_MEAN, format_offpolicy, offpolicy
from grpolab.monitor.thresholds import from_recipe
from grpolab.recipe.loader import load_recipe, to_yaml

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "data" / "monitor" / "tiny_async_seed1.jsonl"  # a real 300-step tiny_async run
ASYNC_RULES = ("staleness", "trainer-starved", "is-ratio-drift", "rollout-idle")
PAPERMILL = Path(sys.executable).with_name("papermill")
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED", "LOST")


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_async_tiny_run_trains_on_older_samples_within_the_bound(tmp_path, short_tiny):
    """In-process, SHORT_TINY: every step logs its staleness and importance ratio under verl's names; a step trains on
    samples of the policy before it (the generator thread runs one batch ahead), never more than the bound allows."""
    from grpolab.local.train import run

    settings = settings_from_recipe(load_recipe("tiny_async", short_tiny))
    assert settings.mode == "colocate_async" and settings.max_off_policy == 4
    summary = run(settings, tmp_path, echo=lambda _: None)
    assert summary["steps"] == settings.total_steps and summary["val_end"] is not None
    steps = [r for r in _records(tmp_path / "metrics.jsonl") if r["step"] > 0]
    assert [r["step"] for r in steps] == list(range(1, settings.total_steps + 1))
    for record in steps:
        data = record["data"]
        assert 0 <= data[STALENESS_MEAN] <= data[STALENESS_MAX] < settings.max_off_policy
        assert data[IS_MEAN] > 0 and data["timing_s/gen"] >= 0 and data["critic/score/mean"] >= 0
    # the generator finishes the group it holds (policy v) before it takes the new weights: step 2 trains on it
    assert steps[1]["data"][STALENESS_MAX] >= 1
    assert offpolicy(load_metrics(tmp_path / "metrics.jsonl"))["asynchronous"]


def test_a_recorded_healthy_async_run_raises_no_alert_and_each_planted_pathology_its_own(tmp_path):
    thresholds = from_recipe("tiny_async")
    assert alerts(load_metrics(RECORDED), thresholds) == []
    for rule in ASYNC_RULES:
        planted = synthetic.write_jsonl(tmp_path / f"{rule}.jsonl", synthetic.plant(_records(RECORDED), rule, 150))
        found = alerts(load_metrics(planted), thresholds)
        assert [(a.rule, a.step) for a in found] == [(rule, 150)], [a.message for a in found]


def test_a_planted_staleness_excess_raises_its_alert_with_the_lag_and_the_limit(tmp_path):
    records = synthetic.plant(_records(RECORDED), "staleness", 200)
    found = alerts(load_metrics(synthetic.write_jsonl(tmp_path / "m.jsonl", records)), from_recipe("tiny_async"))
    assert len(found) == 1 and found[0].rule == "staleness" and found[0].step == 200
    assert "12 model versions" in found[0].message and "limit 8" in found[0].message
    assert "max_off_policy" in found[0].advice
    lines = format_offpolicy(offpolicy(load_metrics(tmp_path / "m.jsonl")), found)
    assert any(line.startswith("ALERT staleness: ") for line in lines)


def test_a_synchronous_run_has_no_off_policy_view():
    recorded = ROOT / "tests" / "data" / "monitor" / "tiny_seed1.jsonl"
    assert offpolicy(load_metrics(recorded)) is None
    assert "synchronous trainer" in format_offpolicy(None)[0]


def _papermill_04(run_id: str, runs: Path, out: Path) -> list[dict]:
    env = {**os.environ, "GRPOLAB_RUNS": str(runs)}
    cmd = [str(PAPERMILL), "notebooks/04_monitor.ipynb", str(out), "-p", "run_id", run_id, "-p", "live", "False"]
    result = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=540)
    assert result.returncode == 0, result.stderr[-3000:]
    import nbformat

    cells = nbformat.read(out, as_version=4).cells
    return [o for c in cells if c.cell_type == "code" for o in c.get("outputs", [])]


def _assert_async_view(outputs: list[dict], alert: str | None) -> None:
    text = "".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in outputs)
    assert "asynchronous training" in text and "off-policy staleness:" in text, text[-2000:]
    assert "importance ratio (rollout IS weight, mean):" in text
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the run's curves
    page = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
    curves = page.split("alt='off-policy curves: ", 1)[1].split("'", 1)[0]  # the off-policy picture, inline
    assert "off-policy staleness" in curves and "importance ratio" in curves and "base64," in page
    if alert:
        assert f"ALERT {alert}: " in text


def test_04_monitor_shows_a_finished_async_runs_staleness_and_importance_ratio_and_its_alert(tmp_path):
    """No Ray: a finished tiny_async run (the recorded one, staleness excess planted) shown from its files."""
    from grpolab.jobs.runs import create_run

    runs = tmp_path / "runs"
    run = create_run("tiny_async", run_id="tiny-async-done", root=runs)
    (run.path / "recipe.yaml").write_text(to_yaml(load_recipe("tiny_async")))
    synthetic.write_jsonl(run.metrics_file, synthetic.plant(_records(RECORDED), "staleness", 200))
    run.write_status(state="SUCCEEDED", recipe="tiny_async", total_steps=300)
    outputs = _papermill_04("tiny-async-done", runs, tmp_path / "out.ipynb")
    _assert_async_view(outputs, "staleness")
    assert (run.path / "offpolicy.png").is_file()


@pytest.mark.slow(60)
def test_an_async_tiny_run_as_a_ray_job_and_its_04_monitor_view(ray_head, runs_root, short_tiny, wait_for, tmp_path):
    """tiny_async (SHORT_TINY) submitted as a Ray job on the embedded head, as `grpolab run` does, then 04_monitor
    headless on it: the staleness and importance-ratio figures and curves of the run the job wrote."""
    from grpolab.jobs import launch
    from grpolab.jobs.state import refresh

    run = launch.submit(load_recipe("tiny_async", short_tiny), progress=lambda *_: None)
    ended = wait_for(lambda: (state := refresh(run).get("state")) in TERMINAL and state, 300)
    assert ended == "SUCCEEDED", run.job_log.read_text()[-3000:] if run.job_log.exists() else ended
    assert offpolicy(load_metrics(run.metrics_file))["asynchronous"]
    _assert_async_view(_papermill_04(run.run_id, runs_root, tmp_path / "out.ipynb"), None)
