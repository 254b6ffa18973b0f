"""The rollout's parallel layout: tp x dp over the world, ep equal to tp x dp (TensorRT-LLM aside: it alone takes a
MoE tp) and dividing the experts, tp over the attention and KV heads, and tp within a node when several replicas
share it (learned from the field).
"""

from __future__ import annotations

from grpolab.rules.checks import Checks
from grpolab.rules.maths import divisors, listed, nearest
from grpolab.rules.train_layout import experts
from grpolab.verl.fieldmap import ROLL


def rollout(c: Checks) -> None:
    ro, f, world = c.r.rollout, c.f, c.r.world_size
    replica = ro.tp * ro.dp
    trainer_replicas = c.r.schedule.hybrid_replicas or not c.r.rollout_pool  # separate_async may place none there
    if world % replica and trainer_replicas:
        tps = [d for d in divisors(world // ro.dp) if not f or f.num_heads % d == 0] if world % ro.dp == 0 else []
        c.add(
            "rollout-world",
            "rollout.tp",
            ro.tp,
            f"world size {world} is not divisible by rollout tp x dp = {ro.tp} x {ro.dp} = {replica}",
            f"nearest valid rollout.tp: {listed(nearest(ro.tp, tps))}",
        )
    # verl's RolloutConfig asserts both, except for TensorRT-LLM, which splits its MoE layers by ep x moe tp itself
    trtllm = ro.engine == "trtllm"
    moe_tp = c.r.override(f"{ROLL}.moe_tensor_parallel_size", 1)
    if not trtllm and isinstance(moe_tp, int) and moe_tp > 1:
        c.add(
            "rollout-ep",
            f"verl_overrides.{ROLL}.moe_tensor_parallel_size",
            moe_tp,
            f"verl's rollout takes moe_tensor_parallel_size > 1 from TensorRT-LLM only; rollout.engine is {ro.engine} "
            "(verl asserts it when the workers build their config)",
            f"remove verl_overrides.{ROLL}.moe_tensor_parallel_size, or set rollout.engine: trtllm",
        )
    if not trtllm and ro.ep > 1 and ro.ep != replica:
        c.add(
            "rollout-ep",
            "rollout.ep",
            ro.ep,
            f"rollout ep must equal tp x dp = {ro.tp} x {ro.dp} = {replica} when ep > 1 "
            "(verl asserts it inside the workers, after the model has loaded)",
            f"set rollout.ep to {replica} (or 1)"
            + (f", or rollout.dp to {ro.ep // ro.tp}" if ro.ep % ro.tp == 0 else ""),
            involves=("rollout.tp", "rollout.dp"),  # an override of either breaks it: the message says so first
        )
    if f is None:
        return
    if f.num_heads % ro.tp:
        c.add(
            "rollout-heads",
            "rollout.tp",
            ro.tp,
            f"{f.name} has {f.num_heads} attention heads, not divisible by rollout tp {ro.tp}",
            f"nearest valid rollout.tp: {listed(nearest(ro.tp, divisors(f.num_heads)))}",
        )
    elif f.attention == "gqa" and f.num_kv_heads % ro.tp and ro.tp % f.num_kv_heads:
        valid = [d for d in divisors(f.num_heads) if f.num_kv_heads % d == 0 or d % f.num_kv_heads == 0]
        c.add(
            "rollout-heads",
            "rollout.tp",
            ro.tp,
            f"{f.name} has {f.num_kv_heads} KV heads: rollout tp {ro.tp} must divide them or be a "
            "multiple of them (vLLM replicates KV heads)",
            f"nearest valid rollout.tp: {listed(nearest(ro.tp, valid))}",
        )
    if ro.ep > 1:
        experts(c, "rollout.ep", ro.ep)


def rollout_node(c: Checks) -> None:
    """Rollout TP must divide the devices per node when rollout DP > 1; TP larger than a node is a warning."""
    r, f = c.r, c.f
    ro, dpn = r.rollout, r.cluster.devices_per_node
    if ro.dp > 1 and dpn % ro.tp:
        valid = [d for d in divisors(dpn) if not f or f.num_heads % d == 0]
        c.add(
            "rollout-node",
            "rollout.tp",
            ro.tp,
            f"rollout dp {ro.dp} > 1 needs rollout tp to divide the {dpn} devices per node; tp {ro.tp} does not "
            "(verl's vLLM server asserts `gpus_per_node % tensor_model_parallel_size == 0` after the model loaded)",
            f"nearest valid rollout.tp: {listed(nearest(ro.tp, valid))} (raise rollout.dp to keep tp x dp), "
            "or rollout.dp: 1",
            severity="error" if ro.engine == "vllm" else "warning",
        )
    elif ro.tp > dpn:
        c.add(
            "rollout-node",
            "rollout.tp",
            ro.tp,
            f"rollout tp {ro.tp} spans {-(-ro.tp // dpn)} nodes of {dpn} devices: tensor-parallel all-reduces cross "
            "the network (slow, and NCCL/HCCL timeouts in validation are reported)",
            f"keep rollout.tp within a node ({dpn}) and scale with rollout.dp / rollout.ep",
            severity="warning",
        )
