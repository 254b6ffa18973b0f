"""Gated DeltaNet (linear attention) models, Qwen3.5 and Qwen3-Next: training and rollout TP divide the linear key
and value heads, and context parallel needs megatron-core >= 0.18 with tp x cp dividing those heads.
"""

from __future__ import annotations

from grpolab.recipe import stack
from grpolab.rules.checks import Checks
from grpolab.rules.maths import divisors, listed, nearest


def linear_attention(c: Checks) -> None:
    """Gated DeltaNet: TP must divide the linear key and value heads; CP > 1 needs megatron-core >= 0.18."""
    r, f = c.r, c.f
    if f is None or not f.linear_num_key_heads:
        return
    kh, vh = f.linear_num_key_heads, f.linear_num_value_heads or f.linear_num_key_heads
    t, ro = r.train, r.rollout
    sizes = []
    if r.engine.model_parallel:
        sizes.append(("train.tp", t.tp))
    if ro.engine in ("vllm", "sglang"):
        sizes.append(("rollout.tp", ro.tp))
    for key, tp in sizes:
        if kh % tp or vh % tp:
            valid = [d for d in divisors(kh) if vh % d == 0 and f.num_heads % d == 0]
            c.add(
                "linear-attention",
                key,
                tp,
                f"{f.name}'s Gated DeltaNet layers have {kh} key and {vh} value heads: tp {tp} must divide both",
                f"nearest valid {key}: {listed(nearest(tp, valid))}",
            )
    if not r.engine.model_parallel or t.cp <= 1:
        return
    version = r.pinned_version("megatron-core")
    if version is None:
        c.add(
            "linear-attention",
            "train.cp",
            t.cp,
            f"{f.name} has Gated DeltaNet layers: context parallel needs megatron-core >= 0.18 (core_r0.16 asserts "
            "`Gated delta net does not support context parallel`), and stack: pins no megatron-core version",
            "pin megatron-core (e.g. core_r0.18.0) under stack:, or set train.cp: 1",
            severity="warning",
        )
    elif stack.satisfies(version, ">=0.18.0") and (kh % (t.tp * t.cp) or vh % (t.tp * t.cp)):
        c.add(
            "linear-attention",
            "train.cp",
            t.cp,
            f"Gated DeltaNet context parallel moves heads over tp x cp = {t.tp * t.cp} ranks (all-to-all): it must "
            f"divide the {kh} key and {vh} value heads",
            f"choose tp x cp dividing {kh}, e.g. train.cp: {max(1, kh // t.tp) if kh % t.tp == 0 else 1}",
        )
    # megatron-core < 0.18 with CP > 1: params/stack_rules.yaml (megatron-core-0.16-gdn-cp)
