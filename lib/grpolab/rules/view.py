"""What the rules read off a recipe beyond its fields: the value a raw verl override gives a key (it is rendered
last, so it wins), a package's pinned version, whether Megatron sequence parallel is on, whether verl runs it.
"""

from __future__ import annotations

import re
from typing import Any

from grpolab.recipe import stack
from grpolab.recipe.dotted import flatten
from grpolab.recipe.schema import Recipe

ROLL = "actor_rollout_ref.rollout"  # verl's rollout section, where most overrides the rules read live


def verl_engine(recipe: Recipe) -> bool:
    return recipe.train.engine in ("megatron", "fsdp")


def sequence_parallel(recipe: Recipe) -> bool:
    """Megatron sequence parallel in effect. Accepts `train.sp` as an int (1 = off, = tp on) or a bool."""
    t = recipe.train
    sp = t.sp
    on = bool(sp) if isinstance(sp, bool) else sp > 1
    return t.engine == "megatron" and on and t.tp > 1


def flat_overrides(recipe: Recipe) -> dict[str, Any]:
    """verl_overrides as {dotted key: value}: a recipe may nest them (`--set verl_overrides.a.b=1` does)."""
    return {key.lstrip("+"): value for key, value in flatten(recipe.verl_overrides).items()}


def override(recipe: Recipe, key: str, default: Any) -> Any:
    """A raw verl override wins over the recipe's field (the escape hatch is rendered last)."""
    return flat_overrides(recipe).get(key, default)


def pinned_version(recipe: Recipe, package: str) -> str | None:
    """The version a recipe pins a package at; a branch such as core_r0.16.0 reads as 0.16.0; None if unknown."""
    text = recipe.stack.get(package)
    if text is None:
        return None
    try:
        pin = stack.parse_pin(package, text)
    except ValueError:
        return None
    if pin.version:
        return pin.version
    match = re.search(r"(\d+\.\d+(?:\.\d+)*)", pin.ref or "")
    return match.group(1) if match else None
