"""The key GRPO curves of a run as one PNG grid, alert episodes shaded, fast on long runs.

    plot_curves(metrics, alerts=(), path="curves.png", title=None, smooth=0.0) -> Path
    Curves(smooth=0.0).draw(view, alerts, path) -> bool    # a figure kept between dashboard refreshes
    downsample(steps, values, buckets) -> (steps, values)  # min and max per bucket: spikes stay visible

Drawing cost grows with points, not steps: each curve is cut to `BUCKETS` buckets (about one per pixel column
of a panel) keeping each bucket's minimum and maximum, so a one-step spike in a 20,000-step run still shows.
Alert episodes are shaded (red for errors, orange for warnings) over their step range in the panels of their
metrics, instead of text labels that overlap. Optional smoothing is TensorBoard's (a debiased exponential
moving average) drawn over the faint raw curve. Panels with nothing to show (no data, or a flat zero such as the
policy clip fraction of `tiny`) are dropped. matplotlib is imported only when drawing, on its Agg canvas.
"""

from __future__ import annotations

import math
from itertools import groupby
from pathlib import Path

from grpolab import owned
from grpolab.monitor.figures import steps_text
from grpolab.monitor.metrics import MetricsView, load_metrics

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
    (
        "step time",
        "seconds",
        (("timing_s/step", "step"), ("timing_s/gen", "gen"), ("timing_s/update_actor", "update_actor")),
    ),
    ("device memory", "GB", (("actor/perf/max_memory_allocated_gb", "max allocated"),)),
    ("learning rate", "lr", (("actor/lr", "lr"),)),
    # an asynchronous run's (issue 42): verl's V1 trainer logs these (the CPU trainer maps TRL's async ones to them)
    (
        "off-policy staleness",
        "model versions",
        (
            ("training/off_policy/trajectory_staleness/mean", "mean"),
            ("training/off_policy/trajectory_staleness/max", "max"),
        ),
    ),
    ("importance ratio", "rollout IS weight", (("rollout_corr/rollout_is_mean", "mean"),)),
    ("rollout mismatch KL", "KL", (("rollout_corr/kl", "kl"), ("rollout_corr/k3_kl", "k3_kl"))),
    ("dropped stale samples", "samples", (("training/off_policy/evicted_samples", "evicted"),)),
)
_COLUMNS = 3
BUCKETS = 400  # per curve: about the pixel width of a panel at dpi 80
_SEVERITY_COLOR = {"error": "#d62728", "warning": "#ff7f0e"}


def downsample(steps, values, buckets: int = BUCKETS):
    """(steps, values) cut to at most 2 x `buckets` points: the minimum and the maximum of each bucket of
    consecutive points, in step order (numpy arrays). NaN/inf are left out (plot_curves marks them)."""
    # lazy: numpy (only drawing curves needs it; importing the monitor stays light)
    import numpy as np

    x = np.asarray(steps, dtype=float)
    y = np.asarray(values, dtype=float)
    keep = np.isfinite(y)
    x, y = x[keep], y[keep]
    n = len(y)
    if n <= 2 * buckets:
        return x, y
    size = math.ceil(n / buckets)
    pad = (-n) % size
    yy = np.concatenate([y, np.full(pad, np.nan)]).reshape(-1, size)
    lo = np.nanargmin(yy, axis=1)
    hi = np.nanargmax(yy, axis=1)
    base = np.arange(len(yy)) * size
    picks = np.sort(np.unique(np.concatenate([base + lo, base + hi])))
    return x[picks], y[picks]


def smoothed(values, weight: float):
    """TensorBoard's smoothing: an exponential moving average, debiased at the start (weight 0 = none)."""
    # lazy: numpy (only drawing curves needs it; importing the monitor stays light)
    import numpy as np

    y = np.asarray(values, dtype=float)
    if not 0 < weight < 1 or not len(y):
        return y
    out = np.empty_like(y)
    last, debias = 0.0, 0.0
    for index, value in enumerate(y):
        last = weight * last + (1 - weight) * value
        debias = weight * debias + (1 - weight)
        out[index] = last / debias
    return out


def _nonfinite_runs(steps, values) -> list[tuple[int, int]]:
    """(first, last) step of each stretch of consecutive non-finite values."""
    # lazy: numpy (only drawing curves needs it; importing the monitor stays light)
    import numpy as np

    if np.isfinite(np.asarray(values, dtype=float)).all():  # the usual case, without a Python loop
        return []
    runs = []
    for bad, stretch in groupby(zip(steps, values), key=lambda point: not math.isfinite(point[1])):
        if bad:
            stretch = list(stretch)
            runs.append((stretch[0][0], stretch[-1][0]))
    return runs


