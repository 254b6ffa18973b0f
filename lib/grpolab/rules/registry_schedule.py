"""The rules of verl's V1 trainer modes (issue 42; grpolab.rules.schedule checks them), as plain data that
grpolab.rules.registry declares with every other rule (kept in a module of their own for the registry's size).

Each is a Rule's fields (grpolab.rules.registry.Rule): what verl asserts when it builds the trainer, after the cluster
has loaded the model, checked before launch; each source names the verl file that asserts it (the messages cite the
checked version's own line, from the version table).
"""

from __future__ import annotations

from typing import Any


def _rule(*fields: str, **options: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """A Rule's positional fields (id, family, side, doc, source) and its options."""
    return fields, options


SCHEDULE_RULES = (
    _rule(
        "async-mode",
        "schedule",
        "none",
        "The checked verl runs schedule.mode and every setting the recipe gives it (a V1 trainer: verl 0.9.0+; hybrid"
        " replicas off, step switching, a fractional warm-up and a null off-policy threshold: 0.9.1+; not the legacy "
        "trainer through verl_overrides trainer.use_v1); a setting no trainer of the mode reads is a warning.",
        "verl 0.9.x verl/trainer/ppo/v1/ (the registered trainers; the version table)",
        severity_doc="error or warning",
    ),
    _rule(
        "async-sync-step",
        "schedule",
        "none",
        "separate_async: data.train_batch_size equals schedule.parameter_sync_step x algorithm.ppo_mini_batch_size.",
        "verl 0.9.x trainer_separate_async.py (`train_batch_size must equal parameter_sync_step * "
        "ppo_mini_batch_size in separate async training`)",
    ),
    _rule(
        "async-rollout-pool",
        "schedule",
        "rollout",
        "separate_async: a rollout-only pool exists (schedule.rollout_nnodes > 0, rollout_devices_per_node > 0) and "
        "the rollout layout (tp x dp, ep) fits it; without hybrid replicas the trainer's devices hold no rollout.",
        "verl 0.9.x trainer_separate_async.py (`nnodes must be > 0 in separate async training`, `n_gpus_per_node "
        "must be > 0`); verl docs/advance/v1_async_trainer.md",
    ),
    _rule(
        "async-sync-backend",
        "schedule",
        "none",
        "separate_async: the weight sync's checkpoint engine is not `naive`, and is one the checked verl registers.",
        "verl 0.9.x trainer_separate_async.py (`please use nccl/nixl/mooncake, etc. backend for separate async "
        "training`); verl/checkpoint_engine registry",
    ),
    _rule(
        "async-reward-pool",
        "schedule",
        "none",
        "separate_async with a reward model: the reward model has its own resource pool "
        "(reward.reward_model.enable_resource_pool), since the rollout pool never pauses to free memory.",
        "verl 0.9.x trainer_separate_async.py (`Colocate reward model ... is not supported in separate async mode`)",
    ),
    _rule(
        "async-switch",
        "schedule",
        "none",
        "separate_async step switching (schedule.switch.enable) is not combined with prefill/decode disaggregation "
        "of the rollout.",
        "verl 0.9.1 trainer_separate_async.py (`enable_switch does not support rollout disaggregation`)",
    ),
    _rule(
        "async-correction",
        "schedule",
        "none",
        "An asynchronous mode trains on samples from older policies: without an off-policy correction (verl's "
        "rollout importance sampling, algorithm.rollout_correction.rollout_is, or bypass mode, which takes the "
        "rollout's own log-probs as the old policy) the update is biased by the lag.",
        "verl docs/algo/rollout_corr.md; NeMo RL async GRPO (use_importance_sampling_correction in every async "
        "performance recipe)",
        severity="warning",
    ),
)
