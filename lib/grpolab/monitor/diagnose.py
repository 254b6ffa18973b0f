"""Why a job failed, from any log: the cause (grpolab.monitor.causes), the first rank and node that failed or
stalled, what to change, and the lines that prove it, origin first.

    diagnose_text(text) -> Failure | None                 a log, its tail, a status message
    diagnose_files([(path, rank), ...]) -> Failure | None  log files (one per rank, or one for all), streamed
    log_files(path) -> [(path, rank)]                      a file, or a folder of one log per rank
    Scan                                                   the streaming reader behind both, fed chunk by chunk

A log is read in large binary chunks; one caseless Hyperscan pass (SIMD multi-literal search) over each chunk
finds the lines that hold a cause's keyword, and only those lines are decoded and matched against the patterns
of the causes whose keywords they hold. What is kept is bounded (a few dozen lines per cause, a bounded map of
Ray pids to nodes), so a multi-gigabyte log is diagnosed in seconds with a few MB of memory
(benchmarks/diagnose_speed.py).

The cause is the first of the registry's order (the order of origin) that the log shows; its evidence starts
with the line of the rank that failed first (a rank another rank names as the one it waited for, the lowest
collective sequence number, the earliest time across ranks), then the rest, then the lines of the causes that
followed from it (the other ranks' timeouts, Ray's dead workers).
"""

from __future__ import annotations

import re
import sys
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grpolab.jobs.job_entry import ANSI
from grpolab.monitor.causes import BY_ID, CAUSES, PREFIX, UNKNOWN, Cause
from grpolab.monitor.details import FACT_WORDS, FACTS, explain, read_facts
from grpolab.monitor.origin import Where, ray_pids, where

CHUNK = 8 << 20  # bytes read at a time: large enough for C to do the work, small enough to bound memory
_KEEP = 48  # lines kept per cause
_EVIDENCE = 6  # lines shown
_MAX_LINE = 400  # an evidence line is cut here: a log line can hold a whole tensor dump
_CONTEXT = 4096  # bytes around a matched line searched for its traceback and Ray's pid/ip block
_PIDS = 50_000  # pids remembered (their nodes and ranks)
_MAX_TAIL = 1 << 20  # a line is read whole up to this length past a chunk's end
_LONG = 16 << 10  # a longer line is matched only around its keywords, _WINDOW bytes either side
_WINDOW = 2048

_ERROR_LINE = re.compile(
    "^" + PREFIX + r"(?:[\w.]+\.)?\w*(?:Error|Exception|Exit)(?:\([\w.]+\))?: |^" + PREFIX + r"\[ERROR\] "
)
_FRAME = re.compile(r'^\s*(?:\[rank\d+\]:)?\s*File "([^"]+)", line \d+')
_LIBRARY = re.compile(r"[/\\](?:site|dist)-packages[/\\]")
_CONFIG_CLASS = re.compile(r"\w*Config\.__init__\(\) got an unexpected keyword")


@dataclass(frozen=True)
class Failure:
    cause: str  # an id of grpolab.monitor.causes (or unknown, or a silent failure's id)
    message: str  # what happened, for a person: the cause, the origin rank and node, the key and values
    fix: str  # what to change
    lines: list[str] = field(default_factory=list)  # the lines that show it, origin first (ANSI colours removed)
    line_numbers: list[int] = field(default_factory=list)  # 1-based, in their file (see `files`)
    rank: int | None = None  # the first rank that failed or stalled, where the log names it
    node: str | None = None  # that rank's node (an ip or a host name)
    pid: int | None = None
    collective: str | None = None  # the collective a timeout waited in (ALLREDUCE, AllReduce, ...)
    group: str | None = None  # its process group / HCCL communicator
    key: str | None = None  # config-key: the rejected key; batch/layout: the recipe key to change
    rule: str | None = None  # the `grpolab check` rule that finds it before launch
    then: list[str] = field(default_factory=list)  # causes that followed from it (consequences), in order
    files: list[str] = field(default_factory=list)  # the file of each evidence line (when more than one was read)

    def to_dict(self) -> dict:
        return asdict(self)


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


