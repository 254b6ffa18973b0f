"""Every file under params/ is loaded and validated by ONE parametrized test; every recipe also renders,
composes against the installed verl and yields a bash script that passes `bash -n`."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from grpolab.paths import params_dir
from grpolab.problems import errors
from grpolab.recipe.loader import load_card, load_recipe, merge_layers
from grpolab.recipe.schema import Recipe
from grpolab.rules.gate import check
from grpolab.verl.render import render, to_sh

FILES = sorted(p.relative_to(params_dir()).as_posix() for p in params_dir().rglob("*.yaml"))


@pytest.mark.parametrize("rel", FILES)
def test_every_params_file_loads_and_validates(rel, tmp_path):
    path = params_dir() / rel
    folder = rel.split("/")[0] if "/" in rel else ""
    if rel == "base.yaml":
        Recipe.model_validate(yaml.safe_load(path.read_text()))  # base alone sets every key: the one home
    elif folder == "hardware":
        layered = tmp_path / "on_hw.yaml"
        layered.write_text(f"defaults: [base, hardware/{path.stem}]\n")
        recipe = load_recipe(layered)
        assert recipe.cluster.hardware == path.stem
    elif folder == "models":
        card = load_card(path.stem)
        assert card.num_heads % card.num_kv_heads == 0
    elif folder == "recipes":
        recipe, problems = check(path.stem)
        assert recipe is not None and not errors(problems), [p.format() for p in problems]
        launch = render(recipe)
        script = tmp_path / "launch.sh"
        script.write_text(to_sh(launch, recipe))
        subprocess.run(["bash", "-n", str(script)], check=True)
    elif folder == "engines":  # one engine's own section, layered only by the recipes of that engine
        from grpolab.recipe.schema import Local

        data = yaml.safe_load(path.read_text())
        assert list(data) == ["local"] and path.stem == "trl"
        Local.model_validate(data["local"])
    elif rel == "attention_backends.yaml":
        from grpolab.rules.backends import table_faults

        assert not table_faults()
    elif rel == "model_configs.yaml":  # the family table: every entry is a source-cited config.json that makes a card
        from grpolab.recipe.cards import table, table_card

        for name, row in table().items():
            assert row["source"] and isinstance(row["config"], dict), name
            card = table_card(name)
            assert card.num_heads % card.num_kv_heads == 0 and card.params_b > 0, name
    elif rel == "baselines.yaml":  # published runs the cost model is held to (tests/test_cost.py predicts them)
        from grpolab.plan.baselines import baselines
        from grpolab.recipe.cards import resolve_model

        assert all(
            resolve_model(b.model) and (params_dir() / "hardware" / f"{b.hardware}.yaml").is_file() for b in baselines()
        )
    elif rel == "stack_rules.yaml":
        from grpolab.rules.pins import table_faults

        assert not table_faults()
    elif rel == "data_presets.yaml":  # `grpolab data prepare --preset`: each cites the verl script it follows
        from grpolab.verl.prepare import presets

        assert all(p["source"] and "{question}" in p["template"] for p in presets().values())
    else:
        pytest.fail(f"params/{rel}: no test knows this kind of file; add it to this test")


def test_qwen3_8b_is_one_recipe_for_both_devices(tmp_path):
    gpu = load_recipe("qwen3_8b")
    npu = load_recipe("qwen3_8b", ["cluster.device=npu"])
    assert (gpu.cluster.device, gpu.rollout.tp, gpu.rollout.gpu_memory_utilization, gpu.data.train_batch_size) == (
        "cuda",
        2,
        0.6,
        1024,
    )
    assert gpu.train.dynamic_bsz and gpu.train.max_token_len_per_device == 24576
    assert (npu.cluster.device, npu.train.ulysses_sp, npu.rollout.tp, npu.rollout.gpu_memory_utilization) == (
        "npu",
        4,
        4,
        0.3,
    )
    assert (npu.data.train_batch_size, npu.data.max_response_length, npu.train.param_offload) == (16, 32768, True)
    # switching the hardware parent gives the same NPU settings, with no copy of the recipe
    child = tmp_path / "qwen3_8b_a2.yaml"
    child.write_text("defaults: [recipes/qwen3_8b, hardware/ascend-a2]\n")
    via_parent = load_recipe(child)
    assert via_parent.model_dump(exclude={"cluster"}) == npu.model_dump(exclude={"cluster"})
    # the command line still wins over the device block
    assert load_recipe("qwen3_8b", ["cluster.device=npu", "rollout.tp=2"]).rollout.tp == 2


def test_seed_recipe_values_match_recipes_md():
    glm = load_recipe("glm5_2")
    assert glm.world_size == 512 and glm.cluster.devices_per_node == 16
    assert (glm.train.tp, glm.train.pp, glm.train.ep, glm.train.etp, glm.train.cp) == (8, 8, 64, 1, 1)
    assert (glm.rollout.tp, glm.rollout.dp, glm.rollout.ep, glm.rollout.max_model_len) == (8, 8, 64, 8192)
    assert glm.env["VERL_VLLM_ASCEND_GLM52_PATCH"] == "1"
    assert glm.algorithm.clip_ratio_high == 0.28 and glm.algorithm.kl_loss_coef == 0.002
    qwen35 = load_recipe("qwen3_5_122b_a10b_32k")
    assert (qwen35.train.tp, qwen35.train.pp, qwen35.train.cp, qwen35.train.ep) == (2, 4, 4, 16)
    assert qwen35.data.max_response_length == 32768 and qwen35.env["VLLM_USE_V1"] == "1"
    q30 = load_recipe("qwen3_30b_a3b")
    assert (q30.train.tp, q30.train.ep, q30.train.etp, q30.rollout.engine) == (4, 4, 4, "sglang")
    for name in ("glm5_2", "qwen3_5_122b_a10b_32k", "qwen3_30b_a3b"):
        assert load_recipe(name).env, f"{name}: an Ascend recipe sets its env explicitly"


def test_layering_records_where_each_key_came_from():
    merged, origins, files, name = merge_layers("glm5_2", ["rollout.n=4"])
    assert files == ["params/base.yaml", "params/hardware/ascend-a3.yaml", "params/recipes/glm5_2.yaml"]
    assert origins["cluster.devices_per_node"] == "params/hardware/ascend-a3.yaml"
    assert origins["rollout.n"].startswith("--set")
    assert merged["rollout"]["n"] == 4


def test_only_trl_recipes_carry_the_cpu_trainers_settings(tmp_path):
    """`local:` comes from params/engines/trl.yaml: verl recipes resolve without it, a trl recipe that forgets
    it is told which defaults to add, and a verl recipe that layers it is warned the section is ignored."""
    for name in ("glm5_2", "qwen3_5_122b_a10b_32k", "qwen3_30b_a3b", "qwen3_8b"):
        assert load_recipe(name).local is None
    assert load_recipe("tiny").local.hidden_size == 64
    bare = tmp_path / "bare_trl.yaml"
    bare.write_text("defaults: [base, hardware/cpu]\ntrain: {engine: trl}\nrollout: {engine: hf}\n")
    _, problems = check(bare)
    [missing] = [p for p in problems if p.key == "local"]
    assert missing.severity == "error" and "engines/trl" in missing.fix
    _, problems = check("tiny", ["train.engine=megatron"])
    [ignored] = [p for p in problems if p.key == "local"]
    assert ignored.severity == "warning" and "ignores it" in ignored.message
