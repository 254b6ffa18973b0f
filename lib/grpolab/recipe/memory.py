"""Per-device memory of a GRPO step: the memory half of the one cost model (seconds: grpolab.recipe.cost).

Every figure is an estimate in GB as device memory is quoted (2^30 bytes: an "80 GB" H100 holds 80 x 2^30, which
is what nvidia-smi, torch and vLLM's gpu_memory_utilization count) and keeps its parts. `check`'s memory rule, the planner, the
monitor and the notebooks all call these functions; no other module holds a formula for memory.

Training (Megatron): weights and gradients in the model dtype; dense parameters split over TP x PP, expert
parameters over EP x ETP x PP; Adam state 12 bytes per parameter (fp32 master, two moments), split further over
the data-parallel group with the distributed optimizer. FSDP (and the single-process TRL engine) keep fp32
parameters and gradients and 8 bytes of moments, sharded over every device (FSDP). Offloaded state counts zero
on the device (the optimizer's by its offload fraction). Activations follow the recompute setting
(Korthikanti et al. 2022, with flash attention: 34 bytes x tokens x hidden per layer without recompute, 2 with
full recompute plus one layer's worth, 24 with selective) times the micro-batches 1F1B keeps in flight, plus the
last stage's fp32 logits.
Rollout (vLLM, SGLang): the weights (dense over the rollout TP group, experts over its EP group) inside the
`gpu_memory_utilization` share; the rest holds the KV cache and, for linear attention, each sequence's fixed
state. Only full-attention layers keep a KV cache (Qwen3.5, Qwen3-Next: every full_attention_interval-th
layer); their Gated DeltaNet layers keep value heads x key dim x value dim per sequence instead. MLA layers
(DeepSeek, GLM-5.2) cache the compressed latent, kv_lora_rank + qk_rope_head_dim values per token, the same on
every TP rank.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.layout import RolloutLayout, TrainLayout, data_parallel, rollout_of, train_of
from grpolab.recipe.schema import Recipe

GB = 2**30  # the bytes of one GB of device memory (cluster.device_memory_gb is quoted so); GB/s: cost.GBPS
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
ADAM_BYTES = 12  # fp32 master copy + first and second moments, per parameter
HEADROOM = 0.10  # share of device memory kept for fragmentation and workspace
ACT_FULL, ACT_SELECTIVE, ACT_RECOMPUTED = 34, 24, 2  # activation bytes per token per hidden unit per layer


@dataclass(frozen=True)
class Params:
    """Parameter counts of a model: dense (everything outside routed experts), routed experts, and the active
    parameters one token passes through (dense + its top-k experts)."""

    dense: float
    expert: float
    active: float

    @property
    def total(self) -> float:
        return self.dense + self.expert


def params(facts: ModelCard) -> Params:
    return _params(facts.params_b, facts.expert_params_b, facts.active_experts, facts.num_experts)


@lru_cache(maxsize=256)  # the planner prices thousands of layouts of one model
def _params(params_b: float, expert_params_b: float, active_experts: int, num_experts: int) -> Params:
    total = params_b * 1e9
    expert = min(expert_params_b * 1e9, total)
    dense = total - expert
    active = dense + (expert * active_experts / num_experts if num_experts else 0.0)
    return Params(dense, expert, active)


def full_attention_layers(facts: ModelCard) -> int:
    """Layers that keep a KV cache: all but linear-attention layers."""
    if facts.full_attention_interval:
        return facts.num_layers // facts.full_attention_interval
    return facts.num_layers


def kv_bytes_per_token(facts: ModelCard, nbytes: int = 2, tp: int = 1) -> float:
    """KV-cache bytes one token takes on one device of a TP group of `tp`, over the layers that keep one.

    MLA caches kv_lora_rank + qk_rope_head_dim values per token per layer (GLM-5.2, DeepSeek-V3: 512 + 64), not
    2 x kv_heads x head_dim (their config.json's head_dim is qk_nope_head_dim), and every TP rank holds all of
    it. GQA splits its KV heads over TP; vLLM replicates them when tp exceeds the KV heads.
    """
    if facts.attention == "mla" and facts.kv_lora_rank:
        per_layer = facts.kv_lora_rank + (facts.qk_rope_head_dim or 0)
    else:
        per_layer = 2 * max(math.ceil(facts.num_kv_heads / tp), 1) * facts.head_dim
    return full_attention_layers(facts) * per_layer * nbytes


def linear_state_bytes(facts: ModelCard, nbytes: int = 2, tp: int = 1) -> float:
    """The fixed state one sequence keeps on one device in the linear-attention layers (Gated DeltaNet: value heads
    x key head dim x value head dim per layer, value heads split over TP); 0 for models without them."""
    if not (facts.full_attention_interval and facts.linear_num_value_heads):
        return 0.0
    linear = facts.num_layers - full_attention_layers(facts)
    heads = max(math.ceil(facts.linear_num_value_heads / tp), 1)
    dk = facts.linear_key_head_dim or facts.head_dim
    dv = facts.linear_value_head_dim or facts.head_dim
    return linear * heads * dk * dv * nbytes


def train_state(recipe: Recipe, facts: ModelCard, t: TrainLayout, grad_offload_supported: bool = True) -> dict:
    """Per-device GB of weights, gradients and optimizer state of a training layout, offloads applied."""
    p, tr, world = params(facts), recipe.train, recipe.world_size
    nbytes = DTYPE_BYTES[recipe.model.dtype]
    engine = recipe.engine
    if engine.model_parallel:
        dense_dev, expert_dev = p.dense / (t.tp * t.pp), p.expert / (t.ep * t.etp * t.pp)
        dense_dp, expert_dp = data_parallel(t, world)
        if not tr.distributed_optimizer:
            dense_dp = expert_dp = 1
        weights = grads = (dense_dev + expert_dev) * nbytes
        optimizer = (dense_dev / dense_dp + expert_dev / expert_dp) * ADAM_BYTES
    else:  # fsdp shards fp32 state over every device; trl holds it all in one process
        shards = world if engine.shards_over_world else 1
        weights = grads = p.total / shards * 4
        optimizer = p.total / shards * 8
    if t.param_offload:
        weights = 0.0
    if tr.grad_offload and grad_offload_supported:
        grads = 0.0
    if t.optimizer_offload:
        optimizer *= 1 - tr.optimizer_offload_fraction
    return {"weights": weights / GB, "grads": grads / GB, "optimizer": optimizer / GB}


def micro_batches(recipe: Recipe, t: TrainLayout) -> int:
    """Micro-batches per mini-batch on one data-parallel rank (the pipeline's depth of work)."""
    a = recipe.algorithm
    dp, _ = data_parallel(t, recipe.world_size)
    micro = 1 if recipe.train.dynamic_bsz else a.micro_batch_size_per_device
    return max(a.ppo_mini_batch_size * recipe.rollout.n // (dp * micro), 1)


def max_sequence(recipe: Recipe) -> int:
    return recipe.data.max_prompt_length + recipe.data.max_response_length


def activations(recipe: Recipe, facts: ModelCard, t: TrainLayout) -> dict:
    """Per-device GB of activations (recompute setting, micro-batches in flight) and the last stage's fp32 logits."""
    tr = recipe.train
    tokens = (
        tr.max_token_len_per_device
        if tr.dynamic_bsz
        else recipe.algorithm.micro_batch_size_per_device * max_sequence(recipe)
    ) / t.cp
    h, layers = facts.hidden_size, math.ceil(facts.num_layers / t.pp)
    # sequence parallel splits the activations over TP (megatron) or over the Ulysses group (fsdp)
    shard = t.sp if t.fsdp else t.tp if t.sp > 1 else 1
    in_flight = min(t.pp, micro_batches(recipe, t))  # 1F1B: the first stage holds pp micro-batches
    # verl's FSDP workers checkpoint activations by default (model.enable_gradient_checkpointing: true)
    granularity = "full" if t.fsdp else tr.recompute.granularity
    per_layer = tokens * h / shard
    rate = {"full": ACT_RECOMPUTED, "selective": ACT_SELECTIVE}.get(granularity, ACT_FULL)
    # full recompute keeps each layer's input, plus one layer's full activations while it is recomputed
    acts = rate * per_layer * layers * in_flight + (ACT_FULL * per_layer if granularity == "full" else 0)
    logits = 4 * tokens * facts.vocab_size / t.tp
    return {"activations": acts / GB, "logits": logits / GB}


def train_memory(recipe: Recipe, facts: ModelCard, t: TrainLayout, grad_offload_supported: bool = False) -> dict:
    """Per-device training GB by part, their total, the device size and the headroom left after HEADROOM.

    Gradients are counted even with grad offload by default: verl 0.9.1 has no gradient offload."""
    parts = {**train_state(recipe, facts, t, grad_offload_supported), **activations(recipe, facts, t)}
    total = sum(parts.values())
    device = recipe.cluster.device_memory_gb
    return {**parts, "total": total, "device": device, "headroom": device * (1 - HEADROOM) - total}


def context_tokens(recipe: Recipe) -> float:
    """Tokens a sequence holds in the KV cache on average while the rollout runs: its prompt and response at
    their expected means (a finished sequence frees its blocks)."""
    d = recipe.data
    prompt = min(d.mean_prompt_length or d.max_prompt_length, d.max_prompt_length)
    response = min(d.mean_response_length or d.max_response_length, d.max_response_length)
    return prompt + response


def rollout_memory(recipe: Recipe, facts: ModelCard, r: RolloutLayout) -> dict:
    """Per-device rollout GB: the weights, the KV cache and linear-attention state per sequence (at
    max_model_len), `concurrency` (sequences the cache holds at their expected mean length, at most
    max_num_seqs) and `headroom` (GB left after the weights and one full-length sequence; below zero the engine
    cannot hold one)."""
    p, ro = params(facts), recipe.rollout
    nbytes = DTYPE_BYTES[recipe.model.dtype]
    weights = (p.dense / r.tp + p.expert / r.expert_shards) * nbytes / GB
    budget = recipe.cluster.device_memory_gb * ro.gpu_memory_utilization
    kv_token = kv_bytes_per_token(facts, nbytes, r.tp) / GB
    state = linear_state_bytes(facts, nbytes, r.tp) / GB
    longest = ro.max_model_len or max_sequence(recipe)
    room = budget - weights
    per_seq = kv_token * context_tokens(recipe) + state
    concurrency = int(max(room, 0) // per_seq) if per_seq else ro.max_num_seqs
    return {
        "weights": weights,
        "kv_per_sequence": kv_token * longest,
        "state_per_sequence": state,
        "kv_cache": max(room, 0.0),
        "budget": budget,
        "headroom": room - (kv_token * longest + state),
        "concurrency": min(concurrency, ro.max_num_seqs),
    }


@dataclass(frozen=True)
class MemoryEstimate:
    """What `check`'s memory rule compares with the device: the recipe's own layout's training state (without
    activations: those are what the HEADROOM share is for) and its rollout weights."""

    weights_gb: float
    grads_gb: float
    optimizer_gb: float
    rollout_weights_gb: float
    device_gb: float
    rollout_budget_gb: float

    @property
    def train_gb(self) -> float:
        return self.weights_gb + self.grads_gb + self.optimizer_gb


def estimate(recipe: Recipe, facts: ModelCard, grad_offload_supported: bool = True) -> MemoryEstimate:
    """The recipe's own layout, per device, in GB. `grad_offload_supported` is False when the installed verl
    cannot offload gradients."""
    state = train_state(recipe, facts, train_of(recipe), grad_offload_supported)
    roll = rollout_memory(recipe, facts, rollout_of(recipe))
    return MemoryEstimate(
        state["weights"],
        state["grads"],
        state["optimizer"],
        roll["weights"],
        recipe.cluster.device_memory_gb,
        roll["budget"],
    )