def _words() -> tuple[list[str], list[tuple[str, ...]]]:
    owners: dict[str, list[str]] = {}
    sources = [(c.id, c.words) for c in CAUSES] + [(UNKNOWN, ("error", "exception", "exit")), (FACTS, FACT_WORDS)]
    for owner, words in sources:
        for word in words:
            owners.setdefault(word, []).append(owner)
    return list(owners), [tuple(v) for v in owners.values()]


_WORDS, _OWNERS = _words()
_DB: list = []  # the compiled Hyperscan database, built on first use


def _database():
    if not _DB:
        # lazy: hyperscan (only a diagnosis compiles the patterns; importing the monitor stays light)
        import hyperscan

        db = hyperscan.Database()
        db.compile(
            expressions=[re.escape(w).encode() for w in _WORDS],
            ids=list(range(len(_WORDS))),
            elements=len(_WORDS),
            flags=[hyperscan.HS_FLAG_CASELESS] * len(_WORDS),
        )
        _DB.append(db)
    return _DB[0]


def _find(chunk: bytes) -> list[tuple[int, int]]:
    """(word index, start) of every keyword in the chunk, caseless."""
    found: list[tuple[int, int]] = []

    def on(index, _start, end, _flags, _context):
        found.append((index, end - len(_WORDS[index])))

    _database().scan(chunk, match_event_handler=on)
    return found


