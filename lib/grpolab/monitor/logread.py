"""Reading a log fast: its bytes as text (gzip, bzip2 and xz read as they stream; binary data and zstd refused
with NotALog) and the Hyperscan databases that find, in one linear pass over a chunk, the lines worth decoding.

    readable(handle, name) -> stream          the text of a log stream, or NotALog
    find_words(chunk) -> [(word index, start)] every keyword (WORDS; their owners: OWNERS) in a chunk, caseless
                                              (and the first-error layer's few fixed-length patterns)
    gated(line) -> {cause id}                 the causes whose patterns may match a line (linear, for crafted lines)
    marks(chunk, keys) -> {key: offset}       where a run first shows a step, an engine, progress, an NPU stack
    decode(raw) -> str                        a line's text without colours
    posted(head), as_posted(chunk)            a log pasted from a page, and its chunk without the quote's `> `, HTML entities
    typographic(head), as_typed(chunk)        a page's typographic quotes and spaces, and its chunk with the console's
    wrapping(head), unwrapped(chunk, width)   a log a terminal wrapped at its width, and its chunk with the lines joined
    framing(head), unframed(chunk, frame)     what a collector put before every line (k8s time, compose column)
    log_files(path) -> [(path, rank)]         a file, or a folder of one log per rank
"""

from __future__ import annotations

import bz2
import gzip
import html
import lzma
import re
from pathlib import Path

import grpolab.monitor.firsterror as fe
from grpolab.jobs.job_entry import ANSI
from grpolab.monitor.causes import CAUSES, PREFIX
from grpolab.monitor.details import FACT_WORDS, FACTS

MAX_LINE = 400  # an evidence line is cut here
FIRST = "first-error"  # the owner of grpolab.monitor.firsterror.WORDS among the keywords' owners


def _words() -> tuple[list[str], list[tuple[str, ...]]]:
    owners: dict[str, list[str]] = {}
    sources = [(c.id, c.words) for c in CAUSES] + [(FIRST, fe.WORDS), (FACTS, FACT_WORDS)]
    for owner, words in sources:
        for word in words:
            owners.setdefault(word, []).append(owner)
    patterns = [pattern for pattern, _ in fe.PATTERN_WORDS]
    return list(owners) + patterns, [tuple(v) for v in owners.values()] + [(FIRST,)] * len(patterns)


# the keywords (the literal words, caseless, then the first-error layer's patterns) and who reads each one's line
WORDS, OWNERS = _words()
_LITERAL = len(WORDS) - len(fe.PATTERN_WORDS)
_LENGTHS = [len(w) for w in WORDS[:_LITERAL]] + [length for _, length in fe.PATTERN_WORDS]
_DB: list = []  # the compiled Hyperscan database, built on first use


def _database():
    if not _DB:
        # lazy: hyperscan (only a diagnosis compiles the patterns; importing the monitor stays light)
        import hyperscan

        db = hyperscan.Database()
        db.compile(
            expressions=[(re.escape(w) if i < _LITERAL else w).encode() for i, w in enumerate(WORDS)],
            ids=list(range(len(WORDS))),
            elements=len(WORDS),
            flags=[hyperscan.HS_FLAG_CASELESS] * _LITERAL + [0] * (len(WORDS) - _LITERAL),
        )
        _DB.append(db)
    return _DB[0]


_GATE: list = []  # the Hyperscan database of every cause's patterns, built when a scan turns linear


