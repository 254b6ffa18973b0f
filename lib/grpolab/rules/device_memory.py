"""Device memory: a documented estimate of per-device training state and rollout weights fits the device, and
(learned from the field) the largest single tensor fits the weight-sync bucket.
"""

from __future__ import annotations

from grpolab.recipe import memory as memory_model
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.schema import Recipe
from grpolab.rules.checks import Checks
from grpolab.verl.fieldmap import verl_key

MIB = 1 << 20


def memory(c: Checks, grad_offload_supported: bool) -> None:
    r, f = c.r, c.f
    if f is None or not r.engine.priced:
        return
    est = memory_model.estimate(r, f, grad_offload_supported)
    budget = est.device_gb * (1 - memory_model.HEADROOM)
    parts = f"weights {est.weights_gb:.1f} + grads {est.grads_gb:.1f} + optimizer {est.optimizer_gb:.1f}"
    if est.train_gb > budget:
        c.add(
            "memory",
            "cluster.device_memory_gb",
            r.cluster.device_memory_gb,
            f"training state needs about {est.train_gb:.1f} GB per device ({parts}) of "
            f"{est.device_gb:.0f} GB ({budget:.0f} GB after {memory_model.HEADROOM:.0%} headroom); "
            "estimate: see grpolab.recipe.memory",
            "raise tp/pp/ep, turn on train.param_offload / optimizer_offload, or use more nodes",
        )
    if est.rollout_weights_gb > est.rollout_budget_gb:
        c.add(
            "memory",
            "rollout.gpu_memory_utilization",
            r.rollout.gpu_memory_utilization,
            f"rollout weights need about {est.rollout_weights_gb:.1f} GB per device but the rollout "
            f"engine may use only {est.rollout_budget_gb:.1f} GB, with nothing left for the KV cache",
            "raise rollout.tp / rollout.ep, or rollout.gpu_memory_utilization",
        )


def largest_tensor_mib(r: Recipe, f: ModelCard) -> tuple[float, str]:
    nbytes = memory_model.DTYPE_BYTES[r.model.dtype]
    embedding = f.vocab_size * f.hidden_size * nbytes / MIB
    if f.largest_tensor_mb and f.largest_tensor_mb > embedding:
        return f.largest_tensor_mb, "its largest tensor (card: largest_tensor_mb)"
    return embedding, f"its embedding ({f.vocab_size} x {f.hidden_size}, {r.model.dtype})"


def weight_bucket(c: Checks) -> None:
    """The largest single tensor must fit in the weight-sync bucket."""
    r, f = c.r, c.f
    if f is None:
        return
    bucket = r.override(verl_key("rollout.update_weights_bucket_mb"), r.rollout.update_weights_bucket_mb)
    if not isinstance(bucket, int) or isinstance(bucket, bool):
        return
    size, what = largest_tensor_mib(r, f)
    if size > bucket:
        need = -(-int(size + 1) // 512) * 512
        # verl 0.9.1 sends an oversized tensor on its own where CUDA IPC works; the shared-memory path (NPU without
        # IPC support, as in verl issue 5952) asserts
        ipc = r.cluster.device == "cuda"
        c.add(
            "weight-bucket",
            "rollout.update_weights_bucket_mb",
            bucket,
            f"{f.name}'s {what} is {size:.0f} MiB, larger than the weight-sync bucket of {bucket} MiB: "
            + (
                "verl 0.9.1 sends it outside the bucket on CUDA (older verl failed here, verl issue 5779)"
                if ipc
                else "verl fails the first weight update (`is too large to fit in the bucket`)"
            ),
            f"set rollout.update_weights_bucket_mb to {need} or more",
            severity="warning" if ipc else "error",
        )
