"""The field map's value transforms: how a recipe value becomes the value of its verl key (TRANSFORMS), how a key that
sets one part of a field joins it (PARTS), and how a script's spelling becomes the recipe's (IMPORTS).

The rows of grpolab.verl.fieldmap name a transform by its key here; docs/fieldmap.md prints what each does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from grpolab import run_folder
from grpolab.recipe.schema import sync_step
from grpolab.verl.rewards import DEFAULT_NAME, resolve, split_function


def _micro(value: Any, recipe: Any, run_dir: str) -> Any:
    return value or recipe.algorithm.micro_batch_size_per_device


def _ref_offload(value: Any, recipe: Any, run_dir: str) -> Any:
    return recipe.train.param_offload if value is None else value


def _vpp(value: Any, recipe: Any, run_dir: str) -> Any:
    return value if value is not None and value > 1 else None


def _logger(value: Any, recipe: Any, run_dir: str) -> Any:
    loggers = [value] if isinstance(value, str) else list(value)
    return list(dict.fromkeys([*loggers, "file"]))  # `file` writes metrics.jsonl: the monitor needs it


def _ckpt_dir(value: Any, recipe: Any, run_dir: str) -> Any:
    return value or f"{run_dir}/{run_folder.CHECKPOINT}"


def _device(value: Any, recipe: Any, run_dir: str) -> Any:
    return value


def _keep(value: Any, recipe: Any, run_dir: str) -> Any:
    # verl's rotation deletes the oldest beyond N, the best one too: with keep-best the job wrapper keeps them
    return None if recipe.trainer.keep_best_metric else value


def _reward_path(value: Any, recipe: Any, run_dir: str) -> Any:
    if not value:
        return None
    here = resolve(recipe)  # the job runs in its run directory: a file found here is passed by its full path
    return str(here) if here.is_file() else split_function(value)[0]


def _reward_name(value: Any, recipe: Any, run_dir: str) -> Any:
    return split_function(value)[1] if value else DEFAULT_NAME


def _warmup(value: Any, recipe: Any, run_dir: str) -> Any:
    # a whole number as an int: verl 0.9.0 counts warm-up batches with range() (0.9.1 also takes fractions)
    return int(value) if float(value).is_integer() else value


def _sync_step(value: Any, recipe: Any, run_dir: str) -> Any:
    # a recipe, or the importer's plain namespace of one: the fields, not the Recipe's property
    return sync_step(value, recipe.data.train_batch_size, recipe.algorithm.ppo_mini_batch_size)


def _pool_devices(value: Any, recipe: Any, run_dir: str) -> Any:
    return value or recipe.cluster.devices_per_node


# name -> (recipe value -> verl value, what it does: for docs/fieldmap.md)
TRANSFORMS: dict[str, tuple[Callable[[Any, Any, str], Any], str]] = {
    "": (lambda value, recipe, run_dir: value, "as is"),
    "micro": (_micro, "null = algorithm.micro_batch_size_per_device"),
    "ref_offload": (_ref_offload, "null = train.param_offload"),
    "vpp": (_vpp, "1 or null -> null (off)"),
    "logger": (_logger, "a name or a list; `file` is added"),
    "ckpt_dir": (_ckpt_dir, "null = <run dir>/checkpoint"),
    "device": (_device, "as is; a script's `gpu` imports as cuda"),
    "keep": (_keep, "null (verl keeps every one) when trainer.keep_best_metric is set: the job wrapper keeps them"),
    "reward_path": (
        _reward_path,
        "`path.py:name` -> path.py (its full path when the file is here); null -> null (verl's built-in reward)",
    ),
    "reward_name": (_reward_name, f"`path.py:name` -> name; `path.py` or null -> {DEFAULT_NAME}"),
    "warmup": (_warmup, "a whole number as an integer (verl 0.9.0 takes no fraction)"),
    "sync_step": (_sync_step, "null = data.train_batch_size / algorithm.ppo_mini_batch_size"),
    "pool_devices": (_pool_devices, "null = cluster.devices_per_node"),
}
# a key that sets one part of a field (path or name of reward.function): (the field's value so far, the key's
# value) -> the field's value; the importer joins a script's two keys into one field
PARTS: dict[str, Callable[[Any, Any], Any]] = {
    "reward_path": lambda old, path: (
        None if path is None else f"{path}:{split_function(old)[1]}" if old and ":" in old else str(path)
    ),
    "reward_name": lambda old, name: f"{split_function(old)[0]}:{name}" if old and name else old,
}
# verl value -> recipe value, where a script's spelling differs from the recipe's
IMPORTS: dict[str, Callable[[Any], Any]] = {
    "device": lambda value: {"gpu": "cuda"}.get(value, value),
}
