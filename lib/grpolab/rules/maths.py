"""The small arithmetic the rules and the planner share: divisors, nearest values, multiples near a value, the
trainer's data-parallel size and GLM-5.2's DSA stage-start rule. Written once, guarded against huge inputs.

A recipe's numbers come from a user: a typo of 10**26 must not hang `grpolab check`, so nothing here loops over
more than about a million values.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache

from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.engines import named, unknown_layout
from grpolab.recipe.schema import Train

MAX_DIVISORS_OF = 10**12  # above this no "nearest valid" list is offered: finding it would take seconds


@lru_cache(maxsize=4096)
def divisors(n: int) -> tuple[int, ...]:
    """The divisors of n in increasing order, in O(sqrt n); () when n < 1 or n is too large to factor quickly."""
    if n < 1 or n > MAX_DIVISORS_OF:
        return ()
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return tuple(sorted(set(small + [n // d for d in small])))


def nearest(value: int, candidates: Iterable[int], k: int = 3) -> list[int]:
    """The k candidates nearest to value (ties: the smaller first), in increasing order."""
    return sorted(sorted(set(candidates), key=lambda c: (abs(c - value), c))[:k])


def listed(values: Iterable[int]) -> str:
    """Values as a fix names them: `4, 8, 16`, or `none`."""
    return ", ".join(map(str, values)) or "none"


def multiples_near(value: int, step: int, k: int = 3) -> list[int]:
    """Positive multiples of step around value, enough for `nearest(value, ..., k)` to pick from."""
    base = max(1, value // step)
    return [m * step for m in range(max(1, base - k), base + k + 2)]


def train_dp(t: Train, world: int) -> int:
    """Data-parallel size of the trainer `t` over `world` devices: the world over Megatron's tp x pp x cp or FSDP's
    Ulysses group (1 for the in-process TRL engine); 0 when the layout does not divide the world or is unknown. (The cost model's
    grpolab.recipe.layout.data_parallel prices a layout the planner already screened: it floors at 1 instead.)"""
    engine = named(t.engine)
    if unknown_layout(t) is not None:
        return 0  # an engine whose layout the rules cannot reason about (rule engine-layout)
    if engine.model_parallel:
        group = t.tp * t.pp * t.cp
    elif engine.shards_over_world:
        group = t.ulysses_sp
    else:
        return 1
    return world // group if group and world % group == 0 else 0


def stage_start_allowed(facts: ModelCard, layer: int) -> bool:
    """GLM-5.2's shared DSA indexer: may a pipeline stage start on this (1-based) layer? Layers 1..offset, then
    every freq-th layer after the offset. Any layer when the model has no shared indexer."""
    if not facts.index_topk_freq:
        return True
    offset = facts.index_skip_topk_offset or 0
    return layer <= offset or (layer - offset) % facts.index_topk_freq == 0


def bad_starts(facts: ModelCard, starts: Iterable[int]) -> list[int]:
    """The stage starts the DSA rule does not allow."""
    return [s for s in starts if not stage_start_allowed(facts, s)]


def allowed_starts(facts: ModelCard) -> list[int]:
    """Every layer a stage may start on."""
    return [s for s in range(1, facts.num_layers + 1) if stage_start_allowed(facts, s)]
