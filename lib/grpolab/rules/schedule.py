"""verl's V1 trainer modes (schedule.*): what verl asserts when it builds the trainer, checked before launch.

verl checks `separate_async` only in PPOTrainerSeparateAsync.__init__, after Ray has placed the workers and the
model has loaded: the batch invariant, a rollout-only pool, a checkpoint engine other than `naive`, a reward model
in its own pool, no step switching with prefill/decode disaggregation. Each is a twenty-minute failure found here in
the first second. The facts (which modes, assertions and settings a version has, and the line of each) come from the
version table (grpolab.verl.versions: the checked verl's own source), so a message cites the checked version's line.
Also: the mode exists in the checked verl (or the nearest way), the rollout layout fits the rollout-only pool, a
setting the mode's trainer never reads is named, and an asynchronous mode without an off-policy correction warns.
"""

from __future__ import annotations

from typing import Any

from grpolab.rules.checks import Checks
from grpolab.rules.maths import divisors, listed, nearest
from grpolab.verl import fieldmap, versions
from grpolab.verl.config import verl_version

SEPARATE, COLOCATE, SYNC = "separate_async", "colocate_async", "sync"
ASYNC = (COLOCATE, SEPARATE)
REWARD_MODEL = "reward.reward_model"
DISAGGREGATION = f"{fieldmap.ROLL}.disaggregation.enabled"
USE_V1 = "trainer.use_v1"
CORRECTION = "algorithm.rollout_correction"
# the modes the in-process CPU trainer (train.engine trl) runs: generation and training share its one process
TRL_MODES = (SYNC, COLOCATE)


def schedule(c: Checks) -> None:
    """Every check of schedule.* for the recipe's engine and the checked verl's version."""
    r = c.r
    if not r.engine.verl:
        _trl(c)
        return
    found = fieldmap.checked_facts()
    v1 = (found or {}).get("v1")
    version = verl_version() or (found or {}).get("version")
    if v1 is not None and not _mode_exists(c, v1, version):
        return
    if v1 is not None:
        _settings(c, v1, version)
    _unread_in_mode(c)
    if r.schedule.mode == SEPARATE:
        _separate(c, v1 or {}, version)
    if r.schedule.mode in ASYNC:
        _correction(c)


def _trl(c: Checks) -> None:
    mode = c.r.schedule.mode
    if mode not in TRL_MODES:
        c.add(
            "async-mode",
            "schedule.mode",
            mode,
            f"train.engine {c.r.train.engine} (the in-process CPU trainer) generates and trains in one process: it "
            f"has no rollout-only pool for {mode}",
            f"set schedule.mode to one of {', '.join(TRL_MODES)} (colocate_async: TRL's AsyncGRPOTrainer)",
        )


def _where(v1: dict, fact: str) -> str:
    line = v1.get("asserts", {}).get(fact) if fact in v1.get("asserts", {}) else v1.get(fact)
    return f" ({line})" if line else ""


def _mode_exists(c: Checks, v1: dict, version: str | None) -> bool:
    """The checked verl has the recipe's mode; on one without the V1 trainer, the synchronous default is fine."""
    r, mode = c.r, c.r.schedule.mode
    modes = v1.get("modes", {})
    if not modes:  # no V1 trainer: the legacy trainer is synchronous
        if mode == SYNC:
            return False  # nothing of the schedule is read: nothing to check
        nearest_way = (
            f"set trainer.entrypoint {v1['experimental_async'][:-3].replace('/', '.')} (verl {version}'s experimental"
            " fully asynchronous trainer, with its own async_training.* settings in verl_overrides)"
            if v1.get("experimental_async")
            else "the trainer in verl's recipe/fully_async_policy (outside the wheel)"
        )
        c.add(
            "async-mode",
            "schedule.mode",
            mode,
            f"verl {version} has no V1 trainer (no verl/trainer/ppo/v1/, no trainer.v1.* keys): it trains only "
            f"synchronously, and the launch would leave schedule.mode {mode} out",
            f"install verl 0.9.0 or later (pip install verl==0.9.1), or set schedule.mode: sync; nearest way on verl "
            f"{version}: {nearest_way}",
        )
        return False
    if mode not in modes:
        c.add(
            "async-mode",
            "schedule.mode",
            mode,
            f"verl {version} registers the trainers {', '.join(sorted(modes))}, not {mode}",
            f"set schedule.mode to one of {', '.join(sorted(modes))}",
        )
        return False
    use_v1 = r.override(USE_V1, v1.get("use_v1_default"))
    if use_v1 is False and mode != SYNC:
        c.add(
            "async-mode",
            f"verl_overrides.{USE_V1}",
            use_v1,
            f"schedule.mode is {mode}, but {USE_V1}=false runs verl's legacy trainer (main_ppo_v0), which reads no "
            "trainer.v1.* key: the run would be synchronous",
            f"remove verl_overrides.{USE_V1} (verl {version}'s default: true), or set schedule.mode: sync",
            involves=("schedule.mode",),
        )
    return True


