"""How fast the monitor is on a long run: loading, refreshing, `grpolab monitor` as a whole process, the dashboard.

Writes a synthetic verl metrics.jsonl of 20,000 steps x 150 metrics (full-precision floats, as verl's file
logger writes them; about 150 MB) into a temporary directory, then prints:
- the time for grpolab.monitor.load_metrics() to read it all (orjson when installed, and the standard library's json),
- the time for MetricsView.refresh() to take in 100 new steps, on a 1,000-step file and on the 20,000-step
  file (the median of several refreshes; it must not depend on the file's length),
- `grpolab monitor FILE` as a whole process (load, alerts, summary, the curves PNG): wall time and peak memory,
  against pandas.read_json(lines=True) + json_normalize of the same file in its own process, measured in the
  same run; and against the monitor of another checkout's lib/ given with --before DIR (the code before a
  change), else the 248 MiB recorded in issue 11,
- the live dashboard (grpolab.monitor.dashboard): a refresh after 100 new steps (state, new steps, progress:
  what runs every `interval`), and the analysis it runs at most every `redraw_s` (alerts, summary, picture).
Targets: load < 2 s, refresh < 50 ms at both lengths, `grpolab monitor` no slower than pandas and no more
memory than before, dashboard refresh < 50 ms. A few minutes on a busy 2-core machine.

Run from the project root (--steps N writes a shorter file, for a quick look: the load and refresh targets still
apply; the whole-process comparisons are judged at the default length only, where start-up costs do not dominate):

    .venv/bin/python benchmarks/monitor_speed.py [--steps 20000] [--before OTHER_CHECKOUT/lib]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpolab.monitor.metrics as metrics
from grpolab.monitor import load_metrics, synthetic

STEPS = 20_000
METRICS = 150
NEW_STEPS = 100
SMALL = 1_000
REPEATS = 9
TARGET_LOAD_S = 2.0
TARGET_REFRESH_S = 0.050
ROOT = Path(__file__).resolve().parents[1]
BEFORE_MIB = 248  # `grpolab monitor` on this file before issue 11 (recorded there), when no --before is given

# A child process that runs `code`'s command and reports its wall time and its children's peak memory.
_MEASURE = """
import resource, subprocess, sys, time, json
start = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
seconds = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime, "peak_mib": usage.ru_maxrss / 1024,
                  "rc": proc.returncode, "err": proc.stderr[-500:]}))
"""
_PANDAS = "import sys, pandas as pd; frame = pd.read_json(sys.argv[1], lines=True); pd.json_normalize(frame['data'])"


def _process(argv: list[str], env: dict | None = None) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, *argv],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=ROOT,
        timeout=900,
    )
    data = json.loads(out.stdout.strip().splitlines()[-1])
    # 1 is `grpolab monitor` finding a problem (a synthetic healthy run's entropy decays to nothing over thousands
    # of steps: a training collapse); the report was made all the same, and that is what is timed
    if data["rc"] not in (0, 1):
        raise RuntimeError(f"{argv[:4]} failed: {data['err']}")
    return data


def _whole_process(big: Path, tmp: Path, before: Path | None) -> list[tuple[str, dict]]:
    """`grpolab monitor` now, pandas, and (with --before) the monitor of another checkout's lib/."""
    monitor = [sys.executable, "-m", "grpolab", "monitor", str(big), "--no-refresh", "--png", str(tmp / "c.png")]
    here = {"PYTHONPATH": str(ROOT / "lib")}
    rows = [
        ("grpolab monitor (this tree)", _process(monitor, here)),
        ("pandas read_json(lines=True) + json_normalize", _process([sys.executable, "-c", _PANDAS, str(big)])),
    ]
    if before is not None:
        rows.append((f"grpolab monitor ({before}, before)", _process(monitor, {"PYTHONPATH": str(before)})))
    return rows


