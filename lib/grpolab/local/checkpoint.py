"""The local trainer's checkpoints, in verl's layout: CKPT_DIR/global_step_N/ and latest_checkpointed_iteration.txt.

TRL writes a checkpoint as CKPT_DIR/checkpoint-<optimizer update> (model.safetensors, optimizer.pt, scheduler.pt,
rng_state.pth, trainer_state.json, ...: everything transformers' Trainer needs to resume exactly). Once TRL has
finished writing it (its on_save event), `publish` renames it to global_step_<GRPO step>: one rename, so no reader
ever sees a half-written folder under that name. It then writes grpolab_checkpoint.json (the step, its size, the
seconds the save took, the KL reference model it needs) and last the tracker, as verl writes its tracker after
every rank has saved. A folder is complete when the marker and every file in REQUIRED are there.

Pure Python: no torch import (grpolab.jobs.checkpoints reads these folders on the launcher).
"""

from __future__ import annotations

import json
import os
from contextlib import suppress
from pathlib import Path
from typing import Any

from grpolab import owned
from grpolab.recipe.files import atomic_write, json_object

TRACKER = "latest_checkpointed_iteration.txt"  # verl's name for the step of the newest complete checkpoint
STEP_PREFIX = "global_step_"  # verl's folder name: global_step_<N>
MARKER = "grpolab_checkpoint.json"
# what a trainer's save puts in CKPT/global_step_N (verl: actor/, critic/, data.pt; this trainer: its marker): a
# folder holding one is a checkpoint, that a run may prune (grpolab.owned's proof) and that export never writes in
SAVED = ("actor", "critic", "data.pt", MARKER)
# what transformers' Trainer writes for an exact resume (save_only_model=False) and what transformers loads back
REQUIRED = ("config.json", "model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json")


def step_dir(root: Path, step: int) -> Path:
    return Path(root) / f"{STEP_PREFIX}{step}"


def folder_size(path: Path) -> int:
    """Bytes of every file under path."""
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            with suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def publish(trl_dir: Path, step: int, seconds: float, reference: Path) -> Path:
    """Rename TRL's finished checkpoint folder to global_step_<step>, write its marker, then the tracker."""
    trl_dir = Path(trl_dir)
    target = step_dir(trl_dir.parent, step)
    owned.move(trl_dir, target)
    marker = {
        "step": step,
        "bytes": folder_size(target),
        "seconds": round(seconds, 3),
        # the KL reference (the warmed-up model) a resume needs, relative to this folder
        "reference": os.path.relpath(Path(reference).resolve(), target.resolve()),
    }
    atomic_write(target / MARKER, json.dumps(marker, indent=2) + "\n")
    atomic_write(target.parent / TRACKER, str(step))
    return target


def read_marker(folder: Path) -> dict[str, Any]:
    """The folder's grpolab_checkpoint.json ({} when missing or unreadable)."""
    return json_object(Path(folder) / MARKER)


def missing_files(folder: Path) -> list[str]:
    """The files a complete checkpoint has and this folder lacks (the marker first: it is written last)."""
    folder = Path(folder)
    return [name for name in (MARKER, *REQUIRED) if not (folder / name).is_file()]


def reference_dir(folder: Path) -> Path:
    """The KL reference model a checkpoint was trained against (its marker says where)."""
    rel = read_marker(folder).get("reference")
    if not rel:
        raise ValueError(f"{folder} has no {MARKER} naming its reference model: not a complete tiny checkpoint")
    return (Path(folder) / rel).resolve()
