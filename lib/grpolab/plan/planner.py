"""The layout planner: every valid parallel layout of a recipe's model on its cluster, ranked by an estimate.

What it does, in order:
1. Enumerate training layouts (Megatron tp, cp, pp, vpp, a pipeline layout where the model needs one, ep, etp;
   FSDP: the Ulysses sp) and rollout layouts (tp, dp, ep). The search space, not a rule: TP x CP groups stay
   inside a node, etp is 1 or tp, vpp is 1 or 2, ep divides the world and is at most the expert count, the
   rollout's TP stays inside a node and its ep is 1 or tp x dp.
2. Screen each candidate with the real rules (`grpolab.rules.validate.layout_problems`: the rule families a layout
   can break) with the cheapest offload choice (none, optimizer, param + optimizer) whose fuller memory
   estimate (below) fits, else with full offload. Rejected candidates are counted per rule id (a candidate
   counts once under each rule it breaks); two cheap necessary conditions (world divisible by tp x pp x cp
   and by ep x etp x pp) skip the rules for layouts that cannot divide the world and count under those ids.
3. Rank: training and rollout layouts are independent (their rules and costs do not mix), so the best
   combinations are the best of each; the layouts listed are then checked as wholes by `verdict` (every rule).

Every number here is an ESTIMATE from a deliberately simple cost model (constants in the hardware profile,
`cluster.*` in params/hardware/*.yaml):
- compute: 2 x active parameters x tokens per forward-equivalent, at peak_bf16_tflops x compute_efficiency;
  a training step runs 3 (forward + backward) + 1 (old log-probs) + 1 (reference, with a KL loss) + 1 (full
  recompute) forward-equivalents over every token (prompt + response at their maximum lengths);
- TP: 4 collectives per layer per forward-equivalent on the activations; CP: the all-gather of K/V; EP: the
  all-to-all dispatch and combine of routed tokens; DP: the gradient reduce-scatter + parameter all-gather
  per optimizer step; each on the intra-node link when its group fits a node, else on the inter-node link;
- the pipeline bubble (pp - 1) / (vpp x micro-batches) of the training time; offload: host transfers;
- rollout: prefill is compute-bound, decode is bound by memory bandwidth (weights it touches + KV cache read
  per token), plus TP all-reduces and EP all-to-alls per layer; concurrency is what the KV cache allows.
Left out (see README): overlap of communication with compute, attention's quadratic FLOPs, the weight sync
from trainer to rollout, load imbalance between experts, CPU optimizer time, reward computation,
response lengths below the maximum (every response is assumed to run to max_response_length).

Why one file of this size: enumeration, memory and cost estimates and ranking are one search with shared caches; its
speed target (a whole `grpolab plan` under 2 s) depends on that.
"""

from __future__ import annotations

import math
import re
import shlex
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from grpolab.paths import params_dir
from grpolab.problems import InputError, Problem, RecipeError
from grpolab.recipe import memory, pplayout
from grpolab.recipe.cards import model_facts
from grpolab.recipe.dotted import set_dotted
from grpolab.recipe.loader import load_recipe, read_yaml
from grpolab.recipe.schema import ModelCard, Recipe
from grpolab.rules.validate import layout_problems, validate

GB = 1e9
ESTIMATE = "estimate"  # every figure the planner prints is one; the label travels with them
MLA_KV_VALUES = 576  # MLA caches kv_lora_rank (512) + the rope key (64) values per token per layer (GLM-5.2, DSV3)
TRAIN_KEYS = ("tp", "pp", "cp", "ep", "etp", "vpp", "pp_layout", "param_offload", "optimizer_offload")
# A layout's `sp` is a group size: Megatron's sequence parallel spans tp (sp == tp when on, 1 when off), FSDP's
# Ulysses group is its own size. The recipe keeps them as train.sp (a bool) and train.ulysses_sp (an int).
ROLLOUT_KEYS = ("tp", "dp", "ep")
MAX_HINT_WORLD = 65536  # `check` proposes whole layouts up to this many devices
MIN_CP_CHUNK = 2048  # search space: CP splits a sequence into chunks of at least this many tokens
OFFLOADS = ((False, False), (False, True), (True, True))  # (param_offload, optimizer_offload), cheapest first


def verdict(recipe: Recipe) -> list[Problem]:
    """The one place the planner asks for the full verdict on a layout (every rule). Switch to the gate here."""
    return validate(recipe)


# ---------------------------------------------------------------------------------------------- layouts


@dataclass(frozen=True)
class TrainLayout:
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int = 1
    vpp: int = 1
    pp_layout: str | None = None
    sp: int = 1
    param_offload: bool = False
    optimizer_offload: bool = False
    fsdp: bool = False  # for display only: FSDP shards data; sp is its Ulysses group

    def short(self) -> str:
        if self.fsdp:
            return f"fsdp sp{self.sp}" + self._offload()
        return (
            f"tp{self.tp} pp{self.pp} cp{self.cp} ep{self.ep} etp{self.etp}"
            + (f" vpp{self.vpp}" if self.vpp > 1 else "")
            + self._offload()
        )

    def _offload(self) -> str:
        if not (self.param_offload or self.optimizer_offload):
            return ""
        return " off:" + "+".join(n for n, on in (("param", self.param_offload), ("opt", self.optimizer_offload)) if on)

    def parallel(self) -> tuple:
        return (self.tp, self.pp, self.cp, self.ep, self.etp, self.vpp, self.pp_layout, self.sp)


