"""The one gate: may this recipe launch? Every front end (check, render, run, preflight, the notebooks, launch)
asks `gate()` and nothing else, so they can never disagree.

It collects, for a schema-valid recipe: every cross-field rule (grpolab.rules.validate), a `verl_overrides` key that
shadows a key the renderer already emits from a first-class field (the rules checked the field, Hydra would
take the override: an error naming the field to use), and the rendered launch composed against the installed
verl's own config (grpolab.verl.config; skipped with verl=False or for train.engine trl).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grpolab.problems import Problem, RecipeError
from grpolab.recipe.loader import load_recipe
from grpolab.recipe.schema import Recipe
from grpolab.rules.checks import known
from grpolab.rules.validate import validate
from grpolab.rules.verl_version import gradients_offloaded, version_problems
from grpolab.verl import entry as entry_point
from grpolab.verl.config import base_config, compose, config_dir, entry_schema, static_problems, verl_version
from grpolab.verl.fieldmap import match
from grpolab.verl.render import RUN_DIR, first_class_keys, render

if TYPE_CHECKING:
    from grpolab.verl.render import Launch


def shadowing(recipe: Recipe, rendered: dict[str, Any] | None = None) -> list[Problem]:
    """`verl_overrides` keys that would silently replace what a first-class field renders (or that verl reads for the
    same setting: an alias in grpolab.verl.fieldmap). `rendered`: the first-class keys when the gate has them."""

    if not recipe.engine.verl or not recipe.verl_overrides:
        return []
    if rendered is None:
        rendered, _ = first_class_keys(recipe)
    bare_rendered = {k.lstrip("+") for k in rendered}
    problems = []
    for key, value in recipe.verl_overrides.items():
        bare = key.lstrip("+")
        found = match(bare, recipe.train.engine, recipe.rollout.engine)
        if bare not in bare_rendered and not (found and found.alias):
            continue
        field = found.owner if found else "its first-class field"
        shown = rendered.get(found.alias.target if found and found.alias else bare, rendered.get("+" + bare))
        problems.append(
            Problem(
                "override-shadows",
                "error",
                f"verl_overrides.{key}",
                value,
                f"{recipe.origin('verl_overrides.' + key)}: verl_overrides sets {bare!r}, which the recipe already "
                f"renders from {field} (= {shown!r}); the rules check {field}, "
                "Hydra would take the override unchecked",
                f"set {field} instead and remove verl_overrides.{key}",
            )
        )
    return problems


def verl_problems(
    recipe: Recipe, run_compose: bool = True, run_dir: str | None = None, first_class: dict[str, Any] | None = None
):
    """(problems, the launch rendered for run_dir or None) for a verl recipe: unknown keys in verl_overrides, keys
    the installed verl lacks, and the rendered launch composed with Hydra. `first_class`: the first-class keys for
    run_dir when the gate rendered them already."""

    config = base_config(recipe.train.engine)
    own = entry_point.of(recipe)
    if isinstance(own, entry_point.EntryConfig) and own.own:  # a recipe's entry point: its own config's keys
        config = entry_schema(own.folder, own.name) or config
    if config is None and config_dir() is not None:
        return [], None  # verl is here but has no such engine: rule engine-support names the ones it has
    if config is None:
        missing = Problem(
            "verl-schema",
            "warning",
            "stack.verl",
            recipe.stack.get("verl"),
            "verl is not installed here: the rendered overrides were not checked against its config",
            "pip install verl (see README) to check before launch",
        )
        return [missing], None
    # the renderer applies verl_overrides last and unchanged, so they are the user's own keys to check
    problems = static_problems(recipe, config, dict(recipe.verl_overrides)) + version_problems(recipe)
    launch = render(recipe, run_dir, first_class)
    problems += launch.notes
    if isinstance(own, str):  # a recipe's entry point whose own config is not on this machine
        problems.append(
            Problem(
                "verl-schema",
                "warning",
                "trainer.entry_dir",
                recipe.trainer.entry_dir,
                f"{own}: the launch was composed with verl's {launch.config_name} config instead, which lacks any key "
                f"only {recipe.trainer.entrypoint}'s own config has",
                "set trainer.entry_dir to the folder its package is in (the checkout a `python3 -m` of it runs "
                "from), or cluster.runtime_env.working_dir to it",
            )
        )
    if run_compose and not any(p.severity == "error" and p.rule == "verl-schema" for p in problems):
        message = compose(launch.overrides, launch.config_name, Path(launch.config_dir) if launch.config_dir else None)
        if message:
            problems.append(
                Problem(
                    "verl-schema",
                    "error",
                    "verl_overrides",
                    None,
                    f"verl {verl_version()} rejects the rendered launch"
                    + (f" (--config-name={launch.config_name})" if launch.config_name != "ppo_trainer" else "")
                    + f": {message}",
                    "fix the key Hydra names (see `grpolab render` for the overrides)",
                )
            )
    return problems, launch


def gate(recipe: Recipe, *, verl: bool = True) -> list[Problem]:
    """Every problem that decides whether `recipe` may launch; any error blocks it. Collects, never raises."""
    return _gate(recipe, verl, None)[0]


def gated_launch(recipe: Recipe, run_dir: str | None = None) -> tuple[list[Problem], Launch]:
    """gate()'s problems and the launch it rendered for `run_dir`: what grpolab.jobs.launch submits (rendered once)."""
    problems, launch = _gate(recipe, True, run_dir)
    if launch is None:  # train.engine trl, or no verl installed: nothing was rendered on the way
        launch = render(recipe, run_dir)
    return problems, launch


def _gate(recipe: Recipe, verl: bool, run_dir: str | None) -> tuple[list[Problem], Launch | None]:
    problems: list[Problem] = []
    # by meaning, with or without composing: gradients are offloaded only where the checked verl's workers read the
    # key (none of 0.7.1 to main does); without verl, as no supported version does
    grad_ok = gradients_offloaded()
    launch, rendered = None, None
    if recipe.engine.verl and recipe.verl_overrides:
        # the shadowing check reads the keys the launch is rendered from: rendered once, for both
        rendered, _ = first_class_keys(recipe, run_dir or RUN_DIR)
    if verl and recipe.engine.verl:
        found, launch = verl_problems(recipe, run_dir=run_dir, first_class=rendered)
        problems += found
    return known(validate(recipe, grad_ok) + shadowing(recipe, rendered) + problems), launch


def check(ref: str | Path, overrides: Iterable[str] = (), verl: bool = True) -> tuple[Recipe | None, list[Problem]]:
    """Load and check a recipe: (recipe or None when the schema fails, every problem). InputError for bad input.

    The problems are `gate()`'s: the same verdict every front end gets. With verl=True the rendered launch is also
    composed against the installed verl's config (`verl-schema`).
    """
    try:
        recipe = load_recipe(ref, overrides)
    except RecipeError as exc:
        return None, known(exc.problems)
    return recipe, gate(recipe, verl=verl)
