"""Seconds of one GRPO step, by phase: the time half of the one cost model (bytes: grpolab.recipe.memory).

A step (verl's synchronous trainer) runs, in order: the rollout (prefill, then decode), the old log-probs (one
forward of the actor; skipped when rollout correction's bypass mode takes the rollout's own log-probs), the
reference log-probs (one forward of the reference model, when a KL term needs it), the actor update (forward,
backward and full recompute, once per mini-batch) and the weight sync from the trainer to the rollout engine.
Every figure is an ESTIMATE with its parts; `grpolab plan`, the notebooks and the monitor call these functions.

The workload is the batch as prompts x n at the EXPECTED mean prompt and response lengths
(`data.mean_prompt_length`, `data.mean_response_length`, null = the maxima; `plan --mean-response`).
- compute: 2 x active parameters x tokens per forward, plus attention's 2 x L^2 x heads x head_dim per
  full-attention layer and sequence (L^2 at its mean over the batch: Workload.sequence_square_mean), at `peak_bf16_tflops x compute_efficiency` of the hardware profile;
- TP: 4 collectives per layer per forward-equivalent on the activations; CP: the all-gather of the KV cache;
  EP: the all-to-all dispatch and combine of routed tokens; DP: gradient reduce-scatter and parameter
  all-gather per optimizer step; each on the intra-node link when its group fits a node, else inter-node, at
  `bandwidth_efficiency`; every collective also pays `collective_latency_us` x (1 + log2 of its group size);
- the pipeline bubble (pp - 1) / (vpp x micro-batches) of each pass and uneven stages; offload traffic to the
  host;
- rollout: prefill by compute; decode in steps of one token per sequence in flight, each step reading the
  weights the batch touches and its KV cache and linear-attention state (memory bandwidth), or bound by
  compute when that is slower, plus the TP all-reduces and EP all-to-alls of every layer, plus the host's share
  of a step (DECODE_STEP_S; per layer without graphs, EAGER_LAYER_S). A replica (one TP
  group) decodes its share of the sequences, as many at once as the KV cache holds, and runs at least as many
  steps as the longest response (max_response_length: some responses reach it);
- weight sync: every device receives the whole model once, over the links its training group spans, plus
  moving offloaded weights back.
What it leaves out is listed in the README (grpolab plan).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from grpolab.recipe import pplayout
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.dotted import flatten
from grpolab.recipe.layout import RolloutLayout, TrainLayout, data_parallel, rollout_of, train_of
from grpolab.recipe.memory import (
    DTYPE_BYTES,
    GB,
    full_attention_layers,
    kv_bytes_per_token,
    linear_state_bytes,
    micro_batches,
    params,
    rollout_memory,
    train_memory,
    train_state,
)
from grpolab.recipe.schema import Recipe

BYPASS = "algorithm.rollout_correction.bypass_mode"  # verl: the rollout's log-probs stand in for the old ones
# The forward-only log-prob passes (old and reference) sustain this share of the update's compute efficiency:
# published phase splits put a reference forward at 0.3-0.55 of the update, where FLOPs alone say 0.25.
# Fitted with the hardware profiles' constants on the `fit` runs (benchmarks/calibration.py --fit).
FORWARD_ONLY_EFFICIENCY = 0.5
# Every decode step also pays the engine's host side: scheduling, sampling and the launch of the step's graph.
# Fitted (model-wide, benchmarks/calibration.py --fit) on the `fit` runs, which all capture graphs.
DECODE_STEP_S = 0.005
# Without graphs (rollout.enforce_eager) each layer's kernels are launched from Python one by one, every step:
# about 30 kernels per decoder layer (norms, attention, the MoE router and experts, the TP collectives) at about
# 10 us of launch and Python each. A first-principles figure, not fitted: no `fit` run is eager.
EAGER_LAYER_S = 30 * 10e-6
# An asynchronous step (partial rollout) still decodes for this share of max_response_length: its batch takes whole
# groups, and a group is done only when its longest response is. Fitted (benchmarks/calibration.py --fit) on the two
# `fit` async runs (verl's colocate_async and a separate_async without switching); the others are held out.
ASYNC_TAIL = 0.6
GBPS = 1e9  # bytes per second of one GB/s, as the profiles' datasheet bandwidths are quoted (memory.GB is 2^30)
ESTIMATE = "estimate"  # every figure here is one; the label travels with them


@dataclass(frozen=True)
class Workload:
    """What one step processes: prompts x n sequences at the expected mean lengths, and which passes run."""

    prompts: int
    n: int
    prompt_mean: float
    response_mean: float
    prompt_max: int
    response_max: int
    updates: int  # optimizer steps per RL step (mini-batches): later ones are off-policy
    old_log_prob: bool
    reference: bool

    @property
    def sequences(self) -> int:
        return self.prompts * self.n

    @property
    def sequence_mean(self) -> float:
        return self.prompt_mean + self.response_mean

    @property
    def sequence_square_mean(self) -> float:
        """The mean of a sequence's squared length (what attention's cost follows): responses of one step spread
        about as wide as their mean (a coefficient of variation near 1, so E[r^2] = 2 x mean^2), but none is longer
        than max_response_length (E[r^2] <= max x mean: a batch forced to the limit has no spread)."""
        p, r = self.prompt_mean, self.response_mean
        return p * p + 2 * p * r + min(2 * r * r, self.response_max * r)

    @property
    def tokens(self) -> float:
        """Prompt and response tokens of the whole step (what verl's perf/total_num_tokens counts)."""
        return self.sequences * self.sequence_mean

    def to_dict(self) -> dict:
        return {
            "prompts": self.prompts,
            "n": self.n,
            "sequences": self.sequences,
            "prompt_mean": round(self.prompt_mean, 1),
            "response_mean": round(self.response_mean, 1),
            "tokens": round(self.tokens),
            "updates": self.updates,
            "old_log_prob": self.old_log_prob,
            "reference": self.reference,
        }


def workload(recipe: Recipe, mean_response: float | None = None, mean_prompt: float | None = None) -> Workload:
    """The recipe's workload; `mean_response` / `mean_prompt` (e.g. a run's measured means) win over the
    recipe's expected means, and every mean is capped at its maximum."""
    d, a = recipe.data, recipe.algorithm
    flags = flatten(recipe.verl_overrides)
    bypass = bool(flags.get(BYPASS, flags.get("+" + BYPASS, False)))
    prompt = mean_prompt or d.mean_prompt_length or d.max_prompt_length
    response = mean_response or d.mean_response_length or d.max_response_length
    return Workload(
        prompts=d.train_batch_size,
        n=recipe.rollout.n,
        prompt_mean=min(float(prompt), d.max_prompt_length),
        response_mean=min(float(response), d.max_response_length),
        prompt_max=d.max_prompt_length,
        response_max=d.max_response_length,
        updates=max(math.ceil(d.train_batch_size / a.ppo_mini_batch_size), 1),
        old_log_prob=not bypass,
        reference=a.use_kl_loss or a.use_kl_in_reward,
    )


# ------------------------------------------------------------------------------------------------ hardware


def _flops(recipe: Recipe) -> float:
    c = recipe.cluster
    return c.peak_bf16_tflops * 1e12 * c.compute_efficiency


def _rate(recipe: Recipe, gbps: float) -> float:
    """Bytes/s reached of a bandwidth the profile quotes in GB/s (memory, host, a link)."""
    return gbps * GBPS * recipe.cluster.bandwidth_efficiency


def _bw(recipe: Recipe, span: int) -> float:
    """Bytes/s of a collective whose group spans `span` consecutive ranks: intra-node when it fits a node."""
    c = recipe.cluster
    return _rate(recipe, c.intra_node_gbps if span <= c.devices_per_node else c.inter_node_gbps)


def _lat(recipe: Recipe, group: int) -> float:
    """Seconds of one collective's fixed cost in a group of `group` ranks (a tree or ring of log2 hops)."""
    return recipe.cluster.collective_latency_us * 1e-6 * (1 + math.log2(max(group, 1)))


def _attention_flops(facts: ModelCard, square: float) -> float:
    """Forward FLOPs of causal attention scores and values for one sequence whose squared length is `square`."""
    return 2 * full_attention_layers(facts) * facts.num_heads * facts.head_dim * square


def forward_flops(facts: ModelCard, wl: Workload) -> float:
    """FLOPs of one forward over every token of the step."""
    return 2 * params(facts).active * wl.tokens + wl.sequences * _attention_flops(facts, wl.sequence_square_mean)


# ------------------------------------------------------------------------------------------------ training


def _pass(recipe: Recipe, facts: ModelCard, t: TrainLayout, wl: Workload, fwd: float, efficiency: float = 1.0) -> dict:
    """Seconds of `fwd` forward-equivalents over every token on a training layout: compute (at `efficiency` of
    the profile's), communication, then the pipeline's uneven stages and bubble."""
    world = recipe.world_size
    parts = {"compute": forward_flops(facts, wl) * fwd / (world * _flops(recipe) * efficiency)}
    nbytes = DTYPE_BYTES[recipe.model.dtype]
    p = params(facts)
    if t.fsdp:  # ZeRO-3: the parameters are all-gathered for each forward and backward
        parts["fsdp_comm"] = fwd * p.total * nbytes / _bw(recipe, world)
        return parts
    dp, _ = data_parallel(t, world)
    t_dev = wl.tokens / (dp * t.cp)  # tokens one device's stage processes per pass
    layers = facts.num_layers / t.pp
    micro = micro_batches(recipe, t) * wl.updates
    h = facts.hidden_size
    if t.tp > 1:
        volume = (t.tp - 1) / t.tp * t_dev * h * nbytes
        parts["tp_comm"] = fwd * layers * 4 * (volume / _bw(recipe, t.tp) + _lat(recipe, t.tp) * micro)
    if t.cp > 1:
        kv = kv_bytes_per_token(facts, nbytes, t.tp) / t.pp
        group = t.tp * t.cp
        parts["cp_comm"] = fwd * (
            (t.cp - 1) * t_dev * kv / _bw(recipe, group) + 2 * layers * _lat(recipe, t.cp) * micro
        )
    moe_layers = (facts.num_layers - facts.dense_layers) / t.pp if facts.num_experts else 0
    if t.ep > 1 and moe_layers:
        routed = t_dev / t.tp * facts.active_experts  # sequence parallel: each TP rank routes its share
        volume = 2 * routed * h * nbytes * (t.ep - 1) / t.ep
        group = t.ep * t.etp
        parts["ep_comm"] = fwd * moe_layers * (volume / _bw(recipe, group) + 2 * _lat(recipe, t.ep) * micro)
    pipelined = sum(parts.values())
    stages = t.pp * t.vpp
    if stages > 1:  # the slowest stage sets the pace: its layers over the average
        largest = (
            max(s.layers for s in pplayout.parse(t.pp_layout)) if t.pp_layout else math.ceil(facts.num_layers / stages)
        )
        imbalance = largest * stages / facts.num_layers - 1
        if imbalance > 0:
            parts["stage_imbalance"] = pipelined * imbalance
            pipelined += parts["stage_imbalance"]
    if t.pp > 1:
        parts["bubble"] = pipelined * (t.pp - 1) / (t.vpp * micro_batches(recipe, t))
    return parts


def _dp_sync(recipe: Recipe, facts: ModelCard, t: TrainLayout, wl: Workload) -> float:
    """Gradient reduce-scatter + parameter all-gather of what each device holds, once per optimizer step."""
    world, p = recipe.world_size, params(facts)
    nbytes = DTYPE_BYTES[recipe.model.dtype]
    if t.fsdp:
        return 0.0  # inside fsdp_comm
    dense_dev, expert_dev = p.dense / (t.tp * t.pp), p.expert / (t.ep * t.etp * t.pp)
    dense_dp, expert_dp = data_parallel(t, world)
    dense_dp *= t.cp  # CP ranks also hold the same parameters
    span = world // t.pp
    sync = 0.0
    for held, group in ((dense_dev, dense_dp), (expert_dev, expert_dp)):
        if group > 1:
            sync += 2 * held * nbytes * (group - 1) / group / _bw(recipe, span) + 2 * _lat(recipe, group)
    return wl.updates * sync


def _finish(parts: dict) -> dict:
    parts["total"] = sum(v for k, v in parts.items() if k != "total")
    return parts


def train_time(
    recipe: Recipe, facts: ModelCard, t: TrainLayout, wl: Workload, forward_only: float = FORWARD_ONLY_EFFICIENCY
) -> dict:
    """Seconds of the training side of a step, by phase (each with its parts and total), and their total:
    old_log_prob, reference, update, weight_sync. `forward_only`: see FORWARD_ONLY_EFFICIENCY."""
    full_recompute = recipe.train.recompute.granularity == "full" or t.fsdp
    phases: dict = {}
    if wl.old_log_prob or wl.reference:  # one forward of the actor, one of the reference: the same work
        forward = _finish(_pass(recipe, facts, t, wl, 1, forward_only))
        if wl.old_log_prob:
            phases["old_log_prob"] = forward
        if wl.reference:
            phases["reference"] = dict(forward)
    update = _pass(recipe, facts, t, wl, 3 + (1 if full_recompute else 0))
    update["dp_sync"] = _dp_sync(recipe, facts, t, wl)
    if t.optimizer_offload:  # optimizer state to the device and back, each optimizer step
        plain = train_state(recipe, facts, replace(t, optimizer_offload=False, param_offload=False))
        update["offload"] = wl.updates * 2 * plain["optimizer"] * GB / _rate(recipe, recipe.cluster.host_gbps)
    phases["update"] = _finish(update)
    phases["weight_sync"] = _finish(_weight_sync(recipe, facts, t))
    phases["total"] = sum(ph["total"] for name, ph in phases.items() if name != "total")
    return phases


def _weight_sync(recipe: Recipe, facts: ModelCard, t: TrainLayout) -> dict:
    """Every device receives the whole model once (verl gathers each tensor across the training layout and
    hands the rollout engine its slice), plus offloaded weights moved back for the next phase."""
    nbytes = DTYPE_BYTES[recipe.model.dtype]
    group = recipe.world_size if t.fsdp else t.tp * t.pp * max(t.ep * t.etp, t.cp)
    parts = {"transfer": params(facts).total * nbytes / _bw(recipe, group)}
    if t.param_offload:
        plain = train_state(recipe, facts, replace(t, optimizer_offload=False, param_offload=False))
        parts["offload"] = 2 * plain["weights"] * GB / _rate(recipe, recipe.cluster.host_gbps)
    return parts


# ------------------------------------------------------------------------------------------------ rollout


def rollout_time(
    recipe: Recipe,
    facts: ModelCard,
    r: RolloutLayout,
    mem: dict,
    wl: Workload,
    decode_step: float = DECODE_STEP_S,
    world: int | None = None,
    tail: bool = True,
    ahead: float = 0.0,
    async_tail: float = ASYNC_TAIL,
) -> dict:
    """Seconds of the rollout (prefill and decode, each with its parts and total) and their total, on `world`
    devices (default: the recipe's). `tail`: the batch waits for its longest response (a synchronous step); without
    it (partial rollout, the async modes) a replica decodes at full concurrency and unfinished sequences carry over
    to the next step, re-prefilling what they had written (`reprefill`); `ahead` batches more are in flight then
    (warm-up batches, an off-policy window), so a replica may decode more sequences at once than one batch gives it."""
    world, p, ro = world or recipe.world_size, params(facts), recipe.rollout
    nbytes = DTYPE_BYTES[recipe.model.dtype]
    prefill_flops = 2 * p.active * wl.sequences * wl.prompt_mean + wl.sequences * _attention_flops(
        facts, wl.prompt_mean**2
    )
    prefill = {"compute": prefill_flops / (world * _flops(recipe))}
    replicas = max(world // r.tp, 1)  # each TP group decodes its own sequences
    per_replica = math.ceil(wl.sequences / replicas)
    in_flight = per_replica if tail else per_replica * (1 + ahead)
    slots = max(min(mem["concurrency"], in_flight, ro.max_num_seqs), 1)
    # continuous batching: a replica's tokens at `slots` per step, never fewer steps than the longest response
    steps = per_replica * wl.response_mean / slots
    steps = max(float(wl.response_max) * (1.0 if tail else async_tail), steps)
    if not tail:  # the sequences in flight when the step takes its batch are aborted and resumed: their context again
        inflight = min(slots * replicas, wl.sequences)
        again = 2 * p.active * inflight * (wl.prompt_mean + wl.response_mean / 2)
        prefill["reprefill"] = again / (world * _flops(recipe))
    batch = per_replica * wl.response_mean / steps  # sequences in flight per step, on average
    ep = r.expert_shards
    routed = batch * (ep // r.tp if ep >= r.tp else 1)  # tokens per step one EP group routes
    touched = min(1.0, routed * facts.active_experts / facts.num_experts) if facts.num_experts else 1.0
    weights = (p.dense / r.tp + p.expert / ep * touched) * nbytes
    context = wl.prompt_mean + wl.response_mean / 2  # what a sequence in flight has written, on average
    kv = batch * (context * kv_bytes_per_token(facts, nbytes, r.tp) + linear_state_bytes(facts, nbytes, r.tp))
    hbm = _rate(recipe, recipe.cluster.hbm_gbps)
    memory_s = (weights + kv) / hbm
    flops = (2 * p.active * batch + batch * 2 * _attention_flops(facts, 1) * context) / r.tp
    compute_s = flops / _flops(recipe)
    comm = 0.0
    h = facts.hidden_size
    if r.tp > 1:
        comm += facts.num_layers * 2 * (_lat(recipe, r.tp) + batch * h * nbytes * 2 / _bw(recipe, r.tp))
    if ep > r.tp and facts.num_experts:
        moe = facts.num_layers - facts.dense_layers
        volume = batch * facts.active_experts * h * nbytes
        comm += moe * 2 * (_lat(recipe, ep) + volume / _bw(recipe, ep))
    host = decode_step + (EAGER_LAYER_S * facts.num_layers if ro.enforce_eager else 0.0)
    decode = {
        "weights": steps * weights / hbm,
        "kv_cache": steps * kv / hbm,
        "compute": steps * max(compute_s - memory_s, 0.0),
        "comm": steps * comm,
        "host": steps * host,
    }
    out = {"prefill": _finish(prefill), "decode": _finish(decode)}
    out["total"] = out["prefill"]["total"] + out["decode"]["total"]
    return out


# ------------------------------------------------------------------------------------------------ a whole step


@dataclass
class StepEstimate:
    """A recipe's own layout, estimated: memory (GB) and time (s) per side, with every part; `schedule` how the
    sides overlap in an asynchronous mode (its parts and total; {} for a synchronous step: their sum)."""

    workload: Workload
    train_memory: dict
    rollout_memory: dict
    train: dict
    rollout: dict
    schedule: dict = field(default_factory=dict)

    @property
    def total(self) -> float:
        return self.schedule["total"] if self.schedule else self.train["total"] + self.rollout["total"]

    def phases(self) -> dict[str, float]:
        """Seconds per phase, in the order a step runs them (the split published runs report)."""
        out = {"rollout": self.rollout["total"]}
        out.update({name: ph["total"] for name, ph in self.train.items() if name != "total"})
        return out

    def tokens_per_device_s(self, world: int) -> float:
        """What verl's perf/throughput reports: every token of the step, over the step time and the devices."""
        return self.workload.tokens / self.total / world if self.total else 0.0


def step_estimate(
    recipe: Recipe,
    facts: ModelCard,
    mean_response: float | None = None,
    mean_prompt: float | None = None,
    forward_only: float = FORWARD_ONLY_EFFICIENCY,
    decode_step: float = DECODE_STEP_S,
    async_tail: float = ASYNC_TAIL,
) -> StepEstimate:
    """The estimate for the recipe's own layout (whatever its rank among the layouts `grpolab plan` lists), in the
    recipe's schedule.mode."""
    wl = workload(recipe, mean_response, mean_prompt)
    t, r = train_of(recipe), rollout_of(recipe)
    rmem = rollout_memory(recipe, facts, r)
    train = train_time(recipe, facts, t, wl, forward_only)
    mode = recipe.schedule.mode
    pool = recipe.rollout_pool_world if recipe.rollout_pool else 0
    sync, ahead = mode == "sync", recipe.schedule.warmup_batches
    kw = {"tail": sync, "ahead": ahead, "async_tail": async_tail}
    rollout = rollout_time(recipe, facts, r, rmem, wl, decode_step, world=pool or None, **kw)
    est = StepEstimate(wl, train_memory(recipe, facts, t), rmem, train, rollout)
    if mode == "colocate_async":
        est.schedule = _colocate(recipe, train, rollout)
    elif mode == "separate_async":
        hybrid = rollout_time(recipe, facts, r, rmem, wl, decode_step, **kw)["total"]
        est.schedule = _separate(recipe, facts, t, train, rollout["total"], hybrid)
    return est


# ------------------------------------------------------------------------------------------------ async modes


def _lag(recipe: Recipe, ahead: float) -> dict:
    """Model versions a trained sample lags its policy, expected (the batches generated ahead of the trainer) and at
    most (schedule.max_off_policy; None: unbounded)."""
    bound = recipe.schedule.max_off_policy
    return {"expected_lag": min(ahead, bound) if bound else ahead, "max_lag": bound}


def _colocate(recipe: Recipe, train: dict, rollout: dict) -> dict:
    """colocate_async: rollout and training still take turns on the same devices, but a step takes its batch as soon
    as that many groups are done (partial rollout: the tail carries over), so the rollout is throughput-bound; the
    warm-up batches are generated once before the first step."""
    s = recipe.schedule
    parts = {"rollout": rollout["total"], "train": train["total"] - train["weight_sync"]["total"]}
    parts["weight_sync"] = train["weight_sync"]["total"]
    out = {"mode": "colocate_async", **parts, "total": sum(parts.values())}
    return {**out, "warmup_once": s.warmup_batches * rollout["total"], **_lag(recipe, s.warmup_batches)}


def _separate(recipe: Recipe, facts: ModelCard, t: TrainLayout, train: dict, pool_s: float, hybrid_s: float) -> dict:
    """separate_async: the rollout-only pool generates the next batch while the trainer trains this one (a mini-batch
    at a time), so a step takes the slower side plus the weight sync to the pool. With step switching, a trainer
    that finished first lends its devices (a colocated weight sync each way) until switch.threshold_ratio of the next
    batch is ready, then trains on it while the pool makes the rest (the threshold as configured: the adaptive one
    moves it, the model does not follow). Decoupled PPO (no bypass) also moves pi_old's weights through the host."""
    s, nbytes = recipe.schedule, DTYPE_BYTES[recipe.model.dtype]
    n = recipe.parameter_sync_step
    bypass = bool(flatten(recipe.verl_overrides).get(BYPASS, False))
    held = train_state(recipe, facts, replace(t, optimizer_offload=False, param_offload=False))["weights"] * GB
    swap = 0.0 if bypass or n <= 1 else (3 * n - 2) * held / _rate(recipe, recipe.cluster.host_gbps)
    trainer = train["total"] - train["weight_sync"]["total"] + swap
    busy = max(pool_s, trainer)
    lent = 0.0
    ready = trainer / pool_s  # the share of the next batch the pool made while the trainer trained
    if s.switch.enable and s.hybrid_replicas and ready < s.switch.threshold_ratio:
        lent = (s.switch.threshold_ratio - ready) / (1 / pool_s + 1 / hybrid_s)  # both generate until the threshold
        switching = 2 * train["weight_sync"]["total"]  # the trainer's replicas woken and synced, then put back
        busy = max(trainer, pool_s * (1 - lent / hybrid_s)) + switching
    sync = params(facts).total * nbytes / _rate(recipe, recipe.cluster.inter_node_gbps)
    parts = {"rollout": pool_s, "train": trainer, "pi_old_swap": swap, "weight_sync": sync}
    out = {"mode": "separate_async", **parts, "overlapped": busy, "lent_s": lent, "total": busy + sync}
    idle = {"trainer_idle": max(busy - trainer, 0.0), "pool_idle": max(busy - pool_s, 0.0)}
    return {**out, **idle, "warmup_once": s.warmup_batches * pool_s, **_lag(recipe, s.warmup_batches + 1)}
