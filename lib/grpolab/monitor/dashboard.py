"""A live run dashboard for JupyterLab: status line, stop button, the curves grid and the monitor's text.

    dash = live(run, interval=5)     # displays itself and refreshes in a background thread until the job ends
    dash.stop()                      # stop refreshing (the job keeps running)

Only notebooks import this module; it imports ipywidgets and IPython, which headless code (the CLI, papermill
runs, tests of the library) never needs. Refreshing runs in a background thread so that the kernel stays
free: a click on the stop button is handled while the dashboard keeps updating. Each refresh reads only the
new bytes of metrics.jsonl (RunMonitor keeps its view) and redraws the PNG into the run directory.
"""

from __future__ import annotations

import html
import os
import tempfile
import threading
from pathlib import Path

from grpolab.monitor.summary import RunMonitor, format_summary
from grpolab.runs import TERMINAL_STATES


class Dashboard:
    """The widgets and the refresh loop for one run. `widget` is the box to display."""

    def __init__(self, run, interval: float = 5.0, thresholds=None, root: Path | None = None):
        import ipywidgets as widgets

        if interval <= 0:
            raise ValueError(f"interval must be > 0 seconds, got {interval}")
        self.monitor = RunMonitor(run, thresholds, root)
        self.interval = interval
        self.data: dict | None = None
        self.status = widgets.HTML(value="<i>loading...</i>")
        self.stop_button = widgets.Button(description="Stop run", button_style="danger", icon="stop",
                                          tooltip="Stop the Ray job (grpolab.launch.stop_run)")
        self.stop_button.on_click(self._on_stop)
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.output = widgets.Output(layout=widgets.Layout(max_height="28em", overflow="auto"))
        self.widget = widgets.VBox([widgets.HBox([self.status, self.stop_button]), self.image, self.output])
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._png = self._png_path()

    def _png_path(self) -> Path:
        path = self.monitor.run.path / "curves.png"
        if os.access(path.parent, os.W_OK):
            return path
        # a read-only run directory (someone else's run): draw in a temp dir instead
        return Path(tempfile.mkdtemp(prefix="grpolab-curves-")) / "curves.png"

    @property
    def finished(self) -> bool:
        return bool(self.data) and self.data["state"] in TERMINAL_STATES

    def refresh(self) -> dict:
        """One update: status, metrics, alerts, picture; safe to call from any thread."""
        try:
            self.data = self.monitor.update(refresh=True, png=self._png)
        except Exception as exc:  # keep the dashboard alive; the next refresh may succeed (file mid-rotation)
            self.status.value = f"<b>refresh failed</b>: {html.escape(f'{type(exc).__name__}: {exc}')}"
            return self.data or {}
        data = self.data
        colour = {"FAILED": "#d62728", "LOST": "#d62728", "SUCCEEDED": "#2ca02c", "STOPPED": "#7f7f7f"}.get(data["state"], "#1f77b4")
        last = data["last_step"] if data["last_step"] is not None else "-"
        self.status.value = (
            f"<b>{html.escape(data['run_id'])}</b> &nbsp; <span style='color:{colour}'><b>{data['state']}</b></span>"
            f" &nbsp; step {last} &nbsp; {len(data['alerts'])} alert(s)"
            + ("" if self.finished else f" &nbsp; <i>refreshing every {self.interval:g} s</i>")
        )
        self.stop_button.disabled = self.finished
        if data.get("curves"):
            self.image.value = Path(data["curves"]).read_bytes()
        # Replacing `outputs` (rather than printing inside `with output:`) works from a background thread.
        self.output.outputs = ({"output_type": "stream", "name": "stdout", "text": format_summary(data) + "\n"},)
        return data

    def _loop(self, max_updates: int | None) -> None:
        done = 0
        while not self._halt.is_set():
            self.refresh()
            done += 1
            if self.finished or (max_updates is not None and done >= max_updates):
                break
            self._halt.wait(self.interval)

    def start(self, background: bool = True, max_updates: int | None = None) -> "Dashboard":
        """Refresh until the job ends (or `max_updates`), in a daemon thread unless `background` is False."""
        self._halt.clear()
        if not background:
            self._loop(max_updates)
            return self
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, args=(max_updates,), daemon=True,
                                            name=f"grpolab-dashboard-{self.monitor.run.run_id}")
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop refreshing (does not stop the job: that is the button)."""
        self._halt.set()

    def _on_stop(self, _button=None) -> None:
        from grpolab import launch

        self.stop_button.disabled = True
        try:
            launch.stop_run(self.monitor.run)
        except Exception as exc:
            self.stop_button.disabled = False
            self.status.value += f" &nbsp; <b>stop failed</b>: {html.escape(str(exc))}"
            return
        self.refresh()

    def _ipython_display_(self):  # `dash` as the last line of a cell shows the widgets
        from IPython.display import display

        display(self.widget)


def live(run, interval: float = 5.0, thresholds=None, display: bool = True, background: bool = True,
         max_updates: int | None = None) -> Dashboard:
    """Show a live dashboard for `run` (run id, run directory or metrics file) and keep it refreshed every
    `interval` seconds while the job runs. Returns the Dashboard (`.stop()` ends the refreshing)."""
    dash = Dashboard(run, interval=interval, thresholds=thresholds)
    if display:
        from IPython.display import display as show

        show(dash.widget)
    return dash.start(background=background, max_updates=max_updates)
