"""What verl's dataset and reward managers need of each row's values (rule data-values: a ground truth not null,
extra_info a mapping, ground truths of one type) and images (data-images: one `<image>` per image, images verl can
open, a model with a vision tower), over a file's sample and, where `grpolab data` read the whole file
(grpolab.verl.dataset.Spread), over all of it."""

from __future__ import annotations

import json
from typing import Any

from grpolab.recipe.cards import config_json
from grpolab.recipe.dotted import MISSING, get_dotted
from grpolab.rules.checks import Checks
from grpolab.verl import dataset

SOURCE = "data_source"  # the row field verl's managers pick the built-in reward by (and pass as data_source=)
TRUTH = "reward_model.ground_truth"
PREPARE = "`grpolab data prepare` writes verl's layout from a jsonl, csv, parquet or datasets folder"
IMAGE = "<image>"  # the placeholder verl's RLHFDataset replaces with the row's next image (rl_dataset.py)
# config.json keys that only a model with a vision tower has (Qwen2.5-VL, Qwen3-VL, GLM-4.5V, InternVL, LLaVA)
VISION_KEYS = ("vision_config", "vision_tower", "image_token_id", "image_token_index", "vision_start_token_id")


def _where(found: list[str], total: int) -> str:
    shown = ", ".join(found[:3]) + (", ..." if len(found) > 3 else "")
    return f"{len(found)} of {total} sample rows ({shown})"


def distinct(s: dataset.Sample, spread: dataset.Spread | None) -> list[tuple[str, Any]]:
    """The first rows and those from across the file, each row once (a short file's are the same rows)."""
    out, seen = [], set()
    for where, row in [(f"row {i:,}", r) for i, r in enumerate(s.rows)] + list(spread.rows if spread else []):
        key = json.dumps(row, sort_keys=True, default=str)[:20000]
        if key not in seen:
            seen.add(key)
            out.append((where, row))
    return out


def _found(sampled: list[str], n: int, whole: tuple[int, list[str]], spread: dataset.Spread | None) -> str:
    """Where a fault is: over the whole file when the scan counted it, else in the sample."""
    count, where = whole
    if count and spread is not None:
        of = f"{spread.total:,}" if spread.total is not None else "the"
        shown = ", ".join(where) + (", ..." if count > len(where) else "")
        return f"{count:,} of {of} rows of the file ({shown})"
    return _where(sampled, n)


def values(c: Checks, s: dataset.Sample, rows: list[tuple[str, Any]], spread: dataset.Spread | None = None) -> None:
    """What verl's dataset and managers need of every row's values (rule data-values) and images (data-images)."""
    key, n = s.key, len(rows)
    rows = [(w, r) for w, r in rows if isinstance(r, dict)]
    null = [w for w, r in rows if TRUTH.split(".")[0] in r and get_dotted(r, TRUTH, MISSING) is None]
    whole_null = spread.null_truth if spread is not None else (0, [])
    if null or whole_null[0]:
        c.add(
            "data-values",
            key,
            s.file,
            f"{s.file}: reward_model.ground_truth is null in {_found(null, n, whole_null, spread)}: the reward gets "
            "None as the answer to compare with, and those rows score nothing forever",
            f"drop those rows or give them their answer; {PREPARE}",
        )
    text = [w for w, r in rows if isinstance(r.get("extra_info"), (str, bytes))]
    other = [
        w
        for w, r in rows
        if r.get("extra_info") is not None and not isinstance(r.get("extra_info"), (dict, str, bytes))
    ]
    whole_text = spread.text_extra if spread is not None else (0, [])
    if text or other or whole_text[0]:
        kind = (
            type(next(r["extra_info"] for w, r in rows if w == other[0])).__name__
            if other and not text
            else "a JSON string"
        )
        c.add(
            "data-values",
            key,
            s.file,
            f"{s.file}: extra_info is {kind}, not a mapping, in {_found(text or other, n, whole_text, spread)}: "
            "verl's RLHFDataset calls extra_info.get('index') on every row (AttributeError) and its reward "
            "managers add keys to it",
            "store extra_info as a struct / JSON object (json.loads it before writing the file)",
        )
    kinds: dict[str, list[str]] = {}
    for w, r in rows:
        truth = get_dotted(r, TRUTH, MISSING)
        if truth not in (MISSING, None):
            kinds.setdefault(_kind_of(truth), []).append(w)
    if len(kinds) > 1:
        (most, _), *rest = sorted(kinds.items(), key=lambda kv: -len(kv[1]))
        odd, where = rest[0]
        c.add(
            "data-values",
            key,
            s.file,
            f"{s.file}: reward_model.ground_truth is a {most} in most rows but a {odd} in {_where(where, n)}: a "
            "reward comparing it with the answer's text scores those rows 0 (and datasets before 4.0 refuse a "
            "column whose type changes)",
            "write every ground truth the same way (as text, as verl's data_preprocess scripts do)",
            "warning",
        )
    _images(c, s, rows)


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "list" if isinstance(value, (list, tuple)) else type(value).__name__


