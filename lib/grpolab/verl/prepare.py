"""`grpolab data prepare`: a local jsonl, json, csv or parquet file, or a `datasets` folder saved with
save_to_disk, -> verl's parquet layout, the way verl's examples/data_preprocess scripts write GSM8K and MATH:

    data_source: str                 the name verl's built-in reward dispatches on (or your reward reads)
    prompt: [{role: user, content}]  the question in the template, as chat messages
    ability: str
    reward_model: {style: rule, ground_truth: str}
    extra_info: {split: str, index: int}

The input is streamed in batches (pyarrow: parquet batches of the two columns it needs, csv blocks, jsonl lines
of at most grpolab.verl.dataset.MAX_LINE bytes, arrow record batches) and written with one ParquetWriter per split
into a staging folder inside --out, so a large file never sits in memory; progress goes to `progress` (stderr from
the CLI) about every second. Presets (params/data_presets.yaml) carry the columns, template and answer extraction
of verl's GSM8K, MATH and DAPO scripts. Nothing is downloaded.

Nothing of the user's is replaced: --out may not be a link, a system folder, or a folder that holds the source
unless `force` names every file written there; a file already there is replaced only when `force` names it, and
the source never. Split names (--split, a datasets folder's dataset_dict.json) are plain names. Only regular files
are read (a FIFO is refused, never waited on). Every file is written in the staging folder first and renamed into
place only once every split is whole, so a source that fails midway (a broken line, a ragged CSV row, a value of
another type) leaves nothing behind, and says which line or row and column.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from grpolab import owned
from grpolab.paths import PathRefused, check_name, is_system_folder, params_dir
from grpolab.problems import InputError
from grpolab.verl.dataset import JSON_ARRAY_LIMIT, MAX_LINE, lines, open_regular, parse_line

BATCH = 4096
_GSM8K = re.compile(r"#### (\-?[0-9\.\,]+)")  # verl's gsm8k.py extract_solution
STAGING = ".grpolab-prepare-"  # the staging folder's prefix, inside --out
# folders of the machine's own: prepare writes into none of them, nor below them (grpolab.paths.SYSTEM_FOLDERS
# refuses only the folders themselves, since /tmp/x or /home/me/x are the user's)
MACHINE = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin", "/sys", "/usr")


@lru_cache(maxsize=1)
def presets() -> dict[str, dict]:
    # lazy: yaml (only `grpolab data prepare` reads its presets)
    from grpolab.recipe.yamlio import load_yaml

    return load_yaml(params_dir() / "data_presets.yaml", "data presets")


def _schema():
    """verl's layout as prepare writes it, one schema for every batch (a column whose values change type midway
    is named, not a pyarrow schema mismatch)."""
    # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
    import pyarrow as pa

    return pa.schema(
        [
            ("data_source", pa.string()),
            ("prompt", pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))),
            ("ability", pa.string()),
            ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
            ("extra_info", pa.struct([("split", pa.string()), ("index", pa.int64())])),
        ]
    )


@dataclass
class Prepared:
    """What was written: per split the file and its rows, and rows left out (with why)."""

    files: dict[str, str] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    skipped: int = 0
    skipped_why: list[str] = field(default_factory=list)  # the first few
    data_source: str = ""
    seconds: float = 0.0
    replaced: list[str] = field(default_factory=list)  # files --force named that were replaced

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


# ------------------------------------------------------------------------------------------------- the source


def _splits(source: Path, split: str) -> list[tuple[str, Path | None]]:
    """(split name, its folder in a datasets folder or None) of the source, every name a plain one."""
    if not source.is_dir():
        return [(check_name(split, "--split", "a split is a file name: train, test, val"), None)]
    listing = source / "dataset_dict.json"
    if not listing.is_file():
        return [(check_name(split, "--split", "a split is a file name: train, test, val"), source)]
    try:
        with open_regular(str(listing)) as fh:
            splits = json.loads(fh.read(1 << 20).decode("utf-8-sig"))["splits"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{listing}: not a datasets folder's dataset_dict.json ({exc})") from None
    if not isinstance(splits, list) or not splits:
        raise InputError(f"{listing}: its `splits` is not a list of names")
    found = []
    for name in splits:
        check_name(str(name), f"{listing}'s split", "a datasets folder's splits are folders inside it")
        folder = source / str(name)
        if not os.path.realpath(folder).startswith(os.path.realpath(source) + os.sep):
            raise PathRefused(f"{listing}'s split {name!r} is a link out of {source}; nothing is read through it")
        found.append((str(name), folder))
    return found


def _arrow_batches(folder: Path) -> Iterator[list[dict]]:
    # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
    import pyarrow as pa

    state = folder / "state.json"
    if not state.is_file():
        raise InputError(f"{folder} is not a `datasets` folder saved with save_to_disk (no state.json)")
    try:
        with open_regular(str(state)) as fh:
            files = [item["filename"] for item in json.loads(fh.read(1 << 20).decode("utf-8-sig"))["_data_files"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{state}: not a datasets state.json ({exc})") from None
    for name in files:
        check_name(str(name), f"{state}'s data file", "a datasets folder's files are inside it")
        with open_regular(str(folder / name)):
            pass  # a regular file (memory_map of a FIFO would wait)
        with pa.memory_map(str(folder / name)) as handle:
            for batch in pa.ipc.open_stream(handle):
                yield batch.to_pylist()


def _batches(source: Path, columns: tuple[str, str]) -> Iterator[list[dict]]:
    """The source's rows in batches (only `columns` of a parquet: a file of 100,000 columns costs two)."""
    suffix = source.suffix.lower()
    if suffix == ".parquet":
        # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
        import pyarrow.parquet as pq

        with open_regular(str(source)) as fh, pq.ParquetFile(fh) as handle:
            names = handle.schema_arrow.names
            wanted = [c for c in columns if c in names]
            if not wanted:
                shown = ", ".join(names[:20]) + (f", ... ({len(names) - 20:,} more)" if len(names) > 20 else "")
                raise InputError(
                    f"{source}: no column {' or '.join(map(repr, columns))} (it has {shown}); give --question / "
                    "--answer for its columns"
                )
            for batch in handle.iter_batches(batch_size=BATCH, columns=wanted):
                yield batch.to_pylist()
    elif suffix == ".csv":
        # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
        from pyarrow import csv

        with open_regular(str(source)) as fh:
            for batch in csv.open_csv(fh):
                yield batch.to_pylist()
    elif suffix in (".jsonl", ".json"):
        yield from _json_batches(source)
    else:
        raise InputError(
            f"{source}: prepare reads .jsonl, .json, .csv, .parquet or a `datasets` folder, not {suffix!r}"
        )