def _gate():
    """Every cause's patterns in one Hyperscan database, in prefilter mode: a superset of each pattern's matches
    (its look-aheads dropped), never fewer; ids are indexes into CAUSES. Linear in the text's length, whatever
    it holds; built once (about half a second), only for a log whose lines made `re` crawl."""
    if not _GATE:
        # lazy: hyperscan (see _database)
        import hyperscan

        expressions, ids, flags = [], [], []
        base = hyperscan.HS_FLAG_PREFILTER | hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_MULTILINE
        for index, cause in enumerate(CAUSES):
            for pattern in cause.patterns:
                expressions.append(pattern.replace("{P}", PREFIX).encode())
                ids.append(index)
                flags.append(
                    base | hyperscan.HS_FLAG_ALLOWEMPTY | (hyperscan.HS_FLAG_CASELESS if cause.ignorecase else 0)
                )
        db = hyperscan.Database()
        db.compile(expressions=expressions, ids=ids, elements=len(expressions), flags=flags)
        _GATE.append(db)
    return _GATE[0]


def gated(line: bytes) -> set[str]:
    """The ids of the causes whose patterns may match `line` (Hyperscan, linear)."""
    found: set[str] = set()

    def on(index, _start, _end, _flags, _context):
        found.add(CAUSES[index].id)

    _gate().scan(line, match_event_handler=on)
    return found


def find_words(chunk: bytes) -> list[tuple[int, int]]:
    """(word index, start) of every keyword in the chunk, caseless."""
    found: list[tuple[int, int]] = []

    def on(index, _start, end, _flags, _context):
        found.append((index, end - _LENGTHS[index]))

    _database().scan(chunk, match_event_handler=on)
    return found


# where a run first shows work done, an inference engine, an Ascend stack, a training step: found by one Hyperscan
# scan per chunk of only the marks not yet seen (linear; `re` over every chunk of a healthy gigabyte costs seconds)
MARKS = {
    "step": rb"(?:^|[\s)])step:\d+ - ",  # verl's step metrics line
    "engine": rb"vllm|vLLM|VLLM|sglang|SGLang|SGLANG|WorkerWrapper|EngineCore|LLMRayActor|Worker_TP|worker_base",
    # a bar of work (a trainer's bar has no description, or a training one), not one of loading or preparing
    # (`Loading weights: 100%|...| 339/339 [00:02<00:00, 137.54it/s]`, `Map:`); unbounded classes: Hyperscan compiles
    # a bounded repeat ({0,300}) 20 times slower, for every set of marks still missing
    # (and an offline run's output: vLLM's example prints `Prompt: '...', Generated text: '...'`)
    "progress": rb"step:\d+ - |throughput|Decode batch|Prefill batch|Training Progress|Processed prompts|"
    rb"Generated text: |"
    rb"^[ \t]*(?:\([^)\n]*\)[ \t]*)?(?:(?:[Tt]rain|[Ee]poch|[Ss]tep|[Ii]teration)[^\n|:]*: ?)?[ \t]*\d+%\|[^\n]*"
    rb"(?:it/s|s/it)\]",
    "npu": rb"torch_npu|torch-npu|\bNPU\b|\bnpu\b|Ascend|CANN|HCCL",
    # a warning-level record or a Python warning (`UserWarning: ...`, `WARNING:megatron...`): a log of only these
    # and no work done is warning-only (the error layer's words do not include a warning's)
    # (transformers' warnings without a level: weights a checkpoint did not fill or did not use, a default template)
    "warning": rb"Warning: |\bWARNING\b|\bWARN\b|Some weights of [^\n]* were not (?:used|initialized)|"
    rb"No chat template is defined|"
    rb"^[ \t]*\[?W(?:\d{8}|\d{4}) \d\d:\d\d:\d\d",  # glog's warning level (`W20260609 17:30:47.27 ...`, `[W1206 ...`)
    # the channel the trainer sends weights to the rollout engine on, being set up or used (TRL's, SGLang's, vLLM's,
    # OpenRLHF's, NeMo RL's refit, AReaL's and slime's names for it)
    "sync": rb"init_communicator|update_named_param|init_weights?_update_group|update_weights?_from_(?:distributed|tensor|"
    rb"collective)|init_custom_process_group|custom process group|_model_update_group|weight_update_group|"
    rb"prepare_refit_info|connect_rollout_engines",
}
_MARK_DB: dict[tuple[str, ...], object] = {}


