"""`grpolab runs | status RUN | logs RUN | stop RUN`: list and control runs (RUN: run id or run directory)."""

from __future__ import annotations

import argparse
import sys
import time

from grpolab.cli import UsageError


def _count(text: str) -> int:
    """--tail N: a whole number of lines, 0 or more (argparse turns the error into one line, exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of lines") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative: give the number of last lines to print (0: all)")
    return value


def register(sub) -> None:
    p = sub.add_parser("runs", help="list the runs under runs/")
    p.set_defaults(func=list_main)
    for verb, helptext, func in (
        ("status", "refresh and show a run's state", status_main),
        ("logs", "print a run's job log", logs_main),
        ("stop", "stop a running run (its record keeps every finished step)", stop_main),
    ):
        q = sub.add_parser(verb, help=helptext)
        q.add_argument("run", metavar="RUN", help="a run id, or a run directory")
        if verb == "logs":
            q.add_argument("--tail", type=_count, default=0, metavar="N", help="only the last N lines (0: all)")
        if verb == "status":
            q.add_argument("--json", action="store_true")
        q.set_defaults(func=func)


def _run(ref):
    from grpolab.jobs.runs import RunNotFound, resolve_run

    try:
        return resolve_run(ref)
    except RunNotFound as exc:
        raise UsageError(str(exc)) from None


def list_main(args) -> int:
    from grpolab.jobs.runs import list_runs

    runs = list_runs()
    if not runs:
        print("no runs yet: start one with `grpolab run tiny`")
        return 0
    print(f"{'RUN':44} {'STATE':10} {'RECIPE':22} CREATED")
    for run in runs:
        s = run.status()
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.get("created", 0)))
        parent = s.get("resumed_from") or {}  # grpolab resume: the run and step it continues
        link = f"  resumed from {parent.get('run_id')} at step {parent.get('step')}" if parent else ""
        print(f"{run.run_id:44} {s.get('state', '?'):10} {s.get('recipe', '?'):22} {created}{link}")
    return 0


def status_main(args) -> int:
    import json

    from grpolab.jobs.launch import refresh_status
    from grpolab.monitor.outcome import describe_outcome

    run = _run(args.run)
    status = refresh_status(run)
    if args.json:
        print(json.dumps(status, indent=2, default=str))
    else:
        print(describe_outcome(run, status))
        if status.get("note"):
            print(f"note: {status['note']}")
    return 1 if status.get("state") in ("FAILED", "LOST") else 0


def logs_main(args) -> int:
    from grpolab.jobs.launch import refresh_status

    run = _run(args.run)
    refresh_status(run)
    if not run.job_log.exists():
        print(f"run {run.run_id} has no log yet")
        return 0
    lines = run.job_log.read_text(errors="replace").splitlines()
    print("\n".join(lines[-args.tail :] if args.tail else lines))
    return 0


def stop_main(args) -> int:
    from grpolab.jobs.cluster import ClusterError
    from grpolab.jobs.launch import NothingToStop, stop_run

    run = _run(args.run)
    try:
        status = stop_run(run)
    except NothingToStop as exc:
        print(str(exc))
        return 0
    except ClusterError as exc:  # unreachable, a job Ray no longer knows, or a job grpolab did not submit
        print(f"grpolab stop: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 1
    print(f"run {run.run_id}: {status.get('state')}")
    return 0
