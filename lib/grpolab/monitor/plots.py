"""The key GRPO curves of a run as one PNG grid, with the steps of health alerts marked.

    plot_curves(metrics, alerts=(), path="curves.png", title=None) -> Path

matplotlib is imported inside the function and draws on its Agg canvas (no display needed; headless runs and
the CLI must not pay its import cost unless they draw). A panel whose metrics the run does not log says "no data"
instead of disappearing, so every run's picture has the same layout and is easy to compare side by side.
"""

from __future__ import annotations

import math
from pathlib import Path

from grpolab.monitor.metrics import MetricsView, load

# (title, y label, [(metric or prefix, line label)]): prefixes (ending in "/") match the run's val-core names.
PANELS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("reward", "score", (("critic/score/mean", "mean"), ("critic/score/max", "max"), ("critic/score/min", "min"))),
    ("validation accuracy", "accuracy", (("val-core/", ""),)),
    ("response length", "tokens", (("response_length/mean", "mean"), ("response_length/max", "max"))),
    ("response length clip ratio", "fraction clipped", (("response_length/clip_ratio", "clip ratio"),)),
    ("KL to reference", "KL", (("actor/kl_loss", "kl_loss"), ("critic/kl", "critic/kl"))),
    ("entropy", "nats / token", (("actor/entropy", "entropy"),)),
    ("policy clip fraction", "fraction", (("actor/pg_clipfrac", "pg_clipfrac"),)),
    ("grad norm", "norm", (("actor/grad_norm", "grad_norm"),)),
    ("throughput", "tokens / s / device", (("perf/throughput", "throughput"),)),
    ("step time", "seconds", (("timing_s/step", "step"), ("timing_s/gen", "gen"),
                              ("timing_s/update_actor", "update_actor"))),
    ("device memory", "GB", (("actor/perf/max_memory_allocated_gb", "max allocated"),)),
    ("learning rate", "lr", (("actor/lr", "lr"),)),
)
_COLUMNS = 3
_ALERT_COLOR = "#d62728"


def _lines_for(view: MetricsView, entries) -> list[tuple[str, str]]:
    found = []
    for metric, label in entries:
        if metric.endswith("/"):
            found += [(name, name[len(metric):]) for name in view.first_present([metric])]
        elif metric in view:
            found.append((metric, label))
    return found


def plot_curves(metrics, alerts=(), path: str | Path = "curves.png", title: str | None = None) -> Path:
    """Draw the grid of PANELS for `metrics` (a MetricsView or anything `load` takes), mark `alerts`
    (vertical lines at their steps, in the panels of the metrics they concern) and save a PNG at `path`."""
    # A bare Figure on the Agg canvas, not pyplot: no global backend switch (a notebook keeps its inline
    # backend) and nothing left open in pyplot's registry by a dashboard that redraws every few seconds.
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    view = metrics if isinstance(metrics, MetricsView) else load(metrics)
    path = Path(path)
    rows = math.ceil(len(PANELS) / _COLUMNS)
    fig = Figure(figsize=(5.2 * _COLUMNS, 3.0 * rows))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, _COLUMNS, squeeze=False)
    steps_known = bool(view.steps)
    for ax, (panel_title, ylabel, entries) in zip(axes.flat, PANELS):
        lines = _lines_for(view, entries)
        ax.set_title(panel_title, fontsize=11)
        ax.set_xlabel("step", fontsize=9)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.locator_params(nbins=6)
        ax.grid(True, alpha=0.3)
        if not lines:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center", va="center", fontsize=12,
                    color="0.5")
            ax.set_yticks([])
            if not steps_known:
                ax.set_xticks([])
            continue
        for metric, label in lines:
            steps, values = view.series(metric)
            # Sparse metrics (validation every N steps) get markers so single points are visible.
            sparse = len(steps) < 0.5 * len(view.steps) or len(steps) < 3
            ax.plot(steps, values, marker="o" if sparse else None, markersize=3, linewidth=1.3, label=label)
            bad = [(s, v) for s, v in zip(steps, values) if not math.isfinite(v)]
            for s, _ in bad:  # NaN/inf do not draw as a line: mark where they are
                ax.axvline(s, color=_ALERT_COLOR, linewidth=0.8, alpha=0.5, linestyle=":")
        names = {metric for metric, _ in lines}
        marked = [a for a in alerts if names.intersection(getattr(a, "metrics", ()))]
        for alert in marked:
            ax.axvline(alert.step, color=_ALERT_COLOR, linewidth=1.2, linestyle="--")
            ax.annotate(alert.rule, xy=(alert.step, 1.0), xycoords=("data", "axes fraction"), xytext=(2, -10),
                        textcoords="offset points", fontsize=7, color=_ALERT_COLOR, rotation=0)
        if len(lines) > 1:
            ax.legend(fontsize=7, loc="best")
        if marked:
            ax.set_title(f"{panel_title}  (alert)", fontsize=11, color=_ALERT_COLOR)
    for ax in list(axes.flat)[len(PANELS):]:
        ax.set_visible(False)
    last = view.last_step
    heading = title or (view.run.run_id if view.run is not None else view.path.name)
    fig.suptitle(f"{heading}: {len(view.steps)} steps" + (f", last step {last}" if last is not None else "")
                 + (f", {len(alerts)} alert(s)" if alerts else ""), fontsize=13)
    # Fixed margins rather than tight_layout: it measures every tick label of 12 panels and doubles the time.
    fig.subplots_adjust(left=0.06, right=0.985, bottom=0.055, top=0.92, wspace=0.3, hspace=0.62)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    try:
        fig.savefig(tmp, dpi=80, format="png")
        tmp.replace(path)  # a dashboard or notebook reading the PNG never sees half a file
    except BaseException:  # a target that is a directory, a full disk: leave no temporary file behind
        tmp.unlink(missing_ok=True)
        raise
    return path
