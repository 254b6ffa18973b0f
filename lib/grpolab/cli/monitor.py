"""`grpolab monitor RUN`: a run's state, last step, latest key metrics, health alerts, failure cause and wandb
location; draws the key curves into the run directory (curves.png).

RUN is a run id, a run directory or a metrics file. Exit status: 0, or 1 when the job FAILED (the cause and
its evidence are printed) or its training collapsed (an error alert still firing at the last step: the state says
"SUCCEEDED, but training collapsed at step N"); 2 when RUN or the thresholds file is unusable.
"""

from __future__ import annotations

import errno
import shlex
from pathlib import Path

from grpolab.cli.common import print_json
from grpolab.paths import in_system_tree, is_system_folder
from grpolab.problems import InputError
from grpolab.recipe.files import NotARegularFile, is_regular, kind


def register(sub) -> None:
    p = sub.add_parser(
        "monitor", help="state, metrics, alerts and failure cause of a run; draws curves.png", description=__doc__
    )
    p.add_argument("run", metavar="RUN", help="a run id, a run directory or a metrics.jsonl")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    p.add_argument("--png", metavar="PATH", help="write the curves here (default: <run directory>/curves.png)")
    p.add_argument("--no-png", action="store_true", help="do not draw the curves")
    p.add_argument(
        "--thresholds",
        metavar="FILE",
        help="alert thresholds: a recipe name or file, or a `monitor:` section (default: the run's recipe.yaml, "
        "else params/base.yaml)",
    )
    p.add_argument(
        "--no-refresh", action="store_true", help="do not ask Ray for the job's state; show the run directory as it is"
    )
    p.set_defaults(func=main)


def main(args) -> int:
    # lazy: orjson, pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.monitor.nodes import nodes_summary
    from grpolab.monitor.plots import plot_curves
    from grpolab.monitor.summary import NODES_PNG, RunMonitor, format_summary

    if args.png and args.no_png:
        raise InputError("--png and --no-png contradict each other: pass one of them")
    if args.png:
        _check_png(Path(args.png).expanduser(), args.png)
    monitor = RunMonitor(args.run, args.thresholds)
    data = monitor.update(refresh=not args.no_refresh)
    if not monitor.run.is_run and not monitor.view.steps and _size(monitor.view.path):
        raise InputError(  # a file named as RUN that holds no step: not "none logged yet"
            f'{args.run}: no training step in it: neither verl\'s metrics JSON lines ({{"step": N, "data": '
            "{...}}) nor its console lines (step:N - name:value ...); pass a run id, a run directory or a metrics "
            f"file (why a job failed, from its log: `grpolab diagnose {shlex.quote(args.run)}`)"
        )
    if not args.no_png and not args.png and not monitor.run.is_run:  # nothing is written beside a bare file
        data["notes"].append(f"{args.run} is not inside a run directory: no curves drawn; pass --png PATH to draw them")
    elif not args.no_png:
        target = Path(args.png) if args.png else monitor.run.path / "curves.png"
        try:
            if target.exists() and not is_regular(target):  # a FIFO would block the writer until someone reads
                raise NotARegularFile(errno.EINVAL, f"{kind(target.stat().st_mode)}, not a file", str(target))
            data["curves"] = str(plot_curves(monitor.view, monitor.alerts, target, title=monitor.run.run_id))
            if data.get("nodes") and monitor.run.is_run:  # the per-node small multiples beside the curves
                data["nodes"] = nodes_summary(monitor.run, monitor.thresholds.nodes, target.with_name(NODES_PNG))
        except OSError as exc:  # a read-only run directory must not hide the rest of the report
            data["notes"].append(
                f"could not write the curves to {target}: {exc.strerror or exc}; "
                "pass --png PATH to write them elsewhere"
            )
    if args.json:
        print_json(data)
    else:
        print(format_summary(data))
    return 1 if data["state"] in ("FAILED", "LOST") or data.get("collapse") else 0


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


PNG = b"\x89PNG\r\n\x1a\n"


def _check_png(target: Path, given: str) -> None:
    """--png names a new file or a PNG to draw over (an earlier curves file); never a file of another kind or a
    file in a system folder: InputError naming it and the fix (a folder is a note: the report still shows)."""
    flag = f"--png {given}"
    if is_system_folder(target.parent if target.parent != Path() else Path.cwd()) or in_system_tree(target):
        raise InputError(f"{flag}: {target.parent} is a system folder; write the curves somewhere of yours")
    if is_regular(target):
        try:
            with open(target, "rb") as fh:
                head = fh.read(len(PNG))
        except OSError as exc:
            raise InputError(f"{flag}: {exc.strerror or exc}") from None
        if head and head != PNG:
            raise InputError(f"{flag}: {target} exists and is not a PNG: it is never replaced; name a new file")