def _settings(c: Checks, v1: dict, version: str | None) -> None:
    """Settings the recipe gives the mode that the checked verl lacks (0.9.0 has none of 0.9.1's additions)."""
    s = c.r.schedule
    later = "verl 0.9.1 or later"
    wants: list[tuple[str, Any, bool, str, str, str]] = [
        # (field, value, asked, the fact naming the version's support, what it is, fix)
        (
            "schedule.hybrid_replicas",
            s.hybrid_replicas,
            s.mode == SEPARATE and not s.hybrid_replicas,
            "hybrid_replicas_off",
            f"separate_async without rollout replicas on the trainer ({fieldmap.verl_key('schedule.hybrid_replicas')}"
            "=false): its V1 trainer reads no such key",
            "set schedule.hybrid_replicas: true",
        ),
        (
            "schedule.switch.enable",
            s.switch.enable,
            s.mode == SEPARATE and s.switch.enable,
            "switch",
            "step switching (trainer.v1.separate_async.hybrid_rollout)",
            "set schedule.switch.enable: false",
        ),
        (
            "schedule.warmup_batches",
            s.warmup_batches,
            s.mode in ASYNC and not float(s.warmup_batches).is_integer(),
            "fractional_warmup",
            "a fractional number of warm-up batches (its trainers count them with range())",
            f"set schedule.warmup_batches to a whole number ({int(s.warmup_batches)} or {int(s.warmup_batches) + 1})",
        ),
        (
            "schedule.max_off_policy",
            s.max_off_policy,
            s.max_off_policy is None,
            "null_threshold",
            "a null max_off_policy_threshold (its replay buffer asserts an integer above 0)",
            "set schedule.max_off_policy to a number of model versions (verl's default: 8)",
        ),
    ]
    for field, value, asked, fact, what, fix in wants:
        if asked and not v1.get(fact):
            since = versions.table().get(versions.REFERENCE, {}).get("v1", {}).get(fact)
            c.add(
                "async-mode",
                field,
                value,
                f"verl {version} does not support {what}"
                + (f"; verl {versions.REFERENCE} does ({since})" if since else ""),
                f"{fix}, or use {later}",
            )


def _unread_in_mode(c: Checks) -> None:
    """Settings only one mode's trainer reads, set for another: named, since they change nothing."""
    s = c.r.schedule
    if s.mode != SEPARATE:
        for field, value, asked in (
            ("schedule.rollout_nnodes", s.rollout_nnodes, s.rollout_nnodes > 0),
            ("schedule.hybrid_replicas", s.hybrid_replicas, not s.hybrid_replicas),
            ("schedule.switch.enable", s.switch.enable, s.switch.enable),
        ):
            if asked:
                c.add(
                    "async-mode",
                    field,
                    value,
                    f"only separate_async reads {field} (schedule.mode is {s.mode})"
                    + (": the rollout-only nodes would be left idle" if field == "schedule.rollout_nnodes" else ""),
                    f"set schedule.mode: separate_async, or leave {field} at its default",
                    severity="warning",
                    involves=("schedule.mode",),
                )
    elif not s.hybrid_replicas and s.switch.enable:
        c.add(
            "async-mode",
            "schedule.switch.enable",
            True,
            "step switching lends the trainer's rollout replicas, and schedule.hybrid_replicas false places none: "
            "verl disables switching (it logs `enable_switch is ignored because ... hybrid_engine=False`)",
            "set schedule.switch.enable: false, or schedule.hybrid_replicas: true",
            severity="warning",
            involves=("schedule.hybrid_replicas",),
        )


