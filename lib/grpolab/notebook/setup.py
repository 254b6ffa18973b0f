"""01_setup: the recipe (by name, path or imported script), its check by the one gate, and how it renders; secret overrides masked for stage notebooks."""

from __future__ import annotations

import html
import json
import os
from collections.abc import Iterable

from grpolab.jobs import cluster, runs
from grpolab.notebook.display import (
    NotebookStop,
    in_jupyterlab,
    problems_text,
    show_html,
    show_problems,
    show_text,
    table_html,
)
from grpolab.paths import runs_dir
from grpolab.problems import InputError, Problem, RecipeError
from grpolab.recipe.dotted import get_dotted
from grpolab.recipe.modes import describe
from grpolab.recipe.secrets import is_secret_override, redact_override, redaction

# ------------------------------------------------------------------------------------------------ recipes


# Secret overrides given to run.ipynb (`-y "overrides: [env.HF_TOKEN=...]"`) reach its stage notebooks without being
# written into them: papermill writes the parameters it injects into the executed notebook, so Stages.run passes
# `env.HF_TOKEN=***redacted***` there and the real override in this variable of the stage kernel's environment
# (readable by the user alone, gone with the kernel); load() and check_recipe() put the real value back.
STAGE_SECRETS_VAR = "GRPOLAB_STAGE_SECRET_OVERRIDES"


def mask_overrides(overrides: Iterable[str], marked: Iterable[str] = ()) -> tuple[list[str], dict[str, str]]:
    """(overrides with secret values masked, {masked text: real text}) for the secret ones (by name or marked)."""
    marked = list(marked)
    masked, real = [], {}
    for text in overrides:
        text = str(text)
        if is_secret_override(text, marked):
            shown = redact_override(text, marked)
            real[shown] = text
            text = shown
        masked.append(text)
    return masked, real


def unmask_overrides(overrides: Iterable[str]) -> list[str]:
    """The overrides with the masked secret ones of run.ipynb replaced by their real text (see STAGE_SECRETS_VAR)."""
    try:
        real = json.loads(os.environ.get(STAGE_SECRETS_VAR) or "{}")
    except json.JSONDecodeError:
        real = {}
    return [real.get(str(text), text) if isinstance(real, dict) else text for text in overrides]


def _parse_overrides(overrides: list[str]) -> None:
    # lazy: yaml (the recipe modules load when a cell uses them, not with `import grpolab.notebook`)
    from grpolab.recipe.loader import parse_override

    for text in overrides:
        try:
            parse_override(text)
        except InputError as exc:
            example = (
                "overrides = ['rollout.tp=16', 'trainer.total_steps=40'] in the cell tagged parameters"
                if in_jupyterlab()
                else 'papermill -y "overrides: [rollout.tp=16, trainer.total_steps=40]"'
            )
            raise NotebookStop(
                f"bad override {redact_override(str(text))!r}: {exc}\noverrides are a list of dotted key=value strings: {example}"
            ) from None


def load(model: str, overrides: Iterable[str] = ()):
    """The validated recipe `model` with `overrides` applied; NotebookStop for an unknown recipe, a malformed
    override or a recipe the schema rejects (the message lists every schema problem, once)."""
    # lazy: yaml (the recipe modules load when a cell uses them, not with `import grpolab.notebook`)
    from grpolab.recipe.loader import load_recipe

    shown = list(overrides)  # what messages quote: secret overrides from run.ipynb stay masked there
    overrides = unmask_overrides(shown)
    _parse_overrides(overrides)
    try:
        return load_recipe(model, overrides)
    except InputError as exc:
        raise NotebookStop(str(exc)) from None
    except RecipeError as exc:
        origin = f" with overrides {shown}" if shown else ""
        raise NotebookStop(
            f"recipe {model!r}{origin} does not fit the schema:\n" + problems_text(exc.problems)
        ) from None


def _override_key(text: str) -> str:
    return str(text).split("=", 1)[0].strip()


