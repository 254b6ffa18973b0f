"""The files a run reads and writes, as this node sees them: the model directory (config.json against the card,
the weight shards), the data files and their columns, the checkpoint directory (writable, with room for a
checkpoint or this node's share of one). Every file read here is a regular file of bounded size.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from grpolab.preflight.node.rows import FAIL, OK, SKIP, WARN, row
from grpolab.recipe.files import read_bytes

JSON_BYTES = 64 << 20  # config.json is a few KB, a shard index a few MB
WEIGHT_GLOBS = ("*.safetensors", "*.bin", "*.pt", "*.gguf")


def check_model(spec: dict) -> list[dict]:
    model = spec["model"]
    if model is None:
        return [row("model", SKIP, spec["model_skip"])]
    raw = model["path"]
    if not raw:
        return [row("model", FAIL, "model.path is empty", "set model.path to the model directory on every node")]
    path = Path(os.path.expanduser(raw))
    if not path.exists():
        if not raw.startswith(("/", "~", ".")) and raw.count("/") == 1:
            said = (
                f"{raw!r} is not a directory on this node: verl would fetch it from the Hugging Face Hub at start-up "
                "on every node"
            )
            return [row("model", WARN, said, "download it once to shared storage and set model.path to that directory")]
        fix = "copy the weights to the same path on every node (or shared storage), or set model.path"
        return [row("model", FAIL, f"model directory {raw} does not exist on this node", fix)]
    config = path / "config.json"
    if not config.is_file():
        return [row("model", FAIL, f"{raw} has no config.json", "point model.path at a Hugging Face model directory")]
    try:
        data = json.loads(read_bytes(config, JSON_BYTES))
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: not JSON, not UTF-8
        return [row("model", FAIL, f"cannot read {config}: {exc}", "fix or replace the model's config.json")]
    if not isinstance(data, dict):
        return [row("model", FAIL, f"{config} is not a JSON object", "fix or replace the model's config.json")]
    card = model.get("card_data")
    compared = _compare_card(config, data, card, model["card"]) if card else None
    return [compared or row("model.config", OK, f"{config} readable (no card to compare)"), _weights(path, raw)]


def _compare_card(config: Path, data: dict, card_data: dict, card_name: str) -> dict:
    """config.json's facts vs the card, over grpolab.recipe.cards.COMPARED (imported here: pydantic on demand)."""
    # lazy: pydantic, yaml (the per-node task loads the schema only when it compares a card)
    from grpolab.recipe.card_schema import ModelCard
    from grpolab.recipe.cards import COMPARED, facts_from_config

    card = ModelCard.model_validate(card_data)
    try:
        facts = facts_from_config(data, card, str(config))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        said = f"{config} has values grpolab cannot read: {str(exc)[:200]}"
        return row("model.config", FAIL, said, "fix or replace the model's config.json")
    wrong = [
        f"{f} {getattr(facts, f)} (card {getattr(card, f)})" for f in COMPARED if getattr(facts, f) != getattr(card, f)
    ]
    if wrong:
        fix = "point model.path at the model the card describes, or set model.card to this model's card"
        return row("model.config", FAIL, f"{config} does not match card {card_name!r}: {', '.join(wrong)}", fix)
    shown = ", ".join(f"{f} {getattr(card, f)}" for f in COMPARED)
    return row("model.config", OK, f"{config} matches card {card_name!r} ({shown})")


def _weights(path: Path, raw: str) -> dict:
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = path / index_name
        if index.is_file():
            try:
                shards = sorted(set(json.loads(read_bytes(index, JSON_BYTES)).get("weight_map", {}).values()))
                if not all(isinstance(shard, str) for shard in shards):
                    raise ValueError("weight_map's values are not file names")
            except (OSError, ValueError, RecursionError, AttributeError, TypeError) as exc:
                return row("model.weights", FAIL, f"cannot read {index}: {exc}", "re-download the model")
            missing = [s for s in shards if not (path / s).is_file()]
            if missing:
                said = f"{len(missing)} of {len(shards)} weight shards listed in {index_name} are missing"
                fix = "finish copying the weights to this node (same path on every node)"
                return row("model.weights", FAIL, f"{said} (e.g. {', '.join(missing[:3])})", fix)
            return row("model.weights", OK, f"{len(shards)} weight shard(s) present ({index_name})")
    found = [p.name for g in WEIGHT_GLOBS for p in path.glob(g)]
    if not found:
        fix = "copy the weights next to config.json (the trainer loads them even with rollout load_format dummy)"
        return row("model.weights", FAIL, f"{raw} holds no weight files ({', '.join(WEIGHT_GLOBS)})", fix)
    return row("model.weights", OK, f"{len(found)} weight file(s) present")