def _json_batches(source: Path) -> Iterator[list[dict]]:
    with open_regular(str(source)) as handle:
        head = handle.read(4096).lstrip(b"\xef\xbb\xbf").lstrip()
        handle.seek(0)
        if head.startswith(b"["):
            size = os.fstat(handle.fileno()).st_size
            if size > JSON_ARRAY_LIMIT:
                raise InputError(f"{source}: a JSON array of {size / 2**20:.0f} MiB; write it as JSON lines (.jsonl)")
            try:
                rows = json.loads(handle.read().decode("utf-8-sig"))
            except RecursionError:
                raise InputError(f"{source}: it nests deeper than JSON readers go") from None
            except (ValueError, UnicodeDecodeError) as exc:
                raise InputError(f"{source}: not JSON ({getattr(exc, 'msg', exc)})") from None
            if not isinstance(rows, list):
                raise InputError(f"{source}: a JSON {type(rows).__name__}, not an array of rows")
            for i in range(0, len(rows), BATCH):
                yield rows[i : i + BATCH]
            return
        rows = []
        for number, line in lines(handle):
            if line is None:
                raise InputError(f"{source}: line {number:,} is over {MAX_LINE >> 20} MiB; nothing was written")
            if not line.strip():
                continue
            value, why = parse_line(line, number)
            if why:
                raise InputError(f"{source}: {why}; nothing was written (fix or drop that line)")
            rows.append(value)
            if len(rows) >= BATCH:
                yield rows
                rows = []
        if rows:
            yield rows