def check_recipe(model: str, overrides: Iterable[str] = ()):
    """(recipe, every problem): the schema, every rule, and the launch composed against the installed verl; a
    layout error's fix names the nearest whole valid layouts, as `grpolab check` says it.

    A schema error in an override does not hide the recipe's other problems: the recipe is checked again without
    the overrides the schema rejected, and the problems of both passes are returned together (each once). The
    recipe is None when the schema rejects the recipe's own files (nothing to check the rules on)."""
    # lazy: yaml (the recipe modules load when a cell uses them, not with `import grpolab.notebook`)
    from grpolab.plan.hints import with_layout_fixes
    from grpolab.recipe.loader import load_recipe
    from grpolab.rules.gate import gate

    shown = list(overrides)
    real = unmask_overrides(shown)
    _parse_overrides(real)
    try:
        recipe = load_recipe(model, real)
        return recipe, with_layout_fixes(recipe, gate(recipe))
    except InputError as exc:
        raise NotebookStop(str(exc)) from None
    except RecipeError as exc:
        schema = list(exc.problems)
    bad = {p.key for p in schema if p.severity == "error"}
    kept = [o for o in real if not any(_override_key(o) == k or k.startswith(_override_key(o) + ".") for k in bad)]
    if len(kept) == len(real):  # the recipe's own files do not fit: no recipe to run the rules on
        return None, schema
    try:
        recipe = load_recipe(model, kept)
    except (InputError, RecipeError):
        return None, schema
    seen = {(p.rule, p.key) for p in schema}
    rest = [p for p in with_layout_fixes(recipe, gate(recipe)) if (p.rule, p.key) not in seen]
    return recipe, schema + rest


def stop_on_dropped(problems: list[Problem], recipe, overrides: Iterable[str] = ()) -> None:
    """NotebookStop at the check cell when the schema rejected an override: the recipe the cells below would show
    and launch is not the one the user asked for (it keeps the value from its files), so nothing below may run with
    it. The message names each override as typed, why it was rejected and the value it would have replaced, then
    every problem found (the recipe checked without the rejected overrides)."""
    # lazy: yaml (the recipe modules load when a cell uses them, not with `import grpolab.notebook`)
    from grpolab.recipe.loader import CLI

    dropped = [p for p in problems if p.rule == "schema" and p.severity == "error" and p.message.startswith(f"{CLI} ")]
    if not dropped:
        return
    lines = []
    for p in dropped:
        typed, _, why = p.message[len(CLI) + 1 :].partition(": ")
        kept = None if recipe is None else get_dotted(recipe.model_dump(mode="json"), p.key)
        instead = (
            f"; the recipe would run with {p.key} = {kept!r} from {recipe.origin(p.key)}" if kept is not None else ""
        )
        lines.append(f"override {typed!r} was not applied: {why}{instead}; fix: {p.fix}")
    where = "the `overrides` parameter (the cell tagged parameters)"
    raise NotebookStop(
        "\n".join(lines)
        + f"\nnothing below runs with a recipe you did not ask for: correct {where} and run again.\n"
        + problems_text(problems)
    )


def from_script(script: str | None, model: str) -> str:
    """01_setup's `script`: import a verl launch script (grpolab.importer.script) and show the recipe and what it could not
    reproduce. Returns the imported recipe's path, or `model` when no script is given: runs/.imports/NAME.yaml, in
    runs/ like everything the project writes (not a run: `grpolab ls` skips it; `grpolab import` saves the recipe in
    params/recipes/ for good). NotebookStop for a file that is not a launch script."""
    if not script:
        return model
    # lazy: yaml (the recipe modules load when a cell uses them, not with `import grpolab.notebook`)
    from grpolab.importer.script import import_script as run_import
    from grpolab.importer.script import recipe_yaml

    try:
        imported = run_import(script)
    except InputError as exc:
        raise NotebookStop(str(exc)) from None
    text = recipe_yaml(imported, script)
    path = runs_dir() / ".imports" / f"{imported.name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    show_text(
        text, title=f"recipe imported from {script} ({path}; `grpolab import {script}` saves it in params/recipes/)"
    )
    rows = [[u["key"], repr(u["value"]), u["why"]] for u in imported.unmapped]
    plain = "\n".join(f"{k} = {v}: {why}" for k, v, why in rows) or "none: every setting of the script is reproduced"
    show_html(
        "<b>not reproduced</b>"
        + (
            table_html(["key", "script value", "why"], rows, [None] * len(rows))
            if rows
            else ": none, every setting of the script is reproduced"
        ),
        f"not reproduced:\n{plain}",
    )
    return str(path)


