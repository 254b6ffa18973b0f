"""What the verbs share: the RECIPE argument with --set overrides, and printing problems."""

from __future__ import annotations

import argparse
import json

from grpolab.cli import UsageError
from grpolab.problems import InputError, Problem, RecipeError, report


def add_recipe_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recipe", metavar="RECIPE", help="a name under params/recipes/ or a path to a YAML file")
    add_set_arg(parser)


def add_set_arg(parser: argparse.ArgumentParser, example: str = "rollout.tp=16") -> None:
    """--set KEY=VALUE (repeatable, applied last): the recipe overrides of every verb that loads a recipe."""
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a recipe key, e.g. --set {example} (repeatable; applied last)",
    )


def load(args: argparse.Namespace):
    """The validated recipe, or UsageError (exit 2) for bad input; schema problems print and exit 1."""
    from grpolab.recipe.loader import load_recipe

    try:
        return load_recipe(args.recipe, args.overrides)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    except RecipeError as exc:
        print_problems(exc.problems, as_json=getattr(args, "json", False))
        raise SystemExit(1) from None


def print_problems(problems: list[Problem], as_json: bool = False, header: str = "") -> None:
    if as_json:
        print(json.dumps([p.to_dict() for p in problems], indent=2, default=str))
        return
    if header:
        print(header)
    print(report(problems))


def add_show_secrets(p) -> None:
    """--show-secrets: the verbs that print env values mask secrets unless asked."""
    p.add_argument(
        "--show-secrets",
        action="store_true",
        help="print secret env values in clear (default: masked; names that look secret or `secrets:`)",
    )
