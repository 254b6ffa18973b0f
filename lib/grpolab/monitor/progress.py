"""How far a run is, while it is followed: step / total, elapsed and remaining time, latest reward and
validation accuracy.

    progress = Progress(run_id, total=1200, bar=False, every_s=30)   # bar: an ipywidgets bar (JupyterLab)
    progress.update(view, status)    # after each poll; prints a line at most every `every_s` seconds
    progress.close(status)           # the final line (always printed), the bar replaced by that line

Headless (papermill, the terminal, `bar=False`) it prints plain text lines, rate-limited by time, not by steps:
the first step seen, then at most one line per `every_s` seconds, then the final state. With `bar=True` (a
JupyterLab kernel; the caller decides, this module never guesses) it shows a progress bar that updates in place,
and leaves one plain line in the saved notebook when it closes (a widget cannot be shown without a kernel).
`line(...)` formats one line; the clock is injectable so tests check the rate limit without sleeping.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable

REWARD = "critic/score/mean"
VAL_PREFIX = "val-core/"


def _clock_text(seconds: float | None) -> str:
    if seconds is None or seconds != seconds or seconds < 0:
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def latest_figures(view) -> dict[str, float]:
    """{"reward": ..., "val_acc": ...} from the latest steps that logged them (absent when never logged)."""
    out: dict[str, float] = {}
    if view is None:
        return out
    found = view.latest(REWARD)
    if found is not None:
        out["reward"] = found[1]
    for name in view.first_present([VAL_PREFIX]):
        found = view.latest(name)
        if found is not None:
            out["val_acc"] = found[1]
            break
    return out


class Progress:
    """The progress of one followed run (see the module docstring)."""

    def __init__(
        self,
        run_id: str,
        total: int | None = None,
        bar: bool = False,
        every_s: float = 30.0,
        out: Callable[[str], None] = print,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.run_id = run_id
        self.total = total
        self.every_s = every_s
        self.out = out
        self.clock = clock
        self.started = clock()
        self.first_step: int | None = None  # the step when following began: the rate counts steps seen since
        self.first_seen_at: float | None = None
        self.step: int | None = None
        self.figures: dict[str, float] = {}
        self.state = ""
        self._last_print: float | None = None
        self._printed_step: int | None = None
        self._bar = self._make_bar() if bar else None

    # -- what is shown ------------------------------------------------------------------------------------

    def remaining_s(self) -> float | None:
        """Seconds left at the rate seen while following (None until two steps were seen, or no total)."""
        if self.total is None or self.step is None or self.first_step is None or self.first_seen_at is None:
            return None
        done = self.step - self.first_step
        spent = self.clock() - self.first_seen_at
        if done <= 0 or spent <= 0:
            return None
        return max(0, self.total - self.step) * spent / done

    def line(self) -> str:
        """`step 120/1200 (10 %)  elapsed 1:02  remaining ~9:18  reward=0.412  val_acc=0.300`."""
        if self.step is None:
            head = "step -" + (f"/{self.total}" if self.total else "")
        else:
            head = f"step {self.step}" + (f"/{self.total} ({100 * self.step / self.total:.0f} %)" if self.total else "")
        parts = [head, f"elapsed {_clock_text(self.clock() - self.started)}"]
        remaining = self.remaining_s()
        if remaining is not None and not self.state:
            parts.append(f"remaining ~{_clock_text(remaining)}")
        parts += [f"{label}={value:.3f}" for label, value in self.figures.items()]
        if self.state:
            parts.append(self.state)
        return "  ".join(parts)

    # -- updates --------------------------------------------------------------------------------------------

    def update(self, view=None, status: dict | None = None) -> None:
        """Take in the latest step and figures; print a line if `every_s` passed since the last one (the first
        step seen is printed at once), or update the bar."""
        status = status or {}
        if status.get("total_steps"):
            self.total = status["total_steps"]
        step = view.last_step if view is not None else None
        if step is not None and step != self.step:
            if self.first_step is None:
                self.first_step, self.first_seen_at = step, self.clock()
            self.step = step
            self.figures = latest_figures(view)
        if self._bar is not None:
            self._show_bar()
            return
        now = self.clock()
        due = self._last_print is None or now - self._last_print >= self.every_s
        if self.step is not None and self.step != self._printed_step and due:
            self._emit(now)

    def close(self, status: dict | None = None, view=None) -> None:
        """The final line: the state the run ended in (or why following stopped)."""
        if view is not None:
            self.update(view, status)
        self.state = str((status or {}).get("state") or "")
        text = f"run {self.run_id}: " + self.line()
        if self._bar is not None:
            self._close_bar(text)
        else:
            self.out(text)

    def _emit(self, now: float) -> None:
        self._last_print, self._printed_step = now, self.step
        self.out(self.line())

    # -- the JupyterLab bar ---------------------------------------------------------------------------------

    def _make_bar(self):
        try:
            import ipywidgets as widgets
            from IPython.display import display
        except ImportError:  # no widgets: plain lines
            return None
        bar = widgets.IntProgress(
            value=0, min=0, max=max(1, self.total or 1), bar_style="info", layout=widgets.Layout(width="40%")
        )
        label = widgets.HTML(value=f"following run <b>{html.escape(self.run_id)}</b> ...")
        box = widgets.HBox([bar, label])
        handle = display(box, display_id=True)
        return {"bar": bar, "label": label, "box": box, "handle": handle}

    def _show_bar(self) -> None:
        bar, label = self._bar["bar"], self._bar["label"]
        if self.total:
            bar.max = self.total
        bar.value = min(self.step or 0, bar.max)
        label.value = f"<code>{html.escape(self.line())}</code>"

    def _close_bar(self, text: str) -> None:
        # Replace the widget by a plain output: the saved notebook shows the last line, not "model not found".
        self._bar["box"].close()
        handle = self._bar["handle"]
        data = {"text/plain": text, "text/html": f"<pre style='font-family:monospace'>{html.escape(text)}</pre>"}
        if handle is not None:
            handle.update(data, raw=True)
        else:
            self.out(text)


def follow_while(
    run,
    busy: Callable[[], bool],
    bar: bool = False,
    every_s: float = 30.0,
    poll_s: float = 2.0,
    out: Callable[[str], None] = print,
) -> dict:
    """Show the progress of `run` from its files alone (status.json, metrics.jsonl; nothing asks Ray) while
    `busy()` is true, e.g. while another kernel executes 04_monitor for run.ipynb; then the final line.
    Returns the last status read."""
    from grpolab.monitor.metrics import MetricsView

    tracker = Progress(run.run_id, bar=bar, every_s=every_s, out=out)
    view = MetricsView.for_run(run)
    status: dict = {}
    while busy():
        view.refresh()
        status = run.status()
        tracker.update(view, status)
        waited = 0.0
        while waited < poll_s and busy():
            time.sleep(min(0.2, poll_s))
            waited += 0.2
    view.refresh()
    status = run.status()
    tracker.close(status, view)
    return status


def wait(run, progress=print, poll_s: float = 2.0, timeout: float | None = None, every_s: float = 10.0) -> dict:
    """Follow a run until it ends (or `timeout`), printing progress lines (step / total, elapsed, remaining,
    reward, validation accuracy) at most one per `every_s` seconds (grpolab.monitor.progress)."""
    from grpolab.jobs.runs import TERMINAL_STATES
    from grpolab.jobs.state import refresh as refresh_status
    from grpolab.monitor.metrics import load

    view = None
    start = time.time()
    status = refresh_status(run)
    tracker = Progress(run.run_id, status.get("total_steps"), every_s=every_s, out=progress)
    while True:
        if run.metrics_file.exists():
            view = view or load(run.metrics_file)
            view.refresh()
            tracker.update(view, status)
        if status.get("state") in TERMINAL_STATES:
            return status
        if timeout is not None and time.time() - start > timeout:
            return status
        time.sleep(poll_s)
        status = refresh_status(run)
