"""The planner's answer as people and programs read it: a layout entry (--json), table rows grouped when layouts
differ only in their pipeline-layout string, what that string means, and why a layout ranks where it does.
The CLI (`grpolab plan`) and the 05_plan notebook print the same rows."""

from __future__ import annotations

from dataclasses import dataclass, field

from grpolab.plan.modes import verdict
from grpolab.plan.search import Choice
from grpolab.recipe import pplayout
from grpolab.recipe.cost import ESTIMATE
from grpolab.recipe.layout import ROLLOUT_KEYS, train_fields

HEADERS = (
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


# a layout that leaves less than this share of a device's memory free is flagged: the estimate is an estimate,
# and allocator fragmentation, the framework's own buffers and longer-than-expected sequences take some of it
MIN_FREE_SHARE = 0.05


def low_memory(choice: Choice) -> list[str]:
    """What a layout leaves free when it is under MIN_FREE_SHARE of the memory it may use, per side (empty: fine)."""
    out = []
    for side, memory, of in (
        ("training", choice.train.memory_gb, "device"),
        ("rollout", choice.rollout.memory_gb, "budget"),
    ):
        total, free = memory.get(of), memory.get("headroom")
        if total and free is not None and 0 <= free < MIN_FREE_SHARE * total:
            out.append(f"{side} leaves {free:.1f} of {total:.0f} GB free (under {MIN_FREE_SHARE:.0%}: little margin)")
    return out


def flat_parts(side: dict | None) -> dict[str, float]:
    """{"phase part": seconds} of one side's estimate (a side is {phase: {part: s, "total": s}, "total": s})."""
    out: dict[str, float] = {}
    for phase, parts in (side or {}).items():
        if isinstance(parts, dict):
            out.update({f"{phase} {name}": s for name, s in parts.items() if name != "total"})
    return out


def _parts(choice: Choice) -> dict[str, float]:
    return {
        **{f"rollout {k}": v for k, v in flat_parts(choice.rollout.cost).items()},
        **{f"train {k}": v for k, v in flat_parts(choice.train.cost).items()},
    }


def why(choice: Choice, best: Choice | None) -> str:
    """Why a layout ranks where it does: its largest estimated costs, and what it adds over the best."""
    parts = _parts(choice)
    if not parts:
        return "no time estimate for train.engine trl (the cost model covers verl's engines)"
    total = sum(parts.values()) or 1.0
    text = ", ".join(f"{k} {v / total:.0%}" for k, v in sorted(parts.items(), key=lambda kv: -kv[1])[:2])
    if not choice.fits:
        text = "estimate exceeds device memory; " + text
    elif low_memory(choice):
        text = "; ".join(low_memory(choice)) + "; " + text
    if best is not None and best is not choice:
        other = _parts(best)
        diff = max(parts, key=lambda k: parts[k] - other.get(k, 0.0))
        if parts[diff] - other.get(diff, 0.0) > 0:
            text += f"; +{parts[diff] - other.get(diff, 0.0):.0f} s {diff} vs #1"
    if choice.own:
        text += " (the recipe's own layout" + ("" if choice.valid else f", which breaks {_broken(choice)}") + ")"
    return text


def _round(d):
    if isinstance(d, dict):
        return {k: _round(v) for k, v in d.items()}
    return round(d, 2) if isinstance(d, float) else d


def to_dict(choice: Choice, best: Choice | None = None) -> dict:
    """A layout entry of `grpolab plan --json` (also the shape of "own")."""
    t, r = choice.train.cost, choice.rollout.cost
    timing = None
    if t is not None and r is not None:
        phases = {"rollout": r["total"], **{k: v["total"] for k, v in t.items() if isinstance(v, dict)}}
        timing = {
            "rollout": round(r["total"], 1),
            "train": round(t["total"], 1),
            "total": round(choice.total, 1),
            "phases": _round(phases),
            "parts": {"rollout": _round(r), "train": _round(t)},
            "kind": ESTIMATE,
        }
    return {
        "train": train_fields(choice.train.layout),
        "rollout": {k: getattr(choice.rollout.layout, k) for k in ROLLOUT_KEYS},
        "memory_gb": {
            "train": _round(choice.train.memory_gb),
            "rollout": _round(choice.rollout.memory_gb),
            "kind": ESTIMATE,
        },
        "est_step_s": timing,
        "fits": choice.fits,
        "recipe_layout": choice.own,
        "passes_rules": choice.valid,
        "why": why(choice, best),
        "overrides": choice.overrides(),
    }


def _broken(choice: Choice) -> str:
    """The rules a layout breaks, named (docs/rules.md has each)."""
    names = ", ".join(choice.broken)
    return f"rule {names}" if len(choice.broken) == 1 else (f"rules {names}" if names else "a layout rule")


def own_text(own: Choice) -> str:
    """The recipe's own layout and its estimate, phase by phase, in one line (CLI and 05_plan)."""
    if own.train.cost is None:
        return "the recipe's own layout: no time estimate (train.engine trl: the cost model covers verl's engines)"
    phases = ", ".join(
        f"{k.replace('_', ' ')} {v['total']:.0f}" for k, v in own.train.cost.items() if isinstance(v, dict)
    )
    state = "" if own.valid else f"; it breaks {_broken(own)}"
    fit = "" if own.fits else "; it exceeds device memory (estimate)"
    return (
        f"the recipe's own layout ({own.train.layout.short()}; rollout {own.rollout.layout.short()}): est. step "
        f"{own.total:.0f} s = rollout {own.rollout.seconds:.0f} + {phases} s{state}{fit}"
    )


def figures(ch: Choice, best: Choice | None) -> list[str]:
    """A ranked layout's estimates as table cells: headroom (train, rollout), step time (rollout, train, total),
    and why it ranks there."""
    timed = ch.train.cost is not None and ch.rollout.cost is not None
    return [
        f"{ch.train.memory_gb['headroom']:.1f}",
        f"{ch.rollout.memory_gb['headroom']:.1f}" if ch.rollout.cost else "-",
        f"{ch.rollout.seconds:.0f}" if timed else "-",
        f"{ch.train.seconds:.0f}" if timed else "-",
        f"{ch.total:.0f}" if timed else "-",
        why(ch, best),
    ]


def describe_layout(layout: str) -> str:
    """What a Megatron pipeline-layout string means, in words."""
    try:
        stages = pplayout.parse(layout)
    except pplayout.LayoutError as exc:
        return f"unreadable ({exc})"
    sizes = ", ".join(str(s.layers) for s in stages)
    where = []
    for what, flag in (("the embedding", "embedding"), ("the loss", "loss"), ("MTP layers", "mtp")):
        at = [str(i + 1) for i, s in enumerate(stages) if getattr(s, flag)]
        if at:
            where.append(f"{what} on stage {', '.join(at)}")
    return f"{len(stages)} pipeline stages of {sizes} transformer layers" + (f"; {'; '.join(where)}" if where else "")


def _letter(i: int) -> str:
    return chr(ord("A") + i % 26) + (str(i // 26) if i >= 26 else "")


@dataclass
class Row:
    """One table row: the listed layouts that differ only in their pipeline-layout string, grouped."""

    ranks: list[int]
    members: list[Choice]
    letters: list[str] = field(default_factory=list)
    rollouts: list = field(default_factory=list)  # rollout layouts with the same estimates, the first one first

    def rollout_text(self) -> str:
        """The rollout layout; others that give the same estimates follow it in one cell, not in rows of their own."""
        first, *others = self.rollouts or [self.members[0].rollout.layout]
        if not others:
            return first.short()
        return f"{first.short()} (or {', '.join(o.short() for o in others)}: same estimates)"

    def warn(self) -> bool:
        """Over budget, or under the memory margin: the row is coloured as a warning."""
        return not self.members[0].fits or bool(low_memory(self.members[0]))

    def rank_text(self) -> str:
        if len(self.ranks) > 1 and self.ranks == list(range(self.ranks[0], self.ranks[-1] + 1)):
            return f"{self.ranks[0]}-{self.ranks[-1]}"
        return ",".join(map(str, self.ranks))

    def train_text(self) -> str:
        mark = f" [{'|'.join(self.letters)}]" if self.letters else ""
        return self.members[0].train.layout.short() + mark

    def cells(self, best: Choice | None) -> list[str]:
        out = figures(self.members[0], best)
        first = self.members[0].total
        extra = [
            f"[{letter}] +{m.total - first:.0f} s"
            for letter, m in zip(self.letters[1:], self.members[1:])
            if m.total - first >= 0.5
        ]
        if extra:
            out[-1] += "; " + ", ".join(extra)
        return out


def rows(listed: list[Choice]) -> tuple[list[Row], dict[str, str]]:
    """Table rows in rank order (layouts that differ only in pp_layout share the row of the first of them) and
    the legend {letter: layout string}."""
    letters: dict[str, str] = {}
    for ch in listed:
        layout = ch.train.layout.pp_layout
        if layout and layout not in letters:
            letters[layout] = _letter(len(letters))
    groups: dict[tuple, Row] = {}
    out: list[Row] = []
    for rank, ch in enumerate(listed, 1):
        t = ch.train.layout
        key = (t.tp, t.pp, t.cp, t.ep, t.etp, t.vpp, t.sp, t.param_offload, t.optimizer_offload, ch.rollout.layout)
        row = groups.get(key)
        if row is None:
            row = groups[key] = Row([], [])
            out.append(row)
        row.ranks.append(rank)
        row.members.append(ch)
        if t.pp_layout:
            row.letters.append(letters[t.pp_layout])
    return _merge_rollouts(out), {letter: layout for layout, letter in letters.items()}


def _merge_rollouts(out: list[Row]) -> list[Row]:
    """Rows of one training layout whose rollout variants give the same estimates (every figure of the table) are
    one row listing the variants: ten rows of two layouts times five identical rollouts say less than two."""
    merged: list[Row] = []
    seen: dict[tuple, Row] = {}
    for row in out:
        t = row.members[0].train.layout
        key = (
            t.parallel(),
            t.param_offload,
            t.optimizer_offload,
            tuple(row.letters),
            tuple(figures(row.members[0], None)[:5]),
        )
        into = seen.get(key)
        if into is None:
            row.rollouts = [row.members[0].rollout.layout]
            seen[key] = row
            merged.append(row)
            continue
        into.ranks += row.ranks
        into.members += row.members
        into.rollouts.append(row.members[0].rollout.layout)
    return merged


def legend(letters: dict[str, str]) -> list[str]:
    """One line per pipeline layout named in the table: its letter, the string and what it means."""
    return [f"[{letter}] train.pp_layout {layout}: {describe_layout(layout)}" for letter, layout in letters.items()]


def modes_text(ranked: list) -> list[str]:
    """The schedule modes and node splits (grpolab.plan.modes rows, best first) as the table `grpolab plan` prints
    under the layouts, then the verdict: does asynchronous training pay off here?"""
    sync = next((r.total for r in ranked if r.mode == "sync" and r.best), None)
    cells = [("mode and nodes (estimates)", "step s", "vs sync", "own s", "lag", "best layout (train | rollout)")]
    for r in ranked:
        s = r.best.schedule if r.best else {}
        lag = "0" if r.mode == "sync" else f"~{s.get('expected_lag', 0):g} (<= {s.get('max_lag') or 'inf'})"
        cells.append(
            (
                r.name,
                f"{r.total:.0f}" if r.best else "-",
                f"{sync / r.total:.2f}x" if r.best and sync else "-",
                f"{r.own.total:.0f}" if r.own else "-",
                lag if r.best else "-",
                r.layout or r.why,
            )
        )
    widths = [max(len(c[i]) for c in cells) for i in range(len(cells[0]) - 1)]
    lines = ["", "modes: sync, colocate_async and separate_async on these nodes (docs/async.md)"]
    lines += ["  ".join(v.ljust(w) for v, w in zip(c, widths)) + "  " + c[-1] for c in cells]
    first = next((r for r in ranked if r.best), None)
    if first is not None:
        lines.append(f"best mode as overrides: {' '.join('--set ' + o for o in [*first.settings(), *first.overrides])}")
    return [*lines, verdict(ranked)]
