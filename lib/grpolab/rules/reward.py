"""The reward before launch: the manager exists in the installed verl, the function's file exists and parses, and
the function takes what that manager passes it (rules reward-manager, reward-function, reward-signature).

Everything is read as data (grpolab.verl.rewards parses verl's files and the user's with ast): no verl, torch or
user code is imported, so this stays within check's milliseconds. Running the reward is `grpolab data`'s.
"""

from __future__ import annotations

from grpolab.problems import closest
from grpolab.rules.checks import Checks
from grpolab.verl import rewards
from grpolab.verl.config import verl_version


def reward(c: Checks) -> None:
    registry = rewards.managers()
    if registry is None:  # no verl here: verl-schema says so once
        return
    manager = manager_of(c)
    if manager is None:
        names = sorted(registry.managers)
        near = closest(c.r.reward.manager, names)
        c.add(
            "reward-manager",
            "reward.manager",
            c.r.reward.manager,
            f"verl {verl_version()}'s trainer has no reward manager {c.r.reward.manager!r}: it resolves names from "
            f"{registry.module}, which registers {', '.join(names)}",
            f"set reward.manager to {near!r}" if near else f"set reward.manager to one of {', '.join(names)}",
        )
    if c.r.reward.function:
        function(c, manager)


def manager_of(c: Checks) -> rewards.Manager | None:
    registry = rewards.managers()
    return registry.managers.get(c.r.reward.manager) if registry else None


def function(c: Checks, manager: rewards.Manager | None) -> None:
    """reward.function: its file, its function, its signature against what `manager` calls it with."""
    key, value = "reward.function", c.r.reward.function
    written, name = rewards.split_function(value)
    path = rewards.resolve(c.r)
    if not path.is_file():
        # a cluster's path (its folder is not here either) is the cluster's to have; a folder of this machine is not
        remote = c.r.cluster.device != "cpu" and not path.parent.exists()
        where = f"on this machine (nor its folder {path.parent})" if remote else f"at {path}"
        c.add(
            "reward-function",
            key,
            value,
            f"the reward file {written} is not {where}"
            + (
                "; verl loads it on the cluster (relative: from the job's working directory), which must have it"
                if remote
                else ""
            ),
            "write the reward there, or point reward.function at an existing `path.py:name` (a relative path is "
            "read from the folder of the recipe file that sets it)",
            severity="warning" if remote else None,
        )
        return
    found = rewards.function_signature(path, name)
    if found.syntax_error:
        c.add(
            "reward-function",
            key,
            value,
            f"the reward file {path} does not parse ({found.syntax_error}): verl's import of it fails on the cluster",
            "fix the file until `python -m py_compile` accepts it",
        )
        return
    if found.signature is None and not found.bound_as:
        listed = ", ".join(found.functions) or "none"
        near = closest(name, found.functions)
        c.add(
            "reward-function",
            key,
            value,
            f"{path} has no function {name!r} (its functions: {listed}): verl raises AttributeError when it loads it",
            f"set reward.function to {written}:{near}"
            if near
            else f"define {name} in {path}, or name one of its functions after the colon",
        )
        return
    if found.signature is None or manager is None:
        return  # bound by an import or an assignment: `grpolab data`'s dry run calls it
    passed = tuple(dict.fromkeys([*manager.keywords, *c.r.reward.kwargs]))
    unknown, missing = found.signature.refused(passed)
    if not unknown and not missing:
        return
    why, fixes = [], []
    if unknown:
        why.append(f"it takes no {', '.join(unknown)}")
        fixes.append(f"add {', '.join(unknown)} (or **kwargs) to its parameters")
    if missing:
        why.append(f"nothing passes its {', '.join(missing)}")
        fixes.append(f"give {', '.join(missing)} a default, or pass them in reward.kwargs")
    batched = " (a batch manager's call)" if manager.batched else ""
    c.add(
        "reward-signature",
        key,
        value,
        f"{path}:{found.signature.line} `{found.signature.text()}`: verl {verl_version()}'s {manager.name!r} reward "
        f"manager calls it as {name}({', '.join(k + '=...' for k in passed)}){batched}; {'; '.join(why)}",
        "; ".join(fixes) + f" (what {manager.name!r} calls: def {name}({', '.join(manager.keywords)}, **kwargs))",
    )
