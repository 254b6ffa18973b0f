"""A bounded sample of a recipe's data files, read the way verl reads them (parquet, json, jsonl).

verl's RLHFDataset loads whole files with `datasets`; before a launch only the first `data.sample_rows` rows are
read (pyarrow's batch reader for parquet: the row groups after the first batch are never touched; the first lines
of a jsonl), so a 1 GB file costs what its first rows cost (benchmarks/data_sample.py). `grpolab data` also reads
rows from across each file (`spread`): evenly spaced rows and the last ones of a parquet (the columns verl's
dataset and reward manager read, from at most SPREAD_GROUPS row groups), of a json array, and of a jsonl, whose
every line is parsed on the way (for at most SCAN_S), so a line verl's loader stops at is found wherever it is.
The checks over a sample are grpolab.rules.data's; `grpolab data` shows it.

Only regular files are opened (a FIFO or a link to /dev/zero is named, never read), a jsonl line is read up to
MAX_LINE bytes, a UTF-8 byte-order mark is read as `datasets` reads it (skipped), and JSON nested past what
Python's reader takes is named by its line.
"""

from __future__ import annotations

import bisect
import json
import os
import random
import stat
import time
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from grpolab.paths import recipe_relative

# the suffixes verl 0.9.1's RLHFDataset reads (utils/dataset/rl_dataset.py: parquet, json, jsonl; else ValueError)
FORMATS = {".parquet": "parquet", ".json": "json", ".jsonl": "jsonl"}
JSON_ARRAY_LIMIT = 256 * 2**20  # a .json holding one array must be parsed whole: only up to this size
MAX_LINE = 64 * 2**20  # a jsonl line longer than this is named, not read
SPREAD_ROWS = 96  # rows `spread` keeps from across a file
SPREAD_GROUPS = 6  # parquet row groups `spread` opens at most
SCAN_S = 6.0  # a jsonl's lines are parsed (a parquet's ground truths read) for at most this long
GROUP_COLUMN_BYTES = 64 * 2**20  # `spread` reads a column of a row group only up to this size (uncompressed)
SCAN_COLUMN_BYTES = 256 * 2**20  # a row group's reward_model column read for its null ground truths up to this
# the columns `spread` reads from a parquet: what verl's dataset and reward managers read (and the prompt key)
SPREAD_COLUMNS = ("data_source", "reward_model", "extra_info", "images", "videos", "agent_name")


@dataclass
class Sample:
    """The first rows of one data file, or why they could not be read."""

    key: str  # the recipe key that names the file (data.train_files / data.val_files)
    file: str  # as the recipe writes it
    path: str  # expanded
    format: str = ""
    here: bool = False  # the file is on this machine
    rows: list[dict[str, Any]] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    total: int | None = None  # rows in the whole file, when its metadata says (parquet)
    error: str = ""  # unreadable: why


@dataclass
class Spread:
    """Rows from across a file: (where, row) pairs; how much of it was looked at; the first line verl stops at."""

    rows: list[tuple[str, dict]] = field(default_factory=list)
    total: int | None = None  # rows (or lines) in the file, when all of it was seen
    looked: str = ""  # what was read, in words
    error: str = ""  # a line or row verl's loader fails on
    # over every row looked at (a parquet's whole column, a jsonl's scanned lines): (how many, the first few)
    null_truth: tuple[int, list[str]] = (0, [])  # reward_model.ground_truth null
    text_extra: tuple[int, list[str]] = (0, [])  # extra_info a string, not a mapping


def data_files(recipe: Any) -> list[tuple[str, str]]:
    """(recipe key, file) of every train and val file the recipe names."""
    values = {key: getattr(recipe.data, key.split(".")[1]) for key in ("data.train_files", "data.val_files")}
    return [(key, f) for key, value in values.items() for f in ([value] if isinstance(value, str) else list(value))]


def samples(recipe: Any, rows: int | None = None) -> list[Sample]:
    """A sample of every data file of the recipe (the files not on this machine: `here` False, no rows)."""
    n = rows or recipe.data.sample_rows
    # an empty name (verl's examples pass `data.val_files=['']`) names no file: it is not resolved to a folder
    return [
        sample(key, f, n, str(recipe_relative(f, recipe.origin(key))) if f else None) for key, f in data_files(recipe)
    ]


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):  # fmt: skip
        if test(mode):
            return name
    return "not a regular file"


