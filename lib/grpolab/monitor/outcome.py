"""A run's outcome in a few lines: state, where the run directory is, how reward and accuracy moved."""

from __future__ import annotations

from grpolab.jobs.runs import Run


def figures(run: Run, view=None) -> dict:
    """First and last values of the headline figures (empty when the run wrote no metrics); `view`: the run's
    MetricsView when the caller has one (nothing is read again)."""
    from grpolab.monitor.figures import first_and_last
    from grpolab.monitor.metrics import load_metrics

    if view is None:
        if not run.metrics_file.exists():
            return {}
        view = load_metrics(run.metrics_file)
    return first_and_last(view)


def describe_outcome(run: Run, status: dict, monitor=None) -> str:
    """`monitor`: the RunMonitor that followed the run (its view and its classified failure are used)."""
    lines = [f"run {run.run_id}: {status.get('state', 'UNKNOWN')}", f"run directory: {run.path}"]
    fig = figures(run, monitor.view if monitor is not None else None)
    from grpolab.monitor.figures import HEADLINE

    for label in HEADLINE:
        if label in fig:
            f = fig[label]
            lines.append(
                f"{label:8} {f['first']:.3f} (step {f['first_step']}) -> {f['last']:.3f} (step {f['last_step']})"
            )
    from grpolab.monitor.summary import failure_of

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
