"""What the embedded Ray head costs to start from nothing, and what every Ray process pays before it does anything.

- `grpolab head start` from no head: seconds until it returns (the head answers) and the CPU seconds of every
  process it started, summed at that moment. It runs on free ports and a state folder of its own, and is stopped.
- `import ray` in a fresh interpreter: CPU seconds (median of 3). Every Ray process pays it (each worker, each
  job's supervisor, the dashboard and its agents), twice for a worker, and whether it built rfc3987-syntax's
  Earley parser (jsonschema 4.25 and newer import it; pyproject.toml pins jsonschema below 4.25 for that reason:
  `import ray` took 1.8 s of CPU with it, 0.5 s without, and a head start 13 s of CPU instead of 5, on 2 cores).

    .venv/bin/python benchmarks/head_start.py
"""

from __future__ import annotations

import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRPOLAB = str(Path(sys.executable).with_name("grpolab"))


def _free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(start: int = 23000) -> tuple[int, int]:
    """A GCS port and a dashboard port whose four followers (the agents' ports) are free too."""
    for gcs in range(start, start + 2000, 10):
        if _free(gcs) and all(_free(gcs + 1 + i) for i in range(5)):
            return gcs, gcs + 1
    raise SystemExit("no free ports found from 23000 on")


def import_ray_cpu() -> tuple[float, bool]:
    """CPU seconds of `import ray` in a fresh interpreter (median of 3) and whether rfc3987_syntax came with it."""
    code = "import sys, ray; print('rfc3987_syntax' in sys.modules)"
    costs, built = [], False
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        costs.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        built = built or out.stdout.strip() == "True"
    return statistics.median(costs), built


def head_start() -> tuple[float, float, int]:
    """(seconds until `grpolab head start` returned, CPU seconds of the head's processes then, how many)."""
    import psutil

    gcs, dashboard = free_ports()
    with tempfile.TemporaryDirectory(prefix="grpolab-head-bench-") as folder:
        env = {
            **os.environ,
            "GRPOLAB_RAY_PORT": str(gcs),
            "GRPOLAB_DASHBOARD_PORT": str(dashboard),
            "GRPOLAB_HEAD_DIR": folder,
        }
        env.pop("RAY_ADDRESS", None)
        t0 = time.perf_counter()
        try:
            out = subprocess.run([GRPOLAB, "head", "start"], env=env, capture_output=True, text=True, timeout=600)
            wall = time.perf_counter() - t0
            if out.returncode != 0:
                raise SystemExit(f"`grpolab head start` failed:\n{out.stdout}{out.stderr}")
            cpu, count = 0.0, 0
            for proc in psutil.process_iter():
                try:
                    if folder in " ".join(proc.cmdline()) or any(
                        folder in " ".join(p.cmdline()) for p in proc.parents()
                    ):
                        times = proc.cpu_times()
                        cpu += times.user + times.system
                        count += 1
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
        finally:
            subprocess.run([GRPOLAB, "head", "stop"], env=env, capture_output=True, text=True, timeout=300)
    return wall, cpu, count


def main() -> int:
    cost, built = import_ray_cpu()
    print(f"`import ray` in a fresh interpreter: {cost:.2f} s of CPU (median of 3)")
    print(f"rfc3987-syntax's parser built by that import: {'yes (jsonschema >= 4.25?)' if built else 'no'}")
    wall, cpu, count = head_start()
    print(f"embedded head start from nothing: {wall:.1f} s until it answers, {cpu:.1f} s of CPU in {count} processes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
