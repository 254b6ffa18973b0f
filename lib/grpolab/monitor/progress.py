"""How far a run is, while it is followed: step / total, the run's time and the time left, latest reward and
validation accuracy; and following a run to its end (`grpolab run --wait`).

    progress = Progress(run_id, total=1200, bar=False, every_s=30)   # bar: an ipywidgets bar (JupyterLab)
    progress.update(view, status)    # after each poll; prints a line at most every `every_s` seconds
    progress.close(status)           # the final line (always printed), the bar replaced by that line
    outcome = follow_run(run)        # wait, then the curves and the outcome: one metrics view, one classification

Headless (papermill, the terminal, `bar=False`) it prints plain text lines, rate-limited by time, not by steps:
the first step seen, then at most one line per `every_s` seconds, then the final state. With `bar=True` (a
JupyterLab kernel; the caller decides, this module never guesses) it shows a progress bar that updates in place,
and leaves one plain line in the saved notebook when it closes (a widget cannot be shown without a kernel).
`line(...)` formats one line; the clock is injectable so tests check the rate limit without sleeping.

"elapsed" is the run's own time, from its record (`started`, `ended` in the status given: see
grpolab.jobs.state.run_times), never the time since a view opened; a status without a start shows no elapsed time.
The time left is known from the first refresh: (total - step) x the mean of the last logged step times
(`timing_s/step`), smoothed over REMAINING_WINDOW_S seconds of following, else the rate seen while following, else
the run's time per step so far.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from grpolab.jobs import state
from grpolab.jobs.runs import TERMINAL_STATES
from grpolab.jobs.state import refresh as refresh_status
from grpolab.monitor.clock import clock_text
from grpolab.monitor.figures import STEP_TIME, candidates, latest_headline
from grpolab.monitor.metrics import MetricsView
from grpolab.monitor.outcome import describe_outcome
from grpolab.monitor.summary import RunMonitor

STEP_TIME_WINDOW = 20  # the remaining time uses the mean of the last 20 logged step times
# ... smoothed over about this many seconds of following (an exponential average in wall time): a run whose steps
# turn slow moves the estimate over a minute or so instead of jumping from one refresh to the next
REMAINING_WINDOW_S = 60.0


def step_time(view) -> float | None:
    """The mean of the last STEP_TIME_WINDOW finite, positive step times the run logged (seconds), or None."""
    if view is None:
        return None
    for name in candidates(STEP_TIME):
        if name not in view:
            continue
        recent = [v for v in view.column(name)[-4 * STEP_TIME_WINDOW :] if v is not None and math.isfinite(v) and v > 0]
        if recent:
            recent = recent[-STEP_TIME_WINDOW:]
            return sum(recent) / len(recent)
    return None


def run_status(run, status: dict) -> dict:
    """The status (a checked record) with `started` / `ended` the run's own times (grpolab.jobs.state.run_times:
    the job's start from job.json when it wrote one)."""
    started, ended = state.run_times(status, state.job_record(run))
    return {**status, "started": started, "ended": ended}