def sample(key: str, file: str, rows: int, path: str | None = None) -> Sample:
    """The first `rows` rows of `file` as the recipe writes it, read at `path` (grpolab.paths.recipe_relative; None:
    the file as written)."""
    path = path or os.path.expanduser(file)
    fmt = FORMATS.get(Path(path).suffix.lower(), "")
    try:
        st = os.stat(path)
    except OSError:
        return Sample(key, file, path, fmt)
    if not fmt:
        return Sample(key, file, path, fmt, here=True)
    if not stat.S_ISREG(st.st_mode):
        shown = f" (it links to {os.path.realpath(path)})" if os.path.islink(path) else ""
        why = f"{_kind(st.st_mode)}{shown}, not a file of rows: verl's loader would read it forever or fail"
        return Sample(key, file, path, fmt, True, error=why)
    got = _read(path, fmt, rows, st.st_mtime_ns, st.st_size)
    return Sample(key, file, path, fmt, True, *got)


def open_regular(path: str, binary: bool = True):
    """The file opened for reading only when it is a regular file (a FIFO is never waited on); OSError else."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(f"{path} is {_kind(mode)}, not a file of rows")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


@lru_cache(maxsize=32)
def _read(path: str, fmt: str, rows: int, mtime: int, size: int) -> tuple[list, list, int | None, str]:
    """(rows, columns, total rows or None, error); cached by the file's mtime and size (check, then data)."""
    try:
        if fmt == "parquet":
            return _parquet(path, rows)
        return _json(path, fmt, rows, size)
    except MemoryError:
        return [], [], None, "too large to read here (MemoryError)"
    except Exception as exc:  # a corrupt file, bad JSON, a permission error: the check names it
        return [], [], None, f"{type(exc).__name__}: {str(exc)[:300]}"


def _parquet(path: str, rows: int) -> tuple[list, list, int | None, str]:
    # lazy: pyarrow (only a parquet data file needs it)
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as handle:
        names = list(handle.schema_arrow.names)
        total = handle.metadata.num_rows
        groups, covered = [], 0  # only the row groups that hold the first `rows` rows are opened
        for i in range(handle.metadata.num_row_groups):
            if covered >= rows:
                break
            groups.append(i)
            covered += handle.metadata.row_group(i).num_rows
        # a file of very many columns: only those verl's dataset and reward read (the names are all listed)
        columns = None if len(names) <= 1000 else [c for c in names if c in SPREAD_COLUMNS or c == "prompt"]
        batch = next(handle.iter_batches(batch_size=rows, row_groups=groups, columns=columns, use_threads=False), None)
        data = batch.to_pylist()[:rows] if batch is not None else []
    return data, names, total, ""


def parse_line(line: bytes, number: int) -> tuple[Any, str]:
    """(the JSON value of one jsonl line, "") or (None, why it is not one), naming the line."""
    if number == 1 and line.startswith(b"\xef\xbb\xbf"):
        line = line[3:]  # a byte-order mark: `datasets` reads past it
    try:
        return json.loads(line), ""
    except RecursionError:
        return None, f"line {number:,} nests deeper than JSON readers go (Python's stops near 1,000 levels)"
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"line {number:,} is not JSON: {getattr(exc, 'msg', str(exc))[:120]}"


def lines(handle, limit: int | None = None):
    """(line number, the line's bytes or None when it is longer than `limit`, MAX_LINE by default) of a binary
    file; a long line is skipped in pieces, never held whole."""
    limit = limit or MAX_LINE
    number = 0
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = handle.readline(1 << 20)
            yield number, None
            continue
        yield number, line


def _json(path: str, fmt: str, rows: int, size: int) -> tuple[list, list, int | None, str]:
    data: list = []
    with open_regular(path) as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf").lstrip()
        handle.seek(0)
        if head.startswith(b"["):  # one JSON array (datasets reads it too)
            if size > JSON_ARRAY_LIMIT:
                why = f"a JSON array of {size / 2**20:.0f} MiB: write it as JSON lines (.jsonl) to sample it"
                return [], [], None, why
            whole, why = _array(handle)
            if why:
                return [], [], None, why
            data, total = whole[:rows], len(whole)
        else:
            total = None
            for number, line in lines(handle):
                if line is None:
                    return data, _columns(data), None, f"line {number:,} is over {_size(MAX_LINE)}: not read"
                if not line.strip():
                    continue
                value, why = parse_line(line, number)
                if why:
                    return data, _columns(data), None, why
                data.append(value)
                if len(data) >= rows:
                    break
    bad = next((i for i, row in enumerate(data) if not isinstance(row, dict)), None)
    if bad is not None:
        return [], [], total, f"row {bad} is a {type(data[bad]).__name__}, not an object of columns"
    return data, _columns(data), total, ""


