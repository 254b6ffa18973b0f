"""Golden tests: every seed recipe launches what its upstream verl script runs.

The upstream launches are data in tests/data/upstream/ (the final argv of each real script and the env it
exports, with the PR it comes from). Both launches are composed against the installed verl's own config and
compared key by key on the config verl would actually run with (interpolations resolved), so a key the render
leaves to verl's default counts only when that default differs. What may differ is a short list below, each
with its reason; the test also fails when a listed difference disappears, so the list stays exact.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grpolab.recipe.loader import load_recipe
from grpolab.verl import config as verl_schema
from grpolab.verl.render import render

UPSTREAM = Path(__file__).parent / "data" / "upstream"
FACTS = yaml.safe_load((UPSTREAM / "upstream.yaml").read_text())
RUN_DIR = "/RUN"
ARR = "actor_rollout_ref"

PATHS = "paths: the recipe names the machine's own model, data and checkpoint locations"
NAMES = "the run's own project and experiment names (verl also copies them into rollout.trace)"
# differences every seed recipe has, on purpose
COMMON = {
    f"{ARR}.model.path": PATHS,
    f"{ARR}.rollout.prometheus.served_model_name": PATHS + " (verl derives it from model.path)",
    "data.train_files": PATHS,
    "data.val_files": PATHS,
    "trainer.default_local_dir": "checkpoints go to the run directory (runs/<id>/checkpoint)",
    "trainer.logger": "the run's logger: `file` is added so that runs/<id>/metrics.jsonl feeds the monitor",
    "trainer.project_name": NAMES,
    "trainer.experiment_name": NAMES,
    f"{ARR}.rollout.trace.project_name": NAMES,
    f"{ARR}.rollout.trace.experiment_name": NAMES,
    "data.seed": "trainer.seed (base.yaml: 42) fixes the data order; the scripts leave verl's unseeded default",
}
SP_OTC = (
    "upstream sets it through override_transformer_config; verl 0.9.1 passes megatron.sequence_parallel "
    "to the same TransformerConfig field (transformer_impl.py provider_overrides)"
)
CAPTURE = (
    "rendered as verl 0.9.1's first-class rollout.cudagraph_capture_sizes, which verl copies into the "
    "same vLLM compilation_config (vllm_async_server.py)"
)
GRAD_OFFLOAD = "verl 0.9.1 has no actor.megatron.grad_offload: composition would fail; the renderer warns"
BUCKET = (
    "rollout.update_weights_bucket_mb is a field the `rules` change adds; until it lands the recipe "
    "sets the key through verl_overrides"
)
PROFILER = (
    "profiling is left out: the script profiles no step (global_profiler.steps=null) and writes to a "
    "fixed /profpath; every key under a profiler section"
)
DEVICE = (
    "cluster.device states the device (npu); the script leaves verl's default 'cuda' and relies on verl "
    "finding torch_npu"
)
DYNAMIC = (
    "dynamic batching (use_dynamic_bsz / log_prob_use_dynamic_bsz) sizes micro-batches by tokens, so this "
    "micro-batch size is not read: inert"
)
# per recipe: upstream key -> why the render differs (keys verl 0.9.1 lacks are dropped from the upstream compose)
EXPECTED = {
    "glm5_2": {
        f"{ARR}.actor.megatron.override_transformer_config.sequence_parallel": SP_OTC,
        f"{ARR}.actor.megatron.override_transformer_config.context_parallel_size": "upstream repeats cp inside override_transformer_config; verl passes megatron.context_parallel_size "
        "(train.cp = 1) to the same field",
        f"{ARR}.actor.megatron.override_transformer_config.use_distributed_optimizer": "not a TransformerConfig field: verl reads megatron.use_distributed_optimizer (train.distributed_"
        "optimizer, true) for the optimizer",
        f"{ARR}.actor.optim.override_optimizer_config.use_precision_aware_optimizer": "rendered as verl 0.9.1's first-class actor.optim.use_precision_aware_optimizer (train.precision_aware_"
        "optimizer); verl builds the same OptimizerConfig field from it",
        f"{ARR}.actor.optim.use_precision_aware_optimizer": "the other half of the line above",
        f"{ARR}.rollout.cudagraph_capture_sizes": CAPTURE,
        f"{ARR}.rollout.engine_kwargs.vllm.compilation_config.cudagraph_capture_sizes": CAPTURE,
        "algorithm.kl_ctrl.kl_coef": "read only with use_kl_in_reward, which is false in both: inert",
        "ray_kwargs.ray_init.runtime_env.env_vars.VERL_VLLM_ASCEND_GLM52_PATCH": "the recipe's env carries it; every run's env goes to the Ray job's runtime_env",
        "trainer.rollout_data_dir": PATHS + "; rollout dumps are off unless trainer.rollout_data_dir names one",
    },
    "qwen3_5_122b_a10b_32k": {
        "trainer.device": DEVICE,
        f"{ARR}.actor.megatron.override_transformer_config.sequence_parallel": SP_OTC,
        f"{ARR}.rollout.cudagraph_capture_sizes": CAPTURE,
        f"{ARR}.rollout.engine_kwargs.vllm.compilation_config.cudagraph_capture_sizes": CAPTURE,
        f"{ARR}.actor.megatron.grad_offload": GRAD_OFFLOAD,
    },
    "qwen3_30b_a3b": {
        f"{ARR}.actor.megatron.grad_offload": GRAD_OFFLOAD,
        "*profiler.": PROFILER,
        "algorithm.kl_ctrl.kl_coef": "read only with use_kl_in_reward, which is false in both: inert",
        f"{ARR}.actor.megatron.dist_checkpointing_path": PATHS,
        f"{ARR}.ref.megatron.dist_checkpointing_path": PATHS,
    },
    "qwen3_8b_gpu": {
        f"{ARR}.actor.ppo_micro_batch_size_per_gpu": DYNAMIC,
        f"{ARR}.ref.log_prob_micro_batch_size_per_gpu": DYNAMIC,
        f"{ARR}.rollout.log_prob_micro_batch_size_per_gpu": DYNAMIC,
    },
    "qwen3_8b_npu": {
        "trainer.device": DEVICE,
        f"{ARR}.ref.log_prob_micro_batch_size_per_gpu": DYNAMIC,
    },
}
# env the render adds or changes, per recipe, and why (VERL_FILE_LOGGER_PATH is every verl run's)
ENV_EXPECTED = {
    "glm5_2": {
        "VERL_VLLM_ASCEND_GLM52_PATCH": "exported for the job instead of through ray_kwargs (same effect, checked "
        "by rule env-required)",
        "HCCL_CONNECT_TIMEOUT": "multi-node Ascend launches need HCCL timeouts on every node (the script's 7200 s)",
        "HCCL_EXEC_TIMEOUT": "as HCCL_CONNECT_TIMEOUT",
    },
    "qwen3_5_122b_a10b_32k": {
        "HCCL_OP_EXPANSION_MODE": "CANN >= 8.5.0 with mbridge expects AIV (verl PR 6285; rule env-required)",
        "VLLM_USE_V1": "from the PR's own test report (verl PR 6807), which ran with it; vLLM 0.23 is V1 only",
        "VLLM_ASCEND_ENABLE_FLASHCOMM1": "from the PR's own test report (verl PR 6807), which ran with it",
    },
    "qwen3_30b_a3b": {},
    "qwen3_8b_gpu": {},
    "qwen3_8b_npu": {},
}


def _explained(key: str, allowed: dict) -> bool:
    """Listed by name, or by a `*part` entry naming a section (e.g. every key under a profiler)."""
    return key in allowed or any(k.startswith("*") and k[1:] in key for k in allowed)


def upstream_argv(name: str) -> list[str]:
    return (UPSTREAM / FACTS[name]["args"]).read_text().splitlines()


def _drop_lacking(overrides: list[str], lacking: set[str]) -> list[str]:
    return [o for o in overrides if o.split("=", 1)[0].lstrip("+") not in lacking]


def differences(name: str) -> tuple[dict, dict, object]:
    """{key: (upstream, render)} over verl's effective config, {env name: (upstream, render)}, the launch."""
    facts = FACTS[name]
    recipe = load_recipe(facts["recipe"], facts["set"])
    launch = render(recipe, RUN_DIR)
    up_name, up_overrides = verl_schema.split_argv(upstream_argv(name))
    lacking = {k for k in EXPECTED[name] if k.endswith(".grad_offload")}
    upstream = verl_schema.effective(_drop_lacking(up_overrides, lacking), up_name)
    ours_name, ours_overrides = verl_schema.split_argv(launch.argv())
    ours = verl_schema.effective(ours_overrides, ours_name)
    for key in lacking:  # keys verl 0.9.1 lacks: compare what the script asked for with what the render says
        upstream[key] = verl_schema.parse_overrides([o for o in up_overrides if key in o])[key]
        ours[key] = "<left out>"
    absent = "<absent>"
    diff = {
        k: (upstream.get(k, absent), ours.get(k, absent))
        for k in sorted(set(upstream) | set(ours))
        if upstream.get(k, absent) != ours.get(k, absent)
    }
    # ref mirrors the actor's override_transformer_config through an interpolation: one difference, not two
    diff = {k: v for k, v in diff.items() if not k.startswith(f"{ARR}.ref.megatron.override_transformer_config.")}
    env = {
        k: (facts["env"].get(k), launch.env.get(k))
        for k in sorted(set(facts["env"]) | set(launch.env))
        if facts["env"].get(k) != launch.env.get(k) and k != "VERL_FILE_LOGGER_PATH"
    }
    return diff, env, launch


