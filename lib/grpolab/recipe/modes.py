"""A recipe's schedule (verl's V1 trainer mode and its split of the nodes) in one line: what `grpolab show`, 01_setup
and 05_plan say about it, so that a user sees at once where rollout and training run and how old samples may be."""

from __future__ import annotations

from grpolab.recipe.schema import Recipe


def describe(recipe: Recipe) -> str:
    """e.g. `separate_async: training on 2 x 8 devices, rollout on 2 rollout-only nodes x 8 (weights synced every 4
    mini-batches with nccl, switching off); samples at most 8 model versions old (drop)`."""
    s, c = recipe.schedule, recipe.cluster
    devices = f"{c.nnodes} x {c.devices_per_node} devices"
    if s.mode == "sync":
        return f"sync: rollout, then training, on the same {devices} (every sample from the current policy)"
    bound = (
        f"at most {s.max_off_policy} model versions old ({s.off_policy_strategy})"
        if s.max_off_policy
        else ("of any age (max_off_policy null)")
    )
    ahead = f"{s.warmup_batches:g} warm-up batch{'es' * (s.warmup_batches != 1)} ahead"
    if s.mode == "colocate_async":
        return f"colocate_async: rollout and training take turns on the same {devices}, {ahead}; samples {bound}"
    pool = f"{s.rollout_nnodes} rollout-only node{'s' * (s.rollout_nnodes != 1)} x "
    pool += str(s.rollout_devices_per_node or c.devices_per_node)
    hybrid = "" if s.hybrid_replicas else ", none on the trainer"
    switch = "switching on" if s.switch.enable else "switching off"
    return (
        f"separate_async: training on {devices}, rollout on {pool}{hybrid} (weights synced every "
        f"{recipe.parameter_sync_step} mini-batches with {s.sync_backend}, {switch}), {ahead}; samples {bound}"
    )
