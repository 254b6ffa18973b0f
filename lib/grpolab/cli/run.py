"""`grpolab run RECIPE [--set k=v ...] [--ray-address A] [--wait] [--dry-run] [--run-id ID]`: submit a run.

The recipe is checked first, then its data and reward (`grpolab data`: with --wait the sample's summary and the
reward's dry run are printed); errors stop the launch before anything is submitted (exit 1). With --wait the
command follows the run (step / total, latest reward) and its exit status is the run's outcome. A cluster that
cannot be reached is an error on stderr (exit 1), within seconds.
"""

from __future__ import annotations

from grpolab.cli.common import add_recipe_args, load, print_json, print_problems
from grpolab.problems import InputError, errors


def register(sub) -> None:
    p = sub.add_parser("run", help="check, then submit a run as a Ray job")
    add_recipe_args(p)
    p.add_argument(
        "--ray-address",
        default=None,
        help="Ray dashboard (http://HOST:8265) or cluster address; default: $RAY_ADDRESS, else the embedded local head",
    )
    p.add_argument("--wait", action="store_true", help="follow the run until it ends; exit 1 unless it succeeded")
    p.add_argument("--dry-run", action="store_true", help="print what would be submitted and stop")
    p.add_argument("--run-id", default=None, help="name the run (letters, digits, . _ -); default: generated")
    p.set_defaults(func=main)


def main(args) -> int:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs import launch, runs

    if args.run_id is not None:  # a dry run too: the id a user would launch with must be usable
        try:
            runs.check_run_id(args.run_id)
        except ValueError as exc:
            raise InputError(str(exc)) from None
    recipe = load(args)
    try:
        if args.dry_run:
            print_json(launch.prepare(recipe, address=args.ray_address).describe())
            return 0
        if not data_ok(recipe, args.wait):
            return 1
        run = launch.submit(recipe, address=args.ray_address, run_id=args.run_id)
    except launch.LaunchBlocked as exc:
        print_problems(exc.problems, header=f"recipe {recipe.name} has errors; nothing was submitted:")
        return 1
    except (ValueError, FileExistsError) as exc:
        raise InputError(str(exc)) from None
    return follow(run, args.wait)


def data_ok(recipe, summary: bool) -> bool:
    """The data and the reward's dry run (grpolab.rules.data): False when they found an error. The summary and the
    problems are printed with `summary` (--wait, as `make run` does: a run followed here) or an error."""
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.rules.data import lines, report

    rep = report(recipe)
    if summary or errors(rep.problems):
        print("\n".join(lines(rep)), flush=True)
        if rep.problems:
            print_problems(rep.problems)
    if errors(rep.problems):
        print(f"recipe {recipe.name}: its data or reward has errors; nothing was submitted")
        return False
    return True


def follow(run, wait: bool) -> int:
    """After a submission (run, resume): say how to follow the run, or follow it and return its outcome."""
    if not wait:
        print(f"follow it with: grpolab status {run.run_id}   |   grpolab monitor {run.run_id}")
        return 0
    try:
        # lazy: orjson, pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
        from grpolab.monitor.progress import follow_run

        outcome = follow_run(run)  # one metrics view; curves.png with alerts marked; the failure classified once
    except KeyboardInterrupt:
        print(f"\nstopped following; the run goes on (grpolab status {run.run_id} / grpolab stop {run.run_id})")
        return 130
    status = outcome.status
    print(outcome.text)
    if (status.get("endpoint") or {}).get("embedded"):
        print("the embedded Ray head keeps running for the next run; `grpolab head stop` stops it")
    return 0 if status.get("state") == "SUCCEEDED" and not outcome.summary.get("collapse") else 1
