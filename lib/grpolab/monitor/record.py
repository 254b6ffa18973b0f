"""The run's record as the monitor reads it: status.json's fields typed, and the run's own time.

    typed_status(status) -> (fields, notes)   # every field the monitor reads, of the type it expects; a field of
                                              # another type (`message: 5`, `total_steps: "x"`) is dropped, noted
    run_times(run, status) -> (start, end)    # wall-clock seconds from the run's record; None when unknown
    elapsed_s(start, end, now) -> float|None  # the run's time: end - start, or now - start while it runs
    clock_text(seconds) -> "2:42"             # how every view writes a duration

A run's time is its own, whoever looks: the job's start as the job recorded it (job.json `started`, written by
grpolab.jobs.job_entry when the trainer starts), else the submission (status.json `started`); its end from
status.json `ended` (Ray's end time, or the job's own end record), else job.json `ended` (a finished run with
neither: its record's last update). Never the moment a view or a dashboard was opened.
"""

from __future__ import annotations

import json
import math

from grpolab.jobs.runs import TERMINAL_STATES
from grpolab.recipe.files import read_bytes

RECORD_BYTES = 1 << 20  # job.json is a few hundred bytes

_TEXT = ("state", "message", "note", "lost", "job_id", "run_id", "recipe", "ray_address")
_TIMES = ("created", "updated", "started", "ended")


def _time(value) -> float | None:
    """A finite, positive number of seconds since the epoch, or None."""
    if type(value) in (int, float) and math.isfinite(value) and value > 0:
        return float(value)
    return None


def typed_status(status) -> tuple[dict, list[str]]:
    """(status with every field the monitor reads of the expected type, notes naming the fields dropped).

    Text fields are strings, times finite positive numbers, `total_steps` a positive integer, `log_tail` a list
    of strings, `wandb` a mapping; anything else is dropped from the copy (and named in the notes), so that one
    bad record never breaks a view of the run."""
    if not isinstance(status, dict):
        return {}, [f"status.json is {type(status).__name__}, not a mapping: ignored"] if status else []
    out, dropped = dict(status), []
    for key in _TEXT:
        if key in out and out[key] is not None and not isinstance(out[key], str):
            dropped.append(key)
            del out[key]
    for key in _TIMES:
        if key in out and out[key] is not None and _time(out[key]) is None:
            dropped.append(key)
            del out[key]
    steps = out.get("total_steps")
    if steps is not None and not (type(steps) is int and steps > 0):
        dropped.append("total_steps")
        del out["total_steps"]
    tail = out.get("log_tail")
    if tail is not None and not (isinstance(tail, list) and all(isinstance(line, str) for line in tail)):
        dropped.append("log_tail")
        del out["log_tail"]
    if out.get("wandb") is not None and not isinstance(out["wandb"], dict):
        dropped.append("wandb")
        del out["wandb"]
    notes = []
    if dropped:
        shown = ", ".join(f"{key}={_short(status[key])}" for key in dropped)
        notes.append(f"status.json has fields of the wrong type, left out: {shown}")
    return out, notes


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def job_record(run) -> dict:
    """job.json, what the job wrote about itself ({} when there is none, or it is unreadable)."""
    path = getattr(run, "path", None)
    if path is None:
        return {}
    try:
        data = json.loads(read_bytes(path / "job.json", RECORD_BYTES))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def run_times(run, status: dict) -> tuple[float | None, float | None]:
    """(start, end) of the run in seconds since the epoch, from its record (see the module docstring)."""
    record = job_record(run)
    start = _time(record.get("started")) or _time(status.get("started"))
    end = _time(status.get("ended")) or _time(record.get("ended"))
    if end is None and status.get("state") in TERMINAL_STATES:
        end = _time(status.get("updated"))  # a record from before runs kept their end: its last update
    if start is not None and end is not None and end < start:
        end = start  # clocks of two machines: never a negative run time
    return start, end


def elapsed_s(start: float | None, end: float | None, now: float) -> float | None:
    """The run's time so far: end - start once it ended, else now - start; None without a start."""
    if start is None:
        return None
    return max(0.0, (end if end is not None else now) - start)


def clock_text(seconds: float | None) -> str:
    """`1:02`, `1:02:03`; `?` when unknown."""
    if seconds is None or seconds != seconds or seconds < 0 or seconds == float("inf"):
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
