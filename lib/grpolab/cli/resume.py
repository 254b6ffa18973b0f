"""`grpolab resume RUN [--from STEP] [--set k=v ...] [--ray-address A] [--wait] [--dry-run] [--run-id ID]`.

A new run, linked to RUN (its launch.json and status.json name RUN and the step; `grpolab runs` shows the link),
that continues from RUN's latest complete checkpoint, or the one --from names, with RUN's recipe and the --set
overrides (recorded). Everything is checked before anything is submitted (grpolab.jobs.resume): no complete
checkpoint, nothing left to train, data changed since RUN, a change the checkpoint cannot take, RUN still running:
each is one message on stderr that says why and what to do, exit 1. The rest is `grpolab run`'s.
"""

from __future__ import annotations

import json
import sys

from grpolab.cli.common import add_set_arg, print_problems, whole_number
from grpolab.cli.run import follow
from grpolab.problems import InputError, RecipeError


def register(sub) -> None:
    p = sub.add_parser("resume", help="a new run, linked to RUN, from RUN's latest (or --from) complete checkpoint")
    p.add_argument("run", metavar="RUN", help="the run to continue: a run id, or a run directory")
    p.add_argument(
        "--from",
        dest="from_step",
        type=whole_number("a step number", "give a checkpoint's step (see `grpolab monitor RUN`)"),
        default=None,
        metavar="STEP",
        help="the checkpoint's step",
    )
    add_set_arg(p, example="trainer.total_steps=2400")
    p.add_argument("--ray-address", default=None, help="as `grpolab run`: default $RAY_ADDRESS, else the embedded head")
    p.add_argument("--wait", action="store_true", help="follow the new run until it ends; exit 1 unless it succeeded")
    p.add_argument("--dry-run", action="store_true", help="check and print what would be submitted, and stop")
    p.add_argument("--run-id", default=None, help="name the new run (letters, digits, . _ -); default: generated")
    p.set_defaults(func=main)


def main(args) -> int:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs import cluster, launch, runs
    from grpolab.jobs.resume import ResumeRefused, plan_resume

    if args.run_id is not None:
        try:
            runs.check_run_id(args.run_id)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    parent = runs.resolve_run(args.run)
    try:
        plan = plan_resume(parent, args.from_step, args.overrides)
    except ResumeRefused as exc:
        print(f"grpolab resume: {exc}; nothing was submitted", file=sys.stderr)
        return 1
    except RecipeError as exc:
        print_problems(
            exc.problems, header=f"the resumed recipe of run {parent.run_id} has errors; nothing was submitted:"
        )
        return 1
    print(f"resuming run {parent.run_id} from its checkpoint at step {plan.checkpoint.step} ({plan.checkpoint.path})")
    for note in plan.notes:
        print(f"note: {note}")
    try:
        if args.dry_run:
            described = launch.prepare(plan.recipe, address=args.ray_address).describe()
            print(json.dumps({**described, "resumed_from": plan.record()}, indent=2))
            return 0
        run = launch.submit(plan.recipe, address=args.ray_address, run_id=args.run_id, resumed_from=plan.record())
    except launch.LaunchBlocked as exc:
        print_problems(exc.problems, header="the resumed recipe has errors; nothing was submitted:")
        return 1
    except (ValueError, FileExistsError) as exc:
        raise InputError(str(exc)) from None
    except cluster.ClusterError as exc:
        print(f"error: {exc}")
        return 1
    return follow(run, args.wait)
