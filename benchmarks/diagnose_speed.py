"""How fast `grpolab diagnose` reads a big multi-rank log of REAL console output, and with how much memory.

Writes a verl console log of --size-mb MB into a temporary directory from real healthy lines as posted in public
threads (tests/data/healthy/console.txt, each with its source): verl's step metric line (perf/max_memory_allocated_gb,
response/aborted_ratio, ...), vLLM's INFO lines (sleep mode freed ... memory, KV cache usage and prefix cache hit
rate, weight loading), SGLang's prefill/decode lines, tqdm bars, each behind Ray's `(WorkerDict pid=N, ip=A)` prefix
of one of 16 ranks on two nodes, plus verl's own `Training Progress` bar (tqdm's format, as verl's ray_trainer draws
it) and the start-up advice vLLM prints once per engine start (tests/data/healthy/startup.txt). Near the end rank 11
on 10.0.0.6 runs out of device memory, the other ranks time out in the collective it never reached and Ray
reports the dead worker. Then it runs `grpolab diagnose LOG --json` and `grpolab diagnose - --json < LOG` (stdin),
each as a whole process, and prints wall time, throughput and peak memory (the child's max RSS) and the answer,
which must be device-oom on rank 11, node 10.0.0.6. Target: 1 GB (`--size-mb 1024`) in under 10 s and under
150 MB, both ways. It also prints how many lines of the log reach the patterns (the prefilter's hits): the healthy
lines must give none. `--per-rank` writes one file per rank into a folder and diagnoses the folder.

    .venv/bin/python benchmarks/diagnose_speed.py --size-mb 64
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
HEALTHY = ROOT / "tests" / "data" / "healthy"
RANKS = 16
ORIGIN = 11


def real_lines(name: str) -> list[str]:
    """The lines of a healthy-lines file without its `# source:` comments, Ray's own prefix removed (the benchmark
    puts each rank's prefix before every line)."""
    out = []
    for line in (HEALTHY / name).read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("(") and ") " in line and "pid=" in line.split(") ", 1)[0]:
            line = line.split(") ", 1)[1]
        out.append(line)
    return out


LINES = real_lines("console.txt")
STEP = next(line for line in LINES if line.startswith("step:"))
OTHER = [line for line in LINES if line is not STEP]
STARTUP = real_lines("startup.txt")


def _prefix(rank: int) -> str:
    return f"(WorkerDict pid={4000 + rank}, ip=10.0.0.{5 + rank // 8})"


def _block(step: int, total: int) -> str:
    """One training step of every rank's output: every real healthy line once per rank, then the driver's step line
    and its progress bar."""
    out = []
    for rank in range(RANKS):
        p = _prefix(rank)
        out.extend(f"{p} {line}" for line in OTHER)
    out.append("(TaskRunner pid=3900) " + STEP.replace("step:19 ", f"step:{step} ", 1))
    done = 100 * step // max(1, total)
    out.append(
        f"(TaskRunner pid=3900) Training Progress: {done:3d}%|{'█' * (done // 10):10s}| {step}/{total} "
        f"[{step // 60:02d}:{step % 60:02d}<10:00:00, 43.75s/it]"
    )
    return "\n".join(out) + "\n"


def _startup() -> str:
    return "".join(f"{_prefix(rank)} {line}\n" for rank in range(RANKS) for line in STARTUP)


def _failure() -> str:
    p = _prefix(ORIGIN)
    lines = [
        f"{p} [rank{ORIGIN}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.71 GiB. GPU 3 has a "
        "total capacity of 79.11 GiB of which 1.20 GiB is free.",
    ]
    for rank in range(RANKS):
        if rank != ORIGIN:
            lines.append(
                f"{_prefix(rank)} [rank{rank}]:[E1202 10:59:00.1 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog "
                "caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=5, NumelOut=5, "
                "Timeout(ms)=600000) ran for 600061 milliseconds before timing out."
            )
    lines.append("(raylet, ip=10.0.0.6) A worker died or was killed while executing a task by an unexpected error.")
    return "\n".join(lines) + "\n"