@dataclass(frozen=True)
class RolloutLayout:
    tp: int = 1
    dp: int = 1
    ep: int = 1

    def short(self) -> str:
        return f"tp{self.tp} dp{self.dp} ep{self.ep}"


def overrides_of(train: TrainLayout | None, rollout: RolloutLayout | None) -> list[str]:
    """The layout as `--set` overrides (the recipe's own keys)."""
    out = []
    if train is not None:
        for key, value in train_fields(train).items():
            out.append(
                f"train.{key}={'null' if value is None else str(value).lower() if isinstance(value, bool) else value}"
            )
    if rollout is not None:
        out += [f"rollout.{key}={getattr(rollout, key)}" for key in ROLLOUT_KEYS]
    return out


def train_fields(train: TrainLayout) -> dict:
    """The recipe's own train.* keys and values of a training layout (what `--set` and --json name)."""
    fields = {k: getattr(train, k) for k in TRAIN_KEYS}
    if train.fsdp:
        fields["ulysses_sp"] = train.sp
    else:
        fields["sp"] = train.sp > 1 or train.tp == 1  # with tp 1 sequence parallel has no effect: verl's default
    return fields


def apply(recipe: Recipe, train: TrainLayout | None = None, rollout: RolloutLayout | None = None) -> Recipe:
    """A copy of the recipe with a layout set (no re-validation of the schema: the values are in range)."""
    update = {}
    if train is not None:
        update["train"] = recipe.train.model_copy(update=train_fields(train))
    if rollout is not None:
        update["rollout"] = recipe.rollout.model_copy(update={k: getattr(rollout, k) for k in ROLLOUT_KEYS})
    return recipe.model_copy(update=update)


def train_of(recipe: Recipe) -> TrainLayout:
    t = recipe.train
    fsdp = t.engine == "fsdp"
    sp = t.ulysses_sp if fsdp else (t.tp if t.sp else 1)
    return TrainLayout(**{k: getattr(t, k) for k in TRAIN_KEYS}, sp=sp, fsdp=fsdp)


def rollout_of(recipe: Recipe) -> RolloutLayout:
    return RolloutLayout(**{k: getattr(recipe.rollout, k) for k in ROLLOUT_KEYS})


@lru_cache(maxsize=4096)
def divisors(n: int) -> tuple[int, ...]:
    """The divisors of n, in O(sqrt n)."""
    small, large = [], []
    d = 1
    while d * d <= n:
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
        d += 1
    return tuple(small + large[::-1])


def allowed_starts(facts: ModelCard) -> Callable[[int], bool] | None:
    if not facts.index_topk_freq:
        return None
    freq, offset = facts.index_topk_freq, facts.index_skip_topk_offset or 0
    return lambda s: s <= offset or (s - offset) % freq == 0


def stage_layouts(facts: ModelCard, stages: int, own: str | None) -> list[str | None]:
    """Pipeline layouts for `stages` stages: None (an even split) when the layers divide and no stage rule
    applies; else a balanced layout whose stages start on allowed layers (GLM-5.2's DSA rule); plus the
    recipe's own layout when it has this many stages."""
    layers, ok = facts.num_layers, allowed_starts(facts)
    out: list[str | None] = []
    if stages == 1:
        out.append(None)
    elif ok is None:
        out.append(None if layers % stages == 0 else pplayout.even_layout(layers, stages))
    else:
        generated = _balanced(layers, stages, ok)
        if generated:
            out.append(generated)
    if own:
        try:
            if len(pplayout.parse(own)) == stages and own not in out:
                out.append(own)
        except pplayout.LayoutError:
            pass
    return out


def _balanced(layers: int, stages: int, ok) -> str | None:
    """Stage boundaries at the allowed start layers nearest to an even split (None when none fits)."""
    if layers < stages:
        return None
    starts, prev = [1], 1
    for i in range(1, stages):
        ideal = 1 + round(i * layers / stages)
        remaining = stages - i  # stages still to start, each needs at least one layer
        options = [s for s in range(prev + 1, layers - remaining + 2) if ok(s)]
        if not options:
            return None
        best = min(options, key=lambda s: (abs(s - ideal), s))
        starts.append(best)
        prev = best
    sizes = [b - a for a, b in zip(starts, starts[1:] + [layers + 1])]
    if any(n <= 0 for n in sizes):
        return None
    parts = [f"t*{n}" for n in sizes]
    parts[0], parts[-1] = "E" + parts[0], parts[-1] + "L"
    return "|".join(parts)


