"""Checks learned from real failures: faults that verl, vLLM-Ascend, SGLang and Megatron users hit after launch.

Each function is one rule family over a schema-valid recipe and its model facts; it reports through `add`
(grpolab.rules.validate's collector, which names the file that set the key). Pure Python, no torch/verl import, and
cheap: `grpolab check` stays under 50 ms per recipe. The public report each rule comes from is in
grpolab.rules.docs (docs/rules.md is generated from it by scripts/make_rules_doc.py).

Known-bad version/environment combinations are data, not code: params/stack_rules.yaml.

Why one file of this size: sixteen rule classes learned from the field, each short and each citing its report; one
module keeps docs/rules.md's source in one place.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from grpolab.recipe import pplayout, stack
from grpolab.recipe.dotted import flatten
from grpolab.recipe.schema import ModelCard, Recipe
from grpolab.verl.fieldmap import field_of, verl_key

Add = Callable[..., None]  # add(rule, key, value, message, fix, severity="error")

ROLL = "actor_rollout_ref.rollout"
MIB = 1 << 20
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}


# ---------------------------------------------------------------------------------------------------- helpers
def sequence_parallel(recipe: Recipe) -> bool:
    """Megatron sequence parallel in effect. Accepts `train.sp` as an int (1 = off, = tp on) or a bool."""
    t = recipe.train
    sp = t.sp
    on = bool(sp) if isinstance(sp, bool) else sp > 1
    return t.engine == "megatron" and on and t.tp > 1


def ulysses_size(recipe: Recipe) -> int:
    """FSDP Ulysses sequence-parallel size, whichever field carries it (a dedicated field, or the int `sp`)."""
    t = recipe.train
    for name in ("ulysses_sp", "ulysses", "ulysses_size", "ulysses_sequence_parallel_size", "sp_size"):
        value = getattr(t, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return t.sp if isinstance(t.sp, int) and not isinstance(t.sp, bool) else 1


def train_dp(recipe: Recipe) -> int:
    """Data-parallel size of the trainer (0 when the layout does not divide the world)."""
    t, world = recipe.train, recipe.world_size
    if t.engine == "megatron":
        group = t.tp * t.pp * t.cp
    elif t.engine == "fsdp":
        group = ulysses_size(recipe)
    else:
        return 1
    return world // group if group and world % group == 0 else 0


def flat_overrides(recipe: Recipe) -> dict[str, Any]:
    """verl_overrides as {dotted key: value}: a recipe may nest them (`--set verl_overrides.a.b=1` does)."""
    return {key.lstrip("+"): value for key, value in flatten(recipe.verl_overrides).items()}


def override(recipe: Recipe, key: str, default: Any) -> Any:
    """A raw verl override wins over the recipe's field (the escape hatch is rendered last)."""
    return flat_overrides(recipe).get(key, default)


def pinned_version(recipe: Recipe, package: str) -> str | None:
    """The version a recipe pins a package at; a branch such as core_r0.16.0 reads as 0.16.0; None if unknown."""
    text = recipe.stack.get(package)
    if text is None:
        return None
    try:
        pin = stack.parse_pin(package, text)
    except ValueError:
        return None
    if pin.version:
        return pin.version
    match = re.search(r"(\d+\.\d+(?:\.\d+)*)", pin.ref or "")
    return match.group(1) if match else None


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _nearest(value: int, candidates, k: int = 3) -> str:
    best = sorted(sorted(set(candidates), key=lambda c: (abs(c - value), c))[:k])
    return ", ".join(str(v) for v in best) if best else "none"


def verl_engine(recipe: Recipe) -> bool:
    return recipe.train.engine in ("megatron", "fsdp")


