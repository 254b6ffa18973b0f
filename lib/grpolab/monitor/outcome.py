"""A run's outcome in a few lines: state, where the run directory is, how reward and accuracy moved."""

from __future__ import annotations

from grpolab.jobs.runs import Run


def figures(run: Run) -> dict:
    """First and last values of the key curves (empty when the run wrote no metrics)."""
    from grpolab.monitor import load

    if not run.metrics_file.exists():
        return {}
    view = load(run.metrics_file)
    view.refresh()
    out = {"last_step": view.last_step}
    for label, metric in (("reward", "critic/score/mean"), ("val_acc", "val-core/arith/acc/mean@1")):
        steps, values = view.series(metric)
        if values:
            out[label] = {"first": values[0], "last": values[-1], "first_step": steps[0], "last_step": steps[-1]}
    return out


def describe_outcome(run: Run, status: dict) -> str:
    lines = [f"run {run.run_id}: {status.get('state', 'UNKNOWN')}", f"run directory: {run.path}"]
    fig = figures(run)
    for label in ("reward", "val_acc"):
        if label in fig:
            f = fig[label]
            lines.append(
                f"{label:8} {f['first']:.3f} (step {f['first_step']}) -> {f['last']:.3f} (step {f['last_step']})"
            )
    from grpolab.monitor.summary import failure_of

    failure = failure_of(run, status)
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
