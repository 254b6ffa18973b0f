"""How long a run that heals itself stands still: from a failure to the resumed attempt's first training step.

A fresh embedded head (free ports, a state folder of its own, stopped at the end) runs `tiny` (40 steps of 32
prompts, a checkpoint every 4, restarts without back-off); once it saved a checkpoint and trains on, the Ray worker
that runs the trainer is killed (SIGKILL). The run's own driver (grpolab.heal.supervise) diagnoses the attempt,
plans the resume and starts the next attempt; once that attempt logged its first step the run is stopped. Printed,
from the kill (seconds, wall clock; each figure the median of `--runs`):

    failure -> attempt ended      Ray reports the worker dead, the driver has the attempt's end
    failure -> next attempt       diagnosis, decision, resume plan, gate, placement of the new worker
    failure -> first new step     the trainer loaded its checkpoint and logged its first step after it

    .venv/bin/python benchmarks/restart_latency.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from head_start import free_ports  # noqa: E402

GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
SETS = [
    "trainer.total_steps=40",
    "trainer.test_freq=8",
    "trainer.save_freq=4",
    "data.train_batch_size=32",
    "local.warmup_steps=5",
    "trainer.restarts.backoff_s=0",
]


def _lineage(run: Path) -> list[dict]:
    try:
        return json.loads((run / "lineage.json").read_text())["attempts"]
    except (OSError, ValueError, KeyError):
        return []


def _wait(predicate, timeout: float = 600, every: float = 0.05):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise SystemExit("timed out")


def one(env: dict, runs: Path, run_id: str) -> dict[str, float]:
    args = [GRPOLAB, "run", "tiny", "--run-id", run_id, *[a for s in SETS for a in ("--set", s)]]
    subprocess.run(args, env=env, check=True, capture_output=True)
    run = runs / run_id

    def trainer():
        attempts = _lineage(run)
        lines = (run / "metrics.jsonl").read_text().splitlines() if (run / "metrics.jsonl").exists() else []
        saved = list(run.glob("checkpoint/global_step_*"))
        if attempts and attempts[-1].get("trainer") and saved and len(lines) >= 7:
            return attempts[-1]["trainer"]
        return None

    worker = _wait(trainer)["worker_pid"]
    killed = time.time()
    os.kill(worker, signal.SIGKILL)
    ended = _wait(lambda: (_lineage(run)[0].get("ended") if _lineage(run)[0].get("decision") != "running" else None))
    second = _wait(lambda: _lineage(run)[1]["started"] if len(_lineage(run)) > 1 else None)
    own = run / "attempts" / "2" / "metrics.jsonl"
    _wait(lambda: own.exists() and own.read_text().strip())
    first = time.time()
    # what is measured has happened: the rest of the 40 steps would only train on (a `grpolab stop` ends the run, and
    # the next run starts on a free head)
    subprocess.run([GRPOLAB, "stop", run_id], env=env, check=True, capture_output=True)
    return {"ended": ended - killed, "next": second - killed, "first": first - killed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    gcs, dashboard = free_ports(24000)
    with tempfile.TemporaryDirectory(prefix="grpolab-restart-") as tmp:
        runs = Path(tmp) / "runs"
        env = {**os.environ, "GRPOLAB_RAY_PORT": str(gcs), "GRPOLAB_DASHBOARD_PORT": str(dashboard)}
        env |= {"GRPOLAB_RUNS": str(runs), "OMP_NUM_THREADS": "1"}
        env.pop("RAY_ADDRESS", None)
        try:
            subprocess.run([GRPOLAB, "head", "start"], env=env, check=True, capture_output=True)
            found = [one(env, runs, f"restart-{i}") for i in range(args.runs)]
        finally:
            subprocess.run([GRPOLAB, "head", "stop"], env=env, capture_output=True)
    print(f"tiny, a killed trainer worker, {args.runs} run(s), median (min-max) seconds from the kill:")
    for key, label in (
        ("ended", "failure -> attempt ended"),
        ("next", "failure -> next attempt"),
        ("first", "failure -> first new step"),
    ):
        values = [f[key] for f in found]
        print(f"  {label:28} {statistics.median(values):6.2f}  ({min(values):.2f}-{max(values):.2f})")
    load = os.getloadavg()[0]
    print(f"load average (1 min) at the end: {load:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
