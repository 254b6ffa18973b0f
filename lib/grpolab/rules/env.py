"""Environment a launch needs: variables a model/stack combination requires in the recipe's env (GLM-5.2's patch
flag, AIV), visible devices covering a node, wandb's mode, and (learned from the field) start-up timeouts that
large models on large clusters outlast.
"""

from __future__ import annotations

from grpolab.recipe import stack
from grpolab.recipe.schema import ModelCard, Recipe
from grpolab.rules.checks import Checks
from grpolab.rules.view import override, verl_engine

BIG_MODEL_B = 32
BIG_WORLD = 64
MIN_TIMEOUT_S = 1800
MIN_HCCL_CONNECT_S = 1200


def _glm_patch(r: Recipe, f: ModelCard | None) -> bool:
    return bool(f) and f.model_type == "glm_moe_dsa" and r.cluster.device == "npu" and r.rollout.engine == "vllm"


def _aiv(r: Recipe, f: ModelCard | None) -> bool:
    cann = r.stack.get("cann", "")
    if r.rollout.engine == "vllm" and r.rollout.enforce_eager and r.rollout.ep > 1 and f is not None and f.num_experts:
        return False  # AIV hangs MC2 in eager MoE rollouts (params/stack_rules.yaml aiv-mc2-eager-hang)
    return (
        r.cluster.device == "npu"
        and r.train.engine == "megatron"
        and r.train.use_mbridge
        and bool(cann)
        and stack.satisfies(cann.split("@")[0], ">=8.5.0") is True
    )


# env that a model/stack combination requires; `when(recipe, facts)` says whether the rule applies
ENV_RULES = [
    {
        "var": "VERL_VLLM_ASCEND_GLM52_PATCH",
        "value": "1",
        "severity": "error",
        "when": _glm_patch,
        "why": "GLM-5.2 on vLLM-Ascend needs the GLM-5.2 patch (verl PR 7779); unset, training fails at run time",
    },
    {
        "var": "HCCL_OP_EXPANSION_MODE",
        "value": "AIV",
        "severity": "warning",
        "when": _aiv,
        "why": "CANN 8.5.0 and newer with mbridge expects HCCL_OP_EXPANSION_MODE=AIV",
    },
]


def env(c: Checks) -> None:
    r, f, env = c.r, c.f, c.r.env
    for rule in ENV_RULES:
        if rule["when"](r, f) and env.get(rule["var"]) != rule["value"]:
            have = env.get(rule["var"])
            c.add(
                "env-required",
                f"env.{rule['var']}",
                have,
                rule["why"] + ("" if have is None else f" (it is set to {have!r})"),
                f'add `{rule["var"]}: "{rule["value"]}"` under env:',
                severity=rule["severity"],
            )
    visible = env.get("ASCEND_RT_VISIBLE_DEVICES")
    if r.cluster.device == "npu" and visible is not None:
        count = len([v for v in visible.split(",") if v.strip()])
        if count < r.cluster.devices_per_node:
            c.add(
                "env-required",
                "env.ASCEND_RT_VISIBLE_DEVICES",
                visible,
                f"lists {count} devices but the recipe uses {r.cluster.devices_per_node} per node",
                f"list {r.cluster.devices_per_node} devices, e.g. "
                f"{','.join(str(i) for i in range(min(r.cluster.devices_per_node, 16)))}"
                f"{',...' if r.cluster.devices_per_node > 16 else ''}",
            )
    if "wandb" in r.trainer.logger and not (env.get("WANDB_MODE") or env.get("WANDB_API_KEY")):
        c.add(
            "env-required",
            "trainer.logger",
            r.trainer.logger,
            "wandb is a logger but neither WANDB_MODE nor WANDB_API_KEY is in env: without a key on the "
            "nodes, the run logs to wandb offline",
            "set env.WANDB_MODE (offline or online) explicitly",
            severity="warning",
        )


def startup_timeout(c: Checks) -> None:
    """Models of 32B+ on 64+ devices need longer collective / HCCL connect timeouts than the defaults."""
    r, f = c.r, c.f
    if f is None or not verl_engine(r) or f.params_b < BIG_MODEL_B or r.world_size < BIG_WORLD:
        return
    scale = f"{f.name} ({f.params_b:g}B) on {r.world_size} devices"
    timeout = override(r, "actor_rollout_ref.nccl_timeout", r.trainer.timeout_s)
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout < MIN_TIMEOUT_S:
        c.add(
            "startup-timeout",
            "trainer.timeout_s",
            timeout,
            f"{scale}: loading, offloading and the first weight sync outlast a {timeout} s collective "
            "timeout; the barrier times out before step 1",
            f"set trainer.timeout_s to {MIN_TIMEOUT_S} or more",
            severity="warning",
        )
    if r.cluster.device == "npu":
        have = r.env.get("HCCL_CONNECT_TIMEOUT")
        try:
            value = int(have) if have is not None else 120
        except ValueError:
            value = 0
        if value < MIN_HCCL_CONNECT_S:
            c.add(
                "startup-timeout",
                "env.HCCL_CONNECT_TIMEOUT",
                have,
                f"{scale}: HCCL's connect timeout is {value} s ({'set' if have else 'default'}); building the "
                "communicators of this many NPUs is reported to exceed it (EI0006 `Getting socket times out`)",
                f'add `HCCL_CONNECT_TIMEOUT: "{MIN_HCCL_CONNECT_S}"` (or more, up to 7200) under env:',
                severity="warning",
            )
