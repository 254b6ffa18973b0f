"""`grpolab export RUN [--step N] [--out DIR] [--force] [--json]`: Hugging Face weights from a run's checkpoint, checked.

The latest complete checkpoint, or the one --step names. verl checkpoints go through verl's own merger as a Ray job
on the run's cluster; `tiny`'s are transformers models already. The result is checked against the model's card
(every expected key once, no stray suffixes, the experts of every MoE layer, total parameters within 1 %), and a
`tiny` export is loaded back with transformers and must score the validation accuracy the run logged at that step.
--out is a new or empty folder (or, with --force, an earlier export of grpolab's, whose files are named), never a
checkpoint, run or system folder; the weights are written beside it and renamed into place once checked. One export
writes into a folder at a time (a second is refused while the first runs); a file put into it meanwhile is never
replaced or deleted.
Exit status: 0 exported and checked, 1 nothing to export, a refused folder or a check failed, 2 unusable input
(no such run, --out an existing file).
"""

from __future__ import annotations

import json
import sys

from grpolab.jobs import cluster


def register(sub) -> None:
    p = sub.add_parser("export", help="Hugging Face weights from a run's checkpoint, checked against the model card")
    p.add_argument("run", metavar="RUN", help="a run id, or a run directory")
    p.add_argument("--step", type=int, default=None, metavar="N", help="the checkpoint's step (default: the latest)")
    p.add_argument(
        "--out", default=None, metavar="DIR", help="where the weights go (default: RUN/export/global_step_N)"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an earlier export of grpolab's in --out (never any other folder's files)",
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON document")
    p.set_defaults(func=main)


def main(args) -> int:
    # lazy: pydantic (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs.export import ExportRefused, export, plan_export
    from grpolab.jobs.runs import resolve_run

    run = resolve_run(args.run)
    progress = (lambda line: print(line, file=sys.stderr)) if args.json else print
    try:
        plan = plan_export(run, args.step, args.out, force=args.force)
        progress(f"exporting run {run.run_id} step {plan.checkpoint.step} ({plan.mode}) to {plan.out}")
        if plan.replaces:
            progress(f"--force: replacing the earlier export in {plan.out}: {', '.join(plan.replaces)}")
        report = export(plan, progress)
    except ExportRefused as exc:
        if args.json:
            print(json.dumps({"error": str(exc), "exit": 1}))
        print(f"grpolab export: {exc}", file=sys.stderr)
        return 1
    except cluster.ClusterError as exc:
        print(f"grpolab export: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0 if not report["problems"] else 1
    weights = report.get("weights") or {}
    if weights:
        print(
            f"weights: {weights['tensors']} tensors, {weights['params']:,} parameters "
            f"(card: {weights['expected_params']:,.0f})"
        )
    score = report.get("validation")
    if score:
        logged = "none" if score["logged"] is None else f"{score['logged']:.4f}"
        print(
            f"validation ({score['metric']}): {score['accuracy']:.4f} from the exported weights, "
            f"{logged} logged by the run at step {report['step']}"
        )
    for problem in report["problems"]:
        print(f"problem: {problem}")
    print(f"{'exported' if not report['problems'] else 'exported, with problems,'} to {report['out']}")
    return 0 if not report["problems"] else 1
