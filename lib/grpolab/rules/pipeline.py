"""Megatron's split of the layers over the pipeline stages, and the layers a stage may start on.

Layers divisible by pp x vpp, an uneven first/last split that adds up, or an explicit `train.pp_layout` that
parses and places every layer; for GLM-5.2's shared DSA indexer (grpolab.rules.maths.stage_start_allowed) every
stage of training's split and of the rollout's pipeline split (vLLM's) starts on an allowed layer.
"""

from __future__ import annotations

from grpolab.recipe import pplayout
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.schema import Recipe
from grpolab.rules.checks import Checks
from grpolab.rules.maths import allowed_starts, bad_starts, divisors, listed, nearest
from grpolab.verl.fieldmap import ROLL


def layers(c: Checks) -> None:
    """Training's split: even, first/last, or the explicit layout (with its DSA stage starts)."""
    t, f = c.r.train, c.f
    if f is None:
        return
    stages = t.pp * t.vpp
    if t.pp_layout is None and (pplayout.FIRST in t.transformer or pplayout.LAST in t.transformer):
        sizes = pplayout.first_last_sizes(f.num_layers, t.pp, t.vpp, t.transformer)
        if isinstance(sizes, str):  # an uneven first/last split is a valid layout when it adds up
            c.add(
                "pp-layers",
                f"train.transformer.{pplayout.FIRST}",
                t.transformer.get(pplayout.FIRST),
                f"{f.name} has {f.num_layers} layers over pp {t.pp}: {sizes}",
                "make first + last + middle stages add up (middle stages share the rest evenly), or give "
                "train.pp_layout",
            )
        return
    if t.pp_layout is None:
        if f.num_layers % stages:
            pps = [d for d in divisors(f.num_layers) if d <= 64]
            layout = pplayout.even_layout(f.num_layers, stages)
            c.add(
                "pp-layers",
                "train.pp",
                t.pp,
                f"{f.name} has {f.num_layers} layers, not divisible by pp x vpp = {t.pp} x {t.vpp}",
                f"nearest valid train.pp: {listed(nearest(t.pp, pps))}"
                + (f"; or give train.pp_layout, e.g. {layout!r}" if layout else ""),
            )
        return
    explicit_layout(c)


def explicit_layout(c: Checks) -> None:
    t, f = c.r.train, c.f
    stages = t.pp * t.vpp
    key = "train.pp_layout"
    try:
        parsed = pplayout.parse(t.pp_layout)
    except pplayout.LayoutError as exc:
        c.add(
            "pp-layout",
            key,
            t.pp_layout,
            f"cannot parse the layout: {exc}",
            "write stages separated by '|' with tokens E, t, m, L and counts like t*12",
        )
        return
    layout = pplayout.even_layout(f.num_layers, stages)
    if len(parsed) != stages:
        c.add(
            "pp-layout",
            key,
            t.pp_layout,
            f"the layout has {len(parsed)} stages but pp x vpp = {t.pp} x {t.vpp} = {stages}",
            f"give {stages} stages (e.g. {layout!r}) or set train.pp to match",
        )
    total = sum(s.layers for s in parsed)
    if total != f.num_layers:
        c.add(
            "pp-layout",
            key,
            t.pp_layout,
            f"the layout places {total} transformer layers but {f.name} has {f.num_layers}",
            f"make the t counts add up to {f.num_layers}" + (f", e.g. {layout!r}" if layout else ""),
        )
    if parsed and (not parsed[0].embedding or any(s.embedding for s in parsed[1:])):
        c.add(
            "pp-layout",
            key,
            t.pp_layout,
            "the embedding (E) must be in the first stage only",
            "start the layout with E",
        )
    if parsed and (not parsed[-1].loss or any(s.loss for s in parsed[:-1])):
        c.add(
            "pp-layout",
            key,
            t.pp_layout,
            "the loss layer (L) must be in the last stage only",
            "end the layout with L",
        )
    if f.index_topk_freq and total == f.num_layers:
        freq, offset = f.index_topk_freq, f.index_skip_topk_offset or 0
        bad = bad_starts(f, pplayout.stage_starts(parsed))
        if bad:
            near = sorted({nearest(b, allowed_starts(f), 1)[0] for b in bad})
            c.add(
                "pp-layout",
                key,
                t.pp_layout,
                f"{f.name}'s DSA indexer is shared across layers: a stage may start only on layer "
                f"1..{offset} or {offset}+{freq}k; these stages start on layers {listed(bad)}",
                f"move those stage boundaries to allowed layers, nearest: {listed(near)}",
            )


def rollout_pp_starts(r: Recipe, f: ModelCard) -> tuple[int, list[int]]:
    """The rollout's pipeline size and the 1-based layer each of its stages starts on (vLLM's split)."""
    ro = r.rollout
    pp = r.override(f"{ROLL}.pipeline_model_parallel_size", ro.engine_kwargs.get("pipeline_parallel_size", 1))
    if not isinstance(pp, int) or isinstance(pp, bool) or pp <= 1:
        return 1, []
    partition = r.env.get("VLLM_PP_LAYER_PARTITION")
    if partition:
        try:
            sizes = [int(x) for x in partition.split(",")]
        except ValueError:
            return pp, []
    else:  # vllm.distributed.utils.get_pp_indices: the remainder goes to the stages before the last
        base, extra = divmod(f.num_layers, pp)
        sizes = [base] * pp
        for i in range(2, extra + 2):
            sizes[-i] += 1
    return pp, pplayout.starts_of(sizes)


def dsa_stages(c: Checks) -> None:
    """GLM-5.2's shared DSA indexer: every pipeline stage (training's even/first-last split, and the rollout's)
    must start on an allowed layer. Training's explicit pp_layout is checked by `explicit_layout`."""
    r, f = c.r, c.f
    if f is None or not f.index_topk_freq:
        return
    t = r.train
    if r.engine.model_parallel and t.pp_layout is None and t.pp * t.vpp > 1:
        sizes = pplayout.first_last_sizes(f.num_layers, t.pp, t.vpp, t.transformer)
        if isinstance(sizes, list):
            bad = bad_starts(f, pplayout.starts_of(sizes))
            if bad:
                c.add(
                    "pp-layout",
                    "train.pp",
                    t.pp,
                    f"{f.name}'s DSA indexer is shared across layers: a pipeline stage may start only on layer "
                    f"1..{f.index_skip_topk_offset or 0} or {f.index_skip_topk_offset or 0}+{f.index_topk_freq}k; "
                    f"the split of {f.num_layers} layers over pp x vpp = {t.pp * t.vpp} starts stages on {bad}",
                    "give train.pp_layout with stage boundaries on allowed layers (e.g. 'Et*10|t*12|t*8|t*8|t*12|"
                    "t*12|t*12|t*4L' for pp 8)",
                )
    pp, starts = rollout_pp_starts(r, f)
    bad = bad_starts(f, starts)
    if bad:
        near = sorted({nearest(b, allowed_starts(f), 1)[0] for b in bad})
        c.add(
            "pp-layout",
            f"verl_overrides.{ROLL}.pipeline_model_parallel_size",
            pp,
            f"{f.name}'s DSA indexer is shared across layers: the rollout's pipeline split ({pp} stages of "
            f"{f.num_layers} layers) starts stages on layers {bad}, which the indexer does not allow",
            f"set env VLLM_PP_LAYER_PARTITION so stages start on allowed layers (nearest: {near}), or use a "
            "rollout pipeline size whose even split fits",
        )
