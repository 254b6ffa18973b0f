"""`grpolab data RECIPE [--set k=v ...] [--rows N] [--no-dry-run] [--no-tokenizer] [--json]`: a bounded sample of
the recipe's train and val files (the columns verl reads, prompts as chat messages, data_source counts), the prompt
lengths against data.max_prompt_length with the model's tokenizer when it is on disk, and the reward's dry run.

`grpolab data prepare SOURCE --out DIR [--preset gsm8k|math|dapo|arith] [--question COL] [--answer COL] [--data-source S]
[--ability A] [--template T] [--extract as_is|gsm8k|boxed] [--split NAME] [--force FILE ...] [--json]`: a local jsonl,
json, csv, parquet or `datasets` folder -> verl's parquet layout, written beside nothing of yours unless --force names
the file (grpolab.verl.prepare).

Exit 0 when there is no error (warnings allowed), 1 when there are errors, 2 for unusable input.
"""

from __future__ import annotations

import sys

from grpolab.cli.common import add_set_arg, load, print_json, print_problems, whole_number
from grpolab.problems import InputError, errors
from grpolab.verl.prepare import prepare


def register(sub) -> None:
    p = sub.add_parser("data", help="sample the data, measure prompts, dry-run the reward; or `data prepare`")
    p.add_argument("recipe", metavar="RECIPE", help="a recipe (name or YAML path), or `prepare`")
    p.add_argument("source", nargs="?", metavar="SOURCE", help="prepare: the jsonl/json/csv/parquet file or folder")
    add_set_arg(p, "data.max_prompt_length=2048")
    p.add_argument("--rows", type=whole_number("a number of rows", "give 1 or more"), help="rows read per file")
    p.add_argument("--no-dry-run", action="store_true", help="do not call the reward")
    p.add_argument("--no-tokenizer", action="store_true", help="do not measure prompt lengths")
    p.add_argument("--json", action="store_true", help="one JSON document")
    prep = p.add_argument_group("prepare")
    prep.add_argument("--out", help="prepare: the folder the parquet files go to")
    prep.add_argument("--preset", help="prepare: gsm8k, math, dapo or arith (params/data_presets.yaml)")
    prep.add_argument("--question", help="prepare: the question column")
    prep.add_argument("--answer", help="prepare: the answer column")
    prep.add_argument("--data-source", help="prepare: the data_source of every row")
    prep.add_argument("--ability", help="prepare: the ability of every row")
    prep.add_argument("--template", help="prepare: the prompt, with {question}")
    prep.add_argument("--extract", choices=("as_is", "gsm8k", "boxed"), help="prepare: ground truth from the answer")
    prep.add_argument("--split", default="train", help="prepare: the split name of a single file (default train)")
    prep.add_argument(
        "--force",
        action="append",
        default=[],
        metavar="FILE",
        help="prepare: a file in --out it may replace or write beside the source (e.g. train.parquet); repeat it",
    )
    p.set_defaults(func=main)


# the `prepare` group's options, passed to grpolab.verl.prepare.prepare under the same names
_PREPARE_OPTIONS = ("preset", "question", "answer", "data_source", "ability", "template", "extract", "split")


def main(args) -> int:
    if args.recipe == "prepare":
        return _prepare(args)
    if args.source:
        raise InputError(f"unexpected {args.source!r}: `grpolab data RECIPE` takes one recipe")
    if args.rows == 0:
        raise InputError("--rows 0 reads nothing: give 1 or more")
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.rules.data import lines, report

    recipe = load(args)
    rep = report(recipe, args.rows, dry=not args.no_dry_run, tokenize=not args.no_tokenizer)
    if args.json:
        print_json(rep.to_dict())
    else:
        print("\n".join(lines(rep)))
        print_problems(rep.problems)
    return 1 if errors(rep.problems) else 0


def _prepare(args) -> int:
    if not args.source or not args.out:
        raise InputError("`grpolab data prepare SOURCE --out DIR`: give the source and --out")
    options = {name: getattr(args, name) for name in _PREPARE_OPTIONS}
    force = tuple(f for given in args.force for f in given.split(",") if f)
    done = prepare(
        args.source, args.out, **options, force=force, progress=lambda line: print(line, file=sys.stderr, flush=True)
    )
    if args.json:
        print_json(done.to_dict())
        return 0
    for split, path in done.files.items():
        replaced = " (replaced, as --force named it)" if path in done.replaced else ""
        print(f"wrote {path}: {done.rows[split]:,} rows ({split}), data_source {done.data_source}{replaced}")
    if done.skipped:
        print(f"skipped {done.skipped:,} rows, e.g. {done.skipped_why[0]}")
    print(f"{done.seconds:.1f} s; point the recipe at it with data.train_files / data.val_files")
    return 0
