"""The validator: every fault a recipe can show without a cluster, found in milliseconds, all at once.

Pure Python (no torch, ray or verl import). Each rule returns Problems with a stable rule id (see
grpolab.problems.RULES), the dotted key, the bad value, what is wrong and how to fix it; when a parallel
rule fails the fix proposes the nearest valid values. `check()` is what `grpolab check` and the notebooks
call: the schema, these rules, and (optionally) the rendered overrides composed against the installed verl.

Why one file of this size: the cross-field rules share one collector (_Rules) and one view of the model facts, so
that every problem is collected in one pass.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources

from grpolab.problems import Problem, closest
from grpolab.recipe import memory, pplayout, stack
from grpolab.recipe.cards import model_facts
from grpolab.recipe.schema import ModelCard, Recipe
from grpolab.rules import field_rules, registry

MAX_DIVISORS_OF = 10**12  # above this no "nearest valid" list is offered: finding it would take seconds


def _divisors(n: int) -> list[int]:
    """The divisors of n, in O(sqrt n): n comes from a recipe, and a typo of 10**26 must not hang `check`."""
    if n < 1 or n > MAX_DIVISORS_OF:
        return []
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _multiples_near(value: int, step: int, k: int = 3) -> list[int]:
    """Positive multiples of step around value (the k nearest are picked by _nearest)."""
    base = max(1, value // step)
    return [m * step for m in range(max(1, base - k), base + k + 2)]


def _nearest(value: int, candidates: Iterable[int], k: int = 3) -> list[int]:
    return sorted(sorted(set(candidates), key=lambda c: (abs(c - value), c))[:k])


def _fmt(values: list[int]) -> str:
    return ", ".join(str(v) for v in values) if values else "none"


def train_dp(recipe: Recipe) -> int:
    """Data-parallel size of the trainer (0 when the layout does not divide the world)."""
    t, world = recipe.train, recipe.world_size
    if t.engine == "megatron":
        group = t.tp * t.pp * t.cp
    elif t.engine == "fsdp":
        group = t.ulysses_sp
    else:
        return 1
    return world // group if world % group == 0 else 0


class _Rules:
    """One pass over a recipe; each method is one rule family. Collects, never raises."""

    def __init__(self, recipe: Recipe, facts: ModelCard | None) -> None:
        self.r = recipe
        self.f = facts
        self.problems: list[Problem] = []

    def culprit(self, section: str, names: tuple[str, ...]) -> str:
        """Of several keys that together break a rule, the one the user set last (the command line first)."""
        for name in names:
            if self.r.origin(f"{section}.{name}").startswith("--set"):
                return name
        recipe_file = self.r.files[-1]
        for name in names:
            if self.r.origin(f"{section}.{name}") == recipe_file:
                return name
        return names[0]

    def add(self, rule: str, key: str, value, message: str, fix: str, severity: str | None = None) -> None:
        """Collect a problem; its severity is the rule's default (grpolab.rules.registry) unless given."""
        severity = severity or registry.default_severity(rule)
        self.problems.append(Problem(rule, severity, key, value, f"{self.r.origin(key)}: {message}", fix))

    # ------------------------------------------------------------------ parallel layout of the trainer
    def megatron(self) -> None:
        r, t, f, world = self.r, self.r.train, self.f, self.r.world_size
        group = t.tp * t.pp * t.cp
        if world % group:
            name = self.culprit("train", ("tp", "pp", "cp"))
            value = getattr(t, name)
            others = group // value
            valid = (
                [d for d in _divisors(world // others) if name != "tp" or not f or f.num_heads % d == 0]
                if (world % others == 0)
                else []
            )
            dpn = r.cluster.devices_per_node
            step = group // math.gcd(dpn, group)  # the smallest node count whose devices the group divides
            nodes = -(-r.cluster.nnodes // step) * step
            self.add(
                "world-divisible",
                f"train.{name}",
                value,
                f"world size {world} ({r.cluster.nnodes} nodes x {dpn}) is not divisible by "
                f"tp x pp x cp = {t.tp} x {t.pp} x {t.cp} = {group}",
                f"nearest valid train.{name}: {_fmt(_nearest(value, valid))}; or cluster.nnodes: {nodes}",
            )
        egroup = t.ep * t.etp * t.pp
        if world % egroup:
            name = self.culprit("train", ("ep", "etp", "pp"))
            value = getattr(t, name)
            others = egroup // value
            valid = (
                [
                    d
                    for d in _divisors(world // others)
                    if name != "ep" or not f or not f.num_experts or f.num_experts % d == 0
                ]
                if world % others == 0
                else []
            )
            self.add(
                "expert-divisible",
                f"train.{name}",
                value,
                f"world size {world} is not divisible by ep x etp x pp = {t.ep} x {t.etp} x {t.pp} = {egroup}",
                f"nearest valid train.{name}: {_fmt(_nearest(value, valid))}",
            )
        if t.ulysses_sp != 1:
            self.add(
                "engine-support",
                "train.ulysses_sp",
                t.ulysses_sp,
                "Ulysses sequence parallel is an FSDP setting; Megatron uses train.sp (on/off) and train.cp",
                "set train.ulysses_sp to 1 (and train.sp: true for Megatron sequence parallel)",
            )
        if t.vpp > 1 and t.pp == 1:
            self.add(
                "engine-support",
                "train.vpp",
                t.vpp,
                "virtual pipeline stages need pp > 1",
                "set train.vpp to 1, or raise train.pp",
            )
        if f is None:
            return
        if f.num_heads % t.tp:
            self.add(
                "heads-tp",
                "train.tp",
                t.tp,
                f"{f.name} has {f.num_heads} attention heads, not divisible by tp {t.tp}",
                f"nearest valid train.tp: {_fmt(_nearest(t.tp, _divisors(f.num_heads)))}",
            )
        if f.attention == "gqa" and f.num_kv_heads % t.tp:
            self.add(
                "kv-heads-tp",
                "train.tp",
                t.tp,
                f"{f.name} has {f.num_kv_heads} KV heads (GQA groups), not divisible by tp {t.tp}",
                f"nearest valid train.tp: {_fmt(_nearest(t.tp, _divisors(f.num_kv_heads)))}",
            )
        self.experts("train.ep", t.ep)
        self.layers()

    def experts(self, key: str, ep: int) -> None:
        f = self.f
        rule = "experts-ep" if key.startswith("train") else "rollout-ep"
        if not f.num_experts and ep > 1:
            self.add(
                rule, key, ep, f"{f.name} is a dense model: it has no experts to split over ep {ep}", f"set {key} to 1"
            )
        elif f.num_experts and f.num_experts % ep:
            self.add(
                rule,
                key,
                ep,
                f"{f.name} has {f.num_experts} experts, not divisible by ep {ep}",
                f"nearest valid {key}: {_fmt(_nearest(ep, _divisors(f.num_experts)))}",
            )

    def layers(self) -> None:
        t, f = self.r.train, self.f
        stages = t.pp * t.vpp
        if t.pp_layout is None and (pplayout.FIRST in t.transformer or pplayout.LAST in t.transformer):
            sizes = pplayout.first_last_sizes(f.num_layers, t.pp, t.vpp, t.transformer)
            if isinstance(sizes, str):  # an uneven first/last split is a valid layout when it adds up
                self.add(
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
                pps = [d for d in _divisors(f.num_layers) if d <= 64]
                layout = pplayout.even_layout(f.num_layers, stages)
                self.add(
                    "pp-layers",
                    "train.pp",
                    t.pp,
                    f"{f.name} has {f.num_layers} layers, not divisible by pp x vpp = {t.pp} x {t.vpp}",
                    f"nearest valid train.pp: {_fmt(_nearest(t.pp, pps))}"
                    + (f"; or give train.pp_layout, e.g. {layout!r}" if layout else ""),
                )
            return
        key = "train.pp_layout"
        try:
            parsed = pplayout.parse(t.pp_layout)
        except pplayout.LayoutError as exc:
            self.add(
                "pp-layout",
                key,
                t.pp_layout,
                f"cannot parse the layout: {exc}",
                "write stages separated by '|' with tokens E, t, m, L and counts like t*12",
            )
            return
        layout = pplayout.even_layout(f.num_layers, stages)
        if len(parsed) != stages:
            self.add(
                "pp-layout",
                key,
                t.pp_layout,
                f"the layout has {len(parsed)} stages but pp x vpp = {t.pp} x {t.vpp} = {stages}",
                f"give {stages} stages (e.g. {layout!r}) or set train.pp to match",
            )
        total = sum(s.layers for s in parsed)
        if total != f.num_layers:
            self.add(
                "pp-layout",
                key,
                t.pp_layout,
                f"the layout places {total} transformer layers but {f.name} has {f.num_layers}",
                f"make the t counts add up to {f.num_layers}" + (f", e.g. {layout!r}" if layout else ""),
            )
        if parsed and (not parsed[0].embedding or any(s.embedding for s in parsed[1:])):
            self.add(
                "pp-layout",
                key,
                t.pp_layout,
                "the embedding (E) must be in the first stage only",
                "start the layout with E",
            )
        if parsed and (not parsed[-1].loss or any(s.loss for s in parsed[:-1])):
            self.add(
                "pp-layout",
                key,
                t.pp_layout,
                "the loss layer (L) must be in the last stage only",
                "end the layout with L",
            )
        if f.index_topk_freq and total == f.num_layers:
            freq, offset = f.index_topk_freq, f.index_skip_topk_offset or 0
            bad = [s for s in pplayout.stage_starts(parsed) if not (s <= offset or (s - offset) % freq == 0)]
            if bad:
                allowed = [s for s in range(1, f.num_layers + 1) if s <= offset or (s - offset) % freq == 0]
                near = sorted({_nearest(b, allowed, 1)[0] for b in bad})
                self.add(
                    "pp-layout",
                    key,
                    t.pp_layout,
                    f"{f.name}'s DSA indexer is shared across layers: a stage may start only on layer "
                    f"1..{offset} or {offset}+{freq}k; these stages start on layers {_fmt(bad)}",
                    f"move those stage boundaries to allowed layers, nearest: {_fmt(near)}",
                )

    def fsdp(self) -> None:
        t, world, f = self.r.train, self.r.world_size, self.f
        if world % t.ulysses_sp:
            self.add(
                "world-divisible",
                "train.ulysses_sp",
                t.ulysses_sp,
                f"world size {world} is not divisible by the Ulysses sequence-parallel size {t.ulysses_sp}",
                f"nearest valid train.ulysses_sp: {_fmt(_nearest(t.ulysses_sp, _divisors(world)))}",
            )
        if f is not None and f.num_heads % t.ulysses_sp:
            self.add(
                "heads-tp",
                "train.ulysses_sp",
                t.ulysses_sp,
                f"{f.name} has {f.num_heads} heads, not divisible by Ulysses sp {t.ulysses_sp}",
                f"nearest valid train.ulysses_sp: {_fmt(_nearest(t.ulysses_sp, _divisors(f.num_heads)))}",
            )
        if t.ulysses_sp > 1 and not self.r.model.use_remove_padding:
            self.add(
                "engine-support",
                "model.use_remove_padding",
                False,
                "FSDP with Ulysses sequence parallel (ulysses_sp > 1) needs remove padding",
                "set model.use_remove_padding: true, or train.ulysses_sp: 1",
            )
        for name in ("tp", "pp", "cp", "ep", "etp", "vpp"):
            if getattr(t, name) != 1:
                self.add(
                    "engine-support",
                    f"train.{name}",
                    getattr(t, name),
                    f"train.engine fsdp shards data only: {name} applies to megatron",
                    f"set train.{name} to 1",
                )
        if t.pp_layout:
            self.add(
                "engine-support",
                "train.pp_layout",
                t.pp_layout,
                "a pipeline layout applies to megatron only",
                "remove train.pp_layout or use train.engine: megatron",
            )

    # ------------------------------------------------------------------ rollout
    def rollout(self) -> None:
        ro, f, world = self.r.rollout, self.f, self.r.world_size
        replica = ro.tp * ro.dp
        if world % replica:
            tps = [d for d in _divisors(world // ro.dp) if not f or f.num_heads % d == 0] if world % ro.dp == 0 else []
            self.add(
                "rollout-world",
                "rollout.tp",
                ro.tp,
                f"world size {world} is not divisible by rollout tp x dp = {ro.tp} x {ro.dp} = {replica}",
                f"nearest valid rollout.tp: {_fmt(_nearest(ro.tp, tps))}",
            )
        if ro.ep > 1 and ro.ep != replica:
            self.add(
                "rollout-ep",
                "rollout.ep",
                ro.ep,
                f"rollout ep must equal tp x dp = {ro.tp} x {ro.dp} = {replica} when ep > 1 "
                "(verl asserts it inside the workers, after the model has loaded)",
                f"set rollout.ep to {replica} (or 1)"
                + (f", or rollout.dp to {ro.ep // ro.tp}" if ro.ep % ro.tp == 0 else ""),
            )
        if f is None:
            return
        if f.num_heads % ro.tp:
            self.add(
                "rollout-heads",
                "rollout.tp",
                ro.tp,
                f"{f.name} has {f.num_heads} attention heads, not divisible by rollout tp {ro.tp}",
                f"nearest valid rollout.tp: {_fmt(_nearest(ro.tp, _divisors(f.num_heads)))}",
            )
        elif f.attention == "gqa" and f.num_kv_heads % ro.tp and ro.tp % f.num_kv_heads:
            valid = [d for d in _divisors(f.num_heads) if f.num_kv_heads % d == 0 or d % f.num_kv_heads == 0]
            self.add(
                "rollout-heads",
                "rollout.tp",
                ro.tp,
                f"{f.name} has {f.num_kv_heads} KV heads: rollout tp {ro.tp} must divide them or be a "
                "multiple of them (vLLM replicates KV heads)",
                f"nearest valid rollout.tp: {_fmt(_nearest(ro.tp, valid))}",
            )
        if ro.ep > 1:
            self.experts("rollout.ep", ro.ep)

    # ------------------------------------------------------------------ batches and lengths
    def batches(self) -> None:
        r, a, d, n = self.r, self.r.algorithm, self.r.data, self.r.rollout.n
        dp = train_dp(r)
        if a.ppo_mini_batch_size > d.train_batch_size:
            self.add(
                "mini-batch",
                "algorithm.ppo_mini_batch_size",
                a.ppo_mini_batch_size,
                f"mini batch {a.ppo_mini_batch_size} is larger than the train batch {d.train_batch_size}",
                f"use a mini batch that divides {d.train_batch_size}: "
                f"{_fmt(_nearest(a.ppo_mini_batch_size, _divisors(d.train_batch_size)))}",
            )
        elif d.train_batch_size % a.ppo_mini_batch_size:
            self.add(
                "mini-batch",
                "algorithm.ppo_mini_batch_size",
                a.ppo_mini_batch_size,
                f"mini batch {a.ppo_mini_batch_size} does not divide the train batch {d.train_batch_size}",
                f"nearest valid: {_fmt(_nearest(a.ppo_mini_batch_size, _divisors(d.train_batch_size)))}",
            )
        if not dp:
            return
        micro = 1 if r.train.dynamic_bsz else a.micro_batch_size_per_device
        if (d.train_batch_size * n) % (dp * micro):
            sizes = _multiples_near(d.train_batch_size, (dp * micro) // math.gcd(n, dp * micro))
            self.add(
                "batch-divisible",
                "data.train_batch_size",
                d.train_batch_size,
                f"train batch x n = {d.train_batch_size} x {n} = {d.train_batch_size * n} is not divisible by "
                f"train dp x micro batch = {dp} x {micro} = {dp * micro}",
                f"nearest valid data.train_batch_size: {_fmt(_nearest(d.train_batch_size, sizes))}",
            )
        per_dp = a.ppo_mini_batch_size * n
        if per_dp % dp or (per_dp // dp) % micro:
            sizes = [b for b in _divisors(d.train_batch_size) if (b * n) % dp == 0 and ((b * n) // dp) % micro == 0]
            self.add(
                "batch-divisible",
                "algorithm.ppo_mini_batch_size",
                a.ppo_mini_batch_size,
                f"mini batch x n = {a.ppo_mini_batch_size} x {n} = {per_dp} does not split evenly over "
                f"train dp {dp} in micro batches of {micro} (verl fails at the first update)",
                f"nearest valid algorithm.ppo_mini_batch_size: {_fmt(_nearest(a.ppo_mini_batch_size, sizes))}",
            )

    def lengths(self) -> None:
        d, ro, f = self.r.data, self.r.rollout, self.f
        total = d.max_prompt_length + d.max_response_length
        if ro.max_model_len is not None and total > ro.max_model_len:
            self.add(
                "lengths",
                "rollout.max_model_len",
                ro.max_model_len,
                f"prompt + response = {d.max_prompt_length} + {d.max_response_length} = {total} tokens do not "
                f"fit rollout max_model_len {ro.max_model_len}",
                f"raise rollout.max_model_len to {total}, or shorten data.max_response_length to "
                f"{max(ro.max_model_len - d.max_prompt_length, 0)}",
            )
        if f is not None and total > f.context_length:
            self.add(
                "lengths",
                "data.max_response_length",
                d.max_response_length,
                f"prompt + response = {total} tokens exceed {f.name}'s context of {f.context_length}",
                f"keep prompt + response within {f.context_length}, e.g. data.max_response_length "
                f"{max(f.context_length - d.max_prompt_length, 0)}",
            )

    # ------------------------------------------------------------------ engines
    def engines(self) -> None:
        r, t, ro = self.r, self.r.train, self.r.rollout
        if t.engine == "trl":
            if ro.engine != "hf":
                self.add(
                    "engine-support",
                    "rollout.engine",
                    ro.engine,
                    "train.engine trl generates with the HF model in-process",
                    "set rollout.engine: hf",
                )
            if r.cluster.device == "npu":
                self.add(
                    "engine-support",
                    "cluster.device",
                    "npu",
                    "the TRL engine is the CPU/GPU embedded default; NPU runs go through verl",
                    "use train.engine megatron or fsdp on NPUs",
                )
            if r.world_size != 1:
                self.add(
                    "engine-support",
                    "cluster.nnodes",
                    r.cluster.nnodes,
                    f"the TRL engine runs in one process; the recipe asks for {r.world_size} devices",
                    "set cluster.nnodes and cluster.devices_per_node to 1",
                )
            for name in ("tp", "pp", "cp", "ep", "etp", "vpp", "ulysses_sp"):
                if getattr(t, name) != 1:
                    self.add(
                        "engine-support",
                        f"train.{name}",
                        getattr(t, name),
                        "the TRL engine has no model parallelism",
                        f"set train.{name} to 1",
                    )
            if r.model.path:  # the TRL engine builds its tiny model in code
                self.add(
                    "engine-support",
                    "model.path",
                    r.model.path,
                    "train.engine trl builds its tiny model in code and ignores model.path",
                    "drop model.path, or use train.engine megatron or fsdp to train that model",
                    severity="warning",
                )
            if r.local is None:  # the trainer's own settings come from params/engines/trl.yaml, not base.yaml
                self.add(
                    "engine-support",
                    "local",
                    None,
                    "train.engine trl needs the CPU trainer's settings (the `local:` section: tiny model and task)",
                    "add engines/trl to the recipe's defaults, e.g. `defaults: [base, hardware/cpu, engines/trl]`",
                )
                return
            from grpolab.local.mapping import unsupported  # pure python: no torch import

            for key, value, reason in unsupported(r):
                self.add("engine-support", key, value, reason, f"change {key} or use a verl engine")
            return
        if r.local is not None:
            self.add(
                "engine-support",
                "local",
                "{...}",
                f"the `local:` section is read by train.engine trl only; {t.engine} ignores it",
                "drop engines/trl from the recipe's defaults (and any `local:` keys)",
                severity="warning",
            )
        if ro.engine == "hf":
            self.add(
                "engine-support",
                "rollout.engine",
                "hf",
                "verl's rollouts are vllm, sglang or trtllm; hf generation is for train.engine trl only",
                "set rollout.engine: vllm (or sglang)",
            )
        if r.cluster.device == "cpu":
            self.add(
                "engine-support",
                "cluster.device",
                "cpu",
                f"verl has no CPU path (with no accelerator it silently picks cuda); {t.engine} needs NPUs or GPUs",
                "use a hardware profile with npu or cuda, or train.engine: trl for CPU",
            )
        if r.train.router_replay != "disabled" and self.f is not None and not self.f.num_experts:
            self.add(
                "engine-support",
                "train.router_replay",
                r.train.router_replay,
                "router replay applies to MoE models only",
                "set train.router_replay: disabled",
                severity="warning",
            )

    # ------------------------------------------------------------------ free-form overrides
    def overrides(self) -> None:
        t = self.r.train
        if t.engine != "megatron":
            for section in ("transformer", "optimizer"):
                if getattr(t, section):
                    self.add(
                        "engine-support",
                        f"train.{section}",
                        "{...}",
                        f"train.{section} overrides apply to megatron only",
                        f"remove train.{section}",
                        severity="warning",
                    )
            return
        fields = megatron_fields()
        known_t = set(fields["transformer"]) | set(fields["ascend_extras"])
        for key, value in t.transformer.items():
            if key not in known_t:
                near = closest(key, known_t)
                self.add(
                    "unknown-override",
                    f"train.transformer.{key}",
                    value,
                    f"{key!r} is not a megatron-core {fields['megatron_core']} TransformerConfig field nor a "
                    "known Ascend (MindSpeed) extra; verl passes it on unchecked, so a typo is silent",
                    f"did you mean {near!r}?" if near else "check the key's spelling",
                    severity="warning",
                )
        for key, value in t.optimizer.items():
            if key not in fields["optimizer"]:
                near = closest(key, fields["optimizer"])
                self.add(
                    "unknown-override",
                    f"train.optimizer.{key}",
                    value,
                    f"{key!r} is not a megatron-core OptimizerConfig field",
                    f"did you mean {near!r}?" if near else "check the key's spelling",
                    severity="warning",
                )

    # ------------------------------------------------------------------ environment and stack
    def env(self) -> None:
        r, f, env = self.r, self.f, self.r.env
        for rule in ENV_RULES:
            if rule["when"](r, f) and env.get(rule["var"]) != rule["value"]:
                have = env.get(rule["var"])
                self.add(
                    "env-required",
                    f"env.{rule['var']}",
                    have,
                    rule["why"] + ("" if have is None else f" (it is set to {have!r})"),
                    f'add `{rule["var"]}: "{rule["value"]}"` under env:',
                    severity=rule["severity"],
                )
        visible = env.get("ASCEND_RT_VISIBLE_DEVICES")
        if r.cluster.device == "npu" and visible is not None:
            count = len([v for v in visible.split(",") if v.strip()])
            if count < r.cluster.devices_per_node:
                self.add(
                    "env-required",
                    "env.ASCEND_RT_VISIBLE_DEVICES",
                    visible,
                    f"lists {count} devices but the recipe uses {r.cluster.devices_per_node} per node",
                    f"list {r.cluster.devices_per_node} devices, e.g. "
                    f"{','.join(str(i) for i in range(min(r.cluster.devices_per_node, 16)))}"
                    f"{',...' if r.cluster.devices_per_node > 16 else ''}",
                )
        if "wandb" in r.trainer.logger and not (env.get("WANDB_MODE") or env.get("WANDB_API_KEY")):
            self.add(
                "env-required",
                "trainer.logger",
                r.trainer.logger,
                "wandb is a logger but neither WANDB_MODE nor WANDB_API_KEY is in env: without a key on the "
                "nodes, the run logs to wandb offline",
                "set env.WANDB_MODE (offline or online) explicitly",
                severity="warning",
            )

    def stack(self) -> None:
        r = self.r
        reqs = stack.verl_requirements()
        verl_installed, _ = stack.installed("verl")
        for package, text in r.stack.items():
            key = f"stack.{package}"
            try:
                pin = stack.parse_pin(package, text)
            except ValueError as exc:
                self.add(
                    "stack",
                    key,
                    text,
                    f"cannot read the pin: {exc}",
                    "write a version (0.23.0), version@commit or branch@commit",
                )
                continue
            if (
                package == "verl"
                and verl_installed
                and pin.version
                and pin.version != verl_installed
                and not (pin.commit and stack.matches(pin, *stack.installed("verl"))[0])
            ):  # a source build at the commit
                self.add(
                    "stack",
                    key,
                    text,
                    f"the recipe was tuned for verl {pin.version} but verl {verl_installed} is installed "
                    "(the launch is rendered for the installed one)",
                    f"install verl=={pin.version}, or re-tune and pin {verl_installed}",
                    severity="warning",
                )
            spec = reqs.get(stack.normal_name(package))
            if spec and pin.version and stack.satisfies(pin.version, spec) is False:
                self.add(
                    "stack",
                    key,
                    text,
                    f"verl {verl_installed} requires {package}{spec}; the pin {pin.version} is outside it",
                    f"pin a {package} version within {spec}, or a verl release that supports {pin.version}",
                    severity="warning",
                )

    def memory(self, grad_offload_supported: bool) -> None:
        r, f = self.r, self.f
        if f is None or r.train.engine == "trl":
            return
        est = memory.estimate(r, f, grad_offload_supported)
        budget = est.device_gb * (1 - memory.HEADROOM)
        parts = f"weights {est.weights_gb:.1f} + grads {est.grads_gb:.1f} + optimizer {est.optimizer_gb:.1f}"
        if est.train_gb > budget:
            self.add(
                "memory",
                "cluster.device_memory_gb",
                r.cluster.device_memory_gb,
                f"training state needs about {est.train_gb:.1f} GB per device ({parts}) of "
                f"{est.device_gb:.0f} GB ({budget:.0f} GB after {memory.HEADROOM:.0%} headroom); "
                "estimate: see grpolab.recipe.memory",
                "raise tp/pp/ep, turn on train.param_offload / optimizer_offload, or use more nodes",
            )
        if est.rollout_weights_gb > est.rollout_budget_gb:
            self.add(
                "memory",
                "rollout.gpu_memory_utilization",
                r.rollout.gpu_memory_utilization,
                f"rollout weights need about {est.rollout_weights_gb:.1f} GB per device but the rollout "
                f"engine may use only {est.rollout_budget_gb:.1f} GB, with nothing left for the KV cache",
                "raise rollout.tp / rollout.ep, or rollout.gpu_memory_utilization",
            )


def _glm_patch(r: Recipe, f: ModelCard | None) -> bool:
    return bool(f) and f.model_type == "glm_moe_dsa" and r.cluster.device == "npu" and r.rollout.engine == "vllm"


def _aiv(r: Recipe, f: ModelCard | None) -> bool:
    cann = r.stack.get("cann", "")
    if r.rollout.engine == "vllm" and r.rollout.enforce_eager and r.rollout.ep > 1 and f is not None and f.num_experts:
        return False  # AIV hangs MC2 in eager MoE rollouts (params/stack_rules.yaml aiv-mc2-eager-hang)
    return (
        r.cluster.device == "npu"
        and r.train.engine == "megatron"
        and r.train.use_mbridge
        and bool(cann)
        and stack.satisfies(cann.split("@")[0], ">=8.5.0") is True
    )


# env that a model/stack combination requires; `when(recipe, facts)` says whether the rule applies
ENV_RULES = [
    {
        "var": "VERL_VLLM_ASCEND_GLM52_PATCH",
        "value": "1",
        "severity": "error",
        "when": _glm_patch,
        "why": "GLM-5.2 on vLLM-Ascend needs the GLM-5.2 patch (verl PR 7779); unset, training fails at run time",
    },
    {
        "var": "HCCL_OP_EXPANSION_MODE",
        "value": "AIV",
        "severity": "warning",
        "when": _aiv,
        "why": "CANN 8.5.0 and newer with mbridge expects HCCL_OP_EXPANSION_MODE=AIV",
    },
]


@lru_cache(maxsize=1)
def megatron_fields() -> dict:
    return json.loads(resources.files("grpolab").joinpath("data/megatron_fields.json").read_text())


def validate(recipe: Recipe, grad_offload_supported: bool = True) -> list[Problem]:
    """Every cross-field rule over a schema-valid recipe. Pure, fast, collects every problem."""
    facts, problems = model_facts(recipe)
    rules = _Rules(recipe, facts)
    if recipe.train.engine == "megatron":
        rules.megatron()
    elif recipe.train.engine == "fsdp":
        rules.fsdp()
    if recipe.train.engine != "trl":
        rules.rollout()
    rules.batches()
    rules.lengths()
    rules.engines()
    rules.overrides()
    rules.env()
    rules.stack()
    rules.memory(grad_offload_supported)
    field_rules.check(recipe, facts, rules.add)  # checks learned from real failures (issue 13)
    return problems + rules.problems + recipe.load_notes


def layout_problems(recipe: Recipe, facts: ModelCard | None) -> list[Problem]:
    """Only the rule families a parallel layout can break (megatron/fsdp, rollout, batches, memory), given facts.

    The layout planner screens thousands of candidate layouts with these; the layouts it lists then pass
    `validate` (every rule) as well."""
    rules = _Rules(recipe, facts)
    if recipe.train.engine == "megatron":
        rules.megatron()
    elif recipe.train.engine == "fsdp":
        rules.fsdp()
    if recipe.train.engine != "trl":
        rules.rollout()
    rules.batches()
    rules.memory(True)
    return rules.problems


# rules whose errors the layout planner can fix: their fix also names the nearest whole valid layouts
LAYOUT_FIX_RULES = registry.layout_fix_rules()
