"""What the verbs share: the RECIPE argument with --set overrides, printing problems, and the one JSON printer."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from grpolab.problems import Problem, RecipeError, report


def add_recipe_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recipe", metavar="RECIPE", help="a name under params/recipes/ or a path to a YAML file")
    add_set_arg(parser)


def whole_number(what: str, fix: str):
    """An argparse type for a whole number, 0 or more; `what` names it in "'x' is not {what}", `fix` follows a
    negative value's "is negative: ". argparse turns the error into one line naming the option, exit 2."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"{value} is negative: {fix}")
        return value

    return parse


def port_number(text: str) -> int:
    """An argparse type for a TCP port: 1 to 65535, or 0 for any free one (one line naming the option, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number: give one from 1 to 65535") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port: give one from 1 to 65535 (e.g. 8888; 0: any free)")
    return value


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
    """The validated recipe, or InputError (exit 2) for bad input; schema problems print and exit 1."""
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.recipe.loader import load_recipe

    try:
        return load_recipe(args.recipe, args.overrides)
    except RecipeError as exc:
        print_problems(exc.problems, as_json=getattr(args, "json", False))
        raise SystemExit(1) from None


def strict_json(doc: Any) -> Any:
    """doc with every non-finite number (NaN, Infinity) replaced by null, and a flag beside it: in a mapping,
    `"<key>_nonfinite"` holds what was there ("NaN", "Infinity", "-Infinity"; for a container, a mapping from
    the path inside a list to that). Anything json cannot write becomes its str(). Strict JSON parsers (browsers,
    jq, JSON.parse) refuse NaN and Infinity; Python's json writes them by default."""
    value, _ = _strict(doc)
    return value


def _spell(x: float) -> str:
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _strict(doc: Any) -> tuple[Any, Any]:
    """(strict value, what was non-finite in it: a spelling for a scalar, {path: spelling} for a container)."""
    if isinstance(doc, float):
        return (None, _spell(doc)) if not math.isfinite(doc) else (doc, None)
    if doc is None or isinstance(doc, (bool, int, str)):
        return doc, None
    if isinstance(doc, (dict, list, tuple)):
        mapping = isinstance(doc, dict)
        out: dict = {}
        found: dict = {}
        for key, item in doc.items() if mapping else enumerate(doc):
            key = key if isinstance(key, str) else str(key)
            out[key], bad = _strict(item)
            if bad is not None:
                found.update({f"{key}.{k}": v for k, v in bad.items()} if isinstance(bad, dict) else {key: bad})
                if mapping and not isinstance(item, dict):  # a mapping carries its own flags beside its values
                    out[f"{key}_nonfinite"] = bad
        return (out if mapping else list(out.values())), (found or None)
    if hasattr(doc, "to_dict"):
        return _strict(doc.to_dict())
    return str(doc), None


def print_json(doc: Any) -> None:
    """The one way a verb prints its --json document: strict JSON (see strict_json), one document on stdout."""
    print(json.dumps(strict_json(doc), indent=2, allow_nan=False))


def print_problems(problems: list[Problem], as_json: bool = False, header: str = "") -> None:
    if as_json:
        print_json([p.to_dict() for p in problems])
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
