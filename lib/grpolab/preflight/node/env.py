"""The environment as the job will see it on this node, and what the recipe requires of it.

The job's processes see the node's own environment (what `ray start` was given on that node) with the recipe's
`env` on top, expanded the way Ray's runtime_env `env_vars` are (`${VAR}` refers to the node's value, unset =
""): the job is submitted with `runtime_env={"env_vars": recipe.env}`. Checked: required variables present,
recipe vs node values that differ (a secret's value is never shown), visible-device lists long enough, HCCL /
gloo interface names that exist here.
"""

from __future__ import annotations

import re
import socket

from grpolab.preflight.node.rows import FAIL, OK, WARN, row, shown

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def job_env(node_env: dict[str, str], recipe_env: dict[str, str]) -> dict[str, str]:
    """The environment a job's processes see: the node's, with the recipe's env on top (`${VAR}` expanded)."""
    env = dict(node_env)
    for key, value in recipe_env.items():
        env[key] = _VAR.sub(lambda m: node_env.get(m.group(1), ""), str(value))
    return env


def listed(value: str) -> list[str]:
    """The items of a comma list, blanks dropped."""
    return [v.strip() for v in value.split(",") if v.strip()]


def check_env(spec: dict, node_env: dict[str, str], env: dict[str, str]) -> list[dict]:
    """Required variables present, recipe vs node conflicts, visible-device lists long enough. A secret's value
    (a name that looks secret, or one the recipe lists under `secrets:`) is never shown."""
    rows: list[dict] = []
    recipe_env, marked = spec["env"], spec.get("secrets", [])
    for var, severity, why in spec["required_env"]:
        if not env.get(var):
            said = f"{var} is not set on this node nor in the recipe's env: {why}"
            fix = (
                f"export {var}=... in the shell that runs `ray start` on this node (then restart Ray there), or add "
                "it under the recipe's env:"
            )
            rows.append(row(f"env.{var}", severity, said, fix))
    for var, value in recipe_env.items():
        mine = node_env.get(var)
        if mine is not None and mine != env[var] and "${" not in str(value):
            said = (
                f"this node sets {shown(var, mine, marked)} but the recipe sets {shown(var, env[var], marked)}: the "
                "values differ; the job sees the recipe's value, processes started outside the job (the raylet, "
                "other jobs) see the node's"
            )
            fix = f"make them agree: change env.{var} in the recipe, or the node's environment before `ray start`"
            rows.append(row(f"env.{var}", WARN, said, fix))
    dpn = spec["devices_per_node"]
    visible_var = {"npu": "ASCEND_RT_VISIBLE_DEVICES", "cuda": "CUDA_VISIBLE_DEVICES"}.get(spec["device"])
    if visible_var and env.get(visible_var) is not None:
        ids = listed(env[visible_var])
        if len(ids) < dpn:
            where = "the recipe's env" if visible_var in recipe_env else "this node's environment"
            said = (
                f"{shown(visible_var, env[visible_var], marked)} (from {where}) lists {len(ids)} device(s) but the "
                f"recipe uses {dpn} per node"
            )
            fix = f"list {dpn} devices ({','.join(str(i) for i in range(dpn))}) in {visible_var}, or unset it"
            rows.append(row(f"env.{visible_var}", FAIL, said, fix))
    for var in ("HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        value = env.get(var)
        if spec["device"] == "npu" and value:
            if missing := _missing_interfaces(value):
                said = f"{shown(var, value, marked)} names no network interface of this node ({', '.join(missing)})"
                fix = f"set {var} to the interface that carries this node's IP (see `ip addr`)"
                rows.append(row(f"env.{var}", WARN, f"{said}; interfaces here: {', '.join(_interfaces())}", fix))
    if not rows:
        noset = env.get("RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES")
        extra = (
            f"; RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES={noset}" if noset and spec["device"] == "npu" else ""
        )
        required = ", ".join(v for v, _, _ in spec["required_env"]) or "none for this recipe"
        said = f"{len(recipe_env)} recipe variable(s) applied; required variables present ({required}){extra}"
        rows.append(row("env", OK, said))
    return rows


def _interfaces() -> list[str]:
    try:
        return [name for _, name in socket.if_nameindex()]
    except OSError:
        return []


def _missing_interfaces(value: str) -> list[str]:
    """HCCL/GLOO interface names (comma list, `=` exact or `^=` exclusion prefixes) that match nothing here."""
    names = _interfaces()
    if not names:
        return []
    missing = []
    for item in listed(value):
        if item.startswith("^"):
            continue  # an exclusion list cannot be wrong in a way we can see
        exact, name = item.startswith("="), item.lstrip("=")
        if not any((n == name) if exact else n.startswith(name) for n in names):
            missing.append(name)
    return missing
