"""A documented, deliberately simple estimate of per-device memory for rule `memory`.

Training (Megatron): weights and gradients in the train dtype (2 bytes for bf16); dense parameters are split
over TP x PP, expert parameters over EP x ETP x PP. Adam state is 12 bytes per parameter (fp32 master copy,
first and second moments), split further over the data-parallel group when the distributed optimizer is on.
FSDP shards everything over all devices and keeps fp32 parameters and gradients (16 bytes per parameter in
all). Offloaded state (param/grad/optimizer offload) is counted as zero on the device. Activations, the
KV cache and fragmentation are NOT counted: the headroom for them is the `headroom` fraction.
Rollout: vLLM/SGLang hold the weights (dense split over rollout TP, experts over rollout EP) inside the
`gpu_memory_utilization` share of the device; the rest of that share is KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpolab.recipe.schema import ModelCard, Recipe

GB = 1e9
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
ADAM_BYTES = 12
HEADROOM = 0.10  # share of device memory kept for activations and fragmentation


@dataclass(frozen=True)
class MemoryEstimate:
    weights_gb: float
    grads_gb: float
    optimizer_gb: float
    rollout_weights_gb: float
    device_gb: float
    rollout_budget_gb: float

    @property
    def train_gb(self) -> float:
        return self.weights_gb + self.grads_gb + self.optimizer_gb


def kv_bytes_per_token(facts: ModelCard, nbytes: int = 2) -> int:
    """KV-cache bytes per token over all layers that keep a KV cache.

    MLA (GLM-5.2, DeepSeek) caches the compressed latent: kv_lora_rank + qk_rope_head_dim values per layer
    (512 + 64 = 576), NOT 2 x kv_heads x head_dim (config.json's head_dim 192 is qk_nope_head_dim). Linear
    attention layers (Gated DeltaNet) keep a fixed-size state instead of a KV cache: only every
    full_attention_interval-th layer counts.
    """
    layers = facts.num_layers
    if facts.full_attention_interval:
        layers = facts.num_layers // facts.full_attention_interval
    if facts.attention == "mla" and facts.kv_lora_rank:
        per_layer = facts.kv_lora_rank + (facts.qk_rope_head_dim or 0)
    else:
        per_layer = 2 * facts.num_kv_heads * facts.head_dim
    return layers * per_layer * nbytes


def estimate(recipe: Recipe, facts: ModelCard, grad_offload_supported: bool = True) -> MemoryEstimate:
    """Per-device memory in GB. `grad_offload_supported` is False when the installed verl cannot offload grads."""
    t, world = recipe.train, recipe.world_size
    params = facts.params_b * 1e9
    expert = min(facts.expert_params_b * 1e9, params)
    dense = params - expert
    nbytes = DTYPE_BYTES[recipe.model.dtype]
    if t.engine == "megatron":
        per_device = dense / (t.tp * t.pp) + expert / (t.ep * t.etp * t.pp)
        dense_dp = max(world // (t.tp * t.pp * t.cp), 1)
        expert_dp = max(world // (t.ep * t.etp * t.pp), 1)
        opt_params = dense / (t.tp * t.pp) / (dense_dp if t.distributed_optimizer else 1) + expert / (
            t.ep * t.etp * t.pp
        ) / (expert_dp if t.distributed_optimizer else 1)
        weights = per_device * nbytes
        grads = per_device * nbytes
        optimizer = opt_params * ADAM_BYTES
    else:  # fsdp and trl shard (or hold) full-precision state
        shards = world if t.engine == "fsdp" else 1
        weights = params / shards * 4
        grads = params / shards * 4
        optimizer = params / shards * 8
    if t.param_offload:
        weights = 0.0
    if t.grad_offload and grad_offload_supported:
        grads = 0.0
    if t.optimizer_offload:
        optimizer *= 1 - t.optimizer_offload_fraction
    r = recipe.rollout
    rollout_ep = r.ep if r.ep > 1 else r.tp
    rollout_weights = (dense / r.tp + expert / rollout_ep) * nbytes
    device = recipe.cluster.device_memory_gb
    return MemoryEstimate(
        weights / GB, grads / GB, optimizer / GB, rollout_weights / GB, device, device * r.gpu_memory_utilization
    )
