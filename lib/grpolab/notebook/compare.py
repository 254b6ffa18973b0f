"""06_compare and 04_monitor's comparison: runs overlaid in one chart, their recipe and stack differences above
it, their logs beside it.

    compare_runs(["run-a", "run-b"], x="step", smoothing=0.6)       # 06_compare
    compare_runs([run, *compare_with], dashboard=dashboard)          # 04_monitor: drawn anew with the live dashboard

Every part is an ordinary display output (HTML with a plain-text twin; the chart is a PNG, grpolab.monitor.overlay),
so the saved notebook shows them without a kernel, in nbviewer and on GitHub.
"""

from __future__ import annotations

import html

from IPython import get_ipython
from IPython.display import display

from grpolab.jobs.runs import Run, RunNotFound, list_runs, resolve_run
from grpolab.notebook.display import NotebookStop, show_html, table_html
from grpolab.paths import runs_dir

LOG_LINES = 40  # the tail of each run's log shown beside the chart
X_CHOICES = ("step", "wall")


def _resolve(runs) -> list:
    if isinstance(runs, (str, Run)):
        runs = [runs]
    found, missing = [], []
    for ref in runs or []:
        if isinstance(ref, Run):
            found.append(ref)
            continue
        try:
            found.append(resolve_run(str(ref)))
        except RunNotFound as exc:
            missing.append(str(exc))
    if missing:
        raise NotebookStop("\n".join(missing))
    if not found:
        raise NotebookStop('no runs to compare: pass their ids, e.g. papermill -y "runs: [run-a, run-b]"')
    labels = [r.run_id for r in found]
    if len(set(labels)) < len(labels):
        raise NotebookStop(f"a run is named twice: {labels}")
    return found


def latest_runs(runs: list[str], count: int = 2) -> list:
    """The runs named (checked), or, when none is named, the `count` latest runs under runs/."""
    if runs:
        return _resolve(runs)
    found = list_runs()[-count:]
    if not found:
        raise NotebookStop(
            f"no runs under {runs_dir()} yet: train one (03_launch.ipynb, `grpolab run tiny`) or pass runs "
            '(papermill -y "runs: [run-a, run-b]")'
        )
    print(f"the {len(found)} latest run(s): {', '.join(r.run_id for r in found)}")
    return found


def show_differences(runs) -> list:
    """The keys whose values differ between the runs' records (resolved recipe, stack, launch), as one table;
    returns the differences (grpolab.monitor.rundiff)."""
    # lazy: orjson, yaml (the monitor loads when a comparison is shown, not with `import grpolab.notebook`)
    from grpolab.monitor.rundiff import ABSENT, differences, value_text

    if len(runs) < 2:
        show_html(
            "<b>recipe and stack differences</b>: one run only (add runs to compare it with)",
            "recipe and stack differences: one run only (add runs to compare it with)",
        )
        return []
    found = differences(runs)
    ids = [r.run_id for r in runs]
    title = f"recipe and stack differences between {', '.join(ids)}"
    if not found:
        show_html(
            f"<b>{html.escape(title)}</b>: none (same resolved recipe, same versions)",
            f"{title}: none (same resolved recipe, same versions)",
        )
        return found
    rows = [[d.key, *(value_text(v) for v in d.values)] for d in found]
    colours = ["#fff4d6" if any(v == ABSENT for v in d.values) else None for d in found]
    width = max(len(r[0]) for r in rows)
    plain = "\n".join(f"{r[0]:{width}}  " + "  |  ".join(r[1:]) for r in rows)
    show_html(
        f"<b>{html.escape(title)}</b> ({len(found)} key(s); {ABSENT}: that run's record has no such key)"
        + table_html(["key", *ids], rows, colours),
        f"{title}\n{plain}",
    )
    return found


def _log_tail(run, lines: int) -> str:
    try:
        text = run.job_log.read_text(errors="replace")
    except OSError:
        return "(no log yet: logs/job.log does not exist)"
    tail = text.rstrip().splitlines()[-lines:]
    return "\n".join(tail) or "(empty log)"