def _excerpt(line: str, at: int) -> str:
    if len(line) <= _MAX_LINE:
        return line
    start = max(0, min(at - _MAX_LINE // 3, len(line) - _MAX_LINE))
    return ("..." if start else "") + line[start : start + _MAX_LINE] + ("..." if start + _MAX_LINE < len(line) else "")


_SYSLOG_ANSI = re.compile(r"#033\[[0-9;]*[A-Za-z]")  # colours as syslog writes them


def _decode(raw: bytes) -> str:
    text = ANSI.sub("", raw.decode("utf-8", "replace")).rstrip()
    return _SYSLOG_ANSI.sub("", text) if "#033[" in text else text


class Scan:
    """A streaming reader of one or more logs: feed it chunks (whole lines), then `result()`."""

    def __init__(self) -> None:
        self.hits: dict[str, list[_Hit]] = {}
        self.weak: dict[str, list[_Hit]] = {}  # warnings that name a cause: the answer only when nothing else is
        self.timed_out: set[int] = set()  # the ranks a collective timeout was reported on
        self.counts: dict[str, int] = {}
        self.errors: deque[_Hit] = deque(maxlen=_EVIDENCE)  # the last error lines (a traceback ends with its error)
        self.first_errors: list[_Hit] = []  # and the first ones (the root of a chain: "see root cause above")
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
            while True:
                block = handle.read(CHUNK)
                if not block:
                    break
                cut = block.rfind(b"\n") + 1
                if cut == len(block):
                    first = self._feed(block, name, rank, first)
                    continue
                if cut:  # the whole lines, without a copy; then the last one, completed from the file
                    first = self._feed(memoryview(block)[:cut], name, rank, first)
                tail = block[cut:] + (handle.readline(_MAX_TAIL) or b"")
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
        self.bytes += len(chunk)
        # lazy: numpy (only a diagnosis scans lines; importing the monitor stays light)
        import numpy

        found = _find(chunk)
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
                owners.update(_OWNERS[index])
                continue
            if owners:
                self._line(chunk, line_start, line_end, number, name, file_rank, owners)
            at = int(numpy.searchsorted(newlines, start))  # lines before this one
            line_start = int(newlines[at - 1]) + 1 if at else 0
            line_end = int(newlines[at])
            if line_end - line_start > _LONG:  # a line of megabytes (a tensor dump): the text around the word
                line_start, line_end = max(line_start, start - _WINDOW), min(line_end, start + _WINDOW)
            number = first + at
            owners = set(_OWNERS[index])
        if owners:
            self._line(chunk, line_start, line_end, number, name, file_rank, owners)
        return first + len(newlines)

    def _line(self, chunk: bytes, start: int, end: int, number: int, name: str, rank, owners: set[str]) -> None:
        line = _decode(bytes(chunk[start:end]))
        if FACTS in owners:
            read_facts(line, self.facts)
        if len(self.pid_node) < _PIDS and "ray::" in line:  # `ray::Actor.method() (pid=P, ip=A)`: P's node
            for pid, ip in ray_pids(line):
                if ip:
                    self.pid_node.setdefault(pid, ip)
        matched = False
        for c in CAUSES:
            if c.id not in owners:
                continue
            m = None
            for m in c.compiled().finditer(line):  # noqa: B007 (the last match: a long line's telling detail)
                pass
            if m is None or ((ex := c.excluded()) is not None and ex.search(line)):
                continue
            matched = True
            weak = (wk := c.weakened()) is not None and wk.search(line) is not None
            self._hit(c.id, chunk, start, end, line, m.start(), number, name, rank, weak)
        if not matched and UNKNOWN in owners:
            if m := _ERROR_LINE.search(line):
                hit = self._make(UNKNOWN, chunk, start, end, line, m.end(), number, name, rank)
                if len(self.first_errors) < 2:
                    self.first_errors.append(hit)
                self.errors.append(hit)

    def _make(self, cause, chunk, start, end, line, at, number, name, rank) -> _Hit:
        before = [_decode(b) for b in bytes(chunk[max(0, start - _CONTEXT) : start]).split(b"\n")[1:-1][-12:]]
        after = [_decode(b) for b in bytes(chunk[end + 1 : end + 1 + _CONTEXT]).split(b"\n")[:8]]
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
        return _Hit(cause, line, number, name, at, self.order, w, before)

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
        hits = {cause: list(kept) for cause, kept in self.hits.items()}
        _refine(hits)
        order = [c.id for c in CAUSES if hits.get(c.id)]
        if not order:  # only warnings name a cause: the first of them
            hits = {cause: list(kept) for cause, kept in self.weak.items()}
            order = [c.id for c in CAUSES if hits.get(c.id)]
        if not order:
            if not self.errors:
                return None
            first = [h for h in self.first_errors if h not in self.errors]
            return self._failure(UNKNOWN, first + list(self.errors), [])
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
        return self._failure(cause, hits[cause], [h for c in order[1:] for h in hits[c][:2]])

    def _late(self, w: Where) -> None:
        """Fill a node or rank learned from a line read after the evidence (Ray names a pid's ip later)."""
        if w.pid is not None:
            w.node = w.node or self.pid_node.get(w.pid)
            w.rank = w.rank if w.rank is not None else self.pid_rank.get(w.pid)

    def _failure(self, cause: str, hits: list[_Hit], later: list[_Hit]) -> Failure:
        for h in hits + later:
            self._late(h.where)
        ordered = _origin_first(hits)
        origin = ordered[0]
        w = origin.where
        rank, node = (w.remote, w.remote_node) if w.remote is not None else (w.rank, w.node)
        silent = _silent_ranks(self.timed_out) if cause == "comm-timeout" and w.remote is None else []
        if w.remote is not None and node is None:  # the rank another rank named: its node, if its own lines say
            node = next((h.where.node for h in hits if h.where.rank == rank and h.where.node), None)
        if rank is None and w.remote is None:  # the origin line names no rank: the first of the cause's that does
            rank = next((h.where.rank for h in ordered if h.where.rank is not None), None)
        if node is None and w.remote is None:  # nor a node: the first line of the same rank (or of no rank) that does
            node = next((h.where.node for h in ordered + later if h.where.node and h.where.rank in (rank, None)), None)
        with_op = next((h.where for h in ordered if h.where.op), None)  # the collective named, and its group
        collective = with_op.op if with_op else None
        group = (with_op and with_op.group) or next((h.where.group for h in ordered if h.where.group), None)
        first_of: dict[str, _Hit] = {}  # one line of each shape (its numbers aside), in order
        for h in ordered + later:
            first_of.setdefault(re.sub(r"\d+", "#", h.line), h)
        evidence = list(first_of.values())[:_EVIDENCE]
        spec = BY_ID.get(cause, _UNKNOWN)
        extra = explain(cause, [h.line for h in ordered], self.facts, [(h.before or [""])[-1] for h in ordered])
        parts = [spec.meaning[0].upper() + spec.meaning[1:]]
        parts += _origin_sentence(cause, rank, node if not silent else w.node, w, hits, collective, group)
        if silent:  # the ranks that did not time out never reached the collective: they are the stalled ones
            rank = silent[0]
            node = next((h.where.node for h in hits + later if h.where.rank == rank and h.where.node), None)
            shown = ", ".join(map(str, silent))
            parts.insert(
                1,
                f"The rank that stalled: rank {rank}"
                + (f" on node {node}" if node else "")
                + f" (of ranks 0-{max(self.timed_out)}, {'only it' if len(silent) == 1 else 'ranks ' + shown} did not "
                "time out: it never reached the collective the others waited in)",
            )
        if extra.message:
            parts.append(extra.message)
        if cause == UNKNOWN:  # say what the first error was, not only that there was one
            parts.append(f"The first error: {_excerpt(origin.line, origin.at)[:240].strip()}")
        if cause == "worker-died" and (w.pid or node):  # where its own log is: the driver's log has no cause
            parts.append(
                "Its own log: `ray logs worker"
                + (f" --pid {w.pid}" if w.pid else "")
                + (f" --node-ip {node}" if node else "")
                + "` (or worker-*.out under /tmp/ray/session_latest/logs on that node)"
            )
        then = list(dict.fromkeys(h.cause for h in later))
        if then:
            parts.append(f"Followed by: {', '.join(then)} (consequences, shown after the origin's lines)")
        rule = (extra.rule if extra.rule is not None else spec.rule) or None
        if rule:
            parts.append(f"`grpolab check` checks this before launch (rule {rule}): run it on the recipe")
        message = ". ".join(p.rstrip(".") for p in parts) + "."
        return Failure(
            cause=cause,
            message=message,
            fix=(extra.fix + "; " if extra.fix else "") + spec.fix,
            lines=[_excerpt(h.line, h.at) for h in evidence],
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
        )


_NETWORK = ("port-in-use", "comm-init", "comm-timeout")
_UNKNOWN = Cause(  # what a diagnosis says of an error line that no cause of the registry explains
    UNKNOWN,
    "the job failed with an error that matches no known cause",
    "read the lines below and the log around them; if it is a recurring cause, add it to the cause registry "
    "(grpolab.monitor.causes)",
    (),
    (),
    (),
)


def _origin_first(hits: list[_Hit]) -> list[_Hit]:
    """The hits, the one that shows the origin first: a line naming the rank others waited for, then the lowest
    collective sequence number (the rank furthest behind; compared only when every numbered line waits in the same
    kind of collective: each process group counts its own), then the earliest time, then the first read."""
    by_seq = len({h.where.op for h in hits if h.where.seq is not None}) == 1

    def seq(h: _Hit) -> float:
        return h.where.seq if by_seq and h.where.seq is not None else float("inf")

    by_time = sum(h.where.time is not None for h in hits) > 1  # one time stamp says nothing across ranks
    return sorted(
        hits, key=lambda h: (h.where.remote is None, seq(h), (h.where.time or (99,)) if by_time else (), h.order)
    )


def _silent_ranks(timed_out: set[int]) -> list[int]:
    """The ranks below the highest that timed out which did not time out, when they are few (a stuck rank never
    enters the collective its peers wait in, so it reports no timeout); [] when the log cannot say."""
    if len(timed_out) < 3:
        return []
    missing = sorted(set(range(max(timed_out) + 1)) - timed_out)
    return missing if 0 < len(missing) <= max(1, len(timed_out) // 4) else []


def _ranks(hits: list[_Hit], skip: int | None) -> list[int]:
    return sorted({h.where.rank for h in hits if h.where.rank is not None and h.where.rank != skip})


def _origin_sentence(cause, rank, node, w: Where, hits, collective, group) -> list[str]:
    if rank is None and node is None:
        return []
    at = f"rank {rank}" if rank is not None else "a worker"
    if node:
        at += f" on node {node}"
    if w.pid is not None and w.remote is None:
        at += f" (pid {w.pid})"
    if cause != "comm-timeout":
        if w.remote is not None:  # a link that could not be made: to this rank, from the one reporting it
            return [f"Rank {w.rank} could not reach {at}" if w.rank is not None else f"The rank not reached: {at}"]
        return [f"First on {at}"]
    waited = _ranks(hits, rank)
    op = f" in {collective}" if collective else " in a collective"
    if group:
        op += f" of group {group}"
    if w.seq is not None and w.remote is None:
        op += f" (SeqNum {w.seq})"
    if w.remote is not None and not w.signalled:
        out = [f"The rank that stalled: {at}; the others waited for it{op}"]
    elif w.remote is not None:
        out = [f"First to time out: {at}, which signalled the others{op}"]
    else:
        out = [f"First to time out: {at}{op}"]
    if waited:
        shown = ", ".join(map(str, waited[:8])) + (f" and {len(waited) - 8} more" if len(waited) > 8 else "")
        out.append(f"Waiting and timed out: rank{'s' if len(waited) > 1 else ''} {shown}")
    return out


def _refine(hits: dict[str, list[_Hit]]) -> None:
    """A library passing an argument that another library's installed version does not take
    (`EngineArgs.__init__() got an unexpected keyword argument`, called from site-packages) is a version mismatch
    (import-error), not a rejected config key; a *Config class's rejection stays a config key."""
    moved = []
    for h in hits.get("config-key", []):
        if "unexpected keyword" in h.line and not _CONFIG_CLASS.search(h.line):
            frames = [m.group(1) for b in h.before if (m := _FRAME.match(b))]
            if frames and _LIBRARY.search(frames[-1]):
                moved.append(h)
    if moved:
        hits["config-key"] = [h for h in hits["config-key"] if h not in moved]
        for h in moved:
            h.cause = "import-error"
        hits["import-error"] = moved + hits.get("import-error", [])


# ---------------------------------------------------------------------------------------------- front doors
def diagnose_text(text: str, name: str = "<text>") -> Failure | None:
    scan = Scan()
    scan.feed_text(text or "", name)
    return scan.result()


_FILE_RANK = (re.compile(r"rank[_\-.]?(\d+)", re.IGNORECASE), re.compile(r"(?:^|[_\-.])(\d+)\.(?:log|txt|out|err)$"))


def file_rank(path: Path) -> int | None:
    """The rank a per-rank log's name says (rank3.log, worker_rank_3.txt, node0-3.log), or None."""
    return next((int(m.group(1)) for pattern in _FILE_RANK if (m := pattern.search(path.name))), None)


def log_files(path: Path) -> list[tuple[Path, int | None]]:
    """A file, or every regular file of a folder (one log per rank: each file's rank from its name)."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        ranks = [file_rank(p) for p in files]
        if len(set(ranks)) < len(files):  # names that do not tell ranks apart tell none
            ranks = [None] * len(files)
        return list(zip(files, ranks))
    return [(path, None)]


def diagnose_files(files: list[tuple[Path, int | None]], extra: str = "") -> Failure | None:
    scan = Scan()
    for path, rank in files:
        scan.feed_file(path, rank)
    if extra:
        scan.feed_text(extra, "<status>", counted=False)
    return scan.result()


def diagnose_stream(handle=None, name: str = "<stdin>") -> Failure | None:
    scan = Scan()
    scan.feed_file(name, None, handle or sys.stdin.buffer)
    return scan.result()
