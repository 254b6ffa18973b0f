"""Preflight: check every node of the cluster before a run is launched, all at once, in seconds.

    from grpolab.preflight import run_preflight
    report = run_preflight("glm5_2", address=None)   # a recipe name, a YAML path or a loaded Recipe
    print(report.table()); report.failed; report.to_json()

Three groups of rows (see grpolab.preflight.report for the row format and the status values
ok | warn | fail | skip; `skip` = the check does not apply here, and `detail` says why):

1. local (node "local"): the recipe validates (every grpolab.rules.validate rule: rows `recipe`); the installed
   verl against `stack.verl` and the renderer's target (`verl`); the rendered overrides composed against the
   installed verl's config (`verl-schema`).                                     -> grpolab.preflight.local
2. cluster (node "cluster", or the node named): Ray reachable at the address / RAY_ADDRESS / the embedded
   head (`ray`), the driver accepted (`auth`), alive nodes (`nodes`) and each node's NPU/GPU resources
   (`devices`).                                                                 -> grpolab.preflight.remote
3. per node, as Ray tasks pinned to each node and run in parallel: device runtime (`torch_npu`, `cann`,
   `npu-smi`, or `cuda`), every stack pin and required package (`stack.<package>`, `compat.*`), the env as
   the job will see it (`env`, `env.<VAR>`), the model (`model`, `model.config`, `model.weights`), the data
   files and their columns (`data.train_files`, `data.val_files`), the checkpoint directory (`checkpoint`),
   the HCCL port ranges (`ports.<VAR>`) and the open-file limit (`open-files`). -> grpolab.preflight.node

Local rows always show; when Ray cannot be reached the cluster rows fail and say why, and the per-node
checks are skipped. Nothing here raises for a broken cluster: only an unusable recipe reference does
(grpolab.problems.InputError: no such recipe, unreadable YAML, a malformed override).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from grpolab.preflight.report import CLUSTER, FAIL, OK, SKIP, STATUSES, WARN, PreflightReport, Row
from grpolab.recipe.schema import Recipe

__all__ = ["run_preflight", "PreflightReport", "Row", "OK", "WARN", "FAIL", "SKIP", "STATUSES"]


def _quiet(_: str) -> None:
    return None


def run_preflight(
    recipe: Recipe | str | Path,
    address: str | None = None,
    progress: Callable[[str], None] | None = print,
    overrides: Iterable[str] = (),
    timeout_s: float | None = None,
) -> PreflightReport:
    """Check the recipe locally, then the Ray cluster at `address` and every one of its alive nodes.

    recipe     a loaded Recipe, or a recipe name / YAML path (loaded with `overrides`)
    address    HOST:6379 or ray://HOST:10001 of a running cluster; None = RAY_ADDRESS, else the embedded
               local head (started when it does not run)
    progress   called with one line per stage (None = silent)
    timeout_s  how long to wait for the per-node checks (default remote.NODE_TIMEOUT_S)
    """
    from grpolab.preflight import remote
    from grpolab.preflight.local import local_rows, problem_row
    from grpolab.preflight.spec import node_spec
    from grpolab.problems import RecipeError
    from grpolab.recipe.loader import load_recipe

    say = progress or _quiet
    t0 = time.perf_counter()
    if not isinstance(recipe, Recipe):
        ref = str(recipe)
        try:
            recipe = load_recipe(recipe, list(overrides))
        except RecipeError as exc:  # the schema fails: nothing else can be checked meaningfully
            report = PreflightReport(Path(ref).stem, [problem_row("recipe", p) for p in exc.problems])
            report.rows.append(Row("cluster", CLUSTER, SKIP, "the recipe does not load: fix the rows above first"))
            report.elapsed_s = time.perf_counter() - t0
            return report
    elif overrides:
        raise ValueError("overrides apply to a recipe name or path, not to a loaded Recipe")
    report = PreflightReport(recipe.name)
    say(f"preflight {recipe.name}: local checks ...")
    report.rows += local_rows(recipe)
    t1 = time.perf_counter()
    report.timings["local"] = t1 - t0

    conn, rows = remote.connect(address, say)
    report.rows += rows
    report.timings["cluster"] = time.perf_counter() - t1
    if conn is None:
        report.rows.append(Row("node", CLUSTER, SKIP, "Ray is not reachable: the per-node checks did not run"))
        report.elapsed_s = time.perf_counter() - t0
        return report
    try:
        report.address = conn.address
        nodes = [n for n in conn.ray.nodes() if n.get("Alive")]
        nodes.sort(
            key=lambda n: (
                remote.HEAD_RESOURCE not in (n.get("Resources") or {}),
                n.get("NodeManagerAddress", ""),
                n.get("NodeID", ""),
            )
        )
        report.nodes = [remote.node_label(n) for n in nodes]
        report.rows += remote.device_rows(recipe, nodes)
        t2 = time.perf_counter()
        report.timings["cluster"] = t2 - t1
        report.rows += remote.run_node_checks(node_spec(recipe), nodes, timeout_s or remote.NODE_TIMEOUT_S, say)
        report.timings["nodes"] = time.perf_counter() - t2
    finally:
        conn.close()
    report.elapsed_s = time.perf_counter() - t0  # the summary line ends the report's table: not said twice
    return report
