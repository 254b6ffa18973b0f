"""Several runs' curves overlaid in one chart (matplotlib, as every other figure of GRPO Lab).

    chart = Overlay({"run-a": view_a, "run-b": view_b}, x="step", smooth=0.6)
    chart.png()         -> PNG bytes: one panel per GRPO curve, one colour per run, the x axis step or wall-clock
    chart.bundle()      -> {"text/html", "text/plain"}: one display output, a picture with a plain-text twin

The picture is an <img> in HTML whose alt text names the x axis, the runs and their steps (what a reader without images, and
tests/test_browser.py, can read), so a saved notebook shows it without a kernel, in nbviewer and on GitHub.

Wall-clock is the sum of the run's `timing_s/step` up to each step (verl's file logger writes no timestamps), so
runs started at different times line up at their start. Smoothing is TensorBoard's debiased EMA
(grpolab.monitor.plots.smoothed), drawn over the faint raw curve; the chosen weight is in the chart's title, so it
stays with the saved output. Each curve is cut to OVERLAY_BUCKETS min/max buckets (plots.downsample).
"""

from __future__ import annotations

import base64
import html
import io
import math

from grpolab.monitor.figures import steps_text
from grpolab.monitor.metrics import MetricsView
from grpolab.monitor.plots import PANELS, downsample, single_point_limits, smoothed, whole_steps

OVERLAY_BUCKETS = 150  # per curve and run: at most 300 points
# the panels of grpolab.monitor.plots.PANELS a comparison shows (the rest stay in each run's own curves.png)
OVERLAY_PANELS = (
    "reward",
    "validation accuracy",
    "response length",
    "KL to reference",
    "entropy",
    "grad norm",
    "throughput",
    "step time",
)
STEP_TIME = "timing_s/step"
X_AXES = {"step": "step", "wall": "wall-clock (s, summed timing_s/step)"}
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")
_COLUMNS = 2


def wall_clock(view: MetricsView) -> dict[int, float]:
    """{step: seconds since the run's first step}, from the summed `timing_s/step` (0 for a step without it)."""
    out, total = {}, 0.0
    times = dict(zip(*view.series(STEP_TIME))) if STEP_TIME in view else {}
    for step in view.steps:
        value = times.get(step)
        if value is not None and math.isfinite(value):
            total += value
        out[step] = round(total, 3)
    return out


def _panels(views: dict[str, MetricsView]) -> list[tuple[str, str, list[str]]]:
    """(title, y label, metrics) of the PANELS that any run has data for: the panel's first present metric (the
    validation prefix: every name under it)."""
    out = []
    for title, ylabel, entries in PANELS:
        if title not in OVERLAY_PANELS:
            continue
        found = (sorted({n for v in views.values() for n in v.first_present([metric])}) for metric, _ in entries)
        metrics = next((names for names in found if names), [])
        has = any(v is not None and v != 0 for view in views.values() for m in metrics for v in view.column(m))
        if metrics and has:
            out.append((title, ylabel, metrics))
    return out