def write_log(folder: Path, size_mb: int, per_rank: bool) -> Path:
    size = size_mb << 20
    per_step = len(_block(1, 1).encode())
    total = max(1, size // per_step)
    if per_rank:
        target = folder / "logs"
        target.mkdir()
        handles = {r: open(target / f"rank{r}.log", "w") for r in range(RANKS)}  # noqa: SIM115
        for step in range(1, total + 1):
            for line in _block(step, total).splitlines(keepends=True):
                rank = (int(line.split("pid=", 1)[1].split(",", 1)[0]) - 4000) % RANKS if "WorkerDict" in line else 0
                handles[rank].write(line)
        for line in _failure().splitlines(keepends=True):
            rank = int(line.split("[rank", 1)[1].split("]", 1)[0]) if "[rank" in line else ORIGIN
            handles[rank].write(line)
        for handle in handles.values():
            handle.close()
        return target
    target = folder / "job.log"
    with open(target, "w") as handle:
        handle.write(_startup())
        for step in range(1, total + 1):
            handle.write(_block(step, total))
            if step == int(total * 0.95):
                handle.write(_failure())
    return target


_MEASURE = """
import resource, subprocess, sys, time
args, stdin = sys.argv[1:-1], sys.argv[-1]
started = time.perf_counter()
with open(stdin, "rb") if stdin != "-" else open("/dev/null", "rb") as handle:
    proc = subprocess.run(args, stdin=handle, capture_output=True)
took = time.perf_counter() - started
print(took, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, proc.returncode)
sys.stdout.write(proc.stdout.decode())
"""


def measure(args: list[str], stdin: str = "-") -> tuple[float, int, int, dict | None]:
    """(seconds, peak RSS in KiB, exit status, the JSON answer) of one whole `grpolab diagnose` process."""
    proc = subprocess.run([sys.executable, "-c", _MEASURE, *args, stdin], capture_output=True, text=True)
    head, _, body = proc.stdout.partition("\n")
    took, peak, code = head.split()
    failure = json.loads(body)["failure"] if body.strip() else None
    return float(took), int(peak), int(code), failure


def prefilter_hits(log: Path) -> int:
    """How many lines of the log hold a prefilter word (they are decoded and matched; every other line is not)."""
    # lazy: the diagnosis' own prefilter (the benchmark's writer needs none of it)
    from grpolab.monitor.logread import find_words

    files = sorted(log.iterdir()) if log.is_dir() else [log]
    hits = 0
    for path in files:
        with open(path, "rb") as handle:
            for line in handle:
                hits += bool(find_words(line))
    return hits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=64, help="size of the log (the target: 1024)")
    parser.add_argument("--per-rank", action="store_true", help="one log per rank in a folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="grpolab-diagnose-") as tmp:
        started = time.perf_counter()
        log = write_log(Path(tmp), args.size_mb, args.per_rank)
        wrote = time.perf_counter() - started
        size = sum(p.stat().st_size for p in log.iterdir()) if log.is_dir() else log.stat().st_size
        runs = [("LOG", *measure([GRPOLAB, "diagnose", str(log), "--json"]))]
        if not args.per_rank:
            runs.append(("- < LOG (stdin)", *measure([GRPOLAB, "diagnose", "-", "--json"], str(log))))
        hits = prefilter_hits(log) if size <= 256 << 20 else None
    idle = subprocess.run(
        [
            sys.executable,
            "-c",
            "import resource, grpolab.cli.diagnose, grpolab.monitor.diagnose;"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)",
        ],
        capture_output=True,
        text=True,
    )
    base = int(idle.stdout.strip() or 0)
    print(
        f"log: {size / 2**20:.0f} MiB of real healthy lines{' in ' + str(RANKS) + ' per-rank files' if args.per_rank else ''}"
        f" (written in {wrote:.1f} s)"
    )
    if hits is not None:
        print(
            f"lines that reach the patterns (prefilter hits): {hits} (the failure's {RANKS + 1} and the start-up advice)"
        )
    right = True
    for how, took, peak, code, failure in runs:
        print(
            f"`grpolab diagnose {how} --json` whole process: {took:.2f} s, {size / 2**20 / took:.0f} MiB/s, peak "
            f"memory {peak / 1024:.0f} MiB (the same imports without a log: {base / 1024:.0f} MiB)"
        )
        ok = bool(failure) and failure["cause"] == "device-oom" and failure["rank"] == ORIGIN
        ok = ok and failure["node"] == "10.0.0.6" and code == 1
        if failure:
            print(f"  answer: {failure['cause']}, rank {failure['rank']}, node {failure['node']}")
        right = right and ok
    print(f"right answer (device-oom, rank {ORIGIN}, node 10.0.0.6): {'yes' if right else 'NO'}")
    took = max(run[1] for run in runs)
    print(
        f"1 GB target: under 10 s and 150 MB (`--size-mb 1024`; at this speed about {took * 1024 / max(1, size / 2**20):.1f} s,"
        " start-up included: small sizes overstate it)"
    )
    return 0 if right else 1


if __name__ == "__main__":
    sys.exit(main())
