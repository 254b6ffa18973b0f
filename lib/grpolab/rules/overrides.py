"""Free-form keys: train.transformer / train.optimizer keys are megatron-core (or MindSpeed) fields, and deprecated
verl keys in verl_overrides are not set beside their `_per_gpu` replacement (learned from the field).
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from grpolab.problems import closest
from grpolab.rules.checks import Checks
from grpolab.verl.fieldmap import ROLL, field_of


@lru_cache(maxsize=1)
def megatron_fields() -> dict:
    """lib/grpolab/data/megatron_fields.json: megatron-core's config field names (scripts/megatron_fields.py)."""
    return json.loads(resources.files("grpolab").joinpath("data/megatron_fields.json").read_text())


def unknown_keys(c: Checks) -> None:
    t = c.r.train
    if not c.r.engine.model_parallel:
        for section in ("transformer", "optimizer"):
            if getattr(t, section):
                c.add(
                    "engine-support",
                    f"train.{section}",
                    "{...}",
                    f"train.{section} overrides apply to megatron only",
                    f"remove train.{section}",
                    severity="warning",
                )
        return
    fields = megatron_fields()
    # section -> (the names megatron-core knows there, what an unknown key is not)
    known = {
        "transformer": (
            set(fields["transformer"]) | set(fields["ascend_extras"]),
            f"a megatron-core {fields['megatron_core']} TransformerConfig field nor a known Ascend (MindSpeed) extra; "
            "verl passes it on unchecked, so a typo is silent",
        ),
        "optimizer": (fields["optimizer"], "a megatron-core OptimizerConfig field"),
    }
    for section, (names, what) in known.items():
        for key, value in getattr(t, section).items():
            if key not in names:
                near = closest(key, names)
                c.add(
                    "unknown-override",
                    f"train.{section}.{key}",
                    value,
                    f"{key!r} is not {what}",
                    f"did you mean {near!r}?" if near else "check the key's spelling",
                    severity="warning",
                )


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


def deprecated_keys(c: Checks) -> None:
    """Deprecated verl keys that verl rejects beside their `_per_gpu` replacement."""
    r = c.r
    keys = r.flat_overrides()
    for old, (new, rendered) in DEPRECATED.items():
        if old not in keys or keys[old] is None:
            continue
        if rendered or new in keys:
            c.add(
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
            c.add(
                "deprecated-key",
                f"verl_overrides.{old}",
                keys[old],
                f"{old} is deprecated (a global size); verl's replacement is {new}",
                f"use verl_overrides.{new}",
                severity="warning",
            )
