"""The driver's checks, on the machine that runs preflight (node "driver" in the report): the recipe passes the
one gate (every rule of `grpolab check`), its data and reward as `grpolab data` sees them here (the prompt lengths
and the reward's dry run: row `data`), the installed verl against the recipe's `stack.verl` and the renderer's
target, and the rendered overrides composed against the installed verl's own config (`verl-schema`)."""

from __future__ import annotations

from grpolab.preflight.report import DRIVER, FAIL, OK, SKIP, WARN, Row
from grpolab.problems import Problem
from grpolab.recipe import stack
from grpolab.recipe.schema import Recipe
from grpolab.rules import registry


def problem_row(check: str, p: Problem) -> Row:
    value = "" if p.value is None else f" = {p.value}"
    return Row(check, DRIVER, FAIL if p.severity == "error" else WARN, f"[{p.rule}] {p.key}{value}: {p.message}", p.fix)


def data_rows(recipe: Recipe) -> list[Row]:
    """`grpolab data`'s own findings (the rules only it reports: prompt lengths, chat template, the reward's dry
    run); the sample checks are the gate's, in the `recipe` rows already."""
    # lazy: yaml (only the driver rows load the data checks)
    from grpolab.rules.data import report

    rep = report(recipe)
    found = [p for p in rep.problems if registry.rule(p.rule).stage == "data"]
    if found:
        return [problem_row("data", p) for p in found]
    run = rep.dry_run
    said = f"reward dry run: {len(run.calls)} calls on {len(run.rows)} rows, no fault" if run else "no reward dry run"
    sampled = sum(1 for f in rep.files if f.here and f.rows_read)
    return [Row("data", DRIVER, OK, f"{sampled} of {len(rep.files)} data files sampled here; {said}")]


def driver_rows(recipe: Recipe) -> list[Row]:
    # lazy: yaml (only the driver rows run the gate)
    from grpolab.rules.gate import gate

    verdict = gate(recipe)  # the one gate: preflight refuses exactly what `grpolab check` refuses
    schema_problems = [p for p in verdict if p.rule == "verl-schema"]
    problems = [p for p in verdict if p.rule != "verl-schema" and p.key != "stack.verl"]  # the `verl` row says it
    validates = f"{recipe.name} validates: no errors, no warnings ({', '.join(recipe.files)})"
    rows = [problem_row("recipe", p) for p in problems] or [Row("recipe", DRIVER, OK, validates)]
    rows += data_rows(recipe)
    installed, commit = stack.installed("verl")
    if not recipe.engine.verl:
        rows.append(Row("verl", DRIVER, SKIP, "train.engine trl runs the CPU trainer (grpolab.local.train), not verl"))
        rows.append(Row("verl-schema", DRIVER, SKIP, "train.engine trl: no verl overrides to compose"))
        return rows
    rows.append(_verl_row(recipe.stack.get("verl"), installed, commit))
    if installed is None:
        rows.append(Row("verl-schema", DRIVER, SKIP, "verl is not installed: the overrides were not composed"))
        return rows
    rows += [problem_row("verl-schema", p) for p in schema_problems]
    if not any(p.severity == "error" for p in schema_problems):
        warned = f" ({len(schema_problems)} warning(s) above)" if schema_problems else ""
        composed = f"the rendered overrides compose against verl {installed}'s config{warned}"
        rows.append(Row("verl-schema", DRIVER, OK, composed))
    return rows


def _verl_row(pin_text: str | None, installed: str | None, commit: str | None) -> Row:
    """The installed verl against the recipe's `stack.verl` (pin_text) and the renderer's target."""
    pin, unreadable = None, ""
    if pin_text:
        try:
            pin = stack.parse_pin("verl", pin_text)
        except ValueError as exc:
            unreadable = f"cannot read the pin stack.verl={pin_text!r}: {exc}"
    if installed is None:
        fix = f"{stack.install_hint('verl', pin)} (see README)"
        return Row("verl", DRIVER, FAIL, "verl is not installed here: the launch cannot be rendered for it", fix)
    target = f"the launch is rendered for the installed verl {installed} (its own config files)"
    if not pin_text:
        fix = f'add `verl: "{installed}"` under stack: once the recipe is tuned on it'
        return Row("verl", DRIVER, WARN, f"verl {installed} installed; the recipe pins no verl version; {target}", fix)
    ok, why = stack.matches(pin, installed, commit) if pin is not None else (False, unreadable)
    if ok:
        return Row("verl", DRIVER, OK, f"verl {installed} matches stack.verl {pin_text}; {target}")
    install = stack.install_hint("verl", pin) if pin is not None else "write stack.verl as 0.9.1[@commit]"
    fix = f"{install}, or re-tune and pin stack.verl: {installed}"
    return Row("verl", DRIVER, WARN, f"the recipe was tuned for verl {pin_text} but {why}; {target}", fix)