def _separate(c: Checks, v1: dict, version: str | None) -> None:
    """What PPOTrainerSeparateAsync.__init__ asserts, in its order, and the rollout layout on the rollout-only pool."""
    r, s, a, d = c.r, c.r.schedule, c.r.algorithm, c.r.data
    step = r.parameter_sync_step
    if d.train_batch_size != step * a.ppo_mini_batch_size:
        fixes = []
        if d.train_batch_size % a.ppo_mini_batch_size == 0:
            fixes.append(f"schedule.parameter_sync_step: {d.train_batch_size // a.ppo_mini_batch_size}")
        fixes.append(f"data.train_batch_size: {step * a.ppo_mini_batch_size}")
        c.add(
            "async-sync-step",
            "schedule.parameter_sync_step",
            step,
            f"separate_async needs train_batch_size = parameter_sync_step x ppo_mini_batch_size, but "
            f"{d.train_batch_size} != {step} x {a.ppo_mini_batch_size}; verl {version or ''} asserts it when the "
            f"trainer is built{_where(v1, 'sync_step')}",
            "set " + " or ".join(fixes),
            involves=("data.train_batch_size", "algorithm.ppo_mini_batch_size"),
        )
    if s.rollout_nnodes <= 0:
        c.add(
            "async-rollout-pool",
            "schedule.rollout_nnodes",
            s.rollout_nnodes,
            f"separate_async generates on a rollout-only pool ({fieldmap.verl_key('schedule.rollout_nnodes')}), and it"
            f" has no nodes: verl asserts nnodes > 0{_where(v1, 'pool_nnodes')}",
            f"set schedule.rollout_nnodes to 1 or more (the nodes beside the trainer's {r.cluster.nnodes}), or "
            "schedule.mode: colocate_async to generate on the trainer's devices",
            involves=("schedule.mode",),
        )
    devices = s.rollout_devices_per_node
    if devices is not None and devices <= 0:
        c.add(
            "async-rollout-pool",
            "schedule.rollout_devices_per_node",
            devices,
            f"separate_async's rollout-only pool has {devices} devices per node "
            f"({fieldmap.verl_key('schedule.rollout_devices_per_node')}): verl asserts n_gpus_per_node > 0"
            + _where(v1, "pool_devices"),
            f"set schedule.rollout_devices_per_node to the devices of a rollout node (null = cluster.devices_per_node, "
            f"{r.cluster.devices_per_node})",
        )
    _pool_layout(c)
    _backend(c, v1, version)
    if (
        r.override(f"{REWARD_MODEL}.enable", False) is True
        and r.override(f"{REWARD_MODEL}.enable_resource_pool", False) is not True
    ):
        c.add(
            "async-reward-pool",
            f"verl_overrides.{REWARD_MODEL}.enable_resource_pool",
            r.override(f"{REWARD_MODEL}.enable_resource_pool", False),
            "separate_async with a reward model (reward.reward_model.enable) needs it in its own resource pool: the "
            "rollout-only pool never pauses to free memory for a colocated reward model; verl asserts "
            f"enable_resource_pool{_where(v1, 'reward_pool')}",
            f"set verl_overrides {REWARD_MODEL}.enable_resource_pool: true with {REWARD_MODEL}.nnodes and "
            f"n_gpus_per_node for its pool, or schedule.mode: colocate_async",
        )
    if s.switch.enable and r.override(DISAGGREGATION, False) is True:
        c.add(
            "async-switch",
            "schedule.switch.enable",
            True,
            "step switching does not support prefill/decode disaggregation of the rollout "
            f"({DISAGGREGATION} is true): verl raises ValueError when the trainer is built"
            + _where(v1, "switch_disaggregation"),
            f"set schedule.switch.enable: false, or remove verl_overrides.{DISAGGREGATION}",
            involves=(f"verl_overrides.{DISAGGREGATION}",),
        )


