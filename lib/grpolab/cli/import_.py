"""`grpolab import SCRIPT.sh [--name NAME] [--out PATH] [--device npu|cuda] [--json]`: an existing verl launch
script -> a recipe.

The script runs with its launcher replaced by a recorder (nothing starts, nothing is written outside a scratch
directory); the recipe lands in params/recipes/NAME.yaml (or --out) with a comment on each value that came from
the script, then it is checked; settings it could not reproduce are listed. Exit 0: written and checks clean
(warnings allowed); 1: written, but the check finds errors; 2: unusable input (not a shell script, no launch line, a
script that fails before launching, an existing output file), and nothing is written.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from grpolab.cli import UsageError
from grpolab.cli.common import json_text


def register(sub) -> None:
    p = sub.add_parser("import", help="turn an existing verl launch script into a recipe")
    p.add_argument("script", metavar="SCRIPT.sh", help="a bash script that launches python3 -m verl.trainer.main_ppo")
    p.add_argument("--name", default=None, help="recipe name (default: the script's file name)")
    p.add_argument(
        "--out",
        default=None,
        help="where to write the recipe (default: params/recipes/NAME.yaml); `-`: print it on stdout and write nothing",
    )
    p.add_argument(
        "--device",
        choices=("npu", "cuda"),
        default="npu",
        help="what the script's device probes (npu-smi, nvidia-smi) find; default npu",
    )
    p.add_argument("--json", action="store_true", help="print the result as one JSON document")
    p.set_defaults(func=main)


def main(args) -> int:
    from grpolab.paths import params_dir
    from grpolab.problems import InputError, errors
    from grpolab.problems import report as problem_report
    from grpolab.verl.importer import import_script, recipe_yaml

    try:
        imported = import_script(args.script, name=args.name, device=args.device)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    text = recipe_yaml(imported, args.script)
    if args.out == "-":  # checked from a scratch copy, printed, nothing kept
        with tempfile.TemporaryDirectory(prefix="grpolab-import-") as tmp:
            out = Path(tmp) / f"{imported.name}.yaml"
            out.write_text(text)
            problems = _check(out)
        print(text, end="")
        report = sys.stderr
    else:
        out = Path(args.out) if args.out else params_dir() / "recipes" / f"{imported.name}.yaml"
        if out.exists():
            raise UsageError(f"{out} exists already; pick another --name or --out (nothing was written)")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        problems = _check(out)
        report = sys.stdout
    if args.json and args.out != "-":
        print(
            json_text(
                {
                    "recipe": str(out),
                    "name": imported.name,
                    "unmapped": imported.unmapped,
                    "deprecated": imported.deprecated,
                    "problems": [p.to_dict() for p in problems],
                },
                indent=2,
                default=str,
            )
        )
    else:
        print(f"wrote {out}" if args.out != "-" else f"# imported from {args.script}", file=report)
        for u in imported.unmapped:
            print(f"  not reproduced: {u['key']} = {u['value']!r}: {u['why']}", file=report)
        for u in imported.deprecated:
            print(f"  deprecated in the script: {u['key']} = {u['value']!r}: {u['why']}", file=report)
        print(
            problem_report(problems) + (f"; check it with: grpolab check {out}" if args.out != "-" else ""),
            file=report,
        )
    return 1 if errors(problems) else 0


def _check(path: Path) -> list:
    from grpolab.problems import RecipeError
    from grpolab.recipe.loader import load_recipe
    from grpolab.rules.gate import gate

    try:
        return gate(load_recipe(path))
    except RecipeError as exc:
        return exc.problems
