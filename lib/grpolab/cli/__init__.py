"""`grpolab`: a thin command line over the same functions the notebooks call.

One small module per verb (grpolab/cli/<verb>.py), each with `register(subparsers)` that adds its parser and
sets `func`, a function `(args) -> int` returning the exit status. Exit status: 0 clean (warnings allowed),
1 problems found (errors, failed checks, a failed run, a regression), 2 unusable input.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# verb -> module under grpolab.cli; a module may register several verbs (runs, status, logs, stop).
VERBS = {
    "ls": "ls",
    "show": "show",
    "check": "check",
    "render": "render",
    "preflight": "preflight",
    "run": "run",
    "runs": "runs",
    "status": "runs",
    "logs": "runs",
    "stop": "runs",
    "monitor": "monitor",
    "compare": "compare",
    "head": "head",
    "import": "import_",
    "plan": "plan",
}


class UsageError(Exception):
    """Unusable input (no such recipe, unreadable file, bad arguments): exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grpolab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    for module in dict.fromkeys(VERBS.values()):
        importlib.import_module(f"grpolab.cli.{module}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"grpolab {args.verb}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