def check_address(ray_address: str | None) -> None:
    """A malformed Ray address stops the notebook in its validation cell, not minutes later."""
    if ray_address:
        try:
            cluster.parse_address(ray_address)
        except cluster.ClusterError as exc:
            raise NotebookStop(str(exc)) from None


def check_new_run_id(run_id: str | None) -> None:
    """A run id the user chose must be a plain folder name that is not taken yet (None: generated later)."""
    if run_id is None:
        return
    try:
        runs.check_run_id(run_id)
    except ValueError as exc:
        raise NotebookStop(str(exc)) from None
    if (runs_dir() / run_id).exists():
        raise NotebookStop(f"run {run_id!r} already exists in {runs_dir()}; pick another run_id (or None)")


def show_recipe(recipe) -> None:
    """The fully resolved recipe as YAML, secrets redacted, with the files it was layered from."""
    # lazy: yaml (the recipe modules load when a cell uses them, not with `import grpolab.notebook`)
    from grpolab.recipe.loader import to_yaml

    if recipe is None:
        print("no resolved recipe: the recipe's own files do not fit the schema (the problems above)")
        return
    title = f"resolved recipe {recipe.name}; schedule {describe(recipe)}"
    show_text(to_yaml(recipe, env=redaction(recipe).env(recipe.env)), title=title)


def redacted_launch(recipe):
    # lazy: yaml (the recipe modules load when a cell uses them, not with `import grpolab.notebook`)
    from grpolab.verl.render import render

    launch = render(recipe)
    return redaction(recipe, env=launch.env).launch(launch)


def show_launch(recipe, problems: Iterable[Problem] = ()) -> None:
    """The rendered launch: entrypoint and overrides, the env (secrets redacted) and the bash script. With errors
    among `problems` (the check above) it is marked NOT LAUNCHABLE, in its title and in the script itself: `grpolab
    render` and 03_launch refuse it; it is shown to read, not to copy."""
    # lazy: yaml (the recipe modules load when a cell uses them, not with `import grpolab.notebook`)
    from grpolab.verl.render import to_sh

    if recipe is None:
        print("nothing to render: the recipe does not fit the schema (the problems above)")
        return
    errors = [p for p in problems if p.severity == "error"]
    invalid = (
        f"NOT LAUNCHABLE: recipe {recipe.name} has {len(errors)} error(s) ("
        + ", ".join(dict.fromkeys(f"{p.key}: {p.rule}" for p in errors))
        + "); `grpolab render`, `grpolab run` and 03_launch refuse it. Shown to read, not to run: fix the errors above"
        if errors
        else ""
    )
    launch = redacted_launch(recipe)
    lines = [f"entrypoint: {launch.command()}", "", "overrides:"]
    lines += [f"  {o}" for o in launch.overrides] or ["  (none: the local trainer reads the recipe itself)"]
    env = [f"  {k}={v}" for k, v in launch.env.items()]
    lines += ["", "env (exported on every node):", *env] if env else ["", "env: none (the recipe sets no variables)"]
    title = f"rendered launch for {recipe.name} ({launch.engine})"
    if invalid:
        show_html(f"<p style='color:#c0392b'><b>{html.escape(invalid)}</b></p>", invalid)
        title += ": NOT LAUNCHABLE (errors above)"
    show_text("\n".join(lines), title=title)
    if launch.notes:
        show_problems(launch.notes, title="rendering notes")
    script = to_sh(launch, recipe)
    if invalid:  # the script says so itself, wherever it is copied to
        shebang, rest = script.split("\n", 1)
        script = f"{shebang}\n# {invalid}\n{rest}"
    show_text(script, title="bash script (grpolab render --format sh)" + (": NOT LAUNCHABLE" if invalid else ""))


def stop_on_errors(problems: list[Problem], recipe, model: str | None = None) -> None:
    """NotebookStop when any problem is an error (warnings pass). The problems table above says what and how to
    fix each; the stop names their keys and rules only, so that nothing is said twice."""
    name = recipe.name if recipe is not None else (model or "the recipe")
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        keys = ", ".join(f"{p.key} ({p.rule})" for p in errors)
        raise NotebookStop(
            f"recipe {name} has {len(errors)} error(s): {keys}; nothing can be launched. "
            "The Problems table above says why and how to fix each."
        )
    print(f"recipe {name}: ready to launch ({len(problems)} warning(s))")