def marks(chunk, keys: tuple[str, ...]) -> dict[str, int]:
    """Where each of the marks `keys` (of MARKS) first ends in the chunk (about where it starts: a line apart)."""
    if keys not in _MARK_DB:
        # lazy: hyperscan (see _database)
        import hyperscan

        db = hyperscan.Database()
        db.compile(
            expressions=[MARKS[k] for k in keys],
            ids=list(range(len(keys))),
            elements=len(keys),
            flags=[hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_MULTILINE] * len(keys),
        )
        _MARK_DB[keys] = db
    found: dict[str, int] = {}

    def on(index, _start, end, _flags, _context):
        found.setdefault(keys[index], end - 1)

    _MARK_DB[keys].scan(chunk, match_event_handler=on)
    return found


_SYSLOG_ANSI = re.compile(r"#033\[[0-9;]*[A-Za-z]")  # colours as syslog writes them


def decode(raw: bytes) -> str:
    text = ANSI.sub("", raw.decode("utf-8", "replace")).rstrip()
    return _SYSLOG_ANSI.sub("", text) if "#033[" in text else text


_QUOTED = re.compile(rb"(?m)^(?:&gt;|>){1,2}[ \t]?")  # a markdown quote (`> `), also escaped
_ENTITY = re.compile(rb"&(?:quot|gt|lt|amp|#39|#x27);")
_SNIFF = 1 << 20  # bytes of a log's start that tell a post from a console log


def posted(head) -> bool:
    """The log starts as a page shows a post: most of its lines quoted (`> `), or HTML entities. Its first MiB only is
    read, so a console log of a GB pays nothing (and one stray `>` line does not make it a post)."""
    text = b"\n" + bytes(head[:_SNIFF])
    quoted = text.count(b"\n>") + text.count(b"\n&gt;")
    return 2 * quoted >= text.count(b"\n") or _ENTITY.search(text) is not None