@pytest.mark.parametrize("name", sorted(FACTS))
def test_render_equals_the_upstream_launch(name):
    diff, env, launch = differences(name)
    allowed = {**COMMON, **EXPECTED[name]}
    unexplained = {k: v for k, v in diff.items() if not _explained(k, allowed)}
    assert not unexplained, (
        f"{name}: render differs from {FACTS[name]['script']} (PR {FACTS[name]['pr']}): "
        + "; ".join(f"{k}: upstream {u!r}, render {o!r}" for k, (u, o) in unexplained.items())
    )
    stale = sorted(k for k in EXPECTED[name] if not any(_explained(d, {k: ""}) for d in diff))
    assert not stale, f"{name}: listed as a justified difference but the render now matches: {stale}"
    assert set(env) == set(ENV_EXPECTED[name]), f"{name}: env differs from the script's: {env}"
    assert launch.env["VERL_FILE_LOGGER_PATH"] == f"{RUN_DIR}/metrics.jsonl"


def test_every_justified_difference_has_a_reason():
    for table in (COMMON, *EXPECTED.values(), *ENV_EXPECTED.values()):
        assert all(isinstance(why, str) and len(why) > 20 for why in table.values())


def test_upstream_facts_name_their_pr_and_files():
    for name, facts in FACTS.items():
        assert (UPSTREAM / facts["args"]).is_file() and isinstance(facts["pr"], int), name
        assert upstream_argv(name)[:2] == ["-m", "verl.trainer.main_ppo"]
