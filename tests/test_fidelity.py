"""Golden tests: every seed recipe launches what its upstream verl script runs.

The upstream launches are data in tests/data/upstream/ (the final argv of each real script and the env it
exports, with the PR it comes from). Both launches are composed against the installed verl's own config and
compared key by key on the config verl would actually run with (interpolations resolved; grpolab.verl.config.
differences): a key the render leaves to verl's default counts only when that default differs; a setting spelled
another way that verl reads the same (an alias in grpolab.verl.fieldmap, each with its reason there), keys the run
owns and keys no worker reads in that launch do not count. What may differ is a short list below, each with its
reason; the test also fails when a listed difference disappears, so the list stays exact.
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
    "trainer.project_name": NAMES,
    "trainer.experiment_name": NAMES,
    f"{ARR}.rollout.trace.project_name": NAMES,
    f"{ARR}.rollout.trace.experiment_name": NAMES,
}
GRAD_OFFLOAD = "verl 0.9.1 has no actor.megatron.grad_offload: composition would fail; the renderer warns"
PROFILER = (
    "profiling is left out: the script profiles no step (global_profiler.steps=null) and writes to a "
    "fixed /profpath; every key under a profiler section"
)
# per recipe: upstream key -> why the render differs (keys verl 0.9.1 lacks are dropped from the upstream compose)
EXPECTED = {
    "glm5_2": {
        "trainer.rollout_data_dir": PATHS + "; rollout dumps are off unless trainer.rollout_data_dir names one",
    },
    "qwen3_5_122b_a10b_32k": {
        f"{ARR}.actor.megatron.grad_offload": GRAD_OFFLOAD,
    },
    "qwen3_30b_a3b": {
        f"{ARR}.actor.megatron.grad_offload": GRAD_OFFLOAD,
        "*profiler.": PROFILER,
        f"{ARR}.actor.megatron.dist_checkpointing_path": PATHS,
        f"{ARR}.ref.megatron.dist_checkpointing_path": PATHS,
    },
    "qwen3_8b_gpu": {},
    "qwen3_8b_npu": {},
    # each of verl's V1 trainer modes (issue 42): the same launch, rendered from schedule.*
    "qwen3_8b_gpu_colocate_async": {},
    "qwen3_8b_gpu_separate_async": {},
    "qwen3_8b_gpu_separate_async_switch": {},
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
    "qwen3_8b_gpu_colocate_async": {},
    "qwen3_8b_gpu_separate_async": {},
    "qwen3_8b_gpu_separate_async_switch": {},
}


def _explained(key: str, allowed: dict) -> bool:
    """Listed by name, or by a `*part` entry naming a section (e.g. every key under a profiler)."""
    return key in allowed or any(k.startswith("*") and k[1:] in key for k in allowed)


def upstream_argv(name: str) -> list[str]:
    return (UPSTREAM / FACTS[name]["args"]).read_text().splitlines()


def _drop_lacking(overrides: list[str], lacking: set[str]) -> list[str]:
    return [o for o in overrides if o.split("=", 1)[0].lstrip("+") not in lacking]


def differences(name: str) -> tuple[dict, dict, object]:
    """{key: (upstream, render)} over the keys verl's workers read, {env name: (upstream, render)}, the launch."""
    facts = FACTS[name]
    recipe = load_recipe(facts["recipe"], facts["set"])
    launch = render(recipe, RUN_DIR)
    up_name, up_overrides = verl_schema.split_argv(upstream_argv(name))
    lacking = {k for k in EXPECTED[name] if k.endswith(".grad_offload")}
    upstream = verl_schema.effective(_drop_lacking(up_overrides, lacking), up_name)
    diff = verl_schema.differences(upstream, launch.argv(), recipe.train.engine, skip=lacking)
    for key in lacking:  # keys verl 0.9.1 lacks: compare what the script asked for with what the render says
        asked = verl_schema.parse_overrides([o for o in up_overrides if key in o])[key]
        if not any(o.startswith(key + "=") for o in launch.overrides):
            diff[key] = (asked, "<left out>")
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
