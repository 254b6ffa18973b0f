"""`grpolab runs | status RUN | logs RUN | stop RUN`: list and control runs (RUN: run id or run directory).

Every state shown comes from grpolab.jobs.state.refresh, the one run-state function: `runs` right after a run
ended on its own says how it ended, with nobody having watched it. A run whose record is unreadable is one row
("unreadable record: why") while the others list; `status` of it is an error (exit 2). Nothing here needs to
write: on a full disk or a read-only runs folder the state is shown (and not recorded), logs print, stop stops.
A run id whose folder was deleted mid-run is reported as such, and its Ray job can still be stopped by that id.
A run whose training collapsed (grpolab.monitor.collapse) says so after its row, and in `status` (exit 1).
"""

from __future__ import annotations

import time

from grpolab.cli.common import print_json, whole_number
from grpolab.jobs.reach import ClusterError
from grpolab.problems import InputError


def register(sub) -> None:
    p = sub.add_parser("runs", help="list the runs under runs/")
    p.add_argument("--json", action="store_true", help="print the runs as one JSON list")
    p.set_defaults(func=list_main)
    for verb, helptext, func in (
        ("status", "refresh and show a run's state", status_main),
        ("logs", "print a run's job log", logs_main),
        ("stop", "stop a running run (its record keeps every finished step)", stop_main),
    ):
        q = sub.add_parser(verb, help=helptext)
        q.add_argument("run", metavar="RUN", help="a run id, or a run directory")
        if verb == "logs":
            q.add_argument(
                "--tail",
                type=whole_number("a whole number of lines", "give the number of last lines to print (0: all)"),
                default=0,
                metavar="N",
                help="only the last N lines (0: all)",
            )
        if verb in ("status", "stop"):
            q.add_argument("--json", action="store_true", help="print the run's status as one JSON document")
        q.set_defaults(func=func)


def _when(stamp) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(stamp)) if stamp is not None else "?"
    except (OverflowError, ValueError, OSError, TypeError):
        return "?"


def list_main(args) -> int:
    # lazy: pydantic (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs import lineage, state
    from grpolab.jobs.runs import BadRecord, scan_runs
    from grpolab.monitor.collapse import collapse_dict, run_collapse

    entries = scan_runs()
    clients = state.Clients()
    rows = []
    for entry in entries:
        status, problem, collapse = entry.record, entry.problem, None
        if problem is None:
            try:
                status = state.refresh(entry.run, clients)
            except BadRecord as exc:
                problem = str(exc)
        if problem is None:
            try:  # the run's curves: a run SUCCEEDED with its policy ruined is not a success
                collapse = run_collapse(entry.run)
            except Exception as exc:  # unreadable metrics or thresholds: the state is still worth listing
                status = {**status, "note": f"training health not read: {type(exc).__name__}: {exc}"}
        rows.append((entry, status, problem, collapse))
    if args.json:
        print_json(
            [
                {"run_id": e.run.run_id, "path": str(e.run.path), "error": f"unreadable record: {p}"}
                if p
                else {
                    **s,
                    "elapsed_s": state.elapsed_s(s),
                    "collapse": collapse_dict(c),
                    "restarts": lineage.headline(lineage.read(e.run.path)),
                }
                for e, s, p, c in rows
            ]
        )
        return 0
    if not rows:
        print("no runs yet: start one with `grpolab run tiny`")
        return 0
    print(f"{'RUN':44} {'STATE':10} {'RECIPE':22} CREATED")
    for entry, status, problem, collapse in rows:
        if problem:
            print(f"{entry.run.run_id:44} {'?':10} {'?':22} unreadable record: {problem}")
        else:
            recipe = status.get("recipe") or "?"
            parent = status.get("resumed_from") or {}  # grpolab resume: the run and step it continues
            link = f"  resumed from {parent.get('run_id')} at step {parent.get('step')}" if parent else ""
            healed = lineage.headline(lineage.read(entry.run.path))  # its driver's restarts (grpolab.heal)
            link += f"  {healed if len(healed) <= 100 else healed[:97] + '...'}" if healed else ""
            if collapse is not None:  # after the columns: `SUCCEEDED  ...  but training collapsed at step 2 (...)`
                link += f"  but {collapse.text} ({', '.join(collapse.rules)})"
            print(f"{entry.run.run_id:44} {status['state']:10} {recipe:22} {_when(status.get('created'))}{link}")
    return 0


