"""Parse Megatron's pipeline layout strings, e.g. `Et*10|t*12|t*8|t*8|t*12|t*12|t*12|t*4L`.

Stages are separated by `|`; inside a stage, `E` is the embedding, `t` a transformer layer, `m` an MTP layer,
`L` the loss/output layer; `X*N` repeats a token and `(...)*N` repeats a group (which may contain `|`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_GROUP = re.compile(r"\(([^()]*)\)\*(\d+)")
_TOKEN = re.compile(r"([EtmL])(?:\*(\d+))?")


class LayoutError(ValueError):
    pass


@dataclass(frozen=True)
class Stage:
    embedding: bool
    layers: int  # transformer layers in this stage
    mtp: int
    loss: bool


def expand(layout: str) -> str:
    text = layout.replace(" ", "").replace(",", "")
    while True:
        new = _GROUP.sub(lambda m: m.group(1) * int(m.group(2)), text)
        if new == text:
            break
        text = new
    if "(" in text or ")" in text:
        raise LayoutError("unbalanced parentheses or a group without '*N'")
    return text


@lru_cache(maxsize=1024)  # pure; the layout planner checks thousands of layouts with a few strings
def parse(layout: str) -> list[Stage]:
    """The stages of a layout; LayoutError says which stage and character is wrong. Callers must not mutate it."""
    stages = []
    for index, stage in enumerate(expand(layout).split("|")):
        pos, counts = 0, {"E": 0, "t": 0, "m": 0, "L": 0}
        while pos < len(stage):
            match = _TOKEN.match(stage, pos)
            if not match:
                raise LayoutError(
                    f"stage {index + 1} ({stage!r}): unexpected {stage[pos]!r}; use E, t, m, L with optional *N"
                )
            counts[match.group(1)] += int(match.group(2) or 1)
            pos = match.end()
        stages.append(Stage(counts["E"] > 0, counts["t"], counts["m"], counts["L"] > 0))
    return stages


def stage_starts(stages: list[Stage]) -> list[int]:
    """The 1-based transformer layer each stage starts on (stages with no layer are skipped)."""
    return starts_of([stage.layers for stage in stages])


@lru_cache(maxsize=1024)
def even_layout(num_layers: int, stages: int) -> str | None:
    """A simple layout with the embedding first and the loss last, or None when layers < stages."""
    if num_layers < stages:
        return None
    base, extra = divmod(num_layers, stages)
    sizes = [base + (1 if i >= stages - extra else 0) for i in range(stages)]
    parts = [f"t*{n}" for n in sizes]
    parts[0], parts[-1] = "E" + parts[0], parts[-1] + "L"
    return "|".join(parts)


FIRST, LAST = "num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage"


def first_last_sizes(num_layers: int, pp: int, vpp: int, transformer: dict) -> list[int] | str:
    """Transformer layers per (virtual) pipeline stage in layer order, as Megatron splits them without a layout
    string: evenly, or unevenly with `num_layers_in_first_pipeline_stage` / `..._last_...` (the middle stages
    share the rest evenly); `account_for_embedding/loss_in_pipeline_split` count the embedding / loss as a layer.
    A string says why Megatron would refuse the split."""
    first, last = transformer.get(FIRST), transformer.get(LAST)
    emb = bool(transformer.get("account_for_embedding_in_pipeline_split"))
    loss = bool(transformer.get("account_for_loss_in_pipeline_split"))
    total = num_layers + emb + loss
    if first is None and last is None:
        if total % (pp * vpp):
            return f"{total} layers are not divisible by pp x vpp = {pp} x {vpp}"
        sizes = [total // (pp * vpp)] * (pp * vpp)
    else:
        if pp < 2:
            return f"{FIRST} / {LAST} need pp > 1"
        middle = pp - (first is not None) - (last is not None)
        remaining = total - (first or 0) - (last or 0)
        if remaining < 0 or (middle == 0 and remaining):
            return f"first + last stage layers ({first or 0} + {last or 0}) do not add up to the model's {total} layers"
        if middle and remaining % middle:
            return (
                f"the {remaining} layers left after the first/last stages ({first}, {last}) are not divisible "
                f"by the {middle} middle stages"
            )
        per = remaining // middle if middle else 0
        stages = [per] * pp
        if first is not None:
            stages[0] = first
        if last is not None:
            stages[-1] = last
        bad = [s for s in stages if s % vpp]
        if bad:
            return f"with vpp {vpp} every stage's layer count must be divisible by vpp; stages have {stages}"
        # interleaved order: chunk 0 of every stage, then chunk 1, ...
        sizes = [stages[s] // vpp for _ in range(vpp) for s in range(pp)]
    if emb:
        sizes[0] -= 1
    if loss:
        sizes[-1] -= 1
    return sizes


def starts_of(sizes: list[int]) -> list[int]:
    """The 1-based layer each non-empty stage starts on, from its layer counts."""
    starts, layer = [], 1
    for size in sizes:
        if size > 0:
            starts.append(layer)
        layer += max(size, 0)
    return starts
