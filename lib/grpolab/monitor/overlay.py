"""Several runs' curves overlaid in one interactive chart (plotly) with a static PNG twin (matplotlib).

    chart = Overlay({"run-a": view_a, "run-b": view_b}, x="step", smooth=0.6)
    chart.figure()      -> plotly figure dict: one panel per GRPO curve, one colour per run, hover shows every
                           run's value at that x, drag to zoom (the panels' x axes move together), double-click
                           resets, a click on a legend entry hides that run everywhere, buttons switch the x axis
                           between step and wall-clock
    chart.png()         -> PNG bytes of the same curves (what GitHub, nbviewer and a terminal see)
    chart.bundle()      -> {"application/vnd.plotly.v1+json", "text/html", "text/plain"}: one display output

Why plotly: JupyterLab renders plotly's MIME type natively (the renderer ships with the plotly package), with the
hover, zoom and legend that wandb and TensorBoard users expect, and the figure is plain JSON kept in the output,
so a saved notebook reopened without a kernel still shows it; ipympl and bqplot are widgets, which a saved notebook
shows as "model not found". GitHub and nbviewer do not run plotly: they show the bundle's HTML twin, a PNG drawn
here with matplotlib (no browser needed to make it, as plotly's own image export would). The twin is an <img> in
HTML, not an image/png entry: JupyterLab's plotly renderer shows a bundle's image/png instead of the live figure
(it keeps a snapshot of its own there once it has drawn the figure, which a notebook saved in JupyterLab then
reopens as).

Wall-clock is the sum of the run's `timing_s/step` up to each step (verl's file logger writes no timestamps), so
runs started at different times line up at their start. Smoothing is TensorBoard's debiased EMA
(grpolab.monitor.plots.smoothed), drawn over the faint raw curve; the chosen weight is part of the figure, so it
stays with the saved output. Each curve is cut to OVERLAY_BUCKETS min/max buckets (plots.downsample).
"""

from __future__ import annotations

import base64
import html
import io
import math

from grpolab.monitor.metrics import MetricsView
from grpolab.monitor.plots import PANELS, downsample, single_point_limits, smoothed

OVERLAY_BUCKETS = 150  # per curve and run: at most 300 points, a few kB of JSON each
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
_SIG = 5  # significant digits kept in the figure's JSON
_TOP, _BOTTOM = 130, 40  # the chart's margins in pixels: the title, the legend and the x-axis buttons sit on top


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


def _round(values) -> list:
    return [None if not math.isfinite(v) else float(f"{v:.{_SIG}g}") for v in values]