def _lines_for(view: MetricsView, entries) -> list[tuple[str, str]]:
    return [  # a prefix's lines are the names under it, each labelled by the rest of its name
        (name, name[len(metric) :] if metric.endswith("/") else label)
        for metric, label in entries
        for name in view.first_present([metric])
    ]


def _has_something(view: MetricsView, lines) -> bool:
    """A panel is worth drawing when one of its curves is not a flat zero (e.g. pg_clipfrac on tiny)."""
    return any(v is not None and v != 0 for metric, _ in lines for v in view.column(metric))


def panels_for(view: MetricsView) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """The PANELS this run has something to show in, with their lines."""
    panels = [(title, ylabel, _lines_for(view, entries)) for title, ylabel, entries in PANELS]
    return [(title, ylabel, lines) for title, ylabel, lines in panels if lines and _has_something(view, lines)]


class Curves:
    """A figure kept between refreshes: `draw` redraws only when the run logged new steps or the alerts changed
    (a dashboard refresh with nothing new costs nothing)."""

    def __init__(self, smooth: float = 0.0, title: str | None = None):
        self.smooth = smooth
        self.title = title
        self._key = None

    def draw(self, metrics, alerts=(), path: str | Path = "curves.png") -> bool:
        """Draw into `path` (PNG) if anything changed since the last draw; True when it drew."""
        view = metrics if isinstance(metrics, MetricsView) else load_metrics(metrics)
        key = (
            self.smooth,  # the same data, smoothed differently, is drawn again
            len(view.steps),
            view.last_step,
            tuple((getattr(a, "rule", ""), getattr(a, "step", 0), getattr(a, "end", None)) for a in alerts),
        )
        if key == self._key and Path(path).exists():
            return False
        _draw(view, alerts, Path(path), self.title, self.smooth)
        self._key = key
        return True


def single_point_limits(ax) -> None:
    """Give a panel whose values are all equal (one point, a flat line) a y range of its own, so that its tick
    labels are short round numbers that fit the fixed margin, not an offset notation cut at the edge."""
    values = [
        float(v) for line in ax.get_lines() for v in line.get_ydata() if v is not None and math.isfinite(float(v))
    ]
    if not values:
        return
    low, high = min(values), max(values)
    # lazy: matplotlib (only drawing a PNG needs it)
    from matplotlib.ticker import MaxNLocator

    if high - low <= 1e-9 * max(1.0, abs(high)):
        pad = abs(high) * 0.1 or 0.05
        ax.set_ylim(low - pad, high + pad)
        ax.ticklabel_format(axis="y", useOffset=False, style="sci" if abs(high) < 1e-2 else "plain", scilimits=(-2, 4))
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4, steps=[1, 2, 5, 10]))  # 0.09, 0.1, 0.11: round labels
    xs = {float(x) for line in ax.get_lines() for x in line.get_xdata()}
    if len(xs) == 1:  # one step: whole steps around it, not 0.96 ... 1.04
        (only,) = xs
        ax.set_xlim(only - 1, only + 1)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=3))


def whole_steps(ax) -> None:
    """Steps are whole numbers: ticks at whole steps (two steps logged drew 1.0, 1.2, ... 2.0), and no offset on the
    y axis (a learning rate decaying from 1e-3 was labelled "1e-7+1e-3")."""
    # lazy: matplotlib (only drawing a PNG needs it)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True, nbins=6))
    ax.ticklabel_format(axis="y", useOffset=False)


def _draw(view: MetricsView, alerts, path: Path, title: str | None, smooth: float, only=None) -> None:
    fig = curves_figure(view, alerts, title, smooth, only)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = owned.fresh_file(path.with_name(f".{path.name}.tmp.png"))
    try:
        fig.savefig(tmp, dpi=80, format="png")
        owned.replace_file(tmp, path)  # a dashboard or notebook reading the PNG never sees half a file
    except BaseException:  # a target that is a directory, a full disk: leave no temporary file behind
        owned.remove_file(tmp)
        raise


