"""Rule `verl-version`: the recipe means the same on the verl it is checked for, or check says why not.

Asks the version table (grpolab.verl.versions) by meaning: which key that version's workers read for each
first-class field (the renderer writes that one, or leaves the field out where they read none), which values its
code accepts, which defaults it has, and whether it is inside the supported range.
"""

from __future__ import annotations

from typing import Any

from grpolab.problems import Problem
from grpolab.recipe.engines import MEGATRON
from grpolab.recipe.schema import Recipe
from grpolab.verl import fieldmap, versions
from grpolab.verl.config import verl_version

_ABSENT = "<absent>"


def _base_only(recipe: Recipe, field: str) -> bool:
    """Does the field's value come from base.yaml (GRPO Lab's default), not from the recipe or an override?"""
    return recipe.origin(field).replace("\\", "/").rsplit("/", 1)[-1] == "base.yaml"


def gradients_offloaded() -> bool:
    """Does the checked verl offload gradients when train.grad_offload asks? Only where its workers read the key
    (none of 0.7.1 to main does); without verl, as no supported version does. The memory estimate asks this."""
    found = fieldmap.checked_facts()
    key = fieldmap.verl_key("train.grad_offload", MEGATRON.name)
    return found is not None and versions.read_key(key, found) is not None


def version_problems(recipe: Recipe) -> list[Problem]:
    """Every problem of the recipe on the checked verl's version (none for train.engine trl or without verl)."""
    if not recipe.engine.verl:
        return []
    found = fieldmap.checked_facts()
    if found is None:
        return []
    version = verl_version() or found["version"]
    problems = _range(version)
    problems += _unread(recipe, found, version)
    problems += _raw_unread(recipe, found, version)
    problems += _legacy_reward(recipe, found, version)
    problems += _values(recipe, found, version)
    problems += _defaults(recipe, found, version)
    return problems


def _range(version: str | None) -> list[Problem]:
    if versions.supported(version):
        return []
    return [
        Problem(
            "verl-version",
            "warning",
            "stack.verl",
            version,
            f"the verl checked is {version}, outside GRPO Lab's supported range ({versions.SUPPORTED}): what each "
            "key means is derived from its own source, untested",
            f"install a verl from {versions.SUPPORTED_MIN} to main (pip install verl==0.9.1), or pin stack.verl",
        )
    ]


def _unread(recipe: Recipe, found: dict, version: str) -> list[Problem]:
    problems = []
    engine, rollout = recipe.train.engine, recipe.rollout.engine
    for row in fieldmap.KEYS:
        if row.kind != "value" or not fieldmap.applies(row, engine, rollout):
            continue
        if row.field.startswith("schedule."):
            continue  # rule async-mode (grpolab.rules.schedule): a synchronous recipe needs no V1 key on any verl
        key = fieldmap.key_name(row, rollout)
        if fieldmap.row_key(row, rollout, found) is not None:
            continue
        value = fieldmap.TRANSFORMS[row.transform][0](fieldmap.value_of(recipe, row.field), recipe, "")
        default = found["defaults"].get(key, _ABSENT)
        if fieldmap.omitted(value, row.omit) or (default != _ABSENT and value == default):
            continue  # what the version does anyway
        hold = versions.held(row.field)
        where = found["reads"][key]["source"]
        severity = hold.severity if hold else "error"
        if row.field == "trainer.timeout_s" and _hccl_carries(recipe, value):
            severity = "warning"  # on NPU, HCCL's own timeout (which the recipe sets) bounds the collectives
        problems.append(
            Problem(
                "verl-version",
                severity,
                row.field,
                value,
                f"{recipe.origin(row.field)}: verl {version}'s workers read nothing for {row.field} ({key}: {where}); "
                "the launch leaves it out, so the run would not get it",
                hold.nearest if hold else "use a verl version whose workers read it",
            )
        )
    return problems


