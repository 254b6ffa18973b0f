"""`grpolab import SCRIPT.sh [--name NAME] [--out PATH] [--device npu|cuda] [--devices N] [--trusted]
[--legacy-reward apply|inert] [--json]`: an existing verl launch script -> a recipe.

The script runs with the caller's environment, isolated by the operating system (nothing outside a scratch folder
changes, no network; a machine that cannot isolate it is refused unless --trusted says the script is trusted), with
its launchers replaced by a recorder: nothing starts. The recipe lands in params/recipes/NAME.yaml (or --out) with
a comment on each value that came from the script, then it is checked; settings it could not reproduce and the
variables the script read unset are listed; a secret is written as a reference to the launching shell's variable.
Exit 0: written and checks clean (warnings allowed); 1: written, but the check finds errors; 2: unusable input (not a
shell script, no launch line, a script that fails before launching or whose launch does not compose under the
installed verl, no isolation, an existing output file), and nothing is written.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

from grpolab import owned
from grpolab.cli.common import print_json
from grpolab.paths import check_name, is_system_folder, params_dir
from grpolab.problems import InputError, RecipeError, errors
from grpolab.problems import report as problem_report


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
        default=None,
        help="the device the script runs on: its probes (npu-smi, nvidia-smi, torch_npu, torch.cuda) find it, and a "
        "script that names no device gets it; default: the probes answer npu, and such a script gets npu where it "
        "exports variables only Ascend's stack reads (ASCEND_*, HCCL_*, VLLM_ASCEND_*), else verl's own default (cuda)",
    )
    p.add_argument("--devices", type=int, default=8, help="devices per node the probes report; default 8")
    p.add_argument(
        "--trusted",
        action="store_true",
        help="run the script without operating-system isolation (only where the machine offers none, and only for a "
        "script you trust: its commands other than the launchers really run)",
    )
    p.add_argument(
        "--legacy-reward",
        choices=("apply", "inert"),
        default="apply",
        help="the reward's older keys (custom_reward_function.*, reward_model.reward_manager, ...) that the launch's "
        "entry point ignores (verl 0.9.1's main_ppo): apply them as their reward.* keys (default; the run then uses "
        "the reward the script names), or keep them inert as the original launch had them",
    )
    p.add_argument("--json", action="store_true", help="print the result as one JSON document")
    p.set_defaults(func=main)


def main(args) -> int:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.importer.script import import_script, recipe_yaml

    if args.devices < 1:
        raise InputError(f"--devices {args.devices}: give a number of devices per node, 1 or more")
    if args.name is not None:  # a name flag: a recipe name, never a path (the path flag is --out)
        check_name(args.name, "--name", "give a path with --out")
    imported = import_script(
        args.script,
        args.name,
        args.device,
        trusted=args.trusted,
        devices=args.devices,
        legacy_reward=args.legacy_reward,
    )
    text = recipe_yaml(imported, args.script)
    if args.out == "-":  # checked from a scratch copy, printed, nothing kept
        with owned.scratch("grpolab-import-") as tmp:
            out = Path(tmp) / f"{imported.name}.yaml"
            out.write_text(text)
            problems = _check(out, shown=f"{imported.name}.yaml (stdout)")
        print(text, end="")
        report = sys.stderr
    else:
        out = Path(args.out).expanduser() if args.out else params_dir() / "recipes" / f"{imported.name}.yaml"
        if os.path.lexists(out):  # a dangling link too: nothing is written through it
            raise InputError(f"{out} exists already; pick another --name or --out (nothing was written)")
        if is_system_folder(out.parent) and args.out:
            raise InputError(f"--out {args.out}: {out.parent} is a system folder; write the recipe somewhere of yours")
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "x") as fh:  # exclusive: never replaces a file that appeared meanwhile
            fh.write(text)
        problems = _check(out)
        report = sys.stdout
    if args.json and args.out != "-":
        print_json(
            {
                "recipe": str(out),
                "name": imported.name,
                "unmapped": imported.unmapped,
                "deprecated": imported.deprecated,
                "legacy": imported.legacy,
                "unset": imported.unset,
                "notes": imported.notes,
                "problems": [p.to_dict() for p in problems],
            }
        )
    else:
        print(f"wrote {out}" if args.out != "-" else f"# imported from {args.script}", file=report)
        for u in imported.unset:
            how = f"the script's default {u['default']!r} applied" if u["default"] is not None else "it expanded empty"
            print(f"  unset in your environment: ${u['name']} ({how})", file=report)
        for u in imported.legacy:
            print(f"  LEGACY REWARD KEY: {u['key']} = {u['value']!r}: {u['why']}", file=report)
        for u in imported.unmapped:
            label = "differs on purpose (legacy reward key applied)" if u.get("legacy") else "not reproduced"
            print(f"  {label}: {u['key']} = {u['value']!r}: {u['why']}", file=report)
        for u in imported.deprecated:
            print(f"  deprecated in the script: {u['key']} = {u['value']!r}: {u['why']}", file=report)
        for note in imported.notes:
            print(f"  note: {note}", file=report)
        print(
            problem_report(problems) + (f"; check it with: grpolab check {out}" if args.out != "-" else ""), file=report
        )
    return 1 if errors(problems) else 0


def _check(path: Path, shown: str | None = None) -> list:
    """The gate's problems for the written recipe; `shown` replaces a scratch copy's path in their messages."""
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.recipe.loader import load_recipe
    from grpolab.rules.gate import gate

    try:
        problems = gate(load_recipe(path))
    except RecipeError as exc:
        problems = exc.problems
    if shown is None:
        return problems
    return [
        dataclasses.replace(p, message=p.message.replace(str(path), shown).replace(str(path.parent), "."))
        for p in problems
    ]