def _array(handle) -> tuple[list, str]:
    text = handle.read()
    try:
        value = json.loads(text.decode("utf-8-sig"))
    except RecursionError:
        return [], "it nests deeper than JSON readers go (Python's stops near 1,000 levels)"
    except (ValueError, UnicodeDecodeError) as exc:
        return [], f"not JSON: {getattr(exc, 'msg', str(exc))[:120]}"
    if not isinstance(value, list):
        return [], f"a JSON {type(value).__name__}, not an array of rows"
    return value, ""


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def _columns(rows: list) -> list[str]:
    return list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row))


# ------------------------------------------------------------------------------------------------- across the file


def spread(s: Sample, prompt_key: str, want: int = SPREAD_ROWS) -> Spread:
    """Rows from across the file of a readable sample (`grpolab data`, not check: it may read the whole file)."""
    if not s.here or s.error or not s.format:
        return Spread()
    try:
        st = os.stat(s.path)
        return _spread(s.path, s.format, prompt_key, want, st.st_mtime_ns, st.st_size)
    except (OSError, MemoryError) as exc:
        return Spread(error=f"{type(exc).__name__}: {str(exc)[:200]}")


@lru_cache(maxsize=8)
def _spread(path: str, fmt: str, prompt_key: str, want: int, mtime: int, size: int) -> Spread:
    try:
        if fmt == "parquet":
            return _spread_parquet(path, prompt_key, want)
        with open_regular(path) as handle:
            head = handle.read(4096).lstrip(b"\xef\xbb\xbf").lstrip()
            handle.seek(0)
            if head.startswith(b"["):
                if size > JSON_ARRAY_LIMIT:
                    return Spread(looked="the first rows (a JSON array too large to parse whole)")
                whole, why = _array(handle)
                picked = _even(len(whole), want)
                rows = [(f"row {i:,}", whole[i]) for i in picked if isinstance(whole[i], dict)]
                return Spread(rows, len(whole), f"all {len(whole):,} rows", why)
            return _scan_jsonl(handle)
    except Exception as exc:  # a file that changed or broke under us: named, not raised
        return Spread(error=f"{type(exc).__name__}: {str(exc)[:200]}")


