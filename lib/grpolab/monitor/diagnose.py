"""Why a job failed, from any log: the cause (grpolab.monitor.causes), the first rank and node that failed or
stalled, what to change, and the lines that prove it, origin first.

    diagnose_text(text) -> Failure | None                 a log, its tail, a status message
    diagnose_files([(path, rank), ...]) -> Failure | None  log files (one per rank, or one for all), streamed
    Scan                                                   the streaming reader behind both, fed chunk by chunk

(Reading the bytes, compressed or not, and the Hyperscan keyword pass: grpolab.monitor.logread; the first real
error: grpolab.monitor.firsterror; its family: grpolab.monitor.families; ranks and nodes: grpolab.monitor.origin.)

A log is read in large binary chunks; one caseless Hyperscan pass (SIMD multi-literal search) over each chunk
finds the lines that hold a cause's keyword, and only those lines are decoded and matched against the patterns
of the causes whose keywords they hold. What is kept is bounded (a few dozen lines per cause, a bounded map of
Ray pids to nodes), so a multi-gigabyte log is diagnosed in seconds with a few MB of memory
(benchmarks/diagnose_speed.py).

The cause is the first of the registry's order (the order of origin) that the log shows; its evidence starts with
the line of the rank that failed first (the rank others waited for, the lowest collective sequence number, the
earliest time), then the rest, then the lines of the causes that followed (other ranks' timeouts, dead workers).
"""

from __future__ import annotations

import re
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import grpolab.monitor.firsterror as fe
import grpolab.monitor.firstsaid as fs
from grpolab.monitor.causes import BY_ID, CAUSES, UNKNOWN, UNKNOWN_CAUSE
from grpolab.monitor.cutlog import in_progress
from grpolab.monitor.details import FACTS, Extra, explain, read_facts
from grpolab.monitor.failure import Failure
from grpolab.monitor.families import Context, Verdict, classify, family_for, recaused
from grpolab.monitor.family_table import FAMILIES
from grpolab.monitor.firsterror import FirstError
from grpolab.monitor.logread import (
    FIRST,
    MARKS,
    OWNERS,
    as_posted,
    as_typed,
    decode,
    excerpt,
    find_words,
    framing,
    gated,
    marks,
    posted,
    readable,
    typographic,
    unframed,
    unwrapped,
    wrapping,
)
from grpolab.monitor.origin import (
    RAY_TASK,
    Where,
    locate,
    naming_collective,
    origin_first,
    origin_sentence,
    own_log_sentence,
    ray_pids,
    silent_ranks,
    stalled_sentence,
    where,
)
from grpolab.monitor.refine import refine
from grpolab.recipe.secrets import redact_free_text

CHUNK = 8 << 20  # bytes read at a time: large enough for C to do the work, small enough to bound memory
_KEEP = 48  # lines kept per cause
_EVIDENCE = 6  # lines shown
_CONTEXT = 4096  # bytes around a matched line searched for its traceback and Ray's pid/ip block
_PIDS = 50_000  # pids remembered (their nodes and ranks)
_MAX_TAIL = 1 << 20  # a line is read whole up to this length past a chunk's end
_LONG = 4 << 10  # a longer line is matched only around its keywords, _WINDOW bytes either side
_WINDOW = 1024
_BUDGET = 0.5  # seconds of pattern matching after which every line is first checked by Hyperscan (crafted input)

_FIRST = 64  # error lines of a log kept for its first real error (those that report another's failure: 16)
_TRACE = 64 << 10  # bytes above an exception line read for its traceback's frames
_TRACE_LINES = 300


@dataclass
class _Hit:
    cause: str
    line: str
    number: int
    file: str
    at: int
    order: int
    where: Where
    before: list[str]
    exception: tuple | None = None  # (type, inner, message) of an exception line
    frames: list = field(default_factory=list)  # its traceback's frames (grpolab.monitor.firsterror.Frame)
    consequence: bool = False  # it reports another's failure (a dead actor, a timeout)
    after: list[str] = field(default_factory=list)
    offset: int = 0  # where the line starts in everything read (bytes): what came before it
    text: str = ""  # an error line as printed (trailing spaces kept) with the lines its message continues on
    intro: str = ""  # the record that introduced an exception (`Error in X:` above its traceback), said before it


