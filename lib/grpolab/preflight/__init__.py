"""Preflight: check every node of the cluster before a run is launched, all at once, in seconds.

    from grpolab.preflight import run_preflight
    report = run_preflight("glm5_2", address=None)   # a recipe name, a YAML path or a loaded Recipe
    print(report.table()); report.failed; report.to_json()

Three groups of rows (see grpolab.preflight.report for the row format and the status values
ok | warn | fail | skip; `skip` = the check does not apply here, and `detail` says why):

1. driver (node "driver": the machine that runs preflight): the recipe passes the one gate (rows `recipe`); the
   installed verl against `stack.verl` and the renderer's target (`verl`); the rendered overrides composed
   against the installed verl's config (`verl-schema`).                         -> grpolab.preflight.driver
2. cluster (node "cluster", or the node named): Ray reachable at the address / RAY_ADDRESS / the embedded
   head (`ray`; a dashboard address http://HEAD:8265, as `grpolab run` takes, is asked for the cluster's own
   address), the driver accepted (`auth`), alive nodes (`nodes`) and each node's NPU/GPU resources
   (`devices`).                                                                 -> grpolab.preflight.remote
3. per node, as Ray tasks pinned to each node and run in parallel: device runtime (`torch_npu`, `cann`,
   `npu-smi`, or `cuda`), every stack pin and required package (`stack.<package>`, `compat.*`), the env as
   the job will see it (`env`, `env.<VAR>`), the model (`model`, `model.config`, `model.weights`), the data
   files and their columns (`data.train_files`, `data.val_files`), the checkpoint directory (`checkpoint`),
   the HCCL port ranges (`ports.<VAR>`) and the open-file limit (`open-files`). -> grpolab.preflight.node

The driver's rows always show; when Ray cannot be reached the cluster rows fail and say why, and the per-node
checks are skipped. Nothing here raises for a broken cluster: only an unusable recipe reference does
(grpolab.problems.InputError: no such recipe, unreadable YAML, a malformed override). No row carries a
secret's value (grpolab.recipe.secrets): the nodes redact their own, and the report is redacted once more here
with the recipe's and the overrides' secret values.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from grpolab.preflight import remote
from grpolab.preflight.report import CLUSTER, FAIL, OK, SKIP, STATUSES, WARN, PreflightReport, Row
from grpolab.problems import RecipeError
from grpolab.recipe.secrets import redaction

if TYPE_CHECKING:  # the per-node task imports this package: pydantic's schema is loaded only on the driver
    from grpolab.recipe.schema import Recipe

__all__ = ["run_preflight", "PreflightReport", "Row", "OK", "WARN", "FAIL", "SKIP", "STATUSES"]


def run_preflight(
    recipe: Recipe | str | Path,
    address: str | None = None,
    progress: Callable[[str], None] | None = print,
    overrides: Iterable[str] = (),
    timeout_s: float | None = None,
) -> PreflightReport:
    """Check the recipe on the driver, then the Ray cluster at `address` and every one of its alive nodes.

    recipe     a loaded Recipe, or a recipe name / YAML path (loaded with `overrides`)
    address    what `grpolab run --ray-address` takes: http://HEAD:8265 (the dashboard), HEAD:6379 or
               ray://HEAD:10001; None = RAY_ADDRESS, else the embedded head (started when it does not run)
    progress   called with one line per stage (None = silent)
    timeout_s  how long to wait for the per-node checks (default remote.NODE_TIMEOUT_S)
    """
    # lazy: pydantic, yaml (the recipe loads when preflight runs; the per-node task imports this package without it)
    from grpolab.preflight.driver import driver_rows, problem_row
    from grpolab.recipe.loader import load_recipe
    from grpolab.recipe.schema import Recipe

    overrides = list(overrides)
    t0 = time.perf_counter()
    if not isinstance(recipe, Recipe):
        ref = str(recipe)
        try:
            recipe = load_recipe(recipe, overrides)
        except RecipeError as exc:  # the schema fails: nothing else can be checked meaningfully
            report = PreflightReport(Path(ref).stem, [problem_row("recipe", p) for p in exc.problems])
            report.rows.append(Row("cluster", CLUSTER, SKIP, "the recipe does not load: fix the rows above first"))
            report.elapsed_s = time.perf_counter() - t0
            return _redacted(report, None, overrides)
    elif overrides:
        raise ValueError("overrides apply to a recipe name or path, not to a loaded Recipe")
    report = PreflightReport(recipe.name)
    say = progress or (lambda _line: None)
    say(f"preflight {recipe.name}: checks on this machine (the driver) ...")
    report.rows += driver_rows(recipe)
    report.timings["driver"] = time.perf_counter() - t0
    _cluster(report, recipe, address, say, timeout_s, t0)
    return _redacted(report, recipe, overrides)


def _cluster(report: PreflightReport, recipe: Recipe, address, say, timeout_s, t0: float) -> None:
    """The cluster rows and the per-node rows, into `report`."""
    # lazy: pydantic, yaml (only the cluster half of preflight builds the node spec)
    from grpolab.preflight.spec import node_spec

    t1 = time.perf_counter()
    conn, rows = remote.connect(address, say)
    report.rows += rows
    report.timings["cluster"] = time.perf_counter() - t1
    if conn is None:
        report.rows.append(Row("node", CLUSTER, SKIP, "Ray is not reachable: the per-node checks did not run"))
        report.elapsed_s = time.perf_counter() - t0
        return
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


def _redacted(report: PreflightReport, recipe: Recipe | None, overrides: list[str]) -> PreflightReport:
    """The report with every secret value the driver knows replaced in every row: the recipe's secret env
    values, and the values of secret `--set env.NAME=...` overrides (a recipe that did not load has no env)."""

    hide = redaction(recipe, overrides=overrides)
    report.rows = [Row(r.check, r.node, r.status, hide.text(r.detail), hide.text(r.fix)) for r in report.rows]
    return report
