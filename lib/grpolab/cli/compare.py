"""`grpolab compare RUN --baseline RUN`: the regression gate over steps 5-14 (or --steps): device memory,
throughput, step time and reward mean against the thresholds in `monitor.regression` (params/base.yaml).

Prints a table of every compared figure. Exit status: 0 pass, 1 regression (or a run with no step in the
window, or nothing to compare: no figure of the gate logged by both runs, an error), 2 unusable input (no such
run, bad --steps, bad thresholds file).
"""

from __future__ import annotations

import re
import sys

from grpolab.cli.common import print_json
from grpolab.problems import InputError

_STEPS = re.compile(r"^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$")


def register(sub) -> None:
    p = sub.add_parser("compare", help="regression gate: a run against a baseline over steps 5-14", description=__doc__)
    p.add_argument("run", metavar="RUN", help="a run id, a run directory or a metrics.jsonl")
    p.add_argument("--baseline", required=True, metavar="RUN", help="the run to compare against")
    p.add_argument(
        "--steps",
        metavar="FIRST-LAST",
        help="steps to compare, inclusive (default: regression.steps of the thresholds, 5-14)",
    )
    p.add_argument(
        "--thresholds",
        metavar="FILE",
        help="gate thresholds: a recipe or a `monitor:` section (default: params/base.yaml)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.set_defaults(func=main)


def parse_steps(text: str) -> tuple[int, int]:
    match = _STEPS.match(text or "")
    if not match:
        raise InputError(f"--steps {text!r}: expected FIRST-LAST (e.g. --steps 5-14) or one step number")
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if last < first:
        raise InputError(f"--steps {text!r}: the first step is after the last; write it as {last}-{first}")
    return first, last


def main(args) -> int:
    # lazy: orjson, pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.monitor.compare import compare
    from grpolab.monitor.metrics import open_run
    from grpolab.monitor.rundiff import differences, value_text
    from grpolab.monitor.thresholds import load_thresholds

    steps = parse_steps(args.steps) if args.steps is not None else None
    thresholds = load_thresholds(args.thresholds)
    run_record, run = open_run(args.run)
    baseline_record, baseline = open_run(args.baseline)
    result = compare(run, baseline, steps=steps, thresholds=thresholds)
    # what differs in the recipe, the stack and the launch records, before the curves (grpolab.monitor.rundiff)
    both = run_record.is_run and baseline_record.is_run
    diff = differences([run_record, baseline_record]) if both else None
    if diff is not None and not args.json:
        print(f"differences ({run_record.run_id} | {baseline_record.run_id}): {len(diff) or 'none'}")
        print("".join(f"  {d.key}: {value_text(d.values[0])} | {value_text(d.values[1])}\n" for d in diff))
    if result.nothing_to_compare:  # an error, never a PASS: exit 1, the error contract of every verb
        message = result.problems[0]
        if args.json:
            print_json({"error": message, "exit": 1})
        else:
            print(result.table())  # what each run logged: the table shows every figure skipped or one-sided
        print(f"grpolab compare: {message}", file=sys.stderr)
        return 1
    if args.json:
        found = [{"key": d.key, "values": list(d.values)} for d in diff] if diff is not None else None
        print_json({**result.to_dict(), "differences": found})
    else:
        print(result.table())
    return 0 if result.passed else 1
