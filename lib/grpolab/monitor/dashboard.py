"""A live run dashboard for JupyterLab that leaves a readable notebook behind.

    dash = live(run, interval=5)     # displays itself and refreshes in a background thread until the job ends
    dash.stop()                      # stop refreshing (the job keeps running)

Live: a row of controls (Stop run, with a confirm step; a smoothing slider; "live: refreshing every N s" while the
refresh thread runs), the run's state line "as of HH:MM:SS" with a progress bar, the curves (PNG) and the summary (alerts grouped by rule in collapsible <details>). Only the controls are
widgets. The state line, the curves and the summary are ordinary display outputs (HTML with a plain-text twin, a
PNG) rewritten in place through display handles at every refresh, so a notebook saved mid-run, reopened without
a kernel, or shown by nbviewer or GitHub, shows the run's last state, figures, picture and summary. The controls'
output carries a plain-text twin too, and when the run ends (or the view stops following it) it is replaced by
one line: no Stop button is left behind, and no "model not found".

Each refresh reads only the new bytes of metrics.jsonl and asks Ray for the state (quick); the analysis (alerts
over the whole run, the summary, the picture) runs when new steps arrived and at least `redraw_s` seconds
passed since the last one, or when the run ends; the picture is redrawn only when it changed. Other views (the
notebook's comparison chart) can ask to be redrawn with it (`on_analysis`). Only notebooks import this module
(ipywidgets, IPython); headless code never does.
"""

from __future__ import annotations

import html
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from grpolab.jobs import control
from grpolab.jobs.runs import TERMINAL_STATES
from grpolab.monitor.clock import RECONNECT, as_of
from grpolab.monitor.collapse import state_text
from grpolab.monitor.nodes import nodes_summary
from grpolab.monitor.plots import Curves
from grpolab.monitor.progress import Progress, follow
from grpolab.monitor.summary import NODES_PNG, RunMonitor, format_html, format_summary

# ipywidgets marks the view of a widget whose kernel is gone (a notebook reopened from its saved widget state, a
# kernel shut down) with this class; the style below, shipped inside the live label's own HTML, then hides the
# "live" claim, shows how to reconnect instead and greys the Stop button out, which could not reach anything
DISCONNECTED = "jupyter-widgets-disconnected"
OFFLINE = "not live: no kernel refreshes this view and Stop run cannot act; run this cell again to reconnect"
LIVE_STYLE = (
    "<style>.grpolab-offline{display:none}"
    f".{DISCONNECTED} .grpolab-live{{display:none}}.{DISCONNECTED} .grpolab-offline{{display:inline}}"
    f".grpolab-stop.{DISCONNECTED},.grpolab-needs-kernel.{DISCONNECTED}{{pointer-events:none;opacity:0.4}}</style>"
)


def offline_note(text: str) -> str:
    """The HTML of a widgets.HTML that shows `text` only once ipywidgets marks it disconnected (no kernel)."""
    return f"{LIVE_STYLE}<span class='grpolab-offline'><i>{html.escape(text)}</i></span>"


STATE_COLOURS = {"FAILED": "#d62728", "LOST": "#d62728", "SUCCEEDED": "#2ca02c", "STOPPED": "#7f7f7f"}
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def state_html(
    run_id: str, state: str, line: str, step: int | None, total: int | None, extra: str = "", collapse=None
) -> str:
    """A run's state as HTML that wraps between words only (never "SUCCE / EDED"): the run id, the state as a
    coloured badge, a progress bar (plain <div>s: no widget, so it survives a save) and the progress line. A run
    whose training collapsed (grpolab.monitor.collapse) says so in its badge, in red, whatever the job's state."""
    colour = STATE_COLOURS["FAILED"] if collapse else STATE_COLOURS.get(state, "#1f77b4")
    state = state_text(state, collapse)
    share = 100.0 * min(1.0, (step or 0) / total) if total else 0.0
    bar = (
        "<div style='flex:0 0 220px;height:10px;background:#e6e6e6;border-radius:3px;align-self:center'>"
        f"<div style='width:{share:.1f}%;height:100%;background:{colour};border-radius:3px'></div></div>"
        if total
        else ""
    )
    word = "white-space:nowrap"
    return (
        "<div style='display:flex;flex-wrap:wrap;gap:2px 12px;align-items:baseline;word-break:keep-all;"
        "overflow-wrap:normal'>"
        f"<b style='{word}'>{html.escape(run_id)}</b>"
        f"<span style='{word};color:white;background:{colour};padding:0 6px;border-radius:3px'><b>"
        f"{html.escape(state or '?')}</b></span>{bar}"
        f"<code style='white-space:normal'>{html.escape(line)}</code>"
        + (f"<span style='{word}'>{extra}</span>" if extra else "")
        + "</div>"
    )


