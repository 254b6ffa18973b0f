"""`grpolab render RECIPE [--set k=v ...] [--format overrides|sh|json]`: the verl launch for the installed verl."""

from __future__ import annotations

import sys

from grpolab.cli.common import add_recipe_args, add_show_secrets, load, print_problems
from grpolab.problems import errors
from grpolab.recipe.secrets import redaction


def register(sub) -> None:
    p = sub.add_parser("render", help="render the launch: Hydra overrides, a bash script or JSON")
    add_recipe_args(p)
    p.add_argument("--format", choices=("overrides", "sh", "json"), default="overrides")
    add_show_secrets(p)
    p.set_defaults(func=main)


def main(args) -> int:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.rules.gate import gate
    from grpolab.verl.render import render, to_json, to_sh

    recipe = load(args)
    found = gate(recipe)
    problems = errors(found)
    if problems:  # a launch that cannot work is not rendered: check before launch, never after
        print_problems(problems, header=f"recipe {recipe.name} has errors; not rendering (see `grpolab check`):")
        return 1

    launch = render(recipe)
    redact = redaction(recipe, env=launch.env, overrides=args.overrides)
    redacted = redact.launch(launch)
    # what the launch leaves out or sets otherwise on this verl version is said beside the launch, like its notes
    meaning = redact.problems(p for p in found if p.rule == "verl-version")
    for note in [*redacted.notes, *meaning]:  # a message never shows a secret, --show-secrets or not
        print(f"# {note.severity}: [{note.rule}] {note.key}: {note.message}", file=sys.stderr)
    if not args.show_secrets:  # masked by name in env, and by value wherever else a secret would show
        launch = redacted
    if args.format == "json":
        print(to_json(launch))
    elif args.format == "sh":
        print(to_sh(launch, recipe), end="")
    else:
        for name, value in launch.env.items():
            print(f"# env {name}={value}")
        print(" \\\n    ".join(launch.argv()))
    return 0
