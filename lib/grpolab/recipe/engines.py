"""The training engines, each declared once: verl with Megatron, verl with FSDP, and the CPU trainer (grpolab.local).

What differs between engines is a field of its declaration; every other module asks `recipe.engine` (`engine_of` for
a run's plain recipe record) and never compares an engine's name (tests/test_engine_seam.py).
What the CPU trainer does in its own code (checking its checkpoints, scoring exported weights) lives in
grpolab.local, a layer above this one: the declaration names it `module:function`, and the caller (in jobs/, above
local) resolves it with pkgutil.resolve_name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from grpolab.recipe.dotted import get_dotted

VERL_ROLLOUTS = ("vllm", "sglang", "trtllm")
BATCH_KEYS = ("data.train_batch_size",)


@dataclass(frozen=True)
class Engine:
    name: str  # the value of train.engine
    packages: tuple[tuple[str, str], ...]  # (distribution, why) the job imports on every node
    rollouts: tuple[str, ...] = VERL_ROLLOUTS  # the rollout.engine values it generates with
    verl: bool = True  # launched as verl's trainer: rendered to verl's keys, composed against its schema, pinned
    priced: bool = True  # the cost model, the device memory estimate, the planner's layouts and the yardstick apply
    model_parallel: bool = False  # Megatron's layout: the model split over tp x pp x cp (ep x etp), vpp, pp_layout
    shards_over_world: bool = False  # FSDP: weights, gradients and optimizer state sharded over every device
    config_name: str | None = None  # verl's Hydra root config for the engine (its _generated_<name>.yaml)
    merger: str | None = None  # verl.model_merger's --backend; None: the checkpoint is a transformers model already
    dist_checkpoint: bool = False  # saves torch distributed checkpoints that ckpt_contents.json names (Megatron)
    small_files_bytes: int = 20 * 10**6  # a checkpoint's tokenizer, configs and data position
    resume_keys: tuple[str, ...] = BATCH_KEYS  # a resume may not change them: the saved data position counts batches
    entry: tuple[str, ...] = ()  # `python` argv of a trainer that is not verl's (`--run-dir RUN` follows)
    checkpoints: str | None = None  # module checking the trainer's own checkpoint folders; None: verl's layout
    export_score: str | None = None  # `module:function(recipe, folder) -> (metric, value)` re-scoring exported weights
    # `module:function(prompts) -> [tokens]` of a trainer that builds its own tokenizer (grpolab data's prompt lengths);
    # None: the model's tokenizer at model.path with its chat template, as verl counts them
    prompt_tokens: str | None = None
    model_engine: str | None = None  # verl's name of the engine (`model_engine=NAME`: dp for FSDP); None: not verl's
    layout_known: bool = True  # GRPO Lab's layout rules reason about it (Megatron's tp/pp/..., FSDP's sharding)
    strategies: tuple[str, ...] = ()  # verl's strategies of the engine those rules reason about; () = any


def _verl(name: str, *more: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return (("verl", f"train.engine {name} runs verl on every node"), ("torch", "verl runs on torch"), *more)


MEGATRON = Engine(
    name="megatron",
    packages=_verl("megatron", ("megatron-core", "train.engine megatron")),
    model_parallel=True,
    config_name="ppo_megatron_trainer",
    merger="megatron",
    dist_checkpoint=True,
    model_engine="megatron",
)
FSDP = Engine(
    name="fsdp",
    packages=_verl("fsdp"),
    shards_over_world=True,
    config_name="ppo_trainer",
    merger="fsdp",
    model_engine="dp",
    strategies=("fsdp", "fsdp2"),  # not fsdp_turbo: it shards by its own plan (fsdp_config.turbo_config)
)
TINY_MODEL = tuple(f"local.{k}" for k in ("hidden_size", "layers", "heads", "kv_heads", "intermediate_size"))
CPU_TRAINER = Engine(
    name="trl",
    packages=(
        ("trl", "train.engine trl runs TRL's GRPOTrainer"),
        ("transformers", "the CPU trainer builds its model with transformers"),
        ("torch", "the CPU trainer runs on torch"),
    ),
    rollouts=("hf",),
    verl=False,
    priced=False,  # its step time is Python overhead around a tiny model in one process: nothing to plan or price
    small_files_bytes=40 * 10**3,
    resume_keys=(*BATCH_KEYS, "algorithm.ppo_mini_batch_size", *TINY_MODEL),
    entry=("-m", "grpolab.local.train"),
    checkpoints="grpolab.local.checkpoint",
    export_score="grpolab.local.score:score_export",
    prompt_tokens="grpolab.local.tiny:prompt_tokens",
)
ENGINES = {e.name: e for e in (MEGATRON, FSDP, CPU_TRAINER)}  # the order of the schema's train.engine values
VERL_ENGINES = tuple(e for e in ENGINES.values() if e.verl)
ROLLOUTS = tuple(dict.fromkeys(r for e in ENGINES.values() for r in e.rollouts))  # the schema's rollout.engine
LOCAL_ROLLOUTS = tuple(r for e in ENGINES.values() if not e.verl for r in e.rollouts)  # generation of our own trainers


ENGINE_NAME = r"^[a-z][a-z0-9_]{0,63}$"  # a train.engine value: one declared above or one of verl's model engines


def verl_engine(name: str) -> Engine:
    """Another training engine verl registers (`model_engine=NAME`: veomni, torchtitan, ...), which GRPO Lab's rules
    know nothing of: it renders verl's keys and composes against verl's config, but its layout is not reasoned about
    (the layout rules are skipped, and check says which), nothing is priced or planned, and no checkpoint of it is
    read. Which names the checked verl registers is the version table's (grpolab.verl.versions)."""
    return Engine(
        name=name,
        packages=_verl(name),
        priced=False,
        config_name=f"ppo_{name}_trainer",
        model_engine=name,
        layout_known=False,
    )


def unknown_layout(train: Any) -> str | None:
    """Why GRPO Lab's layout rules cannot reason about a recipe's training engine (`train`: the recipe's train section
    or its dict), None when they can: an engine they know nothing of, or a strategy of FSDP other than fsdp and
    fsdp2."""
    engine = named(get_dotted(train, "engine"))
    if not engine.layout_known:
        return (
            f"train.engine {engine.name} (verl's model_engine={engine.model_engine}) lays the model out by its own "
            f"settings (actor_rollout_ref.actor.{engine.model_engine}.*), which GRPO Lab's rules do not read"
        )
    strategy = get_dotted(train, "fsdp_strategy")
    if engine.strategies and isinstance(strategy, str) and strategy not in engine.strategies:
        return (
            f"train.fsdp_strategy {strategy} shards the model by a plan of its own (in verl's "
            f"actor_rollout_ref.actor.fsdp_config), which GRPO Lab's FSDP rules ({', '.join(engine.strategies)}) do "
            "not read"
        )
    return None


def by_model_engine(name: str) -> Engine:
    """The engine verl calls `name` (its model_engine: dp is FSDP's)."""
    return next((e for e in ENGINES.values() if e.model_engine == name), None) or named(name)


def named(name: Any) -> Engine:
    """The engine a train.engine value names: a declared one, else another of verl's engines by that name; a record
    without one (or with a value that is no engine's name) reads as FSDP, verl's default worker."""
    if not isinstance(name, str):
        return FSDP
    if name in ENGINES:
        return ENGINES[name]
    return verl_engine(name) if re.fullmatch(ENGINE_NAME, name) else FSDP


def engine_of(recipe: Any) -> Engine:
    """The engine of a Recipe or of the plain dict of a run's recipe.yaml."""
    return named(get_dotted(recipe, "train.engine"))