def _even(total: int, want: int) -> list[int]:
    """`want` row numbers spread evenly over `total`, the last few included."""
    if total <= want:
        return list(range(total))
    last = min(8, want // 4)
    step = total / (want - last)
    return sorted({int(i * step) for i in range(want - last)} | set(range(total - last, total)))


def _spread_parquet(path: str, prompt_key: str, want: int) -> Spread:
    # lazy: pyarrow (only a parquet data file needs it)
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as handle:
        meta = handle.metadata
        names = set(handle.schema_arrow.names)
        # the prompt (the big column) only where its `<image>` placeholders are checked against the row's images
        columns = [c for c in (prompt_key, *SPREAD_COLUMNS) if c in names]
        if not names & {"images", "videos"}:
            columns = [c for c in columns if c != prompt_key]
        starts, start = [], 0
        for g in range(meta.num_row_groups):
            starts.append(start)
            start += meta.row_group(g).num_rows
        total = start
        groups = sorted({bisect.bisect_right(starts, i) - 1 for i in _even(total, SPREAD_GROUPS)}) if total else []
        per = max(1, want // max(1, len(groups)))
        rows: list[tuple[str, dict]] = []
        for g in groups:
            # a column chunk over GROUP_COLUMN_BYTES (one row group of a 1 GB file's prompts) is left out here
            sizes = _chunk_sizes(meta.row_group(g))
            read = [c for c in columns if sizes.get(c, 0) <= GROUP_COLUMN_BYTES]
            table = handle.read_row_group(g, columns=read, use_threads=False)
            for j in _even(table.num_rows, per):
                rows.append((f"row {starts[g] + j:,}", table.slice(j, 1).to_pylist()[0]))
        looked = f"{len(groups)} of {meta.num_row_groups} row groups, {len(rows)} rows of {total:,}"
        null, text = _Count(), _Count()
        schema = handle.schema_arrow
        if "reward_model" in names and not _null_truths(handle, null):
            looked += "; ground truths not all read (too large or too slow)"
        if "extra_info" in names and str(schema.field("extra_info").type) in ("string", "large_string"):
            text.n, text.where = total, ["every row (the column is text)"]
    return Spread(rows, total, looked, "", null.pair(), text.pair())


def _chunk_sizes(group) -> dict[str, int]:
    """{top-level column: its uncompressed bytes in this row group} (a nested column sums its leaves)."""
    sizes: dict[str, int] = {}
    for k in range(group.num_columns):
        chunk = group.column(k)
        top = chunk.path_in_schema.split(".")[0]
        sizes[top] = sizes.get(top, 0) + chunk.total_uncompressed_size
    return sizes


def _null_truths(handle, null: _Count) -> bool:
    """Rows whose reward_model.ground_truth is null, over the whole file (that one column, a row group at a time,
    for at most SCAN_S); False when it stopped before the end."""
    # lazy: pyarrow (only a parquet data file needs it)
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = handle.schema_arrow.field("reward_model").type
    if not pa.types.is_struct(kind) or kind.get_field_index("ground_truth") < 0:
        return True
    start, deadline = 0, time.monotonic() + SCAN_S
    for g in range(handle.metadata.num_row_groups):
        group = handle.metadata.row_group(g)
        nulls = _leaf_nulls(group, "reward_model.ground_truth")
        if nulls == 0:  # the writer's statistics say so: nothing to read
            start += group.num_rows
            continue
        if _chunk_sizes(group).get("reward_model", 0) > SCAN_COLUMN_BYTES or time.monotonic() > deadline:
            return False
        column = handle.read_row_group(g, columns=["reward_model"], use_threads=False).column(0)
        truth = pc.struct_field(column, "ground_truth")
        for i in pc.indices_nonzero(pc.is_null(truth)).to_pylist():
            null.add(f"row {start + i:,}")
        start += column.length()
    return True


def _leaf_nulls(group, path: str) -> int | None:
    """The null count of one leaf column in a row group from its statistics; None when the writer kept none."""
    for k in range(group.num_columns):
        chunk = group.column(k)
        if chunk.path_in_schema == path:
            stats = chunk.statistics
            return stats.null_count if stats is not None and stats.has_null_count else None
    return None


class _Count:
    """How many rows have a fault, and where the first few are."""

    def __init__(self) -> None:
        self.n, self.where = 0, []

    def add(self, where: str) -> None:
        self.n += 1
        if len(self.where) < 3:
            self.where.append(where)

    def pair(self) -> tuple[int, list[str]]:
        return self.n, self.where


def _scan_jsonl(handle) -> Spread:
    """Every line parsed (for at most SCAN_S): rows kept by reservoir sampling (seeded: the same rows each time;
    random, so a fault every k-th row is not missed by a stride that divides k), the last ones, and the rows with a
    null ground truth or a text extra_info counted."""
    pick = random.Random(0)
    kept: list[tuple[int, dict]] = []
    last: deque = deque(maxlen=8)
    null, text = _Count(), _Count()
    deadline = time.monotonic() + SCAN_S
    count, seen, error = 0, 0, ""
    for number, line in lines(handle):
        count = number
        if line is None:
            error = error or f"line {number:,} is over {_size(MAX_LINE)}: not read"
            continue
        if not line.strip():
            continue
        value, why = parse_line(line, number)
        if why:
            error = error or why
            continue
        if not isinstance(value, dict):
            error = error or f"line {number:,} is a {type(value).__name__}, not an object of columns"
            continue
        reward_model = value.get("reward_model")
        if isinstance(reward_model, dict) and "ground_truth" in reward_model and reward_model["ground_truth"] is None:
            null.add(f"line {number:,}")
        if isinstance(value.get("extra_info"), str):
            text.add(f"line {number:,}")
        seen += 1
        if len(kept) < SPREAD_ROWS:
            kept.append((number, value))
        elif (j := pick.randrange(seen)) < SPREAD_ROWS:
            kept[j] = (number, value)
        last.append((number, value))
        if number % 1024 == 0 and time.monotonic() > deadline:
            return _scanned(kept, last, None, f"the first {number:,} lines ({SCAN_S:g} s)", error, null, text)
    return _scanned(kept, last, count, f"all {count:,} lines", error, null, text)


def _scanned(kept, last, total, looked, error, null, text) -> Spread:
    rows = [(f"line {n:,}", v) for n, v in sorted({**dict(kept), **dict(last)}.items())]
    return Spread(rows, total, looked, error, null.pair(), text.pair())
