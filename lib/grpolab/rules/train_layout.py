"""The trainer's parallel layout: Megatron's tp x pp x cp and ep x etp x pp over the world, heads and KV heads
over tp, experts over ep; FSDP's Ulysses group over the world and the heads; settings one engine does not have.

When a rule fails, the fix names the nearest valid values (grpolab.rules.maths). The split of the layers over the
pipeline stages is grpolab.rules.pipeline's.
"""

from __future__ import annotations

import math

from grpolab.rules.checks import Checks
from grpolab.rules.maths import divisors, listed, nearest


def _sizes(world: int, group: int, value: int, fits) -> list[int]:
    """The sizes of the group's factor now `value` (the others kept) that make the group divide `world` and `fits`."""
    others = group // value
    return [d for d in divisors(world // others) if fits(d)] if world % others == 0 else []


def megatron(c: Checks) -> None:
    r, t, f, world = c.r, c.r.train, c.f, c.r.world_size
    group = t.tp * t.pp * t.cp
    if world % group:
        name = c.culprit("train", ("tp", "pp", "cp"))
        value = getattr(t, name)
        valid = _sizes(world, group, value, lambda d: name != "tp" or not f or f.num_heads % d == 0)
        dpn = r.cluster.devices_per_node
        step = group // math.gcd(dpn, group)  # the smallest node count whose devices the group divides
        nodes = -(-r.cluster.nnodes // step) * step
        c.add(
            "world-divisible",
            f"train.{name}",
            value,
            f"world size {world} ({r.cluster.nnodes} nodes x {dpn}) is not divisible by "
            f"tp x pp x cp = {t.tp} x {t.pp} x {t.cp} = {group}",
            f"nearest valid train.{name}: {listed(nearest(value, valid))}; or cluster.nnodes: {nodes}",
        )
    egroup = t.ep * t.etp * t.pp
    if world % egroup:
        name = c.culprit("train", ("ep", "etp", "pp"))
        value = getattr(t, name)
        valid = _sizes(
            world, egroup, value, lambda d: name != "ep" or not f or not f.num_experts or f.num_experts % d == 0
        )
        c.add(
            "expert-divisible",
            f"train.{name}",
            value,
            f"world size {world} is not divisible by ep x etp x pp = {t.ep} x {t.etp} x {t.pp} = {egroup}",
            f"nearest valid train.{name}: {listed(nearest(value, valid))}",
        )
    if t.ulysses_sp != 1:
        c.add(
            "engine-support",
            "train.ulysses_sp",
            t.ulysses_sp,
            "Ulysses sequence parallel is an FSDP setting; Megatron uses train.sp (on/off) and train.cp",
            "set train.ulysses_sp to 1 (and train.sp: true for Megatron sequence parallel)",
        )
    if t.vpp > 1 and t.pp == 1:
        c.add(
            "engine-support",
            "train.vpp",
            t.vpp,
            "virtual pipeline stages need pp > 1",
            "set train.vpp to 1, or raise train.pp",
        )
    if f is None:
        return
    if f.num_heads % t.tp:
        c.add(
            "heads-tp",
            "train.tp",
            t.tp,
            f"{f.name} has {f.num_heads} attention heads, not divisible by tp {t.tp}",
            f"nearest valid train.tp: {listed(nearest(t.tp, divisors(f.num_heads)))}",
        )
    if f.attention == "gqa" and f.num_kv_heads % t.tp:
        c.add(
            "kv-heads-tp",
            "train.tp",
            t.tp,
            f"{f.name} has {f.num_kv_heads} KV heads (GQA groups), not divisible by tp {t.tp}",
            f"nearest valid train.tp: {listed(nearest(t.tp, divisors(f.num_kv_heads)))}",
        )
    experts(c, "train.ep", t.ep)


def experts(c: Checks, key: str, ep: int) -> None:
    """EP divides the routed experts (a dense model has none); for the trainer (train.ep) or the rollout."""
    f = c.f
    rule = "experts-ep" if key.startswith("train") else "rollout-ep"
    if not f.num_experts and ep > 1:
        c.add(rule, key, ep, f"{f.name} is a dense model: it has no experts to split over ep {ep}", f"set {key} to 1")
    elif f.num_experts and f.num_experts % ep:
        c.add(
            rule,
            key,
            ep,
            f"{f.name} has {f.num_experts} experts, not divisible by ep {ep}",
            f"nearest valid {key}: {listed(nearest(ep, divisors(f.num_experts)))}",
        )


def fsdp(c: Checks) -> None:
    t, world, f = c.r.train, c.r.world_size, c.f
    if world % t.ulysses_sp:
        c.add(
            "world-divisible",
            "train.ulysses_sp",
            t.ulysses_sp,
            f"world size {world} is not divisible by the Ulysses sequence-parallel size {t.ulysses_sp}",
            f"nearest valid train.ulysses_sp: {listed(nearest(t.ulysses_sp, divisors(world)))}",
        )
    if f is not None and f.num_heads % t.ulysses_sp:
        c.add(
            "heads-tp",
            "train.ulysses_sp",
            t.ulysses_sp,
            f"{f.name} has {f.num_heads} heads, not divisible by Ulysses sp {t.ulysses_sp}",
            f"nearest valid train.ulysses_sp: {listed(nearest(t.ulysses_sp, divisors(f.num_heads)))}",
        )
    if t.ulysses_sp > 1 and not c.r.model.use_remove_padding:
        c.add(
            "engine-support",
            "model.use_remove_padding",
            False,
            "FSDP with Ulysses sequence parallel (ulysses_sp > 1) needs remove padding",
            "set model.use_remove_padding: true, or train.ulysses_sp: 1",
        )
    for name in ("tp", "pp", "cp", "ep", "etp", "vpp"):
        if getattr(t, name) != 1:
            c.add(
                "engine-support",
                f"train.{name}",
                getattr(t, name),
                f"train.engine fsdp shards data only: {name} applies to megatron",
                f"set train.{name} to 1",
            )
    if t.pp_layout:
        c.add(
            "engine-support",
            "train.pp_layout",
            t.pp_layout,
            "a pipeline layout applies to megatron only",
            "remove train.pp_layout or use train.engine: megatron",
        )
