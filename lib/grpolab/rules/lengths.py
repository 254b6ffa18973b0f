"""Sequence lengths: prompt + response fits the rollout's max_model_len and the model's context, and (learned
from the field) Megatron's context / sequence parallel split of a padded sequence.
"""

from __future__ import annotations

from grpolab.rules.checks import Checks
from grpolab.rules.maths import listed, multiples_near, nearest


def lengths(c: Checks) -> None:
    d, ro, f = c.r.data, c.r.rollout, c.f
    total = d.max_prompt_length + d.max_response_length
    if ro.max_model_len is not None and total > ro.max_model_len:
        c.add(
            "lengths",
            "rollout.max_model_len",
            ro.max_model_len,
            f"prompt + response = {d.max_prompt_length} + {d.max_response_length} = {total} tokens do not "
            f"fit rollout max_model_len {ro.max_model_len}",
            f"raise rollout.max_model_len to {total}, or shorten data.max_response_length to "
            f"{max(ro.max_model_len - d.max_prompt_length, 0)}",
        )
    if f is not None and total > f.context_length:
        c.add(
            "lengths",
            "data.max_response_length",
            d.max_response_length,
            f"prompt + response = {total} tokens exceed {f.name}'s context of {f.context_length}",
            f"keep prompt + response within {f.context_length}, e.g. data.max_response_length "
            f"{max(f.context_length - d.max_prompt_length, 0)}",
        )


def seq_padding(c: Checks) -> None:
    """CP / sequence parallel need sequence lengths aligned to tp x cp x 2 (without packing)."""
    r = c.r
    t, d = r.train, r.data
    if not r.engine.model_parallel:
        return
    sp = r.sequence_parallel
    if t.cp <= 1 and not sp:
        return
    align = t.tp * t.cp * 2 if t.cp > 1 else t.tp
    total = d.max_prompt_length + d.max_response_length
    if not r.model.use_remove_padding:
        if total % align:
            # a response length fits when prompt + response is a multiple of align
            lengths = [m - d.max_prompt_length for m in multiples_near(total, align)]
            lengths = [x for x in lengths if x >= align]
            c.add(
                "seq-padding",
                "data.max_response_length",
                d.max_response_length,
                f"without sequence packing (model.use_remove_padding false) the padded length prompt + response = "
                f"{total} must be a multiple of {'tp x cp x 2' if t.cp > 1 else 'tp'} = {align} "
                f"(cp {t.cp}, sequence parallel {'on' if sp else 'off'}); Megatron fails splitting it",
                f"nearest valid data.max_response_length: {listed(nearest(d.max_response_length, lengths))}; "
                "or turn model.use_remove_padding on",
            )
    elif t.cp > 1 and 2 * t.tp * t.cp > 128:
        c.add(
            "seq-padding",
            "train.cp",
            t.cp,
            f"with packing, CP splits each sample into 2 x cp chunks padded to tp x cp x 2 = {align} tokens: a sample "
            "shorter than that leaves a CP rank an empty slice (`The expanded size of the tensor ... must match`); "
            "verl's synthetic padding rows are only 128 tokens",
            f"keep tp x cp <= 64, or filter samples shorter than {align} tokens",
            severity="warning",
        )
