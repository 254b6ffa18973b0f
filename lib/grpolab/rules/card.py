"""A model nobody has a card for: `grpolab check` runs every rule that needs no model facts and says, in ONE
warning, which checks it skipped (or ran only in part) and how to add a card. The registry says which rules need
the facts (grpolab.rules.registry, `card`).
"""

from __future__ import annotations

from grpolab.problems import Problem
from grpolab.recipe.schema import Recipe
from grpolab.rules.checks import Checks
from grpolab.rules.registry import card_rules


def missing_card(c: Checks) -> None:
    """One warning when the model's facts are unknown (no card, no config.json at model.path)."""
    r = c.r
    if c.f is not None or r.model.card or not r.engine.verl:  # trl builds its tiny model in code
        return
    skipped, partly = card_rules("all"), card_rules("part")
    where = f"model.path {r.model.path!r}" if r.model.path else "model.path (empty)"
    c.add(
        "model-card",
        "model.card",
        None,
        f"{where} has no config.json here and the recipe names no card, so the model's facts (layers, heads, "
        f"experts, context, size) are unknown: {len(skipped)} checks were skipped ({', '.join(skipped)}) and "
        f"{len(partly)} ran without the model's part ({', '.join(partly)})",
        "write a card: `grpolab card MODEL_DIR_OR_NAME` (from the model's config.json, a local directory or the "
        "Hugging Face cache), then set model.card to it; or set model.card to a card in params/models/; or point "
        "model.path at a directory with config.json",
    )


def missing_card_problem(recipe: Recipe) -> Problem | None:
    """The same warning on its own, for a front end that has no facts to work with (the planner)."""
    c = Checks(recipe, None)
    missing_card(c)
    return c.problems[0] if c.problems else None
