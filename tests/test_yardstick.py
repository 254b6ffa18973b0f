"""While a run goes: measured step time and tokens/s per device against the estimate for the run's own recipe and
the nearest published run, in `grpolab monitor --json` and its text; an alert while steps take more than twice
their estimate, cleared once they recover; none (and no estimate) for the CPU trainer's `tiny`. No Ray: the
runs here are records on disk and the monitor is asked not to refresh."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from grpolab.jobs.runs import create_run
from grpolab.monitor.summary import RunMonitor, format_summary
from grpolab.monitor.yardstick import SLOW_FACTOR, Yardstick
from grpolab.plan import io
from grpolab.recipe.loader import to_yaml

ROOT = Path(__file__).resolve().parents[1]
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
RESPONSE, PROMPT = 3000.0, 400.0


def make_run(root: Path, recipe_name: str, factors: list[float]) -> tuple[Path, float]:
    """A run record of `recipe_name` whose step i took factors[i] x the estimate; (its directory, estimate)."""
    run = create_run(recipe_name, root=root)
    run.recipe_file.write_text(to_yaml(io.load(recipe_name)))
    estimate = Yardstick(run).estimate(RESPONSE, PROMPT)
    with run.metrics_file.open("w") as out:
        for step, factor in enumerate(factors, 1):
            data = {
                "timing_s/step": estimate * factor,
                "perf/throughput": 100.0 / factor,
                "response_length/mean": RESPONSE,
                "prompt_length/mean": PROMPT,
            }
            out.write(json.dumps({"step": step, "data": data}) + "\n")
    return run.path, estimate


def test_a_healthy_run_is_shown_against_its_estimate_and_the_nearest_published_run(tmp_path):
    path, estimate = make_run(tmp_path, "qwen3_30b_a3b", [1.1] * 20)
    data = RunMonitor(str(path)).update(refresh=False)
    ys = data["yardstick"]
    assert abs(ys["estimate"]["step_s"] - estimate) < 1e-6 and abs(ys["estimate"]["ratio"] - 1.1) < 1e-6
    assert ys["estimate"]["kind"] == "estimate" and ys["estimate"]["tokens_per_device_s"] > 0
    assert ys["alert"] is None
    published = ys["published"]  # the same model on the same hardware first: none on A3, so the closest size
    assert published["model"] == "Qwen3-30B-A3B" and published["step_s"] > 0 and published["source"]
    text = format_summary(data)
    assert f"estimate {estimate:.3g} s (1.10x)" in text and "published: Qwen3-30B-A3B on" in text


def test_slower_than_half_the_estimate_for_several_steps_alerts_and_clears(tmp_path):
    slow = SLOW_FACTOR * 1.5
    factors = [1.0] * 10 + [slow] * 6 + [1.0] * 10  # steps 11-16 slow, then recovered
    path, _ = make_run(tmp_path, "qwen3_30b_a3b", factors)
    alert = RunMonitor(str(path)).update(refresh=False)["yardstick"]["alert"]
    assert alert["rule"] == "slower-than-estimate" and alert["step"] == 11 and alert["end"] == 16
    assert alert["ongoing"] is False and alert["count"] == 6 and "recovered" in alert["message"]
    path, _ = make_run(tmp_path, "qwen3_30b_a3b", [1.0] * 10 + [slow] * 4)  # still slow
    data = RunMonitor(str(path)).update(refresh=False)
    assert data["yardstick"]["alert"]["ongoing"] is True
    assert "WARNING slower-than-estimate: since step 11" in format_summary(data)
    path, _ = make_run(tmp_path, "qwen3_30b_a3b", [1.0] * 10 + [slow, slow, 1.0, slow, slow, 1.0])  # blips
    assert RunMonitor(str(path)).update(refresh=False)["yardstick"]["alert"] is None


def test_tiny_has_no_estimate_and_no_alert_and_monitor_json_says_why(tmp_path):
    run = create_run("tiny", root=tmp_path)
    run.recipe_file.write_text(to_yaml(io.load("tiny")))
    shutil.copy(ROOT / "tests" / "data" / "monitor" / "tiny_seed1.jsonl", run.metrics_file)  # a real healthy run
    env = {**os.environ, "GRPOLAB_RUNS": str(tmp_path)}
    proc = subprocess.run(
        [GRPOLAB, "monitor", run.run_id, "--json", "--no-png", "--no-refresh"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    ys = json.loads(proc.stdout)["yardstick"]
    assert ys["estimate"] is None and ys["alert"] is None and "train.engine trl" in ys["why_no_estimate"]
    assert ys["step_s"] > 0 and ys["tokens_per_device_s"] > 0 and ys["at_step"] == 1200
    text = subprocess.run(
        [GRPOLAB, "monitor", run.run_id, "--no-png", "--no-refresh"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    ).stdout
    assert "speed     step" in text and "no estimate: train.engine trl" in text