class Progress:
    """The progress of one followed run (see the module docstring)."""

    def __init__(
        self,
        run_id: str,
        total: int | None = None,
        bar: bool = False,
        every_s: float = 30.0,
        out: Callable[[str], None] = print,
        clock: Callable[[], float] = time.time,
    ):
        self.run_id = run_id
        self.total = total
        self.every_s = every_s
        self.out = out
        self.clock = clock  # wall-clock seconds: the run's start and end are wall-clock times from its record
        self.started: float | None = None  # the run's start and end, from the status given to update()
        self.ended: float | None = None
        self.first_step: int | None = None  # the first step seen while following, and when
        self.first_seen_at: float | None = None
        self.step: int | None = None
        self.step_time: float | None = None  # the mean of the last logged step times (s), when the run logs them
        self.pace: float | None = None  # step_time smoothed over REMAINING_WINDOW_S (s per step): the time left uses it
        self._pace_at: float | None = None
        self.figures: dict[str, float] = {}
        self.state = ""
        self._last_print: float | None = None
        self._printed_step: int | None = None
        self._bar = self._make_bar() if bar else None

    # -- what is shown ------------------------------------------------------------------------------------

    def elapsed_s(self) -> float | None:
        """The run's time so far (None when the status named no start)."""
        return state.elapsed_s({"started": self.started, "ended": self.ended}, self.clock())

    def remaining_s(self) -> float | None:
        """Seconds left: (total - step) x the logged step time; else at the rate seen while following; else at
        the run's own time per step so far. None without a total or a step, and once the run ended."""
        if self.total is None or self.step is None or self.ended is not None:
            return None
        left = max(0, self.total - self.step)
        if self.pace is not None:
            return left * self.pace
        if self.first_step is not None and self.first_seen_at is not None:
            done, spent = self.step - self.first_step, self.clock() - self.first_seen_at
            if done > 0 and spent > 0:
                return left * spent / done
        elapsed = self.elapsed_s()
        if elapsed and self.step > 0:
            return left * elapsed / self.step
        return None

    def line(self) -> str:
        """`step 120/1200 (10 %)  elapsed 1:02  remaining ~9:18  reward=0.412  val_acc=0.300`."""
        if self.step is None:
            head = "step -" + (f"/{self.total}" if self.total else "")
        else:
            head = f"step {self.step}" + (f"/{self.total} ({100 * self.step / self.total:.0f} %)" if self.total else "")
        parts = [head]
        elapsed = self.elapsed_s()
        if elapsed is not None:
            parts.append(f"elapsed {clock_text(elapsed)}")
        remaining = self.remaining_s()
        if remaining is not None and not self.state:
            parts.append(f"remaining ~{clock_text(remaining)}")
        parts += [f"{label}={value:.3f}" for label, value in self.figures.items()]
        if self.state:
            parts.append(self.state)
        return "  ".join(parts)

    # -- updates --------------------------------------------------------------------------------------------

    def update(self, view=None, status: dict | None = None) -> None:
        """Take in the latest step and figures, and the run's total, start and end from `status` (a status.json
        or a summary dict); print a line if `every_s` passed since the last one (the first step seen is printed
        at once), or update the bar."""
        self._take(status)
        step = view.last_step if view is not None else None
        if step is not None and step != self.step:
            if self.first_step is None:
                self.first_step, self.first_seen_at = step, self.clock()
            self.step = step
            self.figures = latest_headline(view)
            self.step_time = step_time(view)
            self._smooth_pace()
        if self._bar is not None:
            self._show_bar()
            return
        now = self.clock()
        due = self._last_print is None or now - self._last_print >= self.every_s
        if self.step is not None and self.step != self._printed_step and due:
            self._emit(now)

    def _smooth_pace(self) -> None:
        """Move the pace towards the latest step time, by the share of REMAINING_WINDOW_S that passed."""
        now = self.clock()
        if self.step_time is None:
            self.pace = self._pace_at = None
            return
        if self.pace is None or self._pace_at is None:
            self.pace = self.step_time
        else:
            share = 1.0 - math.exp(-max(0.0, now - self._pace_at) / REMAINING_WINDOW_S)
            self.pace += share * (self.step_time - self.pace)
        self._pace_at = now

    def close(self, status: dict | None = None, view=None) -> None:
        """The final line: the state the run ended in (or why following stopped)."""
        if view is not None:
            self.update(view, status)
        self._take(status)
        self.state = str((status or {}).get("state") or "")
        text = f"run {self.run_id}: " + self.line()
        if self._bar is not None:
            self._close_bar(text)
        else:
            self.out(text)

    def _take(self, status: dict | None) -> None:
        status = status or {}  # a checked record (grpolab.jobs.runs.StatusRecord) or a summary made of one
        if status.get("total_steps"):
            self.total = status["total_steps"]
        self.started = status.get("started") or self.started
        self.ended = status.get("ended") or self.ended

    def _emit(self, now: float) -> None:
        self._last_print, self._printed_step = now, self.step
        self.out(self.line())

    # -- the JupyterLab bar ---------------------------------------------------------------------------------

    def _make_bar(self):
        try:
            # lazy: IPython, ipywidgets (only in a notebook kernel: headless code never loads the widgets)
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
    """Show the progress of `run` from its files alone (status.json, job.json, metrics.jsonl; nothing asks Ray)
    while `busy()` is true, e.g. while another kernel executes 04_monitor for run.ipynb; then the final line.
    Returns the last status read. A bad record reads as no status here (Run.status): this is a side view, and the
    notebook it runs beside stops on that record with its problem (grpolab.notebook.stages.find_run)."""
    tracker = Progress(run.run_id, bar=bar, every_s=every_s, out=out)
    view = MetricsView.for_run(run)
    status: dict = {}
    while busy():
        view.refresh()
        status = run_status(run, run.status())
        tracker.update(view, status)
        waited = 0.0
        while waited < poll_s and busy():
            time.sleep(min(0.2, poll_s))
            waited += 0.2
    view.refresh()
    status = run_status(run, run.status())
    tracker.close(status, view)
    return status


def wait(
    run,
    progress=print,
    poll_s: float = 2.0,
    timeout: float | None = None,
    every_s: float = 10.0,
    view: MetricsView | None = None,
) -> dict:
    """Follow a run until it ends (or `timeout`), printing progress lines (step / total, elapsed, remaining,
    reward, validation accuracy) at most one per `every_s` seconds. `view`: the MetricsView to follow with (a
    caller that goes on reading the run passes its own, so nothing is read twice); each poll reads only the
    bytes appended since the last one. Returns the status (see run_status)."""

    view = view if view is not None else MetricsView.for_run(run)
    start = time.time()
    status = run_status(run, refresh_status(run))
    tracker = Progress(run.run_id, status.get("total_steps"), every_s=every_s, out=progress)
    while True:
        view.refresh()
        tracker.update(view, status)
        if status.get("state") in TERMINAL_STATES:
            return status
        if timeout is not None and time.time() - start > timeout:
            return status
        time.sleep(poll_s)
        status = run_status(run, refresh_status(run))


@dataclass
class Outcome:
    """How a followed run ended: its status, the one metrics view read while following, the summary (with the
    failure, classified once), the text to print."""

    status: dict
    view: MetricsView
    summary: dict
    text: str


def follow_run(
    run, progress=print, poll_s: float = 2.0, timeout: float | None = None, every_s: float = 10.0
) -> Outcome:
    """`grpolab run --wait`: follow the run to its end with one metrics view, then draw the curves into the run
    directory (alerts marked) when it logged any, classify a failure once and describe the outcome."""

    monitor = RunMonitor(run)
    status = wait(run, progress, poll_s=poll_s, timeout=timeout, every_s=every_s, view=monitor.view)
    png = run.path / "curves.png" if monitor.view.steps else None
    data = monitor.update(refresh=False, png=png)
    return Outcome(status, monitor.view, data, describe_outcome(run, status, monitor=monitor))
