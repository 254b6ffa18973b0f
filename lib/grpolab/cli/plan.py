"""`grpolab plan MODEL|RECIPE [--nodes N] [--hardware P] [--set k=v ...] [--top K | --all] [--write NAME] [--json]`.

Every parallel layout of the model on the cluster that passes every rule, ranked by an ESTIMATED step time
(grpolab.plan.planner's cost model, constants in params/hardware/). Exit 0 with at least one valid layout, 1 when
none fits (it names the smallest cluster that does) or the recipe has errors no layout fixes, 2 for bad input.
"""

from __future__ import annotations

import shlex
import sys

from grpolab.cli import UsageError
from grpolab.cli.common import add_set_arg, json_text


def register(sub) -> None:
    p = sub.add_parser("plan", help="every valid parallel layout for a model on a cluster, ranked (estimates)")
    p.add_argument(
        "target",
        metavar="MODEL|RECIPE",
        help="a recipe (name under params/recipes/ or a YAML path) or a model card in params/models/",
    )
    p.add_argument("--nodes", type=int, metavar="N", help="plan for N nodes (cluster.nnodes)")
    p.add_argument("--hardware", metavar="PROFILE", help="a profile in params/hardware/, e.g. ascend-a3")
    add_set_arg(p, "data.max_response_length=16384")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--top", type=int, default=10, metavar="K", help="list the best K layouts (default 10)")
    group.add_argument("--all", action="store_true", help="list every valid layout")
    p.add_argument("--write", metavar="NAME", help="write the best layout as params/recipes/NAME.yaml")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=main)


def main(args) -> int:
    from grpolab.cli.common import print_problems
    from grpolab.plan import planner
    from grpolab.problems import InputError, RecipeError

    if args.nodes is not None and args.nodes < 1:
        raise UsageError(f"--nodes must be a positive number of nodes, not {args.nodes}")
    if args.top is not None and args.top < 1:
        raise UsageError(f"--top must be at least 1, not {args.top}")
    try:
        recipe = planner.load(args.target, args.nodes, args.hardware, args.overrides)
    except InputError as exc:
        raise UsageError(str(exc)) from None
    except RecipeError as exc:
        print_problems(exc.problems, as_json=args.json)
        return 1
    p = planner.plan(recipe)
    listed = planner.choices(p, None if args.all else args.top)
    if not listed and not p.recipe_errors and p.facts is not None:
        p.smallest_nodes = planner.smallest_cluster(args.target, args.hardware, args.overrides)
    written = None
    if args.write and listed:
        try:
            written = planner.write_recipe(args.write, args.target, listed[0], recipe, args.hardware, args.overrides)
        except InputError as exc:
            raise UsageError(str(exc)) from None
    best = listed[0] if listed else None
    c = recipe.cluster
    if args.json:
        print(
            json_text(
                {
                    "recipe": recipe.name,
                    "cluster": {
                        "nnodes": c.nnodes,
                        "devices_per_node": c.devices_per_node,
                        "hardware": c.hardware,
                        "world_size": recipe.world_size,
                    },
                    "note": "memory_gb and est_step_s are estimates from a simple cost model (see README: grpolab plan)",
                    "layouts": [planner.to_dict(ch, best) for ch in listed],
                    "rejected": dict(sorted(p.rejected.items())),
                    "candidates": p.candidates,
                    "valid": {"train": len(p.train), "rollout": len(p.rollout)},
                    "recipe_errors": [q.to_dict() for q in p.recipe_errors],
                    "smallest_nodes": p.smallest_nodes,
                    "written": str(written) if written else None,
                },
                indent=2,
                default=str,
            )
        )
    else:
        _print(recipe, p, listed, best, written)
    return 0 if listed and not p.recipe_errors else 1


def _print(recipe, p, listed, best, written) -> None:
    from grpolab.plan import planner

    c = recipe.cluster
    print(
        f"plan for {recipe.name} on {c.nnodes} x {c.devices_per_node} {c.hardware} ({recipe.world_size} devices): "
        f"{p.candidates.get('train', 0)} training and {p.candidates.get('rollout', 0)} rollout layouts tried, "
        f"{len(p.train)} and {len(p.rollout)} pass the rules"
    )
    print("all memory and time figures are ESTIMATES from a simple cost model (README: grpolab plan)")
    if recipe.train.engine == "trl":
        print("train.engine trl runs in one process: there is no parallel layout to choose")
    if listed:
        letters = {}
        for ch in listed:
            if ch.train.layout.pp_layout and ch.train.layout.pp_layout not in letters:
                letters[ch.train.layout.pp_layout] = chr(ord("A") + len(letters) % 26) + (
                    str(len(letters) // 26) if len(letters) >= 26 else ""
                )
        rows = [
            (
                "#",
                "train layout",
                "rollout",
                "est. train GB free",
                "est. rollout GB free",
                "est. rollout s",
                "est. train s",
                "est. step s",
                "why",
            )
        ]
        for i, ch in enumerate(listed, 1):
            mark = f" [{letters[ch.train.layout.pp_layout]}]" if ch.train.layout.pp_layout else ""
            rows.append((str(i), ch.train.layout.short() + mark, ch.rollout.layout.short(), *planner.figures(ch, best)))
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        for r in rows:
            print("  ".join(v.ljust(w) for v, w in zip(r, widths)) + "  " + r[-1])
        for layout, letter in letters.items():
            print(f"[{letter}] train.pp_layout {layout}")
        print(f"best as overrides: {' '.join('--set ' + shlex.quote(o) for o in best.overrides())}")
    if p.rejected:
        print(
            "rejected by rule (a layout counts once under each rule it breaks): "
            + ", ".join(f"{rule} {n}" for rule, n in sorted(p.rejected.items(), key=lambda kv: -kv[1]))
        )
    for q in p.recipe_errors:
        print(f"recipe error no layout fixes: {q.format()}")
    if not listed and p.smallest_nodes:
        print(
            f"no layout fits {c.nnodes} x {c.devices_per_node}: the smallest cluster that fits is "
            f"{p.smallest_nodes} x {c.devices_per_node} ({p.smallest_nodes * c.devices_per_node} devices): "
            f"--nodes {p.smallest_nodes}"
        )
    elif not listed and not p.recipe_errors:
        print(f"no layout fits on any cluster of up to {planner.SEARCH_NODES[-1]} nodes of {c.devices_per_node}")
    if written:
        print(f"wrote {written} (check it: grpolab check {written.stem})")
    sys.stdout.flush()
