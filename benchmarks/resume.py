"""Benchmark of `grpolab resume` on `tiny`: a run of 1200 steps stopped near half and resumed, against an
uninterrupted run with the same seed (issue 24's "Done when").

Through the command line, as a user, on the embedded Ray head (started if none runs, stopped at the end if this
script started it), in a runs/ folder of its own:
  1. grpolab run tiny --run-id straight                            the uninterrupted run, training beside 2 and 3
  2. grpolab run tiny --run-id parent; grpolab stop parent          once its metrics reach --stop-at
  3. grpolab resume parent --wait --run-id child                    from parent's latest complete checkpoint
  4. grpolab status straight, until it ended
and prints: the step parent was stopped at and the checkpoint child continued from; whether parent's steps up to that
checkpoint and child's make one run of steps 0..N, each once; the final validation accuracy of straight and of child
and their difference; whether `grpolab runs` links child to parent; the seconds each phase took (the uninterrupted
run's are its job's own, from `grpolab status`; it shares the machine with the other two, as they share it with it).
Exit status 0 when the steps are continuous, the runs linked and the accuracies within --tolerance (0.1), else 1.

Command (from the repository root; about 3 tiny trainings, two at a time, 3-4 minutes on an idle 2-core machine):

    .venv/bin/python benchmarks/resume.py [--steps 1200] [--stop-at 600] [--tolerance 0.1] [--keep DIR]
                                          [--set key=value ...]   (recipe overrides for all three runs)

Set GRPOLAB_RAY_PORT / GRPOLAB_DASHBOARD_PORT to keep off another head's ports.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
VAL_ACC = "val-core/arith/acc/mean@1"


def grpolab(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([GRPOLAB, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)


def rows(path: Path) -> list[dict]:
    out = []
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def final_val(records: list[dict]) -> float | None:
    vals = [r["data"][VAL_ACC] for r in records if VAL_ACC in r["data"]]
    return vals[-1] if vals else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1200)
    parser.add_argument("--stop-at", type=int, default=600)
    parser.add_argument("--tolerance", type=float, default=0.1)
    parser.add_argument("--keep", type=Path, help="keep the runs here (default: a temporary folder, removed)")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()

    runs_root = args.keep or Path(tempfile.mkdtemp(prefix="grpolab-resume-bench-"))
    env = {**os.environ, "GRPOLAB_RUNS": str(runs_root)}
    sets = [a for s in [f"trainer.total_steps={args.steps}", *args.sets] for a in ("--set", s)]
    started_head = "not running" in grpolab(env, "head", "status").stdout
    timings = {}
    try:
        out = grpolab(env, "run", "tiny", "--run-id", "straight", *sets)  # trains while parent and child do
        if out.returncode != 0:
            print(out.stdout[-3000:], out.stderr[-3000:])
            return 1

        t0 = time.perf_counter()
        out = grpolab(env, "run", "tiny", "--run-id", "parent", *sets)
        if out.returncode != 0:
            print(out.stdout[-3000:], out.stderr[-3000:])
            return 1
        metrics = runs_root / "parent" / "metrics.jsonl"
        while True:
            got = rows(metrics)
            if got and got[-1]["step"] >= args.stop_at:
                break
            time.sleep(0.2)
        stopped = grpolab(env, "stop", "parent")
        stop_step = rows(metrics)[-1]["step"]
        timings["parent until stopped"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        out = grpolab(env, "resume", "parent", "--wait", "--run-id", "child")
        timings["resumed child"] = time.perf_counter() - t0
        print(out.stdout.splitlines()[0] if out.stdout else out.stderr)
        if out.returncode != 0:
            print(out.stdout[-3000:], out.stderr[-3000:])
            return 1
        status = json.loads(grpolab(env, "status", "straight", "--json").stdout)
        while status.get("state") in ("PENDING", "RUNNING"):
            time.sleep(1.0)
            status = json.loads(grpolab(env, "status", "straight", "--json").stdout)
        if status.get("state") != "SUCCEEDED":
            print(f"the uninterrupted run ended {status.get('state')}: {status.get('message')}")
            return 1
        timings["uninterrupted run (its job)"] = status.get("elapsed_s") or 0.0
        child_record = json.loads((runs_root / "child" / "launch.json").read_text())
        k = child_record["resumed_from"]["step"]
        parent_rows = [r for r in rows(metrics) if r["step"] <= k]
        child_rows = rows(runs_root / "child" / "metrics.jsonl")
        steps = [r["step"] for r in parent_rows + child_rows]
        continuous = steps == list(range(0, args.steps + 1))
        straight, resumed = final_val(rows(runs_root / "straight" / "metrics.jsonl")), final_val(child_rows)
        listed = grpolab(env, "runs").stdout
        linked = any(
            line.startswith("child") and f"resumed from parent at step {k}" in line for line in listed.splitlines()
        )
        diff = abs(straight - resumed) if straight is not None and resumed is not None else float("inf")
        print(f"parent stopped at step {stop_step} ({stopped.stdout.strip()}); child resumed from checkpoint step {k}")
        print(
            f"steps: parent 0..{k} + child {child_rows[0]['step']}..{child_rows[-1]['step']}: "
            f"{'continuous, each once' if continuous else 'NOT continuous'} ({len(steps)} lines for {args.steps} steps)"
        )
        print(
            f"final {VAL_ACC}: uninterrupted {straight:.4f}, stopped and resumed {resumed:.4f}, difference {diff:.4f} "
            f"(tolerance {args.tolerance})"
        )
        same = [
            a["data"].get("critic/score/mean") == b["data"].get("critic/score/mean")
            for a, b in zip(rows(runs_root / "straight" / "metrics.jsonl")[k + 1 :], child_rows)
        ]
        print(f"reward of the resumed steps equal to the uninterrupted run's: {sum(same)} of {len(same)}")
        print(f"grpolab runs links child to parent: {linked}")
        for phase, seconds in timings.items():
            print(f"  {phase}: {seconds:.0f} s")
        return 0 if continuous and linked and diff <= args.tolerance else 1
    finally:
        if started_head:
            grpolab(env, "head", "stop")
        if args.keep is None:
            shutil.rmtree(runs_root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
