"""The reward's older keys in an imported launch: said loudly, applied or kept inert at the user's choice.

verl moved the reward's settings under `reward.*` (custom_reward_function -> reward.custom_reward_function,
reward_model.reward_manager -> the manager's name under reward, sandbox_fusion -> reward.sandbox_fusion, ...). Which
older key moves where, and which entry points still move them (verl 0.9.1: only the fully async trainer; its
main_ppo reads `reward.*` alone since PR 7331), is the checked version's own `migrate_legacy_reward_impl`, read from
its source into the version table (grpolab.verl.versions, fact `legacy_reward`). A launch through an entry point
that ignores them runs with verl's default reward whatever the older keys say. Import then either applies them as
their new keys (`apply`, the default: the run uses the reward the script's author meant, and the import says
"the original launch ignores X; the recipe applies it as Y") or keeps them as they are (`inert`: the same launch,
the same ignored keys). Every part of the reward moves together: path, name and reward_kwargs (a
`+custom_reward_function.reward_kwargs.*` too). A recipe's own entry point (recipe.*) may read the older keys in
its own code: they are kept as they are there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from grpolab.recipe.dotted import has_dotted
from grpolab.verl import config as verl_schema
from grpolab.verl import fieldmap

MODES = ("apply", "inert")


@dataclass
class Legacy:
    """One older reward key of the script and what the import did with it."""

    key: str  # the script's key (bare)
    value: Any
    new: str  # verl's key for the same setting today
    applied: bool  # the recipe renders it as `new`; False: kept as the script had it
    why: str

    def to_dict(self) -> dict:
        return asdict(self)


def moves_for(module: str) -> tuple[dict[str, str], str | None]:
    """(older key or prefix -> its new key, what the launch's entry point does with them: "ignores", "migrates",
    or None where they are its own to read: a recipe's entry point, or a verl without the migration)."""
    facts = fieldmap.checked_facts() or {}
    found = facts.get("legacy_reward") or {}
    moves = found.get("moves") or {}
    path = f"{fieldmap.REWARD_FN}.path"
    reads = (facts.get("reads") or {}).get(path, {}).get("key", path)
    if not moves or not module.startswith("verl.") or reads != path:  # a tree that still reads the older keys
        return moves, None
    return moves, "migrates" if module in (found.get("entries") or []) else "ignores"


def new_key(key: str, moves: dict[str, str]) -> str | None:
    """The key verl reads today for an older reward key (a prefix move carries the rest of the key), or None."""
    for old, new in moves.items():
        if key == old or key.startswith(old + "."):
            return new + key[len(old) :]
    return None


def rewrite(
    overrides: list[str], values: dict[str, Any], config: dict, module: str, mode: str
) -> tuple[list[str], list[Legacy]]:
    """The overrides as the recipe maps them (each older reward key either moved to its new key or kept), and what
    was done with each older key. The new key is `+`-prefixed where the version's config lacks it."""
    moves, effect = moves_for(module)
    if effect is None:
        return overrides, []
    version = verl_schema.verl_version()
    own = {o.split("=", 1)[0].lstrip("+") for o in overrides}
    out, found = [], []
    for text in overrides:
        key = text.split("=", 1)[0].lstrip("+")
        new = new_key(key, moves)
        if new is None:
            out.append(text)
            continue
        value = values.get(key)
        ignored = f"the original launch ignores {key} (verl {version}'s {module} reads only {new})"
        if effect == "migrates":
            why, apply = f"verl {version}'s {module} moves {key} to {new} itself; so does the recipe", True
        elif any(k == new or k.startswith(new + ".") for k in own):
            why, apply = f"{ignored}; the script sets {new} itself, which the recipe keeps: {key} stays ignored", False
        elif mode == "inert":
            why, apply = f"{ignored}; kept inert as imported (--legacy-reward inert)", False
        else:
            why = (
                f"{ignored}; the recipe applies it as {new}, so the run uses the reward the script names "
                "(`grpolab import --legacy-reward inert` keeps the original's)"
            )
            apply = True
        found.append(Legacy(key, value, new, apply, why))
        if apply:
            plus = "" if has_dotted(config, new) else "+"
            out.append(f"{plus}{new}={text.split('=', 1)[1]}")
        else:
            out.append(text)
    return out, found


def migrated(upstream: dict[str, Any], module: str) -> dict[str, Any]:
    """A composed launch as an entry point that migrates the older keys runs it: each set older key's value under
    its new key (the comparison of both launches then sees what that entry point runs)."""
    moves, effect = moves_for(module)
    if effect != "migrates":
        return upstream
    out = dict(upstream)
    for key, value in upstream.items():
        new = new_key(key, moves)
        if new is not None:
            del out[key]  # moved, and deleted from the config as verl does
            if value is not None:
                out[new] = value
    return out


def header(found: list[Legacy], module: str) -> list[str]:
    """The recipe's opening comment about the older reward keys: what the original launch did with them and what the
    recipe does."""
    if not found:
        return []
    applied = [e for e in found if e.applied]
    version = verl_schema.verl_version()
    lines = [
        f"# LEGACY REWARD KEYS: verl {version}'s {module} "
        + ("moves them itself; so does this recipe:" if moves_for(module)[1] == "migrates" else "ignores them.")
    ]
    if applied and moves_for(module)[1] != "migrates":
        lines.append(
            "# This recipe APPLIES them, so the run uses the reward the script names, not the one its launch ran with:"
        )
    for e in found:
        lines.append(f"#   {e.key}={e.value!r} -> " + (f"{e.new}" if e.applied else "kept as it was (ignored)"))
    if applied and moves_for(module)[1] != "migrates":
        lines.append(
            "# To keep the original's reward (these keys ignored, as they were): grpolab import --legacy-reward inert"
        )
    return lines


def explain(key: str, found: list[Legacy]) -> str | None:
    """Why the recipe differs from the original at a key: an applied older reward key behind it, if any."""
    for entry in found:
        if entry.applied and (key == entry.new or key.startswith(entry.new + ".") or entry.new.startswith(key + ".")):
            return entry.why
    return None