def check_data(spec: dict) -> list[dict]:
    data = spec["data"]
    if data is None:
        return [row("data", SKIP, spec["data_skip"])]
    rows = []
    for key, raw in data["files"]:
        path = Path(os.path.expanduser(raw))
        if not path.is_file():
            fix = (
                "prepare the dataset (verl's examples/data_preprocess/*.py write parquet) and copy it to the same "
                f"path on every node, or set {key}"
            )
            rows.append(row(key, FAIL, f"{raw} does not exist on this node", fix))
            continue
        if path.suffix != ".parquet":
            fix = "verl's RLHFDataset reads parquet; convert the file"
            rows.append(row(key, WARN, f"{raw} is not parquet: its columns were not checked", fix))
            continue
        try:
            # lazy: pyarrow (the per-node task reads parquet only when the data is parquet)
            import pyarrow.parquet as pq
        except ImportError:
            rows.append(row(key, WARN, "pyarrow is not installed here: columns not checked", "pip install pyarrow"))
            continue
        try:
            schema = pq.read_schema(str(path))
        except Exception as exc:  # pyarrow raises ArrowInvalid / OSError variants
            fix = "rewrite the file with pandas.DataFrame.to_parquet or pyarrow"
            rows.append(row(key, FAIL, f"{raw} is not a readable parquet file: {str(exc)[:200]}", fix))
            continue
        rows.append(_columns(key, raw, schema, data))
    return rows


def _columns(check: str, raw: str, schema, data: dict) -> dict:
    names = list(schema.names)
    missing = [f"{column!r} ({why})" for column, why in data["columns"] if column not in names]
    if "reward_model" in names and data.get("needs_ground_truth"):
        kind = schema.field("reward_model").type
        sub = [kind.field(i).name for i in range(getattr(kind, "num_fields", 0))]
        if sub and "ground_truth" not in sub:
            missing.append("'reward_model.ground_truth' (the rule reward compares the answer with it)")
    if missing:
        return row(
            check,
            FAIL,
            f"{raw} lacks column(s) {', '.join(missing)}; it has: {', '.join(names)}",
            "preprocess the data into verl's format (prompt as chat messages, data_source, "
            "reward_model.ground_truth), or set data.prompt_key / data.reward_fn_key in verl_overrides",
        )
    return row(check, OK, f"{raw}: columns {', '.join(names)}")


# ---------------------------------------------------------------------------------------------- disk, ports, limits


def _gb(n: float) -> str:
    return f"{n / 1e9:,.1f} GB" if n >= 1e9 else f"{n / 1e6:,.0f} MB"


def check_checkpoint(spec: dict) -> dict:
    ck = spec["checkpoint"]
    raw = ck["path"]
    target = anchor = Path(os.path.expanduser(raw))
    while not anchor.exists() and anchor != anchor.parent:
        anchor = anchor.parent
    if not anchor.is_dir():
        return row(
            "checkpoint", FAIL, f"{raw}: {anchor} is not a directory", "set trainer.ckpt_dir to a directory path"
        )
    if anchor == target:
        try:
            with tempfile.NamedTemporaryFile(dir=target, prefix=".grpolab-preflight-"):
                pass
        except OSError as exc:
            fix = "make it writable by the user that runs Ray, or set trainer.ckpt_dir"
            return row("checkpoint", FAIL, f"{raw} is not writable on this node: {exc.strerror or exc}", fix)
    elif not os.access(anchor, os.W_OK | os.X_OK):
        fix = "create the directory (writable by the Ray user) on every node, or set trainer.ckpt_dir"
        return row("checkpoint", FAIL, f"{raw} does not exist and {anchor} is not writable: it cannot be created", fix)
    where = raw if anchor == target else f"{raw} (created at launch under {anchor})"
    free = shutil.disk_usage(anchor).free
    need, share = ck["bytes"], ck["bytes"] / max(spec["nnodes"], 1)
    size = f"a checkpoint needs about {_gb(need)} ({ck['estimate']})"
    if free < share:
        part = f", this node's 1/{spec['nnodes']} share {_gb(share)}" if spec["nnodes"] > 1 else ""
        fix = "free space, or set trainer.ckpt_dir to a larger (shared) filesystem"
        return row("checkpoint", FAIL, f"{where}: {_gb(free)} free; {size}{part}", fix)
    if free < need:
        said = (
            f"{where}: {_gb(free)} free; {size}: enough only if this disk holds just this node's shard (a disk of "
            "its own, not shared storage)"
        )
        return row(
            "checkpoint", WARN, said, "use a filesystem with room for a whole checkpoint if it is shared between nodes"
        )
    return row("checkpoint", OK, f"{where}: writable, {_gb(free)} free; {size}")
