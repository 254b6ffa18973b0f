"""The preflight report: rows `{check, node, status, detail, fix}` and their table.

Status values:
    ok    the check passed
    warn  the run can start, but something differs from what the recipe was tuned for
    fail  the run would fail (or not start); `fix` says what to do. Any fail makes `report.failed` true
    skip  the check does not apply to this recipe (GPU checks on an NPU recipe, device checks on a CPU
          recipe, ...) or could not run; `detail` says why. A skip never fails the report

`node` is "driver" for checks on the machine that runs preflight (Ray's word for the process that connects to
the cluster), "cluster" for checks on the cluster as a whole, else the node a check ran on, named `IP/NODEID8` (the Ray node id's first 8 hex digits; `(head)` is
appended for the head node).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import asdict, dataclass, field
from typing import Any

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
STATUSES = (FAIL, WARN, OK, SKIP)  # table order: failures first, checks that do not apply last
DRIVER, CLUSTER = "driver", "cluster"


@dataclass
class Row:
    check: str
    node: str
    status: str
    detail: str
    fix: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown preflight status {self.status!r}")

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class PreflightReport:
    recipe: str
    rows: list[Row] = field(default_factory=list)
    address: str | None = None  # the Ray cluster preflight talked to (None: it could not connect)
    nodes: list[str] = field(default_factory=list)  # the nodes the per-node checks ran on
    elapsed_s: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase: driver, cluster, nodes

    # ------------------------------------------------------------------ queries
    @property
    def failed(self) -> bool:
        return any(r.status == FAIL for r in self.rows)

    def counts(self) -> dict[str, int]:
        return {s: sum(r.status == s for r in self.rows) for s in (OK, WARN, FAIL, SKIP)}

    def select(self, check: str | None = None, node: str | None = None, status: str | None = None) -> list[Row]:
        """Rows matching every given field (check matches exactly or as a prefix ending in '.')."""
        return [
            r
            for r in self.rows
            if (check is None or r.check == check or r.check.startswith(check.rstrip(".") + "."))
            and node in (None, r.node)
            and status in (None, r.status)
        ]

    # ------------------------------------------------------------------ output
    def to_dict(self) -> dict[str, Any]:
        return {
            "recipe": self.recipe,
            "address": self.address,
            "failed": self.failed,
            "counts": self.counts(),
            "nodes": self.nodes,
            "elapsed_s": round(self.elapsed_s, 3),
            "timings": {k: round(v, 3) for k, v in self.timings.items()},
            "rows": [r.to_dict() for r in self.rows],
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def summary(self) -> str:
        c = self.counts()
        verdict = "FAILED" if self.failed else "passed"
        return (
            f"preflight {self.recipe}: {verdict}: {c[FAIL]} fail, {c[WARN]} warn, {c[SKIP]} skip, {c[OK]} ok "
            f"on {len(self.nodes)} node(s) in {self.elapsed_s:.1f} s"
        )

    def table(self, fold: bool = True, width: int = 110) -> str:
        """A text table, failures first (then warn, ok, skip), each non-ok row followed by its fix.

        With fold=True, per-node rows that are identical on several nodes print once, naming the node count.
        """
        rows = _folded(self.rows, len(self.nodes)) if fold else list(self.rows)
        rows.sort(key=lambda r: STATUSES.index(r.status))  # stable: keeps driver, cluster, node order
        wc = max([len("CHECK")] + [len(r.check) for r in rows])
        wn = max([len("NODE")] + [len(r.node) for r in rows])
        head = f"{'STATUS':6}  {'CHECK':{wc}}  {'NODE':{wn}}  DETAIL"
        indent = 6 + 2 + wc + 2 + wn + 2
        room = max(width - indent, 40)
        lines = [head, "-" * min(max(len(head), width), 160)]
        for r in rows:
            detail = textwrap.wrap(r.detail, room) or [""]
            lines.append(f"{r.status.upper():6}  {r.check:{wc}}  {r.node:{wn}}  {detail[0]}")
            lines += [" " * indent + more for more in detail[1:]]
            if r.fix and r.status in (FAIL, WARN):
                lines += [" " * indent + f for f in textwrap.wrap("fix: " + r.fix, room)]
        lines.append(self.summary())
        return "\n".join(lines)

    def __str__(self) -> str:  # print(report) in a notebook shows the table
        return self.table()


def _folded(rows: list[Row], n_nodes: int) -> list[Row]:
    """Per-node rows identical on several nodes, merged into one row naming how many nodes share it."""
    out: list[Row] = []
    groups: dict[tuple, list[str]] = {}
    first: dict[tuple, int] = {}
    for r in rows:
        if r.node in (DRIVER, CLUSTER):
            out.append(r)
            continue
        key = (r.check, r.status, r.detail, r.fix)
        if key not in first:
            first[key] = len(out)
            out.append(r)
        groups.setdefault(key, []).append(r.node)
    for key, nodes in groups.items():
        if len(nodes) > 1:
            label = f"all {len(nodes)} nodes" if len(nodes) == n_nodes else f"{len(nodes)} nodes"
            out[first[key]] = Row(key[0], label, key[1], key[2], key[3])
    return out