def _run(ref):
    """The run RUN names; for a run id whose folder was deleted, (run id, endpoint, Ray's job) instead."""
    # lazy: pydantic (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs import control
    from grpolab.jobs.runs import BadRecord, RunNotFound, check_run_id, resolve_run

    try:
        return resolve_run(ref)
    except BadRecord as exc:
        raise InputError(f"run {ref!r} has an unreadable record: {exc}") from None
    except RunNotFound:
        try:
            orphan = control.find_orphan(check_run_id(str(ref)))
        except ValueError:
            orphan = None
        if orphan is None:
            raise
        return (str(ref), *orphan)


def status_main(args) -> int:
    # lazy: orjson, pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs import control, lineage, state
    from grpolab.monitor.collapse import collapse_dict, run_collapse
    from grpolab.monitor.outcome import describe_outcome

    run = _run(args.run)
    if isinstance(run, tuple):  # its folder was deleted: what Ray says of its job
        run_id, ep, info = run
        if args.json:
            print_json({"run_id": run_id, "deleted": True, "job": control.job_summary(info), "endpoint": ep.to_dict()})
        else:
            print(control.describe_orphan(run_id, ep, info))
            print(f"stop its job with `grpolab stop {run_id}`")
        return 1
    status = state.refresh(run)
    collapse = run_collapse(run)
    if args.json:
        attempts = lineage.read(run.path).get("attempts")  # every attempt of the run (grpolab.heal), if any
        print_json(
            {
                **status,
                "elapsed_s": state.elapsed_s(status),
                "collapse": collapse_dict(collapse),
                "attempts": attempts,
                "restarts": lineage.headline({"attempts": attempts}),
            }
        )
    else:
        print(describe_outcome(run, status, collapse=collapse))
        if status.get("note"):
            print(f"note: {status['note']}")
    return 1 if status.get("state") in ("FAILED", "LOST") or collapse is not None else 0


def logs_main(args) -> int:
    # lazy: pydantic (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs import control, state

    run = _run(args.run)
    if isinstance(run, tuple):
        raise InputError(f"run {run[0]}: its folder was deleted, and its log with it")
    state.refresh(run)  # a remote cluster's log is copied into the run directory (when the disk allows)
    if not control.write_log(run, args.tail):
        print(f"run {run.run_id} has no log yet")
    return 0


def stop_main(args) -> int:
    # lazy: pydantic (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs import control
    from grpolab.jobs.runs import TERMINAL_STATES

    run = _run(args.run)
    try:
        if isinstance(run, tuple):
            run_id, ep, _ = run
            final = control.stop_orphan(run_id, ep)
            if final not in TERMINAL_STATES:
                raise ClusterError(f"asked Ray to stop the job of run {run_id}, which is still {final}")
            message, status = f"run {run_id} (folder deleted): its Ray job is {final}", {"state": final}
        else:
            status = control.stop_run(run)
            message = f"run {run.run_id}: {status.get('state')}"
            if status.get("state") not in TERMINAL_STATES:  # never "stopped" while the job goes on
                raise ClusterError(
                    f"asked Ray to stop run {run.run_id}, which is still {status.get('state')}; "
                    f"check it with `grpolab status {run.run_id}`"
                )
    except control.NothingToStop as exc:
        message, status = str(exc), None
    if args.json:
        print_json({"message": message, "status": status})
    else:
        print(message)
    return 0
