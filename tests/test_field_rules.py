"""Checks learned from real failures (issue 13): known-good real layouts pass, and each class of field failure is
caught by its rule on the cases tests/test_rules.py does not cover (warnings, first/last pipeline layouts, the
rollout's pipeline split, config.json-only models, setuptools_scm versions, the stack rule table).

Every recipe here is a shipped recipe with `--set` overrides, so the checks run exactly as `grpolab check` runs
them (without composing against verl's Hydra config, which test_rules.py covers).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grpolab.recipe import memory, stack
from grpolab.recipe.cards import model_facts
from grpolab.recipe.loader import load_card, load_recipe
from grpolab.rules import linear_attention, pins
from grpolab.rules.checks import Checks
from grpolab.rules.gate import check
from grpolab.verl.render import render

MODELS = Path(__file__).parent / "data" / "models"
QWEN3_NEXT = str(MODELS / "qwen3_next_80b_a3b")
QWEN35_27B = str(MODELS / "qwen3_5_27b")
SEEDS = ("glm5_2", "qwen3_5_122b_a10b_32k", "qwen3_30b_a3b", "qwen3_8b", "tiny")
NEW_RULES = (
    "rollout-node",
    "dispatch-chunk",
    "vpp-microbatches",
    "dynamic-batch",
    "seq-padding",
    "linear-attention",
    "weight-bucket",
    "router-replay",
    "rollout-backend",
    "deprecated-key",
    "startup-timeout",
    "known-bad",
)


def problems(name: str, overrides=()):
    _, found = check(name, list(overrides), verl=False)
    return found


def errors(name: str, overrides=()) -> set[str]:
    return {p.rule for p in problems(name, overrides) if p.severity == "error"}


def by_rule(name: str, rule: str, overrides=()):
    return [p for p in problems(name, overrides) if p.rule == rule]


# ---------------------------------------------------------------------------------------------------- seeds
@pytest.mark.parametrize("name", SEEDS)
def test_seed_recipes_pass_every_new_rule_as_errors(name):
    bad = [p.format() for p in problems(name) if p.severity == "error"]
    assert not bad, bad


def test_seed_recipes_render_the_new_fields():
    glm = render(load_recipe("glm5_2"), "RUN")
    assert "actor_rollout_ref.rollout.enable_rollout_routing_replay=true" in glm.overrides
    assert "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=2048" in glm.overrides
    qwen35 = render(load_recipe("qwen3_5_122b_a10b_32k"), "RUN")
    assert "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=4096" in qwen35.overrides
    sglang = render(load_recipe("qwen3_30b_a3b"), "RUN")
    assert any(o.endswith("engine_kwargs.sglang.attention_backend=ascend") for o in sglang.overrides), sglang.overrides
    vllm = render(load_recipe("glm5_2", ["rollout.attention_backend=ascend"]), "RUN")
    assert not any("attention_backend=ascend" in o for o in vllm.overrides)


# ---------------------------------------------------------------------------------------------------- class 1
def test_rollout_tp_over_a_node_is_a_warning_when_dp_is_one():
    found = by_rule("qwen3_8b", "rollout-node", ["cluster.nnodes=2", "rollout.tp=16"])
    assert [p.severity for p in found] == ["warning"] and "spans 2 nodes" in found[0].message
    assert "rollout-node" not in {p.rule for p in problems("glm5_2")}  # tp 8 x dp 8 on 16-NPU nodes


def test_rollout_tp_not_dividing_the_node_with_dp_names_the_valid_sizes():
    found = by_rule("glm5_2", "rollout-node", ["rollout.tp=32", "rollout.dp=2"])
    assert found[0].severity == "error" and "gpus_per_node % tensor_model_parallel_size" in found[0].message
    assert "16" in found[0].fix


# ---------------------------------------------------------------------------------------------------- class 2, 4
def test_dispatch_counts_the_agent_loop_workers():
    assert "dispatch-chunk" in errors(
        "qwen3_5_122b_a10b_32k", ["data.train_batch_size=18", "algorithm.ppo_mini_batch_size=6"]
    )
    # 18 x 5 = 90 splits over 6 workers
    assert "dispatch-chunk" not in errors(
        "qwen3_5_122b_a10b_32k",
        [
            "data.train_batch_size=18",
            "algorithm.ppo_mini_batch_size=6",
            "verl_overrides.actor_rollout_ref.rollout.agent.num_workers=6",
        ],
    )
    found = by_rule("glm5_2", "dispatch-chunk", ["verl_overrides.data.val_batch_size=30"])
    assert found and found[0].key == "verl_overrides.data.val_batch_size"


@pytest.mark.parametrize(
    "name,overrides",
    [
        ("qwen3_5_122b_a10b_32k", ["algorithm.ppo_mini_batch_size=1"]),  # 1 x 5 over train dp 2
        ("qwen3_30b_a3b", ["algorithm.micro_batch_size_per_device=3"]),  # 16 x 8 / dp 4 = 32 not a multiple of 3
    ],
)
def test_megatron_real_batch_is_mini_times_n_over_dp_times_micro(name, overrides):
    assert errors(name, overrides) == {"batch-divisible"}


# ---------------------------------------------------------------------------------------------------- class 3
def test_vpp_good_layout_passes():
    assert not errors("qwen3_5_122b_a10b_32k", ["train.vpp=2"])  # 16 x 5 / 2 = 40 micro-batches, pp 4
    found = by_rule("qwen3_5_122b_a10b_32k", "vpp-microbatches", ["train.vpp=2", "algorithm.ppo_mini_batch_size=2"])
    assert "= 5)" in found[0].message and "8, 16" in found[0].fix


# ---------------------------------------------------------------------------------------------------- class 5
def test_dynamic_batch_budget_multiplies_by_cp():
    good = ["train.dynamic_bsz=true", "train.max_token_len_per_device=9216"]  # 9216 x cp 4 = 36864 = 4096 + 32768
    assert not errors("qwen3_5_122b_a10b_32k", good)
    found = by_rule(
        "qwen3_5_122b_a10b_32k", "dynamic-batch", ["train.dynamic_bsz=true", "train.max_token_len_per_device=9215"]
    )
    assert "9216" in found[0].fix
    assert "dynamic-batch" in errors("glm5_2", ["train.dynamic_bsz=true", "train.max_token_len_per_device=1024"])


# ---------------------------------------------------------------------------------------------------- class 6
def test_sequence_parallel_reads_an_int_or_a_bool():
    recipe = load_recipe("qwen3_30b_a3b")
    assert recipe.sequence_parallel
    assert not load_recipe("qwen3_30b_a3b", ["train.sp=false"]).sequence_parallel
    object.__setattr__(recipe.train, "sp", True)  # the bool form (Megatron sequence parallel on)
    assert recipe.sequence_parallel
    object.__setattr__(recipe.train, "sp", False)
    assert not recipe.sequence_parallel


def test_padding_alignment_good_and_bad():
    assert not errors("qwen3_5_122b_a10b_32k")  # 4096 + 32768 = 36864 = 16 x 2304 (tp 2 x cp 4 x 2)
    found = by_rule("qwen3_5_122b_a10b_32k", "seq-padding", ["data.max_response_length=32760"])
    assert "tp x cp x 2 = 16" in found[0].message and "32768" in found[0].fix
    assert "seq-padding" not in errors(
        "qwen3_5_122b_a10b_32k", ["model.use_remove_padding=true", "data.max_response_length=32760"]
    )


# ---------------------------------------------------------------------------------------------------- class 7
def test_gated_delta_net_cp_needs_megatron_core_018():
    assert not errors("qwen3_5_122b_a10b_32k")  # CP 4 on core_r0.18.0
    found = by_rule("qwen3_5_122b_a10b_32k", "linear-attention", ["stack.megatron-core=core_r0.16.0"])
    assert found[0].severity == "error" and "Gated delta net does not support context parallel" in found[0].message
    assert "Megatron-LM issue 3883" in found[0].message
    assert not by_rule(
        "qwen3_5_122b_a10b_32k",
        "linear-attention",
        ["stack.megatron-core=core_r0.16.0", "train.cp=1", "train.pp=8", "algorithm.ppo_mini_batch_size=8"],
    )
    unpinned = load_recipe("qwen3_5_122b_a10b_32k")
    unpinned.stack.pop("megatron-core")
    facts, _ = model_facts(unpinned)
    c = Checks(unpinned, facts)
    linear_attention.linear_attention(c)
    assert c.problems and c.problems[0].severity == "warning"


def test_linear_heads_from_config_json_only():
    facts, found = model_facts(load_recipe("qwen3_30b_a3b", [f"model.path={QWEN3_NEXT}", "model.card=null"]))
    assert not found and (facts.linear_num_key_heads, facts.linear_num_value_heads) == (16, 32)
    assert facts.full_attention_interval == 4


# ---------------------------------------------------------------------------------------------------- class 8
def test_dsa_rule_applies_to_training_even_split_and_rollout_split():
    found = by_rule("glm5_2", "pp-layout", ["train.pp_layout=null", "train.pp=2"])
    assert found and found[0].key == "train.pp" and "[40]" in found[0].message  # 78 / 2: stage 2 starts on 40
    pp2 = ["verl_overrides.actor_rollout_ref.rollout.pipeline_model_parallel_size=2"]
    found = by_rule("glm5_2", "pp-layout", pp2)
    assert found and "rollout" in found[0].key and "[40]" in found[0].message
    # an explicit vLLM partition whose second stage starts on layer 43 = 3 + 4 x 10 is fine
    assert not by_rule("glm5_2", "pp-layout", pp2 + ["env.VLLM_PP_LAYER_PARTITION=42,36"])
    assert not by_rule("glm5_2", "pp-layout")


# ---------------------------------------------------------------------------------------------------- class 9
FIRST, LAST = (
    "train.transformer.num_layers_in_first_pipeline_stage",
    "train.transformer.num_layers_in_last_pipeline_stage",
)
Q235 = ["model.card=qwen3_235b_a22b", "cluster.nnodes=16", "train.pp=16", "rollout.dp=16", "rollout.ep=64"]


@pytest.mark.parametrize(
    "name,overrides",
    [
        ("qwen3_30b_a3b", Q235 + [f"{FIRST}=5", f"{LAST}=5"]),  # 94 layers, PP 16: 5 + 14 x 6 + 5
        ("qwen3_5_122b_a10b_32k", [f"{FIRST}=11", f"{LAST}=13"]),  # 48 layers, PP 4: 11 + 2 x 12 + 13
    ],
)
def test_first_last_stage_layouts_are_valid(name, overrides):
    assert "pp-layers" not in errors(name, overrides)


@pytest.mark.parametrize(
    "name,overrides",
    [
        ("qwen3_30b_a3b", Q235),  # 94 % 16
        ("qwen3_30b_a3b", Q235 + [f"{FIRST}=5", f"{LAST}=4"]),  # 85 over 14 middle stages
        ("qwen3_5_122b_a10b_32k", [f"{FIRST}=11", f"{LAST}=12"]),  # 25 over 2
        ("qwen3_5_122b_a10b_32k", [f"{FIRST}=11", f"{LAST}=13", "train.vpp=2"]),  # 11 not divisible by vpp 2
    ],
)
def test_first_last_stage_layouts_that_do_not_add_up(name, overrides):
    assert "pp-layers" in errors(name, overrides)


# ---------------------------------------------------------------------------------------------------- class 10
def test_weight_bucket_on_a_config_json_model():
    base = [f"model.path={QWEN35_27B}", "model.card=null"]
    found = by_rule("qwen3_8b", "weight-bucket", base)  # verl issue 5779: [248320, 5120] bf16 = 2425 MiB
    assert found and "2425 MiB" in found[0].message and "2560" in found[0].fix
    assert found[0].severity == "warning"  # verl 0.9.1 sends it on its own over CUDA IPC
    # verl issue 5952: shared memory (qwen3_8b's NPU variant sets 4096 MB, as its upstream script does)
    npu = by_rule("qwen3_8b", "weight-bucket", base + ["cluster.device=npu", "rollout.update_weights_bucket_mb=2048"])
    assert npu and npu[0].severity == "error"
    assert not by_rule("qwen3_8b", "weight-bucket", base + ["rollout.update_weights_bucket_mb=2560"])
    # the escape hatch cannot slip a value past the rule: it shadows the field, and the gate refuses that
    assert by_rule(
        "qwen3_5_122b_a10b_32k",
        "override-shadows",
        ["verl_overrides.actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=2048"],
    )


# ---------------------------------------------------------------------------------------------------- class 11
def test_router_replay_combinations():
    assert not by_rule("glm5_2", "router-replay")  # R3 + rollout routing replay
    assert not by_rule("qwen3_30b_a3b", "router-replay", ["train.router_replay=R2"])
    found = by_rule("qwen3_30b_a3b", "router-replay", ["rollout.routing_replay=true"])
    assert [p.severity for p in found] == ["warning"]
    old_vllm = by_rule("glm5_2", "known-bad", ["stack.vllm=0.21.0"])
    assert old_vllm and "vLLM >= 0.22.0" in old_vllm[0].message


# ---------------------------------------------------------------------------------------------------- class 12
def test_attention_backend_per_device():
    assert not by_rule("qwen3_30b_a3b", "rollout-backend")
    found = by_rule(
        "qwen3_30b_a3b",
        "rollout-backend",
        ["cluster.device=cuda", "cluster.hardware=gpu-h100", "env.ASCEND_RT_VISIBLE_DEVICES=0"],
    )
    assert found and found[0].severity == "error"
    found = by_rule("glm5_2", "rollout-backend", ["rollout.attention_backend=ascend"])
    assert [p.severity for p in found] == ["warning"]


# ---------------------------------------------------------------------------------------------------- class 13
def test_deprecated_key_alone_or_beside_its_replacement():
    both = ["verl_overrides.critic.ppo_micro_batch_size=8", "verl_overrides.critic.ppo_micro_batch_size_per_gpu=1"]
    assert [p.severity for p in by_rule("qwen3_8b", "deprecated-key", both)] == ["error"]
    alone = by_rule("qwen3_8b", "deprecated-key", ["verl_overrides.critic.ppo_micro_batch_size=8"])
    assert [p.severity for p in alone] == ["warning"]


# ---------------------------------------------------------------------------------------------------- class 14
def test_startup_timeouts_scale_with_model_and_cluster(verl_at):
    assert not by_rule("glm5_2", "startup-timeout")  # 7200 s and HCCL_CONNECT_TIMEOUT 7200
    found = by_rule("qwen3_5_122b_a10b_32k", "startup-timeout")
    # verl 0.9.1's workers read no timeout key: raising trainer.timeout_s would do nothing, so it is not the fix
    assert {p.key for p in found} == {"env.HCCL_CONNECT_TIMEOUT"}
    verl_at("0.7.1")  # whose workers pass actor_rollout_ref.nccl_timeout to the process group
    found = by_rule("qwen3_5_122b_a10b_32k", "startup-timeout")
    assert {p.key for p in found} == {"trainer.timeout_s", "env.HCCL_CONNECT_TIMEOUT"}
    assert not by_rule(
        "qwen3_5_122b_a10b_32k", "startup-timeout", ["cluster.nnodes=2", "train.ep=8", "rollout.ep=16"]
    )  # 32 devices
    assert not by_rule("qwen3_8b", "startup-timeout", ["cluster.nnodes=8"])  # 8B


# ---------------------------------------------------------------------------------------------------- class 15
def test_aiv_hang_needs_every_condition():
    assert not by_rule("qwen3_5_122b_a10b_32k", "known-bad")  # graph mode
    assert not by_rule(
        "qwen3_5_122b_a10b_32k", "known-bad", ["rollout.enforce_eager=true", "env.HCCL_OP_EXPANSION_MODE=HOST"]
    )
    found = by_rule("qwen3_5_122b_a10b_32k", "known-bad", ["rollout.enforce_eager=true"])
    assert "vllm-ascend issue 14928" in found[0].message and found[0].key == "env.HCCL_OP_EXPANSION_MODE"


def test_stack_rule_table_entries_have_sources_and_known_conditions():
    recipe = load_recipe("glm5_2")
    facts, _ = model_facts(recipe)
    for entry in pins.stack_rules():
        assert {"id", "when", "severity", "key", "message", "fix", "source"} <= set(entry), entry
        assert entry.get("rule", "known-bad") in NEW_RULES + ("stack",)
        for name, want in entry["when"].items():
            pins.condition(recipe, facts, name, want)  # raises on an unknown condition


# ---------------------------------------------------------------------------------------------------- class 16
def test_stack_pin_compares_the_setuptools_scm_commit():
    pin = stack.parse_pin("vllm-ascend", "0.23.0@dc55ef82")
    ok, why = stack.matches(pin, "0.23.1.dev12+gdc55ef82a", None)
    assert ok and "dc55ef82a" in why
    ok, why = stack.matches(pin, "0.23.1.dev0+g5cb98caaa.d20260915", None)  # vllm-ascend issue 16559
    assert not ok and "pinned dc55ef82" in why
    assert stack.scm_commit("0.23.0") is None


def test_glm_pins_the_vllm_ascend_stack():
    assert not by_rule("glm5_2", "stack")
    found = by_rule("glm5_2", "stack", ["stack.torch_npu=2.9.0"])
    assert found and found[0].severity == "error" and "2.10.0.post4" in found[0].fix
    assert {p.key for p in by_rule("qwen3_8b", "stack", ["cluster.device=npu", "stack.triton-ascend=3.2.2"])} == set()


# ---------------------------------------------------------------------------------------------------- model facts
def test_config_head_dim_wins_and_mla_kv_cache_is_576_per_layer(tmp_path):
    glm = load_card("glm5_2")
    assert memory.kv_bytes_per_token(glm, 2) == 78 * 576 * 2  # not 2 x 64 KV heads x 192
    qwen35 = load_card("qwen3_5_122b_a10b")
    assert memory.kv_bytes_per_token(qwen35, 2) == 12 * 2 * 2 * 256 * 2  # 12 full-attention layers only
    model = tmp_path / "qwen3_8b_like"
    model.mkdir()
    (model / "config.json").write_text(
        '{"model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 4096, '
        '"num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 96, '
        '"vocab_size": 151936}'
    )
    facts, found = model_facts(load_recipe("qwen3_8b", [f"model.path={model}"]))
    assert facts.head_dim == 96 and not found  # the card says 128; config.json wins


# ---------------------------------------------------------------------------------------------------- docs
def test_docs_rules_md_documents_the_new_rules():
    """The learned rules stand in docs/rules.md with their reports (tests/test_project.py: the file is current)."""
    from grpolab.rules.docs import markdown
    from grpolab.rules.registry import RULES

    documented = {r.id for r in RULES if r.doc and r.source}
    assert set(NEW_RULES) <= documented
    text = markdown()
    for rule in NEW_RULES:
        assert f"| `{rule}` |" in text
    for entry in pins.stack_rules():
        assert entry["id"] in text and entry["source"] in text


def test_aiv_is_not_suggested_where_it_hangs():
    eager = ["rollout.enforce_eager=true"]
    assert not [p for p in problems("glm5_2", eager) if p.key == "env.HCCL_OP_EXPANSION_MODE"]
    assert [p for p in problems("glm5_2") if p.key == "env.HCCL_OP_EXPANSION_MODE" and p.severity == "warning"]


def test_startup_timeout_reads_the_rendered_nccl_timeout(verl_at):
    verl_at("0.7.1")  # the one version whose workers read it
    assert by_rule("glm5_2", "startup-timeout", ["verl_overrides.actor_rollout_ref.nccl_timeout=600"])


def test_required_env_has_one_table(monkeypatch):
    """check's env rules, the start-up timeout minimum and preflight's per-node variables read one table."""
    from dataclasses import replace

    from grpolab.preflight.spec import required_env
    from grpolab.rules import env

    node_vars = [n.var for n in env.ENV_NEEDS if n.value is None and n.minimum is None]
    assert [v for v, _, _ in required_env(load_recipe("glm5_2"))] == node_vars  # 64 nodes of NPUs: every one
    assert not by_rule("glm5_2", "startup-timeout")  # HCCL_CONNECT_TIMEOUT 7200
    raised = tuple(replace(n, minimum=7300) if n.minimum else n for n in env.ENV_NEEDS)
    monkeypatch.setattr(env, "ENV_NEEDS", raised)
    found = by_rule("glm5_2", "startup-timeout")
    assert [p.key for p in found] == ["env.HCCL_CONNECT_TIMEOUT"] and '"7300"' in found[0].fix
    quiet = tuple(replace(n, when=lambda r, f: False) if n.var == "HCCL_SOCKET_IFNAME" else n for n in raised)
    monkeypatch.setattr(env, "ENV_NEEDS", quiet)
    assert "HCCL_SOCKET_IFNAME" not in [v for v, _, _ in required_env(load_recipe("glm5_2"))]


# ---------------------------------------------------------------------------------------------------- class 12
SGLANG_KEYS = {  # where a recipe can name SGLang's attention backends (all render into engine_kwargs.sglang)
    "rollout.engine_kwargs.attention_backend": "fa3",
    "rollout.engine_kwargs.prefill_attention_backend": "flashinfer",
    "rollout.engine_kwargs.decode_attention_backend": "triton",
    "rollout.engine_kwargs.mm_attention_backend": "fa3",
    "verl_overrides.actor_rollout_ref.rollout.engine_kwargs.sglang.attention_backend": "trtllm_mha",
}


def test_a_cuda_only_backend_on_npu_is_refused_wherever_it_is_set():
    # issue 21: this checked clean (rollout.attention_backend: ascend rendered over it)
    [found] = by_rule("qwen3_30b_a3b", "rollout-backend", ["rollout.engine_kwargs.attention_backend=fa3"])
    assert (found.severity, found.key, found.value) == ("error", "rollout.engine_kwargs.attention_backend", "fa3")
    assert "runs on cuda, not on Ascend NPUs" in found.message and "remove" in found.fix
    for key, value in SGLANG_KEYS.items():
        found = by_rule("qwen3_30b_a3b", "rollout-backend", [f"{key}={value}"])
        assert [(p.severity, p.key) for p in found] == [("error", key)], key
    # whatever its name: one the table does not know is refused on NPU too
    assert by_rule("qwen3_30b_a3b", "rollout-backend", ["rollout.attention_backend=fa9"])[0].severity == "error"
    # the NPU backends pass
    ok = ["rollout.engine_kwargs.prefill_attention_backend=ascend", "rollout.engine_kwargs.mm_attention_backend=sdpa"]
    assert not by_rule("qwen3_30b_a3b", "rollout-backend", ok)


def test_vllm_backends_per_device():
    # verl's Ascend example examples/ascend_extras/gspo_trainer/run_qwen3_32b_fsdp.sh exports XFORMERS: vllm-ascend
    # replaces it, so it is a warning, not a refusal
    for setting in ("env.VLLM_ATTENTION_BACKEND=XFORMERS", "rollout.engine_kwargs.attention_config.backend=flashinfer"):
        [found] = by_rule("glm5_2", "rollout-backend", [setting])
        assert found.severity == "warning" and "vllm-ascend replaces" in found.message, setting
    assert not by_rule("glm5_2", "rollout-backend", ["env.VLLM_ATTENTION_BACKEND=auto"])
    assert not by_rule("qwen3_8b", "rollout-backend", ["env.VLLM_ATTENTION_BACKEND=flash_attn"])  # upper-cased
    assert not by_rule("qwen3_8b", "rollout-backend", ["rollout.engine_kwargs.attention_backend=FLASHINFER"])
    [cpu] = by_rule("qwen3_8b", "rollout-backend", ["env.VLLM_ATTENTION_BACKEND=CPU_ATTN"])
    assert cpu.severity == "error" and cpu.key == "env.VLLM_ATTENTION_BACKEND"
    [unknown] = by_rule("qwen3_8b", "rollout-backend", ["rollout.engine_kwargs.attention_backend=fa3"])
    assert unknown.severity == "warning" and "not one of vLLM's" in unknown.message  # fa3 is SGLang's name


def test_attention_backend_table_is_consistent():
    from grpolab.rules.backends import table, table_faults

    assert table_faults() == []
    assert table()["sglang"]["npu"]["backends"] == ["ascend"]
    assert {"fa3", "flashinfer", "triton", "ascend"} <= set(table()["sglang"]["backends"])
    assert {"FLASH_ATTN", "FLASHINFER", "XFORMERS", "TRITON_ATTN"} <= set(table()["vllm"]["backends"])
