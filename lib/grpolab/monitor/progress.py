"""How far a run is, while it is followed: step / total, the run's time and the time left, latest reward and
validation accuracy; and the one loop that follows a run, for the CLI, the notebooks and run.ipynb.

    status = follow(run, report)     # poll until the run ends: report(view, status) after each poll
    progress = Progress(run_id, total=1200, every_s=30)
    progress.update(view, status)    # after each poll; prints a line at most every `every_s` seconds
    progress.close(status)           # the final line (always printed)
    outcome = follow_run(run)        # `grpolab run --wait`: follow, then the curves and the outcome

`follow` reads the run's status (from Ray, or from its files alone) and the lines metrics.jsonl gained, and gives
both to a callback: the CLI's prints progress lines, 03_launch's rewrites one display line in place, run.ipynb's
prints lines while another kernel runs the stage. Progress lines are plain text, rate-limited by time, not by steps:
the first step seen, then at most one line per `every_s` seconds, then the final state. `line(...)` formats one
line; the clock is injectable so tests check the rate limit without sleeping.

"elapsed" is the run's own time, from its record (`started`, `ended` in the status given: see
grpolab.jobs.state.run_times), never the time since a view opened; a status without a start shows no elapsed time.
The time left is known from the first refresh: (total - step) x the mean of the last logged step times
(`timing_s/step`), smoothed over REMAINING_WINDOW_S seconds of following, else the rate seen while following, else
the run's time per step so far.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from grpolab.jobs import state
from grpolab.jobs.runs import TERMINAL_STATES
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
        at once)."""
        self._take(status)
        step = view.last_step if view is not None else None
        if step is not None and step != self.step:
            if self.first_step is None:
                self.first_step, self.first_seen_at = step, self.clock()
            self.step = step
            self.figures = latest_headline(view)
            self.step_time = step_time(view)
            self._smooth_pace()
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
        self.out(f"run {self.run_id}: " + self.line())

    def _take(self, status: dict | None) -> None:
        status = status or {}  # a checked record (grpolab.jobs.runs.StatusRecord) or a summary made of one
        if status.get("total_steps"):
            self.total = status["total_steps"]
        self.started = status.get("started") or self.started
        self.ended = status.get("ended") or self.ended

    def _emit(self, now: float) -> None:
        self._last_print, self._printed_step = now, self.step
        self.out(self.line())


POLL_S = 2.0  # how often a followed run's status and metrics are read


def follow(
    run,
    report: Callable[[MetricsView | None, dict], bool | None],
    ask_ray: bool = True,
    poll_s: float = POLL_S,
    timeout: float | None = None,
    busy: Callable[[], bool] | None = None,
    view: MetricsView | None = None,
    read: Callable[[], dict] | None = None,
) -> dict:
    """Follow `run`: at each poll read its status (`ask_ray`: reconciled with Ray, grpolab.jobs.state.refresh; else
    from its files alone, where a bad record reads as no status) and the lines its metrics.jsonl gained, and call
    `report(view, status)`. Returns the last status (see run_status) once the run ended, `report` returned True,
    `timeout` seconds passed or `busy()` turned false (e.g. while another kernel executes 04_monitor for
    run.ipynb; the status read after it turned false is reported too). `view`: the MetricsView to follow with (a
    caller that goes on reading the run passes its own, so nothing is read twice); each poll reads only the bytes
    appended since the last one. `read`: what one poll reads instead, returning the status (the dashboard's
    refresh, which reads the run under its own lock, since its buttons refresh it from the kernel's thread)."""
    if read is None:
        view = view if view is not None else MetricsView.for_run(run)

        def read() -> dict:
            status = run_status(run, state.refresh(run) if ask_ray else run.status())
            view.refresh()
            return status

    start = time.monotonic()
    while True:
        done = busy is not None and not busy()  # read once more after it turned false: what it left
        status = read()
        if report(view, status) or done or status.get("state") in TERMINAL_STATES:
            return status
        if timeout is not None and time.monotonic() - start > timeout:
            return status
        deadline = time.monotonic() + poll_s
        while time.monotonic() < deadline and (busy is None or busy()):
            time.sleep(min(0.2, poll_s))


@dataclass
class Outcome:
    """How a followed run ended: its status, the one metrics view read while following, the summary (with the
    failure, classified once), the text to print."""

    status: dict
    view: MetricsView
    summary: dict
    text: str


def follow_run(
    run, progress=print, poll_s: float = POLL_S, timeout: float | None = None, every_s: float = 10.0
) -> Outcome:
    """`grpolab run --wait`: follow the run to its end (or `timeout`) with one metrics view, printing progress
    lines (step / total, elapsed, remaining, reward, validation accuracy) at most one per `every_s` seconds; then
    draw the curves into the run directory (alerts marked) when it logged any, classify a failure once and
    describe the outcome."""

    monitor = RunMonitor(run)
    tracker = Progress(run.run_id, every_s=every_s, out=progress)
    status = follow(run, tracker.update, poll_s=poll_s, timeout=timeout, view=monitor.view)
    png = run.path / "curves.png" if monitor.view.steps else None
    data = monitor.update(refresh=False, png=png)
    return Outcome(status, monitor.view, data, describe_outcome(run, status, monitor=monitor))