def _total(source: Path) -> int | None:
    if source.suffix.lower() == ".parquet":
        # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
        import pyarrow.parquet as pq

        with open_regular(str(source)) as fh:
            return pq.ParquetFile(fh).metadata.num_rows
    return None


# ------------------------------------------------------------------------------------------------- where it writes


def _targets(out: Path, src: Path, names: list[str], force: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """Refuse what would replace a user's file; (the files --force lets it replace, --force names that matched
    nothing). `force` holds file names (train.parquet) or paths."""
    raw = Path(os.path.expanduser(str(out)))
    if os.path.islink(raw):
        raise PathRefused(
            f"--out {out} is a link (to {os.path.realpath(raw)}); nothing is written through it: name the folder itself"
        )
    real = os.path.realpath(raw)
    if is_system_folder(real) or any(real == m or real.startswith(m + os.sep) for m in MACHINE):
        raise PathRefused(f"--out {out}: {real} is a system folder; name a folder of your own")
    if raw.exists() and not raw.is_dir():
        raise InputError(f"--out {out} is a file, not a folder")
    forced = {os.path.basename(f.rstrip("/")) for f in force}
    files = [f"{n}.parquet" for n in names]
    src_real = os.path.realpath(src)
    for name in files:
        target = os.path.join(real, name)
        if os.path.lexists(target) and (
            os.path.realpath(target) == src_real or src_real.startswith(real + os.sep + name + os.sep)
        ):
            raise InputError(f"--out {out}: {name} is the source itself; write the prepared files to another folder")
        if os.path.lexists(target) and not os.path.isfile(target):
            raise InputError(f"--out {out}: {name} is there and is not a file; nothing is replaced")
    holds_source = src_real == real or src_real.startswith(real + os.sep)
    existing = [n for n in files if os.path.lexists(os.path.join(real, n))]
    need = files if holds_source else existing
    unnamed = [n for n in need if n not in forced]
    if unnamed:
        why = (
            f"it holds the source {src} (the prepared files would sit among your raw ones)"
            if holds_source
            else f"{', '.join(existing)} {'is' if len(existing) == 1 else 'are'} there already"
        )
        raise InputError(
            f"--out {out}: {why}; nothing was written. Write to a new folder, or name each file it may write or "
            f"replace there: {' '.join(f'--force {n}' for n in unnamed)}"
        )
    return existing, sorted(forced - set(files))


def _put(staged: Path, target: Path, replace: bool) -> None:
    """A staged file into place; over an existing file only when --force named it."""
    if replace:
        owned.replace_file(staged, target)
        return
    try:
        owned.move(staged, target)  # never over what is there: nothing is replaced
    except FileExistsError:
        raise InputError(f"{target} appeared while preparing; nothing was replaced (run it again)") from None


# ------------------------------------------------------------------------------------------------- prepare


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
    force: tuple[str, ...] = (),
    progress: Callable[[str], None] | None = None,
) -> Prepared:
    """Write <out_dir>/<split>.parquet (one per split of a datasets folder) in verl's layout."""
    src = Path(source).expanduser()
    if not src.exists():
        raise InputError(f"{source}: no such file or folder")
    if not src.is_dir():
        try:
            open_regular(str(src)).close()
        except OSError as exc:
            raise InputError(f"{source}: {exc}") from None
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
    splits = _splits(src, split)
    out = Path(os.path.expanduser(str(out_dir)))
    replacing, unused = _targets(out, src, [name for name, _ in splits], tuple(force))
    if unused:
        raise InputError(
            f"--force {', '.join(unused)}: prepare writes no such file ({', '.join(f'{n}.parquet' for n, _ in splits)})"
        )
    out.mkdir(parents=True, exist_ok=True)
    staging = owned.temp_folder(STAGING, dir=out)
    try:
        done = _write(
            src, splits, staging, q, a, ds, tpl, get_answer, ability or base.get("ability") or "general", progress
        )
        if not done.files:
            raise InputError(
                f"{source}: no row had both {q!r} and {a!r} with an answer; "
                + (done.skipped_why[0] if done.skipped_why else "it is empty")
                + " (give --question / --answer for its columns)"
            )
        for name in list(done.files):
            target = out / f"{name}.parquet"
            _put(staging / f"{name}.parquet", target, f"{name}.parquet" in replacing)
            done.files[name] = str(target)
        done.replaced = [str(out / n) for n in replacing if n[: -len(".parquet")] in done.files]
    finally:
        owned.remove_tree(staging)
    return done


