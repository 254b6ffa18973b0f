"""`grpolab plan MODEL|RECIPE [--nodes N] [--hardware P] [--set k=v ...] [--mean-response TOKENS|RUN]
[--top K | --all] [--write NAME] [--json]`.

Every parallel layout of the model on the cluster that passes every rule, ranked by an ESTIMATED step time
(the cost model of grpolab.recipe.cost and grpolab.recipe.memory, constants in params/hardware/), and the
estimate for the recipe's own layout. Exit 0 with at least one valid layout, 1 when none fits (it names the
smallest cluster that does) or the recipe has errors no layout fixes, 2 for bad input.
"""

from __future__ import annotations

import shlex
import statistics
import sys

from grpolab.cli.common import add_set_arg, print_json, print_problems
from grpolab.paths import check_name
from grpolab.problems import InputError, RecipeError


def register(sub) -> None:
    p = sub.add_parser("plan", help="every valid parallel layout for a model on a cluster, ranked (estimates)")
    p.add_argument(
        "target",
        metavar="MODEL|RECIPE",
        help="a recipe (name under params/recipes/ or a YAML path), or a model planned on params/base.yaml: a card "
        "in params/models/, a card file, a model directory or config.json, a hub id (the HF cache or the family "
        "table params/model_configs.yaml) or a family name",
    )
    p.add_argument("--nodes", type=int, metavar="N", help="plan for N nodes (cluster.nnodes)")
    p.add_argument("--hardware", metavar="PROFILE", help="a profile in params/hardware/, e.g. ascend-a3")
    add_set_arg(p, "data.max_response_length=16384")
    p.add_argument(
        "--mean-response",
        metavar="TOKENS|RUN",
        help="the expected mean response length (data.mean_response_length): a number of tokens, or a run whose "
        "logged response_length/mean (and prompt_length/mean) to take",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--top", type=int, default=10, metavar="K", help="list the best K layouts (default 10)")
    group.add_argument("--all", action="store_true", help="list every valid layout")
    p.add_argument("--write", metavar="NAME", help="write the best layout as params/recipes/NAME.yaml")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=main)


def mean_lengths(text: str) -> list[str]:
    """`--mean-response` as overrides: a token count, or the median of a run's logged means."""
    if text.strip().isdigit():
        if int(text) < 1:
            raise InputError(f"--mean-response must be a positive number of tokens, not {text}")
        return [f"data.mean_response_length={int(text)}"]
    # lazy: orjson, pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.jobs.runs import RunNotFound
    from grpolab.monitor.metrics import load_metrics

    try:
        view = load_metrics(text)
    except (RunNotFound, OSError, ValueError) as exc:
        raise InputError(f"--mean-response {text}: neither a number of tokens nor a run ({exc})") from None
    out = []
    for metric, key in (
        ("response_length/mean", "data.mean_response_length"),
        ("prompt_length/mean", "data.mean_prompt_length"),
    ):
        _, values = view.series(metric)
        values = [v for v in values if v and v > 0]
        if values:
            out.append(f"{key}={max(round(statistics.median(values)), 1)}")
    if not out or not out[0].startswith("data.mean_response_length"):
        raise InputError(f"--mean-response {text}: the run logged no response_length/mean")
    return out


def main(args) -> int:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.plan import io, modes, search

    if args.nodes is not None and args.nodes < 1:
        raise InputError(f"--nodes must be a positive number of nodes, not {args.nodes}")
    if args.top is not None and args.top < 1:
        raise InputError(f"--top must be at least 1, not {args.top}")
    overrides = list(args.overrides) + (mean_lengths(args.mean_response) if args.mean_response else [])
    try:
        model = io.model_target(args.target)
        recipe = io.load(args.target, args.nodes, args.hardware, overrides)
    except RecipeError as exc:
        print_problems(exc.problems, as_json=args.json)
        return 1
    p = search.plan(recipe)
    listed = search.choices(p, None if args.all else args.top)
    own = search.own_choice(p)
    if not listed and not p.recipe_errors and p.facts is not None:
        p.smallest_nodes = search.smallest_cluster(args.target, args.hardware, overrides)
    written = None
    if args.write:  # a name flag: params/recipes/NAME.yaml, never a path
        check_name(args.write, "--write")
    if args.write and listed:
        written = io.write_recipe(
            args.write, args.target, listed[0].train.layout, listed[0].rollout.layout, recipe, args.hardware, overrides
        )
    best = listed[0] if listed else None
    # the schedule modes and node splits beside the layouts (a verl engine's: the CPU trainer has no rollout engine)
    ranked = modes.compare(recipe, p.facts) if p.facts is not None and recipe.engine.priced else []
    if args.json:
        _json(recipe, p, listed, best, own, written, model, ranked)
    else:
        _print(recipe, p, listed, best, own, written, model, ranked)
    return 0 if listed and not p.recipe_errors else 1


