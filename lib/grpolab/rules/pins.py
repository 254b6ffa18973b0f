"""Version pins: each `stack:` pin parses, verl's pin matches the installed verl and its requirements, and the
known-bad version / environment combinations of params/stack_rules.yaml (data, not code) do not hold.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from grpolab.paths import params_dir
from grpolab.recipe import stack
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.schema import Recipe
from grpolab.rules.checks import Checks
from grpolab.rules.registry import RULE_IDS
from grpolab.verl.fieldmap import verl_key


def pins(c: Checks) -> None:
    r = c.r
    reqs = stack.verl_requirements()
    verl_installed, _ = stack.installed("verl")
    for package, text in r.stack.items():
        key = f"stack.{package}"
        try:
            pin = stack.parse_pin(package, text)
        except ValueError as exc:
            c.add(
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
            c.add(
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
            c.add(
                "stack",
                key,
                text,
                f"verl {verl_installed} requires {package}{spec}; the pin {pin.version} is outside it",
                f"pin a {package} version within {spec}, or a verl release that supports {pin.version}",
                severity="warning",
            )


@lru_cache(maxsize=1)
def stack_rules() -> tuple[dict, ...]:
    """params/stack_rules.yaml: known bad / required combinations, as data."""
    # lazy: yaml (the one YAML reader; the table is read on first use and cached)
    from grpolab.recipe.yamlio import load_yaml

    data = load_yaml(params_dir() / "stack_rules.yaml", "rules table")
    return tuple(data or ())


def _stack_holds(r: Recipe, want: dict) -> bool:
    pinned = {package: r.pinned_version(package) for package in want}
    return all(v is not None and stack.satisfies(v, want[package]) is True for package, v in pinned.items())


# condition name in params/stack_rules.yaml -> whether it holds for (recipe, model facts, the entry's value)
CONDITIONS: dict[str, Callable[[Recipe, ModelCard | None, Any], bool]] = {
    "device": lambda r, f, want: r.cluster.device == want,
    "hardware": lambda r, f, want: r.cluster.hardware == want,
    "rollout_engine": lambda r, f, want: r.rollout.engine == want,
    "train_engine": lambda r, f, want: r.train.engine == want,
    "moe": lambda r, f, want: bool(f and f.num_experts) == bool(want),
    "linear_attention": lambda r, f, want: bool(f and f.linear_num_key_heads) == bool(want),
    "rollout_ep_gt": lambda r, f, want: r.rollout.ep > want,
    "cp_gt": lambda r, f, want: r.train.cp > want,
    "enforce_eager": lambda r, f, want: r.rollout.enforce_eager == want,
    "routing_replay": lambda r, f, want: (
        bool(r.override(verl_key("rollout.routing_replay"), r.rollout.routing_replay)) == want
    ),
    "env": lambda r, f, want: all(r.env.get(k) == str(v) for k, v in want.items()),
    "stack": lambda r, f, want: _stack_holds(r, want),
}


def condition(r: Recipe, f: ModelCard | None, name: str, want: Any) -> bool:
    if name not in CONDITIONS:
        raise ValueError(f"params/stack_rules.yaml: unknown condition {name!r}")
    return CONDITIONS[name](r, f, want)


ENTRY_KEYS = {"id", "when", "severity", "key", "message", "fix", "source"}


def table_faults() -> list[str]:
    """What is wrong with params/stack_rules.yaml (missing fields, unknown conditions or rule ids); [] if fine."""
    faults = []
    for i, entry in enumerate(stack_rules()):
        name = entry.get("id", f"entry {i + 1}") if isinstance(entry, dict) else f"entry {i + 1}"
        if not isinstance(entry, dict):
            faults.append(f"{name}: not a mapping")
            continue
        faults += [f"{name}: missing {k}" for k in sorted(ENTRY_KEYS - set(entry))]
        faults += [f"{name}: unknown condition {c}" for c in entry.get("when", {}) if c not in CONDITIONS]
        if entry.get("rule", "known-bad") not in RULE_IDS:
            faults.append(f"{name}: unknown rule {entry['rule']}")
        if entry.get("severity") not in ("error", "warning"):
            faults.append(f"{name}: severity must be error or warning")
    return faults


def known_bad(c: Checks) -> None:
    """Every entry of params/stack_rules.yaml whose conditions all hold."""
    r, f = c.r, c.f
    for entry in stack_rules():
        if not all(condition(r, f, k, v) for k, v in entry["when"].items()):
            continue
        rule = entry.get("rule", "known-bad")
        where = f" [{entry['id']}; {entry['source']}]"
        requires = entry.get("requires")
        if not requires:
            key = entry["key"]
            section, _, name = key.partition(".")  # an env or stack key shows the recipe's value
            value = {"env": r.env, "stack": r.stack}.get(section, {}).get(name)
            c.add(rule, key, value, entry["message"] + where, entry["fix"], severity=entry["severity"])
            continue
        for package, version in requires.items():
            have = r.stack.get(package)
            if have is None:
                c.add(
                    rule,
                    f"stack.{package}",
                    None,
                    f"{entry['message']}; {package} is not pinned{where}",
                    f'pin `{package}: "{version}"` under stack:',
                    severity="warning",
                )
            elif _pinned_release(package, have) != version:
                c.add(
                    rule,
                    f"stack.{package}",
                    have,
                    f"{entry['message']}; the recipe pins {package} {have}{where}",
                    f'pin `{package}: "{version}"`',
                    severity=entry["severity"],
                )


def _pinned_release(package: str, text: str) -> str | None:
    """The release a pin names (`v0.23.0@0fc695fc` -> 0.23.0), by the one pin parser; None for a branch or a pin
    that does not parse (the stack rule reports that one)."""
    try:
        return stack.parse_pin(package, text).version
    except ValueError:
        return None
