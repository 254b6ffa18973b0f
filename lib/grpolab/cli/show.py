"""`grpolab show RECIPE [--set k=v ...]`: the fully resolved recipe as YAML (secret env values masked)."""

from __future__ import annotations

from grpolab.cli.common import add_recipe_args, add_show_secrets, load
from grpolab.recipe.secrets import redaction


def register(sub) -> None:
    p = sub.add_parser("show", help="print the resolved recipe as YAML")
    add_recipe_args(p)
    add_show_secrets(p)
    p.set_defaults(func=main)


def main(args) -> int:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.recipe.loader import to_yaml
    from grpolab.recipe.modes import describe

    recipe = load(args)
    print(f"# schedule {describe(recipe)}")  # a YAML comment: the output still loads as a recipe
    if args.show_secrets:
        print(to_yaml(recipe), end="")
        return 0
    # masked by name in env, and by value anywhere else a secret was copied to (a verl override, a name)
    hide = redaction(recipe, overrides=args.overrides)
    print(hide.text(to_yaml(recipe, env=hide.env(recipe.env))), end="")
    return 0
