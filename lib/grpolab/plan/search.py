"""The layout search: every valid layout of a recipe's model on its cluster, priced by the one cost model
(grpolab.recipe.memory and grpolab.recipe.cost) and ranked.

1. Enumerate (grpolab.plan.space) training and rollout layouts.
2. Screen each with the rules a layout can break (`grpolab.rules.validate.layout_problems`, the model card read
   once), the training layout with the cheapest offload choice whose memory estimate fits, else the most.
   Rejected candidates are counted per rule id (once under each rule they break); two cheap necessary
   conditions (world divisible by tp x pp x cp and by ep x etp x pp) skip the rules for layouts that cannot
   divide the world and count under those ids.
3. Rank: training and rollout layouts are independent (their rules and costs do not mix), so the best
   combinations are the best of each; each layout listed is confirmed whole by `verdict` (the layout rules and
   the rules learned from the field, with the same card).
Why one module: enumeration, pricing and ranking share the memo that keeps `grpolab plan` under a second.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from grpolab.plan.io import load
from grpolab.plan.space import OFFLOADS, rollout_space, train_space
from grpolab.problems import InputError, Problem, RecipeError
from grpolab.recipe import cost, memory
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.cards import model_facts
from grpolab.recipe.layout import (
    ROLLOUT_KEYS,
    TRAIN_KEYS,
    RolloutLayout,
    TrainLayout,
    overrides_of,
    rollout_of,
    train_of,
    with_layout,
)
from grpolab.recipe.schema import Recipe
from grpolab.rules.card import missing_card_problem
from grpolab.rules.maths import MAX_DIVISORS_OF, divisors
from grpolab.rules.registry import layout_bound, problem_side
from grpolab.rules.validate import layout_problems, learned_problems, validate

LAYOUT_KEYS = frozenset(
    [f"train.{k}" for k in (*TRAIN_KEYS, "sp", "ulysses_sp")] + [f"rollout.{k}" for k in ROLLOUT_KEYS]
)
SEARCH_NODES = tuple(range(1, 65)) + (128, 256, 512, 1024)  # node counts smallest_cluster tries, in order


def depends_on_layout(p: Problem) -> bool:
    """Does this problem depend on the parallel layout (so that another layout may fix it)? It names a layout key,
    or its rule is one the layout decides whatever key it names (the registry's `layout_bound`: per-device
    memory, the data-parallel split of the batch)."""
    return layout_bound(p.rule) or p.key in LAYOUT_KEYS


def verdict(recipe: Recipe, facts: ModelCard) -> list[Problem]:
    """Every rule that reads a layout key, for a whole layout, with the model card already read: the rule
    families a layout can break and the rules learned from the field. (The other rules read no layout key:
    the recipe's own check found them once.)"""
    return layout_problems(recipe, facts) + learned_problems(recipe, facts)


@dataclass
class Scored:
    """A layout with its memory (GB) and time (s) estimates, each with its parts; cost None: no estimate."""

    layout: TrainLayout | RolloutLayout
    memory_gb: dict
    cost: dict | None

    @property
    def fits(self) -> bool:
        return self.memory_gb["headroom"] >= 0 and self.memory_gb.get("concurrency", 1) >= 1

    @property
    def seconds(self) -> float:
        return self.cost["total"] if self.cost else 0.0

    def key(self) -> tuple:
        return (not self.fits, self.seconds)


@dataclass
class Plan:
    """The planner's answer for one recipe: the valid layouts of each side, scored and ranked, what the rules
    rejected, and the recipe's errors that no layout fixes."""

    recipe: Recipe
    facts: ModelCard | None
    train: list[Scored] = field(default_factory=list)
    rollout: list[Scored] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)
    candidates: dict = field(default_factory=dict)
    recipe_errors: list[Problem] = field(default_factory=list)
    smallest_nodes: int | None = None
    inputs: tuple = ()  # (MODEL|RECIPE, hardware, overrides) as given, for smallest_cluster
    workload: cost.Workload | None = None

    @property
    def possible(self) -> bool:
        return bool(self.train) and bool(self.rollout)