def _json(recipe, p, listed, best, own, written, model, ranked) -> None:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.plan import modes, table

    sync = next((r.total for r in ranked if r.mode == "sync" and r.best), None)

    c = recipe.cluster
    doc = {
        "recipe": recipe.name,
        "model": None
        if model is None
        else {"name": model.card.name, "found": model.kind, "where": model.where, "base": "params/base.yaml"},
        "cluster": {
            "nnodes": c.nnodes,
            "devices_per_node": c.devices_per_node,
            "hardware": c.hardware,
            "world_size": recipe.world_size,
        },
        "note": "memory_gb and est_step_s are estimates from a simple cost model (see README: grpolab plan)",
        "workload": p.workload.to_dict() if p.workload else None,
        "layouts": [table.to_dict(ch, best) for ch in listed],
        "own": table.to_dict(own, best) if own else None,
        "rejected": dict(sorted(p.rejected.items())),
        "candidates": p.candidates,
        "valid": {"train": len(p.train), "rollout": len(p.rollout)},
        "recipe_errors": [q.to_dict() for q in p.recipe_errors],
        "smallest_nodes": p.smallest_nodes,
        "written": str(written) if written else None,
        "modes": [row.to_dict(sync) for row in ranked],
        "modes_verdict": modes.verdict(ranked) if ranked else None,
    }
    print_json(doc)


def _print(recipe, p, listed, best, own, written, model, ranked) -> None:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.plan import io, search, table

    c = recipe.cluster
    print(
        f"plan for {recipe.name} on {c.nnodes} x {c.devices_per_node} {c.hardware} ({recipe.world_size} devices): "
        f"{p.candidates.get('train', 0)} training and {p.candidates.get('rollout', 0)} rollout layouts tried, "
        f"{len(p.train)} and {len(p.rollout)} pass the rules"
    )
    if model is not None:
        print(io.base_note(model) + f" (its {' '.join('--set ' + shlex.quote(o) for o in model.overrides())})")
    print("all memory and time figures are ESTIMATES from a simple cost model (README: grpolab plan)")
    if p.workload and recipe.engine.priced:
        w = p.workload
        print(
            f"workload: {w.prompts} prompts x {w.n} = {w.sequences} sequences, mean prompt {w.prompt_mean:.0f} and "
            f"response {w.response_mean:.0f} tokens (of {w.prompt_max} and {w.response_max}), {w.updates} optimizer "
            "step(s)" + ("" if recipe.data.mean_response_length else "; set --mean-response for a real estimate")
        )
    if not recipe.engine.priced:
        print("train.engine trl runs in one process: there is no parallel layout to choose")
    if own is not None:
        print(table.own_text(own))
    if listed:
        groups, letters = table.rows(listed)
        cells = [table.HEADERS] + [
            (row.rank_text(), row.train_text(), row.rollout_text(), *row.cells(best)) for row in groups
        ]
        widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]) - 1)]
        for r in cells:
            print("  ".join(v.ljust(w) for v, w in zip(r, widths)) + "  " + r[-1])
        for text in table.legend(letters):
            print(text)
        print(f"best as overrides: {' '.join('--set ' + shlex.quote(o) for o in best.overrides())}")
    if p.rejected:
        print(
            "rejected by rule (a layout counts once under each rule it breaks): "
            + ", ".join(f"{rule} {n}" for rule, n in sorted(p.rejected.items(), key=lambda kv: -kv[1]))
        )
    if ranked:
        for line in table.modes_text(ranked):
            print(line)
    for q in p.recipe_errors:
        print(f"recipe error no layout fixes: {q.format()}")
    if not listed and p.smallest_nodes:
        print(
            f"no layout fits {c.nnodes} x {c.devices_per_node}: the smallest cluster that fits is "
            f"{p.smallest_nodes} x {c.devices_per_node} ({p.smallest_nodes * c.devices_per_node} devices): "
            f"--nodes {p.smallest_nodes}"
        )
    elif not listed and not p.recipe_errors:
        print(f"no layout fits on any cluster of up to {search.SEARCH_NODES[-1]} nodes of {c.devices_per_node}")
    if written:
        print(f"wrote {written} (check it: grpolab check {written.stem})")
    sys.stdout.flush()