class Overlay:
    """Curves of several runs (label -> MetricsView) overlaid per panel; see the module docstring."""

    def __init__(self, views: dict[str, MetricsView], x: str = "step", smooth: float = 0.0, title: str | None = None):
        if x not in X_AXES:
            raise ValueError(f"x must be one of {', '.join(X_AXES)}, got {x!r}")
        if not 0 <= smooth < 1:
            raise ValueError(f"smoothing must be at least 0 and below 1, got {smooth}")
        self.views = views
        self.x = x
        self.smooth = smooth
        self.title = title or " vs ".join(views)
        self.panels = _panels(views)

    def _curves(self, view: MetricsView, metric: str):
        """(steps, wall-clock seconds, values, smoothed values or None), downsampled."""
        steps, values = view.series(metric)
        xs, ys = downsample(steps, values, OVERLAY_BUCKETS)
        clock = wall_clock(view)
        walls = [clock.get(int(s), float("nan")) for s in xs]
        sparse = len(steps) < 0.5 * max(1, len(view.steps)) or len(steps) < 3
        smooth = smoothed(ys, self.smooth) if self.smooth and not sparse and len(ys) > 2 else None
        return [int(s) for s in xs], walls, list(ys), (None if smooth is None else list(smooth)), sparse

    def _traces(self, metrics: list[str]):
        """(colour, run label, metric, curves) for each run that logged each of a panel's metrics, in legend order:
        what the chart draws."""
        for run_index, (label, view) in enumerate(self.views.items()):
            colour = COLOURS[run_index % len(COLOURS)]
            for metric in metrics:
                if metric in view:
                    yield colour, label, metric, self._curves(view, metric)

    def heading(self) -> str:
        """Short enough for the chart's top line: the run ids (with their steps) are in the legend."""
        count = len(self.views)
        extra = f", smoothing {self.smooth:g}" if self.smooth else ", no smoothing"
        return f"{count} run{'s' if count != 1 else ''}{extra}"

    def legend_name(self, label: str) -> str:
        return f"{label} ({steps_text(self.views[label])})"

    def png(self) -> bytes:
        """The curves as a PNG (matplotlib's Agg canvas; nothing global is switched)."""
        buffer = io.BytesIO()
        self.figure().savefig(buffer, format="png", dpi=72)
        return buffer.getvalue()

    def figure(self):
        """The chart as a matplotlib Figure on the Agg canvas."""
        # lazy: matplotlib (only drawing the chart needs it)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        count = max(1, len(self.panels))
        columns = min(_COLUMNS, count)
        rows = math.ceil(count / columns)
        fig = Figure(figsize=(6.2 * columns, 2.8 * rows + 0.9))
        FigureCanvasAgg(fig)
        axes = fig.subplots(rows, columns, squeeze=False)
        for ax, (title, ylabel, metrics) in zip(axes.flat, self.panels):
            ax.set_title(title, fontsize=10, y=1.0)
            ax.set_xlabel(X_AXES[self.x], fontsize=8)
            ax.set_ylabel(ylabel, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(True, alpha=0.3)
            for colour, label, _metric, (steps, walls, ys, smooth, sparse) in self._traces(metrics):
                xs = steps if self.x == "step" else walls
                if smooth is not None:
                    ax.plot(xs, ys, color=colour, linewidth=0.8, alpha=0.3)
                    ax.plot(xs, smooth, color=colour, linewidth=1.5, label=self.legend_name(label))
                else:
                    ax.plot(xs, ys, color=colour, linewidth=1.2, marker="o" if sparse else None, markersize=3,
                            label=self.legend_name(label))  # fmt: skip
            single_point_limits(ax)
            if self.x == "step":
                whole_steps(ax)
            else:
                ax.ticklabel_format(axis="y", useOffset=False)
        for ax in list(axes.flat)[len(self.panels) or 1 :]:
            ax.set_visible(False)
        if not self.panels:
            axes.flat[0].set_visible(True)
            axes.flat[0].text(0.5, 0.5, "no metrics logged yet", ha="center", va="center", color="0.5")
        handles, labels = axes.flat[0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="upper right", fontsize=8, ncol=min(4, len(labels)))
        fig.suptitle(self.heading(), fontsize=11, x=0.01, ha="left")
        width = 6.2 * columns  # margins in inches: one panel (a run's first step) keeps room for its tick labels
        fig.subplots_adjust(left=1.0 / width, right=1 - 0.25 / width, bottom=0.6 / (2.8 * rows + 0.9) + 0.02,
                            top=1 - 0.8 / (2.8 * rows + 0.9), wspace=0.25, hspace=0.7)  # fmt: skip
        return fig

    def text(self) -> str:
        lines = [f"{self.title}: {self.heading()}"]
        for label, view in self.views.items():
            shown = [
                f"{title} {view.latest(metrics[0])[1]:.4g}" for title, _, metrics in self.panels if metrics[0] in view
            ]
            lines.append(f"  {self.legend_name(label)}: " + (", ".join(shown) or "no metrics yet"))
        return "\n".join(lines)

    def alt(self) -> str:
        """The picture's alt text: the heading, the x axis and each run with its steps."""
        return "; ".join([self.heading(), f"x: {X_AXES[self.x]}", *(self.legend_name(label) for label in self.views)])

    def bundle(self) -> dict:
        """One display output: the picture (JupyterLab, GitHub, nbviewer), its text twin (a terminal)."""
        png = base64.b64encode(self.png()).decode("ascii")
        return {
            "text/html": f"<img src='data:image/png;base64,{png}' alt='{html.escape(self.alt(), quote=True)}'/>",
            "text/plain": self.text(),
        }