def _dashboard(tmp: Path, big: Path, steps: int) -> tuple[float, float, float] | None:
    """(first show, refresh after 100 new steps, analysis after them) of the live dashboard, in seconds."""
    try:
        from grpolab.monitor.dashboard import Dashboard
    except ImportError:  # ipywidgets not installed
        return None
    from grpolab.jobs.runs import create_run

    run = create_run("bench", run_id="dash", root=tmp / "runs")
    run.metrics_file.write_bytes(big.read_bytes())
    run.write_status(state="RUNNING", total_steps=steps + 2 * NEW_STEPS)
    dash = Dashboard(run.path, interval=5.0, redraw_s=3600)
    first, _ = _timed(dash.refresh)
    with open(run.metrics_file, "ab") as handle:
        handle.write(b"".join(_lines(steps + 1, NEW_STEPS)))
    quick, _ = _timed(dash.refresh)
    assert dash.monitor.view.last_step == steps + NEW_STEPS
    with open(run.metrics_file, "ab") as handle:
        handle.write(b"".join(_lines(steps + NEW_STEPS + 1, NEW_STEPS)))
    analysis, _ = _timed(lambda: dash.refresh(force_analysis=True))
    return first, quick, analysis


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
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout's lib/ whose `grpolab monitor` to compare with")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"steps in the long file (default {STEPS:,})")
    args = parser.parse_args()
    if args.steps <= SMALL:
        parser.error(f"--steps {args.steps}: the long file needs more than the short one's {SMALL:,} steps")
    steps = args.steps
    with tempfile.TemporaryDirectory(prefix="grpolab-bench-") as tmp:
        big, small = Path(tmp) / "big.jsonl", Path(tmp) / "small.jsonl"
        print(f"writing {steps:,} steps x {METRICS} metrics ...", flush=True)
        seconds, lines = _timed(lambda: _lines(1, steps))
        big.write_bytes(b"".join(lines))
        small.write_bytes(b"".join(lines[:SMALL]))
        del lines
        size_mb = big.stat().st_size / 1e6
        print(f"  {size_mb:.0f} MB in {seconds:.1f} s\n")

        # Full loads and pandas first, all on the same pristine 20,000-step file; then the refreshes grow it.
        parser = "orjson" if metrics._fast_loads is not json.loads else "json (standard library)"
        load_s, view = _timed(lambda: load_metrics(big))
        assert len(view.steps) == steps and len(view.names) == METRICS, (len(view.steps), len(view.names))
        del view

        fast = metrics._fast_loads
        metrics._fast_loads = json.loads
        try:
            std_s, view = _timed(lambda: load_metrics(big))
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

        print("grpolab monitor and pandas, each as a whole process ...", flush=True)
        processes = _whole_process(big, Path(tmp), args.before)
        print("the dashboard ...", flush=True)
        dashboard = _dashboard(Path(tmp), big, steps)

        view = load_metrics(big)
        refresh_big = _refresh_times(big, view, steps + 1)
        del view
        small_view = load_metrics(small)
        refresh_small = _refresh_times(small, small_view, SMALL + 1)

    def verdict(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    med_big, med_small = statistics.median(refresh_big), statistics.median(refresh_small)
    rows = [
        (
            f"load {steps:,} x {METRICS} ({parser})",
            f"{load_s:8.2f} s",
            f"< {TARGET_LOAD_S:g} s",
            verdict(load_s < TARGET_LOAD_S),
        ),
        (
            f"load {steps:,} x {METRICS} (json, standard library)",
            f"{std_s:8.2f} s",
            f"< {TARGET_LOAD_S:g} s",
            verdict(std_s < TARGET_LOAD_S),
        ),
        (
            f"refresh +{NEW_STEPS} steps on a {SMALL:,}-step file",
            f"{1000 * med_small:8.1f} ms",
            f"< {1000 * TARGET_REFRESH_S:g} ms",
            verdict(med_small < TARGET_REFRESH_S),
        ),
        (
            f"refresh +{NEW_STEPS} steps on a {steps:,}-step file",
            f"{1000 * med_big:8.1f} ms",
            f"< {1000 * TARGET_REFRESH_S:g} ms",
            verdict(med_big < TARGET_REFRESH_S),
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measure'.ljust(width)}  {'time':>11}  {'target':>9}")
    for name, value, target, ok in rows:
        print(f"{name.ljust(width)}  {value:>11}  {target:>9}  {ok}")
    print(f"{'pandas.read_json(lines=True), same file'.ljust(width)}  {pandas_text}")
    print(
        f"\nrefresh medians of {REPEATS}; all refresh times (ms): {SMALL:,} steps "
        f"{[round(1000 * t, 1) for t in refresh_small]}, {steps:,} steps {[round(1000 * t, 1) for t in refresh_big]}"
    )
    print(f"refresh at {steps:,} / at {SMALL:,} steps: {med_big / med_small:.2f} x (about 1 = independent of length)")

    print(f"\nwhole processes on the {steps:,} x {METRICS} file (wall time, CPU time, peak memory)")
    for name, data in processes:
        print(f"  {name:48} {data['seconds']:7.2f} s wall  {data['cpu']:7.2f} s CPU  {data['peak_mib']:7.0f} MiB")
    ours, pandas_run = processes[0][1], processes[1][1]
    if len(processes) > 2:  # --before: the older checkout read the same file in this run
        before = processes[2][1]["peak_mib"]
    elif steps == STEPS:  # the figure recorded in issue 11 is for the full-length file only
        before = BEFORE_MIB
    else:
        before = None
    if before is None:
        memory = f"memory {ours['peak_mib']:.0f} MiB (the recorded {BEFORE_MIB} MiB before is for {STEPS:,} steps)"
    else:
        ok = verdict(ours["peak_mib"] <= before * 1.02)
        memory = f"memory {ours['peak_mib']:.0f} MiB vs {before:.0f} MiB before (target <= before: {ok})"
    # judged on CPU time: on a shared machine wall time mostly measures the other processes
    cpu_ok = verdict(ours["cpu"] <= pandas_run["cpu"]) if steps == STEPS else f"judged at {STEPS:,} steps"
    print(
        f"  grpolab monitor / pandas: {ours['cpu'] / pandas_run['cpu']:.2f} x CPU time, "
        f"{ours['seconds'] / pandas_run['seconds']:.2f} x wall time (target <= 1: {cpu_ok}); {memory}"
    )
    if dashboard is None:
        print("\ndashboard: ipywidgets is not installed, not measured")
    else:
        first, quick, analysis = dashboard
        print(
            f"\ndashboard on {steps:,} steps: first show {first:.2f} s; refresh after +{NEW_STEPS} steps "
            f"{1000 * quick:.1f} ms (target < {1000 * TARGET_REFRESH_S:g} ms: {verdict(quick < TARGET_REFRESH_S)}); "
            f"analysis after +{NEW_STEPS} steps (alerts, summary, picture; at most every redraw_s) {analysis:.2f} s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
