"""How `grpolab diagnose` copes with crafted lines: lines built to make a backtracking regex engine crawl (every
cause's prefilter words and the literals of its patterns repeated thousands of times on one line, near misses of
every pattern, `pid=` and `File "` runs, long dotted names), as a hostile user or a broken program writes them.

Writes --size-mb MB of such lines (default 16, the size issue 46 measured at over 60 s), then twice that, runs
`grpolab diagnose LOG --json` on each as a whole process and prints the time and the throughput: the time must
grow in proportion to the size (linear), and stay in seconds. The diagnosis matches lines with Python's `re` until
it has spent half a second doing so, then lets Hyperscan (linear by construction) decide first which lines can
match at all (grpolab.monitor.diagnose).

    .venv/bin/python benchmarks/diagnose_crafted.py --size-mb 16
"""

from __future__ import annotations

import argparse
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
WIDTH = 16000  # characters per crafted line (the diagnosis reads a longer one only around its words)


def fragments() -> list[str]:
    """Every prefilter word of the registry and the literals of every pattern (the pieces a crafted line repeats)."""
    # lazy: the registry (the writer alone needs it)
    from grpolab.monitor import firsterror
    from grpolab.monitor.causes import CAUSES

    out = list(firsterror.WORDS)
    for cause in CAUSES:
        out.extend(cause.words)
        for pattern in cause.patterns:
            out.extend(re.findall(r"[A-Za-z_][A-Za-z_ ]{2,}", pattern))
    generic = ["(pid=1, ip=1", 'File "', "a.", "rank ", "[rank1]:", "Error", "ValueError: ", "--a-b ", "(1) ", " "]
    return list(dict.fromkeys(out + generic))


def crafted_lines() -> list[str]:
    """One line per fragment and ending, in a fixed random order (a log of any size samples every kind)."""
    lines = []
    for piece in fragments():
        for tail in ("", " ", "1", ".", " x "):
            unit = piece + tail
            lines.append((unit * (WIDTH // max(1, len(unit)) + 1))[:WIDTH])
    random.Random(46).shuffle(lines)
    return lines


def write(path: Path, size_mb: int) -> int:
    lines = crafted_lines()
    size, written = size_mb << 20, 0
    with open(path, "w") as handle:
        while written < size:
            for line in lines:
                handle.write(line + "\n")
                written += len(line) + 1
                if written >= size:
                    break
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=16)
    args = parser.parse_args()
    times = []
    with tempfile.TemporaryDirectory(prefix="grpolab-crafted-") as tmp:
        for size_mb in (args.size_mb, 2 * args.size_mb):
            log = Path(tmp) / f"crafted-{size_mb}.log"
            size = write(log, size_mb)
            started = time.perf_counter()
            proc = subprocess.run([GRPOLAB, "diagnose", str(log), "--json"], capture_output=True, text=True)
            took = time.perf_counter() - started
            times.append(took)
            print(
                f"{size / 2**20:.0f} MiB of crafted lines ({len(crafted_lines())} kinds, {WIDTH} characters each): "
                f"`grpolab diagnose LOG` {took:.2f} s, {size / 2**20 / took:.1f} MiB/s, exit {proc.returncode}"
            )
    print(f"twice the size took {times[1] / times[0]:.1f} x the time (linear: about 2)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
