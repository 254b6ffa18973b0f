"""A bounded sample of a recipe's data files, read the way verl reads them (parquet, json, jsonl).

verl's RLHFDataset loads whole files with `datasets`; before a launch only the first `data.sample_rows` rows are
read (pyarrow's batch reader for parquet: the row groups after the first batch are never touched; the first lines
of a jsonl), so a 1 GB file costs what its first rows cost (benchmarks/data_sample.py). The checks over a sample
are grpolab.rules.data's; `grpolab data` shows it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from grpolab.paths import recipe_relative

# the suffixes verl 0.9.1's RLHFDataset reads (utils/dataset/rl_dataset.py: parquet, json, jsonl; else ValueError)
FORMATS = {".parquet": "parquet", ".json": "json", ".jsonl": "jsonl"}
_JSON_ARRAY_LIMIT = 256 * 2**20  # a .json holding one array must be parsed whole: only up to this size


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


def sample(key: str, file: str, rows: int, path: str | None = None) -> Sample:
    """The first `rows` rows of `file` as the recipe writes it, read at `path` (grpolab.paths.recipe_relative; None:
    the file as written)."""
    path = path or os.path.expanduser(file)
    fmt = FORMATS.get(Path(path).suffix.lower(), "")
    try:
        stat = os.stat(path)
    except OSError:
        return Sample(key, file, path, fmt)
    if not fmt:
        return Sample(key, file, path, fmt, here=True)
    got = _read(path, fmt, rows, stat.st_mtime_ns, stat.st_size)
    return Sample(key, file, path, fmt, True, *got)


@lru_cache(maxsize=32)
def _read(path: str, fmt: str, rows: int, mtime: int, size: int) -> tuple[list, list, int | None, str]:
    """(rows, columns, total rows or None, error); cached by the file's mtime and size (check, then data)."""
    try:
        if fmt == "parquet":
            return _parquet(path, rows)
        return _json(path, fmt, rows, size)
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
        batch = next(handle.iter_batches(batch_size=rows, row_groups=groups, use_threads=False), None)
        data = batch.to_pylist()[:rows] if batch is not None else []
    return data, names, total, ""


def _json(path: str, fmt: str, rows: int, size: int) -> tuple[list, list, int | None, str]:
    data: list = []
    with open(path, encoding="utf-8") as handle:
        first = handle.read(1)
        while first.isspace():
            first = handle.read(1)
        if first == "[":  # one JSON array (datasets reads it too)
            if size > _JSON_ARRAY_LIMIT:
                why = f"a JSON array of {size / 2**20:.0f} MiB: write it as JSON lines (.jsonl) to sample it"
                return [], [], None, why
            handle.seek(0)
            whole = json.load(handle)
            data, total = whole[:rows], len(whole)
        else:
            handle.seek(0)
            total = None
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    data.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    return data, _columns(data), None, f"line {number} is not JSON: {exc.msg}"
                if len(data) >= rows:
                    break
    bad = next((i for i, row in enumerate(data) if not isinstance(row, dict)), None)
    if bad is not None:
        return [], [], total, f"row {bad} is a {type(data[bad]).__name__}, not an object of columns"
    return data, _columns(data), total, ""


def _columns(rows: list) -> list[str]:
    return list(dict.fromkeys(k for row in rows if isinstance(row, dict) for k in row))