def _screen(recipe: Recipe, facts: ModelCard, side_name: str, rejected: Counter) -> bool:
    """Do the rules of this side pass? Counts the rules that fail, once per rule id."""
    errors = {
        p.rule
        for p in layout_problems(recipe, facts)
        if p.severity == "error" and depends_on_layout(p) and problem_side(p.rule, p.key) == side_name
    }
    rejected.update(errors)
    return not errors


def _no_card(recipe: Recipe) -> list[Problem]:
    """Without the model's facts no layout can be screened or priced: check's warning that the card is missing
    (and how to add one) is, for the planner, an error no layout fixes."""
    missing = missing_card_problem(recipe)
    return [replace(missing, severity="error")] if missing else []


def score_train(recipe: Recipe, facts: ModelCard, t: TrainLayout, wl: cost.Workload) -> Scored:
    mem = memory.train_memory(recipe, facts, t)
    return Scored(t, mem, cost.train_time(recipe, facts, t, wl) if recipe.engine.priced else None)


def score_rollout(recipe: Recipe, facts: ModelCard, r: RolloutLayout, wl: cost.Workload) -> Scored:
    mem = memory.rollout_memory(recipe, facts, r)
    return Scored(r, mem, cost.rollout_time(recipe, facts, r, mem, wl))


def plan(recipe: Recipe) -> Plan:
    """Every valid training and rollout layout of a loaded recipe, scored; the recipe's layout-independent
    errors (env, stack, lengths, ...) are returned apart: no layout fixes them."""
    facts, card_problems = model_facts(recipe)
    result = Plan(recipe, facts)
    if facts is None:
        result.recipe_errors = [p for p in card_problems if p.severity == "error"] or _no_card(recipe)
        return result
    if not divisors(recipe.world_size):  # the one divisor helper gives none above its guard: say so, do not guess
        c = recipe.cluster
        raise InputError(
            f"cluster.nnodes: {c.nnodes} nodes x {c.devices_per_node} devices = {recipe.world_size} devices: the "
            f"planner enumerates layouts of clusters up to {MAX_DIVISORS_OF:,} devices; fix: set cluster.nnodes "
            "(--nodes) to the cluster's real size"
        )
    result.recipe_errors = [p for p in validate(recipe) if p.severity == "error" and not depends_on_layout(p)]
    wl = result.workload = cost.workload(recipe)
    world, engine = recipe.world_size, recipe.engine
    n_train = 0
    memo: dict[tuple, dict] = {}  # memory does not depend on vpp or the pipeline layout
    for cand in train_space(recipe, facts):
        n_train += 1
        # cheap necessary conditions of two rules, to skip copying a recipe for layouts that cannot divide
        # the world (tests/test_plan.py checks on samples that the rule itself rejects what these skip)
        if engine.model_parallel and world % (cand.tp * cand.pp * cand.cp):
            result.rejected["world-divisible"] += 1
            continue
        if engine.model_parallel and world % (cand.ep * cand.etp * cand.pp):
            result.rejected["expert-divisible"] += 1
            continue
        layout, mem = cand, None
        for p_off, o_off in OFFLOADS:  # the cheapest offload whose estimate fits, else the most
            layout = replace(cand, param_offload=p_off, optimizer_offload=o_off)
            key = (cand.tp, cand.pp, cand.cp, cand.ep, cand.etp, cand.sp, p_off, o_off)
            if key not in memo:
                memo[key] = memory.train_memory(recipe, facts, layout)
            mem = memo[key]
            if mem["headroom"] >= 0:
                break
        if not _screen(with_layout(recipe, train=layout), facts, "train", result.rejected):
            continue
        timing = cost.train_time(recipe, facts, layout, wl) if engine.priced else None
        result.train.append(Scored(layout, mem, timing))
    n_rollout = 0
    if engine.priced:
        for cand in rollout_space(recipe):
            n_rollout += 1
            if _screen(with_layout(recipe, rollout=cand), facts, "rollout", result.rejected):
                result.rollout.append(score_rollout(recipe, facts, cand, wl))
    else:  # the CPU trainer generates in-process: no rollout engine, no layout, no estimate
        result.rollout.append(Scored(rollout_of(recipe), {"headroom": 0.0}, None))
    result.train.sort(key=Scored.key)
    result.rollout.sort(key=lambda s: (s.key(), s.layout.dp))
    result.candidates = {"train": n_train, "rollout": n_rollout}
    return result


