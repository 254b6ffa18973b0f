"""`grpolab check`'s layout hints: a layout error's fix extended by the nearest whole valid layouts of a plan."""

from __future__ import annotations

import math
import shlex
from dataclasses import replace

from grpolab.plan.search import Plan, plan
from grpolab.problems import Problem
from grpolab.recipe.layout import RolloutLayout, TrainLayout, overrides_of, rollout_of, train_of
from grpolab.recipe.schema import Recipe
from grpolab.rules.registry import problem_side, rule

MAX_HINT_WORLD = 65536  # `check` proposes whole layouts up to this many devices


def _distance(a: tuple, b: tuple) -> float:
    """Doublings between two tuples of sizes (non-sizes ignored)."""
    return sum(abs(math.log2(x) - math.log2(y)) for x, y in zip(a, b) if isinstance(x, int) and isinstance(y, int))


def nearest_layouts(p: Plan, k: int = 2) -> tuple[list[TrainLayout], list[RolloutLayout]]:
    """The k valid training and rollout layouts nearest the recipe's own (fewest doublings away), best first."""
    own_t, own_r = train_of(p.recipe), rollout_of(p.recipe)

    def t_key(s):
        return (
            not s.fits,
            _distance(s.layout.parallel()[:6], own_t.parallel()[:6]),
            s.layout.pp_layout != own_t.pp_layout,
            (s.layout.param_offload, s.layout.optimizer_offload) != (own_t.param_offload, own_t.optimizer_offload),
            s.seconds,
        )

    def r_key(s):
        return (not s.fits, _distance(s.layout.astuple(), own_r.astuple()), s.seconds)

    return [s.layout for s in sorted(p.train, key=t_key)[:k]], [s.layout for s in sorted(p.rollout, key=r_key)[:k]]


def with_layout_fixes(recipe: Recipe, problems: list[Problem]) -> list[Problem]:
    """The problems, with each layout error's fix extended by the nearest whole valid layouts (from a plan)."""
    if not any(q.severity == "error" and rule(q.rule).layout for q in problems):
        return problems  # nothing to plan for (planning costs tens of milliseconds)
    if recipe.world_size > MAX_HINT_WORLD:  # no cluster of this size exists: the rule's own fix stands
        return problems
    try:
        p = plan(recipe)
    except Exception:  # a hint must never break a check: the rule's own fix stands
        return problems
    trains, rollouts = nearest_layouts(p)
    out = []
    for q in problems:
        if q.severity == "error" and rule(q.rule).layout:
            half = problem_side(q.rule, q.key)
            sets = []
            for lay in trains if half == "train" else rollouts:
                ovs = overrides_of(lay, None) if half == "train" else overrides_of(None, lay)
                changed = [o for o in ovs if _changed(o, recipe) and not _less_offload(o)]
                if changed:
                    sets.append(" ".join(f"--set {shlex.quote(o)}" for o in changed))
            if sets:
                q = replace(
                    q, fix=f"{q.fix}; or a whole valid {half} layout nearest yours (grpolab plan): " + " | ".join(sets)
                )
            elif not (p.train if half == "train" else p.rollout):
                q = replace(
                    q,
                    fix=f"{q.fix}; no {half} layout passes on this cluster: `grpolab plan` names the "
                    "smallest cluster that fits",
                )
        out.append(q)
    return out


def _less_offload(override: str) -> bool:
    """Turning an offload off is never needed to fix a layout (more offload only saves device memory)."""
    return override.startswith(("train.param_offload=", "train.optimizer_offload=")) and override.endswith("=false")


def _changed(override: str, recipe: Recipe) -> bool:
    key, raw = override.split("=", 1)
    section, name = key.split(".", 1)
    value = getattr(getattr(recipe, section), name)
    text = "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return text != raw