def curves_figure(view: MetricsView, alerts=(), title: str | None = None, smooth: float = 0.0, only=None):
    """The curves as a matplotlib Figure on the Agg canvas (what every curves.png and the dashboard's picture is);
    `only`: the titles of the panels to draw (None: every panel the run has data for)."""
    # A bare Figure on the Agg canvas, not pyplot: no global backend switch (a notebook keeps its inline
    # backend) and nothing left open in pyplot's registry by a dashboard that redraws every few seconds.
    # lazy: matplotlib (only drawing a PNG needs it)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    panels = [p for p in panels_for(view) if only is None or p[0] in only]
    count = max(1, len(panels))
    columns = min(_COLUMNS, count)
    rows = math.ceil(count / columns)
    fig = Figure(figsize=(5.2 * columns, 3.0 * rows + 0.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(rows, columns, squeeze=False)
    first, last = (min(view.steps), max(view.steps)) if view.steps else (0, 1)
    if not panels:
        ax = axes.flat[0]
        ax.text(
            0.5,
            0.5,
            "no metrics logged yet",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=12,
            color="0.5",
        )
        ax.set_xticks([])
        ax.set_yticks([])
    for ax, (panel_title, ylabel, lines) in zip(axes.flat, panels):
        ax.set_title(panel_title, fontsize=11, y=1.0)  # a fixed y skips matplotlib's costly title placement
        ax.set_xlabel("step", fontsize=9)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.tick_params(labelsize=8)
        ax.locator_params(nbins=6)
        ax.grid(True, alpha=0.3)
        for metric, label in lines:
            steps, values = view.series(metric)
            x, y = downsample(steps, values)
            # Sparse metrics (validation every N steps) get markers so single points are visible.
            sparse = len(steps) < 0.5 * len(view.steps) or len(steps) < 3
            if smooth and not sparse and len(y) > 2:
                raw = ax.plot(x, y, linewidth=1.0, alpha=0.3)[0]
                ax.plot(x, smoothed(y, smooth), linewidth=1.5, color=raw.get_color(), label=label)
            else:
                ax.plot(x, y, marker="o" if sparse else None, markersize=3, linewidth=1.3, label=label)
            for start, end in _nonfinite_runs(steps, values):  # NaN/inf do not draw as a line: hatch them
                ax.axvspan(
                    start - 0.5,
                    end + 0.5,
                    facecolor="none",
                    edgecolor=_SEVERITY_COLOR["error"],
                    hatch="//",
                    linewidth=0,
                    alpha=0.6,
                )
        names = {metric for metric, _ in lines}
        marked = [a for a in alerts if names.intersection(getattr(a, "metrics", ()))]
        for alert in marked:
            colour = _SEVERITY_COLOR.get(getattr(alert, "severity", "warning"), _SEVERITY_COLOR["warning"])
            end = getattr(alert, "end", None) or alert.step
            # at least half a percent of the x range wide, so a one-step NaN is visible on a long run
            half = max(0.5, 0.0025 * (last - first))
            ax.axvspan(alert.step - half, end + half, color=colour, alpha=0.18, linewidth=0)
        single_point_limits(ax)  # one point (or a flat line): a y range with labels that fit
        whole_steps(ax)
        if len(lines) > 1:
            ax.legend(fontsize=7, loc="best")
        if marked:
            rules = sorted({a.rule for a in marked})
            worst = "error" if any(getattr(a, "severity", "") == "error" for a in marked) else "warning"
            ax.set_title(f"{panel_title}  ({', '.join(rules)})", fontsize=10, color=_SEVERITY_COLOR[worst], y=1.0)
    for ax in list(axes.flat)[len(panels) or 1 :]:
        ax.set_visible(False)
    heading = title or (view.run.run_id if view.run is not None else view.path.name)
    fig.suptitle(
        f"{heading}: {steps_text(view)}"
        + (f", {len(alerts)} alert(s), shaded" if alerts else "")
        + (f", smoothing {smooth:g}" if smooth else ""),
        fontsize=13,
    )
    # Fixed margins rather than tight_layout: it measures every tick label of 12 panels and doubles the time. In
    # inches, not shares of the width: the first refresh of a run draws one panel, whose tick labels a share sized
    # for three columns cut ("0.110" read "110")
    width = 5.2 * columns
    fig.subplots_adjust(
        left=0.9 / width,
        right=1 - 0.23 / width,
        bottom=0.5 / (3.0 * rows + 0.6) + 0.03,
        top=1 - 0.75 / (3.0 * rows + 0.6),
        wspace=0.3,
        hspace=0.62,
    )
    return fig


def plot_curves(
    metrics,
    alerts=(),
    path: str | Path = "curves.png",
    title: str | None = None,
    smooth: float = 0.0,
    panels: tuple[str, ...] | None = None,
) -> Path:
    """Draw the panels this run has data for (a MetricsView or anything `load_metrics` takes), shade the step ranges of
    `alerts` in the panels of their metrics, and save a PNG at `path`. `smooth`: 0 (none) to 0.99. `panels`: only
    the panels of these titles (e.g. an asynchronous run's: grpolab.monitor.offpolicy.PANELS)."""
    view = metrics if isinstance(metrics, MetricsView) else load_metrics(metrics)
    path = Path(path)
    _draw(view, alerts, path, title, smooth, panels)
    return path
