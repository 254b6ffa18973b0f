"""Environment a launch needs, from ONE table (`ENV_NEEDS`): variables a model/stack combination requires in the
recipe's env (GLM-5.2's patch flag, AIV), start-up timeouts that large models on large clusters outlast (learned
from the field), and the variables every NPU node must provide (preflight asks each node, grpolab.preflight.spec);
plus visible devices covering a node and wandb's mode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from grpolab.recipe import stack
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.schema import Recipe
from grpolab.rules.checks import Checks
from grpolab.rules.registry import Severity
from grpolab.verl import versions
from grpolab.verl.fieldmap import checked_facts, verl_key

BIG_MODEL_B = 32
BIG_WORLD = 64
MIN_TIMEOUT_S = 1800
HCCL_CONNECT_DEFAULT_S = 120  # HCCL's own default when HCCL_CONNECT_TIMEOUT is unset


@dataclass(frozen=True)
class EnvNeed:
    """A variable a launch needs. With `value` or `minimum` the recipe's env must set it (grpolab check); with
    neither, every node must provide it, in its own environment or the recipe's (grpolab preflight)."""

    var: str
    severity: Severity
    when: Callable[[Recipe, ModelCard | None], bool]  # does the need apply? (preflight passes no model facts)
    why: str
    value: str | None = None  # must be exactly this
    minimum: int | None = None  # must be at least this many seconds; `default` is what applies when unset
    default: int | None = None
    rule: str = "env-required"


def glm_patch(r: Recipe, f: ModelCard | None) -> bool:
    return bool(f) and f.model_type == "glm_moe_dsa" and r.cluster.device == "npu" and r.rollout.engine == "vllm"


def aiv(r: Recipe, f: ModelCard | None) -> bool:
    if r.rollout.engine == "vllm" and r.rollout.enforce_eager and r.rollout.ep > 1 and f is not None and f.num_experts:
        return False  # AIV hangs MC2 in eager MoE rollouts (params/stack_rules.yaml aiv-mc2-eager-hang)
    cann = r.pinned_version("cann")
    return (
        r.cluster.device == "npu"
        and r.engine.model_parallel
        and r.train.use_mbridge
        and cann is not None
        and stack.satisfies(cann, ">=8.5.0") is True
    )


def big_launch(r: Recipe, f: ModelCard | None) -> bool:
    """A model of 32B+ on 64+ devices, trained by verl: start-up outlasts the default timeouts."""
    return f is not None and r.engine.verl and f.params_b >= BIG_MODEL_B and r.world_size >= BIG_WORLD


def npu(r: Recipe, f: ModelCard | None) -> bool:
    return r.cluster.device == "npu"


def npu_nodes(r: Recipe, f: ModelCard | None) -> bool:
    return r.cluster.device == "npu" and r.cluster.nnodes > 1


def big_npu(r: Recipe, f: ModelCard | None) -> bool:
    return npu(r, f) and big_launch(r, f)


ENV_NEEDS: tuple[EnvNeed, ...] = (
    # in the recipe's env (grpolab check)
    EnvNeed(
        "VERL_VLLM_ASCEND_GLM52_PATCH",
        "error",
        glm_patch,
        "GLM-5.2 on vLLM-Ascend needs the GLM-5.2 patch (verl PR 7779); unset, training fails at run time",
        value="1",
    ),
    EnvNeed(
        "HCCL_OP_EXPANSION_MODE",
        "warning",
        aiv,
        "CANN 8.5.0 and newer with mbridge expects HCCL_OP_EXPANSION_MODE=AIV",
        value="AIV",
    ),
    EnvNeed(
        "HCCL_CONNECT_TIMEOUT",
        "warning",
        big_npu,
        "building the communicators of this many NPUs is reported to exceed it (EI0006 `Getting socket times out`)",
        minimum=1200,
        default=HCCL_CONNECT_DEFAULT_S,
        rule="startup-timeout",
    ),
    # on every node (grpolab preflight)
    EnvNeed(
        "HCCL_SOCKET_IFNAME",
        "error",
        npu_nodes,
        "HCCL takes the network interface for cross-node traffic from it; unset, multi-node HCCL init fails or "
        "hangs (verl #3947)",
    ),
    EnvNeed(
        "GLOO_SOCKET_IFNAME",
        "error",
        npu_nodes,
        "torch.distributed's gloo groups take their interface from it; unset, they may bind the wrong NIC",
    ),
    EnvNeed(
        "HCCL_CONNECT_TIMEOUT",
        "warning",
        npu,
        f"HCCL's default connect timeout ({HCCL_CONNECT_DEFAULT_S} s) is short for large models",
    ),
    EnvNeed(
        "HCCL_EXEC_TIMEOUT",
        "warning",
        npu,
        "HCCL's default execution timeout is short for long rollouts and checkpoints",
    ),
    EnvNeed(
        "HCCL_HOST_SOCKET_PORT_RANGE",
        "warning",
        npu_nodes,
        "without a fixed range HCCL picks host ports that firewalls and other jobs may block",
    ),
    EnvNeed(
        "HCCL_NPU_SOCKET_PORT_RANGE",
        "warning",
        npu_nodes,
        "without a fixed range HCCL picks NPU NIC ports at random",
    ),
)


def on_nodes(recipe: Recipe) -> list[tuple[str, str, str]]:
    """(variable, preflight status if missing: fail or warn, why) that every node must provide."""
    return [
        (n.var, "fail" if n.severity == "error" else "warn", n.why)
        for n in ENV_NEEDS
        if n.value is None and n.minimum is None and n.when(recipe, None)
    ]


def env(c: Checks) -> None:
    r, f, env = c.r, c.f, c.r.env
    for need in ENV_NEEDS:
        if need.value is not None and need.when(r, f) and env.get(need.var) != need.value:
            have = env.get(need.var)
            c.add(
                need.rule,
                f"env.{need.var}",
                have,
                need.why + ("" if have is None else f" (it is set to {have!r})"),
                f'add `{need.var}: "{need.value}"` under env:',
                severity=need.severity,
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
    if not big_launch(r, f):
        return
    scale = f"{f.name} ({f.params_b:g}B) on {r.world_size} devices"
    timeout = r.override(verl_key("trainer.timeout_s"), r.trainer.timeout_s)
    # by meaning: only where the checked verl's workers read the timeout key does raising it help
    read = versions.read_key(verl_key("trainer.timeout_s"), checked_facts())
    number = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
    if read is not None and number and timeout < MIN_TIMEOUT_S:
        c.add(
            "startup-timeout",
            "trainer.timeout_s",
            timeout,
            f"{scale}: loading, offloading and the first weight sync outlast a {timeout} s collective "
            "timeout; the barrier times out before step 1",
            f"set trainer.timeout_s to {MIN_TIMEOUT_S} or more",
            severity="warning",
        )
    need = next(n for n in ENV_NEEDS if n.var == "HCCL_CONNECT_TIMEOUT" and n.rule == "startup-timeout")
    if need.when(r, f):
        have = r.env.get(need.var)
        try:
            value = int(have) if have is not None else need.default
        except ValueError:
            value = 0
        if value < need.minimum:
            c.add(
                need.rule,
                f"env.{need.var}",
                have,
                f"{scale}: HCCL's connect timeout is {value} s ({'set' if have else 'default'}); {need.why}",
                f'add `{need.var}: "{need.minimum}"` (or more, up to 7200) under env:',
                severity=need.severity,
            )