class Scan:
    """A streaming reader of one or more logs: feed it chunks (whole lines), then `result()`."""

    def __init__(self) -> None:
        self.hits: dict[str, list[_Hit]] = {}
        self.weak: dict[str, list[_Hit]] = {}  # warnings that name a cause: the answer only when nothing else is
        self.timed_out: set[int] = set()  # the ranks a collective timeout was reported on
        self.counts: dict[str, int] = {}
        self.errors: list[_Hit] = []  # the first error lines (exceptions, error-level records), in order
        self.echoes: list[_Hit] = []  # and the first of those that report another's failure
        self.last: deque[_Hit] = deque(maxlen=4)  # the last error lines (a log's end names what stopped it)
        self.exits: list[_Hit] = []  # a process that ended with a non-zero status
        self.posted: bool | None = None  # the log is a post copied from a page (decided on its first chunk)
        self.frame: re.Pattern | None = None  # what a collector put before every line (logread.framing)
        self.typed = False  # the log holds a page's typographic quotes and spaces (logread.typographic)
        self.width: int | None = None  # the width a terminal wrapped the log at (logread.wrapping)
        self.cut: _Hit | None = None  # the last traceback frame read before any error line (a log cut inside one)
        self.success = False  # a mark of a run that finished well (Ray's "succeeded", verl's final metrics)
        self.warnings = 0  # warning-level records
        self.step_at: int | None = None  # where the first training step line starts (bytes read before it)
        self.engine_at: int | None = None  # where an inference engine (vLLM, SGLang) first shows
        self.progress_at: int | None = None  # where work done first shows (a step, a progress bar, throughput)
        self.npu_at: int | None = None  # where an Ascend NPU stack first shows
        self.sync_at: int | None = None  # where the trainer-to-rollout weight channel first shows
        self.warning_at: int | None = None  # where a warning first shows
        self.base = 0  # bytes read before the chunk being scanned
        self.spent = 0.0  # seconds spent matching patterns
        self.linear = False  # every line is first checked by Hyperscan (after _BUDGET seconds of matching)
        self.pid_node: dict[int, str] = {}
        self.pid_rank: dict[int, int] = {}
        self.facts: dict[str, str] = {}
        self.order = 0
        self.files: list[str] = []
        self.bytes = 0

    # ------------------------------------------------------------------------------------------ reading
    def feed_file(self, path: Path | str, rank: int | None = None, handle=None) -> None:
        """Stream one file (or an open binary handle, e.g. stdin) whose lines all come from `rank` if given."""
        name = str(path)
        self.files.append(name)
        own = handle is None
        handle = open(path, "rb") if own else handle  # noqa: SIM115 (closed below)
        try:
            first = 1
            stream = readable(handle, name)
            while True:
                block = stream.read(CHUNK)
                if not block:
                    break
                cut = block.rfind(b"\n") + 1
                if cut == len(block):
                    first = self._feed(block, name, rank, first)
                    continue
                if cut:  # the whole lines, without a copy; then the last one, completed from the file
                    first = self._feed(memoryview(block)[:cut], name, rank, first)
                tail = block[cut:] + (stream.readline(_MAX_TAIL) or b"")
                first = self._feed(tail if tail.endswith(b"\n") else tail + b"\n", name, rank, first)
        finally:
            if own:
                handle.close()

    def feed_text(self, text: str, name: str = "<text>", rank: int | None = None, counted: bool = True) -> None:
        """Scan text in memory; `counted` False: an addition to the files read (a status message), not a file."""
        if counted:
            self.files.append(name)
        data = text.encode("utf-8", "replace")
        self._feed(data if data.endswith(b"\n") else data + b"\n", name, rank, 1)

    def _feed(self, chunk: bytes, name: str, file_rank: int | None, first: int) -> int:
        """Scan one chunk of whole lines whose first line is line `first` of its file; the next chunk's first."""
        decide = self.posted is None  # on the first chunk: a post from a page; a collector's frame on every line
        self.posted = posted(chunk) if decide else self.posted
        chunk = as_posted(chunk) if self.posted else chunk
        self.typed = typographic(chunk) if decide else self.typed
        chunk = as_typed(chunk) if self.typed else chunk
        self.frame = framing(chunk) if decide else self.frame
        chunk = unframed(chunk, self.frame) if self.frame else chunk
        self.width = wrapping(chunk) if decide else self.width  # (the lines as printed: a collector's frame off)
        chunk = unwrapped(chunk, self.width) if self.width else chunk
        self.base = self.bytes
        self.bytes += len(chunk)
        # lazy: numpy (only a diagnosis scans lines; importing the monitor stays light)
        import numpy

        missing = tuple(k for k in MARKS if getattr(self, k + "_at") is None)
        if missing:
            for key, at in marks(chunk, missing).items():
                setattr(self, key + "_at", self.base + at)
        found = find_words(chunk)
        array = numpy.frombuffer(chunk, numpy.uint8)
        if not found:
            return first + int(numpy.count_nonzero(array == 10))
        newlines = numpy.flatnonzero(array == 10)  # where each line ends: line numbers by bisection, in C
        found.sort(key=lambda m: m[1])
        line_end, line_start = -1, 0
        number = first
        owners: set[str] = set()
        for index, start in found:
            if start < line_end:
                owners.update(OWNERS[index])
                continue
            if owners:
                self._line(chunk, line_start, line_end, number, name, file_rank, owners)
            at = int(numpy.searchsorted(newlines, start))  # lines before this one
            line_start = int(newlines[at - 1]) + 1 if at else 0
            line_end = int(newlines[at])
            if line_end - line_start > _LONG:  # a line of megabytes (a tensor dump): the text around the word
                line_start, line_end = max(line_start, start - _WINDOW), min(line_end, start + _WINDOW)
            number = first + at
            owners = set(OWNERS[index])
        if owners:
            self._line(chunk, line_start, line_end, number, name, file_rank, owners)
        return first + len(newlines)

    def _line(self, chunk: bytes, start: int, end: int, number: int, name: str, rank, owners: set[str]) -> None:
        line = decode(bytes(chunk[start:end]))
        if FACTS in owners:
            read_facts(line, self.facts)
        if len(self.pid_node) < _PIDS and "ray::" in line:  # `ray::Actor.method() (pid=P, ip=A)`: P's node
            for pid, ip in ray_pids(line):
                if ip:
                    self.pid_node.setdefault(pid, ip)

        began = time.perf_counter()
        if self.linear:  # only the causes Hyperscan says may match
            owners = (owners & gated(line.encode("utf-8", "replace"))) | (owners & {FIRST, FACTS})
        for c in CAUSES:
            if c.id not in owners:
                continue
            if self.linear and len(self.hits.get(c.id, ())) >= _KEEP:  # enough of its lines kept: count the rest
                self.counts[c.id] = self.counts.get(c.id, 0) + 1
                continue
            m = None
            for m in c.compiled().finditer(line):  # noqa: B007 (the last match: a long line's telling detail)
                pass
            if m is None or ((ex := c.excluded()) is not None and ex.search(line)):
                continue
            if fe.code_under_frame(line, fe.lines_before(chunk, start, 2048)[-1:]):  # code, not a report (its words:
                break  # `collective_rpc(method, timeout, ...)` under its frame)
            weak = (wk := c.weakened()) is not None and wk.search(line) is not None
            self._hit(c.id, chunk, start, end, line, m.start(), number, name, rank, weak)
        if FIRST in owners:
            self._error(chunk, start, end, line, number, name, rank)
        self.spent += time.perf_counter() - began
        if self.spent > _BUDGET:  # crafted lines that make backtracking crawl: Hyperscan (linear) says first
            self.linear = True

    def _error(self, chunk, start, end, line, number, name, rank) -> None:
        """Keep an error line for the first-error layer: an exception line with its traceback's frames, an
        error-level record, a non-zero exit; note a mark of success."""
        if fe.is_success(line):
            self.success = True
            return
        if fe.after_shutdown(line, chunk, start):  # an engine that shut down as it was asked
            return
        exc = fe.exception_in(line)
        if exc is not None and fe.is_source(line, fe.lines_before(chunk, start, 1024)[-1:]):
            exc = None  # a frame's source line (`load()  # RuntimeError: ...` under `File "x.py", line 3`): code
        if exc is not None and exc[0].endswith("Warning"):
            self.warnings += 1
            exc = None
        if fe.level_of(line) == "WARNING":
            self.warnings += 1
        if exc is None and not fe.error_level(line):
            if (fe.is_exit(line) or fe.TRACEBACK.search(line) or fe.SOURCE.match(line)) and len(self.exits) < 4:
                # a non-zero exit, a traceback's header or a `raise` / `assert` line of one: error evidence of the
                # last resort (a log cut before its error line)
                made = self._make(UNKNOWN, chunk, start, end, line, 0, number, name, rank)
                if fe.SOURCE.match(line):  # a `raise` of a traceback cut before its error line: its frames say where
                    made.frames = fe.frames_of(self._trace(chunk, start, line))
                self.exits.append(made)
            elif not self.errors and fe.FRAME.search(line):  # the innermost frame of a log cut inside its traceback
                self.cut = self._make(UNKNOWN, chunk, start, end, line, 0, number, name, rank)
                self.cut.frames = in_progress(fe.frames_of(self._trace(chunk, start, line) + [line]), self.cut.after)
            return
        if exc is not None and fe.level_of(line, exc[3]) in ("WARNING", "INFO", "DEBUG"):
            return  # a warning that quotes an exception (a retry, a fallback): not an error of the run
        message = exc[2] if exc else fe.strip_prefix(line)
        echo = fe.is_consequence(exc[0] if exc else "", message)
        kept = self.echoes if echo else self.errors
        if len(kept) >= (_FIRST // 4 if echo else _FIRST):
            if not echo:
                self.last.append(self._make(UNKNOWN, chunk, start, end, line, exc[3] if exc else 0, number, name, rank))
            return
        hit = self._make(UNKNOWN, chunk, start, end, line, exc[3] if exc else 0, number, name, rank)
        hit.consequence = echo
        if exc is not None:
            hit.exception = exc[:3]
            trace = self._trace(chunk, start, line)
            hit.frames = fe.frames_of(trace)
            if exc[1]:  # Ray's RayTaskError(KeyError): the remote task's own frames follow its line, innermost last
                hit.frames += fe.frames_after(chunk, end)
            hit.text, hit.intro = fs.as_printed(chunk, start, end, exc[2], line), fs.introduced(trace)
            if fe.generated(hit.intro):  # a sample's own error (a tool the model called wrongly): the run goes on
                return
            if hit.where.node is None or hit.where.pid is None:  # the actor a relayed traceback names above it
                for text in reversed(trace):
                    if (m := RAY_TASK.search(text)) and hit.where.node is None:
                        hit.where.pid = hit.where.pid or int(m.group(1))
                        hit.where.node = m.group(2)
                        break
                    if fe.TRACEBACK.search(text):
                        break
        if not hit.text:
            hit.text = fs.as_printed(chunk, start, end, "x", line)
        if exc is None and fe.CRASH.search(line):  # a crash: the native backtrace under its line (`File "<unknown>"`)
            hit.frames = fe.frames_after(chunk, end, innermost_first=True)
        elif exc is None and RAY_TASK.search(line):  # Ray's `Unhandled error ...: ray::Worker.wake_up() (pid=...)`:
            hit.frames = fe.frames_after(chunk, end)  # the remote task's frames follow, innermost last
        kept.append(hit)

    def _trace(self, chunk, start: int, line: str) -> list[str]:
        """The lines above an exception line that can hold its traceback (of the same Ray actor and rank, when
        the line names them: ranks interleave their output)."""
        raw = fe.lines_before(chunk, start, _TRACE)[-_TRACE_LINES:]
        lines = [decode(b) for b in raw]
        prefix = fe.OWNER.match(line)
        if prefix and prefix.group(0).strip():
            own = prefix.group(0).strip()
            lines = [text for text in lines if text.lstrip().startswith(own)]
        return lines

    def _make(self, cause, chunk, start, end, line, at, number, name, rank) -> _Hit:
        before = [decode(b) for b in fe.lines_before(chunk, start, _CONTEXT)[-12:]]
        after = [decode(b) for b in bytes(chunk[end + 1 : end + 1 + _CONTEXT]).split(b"\n")[:8]]
        w = where(line, rank, after, before)
        if w.pid is not None:
            if w.node is None:
                w.node = self.pid_node.get(w.pid)
            elif len(self.pid_node) < _PIDS:
                self.pid_node.setdefault(w.pid, w.node)
            if w.rank is None:
                w.rank = self.pid_rank.get(w.pid)
            elif len(self.pid_rank) < _PIDS:
                self.pid_rank.setdefault(w.pid, w.rank)
        self.order += 1
        return _Hit(cause, line, number, name, at, self.order, w, before, after=after[:6], offset=self.base + start)

    def _hit(self, cause, chunk, start, end, line, at, number, name, rank, weak=False) -> None:
        self.counts[cause] = self.counts.get(cause, 0) + 1
        kept = (self.weak if weak else self.hits).setdefault(cause, [])
        made = None
        if len(kept) < _KEEP:
            made = self._make(cause, chunk, start, end, line, at, number, name, rank)
            kept.append(made)
        if cause == "comm-timeout" and len(self.timed_out) < _PIDS:  # every rank that timed out, not only those kept
            w = made.where if made is not None else where(line, rank)
            if w.rank is not None and w.remote is None:
                self.timed_out.add(w.rank)

    # ------------------------------------------------------------------------------------------ deciding
    def result(self) -> Failure | None:
        first_hit = self._first_hit()
        first = self._first_error(first_hit) if first_hit is not None else None
        hits = {cause: list(kept) for cause, kept in self.hits.items()}
        refine(hits)
        order = [c.id for c in CAUSES if hits.get(c.id)]
        if not order and not (first is not None and first.type and not first_hit.consequence):  # only warnings: theirs
            hits = {cause: list(kept) for cause, kept in self.weak.items()}
            order = [c.id for c in CAUSES if hits.get(c.id)]
        if not order:  # no cause of the registry: what the first error's structure says, or unknown
            if first_hit is None and (self.exits or self.cut) and not self.success:  # a `raise`, a frame, a header
                last = next((h for h in self.exits if not fe.TRACEBACK.search(h.line)), self.cut or self.exits[0])
                if self.cut is not None and fe.SOURCE.match(last.line) and self.cut.offset > last.offset:
                    last = self.cut  # a frame below a `raise` (a re-raise on the way down): the innermost shown
                first_hit, first = last, self._first_error(last)
            if first_hit is None:
                return None
            context = self._context(first_hit)
            verdict = classify(first, context)
            family = verdict.family if verdict else family_for(UNKNOWN, first, context)
            cause = verdict.cause if verdict else UNKNOWN
            return self._failure(cause, family, [first_hit], self._after(first_hit), first, verdict, context)
        cause = order[0]
        if cause in _NETWORK:  # the communicator's causes follow one another: the earliest in time is the origin
            timed = [
                (h.where.time, CAUSES.index(BY_ID[c]), c)
                for c in order
                if c in _NETWORK
                for h in hits[c]
                if h.where.time is not None
            ]
            if timed:
                cause = min(timed)[2]
                order = [cause] + [c for c in order if c != cause]
        context = self._context(first_hit or hits[cause][0])
        # an error of its own before what followed from it (a dead actor, a timeout): the first error, also an error
        # line without an exception type (a native library's `CUresult error: 1`)
        before = first is not None and not first_hit.consequence and cause in _FOLLOW
        before = before and first_hit.offset < min(h.offset for h in hits[cause])
        verdict = classify(first, context) if first is not None and (first.type or before) else None
        own = first is not None and (first.type or fe.CPP_WHAT.match(fe.strip_prefix(first.line)))
        if verdict is None and cause == "worker-died" and before and own:  # its own error: no death without one
            verdict = Verdict(UNKNOWN, family_for(UNKNOWN, first, context))
        if verdict is not None and verdict.cause != cause and cause in _FOLLOW and not first_hit.consequence:
            # the registry names only what followed (a dead worker, a timeout): the first error says why
            consequences = [h for c in order for h in hits[c][:2]]
            return self._failure(verdict.cause, verdict.family, [first_hit], consequences, first, verdict, context)
        later = [h for c in order[1:] for h in hits[c][:2]]
        if first is None or first_hit.consequence or not (first.type or before):  # none of its own: the cause's
            first = self._first_error(origin_first(hits[cause])[0], origin_rank=True, hits=hits[cause])
            context = self._context(hits[cause][0])
        family = family_for(cause, first, context)
        if verdict is not None and FAMILIES[verdict.family][0] == cause:  # the same cause, said more finely
            family = verdict.family
        else:
            verdict = None
        cause = recaused(cause, family)  # the family says the registry's words were another failure's (its cause)
        return self._failure(
            cause, family, hits[cause] if cause in hits else hits[order[0]], later, first, verdict, context
        )

    def _after(self, first: _Hit) -> list[_Hit]:
        """The error lines after the first one (a chained exception, the next rank's): shown after it."""
        return [h for h in self.errors if h is not first and not fe.header_answered(h, self.errors)][:3]

    def family(self) -> str:
        """The family of a log that shows no failure: `warning-only` when it holds warnings and no sign of work
        done (a step, a progress bar, an engine's throughput), else `healthy-run`."""
        warned = self.warnings or self.warning_at is not None
        return "warning-only" if warned and self.progress_at is None else "healthy-run"

    def _context(self, hit: _Hit | None) -> Context:
        if hit is None:
            return Context()
        following = [h.line for h in self.errors + self.echoes if h.offset > hit.offset][:4]
        near = " ".join(hit.before[-6:] + [hit.text or hit.line] + hit.after[:4] + following)
        return Context(
            stepped=self.step_at is not None and self.step_at < hit.offset,
            engine=self.engine_at is not None and self.engine_at <= hit.offset,
            npu=self.npu_at is not None,
            sync=self.sync_at is not None and self.sync_at <= hit.offset + len(hit.line.encode()),
            near=near,
            signal=" ".join(h.line for h in self.exits[:2]),
        )

    def _first_hit(self) -> _Hit | None:
        """The first real error: the first exception line that reports no other failure; else the first
        error-level record that is not part of a traceback; else the first that reports another's failure."""
        if self.success and not any(h.exception for h in self.errors):
            return None  # error-level records in a run that ended well (a retried request, a logged warning)
        errors = self.errors
        if len(self.files) > 1 and all(h.where.time for h in errors):
            errors = sorted(errors, key=lambda h: h.where.time)  # one log per rank: the earliest across them
        found = next((h for h in errors if h.exception and not fe.header_answered(h, errors)), None)
        if found is None:  # a record that is not a part of a traceback (its header, a frame, a frame's source line)
            found = next((h for h in errors if not fe.in_traceback(h.line)), None)
        if found is None:  # an echo whose message only sounds like one (a command that failed) before a relay
            relayed = [h for h in self.echoes if h.exception]
            found = next((h for h in relayed if not fe.relays(h.exception[0])), None)
            found = found or next(iter(relayed), None) or next(iter(self.echoes), None)
        # else a log cut inside a traceback: the innermost line it shows says the most
        return found or (errors[-1] if errors else None)

    def _first_error(self, hit: _Hit, origin_rank: bool = False, hits: list[_Hit] | None = None) -> FirstError:
        """The first error of `hit`; `origin_rank`: a registry cause's origin, whose first line read of the same
        rank is said (a rank's first report of a timeout, not its later echo)."""
        if origin_rank and hits:
            same = [h for h in hits if h.where.rank == hit.where.rank]
            hit = naming_collective(min(same, key=lambda h: h.order), same) if same else hit
        self._late(hit.where)
        kind, inner, message = hit.exception or ("", None, fe.strip_prefix(hit.line).strip())
        said = hit.text or next((h.text for h in self.errors if h.offset == hit.offset and h.text), hit.line)
        lines = said.split("\n")  # (a cause's line read as an error too: as printed, with what it continues on)
        return FirstError(
            kind,
            message,
            hit.line,
            hit.number,
            hit.file,
            list(hit.frames),
            hit.where.rank,
            hit.where.node,
            hit.where.pid,
            inner,
            lines[1:],
            (hit.intro or fs.code_named_above(hit.before, hit.line)) + said,
            fs.frame_code(hit.before) if hit.frames else "",
        )

    def _late(self, w: Where) -> None:
        """Fill a node or rank learned from a line read after the evidence (Ray names a pid's ip later)."""
        if w.pid is not None:
            w.node = w.node or self.pid_node.get(w.pid)
            w.rank = w.rank if w.rank is not None else self.pid_rank.get(w.pid)

    def _failure(
        self,
        cause: str,
        family: str,
        hits: list[_Hit],
        later: list[_Hit],
        first: FirstError | None = None,
        verdict: Verdict | None = None,
        context: Context | None = None,
    ) -> Failure:
        for h in hits + later:
            self._late(h.where)
        ordered = origin_first(hits)
        origin = ordered[0]
        w = origin.where
        silent = silent_ranks(self.timed_out) if cause == "comm-timeout" and w.remote is None else []
        rank, node = locate(ordered, hits, later, self.errors + self.echoes + self.exits, first)
        with_op = next((h.where for h in ordered if h.where.op), None)  # the collective named, and its group
        collective = with_op.op if with_op else None
        group = (with_op and with_op.group) or next((h.where.group for h in ordered if h.where.group), None)
        first_of: dict[str, _Hit] = {}  # one line of each shape (its numbers aside), in order
        for h in ordered + later:
            first_of.setdefault(re.sub(r"\d+", "#", h.line), h)
        evidence = list(first_of.values())[:_EVIDENCE]
        spec = BY_ID.get(cause, UNKNOWN_CAUSE)
        extra = explain(cause, [h.line for h in ordered], self.facts, [(h.before or [""])[-1] for h in ordered])
        if verdict is not None and (verdict.message or verdict.key) and not (extra.key or extra.message):
            # what the first error's structure says (the rules' maths, where they say any, say more)
            extra = Extra(verdict.message, verdict.fix or extra.fix, verdict.key or extra.key, verdict.rule)
        parts = [spec.meaning[0].upper() + spec.meaning[1:]]
        parts += origin_sentence(cause, rank, node if not silent else w.node, w, hits, collective, group)
        rank, node = (None, w.peer) if w.peer else (rank, node)
        if silent:  # the ranks that did not time out never reached the collective: they are the stalled ones
            rank = silent[0]
            node = next((h.where.node for h in hits + later if h.where.rank == rank and h.where.node), None)
            parts.insert(1, stalled_sentence(silent, node, max(self.timed_out)))
        if extra.message:
            parts.append(extra.message)
        if first is not None and first.type:  # what the first error was and where it was raised
            parts.append(fs.sentence(first, full=cause == UNKNOWN))
        elif cause == UNKNOWN:
            parts.append(f"The first error: {excerpt(origin.line, origin.at)[:240].strip()}")
        if cause == "worker-died" and (w.pid or node):  # where its own log is: the driver's log has no cause
            parts.append(own_log_sentence(w.pid, node))
        then = list(dict.fromkeys(h.cause for h in later))
        if then:
            parts.append(f"Followed by: {', '.join(then)} (consequences, shown after the origin's lines)")
        rule = (extra.rule if extra.rule is not None else spec.rule) or None
        if rule:
            parts.append(f"`grpolab check` checks this before launch (rule {rule}): run it on the recipe")
        message = ". ".join(p.rstrip(".") for p in parts) + "."
        return Failure(
            cause=cause,
            # a log's lines are shown as read, secrets aside: a value a secret's name or shape gives away is
            # replaced (the caller's environment need not hold it: grpolab.recipe.secrets)
            message=redact_free_text(message),
            fix=redact_free_text((extra.fix + "; " if extra.fix else "") + spec.fix),
            lines=[redact_free_text(excerpt(h.line, h.at)) for h in evidence],
            line_numbers=[h.number for h in evidence],
            rank=rank,
            node=node,
            pid=w.pid if w.remote is None else None,
            collective=collective,
            group=group,
            key=extra.key,
            rule=rule,
            then=then,
            files=[h.file for h in evidence] if len(self.files) > 1 else [],
            family=family,
            first_error=redact_free_text(fe.plain(first.said)[:_FIRST_ERROR]) if first is not None else "",
            library=first.library if first is not None else None,
            frame=str(first.raising) if first is not None and first.raising else None,
        )


_FIRST_ERROR = 1200  # characters of the first error said (its line and the lines its message continues on)


_NETWORK = ("port-in-use", "comm-init", "comm-timeout")
# causes that follow from another failure: the first error, where its structure names a family, says why
_FOLLOW = ("worker-died", "killed", "comm-timeout", "startup-timeout")


# ---------------------------------------------------------------------------------------------- front doors
def diagnose_text(text: str, name: str = "<text>") -> Failure | None:
    (scan := Scan()).feed_text(text or "", name)
    return scan.result()


def diagnose_files(files: list[tuple[Path, int | None]], extra: str = "", scan: Scan | None = None) -> Failure | None:
    """`scan`: the Scan to read with (a caller that asks it more afterwards: `family()`)."""
    scan = scan if scan is not None else Scan()
    for path, rank in files:
        scan.feed_file(path, rank)
    if extra:
        scan.feed_text(extra, "<status>", counted=False)
    return scan.result()


def diagnose_stream(handle=None, name: str = "<stdin>", scan: Scan | None = None) -> Failure | None:
    scan = scan if scan is not None else Scan()
    scan.feed_file(name, None, handle or sys.stdin.buffer)
    return scan.result()