def _panels(views: dict[str, MetricsView]) -> list[tuple[str, str, list[str]]]:
    """(title, y label, metrics) of the PANELS that any run has data for: the panel's first present metric (the
    validation prefix: every name under it)."""
    out = []
    for title, ylabel, entries in PANELS:
        if title not in OVERLAY_PANELS:
            continue
        metrics: list[str] = []
        for metric, _label in entries:
            if metric.endswith("/"):
                names = sorted({n for v in views.values() for n in v.first_present([metric])})
            else:
                names = [metric] if any(metric in v for v in views.values()) else []
            if names:
                metrics = names
                break
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
        what the interactive chart and its PNG twin both draw."""
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
        view = self.views[label]
        return f"{label} ({view.last_step if view.steps else 'no'} steps)"

    # -- the interactive chart --------------------------------------------------------------------------------

    def figure(self) -> dict:
        """The plotly figure as a dict (what the MIME bundle carries)."""
        # lazy: plotly (only the interactive chart needs it)
        from plotly.subplots import make_subplots

        count = max(1, len(self.panels))
        rows = math.ceil(count / _COLUMNS)
        fig = make_subplots(
            rows=rows,
            cols=min(_COLUMNS, count),
            subplot_titles=[p[0] for p in self.panels] or ["no metrics logged yet"],
            vertical_spacing=min(0.12, 0.5 / rows),
            horizontal_spacing=0.08,
        )
        step_x, wall_x = [], []
        for index, (_title, ylabel, metrics) in enumerate(self.panels):
            row, col = index // _COLUMNS + 1, index % _COLUMNS + 1
            for colour, label, metric, (steps, walls, ys, smooth, sparse) in self._traces(metrics):
                name = self.legend_name(label)
                if len(metrics) > 1:
                    name += f" {metric.rsplit('/', 2)[-2]}"
                common = {"legendgroup": label, "hovertemplate": f"{name}: %{{y:.4g}}<extra></extra>"}
                first = index == 0 and metric == metrics[0]
                xs = steps if self.x == "step" else walls
                if smooth is not None:
                    fig.add_scatter(
                        x=xs, y=_round(ys), mode="lines", line={"color": colour, "width": 1}, opacity=0.3,
                        showlegend=False, hoverinfo="skip", legendgroup=label, row=row, col=col,
                    )  # fmt: skip
                    step_x.append(steps), wall_x.append(walls)
                    fig.add_scatter(
                        x=xs, y=_round(smooth), mode="lines", name=name, line={"color": colour, "width": 2},
                        showlegend=first, row=row, col=col, **common,
                    )  # fmt: skip
                else:
                    fig.add_scatter(
                        x=xs, y=_round(ys), mode="lines+markers" if sparse else "lines", name=name,
                        line={"color": colour, "width": 1.5}, marker={"size": 5}, showlegend=first,
                        row=row, col=col, **common,
                    )  # fmt: skip
                step_x.append(steps), wall_x.append(walls)
            fig.update_yaxes(title_text=ylabel, title_font={"size": 11}, row=row, col=col)
        fig.update_xaxes(matches="x", showticklabels=True, title_font={"size": 10})
        names = list(X_AXES)
        height = 260 * rows + 150
        buttons = [
            {
                "label": f"x: {key}",
                "method": "update",
                "args": [{"x": step_x if key == "step" else wall_x}, self._axis_titles(X_AXES[key], count)],
            }
            for key in names
        ]
        fig.update_layout(
            title={
                "text": self.heading(),
                "font": {"size": 14},
                "x": 0,
                "xanchor": "left",
                "y": 1,
                "yanchor": "top",
                "pad": {"t": 8, "l": 8},
            },
            height=height,
            hovermode="x unified",
            template="plotly_white",
            margin={"l": 60, "r": 20, "t": _TOP, "b": _BOTTOM},
            legend={
                "orientation": "h",
                "x": 0,
                "xanchor": "left",
                "y": 1 - 44 / height,
                "yanchor": "top",
                "yref": "container",
                "entrywidth": 0,
                "font": {"size": 11},
            },
            updatemenus=[
                {
                    "type": "buttons",
                    "direction": "right",
                    "active": names.index(self.x),
                    "buttons": buttons,
                    "x": 1,
                    "xanchor": "right",
                    "y": 1 + (_TOP - 8) / (height - _TOP - _BOTTOM),  # the figure's top edge (paper coordinates)
                    "yanchor": "top",
                    "font": {"size": 11},
                }
            ],
            **self._axis_titles(X_AXES[self.x], count),
        )
        return fig.to_plotly_json()

    @staticmethod
    def _axis_titles(text: str, count: int) -> dict:
        return {f"xaxis{'' if i == 1 else i}.title.text": text for i in range(1, count + 1)}

    # -- the static twin ----------------------------------------------------------------------------------------

    def png(self) -> bytes:
        """The same curves as a PNG (matplotlib's Agg canvas; nothing global is switched)."""
        # lazy: matplotlib (only the PNG twin needs it)
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
        for ax in list(axes.flat)[len(self.panels) or 1 :]:
            ax.set_visible(False)
        if not self.panels:
            axes.flat[0].set_visible(True)
            axes.flat[0].text(0.5, 0.5, "no metrics logged yet", ha="center", va="center", color="0.5")
        handles, labels = axes.flat[0].get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, loc="upper right", fontsize=8, ncol=min(4, len(labels)))
        fig.suptitle(self.heading(), fontsize=11, x=0.01, ha="left")
        fig.subplots_adjust(left=0.08, right=0.98, bottom=0.6 / (2.8 * rows + 0.9) + 0.02,
                            top=1 - 0.8 / (2.8 * rows + 0.9), wspace=0.25, hspace=0.7)  # fmt: skip
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=72)
        return buffer.getvalue()

    def text(self) -> str:
        lines = [f"{self.title}: {self.heading()}"]
        for label, view in self.views.items():
            shown = []
            for title, _ylabel, metrics in self.panels:
                found = view.latest(metrics[0]) if metrics[0] in view else None
                if found is not None:
                    shown.append(f"{title} {found[1]:.4g}")
            lines.append(f"  {self.legend_name(label)}: " + (", ".join(shown) or "no metrics yet"))
        return "\n".join(lines)

    def bundle(self) -> dict:
        """One display output: interactive in JupyterLab, a picture on GitHub and nbviewer, text in a terminal."""
        png = base64.b64encode(self.png()).decode("ascii")
        return {
            "application/vnd.plotly.v1+json": self.figure(),
            # HTML, not image/png: JupyterLab's plotly renderer shows a bundle's image/png instead of the figure
            "text/html": f"<img src='data:image/png;base64,{png}' alt='{html.escape(self.heading(), quote=True)}'/>",
            "text/plain": self.text(),
        }
