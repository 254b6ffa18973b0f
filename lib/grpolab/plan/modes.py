"""The schedule modes side by side: verl's sync, colocate_async and separate_async on the same nodes, the last for each
split of them into trainer and rollout-only nodes, with and without step switching; each at its best layout (the
layout search of grpolab.plan.search over the trainer's nodes, the top few priced in the mode) and at the recipe's own,
estimated by the one cost model (grpolab.recipe.cost), ranked, with whether asynchronous training pays off here and
by how much (`verdict`). `grpolab plan` prints it under the layouts; 05_plan shows it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grpolab.plan import search
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.cost import StepEstimate, step_estimate
from grpolab.recipe.layout import with_layout
from grpolab.recipe.schema import Recipe

SPLITS = (1 / 4, 1 / 3, 1 / 2, 2 / 3, 3 / 4)  # the rollout-only share of the nodes that separate_async tries
TOP = 3  # layouts of each variant priced in its mode (the search ranks them by a synchronous step)


@dataclass
class ModeRow:
    """One mode on one split of the nodes: its best layout's estimate and the recipe's own layout's."""

    mode: str
    trainer_nodes: int
    rollout_nodes: int
    switch: bool
    best: StepEstimate | None = None
    layout: str = ""
    overrides: tuple[str, ...] = ()
    own: StepEstimate | None = None  # None where the recipe's own layout does not fit this split
    why: str = ""  # why no layout, when none

    @property
    def total(self) -> float:
        return self.best.total if self.best else math.inf

    @property
    def name(self) -> str:
        if self.mode != "separate_async":
            return f"{self.mode} ({self.trainer_nodes} node{'s' * (self.trainer_nodes != 1)})"
        switch = ", switching" if self.switch else ""
        return f"separate_async ({self.trainer_nodes} trainer + {self.rollout_nodes} rollout-only nodes{switch})"

    def settings(self) -> list[str]:
        """The `--set` overrides that select this mode and split (the layout's are in `overrides`)."""
        out = [f"cluster.nnodes={self.trainer_nodes}", f"schedule.mode={self.mode}"]
        if self.mode == "separate_async":
            out += [f"schedule.rollout_nnodes={self.rollout_nodes}", "schedule.sync_backend=nccl"]
            out += [f"schedule.switch.enable={str(self.switch).lower()}"]
        return out

    def to_dict(self, sync: float | None) -> dict:
        s = self.best.schedule if self.best else {}
        return {
            "mode": self.mode,
            "trainer_nodes": self.trainer_nodes,
            "rollout_nodes": self.rollout_nodes,
            "switch": self.switch,
            "est_step_s": round(self.total, 1) if self.best else None,
            "vs_sync": round(sync / self.total, 3) if self.best and sync else None,
            "own_step_s": round(self.own.total, 1) if self.own else None,
            "layout": self.layout,
            "set": [*self.settings(), *self.overrides],
            "expected_lag": s.get("expected_lag", 0),
            "max_lag": s.get("max_lag") if self.mode != "sync" else 0,
            "why": self.why,
        }


def nodes_of(recipe: Recipe) -> int:
    """Every node the recipe's launch takes: the trainer's and a rollout-only pool's."""
    return recipe.cluster.nnodes + (recipe.schedule.rollout_nnodes if recipe.rollout_pool else 0)


def variant(recipe: Recipe, mode: str, trainer_nodes: int, rollout_nodes: int = 0, switch: bool = False) -> Recipe:
    """The recipe in another mode on another split of its nodes (a copy; the layout is kept)."""
    s = recipe.schedule
    schedule = s.model_copy(
        update={
            "mode": mode,
            "rollout_nnodes": rollout_nodes,
            "sync_backend": "nccl" if mode == "separate_async" and s.sync_backend == "naive" else s.sync_backend,
            "switch": s.switch.model_copy(update={"enable": switch}),
        }
    )
    cluster = recipe.cluster.model_copy(update={"nnodes": trainer_nodes})
    return recipe.model_copy(update={"schedule": schedule, "cluster": cluster})


def candidates(recipe: Recipe) -> list[ModeRow]:
    """Every mode and split tried on the recipe's nodes: sync and colocate_async on all of them; separate_async on
    each split of SPLITS (at least one node on each side), without and with step switching."""
    total = nodes_of(recipe)
    rows = [ModeRow("sync", total, 0, False), ModeRow("colocate_async", total, 0, False)]
    pools = sorted({min(max(round(total * share), 1), total - 1) for share in SPLITS}) if total > 1 else []
    for pool in pools:
        rows += [ModeRow("separate_async", total - pool, pool, switch) for switch in (False, True)]
    return rows


def _price(recipe: Recipe, facts: ModelCard, row: ModeRow, searched: dict) -> None:
    here = variant(recipe, row.mode, row.trainer_nodes, row.rollout_nodes, row.switch)
    own_bad = [q for q in search.verdict(here, facts) if q.severity == "error" and search.depends_on_layout(q)]
    if not own_bad:
        row.own = step_estimate(here, facts)
    # the layouts that pass depend on the split, not on the mode's overlap: one search per split
    split = (row.mode == "separate_async", row.trainer_nodes, row.rollout_nodes)
    if split not in searched:
        p = search.plan(here)
        searched[split] = (p, search.choices(p, TOP))
    p, listed = searched[split]
    for choice in listed:
        whole = with_layout(here, choice.train.layout, choice.rollout.layout)
        estimate = step_estimate(whole, facts)
        if row.best is None or estimate.total < row.best.total:
            row.best = estimate
            row.layout = f"{choice.train.layout.short()} | {choice.rollout.layout.short()}"
            row.overrides = tuple(choice.overrides())
    if row.best is None and row.own is not None:  # the search listed nothing the mode prices better: the own
        row.best, row.layout = row.own, "the recipe's own"
    if row.best is None:
        rules = sorted({q.rule for q in own_bad} | set(p.rejected))
        row.why = "no layout passes the rules" + (f" (e.g. {', '.join(rules[:3])})" if rules else "")


def compare(recipe: Recipe, facts: ModelCard) -> list[ModeRow]:
    """Every mode and split, priced at its best layout and at the recipe's own; best first (none last)."""
    rows, searched = candidates(recipe), {}
    for row in rows:
        _price(recipe, facts, row, searched)
    return sorted(rows, key=lambda r: (r.best is None, r.total, r.mode, r.rollout_nodes, r.switch))


def verdict(rows: list[ModeRow]) -> str:
    """Whether asynchronous training pays off on these nodes, and by how much (estimates)."""
    sync = next((r for r in rows if r.mode == "sync" and r.best), None)
    best = next((r for r in rows if r.best), None)
    if best is None:
        return "no mode has a layout that passes the rules on these nodes"
    if sync is None:
        return f"fastest: {best.name}, {best.total:.0f} s a step (no synchronous layout fits these nodes)"
    if best.mode == "sync":
        runner = next((r for r in rows if r.best and r.mode != "sync"), None)
        more = f": the best asynchronous mode, {runner.name}, takes {runner.total:.0f} s" if runner else ""
        return f"asynchronous training does not pay off here: sync takes {sync.total:.0f} s a step{more}"
    gain = 1 - best.total / sync.total
    lag = best.best.schedule.get("expected_lag", 0) if best.best else 0
    return (
        f"asynchronous training pays off: {best.name} takes {best.total:.0f} s a step against {sync.total:.0f} s "
        f"synchronously ({gain:.0%} less, {sync.total / best.total:.2f}x the steps per hour), training on samples "
        f"about {lag:g} model version(s) old (at most {best.best.schedule.get('max_lag') or 'unbounded'})"
    )
