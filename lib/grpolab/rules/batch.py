"""Batch sizes: the mini-batch divides the train batch; train batch x n and Megatron's real mini-batch split over
the trainer's data-parallel groups in micro-batches; and, learned from the field, the rollout's agent-loop
workers, virtual-pipeline micro-batch counts and the dynamic-batch token budget.
"""

from __future__ import annotations

import math

from grpolab.rules.checks import Checks
from grpolab.rules.maths import divisors, listed, multiples_near, nearest, train_dp
from grpolab.rules.registry import train_batch_rules
from grpolab.verl.fieldmap import ROLL, checked_facts, verl_key

AGENT_WORKERS = 8  # verl 0.9.1 rollout.agent.num_workers default


TRAIN_BATCH, MINI = "data.train_batch_size", "algorithm.ppo_mini_batch_size"
MICRO, N = "algorithm.micro_batch_size_per_device", "rollout.n"


def train_batch_step(c: Checks) -> int:
    """The step of every valid train batch given the rest of the recipe: a multiple of the mini batch whose x n
    splits over the trainer's DP groups in micro-batches and (verl) over the rollout's agent-loop workers."""
    r, a, n = c.r, c.r.algorithm, c.r.rollout.n
    step = a.ppo_mini_batch_size
    dp = train_dp(r.train, r.world_size)
    micro = 1 if r.train.dynamic_bsz else a.micro_batch_size_per_device
    if dp and micro > 0:
        step = math.lcm(step, (dp * micro) // math.gcd(n, dp * micro))
    groups = r.override(f"{ROLL}.agent.num_workers", AGENT_WORKERS)
    if r.engine.verl and isinstance(groups, int) and not isinstance(groups, bool) and groups > 0:
        step = math.lcm(step, groups // math.gcd(n, groups))
    return step


def _train_batch_fix(c: Checks) -> str:
    d = c.r.data
    return f"nearest valid data.train_batch_size: {listed(nearest(d.train_batch_size, multiples_near(d.train_batch_size, train_batch_step(c))))}"


def _minis(c: Checks) -> list[int]:
    """Mini batches that divide the train batch and whose x n splits over the trainer's DP groups in micro-batches."""
    r, n = c.r, c.r.rollout.n
    dp = train_dp(r.train, r.world_size)
    micro = 1 if r.train.dynamic_bsz else r.algorithm.micro_batch_size_per_device
    return [
        b
        for b in divisors(r.data.train_batch_size)
        if not dp or micro <= 0 or ((b * n) % dp == 0 and ((b * n) // dp) % micro == 0)
    ]


def own_batch(c: Checks) -> bool:
    """data.train_batch_size 0, which only an entry point whose trainer takes its own batch accepts (verl's
    fully_async_policy asserts it is 0: its rollouter feeds the trainer; the version table's `own_batch`): a warning
    naming the train-batch checks skipped there, an error for any other entry point (verl's main_ppo would build no
    batch). True when the train batch is 0."""
    r = c.r
    if r.data.train_batch_size != 0:
        return False
    facts = checked_facts() or {}
    packages = facts.get("own_batch") or {}
    entry = r.trainer.entrypoint
    package = next((p for p in packages if entry.startswith(p + ".")), None)
    if package is not None:
        c.add(
            "mini-batch",
            TRAIN_BATCH,
            0,
            f"{entry} takes its own batch (data.train_batch_size 0 on purpose: {packages[package]}); the train-batch "
            f"checks were skipped ({', '.join(train_batch_rules())})",
            "check its async_training.require_batches x algorithm.ppo_mini_batch_size against the layout by hand",
            severity="warning",
        )
    else:
        own = ", ".join(f"{p}.*" for p in packages) or "none"
        c.add(
            "mini-batch",
            TRAIN_BATCH,
            0,
            f"data.train_batch_size 0: the trainer of {entry} builds no batch of 0 prompts (verl "
            f"{facts.get('version') or ''} accepts 0 only for an entry point that takes its own batch: {own})",
            f"set {TRAIN_BATCH} to the prompts per step (a multiple of {MINI} {r.algorithm.ppo_mini_batch_size})"
            + (f", or launch {own}" if packages else ""),
        )
    return True


def batches(c: Checks) -> None:
    r, a, d, n = c.r, c.r.algorithm, c.r.data, c.r.rollout.n
    if own_batch(c):
        return  # the train-batch checks divide by it
    dp = train_dp(r.train, r.world_size)
    # the user changed the train batch, not the mini batch: the problem is the override's, and so is the fix
    user_batch = c.user_set(TRAIN_BATCH) and not c.user_set(MINI)
    if a.ppo_mini_batch_size > d.train_batch_size or d.train_batch_size % a.ppo_mini_batch_size:
        larger = a.ppo_mini_batch_size > d.train_batch_size
        if user_batch:
            c.add(
                "mini-batch",
                TRAIN_BATCH,
                d.train_batch_size,
                f"train batch {d.train_batch_size} is "
                + (
                    f"smaller than the mini batch {a.ppo_mini_batch_size}"
                    if larger
                    else f"not a multiple of the mini batch {a.ppo_mini_batch_size}"
                )
                + f" ({MINI} from {r.origin(MINI)})",
                _train_batch_fix(c) + f" (multiples of the mini batch {a.ppo_mini_batch_size} that split over train "
                f"dp {dp or '?'}); or also set {MINI} to one of "
                f"{listed(nearest(a.ppo_mini_batch_size, _minis(c)))}",
            )
        else:
            near = listed(nearest(a.ppo_mini_batch_size, divisors(d.train_batch_size)))
            c.add(
                "mini-batch",
                MINI,
                a.ppo_mini_batch_size,
                f"mini batch {a.ppo_mini_batch_size} "
                + ("is larger than" if larger else "does not divide")
                + f" the train batch {d.train_batch_size}",
                f"use a mini batch that divides {d.train_batch_size}: {near}" if larger else f"nearest valid: {near}",
                involves=(TRAIN_BATCH,),
            )
    if not dp:
        return
    micro = 1 if r.train.dynamic_bsz else a.micro_batch_size_per_device
    layout = ("train.tp", "train.pp", "train.cp", "train.ulysses_sp", "cluster.nnodes", "cluster.devices_per_node")
    if (d.train_batch_size * n) % (dp * micro):
        sizes = multiples_near(d.train_batch_size, (dp * micro) // math.gcd(n, dp * micro))
        if user_batch and not d.train_batch_size % a.ppo_mini_batch_size:
            sizes = multiples_near(d.train_batch_size, train_batch_step(c))
        c.add(
            "batch-divisible",
            TRAIN_BATCH,
            d.train_batch_size,
            f"train batch x n = {d.train_batch_size} x {n} = {d.train_batch_size * n} is not divisible by "
            f"train dp x micro batch = {dp} x {micro} = {dp * micro}",
            f"nearest valid data.train_batch_size: {listed(nearest(d.train_batch_size, sizes))}",
            involves=(N, MICRO, *layout),
        )
    per_dp = a.ppo_mini_batch_size * n
    if per_dp % dp or (per_dp // dp) % micro:
        c.add(
            "batch-divisible",
            MINI,
            a.ppo_mini_batch_size,
            f"mini batch x n = {a.ppo_mini_batch_size} x {n} = {per_dp} does not split evenly over "
            f"train dp {dp} in micro batches of {micro} (verl fails at the first update)",
            f"nearest valid algorithm.ppo_mini_batch_size: {listed(nearest(a.ppo_mini_batch_size, _minis(c)))}",
            involves=(N, MICRO, TRAIN_BATCH, *layout),
        )


def dispatch_chunk(c: Checks) -> None:
    """The rollout batch (train batch x n) must split evenly over the rollout's workers: verl 0.9.1's agent loop
    chunks it over `rollout.agent.num_workers` with DataProto.chunk, which has no padding. (The split over the
    training DP groups, with micro-batches, is rule batch-divisible.)"""
    r = c.r
    ro, d = r.rollout, r.data
    groups = r.override(f"{ROLL}.agent.num_workers", AGENT_WORKERS)
    if not isinstance(groups, int) or isinstance(groups, bool) or groups <= 0:
        return
    total = d.train_batch_size * ro.n
    dp = train_dp(r.train, r.world_size)
    micro = 1 if r.train.dynamic_bsz else r.algorithm.micro_batch_size_per_device
    if total % groups and not (dp and total % (dp * micro)):  # else batch-divisible names data.train_batch_size
        # b x n splits over the workers (and the dp groups) exactly when b is a multiple of this step
        step = math.lcm(groups // math.gcd(ro.n, groups), dp // math.gcd(ro.n, dp) if dp else 1)
        sizes = multiples_near(d.train_batch_size, step)
        c.add(
            "dispatch-chunk",
            "data.train_batch_size",
            d.train_batch_size,
            f"train batch x n = {d.train_batch_size} x {ro.n} = {total} does not split evenly over the {groups} "
            "rollout agent-loop workers (actor_rollout_ref.rollout.agent.num_workers); verl's DataProto.chunk "
            "asserts `only support equal chunk` at the first generation",
            f"nearest valid data.train_batch_size: {listed(nearest(d.train_batch_size, sizes))}",
        )
    val = r.override("data.val_batch_size", None)
    if isinstance(val, int) and not isinstance(val, bool) and val > 0 and val % groups:
        c.add(
            "dispatch-chunk",
            "verl_overrides.data.val_batch_size",
            val,
            f"the validation batch {val} does not split evenly over the {groups} rollout agent-loop workers",
            f"use a multiple of {groups}, e.g. {max(groups, val - val % groups)}",
        )


def vpp_microbatches(c: Checks) -> None:
    """With vpp > 1, micro-batches per mini-batch must be >= pp and a multiple of pp (interleaved schedule)."""
    r = c.r
    t, a, n = r.train, r.algorithm, r.rollout.n
    if not r.engine.model_parallel or t.vpp <= 1 or t.pp <= 1 or t.dynamic_bsz:
        return
    dp, micro = train_dp(r.train, r.world_size), a.micro_batch_size_per_device
    per_dp = a.ppo_mini_batch_size * n
    if not dp or per_dp % dp or (per_dp // dp) % micro:
        return  # batch-divisible reports it
    m = per_dp // dp // micro

    def ok(b: int) -> bool:
        total = b * n
        return total % (dp * micro) == 0 and (total // dp // micro) >= t.pp and (total // dp // micro) % t.pp == 0

    if m < t.pp or m % t.pp:
        sizes = [b for b in divisors(r.data.train_batch_size) if ok(b)]
        c.add(
            "vpp-microbatches",
            "algorithm.ppo_mini_batch_size",
            a.ppo_mini_batch_size,
            f"with vpp {t.vpp} Megatron's interleaved schedule needs the micro-batches per mini-batch (mini x n / "
            f"(dp x micro) = {per_dp} / ({dp} x {micro}) = {m}) to be >= pp {t.pp} and a multiple of it",
            f"nearest valid algorithm.ppo_mini_batch_size: {listed(nearest(a.ppo_mini_batch_size, sizes))}; "
            "or lower algorithm.micro_batch_size_per_device, or set train.vpp: 1",
        )


def dynamic_batch(c: Checks) -> None:
    """With dynamic batching the token budget per device (x cp / x Ulysses) must hold the longest sample."""
    r, f = c.r, c.f
    t, d = r.train, r.data
    if not r.override(verl_key("train.dynamic_bsz"), t.dynamic_bsz):
        return
    factor = t.cp if r.engine.model_parallel else t.ulysses_sp
    longest = d.max_prompt_length + d.max_response_length
    if f is not None and longest > f.context_length:
        return  # rule lengths refuses the recipe already
    budget = t.max_token_len_per_device * factor
    if budget < longest:
        need = -(-longest // factor)
        c.add(
            "dynamic-batch",
            "train.max_token_len_per_device",
            t.max_token_len_per_device,
            f"the dynamic-batch token budget {t.max_token_len_per_device} x {factor} = {budget} cannot hold the "
            f"longest sample, prompt + response = {d.max_prompt_length} + {d.max_response_length} = {longest} "
            "(verl asserts `max_token_len must be greater than the sequence length`)",
            f"raise train.max_token_len_per_device to at least {need}",
        )
