"""The layouts the planner considers, before any rule: its search space, not a rule.

Training (Megatron): TP x CP groups stay inside a node, CP chunks hold at least MIN_CP_CHUNK tokens, etp is 1 or
tp, vpp is 1 or 2, ep divides the world and is at most the expert count, pipeline layouts whose stages start on
layers the model allows (GLM-5.2's shared DSA indexer); FSDP: the Ulysses group inside a node. Rollout: TP inside
a node, any dp, ep 1 or tp x dp. Each training layout is priced with each offload choice, cheapest first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterable

from grpolab.recipe import pplayout
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.layout import RolloutLayout, TrainLayout, train_of
from grpolab.recipe.memory import max_sequence
from grpolab.recipe.schema import Recipe
from grpolab.rules.maths import allowed_starts, divisors

MIN_CP_CHUNK = 2048  # CP splits a sequence into chunks of at least this many tokens
OFFLOADS = ((False, False), (False, True), (True, True))  # (param_offload, optimizer_offload), cheapest first


def _balanced(layers: int, stages: int, allowed: Collection[int]) -> str | None:
    """Stage boundaries at the allowed start layers nearest to an even split (None when none fits)."""
    if layers < stages:
        return None
    starts, prev = [1], 1
    for i in range(1, stages):
        ideal = 1 + round(i * layers / stages)
        remaining = stages - i  # stages still to start, each needs at least one layer
        options = [s for s in range(prev + 1, layers - remaining + 2) if s in allowed]
        if not options:
            return None
        best = min(options, key=lambda s: (abs(s - ideal), s))
        starts.append(best)
        prev = best
    sizes = [b - a for a, b in zip(starts, starts[1:] + [layers + 1])]
    if any(n <= 0 for n in sizes):
        return None
    parts = [f"t*{n}" for n in sizes]
    parts[0], parts[-1] = "E" + parts[0], parts[-1] + "L"
    return "|".join(parts)


def stage_layouts(facts: ModelCard, stages: int, own: str | None) -> list[str | None]:
    """Pipeline layouts for `stages` stages: None (an even split) when the layers divide and no stage rule
    applies; else a balanced layout whose stages start on allowed layers; plus the recipe's own layout when it
    has this many stages."""
    layers = facts.num_layers
    out: list[str | None] = []
    if stages == 1:
        out.append(None)
    elif not facts.index_topk_freq:  # no shared DSA indexer: any layer may start a stage (as the rule says)
        out.append(None if layers % stages == 0 else pplayout.even_layout(layers, stages))
    else:
        generated = _balanced(layers, stages, frozenset(allowed_starts(facts)))
        if generated:
            out.append(generated)
    with contextlib.suppress(pplayout.LayoutError):
        if own and len(pplayout.parse(own)) == stages and own not in out:
            out.append(own)
    return out


def train_space(recipe: Recipe, facts: ModelCard) -> Iterable[TrainLayout]:
    """Every training layout the planner considers (before any rule), without offloads."""
    t, world, dpn = recipe.train, recipe.world_size, recipe.cluster.devices_per_node
    engine = recipe.engine
    if engine.shards_over_world:
        for sp in divisors(world):
            if sp <= dpn:
                yield TrainLayout(sp=sp, fsdp=True)
        return
    if not engine.model_parallel:
        yield train_of(recipe)
        return
    eps = [d for d in divisors(world) if d <= max(facts.num_experts, 1)]
    seq = max_sequence(recipe)
    for tp in (d for d in divisors(world) if d <= dpn):
        for cp in (d for d in divisors(world) if tp * d <= dpn and (d == 1 or seq // d >= MIN_CP_CHUNK)):
            for pp in (d for d in divisors(world) if d <= facts.num_layers):
                for vpp in (1, 2) if pp > 1 else (1,):
                    if pp * vpp > facts.num_layers:
                        continue
                    own = t.pp_layout if (t.pp, t.vpp) == (pp, vpp) else None
                    for layout in stage_layouts(facts, pp * vpp, own):
                        for ep in eps:
                            for etp in sorted({1, tp}):
                                yield TrainLayout(tp, pp, cp, ep, etp, vpp, layout, tp if t.sp else 1)


def rollout_space(recipe: Recipe) -> Iterable[RolloutLayout]:
    """Every rollout layout the planner considers (before any rule)."""
    world, dpn = recipe.world_size, recipe.cluster.devices_per_node
    for tp in (d for d in divisors(world) if d <= dpn):
        for dp in divisors(world // tp):
            for ep in sorted({1, tp * dp}):
                yield RolloutLayout(tp, dp, ep)
