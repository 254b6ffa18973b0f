"""How every view writes a run's time: `clock_text(162.0) -> "2:42"` (the time itself comes from the run's record,
grpolab.jobs.state.run_times / elapsed_s)."""

from __future__ import annotations

import math


def clock_text(seconds: float | None) -> str:
    """`1:02`, `1:02:03`; `?` when unknown."""
    if seconds is None or not math.isfinite(seconds) or seconds < 0:
        return "?"
    hours, rest = divmod(int(round(seconds)), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
