"""A live run dashboard for JupyterLab that leaves a readable notebook behind.

    dash = live(run, interval=5)     # displays itself and refreshes in a background thread until the job ends
    dash.stop()                      # stop refreshing (the job keeps running)

Live: a control row (state, a progress bar with step / total and the latest figures, a Stop button, a
smoothing slider), the curves (PNG) and the summary (alerts grouped by rule in collapsible <details>). The
curves and the summary are ordinary display outputs updated through display handles, so the saved notebook,
reopened without a kernel, shows the last picture and summary; when the run ends the control row is replaced
by one line with the final state (no Stop button left behind, no "model not found").

Each refresh reads only the new bytes of metrics.jsonl and asks Ray for the state (quick); the analysis (alerts
over the whole run, the summary, the picture) runs when new steps arrived and at least `redraw_s` seconds
passed since the last one, or when the run ends; the picture is redrawn only when it changed. Only notebooks
import this module (ipywidgets, IPython); headless code never does.
"""

from __future__ import annotations

import html
import os
import tempfile
import threading
import time
from pathlib import Path

from grpolab.jobs.runs import TERMINAL_STATES
from grpolab.monitor.progress import Progress
from grpolab.monitor.summary import RunMonitor, format_html, format_summary

_COLOURS = {"FAILED": "#d62728", "LOST": "#d62728", "SUCCEEDED": "#2ca02c", "STOPPED": "#7f7f7f"}


class Dashboard:
    """The widgets, the display handles and the refresh loop for one run. `widget` is the control row."""

    def __init__(
        self, run, interval: float = 5.0, thresholds=None, root: Path | None = None, redraw_s: float | None = None
    ):
        import ipywidgets as widgets

        if interval <= 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval}")
        self.monitor = RunMonitor(run, thresholds, root)
        self.interval = interval
        self.redraw_s = interval if redraw_s is None else redraw_s
        self.data: dict | None = None
        self.picture: bytes = b""
        self.summary_html = ""
        self.summary_text = ""
        self.progress = Progress(self.monitor.run.run_id, out=lambda _line: None)
        self.status = widgets.HTML(value="<i>loading...</i>")
        self.bar = widgets.IntProgress(value=0, min=0, max=1, bar_style="info", layout=widgets.Layout(width="30%"))
        self.stop_button = widgets.Button(
            description="Stop run",
            button_style="danger",
            icon="stop",
            tooltip="Stop the Ray job (grpolab.jobs.control.stop_run)",
        )
        self.stop_button.on_click(self._on_stop)
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
        self.widget = widgets.VBox(
            [widgets.HBox([self.status, self.stop_button]), widgets.HBox([self.bar, self.smoothing])]
        )
        self._handles: dict = {}
        self._halt = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._png = self._png_path()
        self._analysed_at: float | None = None
        self._analysed_steps = -1

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
        """Display the control row, the picture and the summary (each its own output, updated in place)."""
        from IPython.display import display

        self._handles = {
            "controls": display(self.widget, display_id=True),
            "picture": display({"text/plain": "(the curves appear at the first refresh)"}, raw=True, display_id=True),
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
            except Exception as exc:  # keep the dashboard alive; the next refresh may succeed (file mid-rotation)
                self.status.value = f"<b>refresh failed</b>: {html.escape(f'{type(exc).__name__}: {exc}')}"
                return self.data or {}
            self._show_state()
            if self.finished:
                self._finish()
            return self.data

    def _analyse(self) -> None:
        """Alerts over the whole run, the summary and the picture (redrawn only when it changed)."""
        from grpolab.monitor.plots import Curves

        self.data = self.monitor.update(refresh=False, png=None, analyse=True)
        if self.monitor.curves is None:
            self.monitor.curves = Curves(title=self.monitor.run.run_id, smooth=self.smoothing.value)
        if self.monitor.curves.draw(self.monitor.view, self.monitor.alerts, self._png) or not self.picture:
            self.picture = self._png.read_bytes()
            self._update("picture", {"image/png": self.picture, "text/plain": f"curves: {self._png}"})
        self.data["curves"] = str(self._png)
        self.summary_text = format_summary(self.data)
        self.summary_html = format_html(self.data)
        self._update("summary", {"text/html": self.summary_html, "text/plain": self.summary_text})
        self._analysed_at, self._analysed_steps = time.monotonic(), len(self.monitor.view.steps)

    def _show_state(self) -> None:
        data = self.data
        self.progress.update(self.monitor.view, data)
        colour = _COLOURS.get(data["state"], "#1f77b4")
        groups = data.get("alert_groups") or []
        self.status.value = (
            f"<b>{html.escape(data['run_id'])}</b> &nbsp; <span style='color:{colour}'><b>{data['state']}</b></span>"
            f" &nbsp; <code>{html.escape(self.progress.line())}</code> &nbsp; "
            f"{sum(g['count'] for g in groups)} alert(s)"
            + ("" if self.finished else f" &nbsp; <i>refreshing every {self.interval:g} s</i>")
        )
        self.bar.max = max(1, self.progress.total or self.progress.step or 1)
        self.bar.value = min(self.progress.step or 0, self.bar.max)
        self.stop_button.disabled = self.finished

    def _finish(self) -> None:
        """The run ended: the control row becomes one line with the final state (the saved notebook keeps it)."""
        self.progress.state = self.data["state"]
        line = f"run {self.data['run_id']}: {self.progress.line()}"
        self.stop_button.layout.display = "none"
        if self._handles.get("controls") is not None:
            self.widget.close()
            self._update(
                "controls",
                {"text/plain": line, "text/html": f"<pre style='font-family:monospace'>{html.escape(line)}</pre>"},
            )

    def _loop(self, max_updates: int | None) -> None:
        done = 0
        while not self._halt.is_set():
            self.refresh()
            done += 1
            if self.finished or (max_updates is not None and done >= max_updates):
                break
            self._halt.wait(self.interval)

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
        """Stop refreshing (does not stop the job: that is the button)."""
        self._halt.set()

    def _on_stop(self, _button=None) -> None:
        from grpolab.jobs import control

        self.stop_button.disabled = True
        try:
            control.stop_run(self.monitor.run)
        except Exception as exc:
            self.stop_button.disabled = False
            self.status.value += f" &nbsp; <b>stop failed</b>: {html.escape(str(exc))}"
            return
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