def train_space(recipe: Recipe, facts: ModelCard) -> Iterable[TrainLayout]:
    """Every training layout the planner considers (before any rule)."""
    t, world, dpn = recipe.train, recipe.world_size, recipe.cluster.devices_per_node
    sp_on = bool(t.sp)
    if t.engine == "fsdp":
        for sp in divisors(world):
            if sp <= dpn:
                yield TrainLayout(sp=sp, fsdp=True)
        return
    if t.engine != "megatron":
        yield train_of(recipe)
        return
    eps = [d for d in divisors(world) if d <= max(facts.num_experts, 1)]
    seq = _seq(recipe)
    for tp in (d for d in divisors(world) if d <= dpn):
        for cp in (d for d in divisors(world) if tp * d <= dpn and (d == 1 or seq // d >= MIN_CP_CHUNK)):
            for pp in (d for d in divisors(world) if d <= facts.num_layers):
                for vpp in (1, 2) if pp > 1 else (1,):
                    if pp * vpp > facts.num_layers:
                        continue
                    own = t.pp_layout if (t.pp, t.vpp) == (pp, vpp) else None
                    for layout in stage_layouts(facts, pp * vpp, own):
                        for ep in eps:
                            for etp in sorted({1, tp}):
                                yield TrainLayout(tp, pp, cp, ep, etp, vpp, layout, tp if sp_on else 1)


def rollout_space(recipe: Recipe) -> Iterable[RolloutLayout]:
    world, dpn = recipe.world_size, recipe.cluster.devices_per_node
    for tp in (d for d in divisors(world) if d <= dpn):
        for dp in divisors(world // tp):
            for ep in sorted({1, tp * dp}):
                yield RolloutLayout(tp, dp, ep)


# ---------------------------------------------------------------------------------------------- memory


def _split(facts: ModelCard) -> tuple[float, float, float]:
    """(dense, expert, active) parameter counts."""
    params = facts.params_b * 1e9
    expert = min(facts.expert_params_b * 1e9, params)
    dense = params - expert
    active = dense + (expert * facts.active_experts / facts.num_experts if facts.num_experts else 0.0)
    return dense, expert, active


def _seq(recipe: Recipe) -> int:
    return recipe.data.max_prompt_length + recipe.data.max_response_length


def micro_batches(recipe: Recipe, train: TrainLayout) -> int:
    """Micro-batches per mini-batch on one data-parallel rank (the pipeline's depth of work)."""
    world, a = recipe.world_size, recipe.algorithm
    dp = max(world // (train.tp * train.pp * train.cp), 1)
    micro = 1 if recipe.train.dynamic_bsz else a.micro_batch_size_per_device
    return max(a.ppo_mini_batch_size * recipe.rollout.n // (dp * micro), 1)


def train_memory(recipe: Recipe, facts: ModelCard, train: TrainLayout) -> dict:
    """Per-device training memory in GB (an estimate): grpolab.recipe.memory's weights, grads and optimizer (grads are
    counted even with grad offload: verl 0.9.1 has none) plus activations with the recompute setting and the
    fp32 logits of the last stage."""
    est = memory.estimate(apply(recipe, train=train), facts, grad_offload_supported=False)
    t = recipe.train
    tokens = (
        t.max_token_len_per_device if t.dynamic_bsz else recipe.algorithm.micro_batch_size_per_device * _seq(recipe)
    ) / train.cp
    h, layers = facts.hidden_size, math.ceil(facts.num_layers / train.pp)
    # sequence parallel splits the activations over TP (megatron) or over the Ulysses group (fsdp)
    shard = train.sp if t.engine == "fsdp" else train.tp if train.sp > 1 else 1
    full = 34 * tokens * h / shard  # bytes of one layer's activations (Korthikanti et al., flash attention)
    in_flight = min(train.pp, micro_batches(recipe, train))  # 1F1B: the first stage holds pp micro-batches
    # verl's FSDP workers checkpoint activations by default (model.enable_gradient_checkpointing: true)
    g = "full" if t.engine == "fsdp" else t.recompute.granularity
    if g == "full":
        acts = (2 * tokens * h / shard * layers) * in_flight + full
    elif g == "selective":
        acts = 24 * tokens * h / shard * layers * in_flight
    else:
        acts = full * layers * in_flight
    logits = 4 * tokens * facts.vocab_size / train.tp
    total = est.weights_gb + est.grads_gb + est.optimizer_gb + (acts + logits) / GB
    return {
        "weights": est.weights_gb,
        "grads": est.grads_gb,
        "optimizer": est.optimizer_gb,
        "activations": (acts + logits) / GB,
        "total": total,
        "device": est.device_gb,
        "headroom": est.device_gb * (1 - memory.HEADROOM) - total,
    }


def kv_bytes_per_token(facts: ModelCard, tp: int) -> float:
    """KV-cache bytes one token takes on one rollout device (MLA's latent is replicated over TP)."""
    if facts.attention == "mla":
        return facts.num_layers * MLA_KV_VALUES * 2
    heads = max(math.ceil(facts.num_kv_heads / tp), 1)  # vLLM replicates KV heads when tp > KV heads
    return facts.num_layers * 2 * heads * facts.head_dim * 2


def rollout_memory(recipe: Recipe, facts: ModelCard, rollout: RolloutLayout) -> dict:
    """Per-device rollout memory in GB (an estimate): weights (grpolab.recipe.memory) + the KV cache that max_num_seqs
    sequences of max_model_len need, within gpu_memory_utilization; `concurrency` is how many fit, and
    `headroom` what is left after the weights and one sequence (below zero the engine cannot hold one)."""
    est = memory.estimate(apply(recipe, rollout=rollout), facts)
    ro = recipe.rollout
    seq = ro.max_model_len or _seq(recipe)
    per_seq = kv_bytes_per_token(facts, rollout.tp) * seq / GB
    kv_room = est.rollout_budget_gb - est.rollout_weights_gb
    concurrency = int(max(kv_room, 0) // per_seq) if per_seq else ro.max_num_seqs
    return {
        "weights": est.rollout_weights_gb,
        "kv_cache": per_seq * ro.max_num_seqs,
        "budget": est.rollout_budget_gb,
        "headroom": kv_room - per_seq,
        "concurrency": min(concurrency, ro.max_num_seqs),
    }


# ---------------------------------------------------------------------------------------------- cost model


def _bw(recipe: Recipe, span: int) -> float:
    """Bytes/s of a collective whose group spans `span` consecutive ranks: intra-node when it fits a node."""
    c = recipe.cluster
    gbps = c.intra_node_gbps if span <= c.devices_per_node else c.inter_node_gbps
    return gbps * GB * c.bandwidth_efficiency


def _flops(recipe: Recipe) -> float:
    c = recipe.cluster
    return c.peak_bf16_tflops * 1e12 * c.compute_efficiency


def train_cost(recipe: Recipe, facts: ModelCard, train: TrainLayout, mem: dict) -> dict:
    """Seconds per step of the training phase (an estimate), by part."""
    c, a, world = recipe.cluster, recipe.algorithm, recipe.world_size
    dense, expert, active = _split(facts)
    tokens = recipe.data.train_batch_size * recipe.rollout.n * _seq(recipe)
    fwd = 3 + 1 + (1 if a.use_kl_loss else 0) + (1 if recipe.train.recompute.granularity == "full" else 0)
    parts = {"compute": 2 * active * tokens * fwd / (world * _flops(recipe))}
    if recipe.train.engine == "fsdp":
        # ZeRO-3: all-gather parameters twice and reduce-scatter gradients once per pass, over all devices
        parts["fsdp_comm"] = 3 * (dense + expert) * 2 * fwd / 3 / _bw(recipe, world)
        parts["dp_sync"] = 0.0
        return _finish(parts, train, recipe, mem, facts)
    dp = max(world // (train.tp * train.pp * train.cp), 1)
    t_dev = tokens / (dp * train.cp)  # tokens one device's stage processes per pass
    layers = facts.num_layers / train.pp
    micro = micro_batches(recipe, train) * max(recipe.data.train_batch_size // a.ppo_mini_batch_size, 1)
    lat = c.collective_latency_us * 1e-6
    h = facts.hidden_size
    if train.tp > 1:
        volume = (train.tp - 1) / train.tp * t_dev * h * 2
        parts["tp_comm"] = fwd * layers * 4 * (volume / _bw(recipe, train.tp) + lat * micro)
    if train.cp > 1:
        kv = MLA_KV_VALUES if facts.attention == "mla" else 2 * max(facts.num_kv_heads // train.tp, 1) * facts.head_dim
        parts["cp_comm"] = (
            fwd * layers * ((train.cp - 1) * t_dev * kv * 2 / _bw(recipe, train.tp * train.cp) + 2 * lat * micro)
        )
    moe_layers = (facts.num_layers - facts.dense_layers) / train.pp if facts.num_experts else 0
    if train.ep > 1 and moe_layers:
        routed = t_dev / train.tp * facts.active_experts  # sequence parallel: each TP rank routes its share
        volume = 2 * routed * h * 2 * (train.ep - 1) / train.ep
        parts["ep_comm"] = fwd * moe_layers * (volume / _bw(recipe, train.ep * train.etp) + 2 * lat * micro)
    # gradients: reduce-scatter + all-gather of what each device holds, once per optimizer step
    steps = max(recipe.data.train_batch_size // a.ppo_mini_batch_size, 1)
    dense_dev, expert_dev = dense / (train.tp * train.pp), expert / (train.ep * train.etp * train.pp)
    dense_dp, expert_dp = dp * train.cp, max(world // (train.ep * train.etp * train.pp), 1)
    sync = 0.0
    if dense_dp > 1:
        sync += 2 * dense_dev * 2 * (dense_dp - 1) / dense_dp / _bw(recipe, world // train.pp)
    if expert_dp > 1:
        sync += 2 * expert_dev * 2 * (expert_dp - 1) / expert_dp / _bw(recipe, world // train.pp)
    parts["dp_sync"] = steps * sync
    return _finish(parts, train, recipe, mem, facts)


def _finish(parts: dict, train: TrainLayout, recipe: Recipe, mem: dict, facts: ModelCard) -> dict:
    c = recipe.cluster
    pipelined = sum(parts.values()) - parts.get("dp_sync", 0.0)
    stages = train.pp * train.vpp
    if stages > 1:  # the slowest stage sets the pace: its layers over the average
        layers = (
            max(s.layers for s in pplayout.parse(train.pp_layout))
            if train.pp_layout
            else math.ceil(facts.num_layers / stages)
        )
        imbalance = layers * stages / facts.num_layers - 1
        if imbalance > 0:
            parts["stage_imbalance"] = pipelined * imbalance
            pipelined += parts["stage_imbalance"]
    if train.pp > 1:
        parts["bubble"] = pipelined * (train.pp - 1) / (train.vpp * micro_batches(recipe, train))
    host = c.host_gbps * GB * c.bandwidth_efficiency
    steps = max(recipe.data.train_batch_size // recipe.algorithm.ppo_mini_batch_size, 1)
    offload = 0.0
    if train.param_offload:  # weights to the host for the rollout and back, each step
        offload += 2 * mem["weights"] * GB / host
    if train.optimizer_offload:  # gradients to the host and parameters back, each optimizer step
        offload += steps * 2 * (mem["weights"] or mem["grads"]) * GB / host
    if offload:
        parts["offload"] = offload
    parts["total"] = sum(parts.values())
    return parts


def rollout_cost(recipe: Recipe, facts: ModelCard, rollout: RolloutLayout, mem: dict) -> dict:
    """Seconds per step of the rollout phase (an estimate): prefill by compute, decode by memory bandwidth."""
    c, ro, d, world = recipe.cluster, recipe.rollout, recipe.data, recipe.world_size
    dense, expert, active = _split(facts)
    seqs = d.train_batch_size * ro.n
    parts = {"prefill": 2 * active * seqs * d.max_prompt_length / (world * _flops(recipe))}
    groups = world // rollout.tp  # each TP group decodes its own sequences
    per_group = math.ceil(seqs / groups)
    conc = max(min(mem["concurrency"], per_group), 1)
    waves = math.ceil(per_group / conc)
    hbm = c.hbm_gbps * GB * c.bandwidth_efficiency
    ep = rollout.ep if rollout.ep > 1 else rollout.tp
    in_group = conc * (ep // rollout.tp if ep >= rollout.tp else 1)  # tokens per step an EP group routes
    touched = min(1.0, in_group * facts.active_experts / facts.num_experts) if facts.num_experts else 1.0
    weights = (dense / rollout.tp + expert / ep * touched) * 2
    kv = conc * (d.max_prompt_length + d.max_response_length / 2) * kv_bytes_per_token(facts, rollout.tp)
    flops = 2 * active * conc / rollout.tp / _flops(recipe)
    step = max((weights + kv) / hbm, flops)
    lat = c.collective_latency_us * 1e-6
    comm = 0.0
    if rollout.tp > 1:
        comm += facts.num_layers * 2 * (lat + conc * facts.hidden_size * 2 * 2 / _bw(recipe, rollout.tp))
    if rollout.ep > 1 and facts.num_experts:
        moe = facts.num_layers - facts.dense_layers
        comm += moe * 2 * (lat + conc * facts.active_experts * facts.hidden_size * 2 / _bw(recipe, rollout.ep))
    parts["decode"] = waves * d.max_response_length * step
    if comm:
        parts["decode_comm"] = waves * d.max_response_length * comm
    parts["total"] = sum(parts.values())
    return parts


# ---------------------------------------------------------------------------------------------- planning


@dataclass
class Scored:
    layout: TrainLayout | RolloutLayout
    memory_gb: dict
    cost: dict

    @property
    def fits(self) -> bool:
        return (
            self.memory_gb["headroom"] >= 0
            if "concurrency" not in self.memory_gb
            else (self.memory_gb["concurrency"] >= 1)
        )

    def key(self) -> tuple:
        return (not self.fits, self.cost["total"])


@dataclass
class Plan:
    recipe: Recipe
    facts: ModelCard | None
    train: list[Scored] = field(default_factory=list)
    rollout: list[Scored] = field(default_factory=list)
    rejected: Counter = field(default_factory=Counter)
    candidates: dict = field(default_factory=dict)
    recipe_errors: list[Problem] = field(default_factory=list)
    smallest_nodes: int | None = None
    inputs: tuple = ()  # (MODEL|RECIPE, hardware, overrides) as given, for smallest_cluster

    @property
    def possible(self) -> bool:
        return bool(self.train) and bool(self.rollout)


LAYOUT_KEYS = frozenset(
    [f"train.{k}" for k in (*TRAIN_KEYS, "sp", "ulysses_sp")] + [f"rollout.{k}" for k in ROLLOUT_KEYS]
)


def is_layout(p: Problem) -> bool:
    """Does this problem depend on the parallel layout (so that another layout may fix it)?"""
    return p.rule in ("memory", "batch-divisible") or p.key in LAYOUT_KEYS


def _side(p: Problem) -> str:
    if p.key.startswith("rollout.") and p.rule in ("rollout-world", "rollout-ep", "rollout-heads", "memory"):
        return "rollout"
    return "train"


def _screen(recipe: Recipe, facts: ModelCard, make, side: str, rejected: Counter) -> bool:
    """Do the rules of this side pass? Counts the rules that fail, once per rule id."""
    errors = {
        p.rule for p in layout_problems(make(), facts) if p.severity == "error" and is_layout(p) and _side(p) == side
    }
    rejected.update(errors)
    return not errors


def plan(recipe: Recipe) -> Plan:
    """Every valid training and rollout layout of a loaded recipe, scored; the recipe's layout-independent
    errors (env, stack, lengths, ...) are returned apart: no layout fixes them."""
    facts, card_problems = model_facts(recipe)
    result = Plan(recipe, facts)
    if facts is None:
        result.recipe_errors = [p for p in card_problems if p.severity == "error"]
        return result
    base_errors = [p for p in verdict(recipe) if p.severity == "error"]
    result.recipe_errors = [p for p in base_errors if not is_layout(p)]
    n_train, world = 0, recipe.world_size
    megatron = recipe.train.engine == "megatron"
    memo: dict[tuple, dict] = {}
    for cand in train_space(recipe, facts):
        n_train += 1
        # cheap necessary conditions of two rules, to skip copying a recipe for layouts that cannot divide
        # the world (tests/test_plan.py checks on samples that the rule itself rejects what these skip)
        if megatron and world % (cand.tp * cand.pp * cand.cp):
            result.rejected["world-divisible"] += 1
            continue
        if megatron and world % (cand.ep * cand.etp * cand.pp):
            result.rejected["expert-divisible"] += 1
            continue
        # the cheapest offload choice whose fuller estimate fits (it includes the memory rule's sum), else the most
        scored = None
        for p_off, o_off in OFFLOADS:
            layout = replace(cand, param_offload=p_off, optimizer_offload=o_off)
            # the estimate does not depend on vpp or the pipeline layout: reuse it across those
            key = (cand.tp, cand.pp, cand.cp, cand.ep, cand.etp, cand.sp, p_off, o_off)
            if key not in memo:
                memo[key] = train_memory(recipe, facts, layout)
            scored = Scored(layout, memo[key], {})
            if scored.memory_gb["headroom"] >= 0:
                break
        if not _screen(
            recipe, facts, lambda scored=scored: apply(recipe, train=scored.layout), "train", result.rejected
        ):
            continue
        scored.cost = train_cost(recipe, facts, scored.layout, scored.memory_gb)
        result.train.append(scored)
    n_rollout = 0
    if recipe.train.engine != "trl":
        for cand in rollout_space(recipe):
            n_rollout += 1
            if _screen(recipe, facts, lambda cand=cand: apply(recipe, rollout=cand), "rollout", result.rejected):
                mem = rollout_memory(recipe, facts, cand)
                result.rollout.append(Scored(cand, mem, rollout_cost(recipe, facts, cand, mem)))
    else:
        result.rollout.append(Scored(rollout_of(recipe), {"headroom": 0.0, "concurrency": 1}, {"total": 0.0}))
    result.train.sort(key=Scored.key)
    result.rollout.sort(key=lambda s: (s.key(), s.layout.dp))
    result.candidates = {"train": n_train, "rollout": n_rollout}
    return result


@dataclass
class Choice:
    """One listed layout: a training and a rollout layout that pass every rule together."""

    train: Scored
    rollout: Scored
    own: bool = False

    @property
    def total(self) -> float:
        return self.train.cost["total"] + self.rollout.cost["total"]

    @property
    def fits(self) -> bool:
        return self.train.fits and self.rollout.fits

    def overrides(self) -> list[str]:
        return overrides_of(self.train.layout, self.rollout.layout)


def choices(p: Plan, top: int | None = 10) -> list[Choice]:
    """The best `top` combinations (None: every valid training layout with the best rollout and every valid
    rollout layout with the best training layout), each confirmed by `verdict`, best first."""
    if not p.possible:
        return []
    if top is None:
        pairs = [(t, p.rollout[0]) for t in p.train] + [(p.train[0], r) for r in p.rollout[1:]]
    else:
        k = max(top, 1)
        pairs = [(t, r) for t in p.train[:k] for r in p.rollout[:k]]
    pairs.sort(key=lambda tr: (not (tr[0].fits and tr[1].fits), tr[0].cost["total"] + tr[1].cost["total"]))
    own_t, own_r = train_of(p.recipe), rollout_of(p.recipe)
    out: list[Choice] = []
    for t, r in pairs:
        if top is not None and len(out) >= top:
            break
        bad = [q for q in verdict(apply(p.recipe, t.layout, r.layout)) if q.severity == "error" and is_layout(q)]
        if bad:  # the screen passed each half; the whole disagrees (should not happen): drop it, and count it
            p.rejected.update({q.rule for q in bad})
            continue
        out.append(Choice(t, r, t.layout.parallel() == own_t.parallel() and r.layout == own_r))
    return out


def own_choice(p: Plan) -> Choice | None:
    """The recipe's own layout as a scored choice, when it is among the valid ones."""
    own_t, own_r = train_of(p.recipe), rollout_of(p.recipe)
    t = next((s for s in p.train if s.layout.parallel() == own_t.parallel()), None)
    r = next((s for s in p.rollout if s.layout == own_r), None)
    return Choice(t, r, True) if t and r else None


def why(choice: Choice, best: Choice | None) -> str:
    """Why a layout ranks where it does: its largest estimated costs, and what it adds over the best."""
    parts = {f"train {k}": v for k, v in choice.train.cost.items() if k != "total"}
    parts.update({f"rollout {k}": v for k, v in choice.rollout.cost.items() if k != "total"})
    total = sum(parts.values()) or 1.0
    top = sorted(parts.items(), key=lambda kv: -kv[1])[:2]
    text = ", ".join(f"{k} {v / total:.0%}" for k, v in top)
    if not choice.fits:
        text = "estimate exceeds device memory; " + text
    if best is not None and best is not choice:
        other = {f"train {k}": v for k, v in best.train.cost.items() if k != "total"}
        other.update({f"rollout {k}": v for k, v in best.rollout.cost.items() if k != "total"})
        diff = max(parts, key=lambda k: parts[k] - other.get(k, 0.0))
        if parts[diff] - other.get(diff, 0.0) > 0:
            text += f"; +{parts[diff] - other.get(diff, 0.0):.0f} s {diff} vs #1"
    return text + (" (the recipe's own layout)" if choice.own else "")


def to_dict(choice: Choice, best: Choice | None = None) -> dict:
    r = lambda d: {k: (round(v, 2) if isinstance(v, float) else v) for k, v in d.items()}  # noqa: E731
    return {
        "train": train_fields(choice.train.layout),
        "rollout": {k: getattr(choice.rollout.layout, k) for k in ROLLOUT_KEYS},
        "memory_gb": {"train": r(choice.train.memory_gb), "rollout": r(choice.rollout.memory_gb), "kind": ESTIMATE},
        "est_step_s": {
            "rollout": round(choice.rollout.cost["total"], 1),
            "train": round(choice.train.cost["total"], 1),
            "total": round(choice.total, 1),
            "parts": {"rollout": r(choice.rollout.cost), "train": r(choice.train.cost)},
            "kind": ESTIMATE,
        },
        "fits": choice.fits,
        "recipe_layout": choice.own,
        "why": why(choice, best),
        "overrides": choice.overrides(),
    }


# ---------------------------------------------------------------------------------------------- inputs


def hardware_overrides(profile: str) -> list[str]:
    """A hardware profile (params/hardware/<profile>.yaml) as `cluster.*` overrides, applied before --set."""
    path = params_dir() / "hardware" / f"{profile}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in (params_dir() / "hardware").glob("*.yaml"))
        raise InputError(f"no hardware profile {profile!r} in params/hardware/; known: {', '.join(known)}")
    cluster = read_yaml(path).get("cluster") or {}
    return [f"cluster.{k}={v}" for k, v in cluster.items() if k != "nnodes"]


def is_model(ref: str) -> bool:
    """A model card name (params/models/) that is not also a recipe name."""
    return (
        "/" not in ref
        and not (params_dir() / "recipes" / f"{ref}.yaml").is_file()
        and (params_dir() / "models" / f"{ref}.yaml").is_file()
    )


def load(ref: str, nodes: int | None = None, hardware: str | None = None, overrides: Iterable[str] = ()) -> Recipe:
    """The recipe to plan: a recipe (name or path), or a bare model card on base.yaml (hardware default
    ascend-a3), with the node count, the hardware profile and the overrides applied (in that order)."""
    sets = []
    if is_model(ref):
        sets += [f"model.card={ref}", "model.path="]
        ref_path: str | Path = params_dir() / "base.yaml"
        hardware = hardware or "ascend-a3"
    else:
        ref_path = ref
    if hardware:
        sets += hardware_overrides(hardware)
    if nodes is not None:
        sets.append(f"cluster.nnodes={nodes}")
    recipe = load_recipe(ref_path, [*sets, *overrides])
    if is_model(ref):
        recipe.set_origin(ref)
    return recipe


SEARCH_NODES = tuple(range(1, 65)) + (128, 256, 512, 1024)  # node counts smallest_cluster tries, in order


def smallest_cluster(ref: str, hardware: str | None, overrides: Iterable[str]) -> int | None:
    """The fewest nodes (of SEARCH_NODES) on which some layout passes every rule and fits the estimate; None
    when none does, or when no node count can help (recipe errors, or dense weights that exceed a device's
    rollout share even at the largest tensor parallel inside a node)."""
    for nodes in SEARCH_NODES:
        try:
            p = plan(load(ref, nodes, hardware, overrides))
        except (RecipeError, InputError):
            return None
        if p.recipe_errors or p.facts is None:
            return None
        if nodes == 1:
            c, (dense, _, _) = p.recipe.cluster, _split(p.facts)
            if dense * memory.DTYPE_BYTES[p.recipe.model.dtype] / c.devices_per_node / GB > (
                c.device_memory_gb * p.recipe.rollout.gpu_memory_utilization
            ):
                return None
        if p.possible and any(t.fits for t in p.train) and any(r.fits for r in p.rollout):
            return nodes
    return None


NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def write_recipe(
    name: str, ref: str, choice: Choice, recipe: Recipe, hardware: str | None, overrides: Iterable[str]
) -> Path:
    """params/recipes/<name>.yaml: the chosen layout layered on the recipe given (never overwrites)."""
    import yaml

    if not NAME.match(name) or name.endswith((".yaml", ".yml")):
        raise InputError(f"recipe name {name!r}: use letters, digits, '_', '-' or '.', no path and no .yaml")
    path = params_dir() / "recipes" / f"{name}.yaml"
    if path.exists():
        raise InputError(f"params/recipes/{name}.yaml exists: choose another --write name (nothing overwritten)")
    if is_model(ref):
        parents = ["base", f"hardware/{hardware or 'ascend-a3'}"]
    else:
        src = Path(recipe.files[-1])
        inside = params_dir() / "recipes" / f"{src.stem}.yaml"
        parents = [
            f"recipes/{src.stem}"
            if inside.is_file() and (params_dir().parent / src).resolve() == inside.resolve()
            else str((params_dir().parent / src).resolve())
        ]
    if hardware and not is_model(ref):
        parents.append(f"hardware/{hardware}")  # a later parent wins: the profile replaces the recipe's cluster
    data: dict = {"defaults": parents}
    for text in (
        overrides_of(choice.train.layout, choice.rollout.layout)
        + [f"cluster.nnodes={recipe.cluster.nnodes}"]
        + ([f"model.card={ref}", "model.path="] if is_model(ref) else [])
        + list(overrides)
    ):
        key, raw = text.split("=", 1)
        set_dotted(data, key, yaml.safe_load(raw) if raw.strip() else "")
    header = (
        f"# {name}: {recipe.name} with the layout `grpolab plan` ranked first on {recipe.cluster.nnodes} x "
        f"{recipe.cluster.devices_per_node} {recipe.cluster.hardware} (ranked by an estimate, not a "
        "measurement)\n"
    )
    path.write_text(header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=110))
    return path


# ---------------------------------------------------------------------------------------------- check fixes


def _distance(a: tuple, b: tuple) -> float:
    return sum(abs(math.log2(x) - math.log2(y)) for x, y in zip(a, b) if isinstance(x, int) and isinstance(y, int))


def nearest(p: Plan, k: int = 2) -> tuple[list[TrainLayout], list[RolloutLayout]]:
    """The k valid training and rollout layouts nearest the recipe's own (fewest doublings away), best first."""
    own_t, own_r = train_of(p.recipe), rollout_of(p.recipe)

    def t_key(s):
        return (
            not s.fits,
            _distance(s.layout.parallel()[:6], own_t.parallel()[:6]),
            s.layout.pp_layout != own_t.pp_layout,
            (s.layout.param_offload, s.layout.optimizer_offload) != (own_t.param_offload, own_t.optimizer_offload),
            s.cost["total"],
        )

    r_key = lambda s: (not s.fits, _distance(astuple_r(s.layout), astuple_r(own_r)), s.cost["total"])  # noqa
    return ([s.layout for s in sorted(p.train, key=t_key)[:k]], [s.layout for s in sorted(p.rollout, key=r_key)[:k]])


def astuple_r(r: RolloutLayout) -> tuple:
    return (r.tp, r.dp, r.ep)


def with_layout_fixes(recipe: Recipe, problems: list[Problem]) -> list[Problem]:
    """The problems, with each layout error's fix extended by the nearest whole valid layouts (from a plan)."""
    from dataclasses import replace

    from grpolab.rules.validate import LAYOUT_FIX_RULES

    if not any(q.severity == "error" and q.rule in LAYOUT_FIX_RULES for q in problems):
        return problems  # nothing to plan for (planning costs tens of milliseconds)
    if recipe.world_size > MAX_HINT_WORLD:  # no cluster of this size exists: the rule's own fix stands
        return problems
    try:
        p = plan(recipe)
    except Exception:  # a hint must never break a check: the rule's own fix stands
        return problems
    trains, rollouts = nearest(p)
    out = []
    for q in problems:
        if q.severity == "error" and q.rule in LAYOUT_FIX_RULES:
            side = _side(q)
            sets = []
            for lay in trains if side == "train" else rollouts:
                ovs = overrides_of(lay, None) if side == "train" else overrides_of(None, lay)
                changed = [o for o in ovs if _changed(o, recipe) and not _less_offload(o, recipe)]
                if changed:
                    sets.append(" ".join(f"--set {shlex.quote(o)}" for o in changed))
            if sets:
                q = replace(
                    q, fix=f"{q.fix}; or a whole valid {side} layout nearest yours (grpolab plan): " + " | ".join(sets)
                )
            elif not (p.train if side == "train" else p.rollout):
                q = replace(
                    q,
                    fix=f"{q.fix}; no {side} layout passes on this cluster: `grpolab plan` names the "
                    "smallest cluster that fits",
                )
        out.append(q)
    return out


def _less_offload(override: str, recipe: Recipe) -> bool:
    """Turning an offload off is never needed to fix a layout (more offload only saves device memory)."""
    return override.startswith(("train.param_offload=", "train.optimizer_offload=")) and override.endswith("=false")


def _changed(override: str, recipe: Recipe) -> bool:
    key, raw = override.split("=", 1)
    section, name = key.split(".", 1)
    value = getattr(getattr(recipe, section), name)
    text = "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)
    return text != raw


def figures(ch, best) -> list[str]:
    """A ranked layout's estimates as table cells: headroom (train, rollout), step time (rollout, train, total),
    and why it ranks there (the CLI and the 05_plan notebook print the same columns)."""
    return [
        f"{ch.train.memory_gb['headroom']:.1f}",
        f"{ch.rollout.memory_gb['headroom']:.1f}",
        f"{ch.rollout.cost['total']:.0f}",
        f"{ch.train.cost['total']:.0f}",
        f"{ch.total:.0f}",
        why(ch, best),
    ]
