"""What each node is asked to check: a validated Recipe turned into a plain dict for the per-node Ray task.

Made on the driver, so the nodes need neither params/ nor the model cards: the card travels as data.

Checkpoint size: the checkpoints kept at once, from grpolab.recipe.checkpoint_size (the layout verl writes, as
`trainer.save_contents` names it, times what trainer.keep_ckpts keeps; the one estimate `check` uses too). They are
sharded over the nodes: a node whose disk has less than the whole but at least its 1/nnodes share is a warning
(fine on disks of its own, not on shared storage); less than its share is a failure. Floor: 100 MB.
"""

from __future__ import annotations

import contextlib

from grpolab.paths import runs_dir
from grpolab.problems import InputError, RecipeError
from grpolab.recipe.cards import resolve_model
from grpolab.recipe.checkpoint_size import estimate
from grpolab.recipe.engines import FSDP
from grpolab.recipe.schema import Recipe
from grpolab.rules.env import on_nodes  # the one table of required env
from grpolab.verl.config import base_config
from grpolab.verl.versions import verl_version

CKPT_FLOOR_BYTES = 100 * 10**6
NOFILE_MIN = 32768  # docs/facts.md section 4: `ulimit -n 32768` on every NPU node


def required_env(recipe: Recipe) -> list[tuple[str, str, str]]:
    """(variable, severity if missing, why) that every node must provide (node env or recipe env)."""
    return on_nodes(recipe)


def required_packages(recipe: Recipe) -> list[tuple[str, str]]:
    """(distribution, why) that the job imports on every node, whether the recipe pins them or not."""
    engine, r, c = recipe.engine, recipe.rollout, recipe.cluster
    out = list(engine.packages)
    if not engine.verl:
        return out
    if engine.model_parallel and c.device == "npu":
        out.append(("mindspeed", "Megatron on Ascend runs through MindSpeed"))
    if r.engine == "vllm":
        out.append(("vllm", "rollout.engine vllm"))
        if c.device == "npu":
            out.append(("vllm-ascend", "rollout.engine vllm on NPUs needs the vllm-ascend plugin"))
    elif r.engine == "sglang":
        out.append(("sglang", "rollout.engine sglang"))
    return out


def _verl_data_key(recipe: Recipe, key: str, default: str) -> str:
    """A data.* key as verl will see it: the recipe's verl_overrides, else verl's own default."""
    if key in recipe.verl_overrides:
        return str(recipe.verl_overrides[key])
    try:
        config = base_config(recipe.train.engine if recipe.engine.verl else FSDP.name)
        value = (config or {}).get("data", {}).get(key.split(".", 1)[1])
        return str(value) if value else default
    except Exception:  # verl not installed or its config unreadable: verl's documented defaults
        return default


def _files(value) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def checkpoint_bytes(recipe: Recipe, card) -> tuple[int, str]:
    """The bytes of the checkpoints kept at once (grpolab.recipe.checkpoint_size: the layout, trainer.keep_ckpts)."""
    if card is None:
        return CKPT_FLOOR_BYTES, "no model card: 100 MB assumed"
    est = estimate(recipe, card)
    size = est.total_bytes if est.total_bytes is not None else est.one_bytes
    how = est.how if est.total_bytes is not None else f"one checkpoint: {est.how}"
    return max(size, CKPT_FLOOR_BYTES), how


def _rendered_verl(recipe: Recipe) -> str | None:
    """The verl version the launch is rendered for (the keys its workers read): every node must run that one."""
    return verl_version() if recipe.engine.verl else None


def node_spec(recipe: Recipe) -> dict:
    """The per-node task's input: everything it compares, as plain data."""
    card = None
    if recipe.model.card:
        with contextlib.suppress(InputError, RecipeError):  # the driver's `recipe` rows report the missing card
            card = resolve_model(recipe.model.card).card
    cpu_trainer = not recipe.engine.verl  # grpolab.local.train: a model made in code, the data read by the driver
    model = data = None
    if not cpu_trainer:
        model = {"path": recipe.model.path, "card": recipe.model.card, "card_data": card.model_dump() if card else None}
        prompt_key = _verl_data_key(recipe, "data.prompt_key", "prompt")
        reward_key = _verl_data_key(recipe, "data.reward_fn_key", "data_source")
        files = [("data.train_files", f) for f in _files(recipe.data.train_files)]
        files += [("data.val_files", f) for f in _files(recipe.data.val_files)]
        data = {
            "files": files,
            "columns": [
                (prompt_key, "verl's data.prompt_key: the chat messages to generate from"),
                (reward_key, "verl's data.reward_fn_key: picks the rule reward per sample"),
                ("reward_model", "the rule reward reads reward_model.ground_truth"),
            ],
            "needs_ground_truth": True,
        }
    size, how = checkpoint_bytes(recipe, card)
    ckpt = recipe.trainer.ckpt_dir or str(runs_dir())
    return {
        "recipe": recipe.name,
        "device": recipe.cluster.device,
        "hardware": recipe.cluster.hardware,
        "nnodes": recipe.cluster.nnodes,
        "devices_per_node": recipe.cluster.devices_per_node,
        "engine": recipe.train.engine,
        "rollout_engine": recipe.rollout.engine,
        "env": {k: str(v) for k, v in recipe.env.items()},
        "secrets": list(recipe.secrets or []),  # env names the recipe marks secret: their values are never shown
        "required_env": required_env(recipe),
        "stack": {k: str(v) for k, v in recipe.stack.items()},
        "required_packages": required_packages(recipe),
        "rendered_verl": _rendered_verl(recipe),
        "model": model,
        "model_skip": "train.engine trl builds its tiny model in code (grpolab.local.tiny): no weights to check",
        "data": data,
        "data_skip": "train.engine trl trains beside the driver: its data files are the driver's `data` row (grpolab data)",
        "checkpoint": {
            "path": ckpt,
            "bytes": size,
            "estimate": how
            if recipe.trainer.ckpt_dir
            else how + "; trainer.ckpt_dir is null: checkpoint/ inside the run directory",
        },
        "nofile_min": NOFILE_MIN,
    }