def _placeholders(prompt: Any) -> int:
    if not isinstance(prompt, (list, tuple)):
        return 0
    return sum(
        m.get("content", "").count(IMAGE) for m in prompt if isinstance(m, dict) and isinstance(m.get("content"), str)
    )


def _images(c: Checks, s: dataset.Sample, rows: list[tuple[str, dict]]) -> None:
    """Rows with images: one `<image>` in the prompt per image (verl asserts it), images verl can open, and a model
    with a vision tower; `<image>` with no image: the model never sees the figure."""
    key, n, prompt_key = s.key, len(rows), c.r.data.prompt_key
    with_images = [(w, r) for w, r in rows if r.get("images")]
    mismatch = [
        (w, len(r["images"]) if isinstance(r["images"], (list, tuple)) else 1, _placeholders(r.get(prompt_key)))
        for w, r in with_images
        if not isinstance(r["images"], (list, tuple)) or len(r["images"]) != _placeholders(r.get(prompt_key))
    ]
    if mismatch:
        w, images, marks = mismatch[0]
        c.add(
            "data-images",
            key,
            s.file,
            f"{s.file}: {_where([m[0] for m in mismatch], n)} have {images} image(s) and {marks} {IMAGE!r} in the "
            f"prompt ({w}): verl's RLHFDataset puts one image at each {IMAGE!r} and asserts they match",
            f"put one {IMAGE} in the prompt's text where each image goes (geo3k's layout: the question starts with it)",
        )
    blind = [w for w, r in rows if not r.get("images") and _placeholders(r.get(prompt_key))]
    if blind:
        c.add(
            "data-images",
            key,
            s.file,
            f"{s.file}: the prompt says {IMAGE!r} but the row has no images in {_where(blind, n)}: verl leaves the "
            "placeholder as text and the model never sees the figure",
            "add the images column (a list of {bytes, path} per row) or drop the placeholder",
        )
    odd = [w for w, r in with_images for im in (r["images"] if isinstance(r["images"], (list, tuple)) else [r["images"]])
           if not (isinstance(im, str) or (isinstance(im, dict) and ("bytes" in im or "path" in im or "image" in im)))]  # fmt: skip
    if odd:
        c.add(
            "data-images",
            key,
            s.file,
            f"{s.file}: images that verl cannot open in {_where(odd, n)} (it takes a {{bytes, path}} mapping or a "
            "path; else TypeError)",
            "store each image as {'bytes': PNG or JPEG bytes, 'path': None} (what datasets' Image feature writes)",
        )
    if with_images and _multimodal(c.r.model.path) is False:
        c.add(
            "data-images",
            key,
            s.file,
            f"{s.file}: rows carry images but {c.r.model.path}'s config.json has no vision tower: verl's dataset "
            "asserts `processor is needed to process multimodal data`",
            "use a vision-language model (e.g. Qwen2.5-VL), or drop the images column",
        )


def _multimodal(path: str) -> bool | None:
    """Whether the model's config.json describes a vision tower; None when it is not on this machine."""
    found = config_json(path)
    if found is None:
        return None
    try:
        with open(found, encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError):
        return None
    return isinstance(config, dict) and any(k in config for k in VISION_KEYS)
