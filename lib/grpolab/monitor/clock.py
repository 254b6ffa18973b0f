"""How every view writes a run's time: `clock_text(162.0) -> "2:42"` (the time itself comes from the run's record,
grpolab.jobs.state.run_times / elapsed_s)."""

from __future__ import annotations

import math
import time


def clock_text(seconds: float | None) -> str:
    """`1:02`, `1:02:03`; `?` when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    hours, rest = divmod(int(round(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def as_of(now: float | None = None) -> str:
    """`as of 21:05:03`: when a view read the run's state (local time), so that a saved or reopened view says how
    old it is instead of claiming to be current."""

    return "as of " + time.strftime("%H:%M:%S", time.localtime(time.time() if now is None else now))


# what a view of a run that has not ended says when nothing may be refreshing it any more (a saved notebook
# reopened, a kernel restarted): how to get a live view again
RECONNECT = "if this time is old, nothing refreshes this view: run this cell again to reconnect"