@dataclass
class Choice:
    """One layout as a whole: a training and a rollout layout, scored."""

    train: Scored
    rollout: Scored
    own: bool = False  # the recipe's own layout
    valid: bool = True  # passes every rule that reads a layout key
    broken: tuple[str, ...] = ()  # the rules it breaks when not valid (their ids), for the table to name

    @property
    def total(self) -> float:
        return self.train.seconds + self.rollout.seconds

    @property
    def fits(self) -> bool:
        return self.train.fits and self.rollout.fits

    def overrides(self) -> list[str]:
        return overrides_of(self.train.layout, self.rollout.layout)


def choices(p: Plan, top: int | None = 10) -> list[Choice]:
    """The best `top` combinations (None: every valid training layout with the best rollout and every valid
    rollout layout with the best training layout), each confirmed by `verdict`, best first."""
    if not p.possible or p.facts is None:
        return []
    if top is None:
        pairs = [(t, p.rollout[0]) for t in p.train] + [(p.train[0], r) for r in p.rollout[1:]]
    else:
        k = max(top, 1)
        pairs = [(t, r) for t in p.train[:k] for r in p.rollout[:k]]
    pairs.sort(key=lambda tr: (not (tr[0].fits and tr[1].fits), tr[0].seconds + tr[1].seconds))
    own_t, own_r = train_of(p.recipe), rollout_of(p.recipe)
    out: list[Choice] = []
    for t, r in pairs:
        if top is not None and len(out) >= top:
            break
        whole = with_layout(p.recipe, t.layout, r.layout)
        bad = [q for q in verdict(whole, p.facts) if q.severity == "error" and depends_on_layout(q)]
        if bad:  # the screen passed each half; the whole disagrees: drop it, and count it
            p.rejected.update({q.rule for q in bad})
            continue
        out.append(Choice(t, r, t.layout.parallel() == own_t.parallel() and r.layout == own_r))
    return out


def own_choice(p: Plan) -> Choice | None:
    """The recipe's own layout, scored whether or not it passes the rules (`valid` says: no layout error from
    the rules that read a layout key, with its own offload choice); None without a model card."""
    if p.facts is None:
        return None
    own_t, own_r = train_of(p.recipe), rollout_of(p.recipe)
    wl = p.workload or cost.workload(p.recipe)
    t = score_train(p.recipe, p.facts, own_t, wl)
    priced = p.recipe.engine.priced
    r = score_rollout(p.recipe, p.facts, own_r, wl) if priced else Scored(own_r, {"headroom": 0.0}, None)
    bad = [q for q in verdict(p.recipe, p.facts) if q.severity == "error" and depends_on_layout(q)]
    return Choice(t, r, own=True, valid=not bad, broken=tuple(dict.fromkeys(q.rule for q in bad)))


def smallest_cluster(ref: str, hardware: str | None, overrides: Iterable[str]) -> int | None:
    """The fewest nodes (of SEARCH_NODES) on which some layout passes every rule and fits the estimate; None
    when none does, or when no node count can help (recipe errors, or dense weights that exceed a device's
    rollout share even at the largest tensor parallel inside a node)."""
    for nodes in SEARCH_NODES:
        try:
            p = plan(load(ref, nodes, hardware, overrides))
        except (RecipeError, InputError):
            return None
        if p.recipe_errors or p.facts is None:
            return None
        if nodes == 1:
            c = p.recipe.cluster
            dense = memory.params(p.facts).dense * memory.DTYPE_BYTES[p.recipe.model.dtype]
            if dense / c.devices_per_node / memory.GB > c.device_memory_gb * p.recipe.rollout.gpu_memory_utilization:
                return None
        if p.possible and any(t.fits for t in p.train) and any(r.fits for r in p.rollout):
            return nodes
    return None