def _pool_layout(c: Checks) -> None:
    """The rollout's replicas (tp x dp devices each) tile the rollout-only pool; EP over a replica (rule rollout-ep
    checks ep = tp x dp) then fits it too."""
    r, ro = c.r, c.r.rollout
    pool = r.rollout_pool_world
    replica = ro.tp * ro.dp
    if pool <= 0 or pool % replica == 0:
        return
    tps = [t for t in divisors(pool // ro.dp) if not c.f or c.f.num_heads % t == 0] if pool % ro.dp == 0 else []
    c.add(
        "async-rollout-pool",
        "rollout.tp",
        ro.tp,
        f"the rollout-only pool has {pool} devices ({r.schedule.rollout_nnodes} x "
        f"{r.schedule.rollout_devices_per_node or r.cluster.devices_per_node}), not divisible by rollout tp x dp = "
        f"{ro.tp} x {ro.dp} = {replica}: its replicas cannot tile it",
        f"nearest valid rollout.tp: {listed(nearest(ro.tp, tps))}"
        if tps
        else "set schedule.rollout_nnodes or "
        "schedule.rollout_devices_per_node so that the pool is a multiple of rollout tp x dp",
        involves=("schedule.rollout_nnodes", "schedule.rollout_devices_per_node"),
    )


def _backend(c: Checks, v1: dict, version: str | None) -> None:
    r, backend = c.r, c.r.schedule.sync_backend
    registered = v1.get("checkpoint_backends", {})
    usable = [b for b in registered if b != "naive"]
    prefer = next((b for b in ("nccl", "hccl" if r.cluster.device == "npu" else "nixl") if b in usable), None)
    prefer = prefer or (usable[0] if usable else "nccl")
    npu = r.cluster.device == "npu" and "hccl" not in registered and "nccl" in registered
    hint = (
        f" (on NPU verl {version} registers its HCCL engine under `nccl`: {registered['nccl']})"
        if npu and "hccl_checkpoint_engine" in registered.get("nccl", "")
        else ""
    )
    if backend == "naive":
        c.add(
            "async-sync-backend",
            "schedule.sync_backend",
            backend,
            "separate_async sends weights to the rollout-only pool over the network, which the `naive` checkpoint "
            f"engine (in-process, colocated only) cannot: verl asserts backend != naive{_where(v1, 'sync_backend')}",
            f"set schedule.sync_backend: {prefer}{hint}",
            involves=("schedule.mode",),
        )
    elif registered and backend not in registered:
        c.add(
            "async-sync-backend",
            "schedule.sync_backend",
            backend,
            f"verl {version} registers no checkpoint engine {backend!r} (it has {', '.join(registered)}): "
            "`Checkpoint engine ... not registered` at the first weight sync",
            f"set schedule.sync_backend: {prefer}{hint}",
        )


def _correction(c: Checks) -> None:
    r = c.r
    rollout_is = r.override(f"{CORRECTION}.rollout_is", None)
    bypass = r.override(f"{CORRECTION}.bypass_mode", False)
    if rollout_is or bypass is True:
        return
    s = r.schedule
    lag = (
        f"up to {s.max_off_policy} model versions old (schedule.max_off_policy)"
        if s.max_off_policy
        else "of any age (schedule.max_off_policy is null)"
    )
    c.add(
        "async-correction",
        f"verl_overrides.{CORRECTION}.rollout_is",
        rollout_is,
        f"schedule.mode {s.mode} trains on samples {lag}, and neither rollout importance sampling "
        f"({CORRECTION}.rollout_is) nor bypass mode ({CORRECTION}.bypass_mode) corrects for the policy that "
        "generated them: the update is biased by the lag",
        f"set verl_overrides {CORRECTION}.rollout_is: token (weights clipped at rollout_is_threshold, verl's "
        f"default 2.0), or {CORRECTION}.bypass_mode: true (the rollout's log-probs as the old policy)",
        involves=("schedule.mode",),
    )
