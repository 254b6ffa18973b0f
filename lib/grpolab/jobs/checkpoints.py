"""A run's checkpoints on disk: which are complete, their step, size and save time, and which to keep.

verl 0.9.1's layout (trainer/ppo/v1/trainer_base.py `_save_checkpoint`): CKPT/global_step_N/ holds actor/ (and
critic/) written by every rank, then data.pt (the dataloader's position); CKPT/latest_checkpointed_iteration.txt
names N once all of that is written. What a complete actor/ holds (verl/utils/checkpoint/):
    FSDP      model_world_size_W_rank_R.pt, optim_world_size_W_rank_R.pt, extra_state_world_size_W_rank_R.pt for
              every rank R < W (as `save_contents` names: model, optimizer, extra), fsdp_config.json and
              huggingface/config.json from rank 0
    Megatron  (layout v2) ckpt_contents.json, written by rank 0 last ("its presence signals a fully-complete save"),
              naming each content's folder: model/huggingface (mbridge's HF weights: every shard its index names),
              model/dist_ckpt, optimizer/dist_ckpt, extra/dist_ckpt (torch distributed checkpoints: a .metadata
              file naming every rank's .distcp files)
    TRL       the local trainer's own folders (the module its engine declaration names, grpolab.local.checkpoint):
              a marker plus transformers' files
A folder newer than the tracker is a save that did not finish. verl's own rotation (max_actor_ckpt_to_keep) removes
actor/ and leaves data.pt: such a folder is incomplete too.

Which of them to keep is grpolab.jobs.retention's. A trainer.ckpt_dir outside the run's folder is claimed by one
run at a time (`claim`: OWNER in it, under a lock): a second run or resume into it while its owner is live is
refused, so two trainers never save, rotate or prune in one folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import json
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from grpolab import owned, run_folder
from grpolab.local.checkpoint import STEP_PREFIX, TRACKER, folder_size
from grpolab.problems import InputError
from grpolab.recipe import files
from grpolab.recipe.checkpoint_size import human_bytes
from grpolab.recipe.dotted import get_dotted
from grpolab.recipe.engines import named

_STEP_DIR = re.compile(rf"^{STEP_PREFIX}(\d+)$")
OWNER = ".grpolab-owner.json"  # in a shared trainer.ckpt_dir: the run that saves there now
SAVE_TIME_METRIC = "timing_s/save_checkpoint"  # verl's timer around _save_checkpoint
FSDP_FILES = {"model": "model", "optimizer": "optim", "extra": "extra_state"}  # save_contents -> file prefix


@dataclass(frozen=True)
class Layout:
    """What a run's checkpoints look like: from its recipe."""

    root: Path
    engine: str  # megatron | fsdp | trl
    world_size: int
    save_contents: tuple[str, ...]


@dataclass
class Checkpoint:
    step: int
    path: Path
    complete: bool
    missing: list[str] = field(default_factory=list)  # why it is not complete
    bytes: int = 0
    seconds: float | None = None  # how long the save took (verl's timing_s/save_checkpoint, or tiny's marker)

    def to_dict(self) -> dict:
        return {**asdict(self), "path": str(self.path)}


def layout_of(recipe: Any, run_dir: Path) -> Layout:
    """The checkpoint layout of a recipe (a Recipe or the plain dict of a run's recipe.yaml)."""

    def typed(key: str, kinds: tuple, default):
        value = get_dotted(recipe, key) if isinstance(recipe, dict) or hasattr(recipe, "train") else None
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, kinds) or (isinstance(value, int) and value < 1):
            raise InputError(
                f"{run_folder.recipe_file(run_dir)}: {key} = {value!r} is not what a run records there "
                f"({' or '.join(k.__name__ for k in kinds)}); the run's record is damaged: restore it from the run's "
                "launch, or start a new run with `grpolab run RECIPE`"
            )
        return value

    ckpt_dir = typed("trainer.ckpt_dir", (str,), None)
    root = Path(ckpt_dir).expanduser() if ckpt_dir else run_folder.checkpoint_dir(run_dir)
    world = typed("cluster.nnodes", (int,), 1) * typed("cluster.devices_per_node", (int,), 1)
    contents = tuple(typed("trainer.save_contents", (list, tuple), ("model", "optimizer", "extra")))
    return Layout(root, str(typed("train.engine", (str,), "")), world, contents)


def run_recipe(run_dir: Path) -> dict:
    """A run directory's recipe.yaml as data (the run's record, whatever params/ say now), by the one YAML reader;
    InputError when it is unreadable, OSError when it is missing."""
    # lazy: yaml (only reading a run's recipe.yaml needs it; the run views load without it)
    from grpolab.recipe.yamlio import read_yaml

    path = run_folder.recipe_file(run_dir)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: the run has no recipe.yaml")
    return read_yaml(path, "run record")


def run_layout(run_dir: Path) -> Layout:
    """The layout from a run directory's recipe.yaml."""
    return layout_of(run_recipe(run_dir), run_dir)


