"""Every cross-field rule over a schema-valid recipe, in one pass: `validate` (all of them) and `layout_problems`
(only the families a parallel layout can break, for the planner's screening).

Pure Python (no torch, ray or verl import), milliseconds, collects every problem. The rules live in one module
per family (those imported below) and report through one collector (grpolab.rules.checks); their ids, severities
and docs are grpolab.rules.registry's. The one verdict that every front end asks is grpolab.rules.gate's.
"""

from __future__ import annotations

from grpolab.problems import Problem
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.cards import model_facts
from grpolab.recipe.engines import unknown_layout
from grpolab.recipe.schema import Recipe
from grpolab.rules import (
    backends,
    batch,
    card,
    checkpoint_space,
    data,
    device_memory,
    engines,
    env,
    learning_rate,
    lengths,
    linear_attention,
    overrides,
    pins,
    pipeline,
    registry,
    reward,
    rollout_layout,
    schedule,
    train_layout,
)
from grpolab.rules.checks import Checks
from grpolab.rules.overrides import megatron_fields
from grpolab.rules.verl_version import gradients_offloaded

__all__ = ["LAYOUT_FIX_RULES", "LEARNED_CHECKS", "layout_problems", "learned_problems", "megatron_fields", "validate"]

# rules whose errors the layout planner can fix: their fix also names the nearest whole valid layouts
LAYOUT_FIX_RULES = registry.layout_fix_rules()

# the checks learned from real failures (issue 13; each cites its report in grpolab.rules.registry), in the order
# they report, each with whether it was learned from verl's launches: those do not apply to the in-process TRL engine,
# which has no verl launch for them to check
VERL, ANY = True, False
LEARNED_CHECKS = (
    (rollout_layout.rollout_node, VERL),
    (batch.dispatch_chunk, VERL),
    (batch.vpp_microbatches, VERL),
    (batch.dynamic_batch, VERL),
    (lengths.seq_padding, ANY),
    (linear_attention.linear_attention, VERL),
    (pipeline.dsa_stages, VERL),
    (device_memory.weight_bucket, VERL),
    (engines.router_replay, VERL),
    (backends.rollout_backend, VERL),
    (overrides.deprecated_keys, VERL),
    (env.startup_timeout, ANY),
    (pins.known_bad, ANY),
)


# the learned checks that reason about the training engine's layout (registry: engine_layout): skipped, and said so
# by rule engine-layout, where that layout is unknown (verl's veomni, fsdp_turbo)
LAYOUT_BOUND = (batch.vpp_microbatches, batch.dynamic_batch, lengths.seq_padding)


# the learned checks of the train batch: skipped where the entry point takes its own (batch.own_batch says so)
BATCH_BOUND = (batch.dispatch_chunk, batch.vpp_microbatches)


def learned(c: Checks) -> None:
    """The learned checks that apply to the recipe's engine."""
    layout_known = unknown_layout(c.r.train) is None
    own_batch = c.r.data.train_batch_size == 0
    for check, verl_only in LEARNED_CHECKS:
        if (c.r.engine.verl or not verl_only) and (layout_known or check not in LAYOUT_BOUND):
            if not (own_batch and check in BATCH_BOUND):
                check(c)


def parallel_layout(c: Checks) -> None:
    """The trainer's layout (and its pipeline split), then the rollout's."""
    engine = c.r.engine
    if unknown_layout(c.r.train) is not None:
        pass  # rule engine-layout says so
    elif engine.model_parallel:
        train_layout.megatron(c)
        pipeline.layers(c)
    elif engine.shards_over_world:
        train_layout.fsdp(c)
    if engine.verl:
        rollout_layout.rollout(c)


def validate(recipe: Recipe, grad_offload_supported: bool = True) -> list[Problem]:
    """Every cross-field rule over a schema-valid recipe. Pure, fast, collects every problem."""
    facts, problems = model_facts(recipe)
    c = Checks(recipe, facts)
    if not problems:
        card.missing_card(c)
    layout_unknown = engines.engine_layout(c)
    parallel_layout(c)
    batch.batches(c)
    lengths.lengths(c)
    learning_rate.learning_rate(c)
    engines.engines(c)
    schedule.schedule(c)
    overrides.unknown_keys(c)
    env.env(c)
    pins.pins(c)
    if not layout_unknown:
        device_memory.memory(c, grad_offload_supported)
    checkpoint_space.checkpoints(c)
    reward.reward(c)
    data.data(c)
    learned(c)
    return problems + c.problems + recipe.load_notes


def layout_problems(recipe: Recipe, facts: ModelCard | None) -> list[Problem]:
    """Only the rule families a parallel layout can break (megatron/fsdp, rollout, batches, memory), given facts.

    The layout planner screens thousands of candidate layouts with these; the layouts it lists then pass
    `validate` (every rule) as well."""
    c = Checks(recipe, facts)
    parallel_layout(c)
    batch.batches(c)
    device_memory.memory(c, gradients_offloaded())  # as check counts them: the version table's answer
    return c.problems


def learned_problems(recipe: Recipe, facts: ModelCard | None) -> list[Problem]:
    """Only the checks learned from the field, given facts (the planner's verdict on a whole layout adds them to
    `layout_problems`)."""
    c = Checks(recipe, facts)
    learned(c)
    return c.problems
