"""`grpolab preflight RECIPE [--set k=v ...] [--ray-address A] [--json]`: check the cluster and every node.

Prints a table of checks (failures first, each with its fix) or, with --json, one JSON document
{recipe, address, failed, counts, nodes, elapsed_s, rows: [{check, node, status, detail, fix}]}.
Status: ok | warn | fail | skip (skip = does not apply here, and says why).
Exit 0 when no check fails (warnings allowed), 1 when any check fails, 2 for unusable input.
--ray-address takes what `grpolab run` takes: the dashboard http://HEAD:8265, or the cluster address HEAD:6379;
without it, RAY_ADDRESS is used, else the embedded Ray head (started when needed). No row shows a secret's value.
"""

from __future__ import annotations

import shutil
import sys

from grpolab.cli.common import add_recipe_args, print_json
from grpolab.preflight import run_preflight
from grpolab.problems import InputError


def register(sub) -> None:
    p = sub.add_parser(
        "preflight",
        help="check the Ray cluster and every node before a run is launched",
        description=__doc__.split("\n\n")[0],
    )
    add_recipe_args(p)
    p.add_argument(
        "--ray-address",
        metavar="A",
        default=None,
        help="Ray dashboard (http://HEAD:8265) or cluster address (HEAD:6379); default: $RAY_ADDRESS, else the "
        "embedded head",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")
    p.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="seconds to wait for the per-node checks (default 180)"
    )
    p.add_argument("--no-fold", action="store_true", help="one table line per node, even when nodes agree")
    p.set_defaults(func=main)


def main(args) -> int:
    if args.timeout is not None and args.timeout <= 0:
        raise InputError(f"--timeout {args.timeout}: give a positive number of seconds")

    def progress(line: str) -> None:  # stdout is the report's (JSON stays parseable)
        print(line, file=sys.stderr, flush=True)

    report = run_preflight(
        args.recipe, address=args.ray_address, progress=progress, overrides=args.overrides, timeout_s=args.timeout
    )
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.table(fold=not args.no_fold, width=max(shutil.get_terminal_size((110, 24)).columns, 90)))
    return 1 if report.failed else 0
