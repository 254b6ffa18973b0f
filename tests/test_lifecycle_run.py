"""`tiny` stopped, resumed and exported as a user does it, from no Ray head running, through benchmarks/resume.py's
short form (`grpolab run` uninterrupted, training beside `grpolab run`, `grpolab stop` near the start and
`grpolab resume --wait`), then `grpolab runs`, `grpolab export` and `grpolab resume` of the finished child, refused.

100 steps keep it under a minute (the benchmark's default, 1200 steps stopped near 600, shows the full claim). No
count here depends on how fast the machine is: the child starts wherever the parent's last complete checkpoint is.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grpolab.jobs import checkpoints as ck
from grpolab.local.metrics import VAL_ACC, read_jsonl

ROOT = Path(__file__).resolve().parents[1]
STEPS = 100
SETS = ["trainer.save_freq=10", "trainer.test_freq=10", "trainer.keep_ckpts=2"]


@pytest.mark.slow(100)
def test_tiny_stopped_resumed_and_exported_from_no_head(no_head, cli, tmp_path):
    env = {**no_head, "GRPOLAB_RUNS": str(tmp_path / "bench")}
    args = ["--steps", str(STEPS), "--stop-at", "20", "--keep", str(tmp_path / "bench")]
    args += [a for s in SETS for a in ("--set", s)]
    try:
        bench = subprocess.run(
            [sys.executable, "benchmarks/resume.py", *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        cli("head", "stop", env=env)
    assert bench.returncode == 0, bench.stdout[-3000:] + bench.stderr[-3000:]
    assert "continuous, each once" in bench.stdout and "grpolab runs links child to parent: True" in bench.stdout

    runs = tmp_path / "bench"
    k = json.loads((runs / "child" / "launch.json").read_text())["resumed_from"]["step"]
    found = ck.scan(ck.run_layout(runs / "parent"), runs / "parent")
    assert k == max(c.step for c in found if c.complete)
    # the wrapper keeps the last 2 and the best; a stop that lands between a save and its pruning leaves one more
    older = [c.step for c in found if c.step < k - 2 * 10]
    assert len(older) <= 1, f"more than the best kept before the last saves: {older}"  # 10: SETS' save_freq
    parent_rows = [r for r in read_jsonl(runs / "parent" / "metrics.jsonl") if r["step"] <= k]
    child_rows = read_jsonl(runs / "child" / "metrics.jsonl")
    assert [r["step"] for r in child_rows] == list(range(k + 1, STEPS + 1))  # no restart from step 0
    assert [r["step"] for r in parent_rows + child_rows] == list(range(0, STEPS + 1))
    straight = read_jsonl(runs / "straight" / "metrics.jsonl")
    assert abs(straight[-1]["data"][VAL_ACC] - child_rows[-1]["data"][VAL_ACC]) <= 0.1
    record = json.loads((runs / "child" / "launch.json").read_text())
    assert record["resumed_from"]["run_id"] == "parent" and record["provenance"]["seed"] == 1
    assert record["provenance"]["data"]["params/data/tiny/train.parquet"]["sha256"]

    out = cli("export", "child", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    last = child_rows[-1]["data"][VAL_ACC]
    assert f"{last:.4f} from the exported weights, {last:.4f} logged by the run at step {STEPS}" in out.stdout
    from transformers import AutoModelForCausalLM

    exported = runs / "child" / "export" / f"global_step_{STEPS}"
    assert AutoModelForCausalLM.from_pretrained(exported, local_files_only=True).num_parameters() == 124_608

    before = sorted(p.name for p in runs.iterdir())
    out = cli("resume", "child", env=env)
    assert out.returncode == 1 and "nothing left to train" in out.stderr and "trainer.total_steps=" in out.stderr
    assert sorted(p.name for p in runs.iterdir()) == before  # nothing submitted
