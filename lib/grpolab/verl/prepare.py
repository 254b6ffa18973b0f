"""`grpolab data prepare`: a local jsonl, json, csv or parquet file, or a `datasets` folder saved with
save_to_disk, -> verl's parquet layout, the way verl's examples/data_preprocess scripts write GSM8K and MATH:

    data_source: str                 the name verl's built-in reward dispatches on (or your reward reads)
    prompt: [{role: user, content}]  the question in the template, as chat messages
    ability: str
    reward_model: {style: rule, ground_truth: str}
    extra_info: {split: str, index: int}

The input is streamed in batches (pyarrow: parquet batches, csv blocks, jsonl lines, arrow record batches) and
written with one ParquetWriter, so a large file never sits in memory; progress goes to `progress` (stderr from the
CLI) about every second. Presets (params/data_presets.yaml) carry the columns, template and answer extraction of
verl's GSM8K, MATH and DAPO scripts. Nothing is downloaded.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from grpolab.paths import params_dir
from grpolab.problems import InputError

BATCH = 4096
_GSM8K = re.compile(r"#### (\-?[0-9\.\,]+)")  # verl's gsm8k.py extract_solution


@lru_cache(maxsize=1)
def presets() -> dict[str, dict]:
    # lazy: yaml (only `grpolab data prepare` reads its presets)
    from grpolab.recipe.yamlio import load_yaml

    return load_yaml(params_dir() / "data_presets.yaml", "data presets")


@dataclass
class Prepared:
    """What was written: per split the file and its rows, and rows left out (with why)."""

    files: dict[str, str] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    skipped_why: list[str] = field(default_factory=list)  # the first few
    data_source: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def _last_boxed(text: str) -> str | None:
    start = text.rfind("\\boxed")
    if start < 0:
        return None
    i = text.find("{", start)
    if i < 0:
        return None
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i + 1 : j]
    return None


def _extract(how: str) -> Callable[[Any], str | None]:
    if how == "gsm8k":
        return lambda a: (lambda m: m[-1].replace(",", "") if m else None)(_GSM8K.findall(str(a)))
    if how == "boxed":
        return lambda a: _last_boxed(str(a))
    if how == "as_is":
        return (
            lambda a: None
            if a is None
            else (a if isinstance(a, str) else json.dumps(a) if isinstance(a, (dict, list)) else str(a))
        )
    raise InputError(f"unknown answer extraction {how!r}: as_is, gsm8k or boxed")


def _batches(source: Path) -> Iterator[tuple[str, list[dict]]]:
    """(split, rows) batches of the source; a datasets folder may hold several splits."""
    # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
    import pyarrow as pa

    if source.is_dir():
        splits = (
            json.loads((source / "dataset_dict.json").read_text())["splits"]
            if (source / "dataset_dict.json").is_file()
            else None
        )
        folders = [(s, source / s) for s in splits] if splits else [("", source)]
        for split, folder in folders:
            state = folder / "state.json"
            if not state.is_file():
                raise InputError(f"{folder} is not a `datasets` folder saved with save_to_disk (no state.json)")
            for item in json.loads(state.read_text())["_data_files"]:
                with pa.memory_map(str(folder / item["filename"])) as handle:
                    for batch in pa.ipc.open_stream(handle):
                        yield split, batch.to_pylist()
        return
    suffix = source.suffix.lower()
    if suffix == ".parquet":
        # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
        import pyarrow.parquet as pq

        with pq.ParquetFile(source) as handle:
            for batch in handle.iter_batches(batch_size=BATCH):
                yield "", batch.to_pylist()
    elif suffix == ".csv":
        # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
        from pyarrow import csv

        for batch in csv.open_csv(source):
            yield "", batch.to_pylist()
    elif suffix in (".jsonl", ".json"):
        with open(source, encoding="utf-8") as handle:
            first = handle.read(1)
            while first.isspace():
                first = handle.read(1)
            handle.seek(0)
            if first == "[":
                rows = json.load(handle)
                for i in range(0, len(rows), BATCH):
                    yield "", rows[i : i + BATCH]
                return
            rows = []
            for line in handle:
                if line.strip():
                    rows.append(json.loads(line))
                if len(rows) >= BATCH:
                    yield "", rows
                    rows = []
            if rows:
                yield "", rows
    else:
        raise InputError(
            f"{source}: prepare reads .jsonl, .json, .csv, .parquet or a `datasets` folder, not {suffix!r}"
        )


def _total(source: Path) -> int | None:
    if source.suffix.lower() == ".parquet":
        # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
        import pyarrow.parquet as pq

        return pq.ParquetFile(source).metadata.num_rows
    return None


def prepare(
    source: str | Path,
    out_dir: str | Path,
    *,
    preset: str | None = None,
    question: str | None = None,
    answer: str | None = None,
    data_source: str | None = None,
    ability: str | None = None,
    template: str | None = None,
    extract: str | None = None,
    split: str = "train",
    progress: Callable[[str], None] | None = None,
) -> Prepared:
    """Write <out_dir>/<split>.parquet (one per split of a datasets folder) in verl's layout."""
    # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = Path(source).expanduser()
    if not src.exists():
        raise InputError(f"{source}: no such file or folder")
    if preset and preset not in presets():
        raise InputError(f"no preset {preset!r}: {', '.join(presets())}")
    base = dict(presets()[preset]) if preset else {}
    q = question or base.get("question") or "question"
    a = answer or base.get("answer") or "answer"
    ds = data_source or base.get("data_source")
    if not ds:
        raise InputError("give --data-source (the name the reward reads; verl's built-in ones: see `grpolab check`)")
    tpl = template or base.get("template") or "{question}"
    if "{question}" not in tpl:
        raise InputError(f"the template {tpl!r} has no {{question}}")
    get_answer = _extract(extract or base.get("extract") or "as_is")
    out = Path(out_dir).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    done = Prepared(data_source=ds)
    writers: dict[str, Any] = {}
    index: dict[str, int] = {}
    start = last = time.monotonic()
    total = _total(src) if src.is_file() else None
    seen = 0
    try:
        for part, rows in _batches(src):
            name = part or split
            records = []
            for row in rows:
                seen += 1
                if q not in row or a not in row:
                    missing = [c for c in (q, a) if c not in row]
                    _skip(done, f"row {seen - 1}: no column {', '.join(map(repr, missing))} (it has {', '.join(row)})")
                    continue
                truth = get_answer(row[a])
                if truth is None or row[q] is None:
                    _skip(done, f"row {seen - 1}: no answer found in {a!r} ({str(row[a])[:60]!r})")
                    continue
                i = index.get(name, 0)
                index[name] = i + 1
                prompt = row[q] if _is_messages(row[q]) else [{"role": "user", "content": tpl.format(question=row[q])}]
                records.append(
                    {
                        "data_source": ds,
                        "prompt": prompt,
                        "ability": ability or base.get("ability") or "general",
                        "reward_model": {"style": "rule", "ground_truth": str(truth)},
                        "extra_info": {"split": name, "index": i},
                    }
                )
            if records:
                table = pa.Table.from_pylist(records)
                if name not in writers:
                    path = out / f"{name}.parquet"
                    writers[name] = pq.ParquetWriter(str(path), table.schema)
                    done.files[name] = str(path)
                writers[name].write_table(table)
                done.rows[name] = index[name]
            now = time.monotonic()
            if progress and now - last >= 1.0:
                last = now
                of = f"/{total:,} ({100 * seen / total:.0f} %)" if total else ""
                progress(f"prepare: {seen:,}{of} rows read, {sum(done.rows.values()):,} written")
    finally:
        for w in writers.values():
            w.close()
    done.seconds = time.monotonic() - start
    if not done.files:
        raise InputError(
            f"{source}: no row had both {q!r} and {a!r} with an answer; "
            + (done.skipped_why[0] if done.skipped_why else "it is empty")
            + " (give --question / --answer for its columns)"
        )
    return done


def _is_messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) and "role" in m for m in value)


def _skip(done: Prepared, why: str) -> None:
    done.skipped += 1
    if len(done.skipped_why) < 5:
        done.skipped_why.append(why)
