"""`grpolab diagnose LOG|RUN|-`: why a job failed, from any log: the cause, the first rank and node that failed or
stalled, what to change, and the lines that prove it (origin first).

LOG is any log file (a verl console log, a Ray job log, a driver's stdout; also of runs GRPO Lab did not launch),
or a folder of logs, one per rank (each file's rank from its name: rank3.log, worker-3.txt); `-` reads stdin. RUN
is a run id or run directory: its whole logs/job.log and status message, then, when the log shows no failure, its
status and metrics (a run SUCCEEDED without a training step, a constant reward, a throughput collapse). A run's
log gives the same answer as the same file given as LOG.

Exit status: 1 a failure was found (its cause printed), 0 none, 2 unusable input (nothing readable there).
"""

from __future__ import annotations

import contextlib
import os
import sys
import textwrap
from pathlib import Path

from grpolab import run_folder
from grpolab.cli.common import print_json
from grpolab.problems import InputError
from grpolab.recipe.files import is_regular

_WIDTH = 110


def register(sub) -> None:
    p = sub.add_parser(
        "diagnose",
        help="why a job failed, from any log file, folder of per-rank logs, stdin or run",
        description=__doc__,
    )
    p.add_argument("target", metavar="LOG|RUN|-", help="a log file, a folder of per-rank logs, `-` (stdin) or a run")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument(
        "--no-refresh", action="store_true", help="for a run: do not ask Ray for its state; use status.json as it is"
    )
    p.set_defaults(func=main)


def diagnose_target(target: str, refresh: bool = True, scan=None) -> tuple[str, object]:
    """(what was read, Failure | None) for a LOG, a folder of logs, `-` or a RUN; InputError when unusable (also a
    file that is not a text log: binary data, or compressed in a format not read here). `scan`: the
    grpolab.monitor.diagnose.Scan a log is read with (asked for its family afterwards)."""
    # lazy: orjson, pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs.runs import BadRecord, RunNotFound, resolve_run
    from grpolab.monitor.diagnose import diagnose_files, diagnose_stream
    from grpolab.monitor.logread import NotALog, log_files

    try:
        if target == "-":
            return "stdin", diagnose_stream(sys.stdin.buffer, scan=scan)
        path = Path(target).expanduser()
        if path.is_file() or (path.exists() and not path.is_dir()):
            if not is_regular(path):  # a FIFO would block the reader until someone writes
                raise InputError(f"{target}: not a regular file")
            if not os.access(path, os.R_OK):
                raise InputError(f"{target}: cannot be read (permission denied)")
            return str(path), diagnose_files([(path, None)], scan=scan)
        if path.is_dir() and not run_folder.status_file(path).exists():
            files = [(p, rank) for p, rank in log_files(path) if is_regular(p) and os.access(p, os.R_OK)]
            if not files:
                raise InputError(f"{target}: a folder with no readable log files")
            return f"{path} ({len(files)} files)", diagnose_files(files, scan=scan)
    except NotALog as exc:
        raise InputError(str(exc)) from None
    try:
        run = resolve_run(target)
        return f"run {run.run_id}", _run(run, refresh)
    except (RunNotFound, BadRecord) as exc:
        raise InputError(f"{target}: no such log file, folder or run ({exc})") from None


def _run(run, refresh: bool):
    # lazy: orjson, pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs import state as run_state
    from grpolab.monitor.diagnosis import run_failure
    from grpolab.monitor.metrics import MetricsView
    from grpolab.monitor.thresholds import thresholds_for

    status = run.record()
    if refresh:
        with contextlib.suppress(Exception):  # Ray down or unreachable: the record on disk is still worth diagnosing
            status = run_state.refresh(run)
    try:
        thresholds = thresholds_for(run)
    except Exception:  # a run without its recipe: the defaults of params/base.yaml
        thresholds = None
    return run_failure(run, status, MetricsView.for_run(run), thresholds)


def format_failure(source: str, failure, family: str = "none") -> str:
    from grpolab.monitor.firsterror import FRAME  # lazy: orjson, pydantic, yaml (loaded by then, as the verb's)

    if failure is None:
        return f"{source}: no failure found" + (" (warnings only)" if family == "warning-only" else "")
    out = [f"{source}: {failure.cause}" + (f" ({failure.family})" if failure.family not in ("", failure.cause) else "")]
    out.append(textwrap.fill(failure.message, _WIDTH, initial_indent="  ", subsequent_indent="  "))
    out.append(textwrap.fill(failure.fix, _WIDTH, initial_indent="  fix: ", subsequent_indent="       "))
    if failure.first_error:
        out.append(
            textwrap.fill(failure.first_error, _WIDTH, initial_indent="  first error: ", subsequent_indent="    ")
        )
        if failure.frame:
            # a log cut inside its traceback (its first error a frame): where it stops, not what raised
            cut = FRAME.search(failure.first_error.split("\n", 1)[0]) is not None
            out.append(
                f"    {'the log stops inside its traceback, in' if cut else 'raised in'} {failure.library}: {failure.frame}"
            )
    if failure.lines:
        out.append("  evidence (origin first):")
        numbers = failure.line_numbers or [None] * len(failure.lines)
        files = failure.files or [None] * len(failure.lines)
        for number, name, line in zip(numbers, files, failure.lines):
            where = f"{Path(name).name}:" if name else ""
            where += f"{number}" if number else ""
            out.append(f"    {where + ': ' if where else ''}{line}")
    return "\n".join(out)


def main(args) -> int:
    # lazy: orjson, pydantic, yaml (the diagnosis; the parser imports every verb's module, a command loads only its
    # own verb's)
    from grpolab.monitor.diagnose import Scan

    scan = Scan()
    source, failure = diagnose_target(args.target, refresh=not args.no_refresh, scan=scan)
    family = (failure.family or failure.cause) if failure is not None else scan.family()  # a silent one: its cause
    if args.json:
        print_json({"input": source, "family": family, "failure": failure.to_dict() if failure else None})
    else:
        print(format_failure(source, failure, family))
    return 1 if failure is not None else 0