LINE_LIMIT = 1 << 20  # a metrics line is a few KB; a longer one is not read whole
RECORD_LIMIT = 16 << 20  # a checkpoint's JSON records (configs, manifests, indexes) are KBs; never read more


def read_json(path: Path, limit: int = RECORD_LIMIT):
    """A JSON file of a checkpoint, bounded (regular files only: a FIFO is refused, never waited on); OSError or
    ValueError when it cannot be read as JSON."""

    try:
        return json.loads(files.read_text(path, limit))
    except RecursionError:
        raise ValueError(f"{path}: nested too deeply") from None


def read_tracker(root: Path) -> int | None:
    try:
        return int(files.read_text(Path(root) / TRACKER, 4096).strip())
    except (OSError, ValueError):
        return None


def _fsdp_missing(actor: Path, layout: Layout) -> list[str]:
    missing = []
    try:
        saved_by = read_json(actor / "fsdp_config.json").get("world_size")
    except (OSError, ValueError):
        saved_by = None
        missing.append("actor/fsdp_config.json")
    world = int(saved_by or layout.world_size)
    for content, prefix in FSDP_FILES.items():
        if content not in layout.save_contents:
            continue
        ranks = [r for r in range(world) if not (actor / f"{prefix}_world_size_{world}_rank_{r}.pt").is_file()]
        if ranks:
            shown = ", ".join(map(str, ranks[:8])) + (" ..." if len(ranks) > 8 else "")
            missing.append(f"actor/{prefix}_world_size_{world}_rank_R.pt of rank(s) {shown} (of {world})")
    if not (actor / "huggingface" / "config.json").is_file():
        missing.append("actor/huggingface/config.json")
    return missing


def _hf_missing(folder: Path, label: str) -> list[str]:
    """A Hugging Face weights folder: config.json and every shard its index names (or one weights file)."""
    if not (folder / "config.json").is_file():
        return [f"{label}/config.json"]
    for index in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        if (folder / index).is_file():
            try:
                shards = set(read_json(folder / index)["weight_map"].values())
            except (OSError, ValueError, KeyError, AttributeError):
                return [f"{label}/{index} (unreadable)"]
            return [f"{label}/{name}" for name in sorted(shards) if not (folder / name).is_file()]
    if any((folder / name).is_file() for name in ("model.safetensors", "pytorch_model.bin")):
        return []
    return [f"{label}/model.safetensors"]


def _dcp_missing(folder: Path, label: str, deep: bool = True) -> list[str]:
    """A torch distributed checkpoint: its .metadata (written once every rank has written) and, `deep`, the rank
    files it names (reading it imports torch: the monitor's listing skips that)."""
    meta = folder / ".metadata"
    if not meta.is_file():
        return [f"{label}/.metadata"]
    if not deep:
        return []
    try:  # the metadata is a pickle of torch classes: read it with torch when torch is here
        # lazy: torch (only a torch distributed checkpoint's deep check needs it; seconds to import)
        from torch.distributed.checkpoint import FileSystemReader
    except ImportError:
        return []
    try:
        storage = FileSystemReader(str(folder)).read_metadata().storage_data or {}
    except Exception as exc:  # noqa: BLE001 - a torn or foreign file: say so, do not crash a listing
        return [f"{label}/.metadata (unreadable: {type(exc).__name__})"]
    names = sorted({getattr(info, "relative_path", "") for info in storage.values()} - {""})
    return [f"{label}/{name}" for name in names if not (folder / name).is_file()]


def _megatron_missing(actor: Path, deep: bool = True) -> list[str]:
    try:
        manifest = read_json(actor / "ckpt_contents.json")
    except (OSError, ValueError):
        return ["actor/ckpt_contents.json (rank 0 writes it last)"]
    missing, seen = [], set()
    for entry in (manifest.get("contents") or {}).values():
        rel, kind = entry.get("path"), entry.get("format")
        if not rel or (rel, kind) in seen:
            continue
        seen.add((rel, kind))
        if kind == "huggingface":
            missing += _hf_missing(actor / rel, f"actor/{rel}")
        elif kind == "megatron_dist_checkpoint":
            missing += _dcp_missing(actor / rel, f"actor/{rel}", deep)
    return missing


def missing_files(folder: Path, layout: Layout, deep: bool = True) -> list[str]:
    """What a complete checkpoint folder has and this one lacks ([]: complete)."""
    folder, engine = Path(folder), named(layout.engine)
    if engine.checkpoints:
        return importlib.import_module(engine.checkpoints).missing_files(folder)
    actor = folder / "actor"
    if not actor.is_dir():
        return ["actor/ (removed by verl's rotation, or never written)"]
    missing = _megatron_missing(actor, deep) if engine.dist_checkpoint else _fsdp_missing(actor, layout)
    if not (folder / "data.pt").is_file():
        missing.append("data.pt (the data position, written after every rank's files)")
    return missing


