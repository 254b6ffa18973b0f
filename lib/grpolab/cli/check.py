"""`grpolab check RECIPE [--set k=v ...] [--json]`: every problem the recipe shows without a cluster.

Exit 0 when there is no error (warnings allowed), 1 when there are errors, 2 for unusable input.
"""

from __future__ import annotations

from grpolab.cli.common import add_recipe_args, print_problems
from grpolab.problems import errors
from grpolab.recipe.secrets import redaction


def register(sub) -> None:
    p = sub.add_parser("check", help="validate a recipe: every rule, all problems at once")
    add_recipe_args(p)
    p.add_argument("--json", action="store_true", help="print the problems as one JSON list")
    p.add_argument("--no-verl", action="store_true", help="skip composing the launch against the installed verl")
    p.set_defaults(func=main)


def main(args) -> int:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.rules.gate import check

    recipe, problems = check(args.recipe, args.overrides, verl=not args.no_verl)
    if recipe is not None:
        # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
        from grpolab.plan.hints import with_layout_fixes  # a layout error's fix names the nearest whole valid layouts

        problems = redaction(recipe, overrides=args.overrides).problems(with_layout_fixes(recipe, problems))
    name = recipe.name if recipe else args.recipe
    print_problems(problems, as_json=args.json, header=f"recipe {name}: {', '.join(recipe.files) if recipe else ''}")
    return 1 if errors(problems) else 0