# what a log collector put before every line: kubectl's and docker's `--timestamps` (RFC 3339, nanoseconds) and docker
# compose's service column (`trainer-1  | `). Without them each line reads as its process printed it (a traceback's
# frames, a level at the line's start, a verl step line). Each shape with the fewest lines that tell it (a nanosecond
# timestamp says so on one line); a service's name starts with a letter, so a table's rows (`1 | -0.28 | nan |`) are
# no column. (srun's `--label`, `3: `, stays: grpolab.monitor.origin reads the task's rank from it.)
FRAMES = ((rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z ", 1), (rb"[A-Za-z][\w.\-]{0,62}[ \t]*\| ", 2))
_FRAMED = 0.8  # the share of the first MiB's non-empty lines that carry one shape


def framing(head) -> re.Pattern | None:
    """The shapes of FRAMES a collector put before most lines of the log's first MiB, as a pattern for unframed();
    None for a log as its processes printed it. Frames around frames too, outermost first: kubectl's time before the
    compose column a log already had (`2026-03-01T08:15:42.123456789Z vllm-1  | ERROR ...`) is both."""
    lines = [line for line in bytes(head[:_SNIFF]).split(b"\n") if line.strip()]
    found = b""
    for _layer in range(3):  # (a collector's frame around a log another collector framed)
        for shape, fewest in FRAMES:
            frame = re.compile(found + shape)
            if len(lines) >= fewest and sum(1 for line in lines if frame.match(line)) >= _FRAMED * len(lines):
                found += shape
                break
        else:
            break
    return re.compile(rb"\n" + found) if found else None  # (a newline first: `re` finds the line starts by it)


def unframed(chunk, frame: re.Pattern) -> bytes:
    """`chunk` (whole lines) without the frame before each line (about 6 s a GB: only framed logs pay it)."""
    return frame.sub(b"\n", b"\n" + bytes(chunk))[1:]


def as_posted(chunk) -> bytes:
    """`chunk` (whole lines) without what posting it added: a markdown quote's `> ` before every line, and the HTML
    entities a page kept (`&quot;`, `&gt;`, `&#39;`)."""
    chunk = _QUOTED.sub(b"", bytes(chunk))
    return html.unescape(chunk.decode("utf-8", "replace")).encode("utf-8") if b"&" in chunk else chunk


# what a page or an editor made of a log's punctuation: typographic quotes, no-break and zero-width spaces, a byte
# order mark, the full-width colon of a Chinese post (`AssertionError：`). Read as the console printed them
# (`'NoneType'`, `Error: `); each is a sequence a console log rarely holds, so a log without them pays one look.
_TYPOGRAPHIC = tuple(
    (a.encode(), b.encode())
    for a, b in (("\u2018", "'"), ("\u2019", "'"), ("\u201c", '"'), ("\u201d", '"'), ("\u00a0", " "))
    + (("\u200b", ""), ("\ufeff", ""), ("\uff1a", ": "))
)


def typographic(head) -> bool:
    """The log's first MiB holds a page's or an editor's punctuation (_TYPOGRAPHIC)."""
    text = bytes(head[:_SNIFF])
    return any(a in text for a, _ in _TYPOGRAPHIC)


def as_typed(chunk) -> bytes:
    """`chunk` with a page's punctuation read as the console printed it (only logs that typographic() says pay it)."""
    chunk = bytes(chunk)
    for a, b in _TYPOGRAPHIC:
        chunk = chunk.replace(a, b) if a in chunk else chunk
    return chunk


# A log copied from a terminal that wrapped it (tmux, screen, a web console): every longer line cut at the terminal's
# width, so several lines have exactly the widest length and few are a little shorter. A line of that width goes on in
# the next one, unless it ends in the spaces that pad a line to the width (rich's) or the next one starts a record of
# its own: a traceback, a frame, an exception, a level, a prefix, a time, an indented line, or a record of the width
# line's own shape (a metrics line of the same format, a time stamp); or the line ends a sentence.
_WIDEST = 70  # the narrowest terminal read as wrapping (80 columns, less what a copy trims)
_NEW_RECORD = re.compile(
    r"Traceback |\s{2}|\t|File \"|[A-Z]\w*(?:Error|Exception|Warning)\b|[\[(<]|[IWEF]\d{4}|\d{4}-|\d\d:\d\d|[A-Z]{4,}\b"
)
_SHAPE = str.maketrans("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "a" * 26 + "A" * 26 + "0" * 10)


def _goes_on(line: str, following: str, width: int) -> bool:
    """`following` continues `line`, which a terminal cut at `width`."""
    line = line.rstrip("\r")
    return (
        len(line) == width
        and not line.endswith("  ")  # (the spaces that pad a line to the width: rich's; one is a cut after a word)
        and line[-1] != "."  # (a sentence that ends at the width: a record's end, as often as not)
        and bool(following.strip())
        and not _NEW_RECORD.match(following)
        and following[:4].translate(_SHAPE) != line[:4].translate(_SHAPE)
    )


def wrapping(head) -> int | None:
    """The width a terminal wrapped the log's first MiB at (two or more distinct lines of exactly that many
    characters going on in the next, not all of one start, and fewer a little shorter), or None."""
    lines = bytes(head[:_SNIFF]).decode("utf-8", "replace").split("\n")
    lengths = [len(line.rstrip("\r")) for line in lines]
    width = max(lengths, default=0)
    if width < _WIDEST:
        return None
    cut = {lines[i] for i in range(len(lines) - 1) if _goes_on(lines[i], lines[i + 1], width)}
    near = sum(1 for n in lengths if 0.9 * width <= n < width)
    starts = {line[:10] for line in cut}  # (a format's fixed-width records start alike: no cuts)
    return width if len(cut) >= 2 and len(starts) >= 2 and len(cut) >= near else None


def unwrapped(chunk, width: int) -> bytes:
    """`chunk` (whole lines) with each line a terminal cut at `width` joined to the next, which goes on from it."""
    lines = bytes(chunk).decode("utf-8", "replace").split("\n")
    out = lines[:1]
    for before, line in zip(lines, lines[1:]):
        if _goes_on(before, line, width):
            out[-1] += line
        else:
            out.append(line)
    return "\n".join(out).encode("utf-8")


class NotALog(ValueError):
    """The input is not a text log (binary data, or compressed in a format read here only by name)."""


_GZIP, _BZIP2, _XZ, _ZSTD = b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd"
_HEAD = 64 << 10  # bytes of the input looked at to tell a text log from binary data


class _Prefixed:
    """A binary stream whose first bytes were already read: they come first (for a decompressor, or the reader)."""

    def __init__(self, head: bytes, rest) -> None:
        self.head, self.rest = head, rest

    def read(self, size: int = -1) -> bytes:
        if not self.head:
            return self.rest.read(size)
        if size is None or size < 0:
            out, self.head = self.head + self.rest.read(), b""
            return out
        out, self.head = self.head[:size], self.head[size:]
        return out + (self.rest.read(size - len(out)) if len(out) < size else b"")

    def readline(self, size: int = -1) -> bytes:
        if not self.head:
            return self.rest.readline(size)
        cut = self.head.find(b"\n") + 1
        if cut and (size < 0 or cut <= size):
            out, self.head = self.head[:cut], self.head[cut:]
            return out
        out, self.head = self.head, b""
        return out + self.rest.readline(size - len(out) if size >= 0 else -1)


def readable(handle, name: str = "<input>"):
    """The text of a log stream: gzip, bzip2 and xz read as they stream; NotALog for zstd (named, not read: no
    decompressor in the standard library) and for binary data (random bytes are not a log, never a device fault)."""
    head = handle.read(_HEAD)
    stream = _Prefixed(head, handle)
    if head.startswith((_GZIP, _BZIP2, _XZ)):
        opener = {_GZIP: gzip.GzipFile, _BZIP2: bz2.BZ2File, _XZ: lzma.LZMAFile}
        kind = next(magic for magic in opener if head.startswith(magic))
        decompressed = opener[kind](fileobj=stream) if kind == _GZIP else opener[kind](stream)
        try:
            head = decompressed.read(_HEAD)
        except (OSError, EOFError, lzma.LZMAError) as exc:
            raise NotALog(f"{name}: a compressed file that cannot be read ({exc})") from None
        stream = _Prefixed(head, decompressed)
    elif head.startswith(_ZSTD):
        raise NotALog(f"{name}: compressed with zstd; decompress it first (`zstd -dc {name} | grpolab diagnose -`)")
    if _binary(head):
        raise NotALog(f"{name}: not a text log (binary data)")
    return stream


def _binary(head: bytes) -> bool:
    """NUL bytes, or many control characters or undecodable bytes: not text a program logged."""
    if not head:
        return False
    if b"\x00" in head:
        return True
    sample = head[:_HEAD]
    control = sum(sample.count(bytes([c])) for c in (*range(1, 9), 11, 12, *range(14, 27), *range(28, 32)))
    bad = len(sample) - len(sample.decode("utf-8", "ignore").encode("utf-8"))
    return (control + bad) > len(sample) // 10


def excerpt(line: str, at: int) -> str:
    """An evidence line cut to MAX_LINE characters around `at` (a log line can hold a whole tensor dump)."""
    if len(line) <= MAX_LINE:
        return line
    start = max(0, min(at - MAX_LINE // 3, len(line) - MAX_LINE))
    return ("..." if start else "") + line[start : start + MAX_LINE] + ("..." if start + MAX_LINE < len(line) else "")


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