def metric_by_step(run_dir: Path | None, metric: str) -> dict[int, float]:
    """A metric's value at each step the run's metrics.jsonl logged it (save times, validation scores). Streamed
    line by line (a metrics file may be GBs): only lines that name the metric are parsed; a line that is not UTF-8
    JSON, or longer than LINE_LIMIT, is skipped; a special file is refused (nothing read)."""

    path = run_folder.metrics_file(run_dir) if run_dir is not None else None
    if path is None or not path.is_file():
        return {}
    out: dict[int, float] = {}
    needle = json.dumps(metric).encode()
    try:
        with files.open_regular(path) as fh:
            while line := fh.readline(LINE_LIMIT):
                if not line.endswith(b"\n") and len(line) == LINE_LIMIT:
                    while (rest := fh.readline(LINE_LIMIT)) and not rest.endswith(b"\n"):
                        pass  # the rest of an over-long line: skipped, never held
                    continue
                if needle not in line:
                    continue
                try:
                    row = json.loads(line.decode("utf-8"))
                except (UnicodeDecodeError, ValueError, RecursionError):
                    continue
                value = (row.get("data") or {}).get(metric) if isinstance(row, dict) else None
                if isinstance(value, (int, float)) and not isinstance(value, bool) and type(row.get("step")) is int:
                    out[row["step"]] = float(value)
    except OSError:
        return {}
    return out


def scan(layout: Layout, run_dir: Path | None = None, sizes: bool = True, deep: bool = True) -> list[Checkpoint]:
    """Every global_step_N folder under the layout's root, oldest first, with whether it is complete and why not."""
    root = layout.root
    if not root.is_dir():
        return []
    tracker, engine = read_tracker(root), named(layout.engine)
    own = importlib.import_module(engine.checkpoints) if engine.checkpoints else None
    seconds = metric_by_step(run_dir, SAVE_TIME_METRIC)
    out = []
    for child in root.iterdir():
        match = _STEP_DIR.match(child.name)
        if not match or not child.is_dir():
            continue
        step = int(match.group(1))
        missing = missing_files(child, layout, deep)
        if tracker is not None and step > tracker:
            missing.append(f"{TRACKER} names step {tracker}: this save did not finish")
        elif tracker is None and not engine.dist_checkpoint:  # verl writes it after every save but async ones
            missing.append(f"no {TRACKER}: no save finished")
        marker = own.read_marker(child) if own else {}
        out.append(
            Checkpoint(
                step=step,
                path=child,
                complete=not missing,
                missing=missing,
                bytes=folder_size(child) if sizes else 0,
                seconds=marker.get("seconds", seconds.get(step)),
            )
        )
    return sorted(out, key=lambda c: c.step)


def latest_complete(checkpoints: list[Checkpoint]) -> Checkpoint | None:
    return next((c for c in reversed(checkpoints) if c.complete), None)


def listing(run_dir: Path) -> list[dict]:
    """The checkpoints of a run for the monitor: step, bytes, seconds the save took, complete or why not."""

    try:
        layout = run_layout(run_dir)
    except (OSError, ValueError, InputError):
        return []
    return [c.to_dict() for c in scan(layout, run_dir, deep=False)]


def describe(rows: list[dict]) -> str:
    """The listing as lines a person reads: `step 600  1.7 MB  0.05 s  complete`."""
    if not rows:
        return "no checkpoints"
    lines = []
    for row in rows:
        took = f"{row['seconds']:.2f} s" if row.get("seconds") is not None else "? s"
        state = "complete" if row["complete"] else "incomplete: " + "; ".join(row["missing"][:2])
        lines.append(f"step {row['step']:>7}  {human_bytes(row['bytes']):>9}  {took:>9}  {state}")
    return "\n".join(lines)


class CheckpointsBusy(ValueError):
    """Another live run saves into the same checkpoint folder; the message names it and the fix."""


def owner(root: Path) -> dict:
    """The claim on a checkpoint folder ({} when none, or unreadable)."""
    return files.json_object(Path(root) / OWNER, 1 << 16)


@contextlib.contextmanager
def claim(root: Path | None, run_dir: Path, run_id: str, live):
    """Claim a shared checkpoint folder for one run while the body creates it; CheckpointsBusy when a live run
    holds it (`live(run_dir)`: its state while it is not over, else None: grpolab.jobs.state.live_state). `root`
    None (the run's own checkpoint/ folder) or a folder not on this machine: nothing to claim."""

    root = Path(root) if root is not None else None
    if root is None or not root.parent.is_dir() or Path(run_dir) in (root, *root.parents):
        yield
        return
    root.mkdir(exist_ok=True)
    with open(root / ".grpolab-owner.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        held = owner(root)
        state = live(str(held.get("run_dir") or "")) if held.get("run_dir") != str(run_dir) else None
        if state is not None:
            raise CheckpointsBusy(
                f"trainer.ckpt_dir {root} is in use by run {held.get('run_id')} ({state}): two runs saving there "
                f"would overwrite and prune each other's checkpoints; wait for it to end (or `grpolab stop "
                f"{held.get('run_id')}`), or set trainer.ckpt_dir to a folder of this run's own"
            )
        yield
        tmp = owned.fresh_file(root / f".{OWNER}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"run_id": run_id, "run_dir": str(run_dir)}))
        owned.replace_file(tmp, root / OWNER)