def _write(src, splits, staging, q, a, ds, tpl, get_answer, ability, progress) -> Prepared:
    # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _schema()
    done = Prepared(data_source=ds)
    start = last = time.monotonic()
    total = _total(src) if src.is_file() else None
    seen = 0
    for name, folder in splits:
        writer = None
        index = 0
        batches = _arrow_batches(folder) if folder is not None else _batches(src, (q, a))
        try:
            for rows in _guarded(batches, src):
                records = []
                for row in rows:
                    seen += 1
                    if not isinstance(row, dict):
                        raise InputError(f"{src}: row {seen - 1:,} is a {type(row).__name__}, not an object of columns")
                    if q not in row or a not in row:
                        missing = [c for c in (q, a) if c not in row]
                        _skip(
                            done,
                            f"row {seen - 1}: no column {', '.join(map(repr, missing))} (it has {', '.join(list(row)[:20])})",
                        )
                        continue
                    truth = get_answer(row[a])
                    if truth is None or row[q] is None:
                        _skip(done, f"row {seen - 1}: no answer found in {a!r} ({str(row[a])[:60]!r})")
                        continue
                    prompt = (
                        row[q] if _is_messages(row[q]) else [{"role": "user", "content": tpl.format(question=row[q])}]
                    )
                    records.append(
                        {
                            "data_source": ds,
                            "prompt": prompt,
                            "ability": ability,
                            "reward_model": {"style": "rule", "ground_truth": str(truth)},
                            "extra_info": {"split": name, "index": index},
                        }
                    )
                    index += 1
                if records:
                    table = _table(pa, records, schema, src, seen - len(rows), q)
                    if writer is None:
                        writer = pq.ParquetWriter(str(staging / f"{name}.parquet"), schema)
                        done.files[name] = str(staging / f"{name}.parquet")
                    writer.write_table(table)
                    done.rows[name] = index
                now = time.monotonic()
                if progress and now - last >= 1.0:
                    last = now
                    of = f"/{total:,} ({100 * seen / total:.0f} %)" if total else ""
                    progress(f"prepare: {seen:,}{of} rows read, {sum(done.rows.values()):,} written")
        finally:
            if writer is not None:
                writer.close()
    done.seconds = time.monotonic() - start
    return done


def _guarded(batches: Iterator[list[dict]], src: Path) -> Iterator[list[dict]]:
    """The source's batches; a reader's own failure (a ragged CSV row, a corrupt file) as one line naming it."""
    # lazy: pyarrow (only `grpolab data prepare` reads and writes parquet)
    import pyarrow as pa

    try:
        yield from batches
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{src}: {str(exc).splitlines()[0][:300]}; nothing was written") from None
    except MemoryError:
        raise InputError(f"{src}: too large to read here (MemoryError); nothing was written") from None


def _table(pa, records: list[dict], schema, src: Path, first: int, q: str):
    """The batch as verl's layout; a value that does not fit it named by its row and column."""
    try:
        return pa.Table.from_pylist(records, schema=schema)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        for i, record in enumerate(records):
            for column in schema.names:
                try:
                    pa.Table.from_pylist([{column: record[column]}], schema=pa.schema([schema.field(column)]))
                except (pa.ArrowException, TypeError, ValueError) as cell:
                    where = f"the {q!r} column as messages" if column == "prompt" else column
                    raise InputError(
                        f"{src}: a row near {first + i:,} does not fit verl's layout in {where}: {str(cell)[:160]}; "
                        "nothing was written"
                    ) from None
        raise InputError(f"{src}: rows near {first:,} do not fit verl's layout: {str(exc)[:200]}") from None


def _is_messages(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(m, dict) and "role" in m for m in value)


def _skip(done: Prepared, why: str) -> None:
    done.skipped += 1
    if len(done.skipped_why) < 5:
        done.skipped_why.append(why)
