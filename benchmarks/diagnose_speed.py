"""How fast `grpolab diagnose` reads a big multi-rank log, and with how much memory.

Writes a synthetic verl console log of --size-mb MB into a temporary directory: 16 ranks on two nodes, Ray's
`(WorkerDict pid=N, ip=A) [rankR]:` prefixes interleaved, INFO lines, a step line per rank and step (their
`actor/pg_loss` and `critic/score` words reach the prefilter, as in a real log), now and then a warning that
names a timeout; near the end rank 11 on 10.0.0.6 runs out of device memory, then the other ranks time out in
the collective it never reached and Ray reports the dead worker. Then it runs `grpolab diagnose LOG --json` as a
whole process and prints its wall time, throughput, peak memory (the child's max RSS) and the answer, which
must be device-oom on rank 11, node 10.0.0.6. Target: the full 2 GB (`--size-mb 2048`) in under 10 s with
memory that does not grow with the log (a few tens of MB above the interpreter's). `--per-rank` writes one file
per rank into a folder and diagnoses the folder.

    .venv/bin/python benchmarks/diagnose_speed.py --size-mb 64
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
RANKS = 16
ORIGIN = 11


def _prefix(rank: int) -> str:
    return f"(WorkerDict pid={4000 + rank}, ip=10.0.0.{5 + rank // 8}) [rank{rank}]:"


def _block(step: int) -> str:
    """One training step of every rank's output, about 30 KB."""
    out = []
    for rank in range(RANKS):
        p = _prefix(rank)
        for i in range(8):
            out.append(
                f"{p} INFO 12-02 10:{step % 60:02d}:{i:02d} [fsdp_workers.py:{300 + i}] rollout batch {i}: generated "
                f"512 sequences, mean length {200 + i}, kv cache usage {0.4 + i / 100:.2f}, tokens/s {9000 + i}"
            )
        out.append(
            f"{p} step:{step} - actor/pg_loss:np.float64(0.0121) - actor/entropy:np.float64(1.2) - "
            f"critic/score/mean:np.float64(0.34) - critic/rewards/mean:np.float64(0.34) - "
            f"perf/throughput:np.float64(1234.5)"
        )
        if step % 50 == 0:
            out.append(f"{p} WARNING 12-02 10:00:00 [utils.py:77] the rollout timeout is {600 + step} s")
    return "\n".join(out) + "\n"


def _failure() -> str:
    p = _prefix(ORIGIN)
    lines = [
        f"{p} torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.71 GiB. GPU 3 has a total capacity of "
        "79.11 GiB of which 1.20 GiB is free.",
    ]
    for rank in range(RANKS):
        if rank != ORIGIN:
            lines.append(
                f"{_prefix(rank)}[E1202 10:59:00.1 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught collective "
                "operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=5, NumelOut=5, "
                "Timeout(ms)=600000) ran for 600061 milliseconds before timing out."
            )
    lines.append("(raylet, ip=10.0.0.6) A worker died or was killed while executing a task by an unexpected error.")
    return "\n".join(lines) + "\n"


def write_log(folder: Path, size_mb: int, per_rank: bool) -> Path:
    size = size_mb << 20
    if per_rank:
        target = folder / "logs"
        target.mkdir()
        handles = {r: open(target / f"rank{r}.log", "w") for r in range(RANKS)}  # noqa: SIM115
        step, written = 0, 0
        while written < size:
            step += 1
            for line in _block(step).splitlines(keepends=True):
                rank = int(line.split("[rank", 1)[1].split("]", 1)[0])
                handles[rank].write(line)
                written += len(line)
        for line in _failure().splitlines(keepends=True):
            rank = int(line.split("[rank", 1)[1].split("]", 1)[0]) if "[rank" in line else ORIGIN
            handles[rank].write(line)
        for handle in handles.values():
            handle.close()
        return target
    target = folder / "job.log"
    block = _block(1)
    repeats = max(1, size // len(block))
    with open(target, "w") as handle:
        for step in range(1, repeats + 1):
            handle.write(block if step % 50 else _block(step))
            if step == int(repeats * 0.95):
                handle.write(_failure())
    return target


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=64, help="size of the log (the target: 2048)")
    parser.add_argument("--per-rank", action="store_true", help="one log per rank in a folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="grpolab-diagnose-") as tmp:
        started = time.perf_counter()
        log = write_log(Path(tmp), args.size_mb, args.per_rank)
        wrote = time.perf_counter() - started
        size = sum(p.stat().st_size for p in log.iterdir()) if log.is_dir() else log.stat().st_size
        env = dict(os.environ)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        started = time.perf_counter()
        proc = subprocess.run(
            [GRPOLAB, "diagnose", str(log), "--json"],
            capture_output=True,
            text=True,
            env=env,
        )
        took = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        failure = json.loads(proc.stdout)["failure"] if proc.stdout.strip() else None
    baseline = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, grpolab.cli.diagnose, grpolab.monitor.diagnose;"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)",
        ],
        capture_output=True,
        text=True,
    )
    idle = int(baseline.stdout.strip() or 0)
    print(
        f"log: {size / 2**20:.0f} MiB{' in ' + str(RANKS) + ' per-rank files' if args.per_rank else ''} "
        f"(written in {wrote:.1f} s)"
    )
    print(f"`grpolab diagnose LOG` whole process: {took:.2f} s, {size / 2**20 / took:.0f} MiB/s")
    print(f"peak memory: {max(peak, before) / 1024:.0f} MiB (the same imports without a log: {idle / 1024:.0f} MiB)")
    if failure:
        print(f"answer: {failure['cause']}, rank {failure['rank']}, node {failure['node']}")
    right = bool(failure) and failure["cause"] == "device-oom" and failure["rank"] == ORIGIN
    right = right and failure["node"] == "10.0.0.6"
    print(f"right answer (device-oom, rank {ORIGIN}, node 10.0.0.6): {'yes' if right else 'NO'}")
    projected = took * 2048 / max(1, size / 2**20)
    print(
        f"2 GB target: under 10 s (`--size-mb 2048`; at this speed about {projected:.1f} s, start-up included: "
        "small sizes overstate it)"
    )
    return 0 if right and proc.returncode == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
