"""A run's metrics as columns aligned on steps, read incrementally from verl's files.

Two sources, one view:
- `metrics.jsonl`, verl's file logger: one JSON object per line, `{"step": N, "data": {name: value}}` (newer
  verl adds top-level keys such as `elapsed_seconds`; they are ignored). The local trainer writes the same.
- verl's console lines in logs/job.log when a run has no metrics file: `step:N - name:value - ...`, where a
  value may print as `np.float64(0.15)`, `np.int64(3)`, `nan` or `inf`, behind a Ray prefix
  `(TaskRunner pid=123)`.

Reading is incremental: the view keeps a byte offset and each `refresh()` reads only the bytes appended since,
so a refresh costs the same on step 10 and on step 20,000. A final line that is not complete yet (no newline
and not a whole JSON object) stays in the file for the next refresh; it is never an error. A file that was
truncated or replaced (verl truncates it when a run restarts) is read again from the start.

    view = load_metrics("tiny-20260101-120000-abc123")   # a run id, a run directory, a metrics.jsonl or a job log
    view.steps                                    # [1, 2, ...] in the order logged
    view.column("critic/score/mean")              # [0.1, None, nan, ...]: None = not logged at that step
    view.latest("actor/entropy")                  # (step, value) of the last logged value, or None
    view.refresh()                                # number of new or updated steps

Bounded: the file must be a regular file (a FIFO or a device named as metrics.jsonl is refused, never opened
for a blocking read); a file larger than MAX_BYTES is read from its last MAX_BYTES (the latest steps), and a
line still without its newline after MAX_LINE_BYTES is skipped (no reader holds more of one line). A number beyond a float's range (`1e400`, a 400-digit
integer) is read as +-inf and counted in `huge_values` (the summary says so); nothing in a file makes the
reader raise.

Why one file of this size: incremental reading of verl's file-logger and console formats shares one parser state
(offsets, types, notes); split, the fast path would cross modules.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable
from itertools import compress
from pathlib import Path

from grpolab.jobs.job_entry import ANSI
from grpolab.jobs.runs import Run, RunNotFound, locate, run_metrics
from grpolab.recipe.files import NotARegularFile, open_regular, size_text
from grpolab.recipe.files import kind as file_kind

try:  # orjson parses 5x faster than json when present (it comes with verl's tensordict); never required
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - depends on the environment
    _fast_loads = json.loads

_CHUNK_BYTES = 4 << 20  # read in 4 MiB blocks: bounded memory, and cache-friendly splitting
_HEAD_BYTES = 256  # compared on every refresh to notice a file that was truncated and rewritten
_MAX_PROBLEMS = 20  # keep the first few unreadable lines for the report, not all of a corrupt file
MAX_BYTES = 2 << 30  # a longer file is read from its last 2 GiB: about 300,000 steps of 150 metrics
MAX_LINE_BYTES = 16 << 20  # one step of verl's file logger is a few KB; a longer "line" is not a record
_FLOAT_DIGITS = 309  # an integer with more digits than this is beyond a float's range (about 1.8e308)


class _Tail:
    """Byte-offset bookkeeping for one append-only file: hands out the complete lines appended since last time.

    `note(message)` hears of what was not read: the head of a file over MAX_BYTES, a line over MAX_LINE_BYTES.
    NotARegularFile goes to the caller (a FIFO or a device in the file's place)."""

    def __init__(self, path: Path, note=lambda _message: None):
        self.path = path
        self.note = note
        self.offset = 0
        self.head = b""
        self.inode: int | None = None
        self.skipping = False  # inside a line longer than MAX_LINE_BYTES: drop bytes up to its newline

    def read(self, sink, on_restart) -> bytes:
        """Feed the complete lines appended since the last call to `sink(lines)`, in blocks of about
        _CHUNK_BYTES (a big file is never held in memory twice); return the unterminated tail, which is not
        consumed (call `consume` to take it). `on_restart()` is called first when the file was truncated,
        replaced or deleted since the last call."""
        try:
            handle = open_regular(self.path)
        except FileNotFoundError:
            if self.offset:
                self.offset, self.head, self.inode, self.skipping = 0, b"", None, False
                on_restart()
            return b""
        with handle:
            stat = os.fstat(handle.fileno())
            if self.offset and (stat.st_ino != self.inode or stat.st_size < self.offset or not self._same_head(handle)):
                self.offset, self.head, self.skipping = 0, b"", False
                on_restart()
            self.inode = stat.st_ino
            if len(self.head) < _HEAD_BYTES and stat.st_size > len(self.head):
                handle.seek(0)
                self.head = handle.read(_HEAD_BYTES)
            end = stat.st_size  # bytes written after the stat are left for the next call
            if self.offset == 0 and end > MAX_BYTES:  # the latest steps are what a monitor is for
                self.offset, self.skipping = end - MAX_BYTES, True
                self.note(
                    f"{self.path} holds {size_text(end)}: only its last {size_text(MAX_BYTES)} were read "
                    "(the earlier steps are not shown)"
                )
            handle.seek(self.offset)
            position, carry = self.offset, b""
            while position < end:
                block = handle.read(min(_CHUNK_BYTES, end - position))
                if not block:
                    break
                position += len(block)
                if self.skipping:
                    cut = block.find(b"\n")
                    if cut < 0:
                        self.offset = position
                        continue
                    block, self.skipping = block[cut + 1 :], False
                lines = (carry + block if carry else block).split(b"\n")
                carry = lines.pop()  # after the last newline: a partial line, or b"" when the block ends in one
                if len(carry) > MAX_LINE_BYTES:
                    self.note(f"{self.path}: a line longer than {size_text(MAX_LINE_BYTES)} was skipped")
                    carry, self.skipping = b"", True
                self.offset = position - len(carry)
                if lines:
                    sink(lines)
            return carry

    def consume(self, nbytes: int) -> None:
        self.offset += nbytes

    def _same_head(self, handle) -> bool:
        handle.seek(0)
        return handle.read(len(self.head)) == self.head


# --- console lines -----------------------------------------------------------------------------------------

_STEP_LINE = re.compile(r"(?:^|[\s)\]])step:(\d+) - (.*)$")
_RAY_REPEAT = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
_NUMPY_WRAP = re.compile(r"^(?:np|numpy)\.[a-z_]+\d*\((.*)\)$")


def parse_console_value(text: str) -> float | None:
    """`0.15`, `np.float64(0.15)`, `np.int64(3)`, `nan`, `inf`, `True` -> float; anything else -> None."""
    text = text.strip()
    if wrapped := _NUMPY_WRAP.match(text):
        text = wrapped.group(1).strip()
    if text in ("True", "False"):
        return float(text == "True")
    try:
        return float(text)
    except ValueError:
        return None


def parse_console_line(line: str) -> tuple[int, dict[str, float]] | None:
    """One verl console line -> (step, metrics); None for a line that is not a step line."""
    match = _STEP_LINE.search(_RAY_REPEAT.sub("", ANSI.sub("", line.rstrip("\r"))))
    if not match:
        return None
    data: dict[str, float] = {}
    for part in match.group(2).split(" - "):
        name, sep, raw = part.rpartition(":")
        if not sep or not name:
            continue
        value = parse_console_value(raw)
        if value is not None:
            data[name.strip()] = value
    return int(match.group(1)), data


# --- the view ----------------------------------------------------------------------------------------------


NAN = float("nan")
_FLOAT_OR_NONE = {float, type(None)}


def _clean(value) -> float | None:
    """A logged JSON value as a float; None when it is not a number (null, a string, a list). An integer
    beyond a float's range is +-inf (the parser counts those; this only keeps a stray one from raising)."""
    kind = type(value)
    if kind is float:
        return value
    if kind is int or kind is bool:
        try:
            return float(value)
        except OverflowError:
            return math.copysign(math.inf, value)
    return None


class MetricsView:
    """Columns of one run's metrics, aligned on `steps`; `refresh()` appends what the file gained since.

    `column(name)` has one entry per step: a float (possibly NaN or inf, as logged) or None where the metric
    was not logged at that step. A step logged twice (a second line with the same step) is merged, the later
    value winning.
    """

    def __init__(self, path: str | os.PathLike, kind: str = "jsonl", run: Run | None = None):
        if kind not in ("jsonl", "console"):
            raise ValueError(f"kind must be 'jsonl' or 'console', not {kind!r}")
        self.path = Path(path)
        self.kind = kind
        self.run = run
        self._tail = _Tail(self.path, self._note_unread)
        self._max_seen: tuple | None = None  # (steps list, how many of it were looked at, their highest step)
        self.unreadable: str | None = None  # why the file cannot be read at all (a FIFO in its place), or None
        self._reset()

    # -- reading --------------------------------------------------------------------------------------------

    @classmethod
    def for_run(cls, run: Run) -> MetricsView:
        """metrics.jsonl when the run has one, else the console lines of logs/job.log (re-decided until data)."""
        return cls(*run_metrics(run), run=run)

    def refresh(self) -> int:
        """Read what was appended since the last refresh; returns the number of steps added or updated."""
        if self.run is not None and not self.steps:
            # Until the first step arrives, follow the run: the metrics file may appear after the job log.
            path, kind = run_metrics(self.run)
            if (path, kind) != (self.path, self.kind):
                self.path, self.kind, self._tail = path, kind, _Tail(path, self._note_unread)
        changed = 0

        def ingest(lines: list[bytes]) -> None:
            nonlocal changed
            changed += self._ingest_json(lines) if self.kind == "jsonl" else self._ingest_console(lines)

        def restart() -> None:
            nonlocal changed
            self._reset()
            changed += 1  # a reset is a change even if the new file is still empty

        try:
            tail = self._tail.read(ingest, restart)
            self.unreadable = None
        except NotARegularFile as exc:  # never opened for a blocking read: say so, keep what was read before
            self.unreadable = f"{self.path} is {exc.strerror}: not read"
            return changed
        if self.kind == "jsonl" and tail.strip():
            # A complete JSON object is never a prefix of a longer one, so a tail that parses is a whole
            # record whose newline has not been written yet; anything else is a half-written line.
            record = self._parse_json(tail, final=True)
            if record is not None:
                self._tail.consume(len(tail))
                changed += self._ingest_pairs([(record["step"], record["data"])])
        if changed:
            self._pad()
            self._extend_cache()
        return changed

    def _extend_cache(self) -> None:
        """Bring the cleaned columns up to date with the rows just read: clean only the new rows (a dashboard
        refresh of a 20,000-step run must not clean 20,000 values per metric again); a column whose old rows
        were rewritten (a step logged twice) is cleaned again when next asked for."""
        rewritten, self._rewritten = self._rewritten, set()
        for name in list(self._clean_cache):
            cached, raw = self._clean_cache[name], self._raw.get(name)
            if name in rewritten or raw is None:
                del self._clean_cache[name]
                continue
            new = raw[len(cached) :]
            clean = [_clean(v) for v in new]
            self._clean_cache[name] = cached + clean  # a new list: a caller may still hold the old one
            self._dropped[name] = self._dropped.get(name, 0) + clean.count(None) - new.count(None)

    def _reset(self) -> None:
        """Everything read from the file, empty (at the start, and when the file was truncated or replaced)."""
        self.steps: list[int] = []
        self._raw: dict[str, list] = {}  # name -> raw values; shorter than steps until padded
        self._row_of: dict[int, int] = {}
        self.bad_lines, self.problems, self._lines_read = 0, [], 0
        self.huge_values = 0  # numbers beyond a float's range (1e400, a 400-digit integer), read as +-inf
        self.skipped: list[str] = []  # what the reader left out on purpose (the head of a huge file, a huge line)
        self._clean_cache: dict[str, list[float | None]] = {}
        self.duplicate_steps = 0  # steps that logged a metric they had already logged (merged, later wins)
        self._dropped: dict[str, int] = {}  # name -> values that are not numbers (strings, lists) in its column
        self._rewritten: set[str] = set()  # names whose earlier rows a refresh changed (cleaned again)

    def _note(self, message: str) -> None:
        self.bad_lines += 1
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(message)

    def _note_unread(self, message: str) -> None:
        """Bytes the reader skipped on purpose (a file over MAX_BYTES, a line over MAX_LINE_BYTES)."""
        if len(self.skipped) < _MAX_PROBLEMS:
            self.skipped.append(message)

    def _huge_int(self, text: str) -> float | int:
        """json's parse_int: an integer beyond a float's range is +-inf, counted (Python would keep it exact,
        and refuse it above 4,300 digits)."""
        if len(text) <= _FLOAT_DIGITS:
            return int(text)
        self.huge_values += 1
        return -math.inf if text.startswith("-") else math.inf

    def _huge_float(self, text: str) -> float:
        """json's parse_float: `1e400` overflows to +-inf, counted (`Infinity` itself is parse_constant's)."""
        value = float(text)
        if math.isinf(value):
            self.huge_values += 1
        return value

    def _parse_json(self, raw: bytes, final: bool = False) -> dict | None:
        """One line as a record, or None (noted as a problem, except for the unterminated tail: that one is
        looked at again on every refresh until its newline arrives, and noted then if still wrong)."""
        huge = self.huge_values  # counted again only for a record that is kept
        try:
            record = json.loads(raw, parse_int=self._huge_int, parse_float=self._huge_float)
            if isinstance(record, dict) and type(record.get("step")) is int and isinstance(record.get("data"), dict):
                return record
            why = 'not a {"step": N, "data": {...}} record'
        except (ValueError, RecursionError):  # RecursionError: `[[[[...` nested deeper than Python recurses
            why = f"not JSON: {raw[:80]!r}"
        self.huge_values = huge
        if not final:
            self._note(f"{self.path}: line {self._lines_read}: {why}")
        return None

    def _ingest_json(self, lines: list[bytes]) -> int:
        fast, records = _fast_loads, []
        for raw in lines:
            self._lines_read += 1
            try:
                record = fast(raw)
            except ValueError:
                # orjson refuses NaN/Infinity, which verl writes (Python's json.dumps): those lines, and any
                # line orjson rejects, go through the standard parser, which also explains real problems.
                if not raw.strip():
                    continue
                record = self._parse_json(raw)
                if record is None:
                    continue
            try:
                step, data = record["step"], record["data"]
                if type(step) is not int or type(data) is not dict:
                    raise TypeError
            except (TypeError, KeyError):
                self._parse_json(raw)  # notes why the record has the wrong shape
                continue
            records.append((step, data))
        return self._ingest_pairs(records)

    def _ingest_console(self, lines: list[bytes]) -> int:
        pairs = []
        for raw in lines:
            self._lines_read += 1
            if b"step:" not in raw:  # cheap filter: most log lines are not step lines
                continue
            parsed = parse_console_line(raw.decode("utf-8", "replace"))
            if parsed is not None:
                pairs.append(parsed)
        return self._ingest_pairs(pairs)

    def _ingest_pairs(self, pairs: Iterable[tuple[int, dict]]) -> int:
        # The hot path of a 20,000 x 150 load. verl logs the same names in the same order on almost every
        # step, so when a new step has exactly the previous new step's names, their columns are all exactly
        # one row short and the values are appended straight through bound `append`s. Otherwise (first step,
        # a new metric, a validation step) each column is padded with None up to the row first. Columns a
        # step did not mention catch up with None when next written, and all of them once at the end.
        raw, row_of, steps = self._raw, self._row_of, self.steps
        changed = 0
        last_names: tuple | None = None
        appenders: list = []
        for step, data in pairs:
            changed += 1
            row = row_of.get(step)
            if row is None:
                row = row_of[step] = len(steps)
                steps.append(step)
                names = tuple(data)
                # verl's file logger (orjson) writes a NaN or inf metric as null: a logged null is NaN,
                # while a metric a step did not log at all stays None
                if names == last_names:
                    for append, value in zip(appenders, data.values()):
                        append(NAN if value is None else value)
                    continue
                for name, value in data.items():
                    column = raw.setdefault(name, [])
                    column.extend([None] * (row - len(column)))  # never longer than the rows before this one
                    column.append(NAN if value is None else value)
                last_names, appenders = names, [raw[name].append for name in names]
            else:
                # A step logged again (verl logs validation separately at some steps): merge, later wins.
                # Columns named in `last_names` are already a full row long, so this never breaks the
                # fast path's invariant.
                if any(len(raw.get(name) or ()) > row and raw[name][row] is not None for name in data):
                    self.duplicate_steps += 1  # the same metric at the same step again (a resumed run)
                self._rewritten.update(data)  # their cleaned columns are stale above the new rows
                for name, value in data.items():
                    column = raw.setdefault(name, [])
                    column.extend([None] * (row + 1 - len(column)))
                    column[row] = NAN if value is None else value
        return changed

    def _pad(self) -> None:
        rows = len(self.steps)
        for column in self._raw.values():
            if len(column) < rows:
                column.extend([None] * (rows - len(column)))

    # -- access ---------------------------------------------------------------------------------------------

    def dropped(self) -> dict[str, int]:
        """name -> how many logged values were not numbers (a string such as "n/a", a list), among the metrics
        read so far (alerts, the summary and the curves read theirs): they are left out of every series.
        Counted when a column is cleaned, with two C-level counts rather than a look at every value."""
        return {name: count for name, count in self._dropped.items() if count}

    def __len__(self) -> int:
        return len(self.steps)

    def __contains__(self, name: str) -> bool:
        if name not in self._raw:
            return False
        column = self.column(name)
        # most columns hold a value at their last step: no scan of the whole column on every refresh
        return bool(column) and (column[-1] is not None or column.count(None) != len(column))

    def __repr__(self) -> str:
        return f"MetricsView({str(self.path)!r}, kind={self.kind!r}, steps={len(self.steps)}, metrics={len(self._raw)})"

    @property
    def names(self) -> list[str]:
        """Every metric name logged so far, sorted."""
        return sorted(self._raw)

    @property
    def last_step(self) -> int | None:
        """The highest step logged (steps are in the order logged: a resumed run can go back)."""
        if not self.steps:
            return None
        seen, steps = self._max_seen, self.steps
        if seen is None or seen[0] is not steps or seen[1] > len(steps):
            seen = (steps, 0, None)
        highest = max(steps[seen[1] :], default=seen[2])  # only the steps added since the last call
        highest = highest if seen[2] is None else max(highest, seen[2])
        self._max_seen = (steps, len(steps), highest)
        return highest

    def column(self, name: str) -> list[float | None]:
        """One entry per step: float (NaN/inf as logged) or None where not logged. Unknown name: all None."""
        cached = self._clean_cache.get(name)
        if cached is None:
            raw = self._raw.get(name)
            if raw is None:
                cached = [None] * len(self.steps)
            elif set(map(type, raw)) <= _FLOAT_OR_NONE:  # the usual column: nothing to clean (a C-level check)
                cached = list(raw)
            else:
                cached = [_clean(v) for v in raw]
            self._clean_cache[name] = cached
            if raw is not None:
                self._dropped[name] = cached.count(None) - raw.count(None)
        return cached

    def series(self, name: str) -> tuple[list[int], list[float]]:
        """(steps, values) where the metric was logged, NaN and inf included."""
        column = self.column(name)
        if None not in column:  # logged at every step (most metrics): a C-level scan, no per-value Python
            return list(self.steps), list(column)
        logged = [v is not None for v in column]
        return list(compress(self.steps, logged)), list(compress(column, logged))

    def latest(self, name: str) -> tuple[int, float] | None:
        """(step, value) of the last step that logged `name`, or None."""
        column = self.column(name)
        for index in range(len(column) - 1, -1, -1):
            if column[index] is not None:
                return self.steps[index], column[index]
        return None

    def first_present(self, candidates: Iterable[str]) -> list[str]:
        """The names this run logs among `candidates`; an entry ending in '/' matches every name under it.

        For prefixes only the headline `.../mean@N` validation figures are kept (verl also logs std, best@N...).
        """
        found: list[str] = []
        for candidate in candidates:
            if candidate.endswith("/"):
                found += [n for n in self.names if n.startswith(candidate) and re.search(r"/mean@\d+$", n)]
            elif candidate in self:
                found.append(candidate)
                break
        return found

    def values_between(self, name: str, first: int, last: int) -> list[float]:
        """Logged values of `name` at steps first..last inclusive (NaN and inf kept)."""
        return [v for s, v in zip(self.steps, self.column(name)) if first <= s <= last and v is not None]

    def steps_between(self, first: int, last: int) -> list[int]:
        return [s for s in self.steps if first <= s <= last]

    def array(self, name: str):
        """The column as a numpy float array, NaN where not logged (numpy imported here, not at module load)."""
        # lazy: numpy (only a column asked as an array needs it; reading metrics does not)
        import numpy as np

        return np.array([math.nan if v is None else v for v in self.column(name)], dtype=float)

    def to_pandas(self):
        """A DataFrame indexed by step, one column per metric (for notebooks; pandas imported here)."""
        # lazy: pandas (only a notebook asking for a DataFrame needs it)
        import pandas as pd

        return pd.DataFrame({n: self.array(n) for n in self.names}, index=pd.Index(self.steps, name="step"))


def open_run(ref, root: Path | None = None) -> tuple[Run, MetricsView]:
    """(run, view, not read yet) for a run id, a run directory, a Run or a metrics file (any name; `.log`,
    `.txt`, `.out`, `.err` files are read as verl console output). A metrics file outside any run is read, and
    its Run refuses writes. RunNotFound when `ref` names nothing readable (a FIFO or a device is refused here,
    before anything opens it)."""
    if isinstance(ref, Run):
        return ref, MetricsView.for_run(ref)
    path = Path(str(ref)).expanduser()
    try:
        mode = path.stat().st_mode
    except (OSError, ValueError):
        mode = None
    if mode is not None and file_kind(mode) not in ("a regular file", "a directory"):
        raise RunNotFound(f"{ref} is {file_kind(mode)}, not a run or a metrics file; nothing was read from it")
    target = locate(ref, root)  # the one resolver (grpolab.jobs.runs): a metrics file outside a run is read only
    run = target.run
    if target.file is not None:  # read as what it holds, whatever its name says (x.log of JSON lines, ...)
        return run, MetricsView(target.file, sniff_kind(target.file) or target.kind, run=None)
    if not any(p.exists() for p in (run.status_file, run.metrics_file, run.job_log, run.logs_dir)):
        raise RunNotFound(
            f"{run.path} is not a run directory: it has no status.json, metrics.jsonl or "
            "logs/job.log; pass a run id (see `grpolab runs`), a run directory or a metrics file"
        )
    return run, MetricsView.for_run(run)


SNIFF_BYTES = 1 << 16


def sniff_kind(path: Path) -> str | None:
    """ "jsonl" when the first line of the file is a JSON object, "console" when it is one of verl's console lines
    (`step:N - ...`) or no JSON object starts a line of its first SNIFF_BYTES while one of them is a console line;
    None when the start says neither (empty, unreadable, other text)."""
    try:
        with open_regular(path) as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return None
    lines = [line.strip() for line in head.splitlines() if line.strip()]
    if lines and lines[0].startswith(b"{"):
        return "jsonl"
    text = ANSI.sub("", head.decode("utf-8", "replace"))
    return "console" if any(_STEP_LINE.search(line) for line in text.splitlines()) else None


def load_metrics(ref, root: Path | None = None) -> MetricsView:
    """A MetricsView, read to the end: `ref` is anything `open_run` takes, or a MetricsView (refreshed and
    returned). Raises grpolab.jobs.runs.RunNotFound when `ref` names nothing."""
    if isinstance(ref, MetricsView):
        ref.refresh()
        return ref
    _, view = open_run(ref, root)
    view.refresh()
    return view