# ---------------------------------------------------------------------------------------------------- class 1
def rollout_node(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """Rollout TP must divide the devices per node when rollout DP > 1; TP larger than a node is a warning."""
    ro, dpn = r.rollout, r.cluster.devices_per_node
    if not verl_engine(r):
        return
    if ro.dp > 1 and dpn % ro.tp:
        valid = [d for d in _divisors(dpn) if not f or f.num_heads % d == 0]
        add(
            "rollout-node",
            "rollout.tp",
            ro.tp,
            f"rollout dp {ro.dp} > 1 needs rollout tp to divide the {dpn} devices per node; tp {ro.tp} does not "
            "(verl's vLLM server asserts `gpus_per_node % tensor_model_parallel_size == 0` after the model loaded)",
            f"nearest valid rollout.tp: {_nearest(ro.tp, valid)} (raise rollout.dp to keep tp x dp), or rollout.dp: 1",
            severity="error" if ro.engine == "vllm" else "warning",
        )
    elif ro.tp > dpn:
        add(
            "rollout-node",
            "rollout.tp",
            ro.tp,
            f"rollout tp {ro.tp} spans {-(-ro.tp // dpn)} nodes of {dpn} devices: tensor-parallel all-reduces cross "
            "the network (slow, and NCCL/HCCL timeouts in validation are reported)",
            f"keep rollout.tp within a node ({dpn}) and scale with rollout.dp / rollout.ep",
            severity="warning",
        )


# ---------------------------------------------------------------------------------------------------- class 2
AGENT_WORKERS = 8  # verl 0.9.1 rollout.agent.num_workers default


def dispatch_chunk(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """The rollout batch (train batch x n) must split evenly over the rollout's workers: verl 0.9.1's agent loop
    chunks it over `rollout.agent.num_workers` with DataProto.chunk, which has no padding. (The split over the
    training DP groups, with micro-batches, is rule batch-divisible.)"""
    if not verl_engine(r):
        return
    ro, d = r.rollout, r.data
    groups = override(r, f"{ROLL}.agent.num_workers", AGENT_WORKERS)
    if not isinstance(groups, int) or isinstance(groups, bool) or groups <= 0:
        return
    total = d.train_batch_size * ro.n
    dp = train_dp(r)
    micro = 1 if r.train.dynamic_bsz else r.algorithm.micro_batch_size_per_device
    if total % groups and not (dp and total % (dp * micro)):  # else batch-divisible names data.train_batch_size
        sizes = [
            b
            for b in range(1, 4 * d.train_batch_size + 1)
            if (b * ro.n) % groups == 0 and (not train_dp(r) or (b * ro.n) % train_dp(r) == 0)
        ]
        add(
            "dispatch-chunk",
            "data.train_batch_size",
            d.train_batch_size,
            f"train batch x n = {d.train_batch_size} x {ro.n} = {total} does not split evenly over the {groups} "
            "rollout agent-loop workers (actor_rollout_ref.rollout.agent.num_workers); verl's DataProto.chunk "
            "asserts `only support equal chunk` at the first generation",
            f"nearest valid data.train_batch_size: {_nearest(d.train_batch_size, sizes)}",
        )
    val = override(r, "data.val_batch_size", None)
    if isinstance(val, int) and not isinstance(val, bool) and val > 0 and val % groups:
        add(
            "dispatch-chunk",
            "verl_overrides.data.val_batch_size",
            val,
            f"the validation batch {val} does not split evenly over the {groups} rollout agent-loop workers",
            f"use a multiple of {groups}, e.g. {max(groups, val - val % groups)}",
        )


# ---------------------------------------------------------------------------------------------------- class 3
def vpp_microbatches(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """With vpp > 1, micro-batches per mini-batch must be >= pp and a multiple of pp (interleaved schedule)."""
    t, a, n = r.train, r.algorithm, r.rollout.n
    if t.engine != "megatron" or t.vpp <= 1 or t.pp <= 1 or t.dynamic_bsz:
        return
    dp, micro = train_dp(r), a.micro_batch_size_per_device
    per_dp = a.ppo_mini_batch_size * n
    if not dp or per_dp % dp or (per_dp // dp) % micro:
        return  # batch-divisible reports it
    m = per_dp // dp // micro

    def ok(b: int) -> bool:
        total = b * n
        return total % (dp * micro) == 0 and (total // dp // micro) >= t.pp and (total // dp // micro) % t.pp == 0

    if m < t.pp or m % t.pp:
        sizes = [b for b in _divisors(r.data.train_batch_size) if ok(b)]
        add(
            "vpp-microbatches",
            "algorithm.ppo_mini_batch_size",
            a.ppo_mini_batch_size,
            f"with vpp {t.vpp} Megatron's interleaved schedule needs the micro-batches per mini-batch (mini x n / "
            f"(dp x micro) = {per_dp} / ({dp} x {micro}) = {m}) to be >= pp {t.pp} and a multiple of it",
            f"nearest valid algorithm.ppo_mini_batch_size: {_nearest(a.ppo_mini_batch_size, sizes)}; "
            "or lower algorithm.micro_batch_size_per_device, or set train.vpp: 1",
        )


# ---------------------------------------------------------------------------------------------------- class 5
def dynamic_batch(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """With dynamic batching the token budget per device (x cp / x Ulysses) must hold the longest sample."""
    t, d = r.train, r.data
    if not verl_engine(r) or not override(r, verl_key("train.dynamic_bsz"), t.dynamic_bsz):
        return
    factor = t.cp if t.engine == "megatron" else ulysses_size(r)
    longest = d.max_prompt_length + d.max_response_length
    if f is not None and longest > f.context_length:
        return  # rule lengths refuses the recipe already
    budget = t.max_token_len_per_device * factor
    if budget < longest:
        need = -(-longest // factor)
        add(
            "dynamic-batch",
            "train.max_token_len_per_device",
            t.max_token_len_per_device,
            f"the dynamic-batch token budget {t.max_token_len_per_device} x {factor} = {budget} cannot hold the "
            f"longest sample, prompt + response = {d.max_prompt_length} + {d.max_response_length} = {longest} "
            "(verl asserts `max_token_len must be greater than the sequence length`)",
            f"raise train.max_token_len_per_device to at least {need}",
        )


# ---------------------------------------------------------------------------------------------------- class 6
def seq_padding(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """CP / sequence parallel need sequence lengths aligned to tp x cp x 2 (without packing)."""
    t, d = r.train, r.data
    if t.engine != "megatron":
        return
    sp = sequence_parallel(r)
    if t.cp <= 1 and not sp:
        return
    align = t.tp * t.cp * 2 if t.cp > 1 else t.tp
    total = d.max_prompt_length + d.max_response_length
    if not r.model.use_remove_padding:
        if total % align:
            lengths = [
                x
                for x in range(max(align, d.max_response_length - 4 * align), d.max_response_length + 4 * align + 1)
                if (d.max_prompt_length + x) % align == 0
            ]
            add(
                "seq-padding",
                "data.max_response_length",
                d.max_response_length,
                f"without sequence packing (model.use_remove_padding false) the padded length prompt + response = "
                f"{total} must be a multiple of {'tp x cp x 2' if t.cp > 1 else 'tp'} = {align} "
                f"(cp {t.cp}, sequence parallel {'on' if sp else 'off'}); Megatron fails splitting it",
                f"nearest valid data.max_response_length: {_nearest(d.max_response_length, lengths)}; "
                "or turn model.use_remove_padding on",
            )
    elif t.cp > 1 and 2 * t.tp * t.cp > 128:
        add(
            "seq-padding",
            "train.cp",
            t.cp,
            f"with packing, CP splits each sample into 2 x cp chunks padded to tp x cp x 2 = {align} tokens: a sample "
            "shorter than that leaves a CP rank an empty slice (`The expanded size of the tensor ... must match`); "
            "verl's synthetic padding rows are only 128 tokens",
            f"keep tp x cp <= 64, or filter samples shorter than {align} tokens",
            severity="warning",
        )


# ---------------------------------------------------------------------------------------------------- class 7
def linear_attention(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """Gated DeltaNet: TP must divide the linear key and value heads; CP > 1 needs megatron-core >= 0.18."""
    if f is None or not f.linear_num_key_heads or not verl_engine(r):
        return
    kh, vh = f.linear_num_key_heads, f.linear_num_value_heads or f.linear_num_key_heads
    t, ro = r.train, r.rollout
    sizes = []
    if t.engine == "megatron":
        sizes.append(("train.tp", t.tp))
    if ro.engine in ("vllm", "sglang"):
        sizes.append(("rollout.tp", ro.tp))
    for key, tp in sizes:
        if kh % tp or vh % tp:
            valid = [d for d in _divisors(kh) if vh % d == 0 and f.num_heads % d == 0]
            add(
                "linear-attention",
                key,
                tp,
                f"{f.name}'s Gated DeltaNet layers have {kh} key and {vh} value heads: tp {tp} must divide both",
                f"nearest valid {key}: {_nearest(tp, valid)}",
            )
    if t.engine != "megatron" or t.cp <= 1:
        return
    version = pinned_version(r, "megatron-core")
    if version is None:
        add(
            "linear-attention",
            "train.cp",
            t.cp,
            f"{f.name} has Gated DeltaNet layers: context parallel needs megatron-core >= 0.18 (core_r0.16 asserts "
            "`Gated delta net does not support context parallel`), and stack: pins no megatron-core version",
            "pin megatron-core (e.g. core_r0.18.0) under stack:, or set train.cp: 1",
            severity="warning",
        )
    elif stack.satisfies(version, ">=0.18.0") and (kh % (t.tp * t.cp) or vh % (t.tp * t.cp)):
        add(
            "linear-attention",
            "train.cp",
            t.cp,
            f"Gated DeltaNet context parallel moves heads over tp x cp = {t.tp * t.cp} ranks (all-to-all): it must "
            f"divide the {kh} key and {vh} value heads",
            f"choose tp x cp dividing {kh}, e.g. train.cp: {max(1, kh // t.tp) if kh % t.tp == 0 else 1}",
        )
    # megatron-core < 0.18 with CP > 1: params/stack_rules.yaml (megatron-core-0.16-gdn-cp)


# ---------------------------------------------------------------------------------------------------- class 8
def rollout_pp_starts(r: Recipe, f: ModelCard) -> tuple[int, list[int]]:
    """The rollout's pipeline size and the 1-based layer each of its stages starts on (vLLM's split)."""
    ro = r.rollout
    pp = override(r, f"{ROLL}.pipeline_model_parallel_size", ro.engine_kwargs.get("pipeline_parallel_size", 1))
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
    starts, layer = [], 1
    for size in sizes:
        if size:
            starts.append(layer)
        layer += size
    return pp, starts


def dsa_bad(f: ModelCard, starts: list[int]) -> list[int]:
    freq, offset = f.index_topk_freq, f.index_skip_topk_offset or 0
    return [s for s in starts if not (s <= offset or (s - offset) % freq == 0)]


def dsa_stages(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """GLM-5.2's shared DSA indexer: every pipeline stage (training's even/first-last split, and the rollout's)
    must start on an allowed layer. Training's explicit pp_layout is checked in grpolab.rules.validate."""
    if f is None or not f.index_topk_freq or not verl_engine(r):
        return
    t = r.train
    allowed = [s for s in range(1, f.num_layers + 1) if not dsa_bad(f, [s])]
    if t.engine == "megatron" and t.pp_layout is None and t.pp * t.vpp > 1:
        sizes = pplayout.first_last_sizes(f.num_layers, t.pp, t.vpp, t.transformer)
        if isinstance(sizes, list):
            bad = dsa_bad(f, pplayout.starts_of(sizes))
            if bad:
                add(
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
    bad = dsa_bad(f, starts)
    if bad:
        near = sorted({min(allowed, key=lambda a: (abs(a - b), a)) for b in bad})
        add(
            "pp-layout",
            f"verl_overrides.{ROLL}.pipeline_model_parallel_size",
            pp,
            f"{f.name}'s DSA indexer is shared across layers: the rollout's pipeline split ({pp} stages of "
            f"{f.num_layers} layers) starts stages on layers {bad}, which the indexer does not allow",
            f"set env VLLM_PP_LAYER_PARTITION so stages start on allowed layers (nearest: {near}), or use a "
            "rollout pipeline size whose even split fits",
        )


# ---------------------------------------------------------------------------------------------------- class 10
def largest_tensor_mib(r: Recipe, f: ModelCard) -> tuple[float, str]:
    nbytes = DTYPE_BYTES[r.model.dtype]
    embedding = f.vocab_size * f.hidden_size * nbytes / MIB
    if f.largest_tensor_mb and f.largest_tensor_mb > embedding:
        return f.largest_tensor_mb, "its largest tensor (card: largest_tensor_mb)"
    return embedding, f"its embedding ({f.vocab_size} x {f.hidden_size}, {r.model.dtype})"


def weight_bucket(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """The largest single tensor must fit in the weight-sync bucket."""
    if f is None or not verl_engine(r):
        return
    bucket = override(r, verl_key("rollout.update_weights_bucket_mb"), r.rollout.update_weights_bucket_mb)
    if not isinstance(bucket, int) or isinstance(bucket, bool):
        return
    size, what = largest_tensor_mib(r, f)
    if size > bucket:
        need = -(-int(size + 1) // 512) * 512
        # verl 0.9.1 sends an oversized tensor on its own where CUDA IPC works; the shared-memory path (NPU without
        # IPC support, as in verl issue 5952) asserts
        ipc = r.cluster.device == "cuda"
        add(
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


# ---------------------------------------------------------------------------------------------------- class 11
def router_replay(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """R2 / R3 must agree with rollout routing replay."""
    if not verl_engine(r):
        return
    mode = r.train.router_replay
    rr = bool(override(r, verl_key("rollout.routing_replay"), r.rollout.routing_replay))
    if mode == "R2" and rr:
        add(
            "router-replay",
            "rollout.routing_replay",
            True,
            "train.router_replay R2 records routing in the trainer's own log-prob pass; with rollout routing replay "
            "on as well verl raises `Detected conflicting router replay configuration` at step 1",
            "set rollout.routing_replay: false (R2), or train.router_replay: R3",
        )
    elif mode == "R3" and not rr:
        add(
            "router-replay",
            "rollout.routing_replay",
            False,
            "train.router_replay R3 replays the routing recorded by the rollout engine, but rollout routing replay "
            "is off: no routed experts reach the trainer",
            "set rollout.routing_replay: true, or train.router_replay: R2",
        )
    elif mode == "disabled" and rr:
        add(
            "router-replay",
            "rollout.routing_replay",
            True,
            "the rollout records MoE routing but train.router_replay is disabled: the routes are never replayed",
            "set train.router_replay: R3, or rollout.routing_replay: false",
            severity="warning",
        )
    if rr and f is not None and not f.num_experts:
        add(
            "router-replay",
            "rollout.routing_replay",
            True,
            f"{f.name} is a dense model: there is no routing to replay",
            "set rollout.routing_replay: false",
            severity="warning",
        )


# ---------------------------------------------------------------------------------------------------- class 12
def rollout_backend(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """SGLang on NPU needs the Ascend attention backend."""
    ro = r.rollout
    if not verl_engine(r):
        return
    backend = (
        ro.attention_backend
        or ro.engine_kwargs.get("attention_backend")
        or override(r, verl_key("rollout.attention_backend"), None)
    )
    if ro.engine == "sglang" and r.cluster.device == "npu" and backend != "ascend":
        add(
            "rollout-backend",
            "rollout.attention_backend",
            backend,
            f"SGLang on NPU needs attention_backend `ascend`; with {backend or 'none set'} verl picks "
            f"{'it' if backend else 'fa3 / flashinfer'}, CUDA kernels that fail when the rollout starts",
            "set rollout.attention_backend: ascend",
        )
    elif ro.engine == "sglang" and r.cluster.device == "cuda" and backend == "ascend":
        add(
            "rollout-backend",
            "rollout.attention_backend",
            backend,
            "the `ascend` attention backend needs Ascend NPUs; this recipe runs on CUDA",
            "set rollout.attention_backend: null (SGLang's default) or a CUDA backend (fa3, flashinfer)",
        )
    elif ro.engine != "sglang" and ro.attention_backend is not None:
        add(
            "rollout-backend",
            "rollout.attention_backend",
            ro.attention_backend,
            f"rollout.attention_backend applies to SGLang only; rollout.engine {ro.engine} ignores it",
            "remove rollout.attention_backend",
            severity="warning",
        )


# ---------------------------------------------------------------------------------------------------- class 13
# deprecated verl key -> its replacement (verl's `_per_gpu` twin); `rendered` = grpolab always renders the replacement
# itself (the field map has it)
DEPRECATED = {
    old: (old + "_per_gpu", field_of(old + "_per_gpu") is not None)
    for old in (
        "actor_rollout_ref.actor.ppo_micro_batch_size",
        "actor_rollout_ref.ref.log_prob_micro_batch_size",
        f"{ROLL}.log_prob_micro_batch_size",
        "critic.ppo_micro_batch_size",
        "critic.forward_micro_batch_size",
        "reward_model.micro_batch_size",
    )
}


def deprecated_keys(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """Deprecated verl keys that verl rejects beside their `_per_gpu` replacement."""
    if not verl_engine(r):
        return
    keys = flat_overrides(r)
    for old, (new, rendered) in DEPRECATED.items():
        if old not in keys or keys[old] is None:
            continue
        if rendered or new in keys:
            add(
                "deprecated-key",
                f"verl_overrides.{old}",
                keys[old],
                f"{old} is deprecated and verl refuses it beside {new} (`You have set both ...`)"
                + (
                    ", which grpolab always sets from algorithm.micro_batch_size_per_device / "
                    "rollout.log_prob_micro_batch_size_per_device"
                    if rendered
                    else ""
                ),
                f"remove verl_overrides.{old}; set the per-device size instead",
            )
        else:
            add(
                "deprecated-key",
                f"verl_overrides.{old}",
                keys[old],
                f"{old} is deprecated (a global size); verl's replacement is {new}",
                f"use verl_overrides.{new}",
                severity="warning",
            )


# ---------------------------------------------------------------------------------------------------- class 14
BIG_MODEL_B = 32
BIG_WORLD = 64
MIN_TIMEOUT_S = 1800
MIN_HCCL_CONNECT_S = 1200


def startup_timeout(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """Models of 32B+ on 64+ devices need longer collective / HCCL connect timeouts than the defaults."""
    if f is None or not verl_engine(r) or f.params_b < BIG_MODEL_B or r.world_size < BIG_WORLD:
        return
    scale = f"{f.name} ({f.params_b:g}B) on {r.world_size} devices"
    timeout = override(r, verl_key("trainer.timeout_s"), r.trainer.timeout_s)
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout < MIN_TIMEOUT_S:
        add(
            "startup-timeout",
            "trainer.timeout_s",
            timeout,
            f"{scale}: loading, offloading and the first weight sync outlast a {timeout} s collective "
            "timeout; the barrier times out before step 1",
            f"set trainer.timeout_s to {MIN_TIMEOUT_S} or more",
            severity="warning",
        )
    if r.cluster.device == "npu":
        have = r.env.get("HCCL_CONNECT_TIMEOUT")
        try:
            value = int(have) if have is not None else 120
        except ValueError:
            value = 0
        if value < MIN_HCCL_CONNECT_S:
            add(
                "startup-timeout",
                "env.HCCL_CONNECT_TIMEOUT",
                have,
                f"{scale}: HCCL's connect timeout is {value} s ({'set' if have else 'default'}); building the "
                "communicators of this many NPUs is reported to exceed it (EI0006 `Getting socket times out`)",
                f'add `HCCL_CONNECT_TIMEOUT: "{MIN_HCCL_CONNECT_S}"` (or more, up to 7200) under env:',
                severity="warning",
            )


# ---------------------------------------------------------------------------------------------------- class 15/16
@lru_cache(maxsize=1)
def stack_rules() -> tuple[dict, ...]:
    """params/stack_rules.yaml: known bad / required combinations, as data."""
    import yaml

    from grpolab.recipe.loader import params_dir

    data = yaml.safe_load((params_dir() / "stack_rules.yaml").read_text())
    return tuple(data or ())


def _condition(r: Recipe, f: ModelCard | None, name: str, want: Any) -> bool:
    ro, t = r.rollout, r.train
    if name == "device":
        return r.cluster.device == want
    if name == "hardware":
        return r.cluster.hardware == want
    if name == "rollout_engine":
        return ro.engine == want
    if name == "train_engine":
        return t.engine == want
    if name == "moe":
        return bool(f and f.num_experts) == bool(want)
    if name == "linear_attention":
        return bool(f and f.linear_num_key_heads) == bool(want)
    if name == "rollout_ep_gt":
        return ro.ep > want
    if name == "cp_gt":
        return t.cp > want
    if name == "enforce_eager":
        return ro.enforce_eager == want
    if name == "routing_replay":
        return bool(override(r, verl_key("rollout.routing_replay"), ro.routing_replay)) == want
    if name == "env":
        return all(r.env.get(k) == str(v) for k, v in want.items())
    if name == "stack":
        for package, spec in want.items():
            version = pinned_version(r, package)
            if version is None or stack.satisfies(version, spec) is not True:
                return False
        return True
    raise ValueError(f"params/stack_rules.yaml: unknown condition {name!r}")


CONDITIONS = (
    "device",
    "hardware",
    "rollout_engine",
    "train_engine",
    "moe",
    "linear_attention",
    "rollout_ep_gt",
    "cp_gt",
    "enforce_eager",
    "routing_replay",
    "env",
    "stack",
)
ENTRY_KEYS = {"id", "when", "severity", "key", "message", "fix", "source"}


def table_faults() -> list[str]:
    """What is wrong with params/stack_rules.yaml (missing fields, unknown conditions or rule ids); [] if fine."""
    from grpolab.problems import RULES

    faults = []
    for i, entry in enumerate(stack_rules()):
        name = entry.get("id", f"entry {i + 1}") if isinstance(entry, dict) else f"entry {i + 1}"
        if not isinstance(entry, dict):
            faults.append(f"{name}: not a mapping")
            continue
        faults += [f"{name}: missing {k}" for k in sorted(ENTRY_KEYS - set(entry))]
        faults += [f"{name}: unknown condition {c}" for c in entry.get("when", {}) if c not in CONDITIONS]
        if entry.get("rule", "known-bad") not in RULES:
            faults.append(f"{name}: unknown rule {entry['rule']}")
        if entry.get("severity") not in ("error", "warning"):
            faults.append(f"{name}: severity must be error or warning")
    return faults


def known_bad(r: Recipe, f: ModelCard | None, add: Add) -> None:
    """Every entry of params/stack_rules.yaml whose conditions all hold."""
    for entry in stack_rules():
        if not all(_condition(r, f, k, v) for k, v in entry["when"].items()):
            continue
        rule = entry.get("rule", "known-bad")
        where = f" [{entry['id']}; {entry['source']}]"
        requires = entry.get("requires")
        if not requires:
            key = entry["key"]
            value = (
                r.env.get(key[4:])
                if key.startswith("env.")
                else r.stack.get(key[6:])
                if key.startswith("stack.")
                else None
            )
            add(rule, key, value, entry["message"] + where, entry["fix"], severity=entry["severity"])
            continue
        for package, version in requires.items():
            have = r.stack.get(package)
            if have is None:
                add(
                    rule,
                    f"stack.{package}",
                    None,
                    f"{entry['message']}; {package} is not pinned{where}",
                    f'pin `{package}: "{version}"` under stack:',
                    severity="warning",
                )
            elif have.split("@")[0].lstrip("v") != version:
                add(
                    rule,
                    f"stack.{package}",
                    have,
                    f"{entry['message']}; the recipe pins {package} {have}{where}",
                    f'pin `{package}: "{version}"`',
                    severity=entry["severity"],
                )


RULES = (
    rollout_node,
    dispatch_chunk,
    vpp_microbatches,
    dynamic_batch,
    seq_padding,
    linear_attention,
    dsa_stages,
    weight_bucket,
    router_replay,
    rollout_backend,
    deprecated_keys,
    startup_timeout,
    known_bad,
)


def check(recipe: Recipe, facts: ModelCard | None, add: Add) -> None:
    """Run every rule learned from the field; `add` collects the problems."""
    for rule in RULES:
        rule(recipe, facts, add)