def _raw_unread(recipe: Recipe, found: dict, version: str) -> list[Problem]:
    """verl_overrides keys this version's workers do not read for their setting: another key, or none."""
    problems = []
    for raw, value in recipe.verl_overrides.items():
        key = raw.lstrip("+")
        entry = found["reads"].get(key)
        if entry is None or entry["key"] == key or found["defaults"].get(key, _ABSENT) == _ABSENT:
            continue  # read as itself, or a key this version lacks (verl-schema says so)
        field = fieldmap.field_of(key) or "its first-class field"
        hold = versions.held(field)
        reads = f"they read {entry['key']}" if entry["key"] else "they read nothing for it"
        problems.append(
            Problem(
                "verl-version",
                "error",
                f"verl_overrides.{raw}",
                value,
                f"{recipe.origin('verl_overrides.' + raw)}: verl {version}'s workers do not read {key}: {reads} "
                f"({entry['source']}); the run would not get {value!r}",
                f"set {field} instead (the launch then writes the key verl {version} reads) and remove "
                f"verl_overrides.{raw}" + (f"; {hold.nearest}" if hold and not entry["key"] else ""),
            )
        )
    return problems


def _legacy_reward(recipe: Recipe, found: dict, version: str) -> list[Problem]:
    """A verl_overrides key among the reward's older keys that the recipe's entry point ignores on this version
    (verl 0.9.1's main_ppo: custom_reward_function.*, reward_model.reward_manager, sandbox_fusion.*): it does
    nothing. `grpolab import --legacy-reward inert` writes them so, on purpose; said either way."""
    legacy = found.get("legacy_reward") or {}
    moves, entry = legacy.get("moves") or {}, recipe.trainer.entrypoint
    path = f"{fieldmap.REWARD_FN}.path"
    reads = (found.get("reads") or {}).get(path, {}).get("key", path)
    if not moves or reads != path or entry in (legacy.get("entries") or []) or not entry.startswith("verl."):
        return []
    problems = []
    for key, value in recipe.verl_overrides.items():
        bare = key.lstrip("+")
        old = next((o for o in moves if bare == o or bare.startswith(o + ".")), None)
        if old is None:
            continue
        new = moves[old] + bare[len(old) :]
        field = fieldmap.field_of(new)
        problems.append(
            Problem(
                "verl-version",
                "warning",
                f"verl_overrides.{key}",
                value,
                f"verl {version}'s {entry} ignores {bare}: it reads {new} (only "
                f"{', '.join(legacy.get('entries') or []) or 'no entry point'} moves the older keys there: "
                f"{legacy.get('source', '')}); this setting does nothing",
                f"to apply it set {field or 'verl_overrides.' + new} instead; to keep the launch as it was, leave it",
            )
        )
    return problems


def _hccl_carries(recipe: Recipe, seconds: Any) -> bool:
    if recipe.cluster.device != "npu":
        return False
    try:
        return int(recipe.env.get("HCCL_EXEC_TIMEOUT", "0")) >= int(seconds)
    except ValueError:
        return False


def _values(recipe: Recipe, found: dict, version: str) -> list[Problem]:
    modes = found["loss_agg_modes"]["values"]
    mode = recipe.algorithm.loss_agg_mode
    if not modes or mode in modes:
        return []
    nearest = next((m for m in modes if m.endswith(mode) or mode in m), modes[0])
    return [
        Problem(
            "verl-version",
            "error",
            "algorithm.loss_agg_mode",
            mode,
            f"{recipe.origin('algorithm.loss_agg_mode')}: verl {version} has no loss_agg_mode {mode!r} "
            f"(its agg_loss knows {', '.join(modes)}: {found['loss_agg_modes']['source']}); it raises at start-up",
            f"set algorithm.loss_agg_mode to one of {', '.join(modes)} (nearest: {nearest}), or use verl 0.9.0+",
        )
    ]


def _defaults(recipe: Recipe, found: dict, version: str) -> list[Problem]:
    problems = []
    for field in versions.WATCHED_DEFAULTS:
        keys = fieldmap.verl_keys_of(field, recipe.train.engine, recipe.rollout.engine)
        if not keys:
            continue
        key = keys[0]
        ours, theirs = fieldmap.value_of(recipe, field), found["defaults"].get(key, _ABSENT)
        if theirs == _ABSENT or ours == theirs or not _base_only(recipe, field):
            continue
        problems.append(
            Problem(
                "verl-version",
                "warning",
                field,
                ours,
                f"{field} = {ours!r} comes from base.yaml (verl 0.9.1's default); verl {version}'s own default is "
                f"{theirs!r}: the launch sets {ours!r}",
                f"set {field}: {theirs!r} in the recipe to keep verl {version}'s behaviour, or {ours!r} to say so",
            )
        )
    return problems
