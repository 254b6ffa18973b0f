"""The commands in the benchmarks' headers run and print their figures (speed targets are judged by a person
reading those figures, never by a timed test). benchmarks/tiny_grpo.py, three full seeds plus a bare-TRL
baseline (about eight minutes), is the one left to a manual run; its short form runs here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = str(Path(sys.executable))


@pytest.mark.parametrize(
    "args,expect",
    [
        (["benchmarks/check_speed.py"], "grpolab check glm5_2` whole process"),
        (["benchmarks/plan_speed.py", "--runs", "1"], "grpolab plan glm5_2` whole process"),
        (["benchmarks/monitor_speed.py", "--steps", "5000"], "grpolab monitor / pandas"),
        (["benchmarks/monitor_alerts.py"], "false alarms per 1000 healthy steps: 0.00"),
        pytest.param(
            ["benchmarks/preflight_speed.py", "--warm", "1", "--smi-delay", "0.2", "--nodes", "2"],
            "per-node phase, 2 nodes / 1 node",
            marks=pytest.mark.slow(30),
        ),
        (["benchmarks/loader_speed.py"], "alias bomb"),
        (["benchmarks/submit_path.py"], "the recipe's way"),
        (["benchmarks/import_speed.py"], "grpolab import SCRIPT --out -` whole process"),
        (["benchmarks/data_sample.py", "--mb", "16"], "--no-dry-run --no-tokenizer` whole process"),
        (["benchmarks/diagnose_speed.py", "--size-mb", "64"], "right answer (device-oom, rank 11, node 10.0.0.6): yes"),
        (["benchmarks/diagnose_crafted.py", "--size-mb", "2"], "twice the size took"),
        # "no": pyproject pins jsonschema below 4.25; a head that does not start exits 1, which fails here too
        pytest.param(
            ["benchmarks/head_start.py"], "rfc3987-syntax's parser built by that import: no", marks=pytest.mark.slow(12)
        ),
        # a fresh head, one tiny run whose trainer worker is killed: the time from the kill to the resumed first step
        pytest.param(
            ["benchmarks/restart_latency.py", "--runs", "1"], "failure -> first new step", marks=pytest.mark.slow(45)
        ),
        # 8 steps cannot reach the accuracy targets: the benchmark then says NO and exits 1, as it should
        (
            ["benchmarks/tiny_grpo.py", "--seeds", "1", "--set", "total_steps=8", "--set", "test_freq=4"]
            + ["--set", "warmup_steps=5"],
            "ratio of our steps/s to bare TRL",
        ),
    ],
)
def test_benchmark_runs_and_prints_its_figures(args, expect):
    proc = subprocess.run([PY, *args], cwd=ROOT, capture_output=True, text=True, timeout=600)
    allowed = (0, 1) if "tiny_grpo.py" in args[0] else (0,)
    assert proc.returncode in allowed, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert expect in proc.stdout, proc.stdout[-2000:]


def test_megatron_fields_are_current_for_the_shipped_list():
    """scripts/megatron_fields.py regenerates lib/grpolab/data/megatron_fields.json from a megatron-core wheel
    (downloading it needs the package index, so the test checks the file it wrote instead)."""
    import json

    data = json.loads((ROOT / "lib/grpolab/data/megatron_fields.json").read_text())
    assert data["megatron_core"] == "0.16.1"
    assert {"num_attention_heads", "pipeline_model_parallel_layout", "moe_router_dtype"} <= set(data["transformer"])
    assert "use_flash_attn" in data["ascend_extras"]