def logs_html(runs, lines: int = LOG_LINES) -> tuple[str, str]:
    """The last `lines` lines of each run's log, side by side (HTML, each in a collapsible box) and as text."""
    columns, plain = [], []
    for run in runs:
        tail = _log_tail(run, lines)
        state = run.status().get("state") or "?"
        columns.append(
            "<div style='flex:1 1 0;min-width:320px;max-width:100%'><details open><summary><b>"
            f"{html.escape(run.run_id)}</b> ({html.escape(state)}): the last {lines} lines of "
            f"<code>{html.escape(str(run.job_log))}</code></summary>"
            "<pre style='font-size:75%;max-height:24em;overflow:auto;white-space:pre-wrap;margin:0'>"
            f"{html.escape(tail)}</pre></details></div>"
        )
        plain.append(f"== {run.run_id} ({state}): {run.job_log}\n{tail}")
    return "<div style='display:flex;flex-wrap:wrap;gap:12px'>" + "".join(columns) + "</div>", "\n".join(plain)


class Comparison:
    """The chart and the logs of a comparison, as display outputs that can be redrawn in place."""

    def __init__(self, runs, x: str, smoothing: float, log_lines: int):
        # lazy: orjson, yaml (the monitor loads when a comparison is shown, not with `import grpolab.notebook`)
        from grpolab.monitor.metrics import MetricsView

        self.runs, self.x, self.smoothing, self.log_lines = runs, x, smoothing, log_lines
        self.views = {r.run_id: MetricsView.for_run(r) for r in runs}
        self.handles: dict = {}

    def bundles(self) -> tuple[dict, dict]:
        # lazy: orjson, yaml (the monitor loads when a comparison is shown, not with `import grpolab.notebook`)
        from grpolab.monitor.overlay import Overlay

        for view in self.views.values():
            view.refresh()
        chart = Overlay(self.views, x=self.x, smooth=self.smoothing).bundle()
        logs_page, logs_text = logs_html(self.runs, self.log_lines)
        return chart, {"text/html": logs_page, "text/plain": logs_text}

    def show(self) -> Comparison:
        chart, logs = self.bundles()
        if get_ipython() is None:  # plain Python: the text twins
            print(chart["text/plain"], logs["text/plain"], sep="\n")
            return self
        self.handles = {
            "chart": display(chart, raw=True, display_id=True),
            "logs": display(logs, raw=True, display_id=True),
        }
        return self

    def redraw(self) -> None:
        """Draw the chart and the logs anew, in place."""
        chart, logs = self.bundles()
        if self.handles:
            self.handles["chart"].update(chart, raw=True)
            self.handles["logs"].update(logs, raw=True)


def compare_runs(
    runs, x: str = "step", smoothing: float = 0.6, log_lines: int = LOG_LINES, dashboard=None
) -> Comparison:
    """Show the runs' recipe and stack differences, their curves overlaid in one chart (the x axis as step or
    wall-clock, `smoothing` kept with the output) and the tail of their logs. With a live `dashboard` (04_monitor), the chart and the logs are redrawn whenever the
    dashboard redraws its own picture, with the dashboard's smoothing slider."""
    if x not in X_CHOICES:
        raise NotebookStop(f"x must be one of {', '.join(X_CHOICES)} (wall: wall-clock seconds), got {x!r}")
    if not 0 <= smoothing < 1:
        raise NotebookStop(
            f"smoothing must be at least 0 and below 1 (TensorBoard's 0.6 is a good start), got {smoothing}"
        )
    found = _resolve(runs)
    show_differences(found)
    running = [r.run_id for r in found if (r.status().get("state") or "") in ("PENDING", "RUNNING")]
    view = Comparison(found, x, smoothing, log_lines)
    if dashboard is not None:
        if dashboard.smoothing.value != smoothing:
            dashboard.smoothing.value = smoothing  # one smoothing for the dashboard's picture and this chart

        def redraw() -> None:
            view.smoothing = float(dashboard.smoothing.value)
            view.redraw()

        dashboard.on_analysis.append(redraw)
    elif running:
        # lazy: orjson, yaml (the monitor loads when a comparison is shown, not with `import grpolab.notebook`)
        from grpolab.monitor.clock import as_of

        print(f"{', '.join(running)} still running: this is a snapshot {as_of()}; run the cell again to refresh it")
    return view.show()
