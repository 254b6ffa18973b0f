"""How fast the monitor reads metrics: a full load of a big metrics.jsonl and an incremental refresh.

Writes a synthetic verl metrics.jsonl of 20,000 steps x 150 metrics (full-precision floats, as verl's file
logger writes them; about 150 MB) into a temporary directory, then prints:
- the time for grpolab.monitor.load() to read it all (with the JSON parser it uses by default: orjson when
  installed, else the standard library; and with the standard library's json forced, for comparison),
- the time for MetricsView.refresh() to take in 100 new steps, on a 1,000-step file and on the 20,000-step
  file (the median of several refreshes; it must not depend on the file's length),
- pandas.read_json(lines=True) on the same 20,000-step file, for comparison (it leaves the metrics as a column
  of dicts: flattening them would cost more again).
Targets: load < 2 s, refresh < 50 ms at both lengths. Runs in well under a minute on a 2-core machine.

Run from the project root:

    .venv/bin/python benchmarks/monitor_speed.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import grpolab.monitor.metrics as metrics
from grpolab.monitor import load, synthetic

STEPS = 20_000
METRICS = 150
NEW_STEPS = 100
SMALL = 1_000
REPEATS = 9
TARGET_LOAD_S = 2.0
TARGET_REFRESH_S = 0.050


def _lines(first: int, count: int) -> list[bytes]:
    base = len(synthetic.healthy(1, val_every=0)[0]["data"])
    records = synthetic.healthy(count, seed=first, extra_metrics=METRICS - base, val_every=0)
    out = []
    for offset, record in enumerate(records):
        record["step"] = first + offset
        out.append((json.dumps(record) + "\n").encode())
    return out


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _refresh_times(path: Path, view, first_step: int) -> list[float]:
    """Append NEW_STEPS steps REPEATS times; time only the refresh that reads them."""
    times = []
    for repeat in range(REPEATS):
        chunk = b"".join(_lines(first_step + repeat * NEW_STEPS, NEW_STEPS))
        with open(path, "ab") as handle:
            handle.write(chunk)
        seconds, added = _timed(view.refresh)
        assert added == NEW_STEPS, added
        times.append(seconds)
    return times


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="grpolab-bench-") as tmp:
        big, small = Path(tmp) / "big.jsonl", Path(tmp) / "small.jsonl"
        print(f"writing {STEPS:,} steps x {METRICS} metrics ...", flush=True)
        seconds, lines = _timed(lambda: _lines(1, STEPS))
        big.write_bytes(b"".join(lines))
        small.write_bytes(b"".join(lines[:SMALL]))
        del lines
        size_mb = big.stat().st_size / 1e6
        print(f"  {size_mb:.0f} MB in {seconds:.1f} s\n")

        # Full loads and pandas first, all on the same pristine 20,000-step file; then the refreshes grow it.
        parser = "orjson" if metrics._fast_loads is not json.loads else "json (standard library)"
        load_s, view = _timed(lambda: load(big))
        assert len(view.steps) == STEPS and len(view.names) == METRICS, (len(view.steps), len(view.names))
        del view

        fast = metrics._fast_loads
        metrics._fast_loads = json.loads
        try:
            std_s, view = _timed(lambda: load(big))
            del view
        finally:
            metrics._fast_loads = fast

        try:
            import pandas as pd

            pandas_s, frame = _timed(lambda: pd.read_json(big, lines=True))
            pandas_text = f"{pandas_s:8.2f} s   ({len(frame):,} rows; metrics left as a column of dicts)"
            del frame
        except ImportError:
            pandas_text = "   (pandas not installed)"

        view = load(big)
        refresh_big = _refresh_times(big, view, STEPS + 1)
        del view
        small_view = load(small)
        refresh_small = _refresh_times(small, small_view, SMALL + 1)

    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    med_big, med_small = statistics.median(refresh_big), statistics.median(refresh_small)
    rows = [
        (f"load {STEPS:,} x {METRICS} ({parser})", f"{load_s:8.2f} s", f"< {TARGET_LOAD_S:g} s",
         verdict(load_s < TARGET_LOAD_S)),
        (f"load {STEPS:,} x {METRICS} (json, standard library)", f"{std_s:8.2f} s", f"< {TARGET_LOAD_S:g} s",
         verdict(std_s < TARGET_LOAD_S)),
        (f"refresh +{NEW_STEPS} steps on a {SMALL:,}-step file", f"{1000 * med_small:8.1f} ms",
         f"< {1000 * TARGET_REFRESH_S:g} ms", verdict(med_small < TARGET_REFRESH_S)),
        (f"refresh +{NEW_STEPS} steps on a {STEPS:,}-step file", f"{1000 * med_big:8.1f} ms",
         f"< {1000 * TARGET_REFRESH_S:g} ms", verdict(med_big < TARGET_REFRESH_S)),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure'.ljust(width)}  {'time':>11}  {'target':>9}")
    for name, value, target, ok in rows:
        print(f"{name.ljust(width)}  {value:>11}  {target:>9}  {ok}")
    print(f"{'pandas.read_json(lines=True), same file'.ljust(width)}  {pandas_text}")
    print(f"\nrefresh medians of {REPEATS}; all refresh times (ms): {SMALL:,} steps "
          f"{[round(1000 * t, 1) for t in refresh_small]}, {STEPS:,} steps {[round(1000 * t, 1) for t in refresh_big]}")
    print(f"refresh at {STEPS:,} / at {SMALL:,} steps: {med_big / med_small:.2f} x (about 1 = independent of length)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