class Dashboard:
    """The controls, the display handles and the refresh loop for one run. `widget` is the row of controls."""

    def __init__(
        self, run, interval: float = 5.0, thresholds=None, root: Path | None = None, redraw_s: float | None = None
    ):
        # lazy: ipywidgets (only in a notebook kernel: headless code never loads the widgets)
        import ipywidgets as widgets

        if interval <= 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval}")
        self.monitor = RunMonitor(run, thresholds, root)
        self.interval = interval
        self.redraw_s = interval if redraw_s is None else redraw_s
        self.data: dict | None = None
        self.picture: bytes = b""
        self.summary_html = self.summary_text = ""
        self.state_html = self.state_text = ""  # the state line as shown (HTML) and its plain-text twin
        self.message = ""  # the last thing the controls said (a stop asked for, a stop that failed)
        self.progress = Progress(self.monitor.run.run_id, out=lambda _line: None)
        self.stop_button = widgets.Button(
            description="Stop run",
            button_style="warning",
            icon="stop",
            tooltip="Stop the Ray job (asks first; the finished steps are kept)",
        )
        self.stop_button.on_click(self._on_stop)
        self.stop_button.add_class("grpolab-stop")
        self.confirm_button = widgets.Button(description="Yes, stop it", button_style="danger")
        self.cancel_button = widgets.Button(description="Cancel")
        self.confirm_button.on_click(self._on_confirm)
        self.cancel_button.on_click(self._on_cancel)
        self.question = widgets.HTML()
        self.confirm_row = widgets.HBox([self.question, self.confirm_button, self.cancel_button])
        self.confirm_row.layout.display = "none"
        self.smoothing = widgets.FloatSlider(
            value=0.0,
            min=0.0,
            max=0.95,
            step=0.05,
            description="smoothing",
            continuous_update=False,
            layout=widgets.Layout(width="260px"),
        )
        self.smoothing.observe(self._on_smoothing, names="value")
        # the only place that says "live": a widget, which needs the kernel that refreshes it (the ordinary outputs
        # below are saved with the notebook and say only when they were read)
        self.live_label = widgets.HTML(value="")
        self.widget = widgets.VBox(
            [widgets.HBox([self.stop_button, self.smoothing, self.live_label]), self.confirm_row]
        )
        self.on_analysis: list[Callable[[], None]] = []  # other views redrawn with the picture
        self._handles: dict = {}
        self._halt = threading.Event()
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._png = self._png_path()
        self._analysed_at: float | None = None
        self._analysed_steps = -1
        self._closed = False

    def _png_path(self) -> Path:
        path = self.monitor.run.path / "curves.png"
        if os.access(path.parent, os.W_OK):
            return path
        # a read-only run directory (someone else's run): draw in a temp dir instead
        return Path(tempfile.mkdtemp(prefix="grpolab-curves-")) / "curves.png"

    @property
    def finished(self) -> bool:
        return bool(self.data) and self.data["state"] in TERMINAL_STATES

    # -- showing ------------------------------------------------------------------------------------------

    def show(self) -> Dashboard:
        """Display the controls, the state line, the picture and the summary (each its own output, updated in
        place). The controls' output has a plain-text twin for a reader without widgets."""
        # lazy: IPython (only in a notebook kernel: headless code never loads IPython)
        from IPython.display import display

        controls = {
            WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": self.widget.model_id},
            "text/plain": "(live controls of the dashboard: Stop run, smoothing)",
        }
        self._handles = {
            "controls": display(controls, raw=True, display_id=True),
            "state": display({"text/plain": f"run {self.monitor.run.run_id}: loading ..."}, raw=True, display_id=True),
            "picture": display({"text/plain": "(the curves appear at the first refresh)"}, raw=True, display_id=True),
            "nodes": display(
                {"text/plain": "(every node of the run, once it has telemetry)"}, raw=True, display_id=True
            ),
            "summary": display({"text/plain": "loading ..."}, raw=True, display_id=True),
        }
        return self

    def _update(self, name: str, data: dict) -> None:
        handle = self._handles.get(name)
        if handle is not None:
            handle.update(data, raw=True)

    # -- refreshing -----------------------------------------------------------------------------------------

    def refresh(self, force_analysis: bool = False) -> dict:
        """One update: state and new steps (quick), then the analysis when it is due; safe from any thread."""
        with self._lock:
            try:
                self.data = self.monitor.update(refresh=True, analyse=False)
                due = self._analysed_at is None or time.monotonic() - self._analysed_at >= self.redraw_s
                grew = len(self.monitor.view.steps) != self._analysed_steps
                if force_analysis or self.finished or self._analysed_at is None or (due and grew):
                    self._analyse()
                self._show_summary()  # every refresh: its steps and latest metrics never lag the state line
            except Exception as exc:  # keep the dashboard alive; the next refresh may succeed (file mid-rotation)
                self.message = f"refresh failed: {type(exc).__name__}: {exc}"
                if self.data:
                    self._show_state()
                return self.data or {}
            self._show_state()
            if self.finished:
                self._finish()
            return self.data

    def _analyse(self) -> None:
        """Alerts over the whole run, the summary and the picture (redrawn only when it changed)."""

        self.data = self.monitor.update(refresh=False, png=None, analyse=True)
        if self.monitor.curves is None:
            self.monitor.curves = Curves(title=self.monitor.run.run_id, smooth=self.smoothing.value)
        if self.monitor.curves.draw(self.monitor.view, self.monitor.alerts, self._png) or not self.picture:
            self.picture = self._png.read_bytes()
            self._update("picture", {"image/png": self.picture, "text/plain": f"curves: {self._png}"})
        if self.data.get("nodes"):  # per-node telemetry: its small multiples, redrawn with the curves
            self.data["nodes"] = self.monitor.nodes = nodes_summary(
                self.monitor.run, self.monitor.thresholds.nodes, self._png.with_name(NODES_PNG)
            )
            picture = Path(self.data["nodes"]["picture"]).read_bytes()
            self._update("nodes", {"image/png": picture, "text/plain": f"nodes: {self.data['nodes']['picture']}"})
        self._analysed_at, self._analysed_steps = time.monotonic(), len(self.monitor.view.steps)
        for redraw in list(self.on_analysis):
            try:
                redraw()
            except Exception as exc:  # another view's trouble must not stop this one
                self.message = f"a linked view failed to redraw: {type(exc).__name__}: {exc}"

    def _show_summary(self) -> None:
        """The summary (state, steps, latest metrics; the alerts of the last analysis), rewritten at every refresh
        with what the state line says: written once per analysis, it said "1 logged" below a state line at step 80.
        Clock times and "as of", never "1 s ago": the saved notebook keeps it (format_summary's `saved`)."""
        data = {**self.data, "curves": str(self._png) if self.picture else None}
        summary_text, summary_html = format_summary(data, saved=True), format_html(data)
        if (summary_text, summary_html) != (self.summary_text, self.summary_html):
            self.summary_text, self.summary_html = summary_text, summary_html
            self._update("summary", {"text/html": summary_html, "text/plain": summary_text})

    def _show_state(self) -> None:
        data = self.data
        self.progress.update(self.monitor.view, data)
        alerts = sum(g["count"] for g in data.get("alert_groups") or [])
        stamp = as_of()
        extra = [f"{alerts} alert(s)", stamp]
        live = not self.finished and not self._closed and self._thread is not None and self._thread.is_alive()
        self.live_label.value = (
            f"{LIVE_STYLE}<span class='grpolab-live'><span style='color:#2ca02c'>&#9679; live</span>: refreshing every "
            f"{self.interval:g} s</span><span class='grpolab-offline'><i>{html.escape(OFFLINE)}</i></span>"
            if live
            else ""
        )
        if not self.finished:
            extra.append(f"<i>{html.escape(RECONNECT)}</i>")
        if self.message:
            extra.append(f"<b>{html.escape(self.message)}</b>")
        if again := data.get("restarts"):  # the run's driver restarted it (or said why not)
            extra.append(f"<b>{html.escape(again['headline'] or '')}</b>")
        line = self.progress.line()
        if self.finished:  # nothing remains of an ended run
            line = re.sub(r"\s+remaining ~\S+", "", line)
        collapse = data.get("collapse")
        self.state_html = state_html(
            data["run_id"],
            data["state"],
            line,
            self.progress.step,
            self.progress.total,
            " &nbsp; ".join(extra),
            collapse,
        )
        self.state_text = (
            f"run {data['run_id']}: {state_text(data['state'], collapse)} {stamp}  {line}  {alerts} alert(s)"
            + ("" if self.finished else f"  ({RECONNECT})")
            + (f"  {self.message}" if self.message else "")
            + (f"  {data['restarts']['headline']}" if data.get("restarts") else "")
        )
        self._update("state", {"text/html": self.state_html, "text/plain": self.state_text})
        self.stop_button.disabled = self.finished

    def _close_controls(self, why: str) -> None:
        """The controls are no use any more: their output becomes one plain line (the saved notebook keeps it)."""
        if self._closed:
            return
        self._closed = True
        self.live_label.value = ""
        self.stop_button.layout.display = "none"
        self.confirm_row.layout.display = "none"
        if self._handles.get("controls") is not None:
            self.widget.close()
            self._update("controls", {"text/plain": why, "text/html": f"<i>{html.escape(why)}</i>"})

    def _finish(self) -> None:
        """The run ended: the state line keeps the final state, the controls go."""
        ended = state_text(self.data["state"], self.data.get("collapse"))
        self._close_controls(f"run {self.data['run_id']} ended {ended}: nothing left to control")

    def _loop(self, max_updates: int | None) -> None:
        """Refresh at each poll of the one follow loop (grpolab.monitor.progress.follow) until the run ends, the view
        is stopped (nothing is refreshed after stop()) or `max_updates` refreshes were made."""
        refreshes = 0

        def read() -> dict:
            return (self.data or {}) if self._halt.is_set() else self.refresh()

        def report(_view, _status) -> bool:
            nonlocal refreshes
            refreshes += 1
            return self.finished or (max_updates is not None and refreshes >= max_updates)

        try:
            follow(self.monitor.run, report, poll_s=self.interval, busy=lambda: not self._halt.is_set(), read=read)
        finally:  # nothing refreshes the view any more: it no longer says "live"
            self.live_label.value = ""

    def start(self, background: bool = True, max_updates: int | None = None) -> Dashboard:
        """Refresh until the job ends (or `max_updates`), in a daemon thread unless `background` is False."""
        self._halt.clear()
        if not background:
            self._loop(max_updates)
            return self
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=self._loop, args=(max_updates,), daemon=True, name=f"grpolab-dashboard-{self.monitor.run.run_id}"
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop refreshing (does not stop the job: that is the button); the state line says so."""
        self._halt.set()
        self.live_label.value = ""
        if self.data and not self.finished:
            self._close_controls(
                f"stopped following run {self.data['run_id']} (it goes on): run this cell again to follow it"
            )
            self._show_state()

    # -- the controls -------------------------------------------------------------------------------------------

    def _on_stop(self, _button=None) -> None:
        """First click: ask. The job is stopped only by the confirm button."""
        run_id = self.monitor.run.run_id
        self.question.value = f"Stop run <b>{html.escape(run_id)}</b>? The steps done so far are kept. &nbsp;"
        self.confirm_row.layout.display = None
        self.stop_button.disabled = True

    def _on_cancel(self, _button=None) -> None:
        self.confirm_row.layout.display = "none"
        self.stop_button.disabled = self.finished

    def _on_confirm(self, _button=None) -> None:
        self.confirm_row.layout.display = "none"
        self.message = "stopping ..."
        if self.data:
            self._show_state()
        try:
            control.stop_run(self.monitor.run)
        except Exception as exc:
            self.stop_button.disabled = False
            self.message = f"stop failed: {exc}"
            if self.data:
                self._show_state()
            return
        self.message = "stopped on request"
        self.refresh(force_analysis=True)

    def _on_smoothing(self, change) -> None:
        with self._lock:
            if self.monitor.curves is not None:
                self.monitor.curves.smooth = change["new"]
            self._analysed_at = None
        self.refresh(force_analysis=True)

    def _ipython_display_(self):  # `dash` as the last line of a cell shows it
        self.show()


def live(
    run,
    interval: float = 5.0,
    thresholds=None,
    display: bool = True,
    background: bool = True,
    max_updates: int | None = None,
) -> Dashboard:
    """Show a live dashboard for `run` (run id, run directory or metrics file) and keep it refreshed every
    `interval` seconds while the job runs. Returns the Dashboard (`.stop()` ends the refreshing)."""
    dash = Dashboard(run, interval=interval, thresholds=thresholds)
    if display:
        dash.show()
    return dash.start(background=background, max_updates=max_updates)
