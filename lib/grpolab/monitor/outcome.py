"""A run's outcome in a few lines: state, its times (from the run's record), where the run directory is, how reward
and accuracy moved, whether its training collapsed (grpolab.monitor.collapse: "SUCCEEDED, but training collapsed
at step N") and the cause of a failure."""

from __future__ import annotations

import time

from grpolab.jobs.runs import Run
from grpolab.jobs.state import elapsed_s, run_times
from grpolab.monitor.alerts import ADVICE
from grpolab.monitor.clock import clock_text
from grpolab.monitor.collapse import collapse_of, run_collapse, state_text
from grpolab.monitor.figures import HEADLINE, first_and_last
from grpolab.monitor.metrics import load_metrics
from grpolab.monitor.summary import failure_of, restarts


def figures(run: Run, view=None) -> dict:
    """First and last values of the headline figures (empty when the run wrote no metrics); `view`: the run's
    MetricsView when the caller has one (nothing is read again)."""

    if view is None:
        if not run.metrics_file.exists():
            return {}
        view = load_metrics(run.metrics_file)
    return first_and_last(view)


def times_text(status: dict) -> str | None:
    """`ran 2:42 (14:46:14 -> 14:48:56)`, or `running for 1:05 (since 14:46:14)`: from the run's record
    (grpolab.jobs.state.run_times), the same in every view; None before its job started."""

    started, ended = run_times(status)
    if started is None:
        return None
    took = clock_text(elapsed_s(status))
    start = time.strftime("%H:%M:%S", time.localtime(started))
    if ended is not None:
        return f"ran {took} ({start} -> {time.strftime('%H:%M:%S', time.localtime(ended))})"
    return f"running for {took} (since {start})"


def describe_outcome(run: Run, status: dict, monitor=None, collapse=None) -> str:
    """`monitor`: the RunMonitor that followed the run (its view, alerts and classified failure are used);
    `collapse`: the run's Collapse when the caller has it (else it is read from the run's metrics)."""
    if collapse is None:
        collapse = collapse_of(monitor.alerts) if monitor is not None else run_collapse(run)
    state = state_text(status.get("state", "UNKNOWN"), collapse)
    lines = [f"run {run.run_id}: {state}", f"run directory: {run.path}"]
    took = times_text(status)
    if took:
        lines.insert(1, took)
    fig = figures(run, monitor.view if monitor is not None else None)

    lines += [
        f"{label:8} {f['first']:.3f} (step {f['first_step']}) -> {f['last']:.3f} (step {f['last_step']})"
        for label, f in fig.items()
        if label in HEADLINE
    ]
    if status.get("message") and status.get("state") != "SUCCEEDED":  # Ray's or the submission's own words
        lines.append(f"message: {status['message']}")
    if again := restarts(run):  # the run's driver restarted it, or said why not (grpolab.heal)
        lines.append(f"restarts: {again['headline']}")
        lines += [f"  {line}" for line in again["attempts"]]

    if collapse is not None:
        lines.append(f"{collapse.text}: {collapse.reasons()}")
        lines.append(f"fix: {ADVICE[collapse.rules[0]]} (every alert: `grpolab monitor {run.run_id}`)")
    failure = monitor.failure if monitor is not None else failure_of(run, status)
    if failure is not None:
        lines.append(f"cause: {failure.cause}: {failure.message}")
        if failure.fix:
            lines.append(f"fix: {failure.fix}")
        tail = status.get("log_tail") or []
        if tail:
            lines.append("log tail:")
            lines += [f"  {line}" for line in tail[-15:]]
    png = run.path / "curves.png"
    if png.exists():
        lines.append(f"curves: {png}")
    return "\n".join(lines)
