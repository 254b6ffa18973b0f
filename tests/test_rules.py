"""Each validation rule, broken on purpose by a recipe that breaks exactly that rule, on more than one model.

The cases are the recipe faults verl's own pre-launch checks miss (TP not dividing KV heads, EP not dividing
the experts, rollout EP != TP x DP, mini-batch x n not divisible by DP, lengths over max_model_len, wrong
types, ...): each must be caught, by its rule id, before anything touches a cluster.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grpolab.rules.gate import check
from grpolab.rules.registry import check_rules

# a Gated DeltaNet model given by its config.json only (no card): the rules read its facts from the file
QWEN3_NEXT = str(Path(__file__).parent / "data" / "models" / "qwen3_next_80b_a3b")
# a model nobody has a card for, and no config.json on this machine
NO_CARD = ["model.path=acme-research/Nocard-14B-Instruct", "model.card=null"]
# reward and data faults written in tests/data/rewards (issue 32)
REWARDS = Path(__file__).parent / "data" / "rewards"


def _data(name: str) -> list[str]:
    return [f"data.train_files={REWARDS / name}", f"data.val_files={REWARDS / name}"]


# a clean separate_async launch (issue 42): the rollout-only pool, a network weight sync, rollout importance sampling
SEP = [
    "schedule.mode=separate_async",
    "schedule.rollout_nnodes=1",
    "schedule.sync_backend=nccl",
    "verl_overrides.algorithm.rollout_correction.rollout_is=token",
]
REWARD_MODEL = ["verl_overrides.reward.reward_model.enable=true"]
PD = ["schedule.switch.enable=true", "verl_overrides.actor_rollout_ref.rollout.disaggregation.enabled=true"]

CASES = {
    "world-divisible": [("glm5_2", ["train.cp=3", "model.use_remove_padding=true"]), ("qwen3_30b_a3b", ["train.cp=3"])],
    "expert-divisible": [("glm5_2", ["train.etp=2"]), ("qwen3_30b_a3b", ["train.etp=8"])],
    "heads-tp": [
        ("glm5_2", ["cluster.nnodes=96", "train.tp=3", "model.use_remove_padding=true"]),
        (
            "qwen3_8b",
            [
                "cluster.devices_per_node=6",
                "train.ulysses_sp=3",
                "data.train_batch_size=768",
                "algorithm.ppo_mini_batch_size=384",
            ],
        ),
    ],
    "kv-heads-tp": [("qwen3_5_122b_a10b_32k", ["train.tp=4"]), ("qwen3_30b_a3b", ["train.tp=8"])],
    "experts-ep": [
        ("glm5_2", ["cluster.nnodes=96", "train.ep=6", "data.train_batch_size=48", "algorithm.ppo_mini_batch_size=48"]),
        ("qwen3_30b_a3b", ["model.card=qwen3_8b"]),
    ],
    "pp-layers": [
        ("qwen3_5_122b_a10b_32k", ["train.vpp=5"]),
        ("qwen3_30b_a3b", ["train.pp=2", "train.vpp=5", "train.etp=2"]),
    ],
    "pp-layout": [
        ("glm5_2", ["train.pp_layout=Et*11|t*11|t*8|t*8|t*12|t*12|t*12|t*4L"]),
        ("qwen3_5_122b_a10b_32k", ["train.pp_layout=Et*12|t*12|t*12|t*11L"]),
    ],
    "rollout-world": [("qwen3_8b", ["rollout.dp=3"]), ("qwen3_30b_a3b", ["rollout.dp=3"])],
    "rollout-ep": [
        ("glm5_2", ["rollout.ep=32", "rollout.gpu_memory_utilization=0.9"]),
        ("qwen3_5_122b_a10b_32k", ["rollout.ep=8"]),
    ],
    "rollout-heads": [
        (
            "qwen3_8b",
            [
                "cluster.devices_per_node=6",
                "rollout.tp=3",
                "data.train_batch_size=768",
                "algorithm.ppo_mini_batch_size=384",
            ],
        ),
        (
            "qwen3_8b",
            [
                "model.card=qwen3_4b",
                "cluster.devices_per_node=6",
                "rollout.tp=6",
                "data.train_batch_size=768",
                "algorithm.ppo_mini_batch_size=384",
            ],
        ),
    ],
    "batch-divisible": [
        ("glm5_2", ["algorithm.micro_batch_size_per_device=3"]),
        ("qwen3_8b", ["data.train_batch_size=1020", "algorithm.ppo_mini_batch_size=255"]),
    ],
    "mini-batch": [
        ("glm5_2", ["algorithm.ppo_mini_batch_size=128"]),
        ("qwen3_30b_a3b", ["algorithm.ppo_mini_batch_size=12"]),
    ],
    "lengths": [("glm5_2", ["data.max_response_length=8192"]), ("qwen3_8b", ["data.max_response_length=40000"])],
    "learning-rate": [
        ("tiny", ["algorithm.lr=1000"]),
        ("qwen3_8b", ["algorithm.lr=1e-3"]),
        ("glm5_2", ["algorithm.lr=1e-9"]),
    ],
    "env-required": [
        ("glm5_2", ["env.VERL_VLLM_ASCEND_GLM52_PATCH=0"]),
        ("qwen3_30b_a3b", ["env.ASCEND_RT_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"]),
    ],
    "engine-support": [
        ("tiny", ["algorithm.loss_agg_mode=seq-mean-token-sum"]),
        ("qwen3_8b", ["rollout.engine=hf"]),
        ("glm5_2", ["cluster.device=cpu", "trainer.timeout_s=600"]),  # 7200 s is read by HCCL on NPU only
        ("qwen3_8b", ["train.engine=veomnii"]),  # not an engine verl 0.9.1 registers
        ("qwen3_8b", ["train.fsdp_strategy=fsdp3"]),  # not a strategy its FSDP engine accepts
    ],
    # engines verl registers whose layout the rules cannot reason about: a warning naming what was skipped
    "engine-layout": [
        ("qwen3_8b", ["train.engine=veomni"]),
        ("qwen3_8b", ["train.fsdp_strategy=fsdp_turbo"]),
        ("qwen3_30b_a3b", ["train.engine=torchtitan"]),
    ],
    "unknown-override": [
        ("glm5_2", ["train.transformer.use_flash_atn=true"]),
        ("qwen3_5_122b_a10b_32k", ["train.optimizer.overlap_cpu_optimizer_d2h=true"]),
    ],
    "memory": [("qwen3_30b_a3b", ["cluster.device_memory_gb=16"]), ("qwen3_8b", ["cluster.device_memory_gb=16"])],
    "verl-schema": [
        ("glm5_2", ["verl_overrides.trainer.val_befor_train=false"]),
        ("qwen3_8b", ["verl_overrides.actor_rollout_ref.actor.megatron.grad_offload=true"]),
    ],
    "override-shadows": [
        ("glm5_2", ["verl_overrides.actor_rollout_ref.rollout.tensor_model_parallel_size=16"]),
        ("qwen3_8b", ["verl_overrides.trainer.nnodes=2"]),
    ],
    "stack": [("glm5_2", ["stack.verl=0.8.0"]), ("qwen3_8b", ["stack.vllm=0.23.0@xyz"])],
    "model-card": [("qwen3_8b", NO_CARD), ("glm5_2", NO_CARD)],
    "schema": [
        ("glm5_2", ["rollout.gpu_memory_utilization=1.5"]),
        ("tiny", ["rollout.nn=4"]),
        ("qwen3_30b_a3b", ["train.tp=two"]),
    ],
    # learned from real failures (LEARNED_CHECKS in grpolab.rules.validate; more cases and known-good layouts: tests/test_field_rules.py)
    "rollout-node": [
        ("glm5_2", ["rollout.tp=32", "rollout.dp=2"]),
        ("qwen3_8b", ["cluster.nnodes=4", "rollout.tp=16", "rollout.dp=2"]),
    ],
    "dispatch-chunk": [
        ("qwen3_30b_a3b", ["rollout.n=5", "data.train_batch_size=12", "algorithm.ppo_mini_batch_size=12"]),
        ("qwen3_5_122b_a10b_32k", ["data.train_batch_size=18", "algorithm.ppo_mini_batch_size=6"]),
    ],
    "vpp-microbatches": [
        ("qwen3_5_122b_a10b_32k", ["train.vpp=2", "algorithm.ppo_mini_batch_size=2"]),
        ("qwen3_30b_a3b", ["train.pp=2", "train.vpp=2", "train.etp=2", "algorithm.micro_batch_size_per_device=64"]),
    ],
    "dynamic-batch": [
        ("qwen3_8b", ["train.max_token_len_per_device=2048"]),
        ("qwen3_5_122b_a10b_32k", ["train.dynamic_bsz=true", "train.max_token_len_per_device=8192"]),
    ],
    "seq-padding": [
        ("qwen3_5_122b_a10b_32k", ["data.max_response_length=32760"]),
        ("qwen3_30b_a3b", ["model.use_remove_padding=false", "data.max_response_length=8190"]),
    ],
    "linear-attention": [
        ("qwen3_5_122b_a10b_32k", ["rollout.tp=32", "rollout.ep=32"]),
        (
            "qwen3_30b_a3b",
            [
                f"model.path={QWEN3_NEXT}",
                "model.card=null",
                "train.tp=2",
                "train.sp=true",
                "train.cp=2",
                "stack.megatron-core=core_r0.16.0",
                "rollout.tp=8",  # an 80B model's rollout weights fit 8 devices (4 need 40 GB each: memory)
            ],
        ),
    ],
    "weight-bucket": [
        ("qwen3_5_122b_a10b_32k", ["rollout.update_weights_bucket_mb=2048"]),
        ("glm5_2", ["rollout.update_weights_bucket_mb=1024"]),
    ],
    "router-replay": [
        ("glm5_2", ["rollout.routing_replay=false"]),
        ("qwen3_30b_a3b", ["train.router_replay=R2", "rollout.routing_replay=true"]),
    ],
    "rollout-backend": [
        ("qwen3_30b_a3b", ["rollout.attention_backend=null"]),
        ("qwen3_8b", ["cluster.device=npu", "rollout.engine=sglang"]),
    ],
    "deprecated-key": [
        ("glm5_2", ["verl_overrides.actor_rollout_ref.actor.ppo_micro_batch_size=4"]),
        ("qwen3_8b", ["verl_overrides.actor_rollout_ref.rollout.log_prob_micro_batch_size=8"]),
    ],
    "startup-timeout": [
        ("glm5_2", ["env.HCCL_CONNECT_TIMEOUT=600"]),
        ("qwen3_5_122b_a10b_32k", ["env.HCCL_CONNECT_TIMEOUT=300"]),
    ],
    # a field the installed verl's (0.9.1's) workers read nothing for, or a value its code rejects
    "verl-version": [("qwen3_8b", ["trainer.timeout_s=1800"]), ("glm5_2", ["trainer.timeout_s=7300"])],
    "known-bad": [
        ("qwen3_5_122b_a10b_32k", ["rollout.enforce_eager=true"]),
        ("glm5_2", ["env.HCCL_OP_EXPANSION_MODE=AIV", "rollout.enforce_eager=true"]),
    ],
    # grpolab.rules.checkpoint_space: petabytes of kept checkpoints fit no disk the test runs on
    "checkpoint-space": [
        ("qwen3_8b", ["trainer.ckpt_dir=/", "trainer.total_steps=1000000", "trainer.keep_ckpts=100000"]),
        (
            "glm5_2",
            ["trainer.ckpt_dir=/", "trainer.save_freq=1", "trainer.total_steps=5000", "trainer.keep_ckpts=1000"],
        ),
    ],
    "checkpoint-keep": [
        ("tiny", ["trainer.test_freq=-1"]),
        ("qwen3_8b", ["trainer.keep_best_metric=val-core/x/y", "trainer.test_freq=-1"]),
    ],
    "reward-manager": [("qwen3_8b", ["reward.manager=batch"]), ("glm5_2", ["reward.manager=prime"])],
    "reward-function": [
        ("qwen3_8b", [f"reward.function={REWARDS / 'no_such_reward.py'}"]),
        ("qwen3_30b_a3b", [f"reward.function={REWARDS / 'bad_signature.py'}:score"]),
    ],
    "reward-signature": [
        ("qwen3_8b", [f"reward.function={REWARDS / 'bad_signature.py'}"]),
        ("glm5_2", [f"reward.function={REWARDS / 'bad_signature.py'}:compute_score"]),
    ],
    "data-source": [("qwen3_8b", _data("unknown_source.jsonl")), ("qwen3_30b_a3b", _data("unknown_source.jsonl"))],
    "data-file": [("qwen3_8b", _data("not_verl_format.csv")), ("glm5_2", _data("not_verl_format.csv"))],
    "data-columns": [("qwen3_8b", _data("raw_columns.jsonl")), ("qwen3_30b_a3b", _data("raw_columns.jsonl"))],
    "data-prompt": [("qwen3_8b", _data("string_prompt.jsonl")), ("glm5_2", _data("string_prompt.jsonl"))],
    "data-values": [("qwen3_8b", _data("null_ground_truth.jsonl")), ("glm5_2", _data("null_ground_truth.jsonl"))],
    "data-images": [
        ("qwen3_8b", _data("image_without_placeholder.jsonl")),
        ("qwen3_30b_a3b", _data("image_without_placeholder.jsonl")),
    ],
    # each of verl's separate_async start-up assertions, and the mode's own checks (grpolab.rules.schedule)
    "async-mode": [
        ("qwen3_8b", [*SEP, "verl_overrides.trainer.use_v1=false"]),
        ("qwen3_30b_a3b", [*SEP, "schedule.mode=sync"]),  # the rollout-only nodes would idle: a warning
    ],
    "async-sync-step": [
        ("qwen3_8b", [*SEP, "schedule.parameter_sync_step=3"]),
        ("qwen3_30b_a3b", [*SEP, "schedule.parameter_sync_step=2"]),
    ],
    "async-rollout-pool": [
        ("qwen3_8b", [*SEP, "schedule.rollout_nnodes=0"]),
        ("qwen3_30b_a3b", [*SEP, "schedule.rollout_devices_per_node=0"]),
        ("qwen3_8b", [*SEP, "schedule.rollout_devices_per_node=6", "rollout.tp=4"]),  # 6 devices, replicas of 4
    ],
    "async-sync-backend": [
        ("qwen3_8b", [*SEP, "schedule.sync_backend=naive"]),
        ("qwen3_30b_a3b", [*SEP, "schedule.sync_backend=gloo"]),
    ],
    "async-reward-pool": [("qwen3_8b", [*SEP, *REWARD_MODEL]), ("qwen3_30b_a3b", [*SEP, *REWARD_MODEL])],
    "async-switch": [("qwen3_8b", [*SEP, *PD]), ("qwen3_30b_a3b", [*SEP, *PD])],
    "async-correction": [
        ("qwen3_8b", [*SEP, "verl_overrides.algorithm.rollout_correction.rollout_is=null"]),
        ("qwen3_30b_a3b", ["schedule.mode=colocate_async"]),
    ],
}
PARAMS = [
    pytest.param(rule, name, ov, id=f"{rule}-{name}-{i}")
    for rule, cases in CASES.items()
    for i, (name, ov) in enumerate(cases)
]


def test_every_rule_has_cases_on_two_models():
    assert set(CASES) == set(check_rules())  # the others are `grpolab data`'s: tests/test_data.py
    for rule, cases in CASES.items():
        assert len({name for name, _ in cases}) >= 2 or rule == "rollout-heads", rule


@pytest.mark.parametrize("rule,name,overrides", PARAMS)
def test_each_rule_is_caught_alone(rule, name, overrides):
    recipe, problems = check(name, overrides)
    reported = {p.rule for p in problems if p.severity == "error"} | {p.rule for p in problems if p.rule == rule}
    assert reported == {rule}, [p.format() for p in problems]
    for p in problems:
        assert p.key and p.message and p.fix, p  # every problem names the key, says what is wrong and the fix
        json.dumps(p.to_dict())


def test_shipped_recipes_are_clean():
    for name in ("glm5_2", "qwen3_5_122b_a10b_32k", "qwen3_30b_a3b", "qwen3_8b", "tiny"):
        _, problems = check(name)
        assert not [p for p in problems if p.severity == "error"], name


def test_checks_learned_from_verl_launches_do_not_judge_the_trl_engine():
    # routing replay on and an attention backend for a vLLM rollout: verl's launches break on both (router-replay,
    # rollout-backend); the in-process TRL engine has neither, so a tiny recipe carrying them is not judged by them
    verl_only = ["rollout.routing_replay=true", "rollout.attention_backend=flashinfer"]
    _, on_verl = check("qwen3_8b", verl_only, verl=False)
    assert {"router-replay", "rollout-backend"} <= {p.rule for p in on_verl}
    _, on_trl = check("tiny", verl_only, verl=False)
    assert not {"router-replay", "rollout-backend"} & {p.rule for p in on_trl}, [p.format() for p in on_trl]


def test_rollout_ep_follows_verls_own_condition_for_tensorrt_llm():
    # verl's RolloutConfig: ep == tp x dp unless the rollout is TensorRT-LLM; moe_tensor_parallel_size > 1 only there
    moe_tp = "verl_overrides.+actor_rollout_ref.rollout.moe_tensor_parallel_size=2"
    _, found = check("qwen3_30b_a3b", [moe_tp])
    (problem,) = [p for p in found if p.severity == "error"]
    assert problem.rule == "rollout-ep" and "TensorRT-LLM" in problem.message and "trtllm" in problem.fix
    _, found = check("qwen3_30b_a3b", ["rollout.engine=trtllm", moe_tp], verl=False)
    assert "rollout-ep" not in {p.rule for p in found}
    replica_of_4 = ["rollout.tp=4", "rollout.dp=1", "rollout.ep=8"]  # 8 divides the 128 experts, but is not 4 x 1
    assert "rollout-ep" in {p.rule for p in check("qwen3_30b_a3b", replica_of_4, verl=False)[1]}
    trt = check("qwen3_30b_a3b", ["rollout.engine=trtllm", *replica_of_4], verl=False)[1]
    assert "rollout-ep" not in {p.rule for p in trt}, [p.format() for p in trt]


def test_all_problems_are_collected_at_once():
    _, problems = check("glm5_2", ["train.tp=6", "rollout.ep=32", "data.train_batch_size=60"])
    assert {"heads-tp", "world-divisible", "rollout-ep", "mini-batch"} <= {p.rule for p in problems}


def test_fix_proposes_the_nearest_valid_values():
    _, problems = check("glm5_2", ["train.tp=6"])
    heads = next(p for p in problems if p.rule == "heads-tp")
    assert "4, 8" in heads.fix
    _, problems = check("qwen3_5_122b_a10b_32k", ["train.tp=4"])
    assert "1, 2" in next(p for p in problems if p.rule == "kv-heads-tp").fix
    _, problems = check("glm5_2", ["rollout.ep=32", "rollout.gpu_memory_utilization=0.9"])
    assert "rollout.ep to 64" in next(p for p in problems if p.rule == "rollout-ep").fix
    _, problems = check("qwen3_30b_a3b", ["train.cp=3"])
    assert "cluster.nnodes: 3" in next(p for p in problems if p.rule == "world-divisible").fix


def test_glm_dsa_stage_rule_names_the_bad_layers():
    _, problems = check("glm5_2", ["train.pp_layout=Et*11|t*11|t*8|t*8|t*12|t*12|t*12|t*4L"])
    layout = next(p for p in problems if p.rule == "pp-layout")
    assert layout.message.endswith("start on layers 12")  # 1, 12, 23, 31, ...: only 12 breaks 3+4k
    assert "11" in layout.fix


def test_problems_name_the_file_that_set_the_key():
    _, problems = check("glm5_2", ["train.cp=3"])
    assert "--set train.cp=3" in problems[0].message
    _, problems = check("qwen3_30b_a3b", ["rollout.gpu_memory_utilization=0.2"])
    assert next(p for p in problems if p.rule == "memory").message.startswith("--set rollout.gpu_memory_utilization")
    _, problems = check("glm5_2", ["env.VERL_VLLM_ASCEND_GLM52_PATCH=0"])
    assert next(p for p in problems if p.rule == "env-required").message.startswith("--set")


def test_model_facts_from_config_json_and_text_config(tmp_path):
    model = tmp_path / "qwen35"
    model.mkdir()
    # Qwen3.5 MoE nests its facts under text_config; 40 heads do not fit rollout tp 16
    config = {
        "model_type": "qwen3_5_moe",
        "text_config": {
            "num_hidden_layers": 48,
            "hidden_size": 3072,
            "num_attention_heads": 40,
            "num_key_value_heads": 2,
            "num_experts": 256,
            "num_experts_per_tok": 8,
            "vocab_size": 248320,
            "max_position_embeddings": 262144,
        },
    }
    (model / "config.json").write_text(json.dumps(config))
    _, problems = check("qwen3_5_122b_a10b_32k", [f"model.path={model}", "model.card=null"])
    assert {p.rule for p in problems if p.severity == "error"} == {"rollout-heads"}
    # a path whose facts disagree with the card is an error
    _, problems = check("qwen3_5_122b_a10b_32k", [f"model.path={model}"])
    mismatch = [p for p in problems if p.key == "model.card"]
    assert mismatch and "num_heads = 40" in mismatch[0].message


def test_validation_imports_no_heavy_package():
    import subprocess
    import sys

    code = (
        "import sys; from grpolab.rules.gate import check; check('glm5_2', verl=False); "
        "print(sorted(m for m in ('torch', 'ray', 'verl', 'torch_npu', 'vllm') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_model_without_a_card_is_checked_without_it(cli, _isolated_runs):
    """`grpolab check` of a model nobody has a card for exits 0 with ONE warning naming the checks it skipped and
    how to add a card; the rules that need no card still run."""
    from grpolab.rules.registry import card_rules

    proc = cli("check", "qwen3_8b", *[a for o in NO_CARD for a in ("--set", o)], "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    problems = json.loads(proc.stdout)
    [warning] = [p for p in problems if p["rule"] == "model-card"]
    assert warning["severity"] == "warning" and "acme-research/Nocard-14B-Instruct" in warning["message"]
    assert all(rule in warning["message"] for rule in card_rules("all") + card_rules("part"))
    assert "grpolab card MODEL_DIR_OR_NAME" in warning["fix"] and "model.card" in warning["fix"]
    assert not [p for p in problems if p["severity"] == "error"]
    # a card-free rule still refuses what it refuses; a rule that needs the card says nothing
    _, found = check("qwen3_30b_a3b", NO_CARD + ["train.cp=3", "train.tp=3"], verl=False)
    assert {p.rule for p in found if p.severity == "error"} == {"world-divisible"}
    assert [p.rule for p in found].count("model-card") == 1
    # with a card (or a config.json) there is no such warning
    assert not [p for p in check("qwen3_8b", verl=False)[1] if p.rule == "model-card"]


def test_the_shared_maths_is_guarded_against_huge_inputs():
    """A typo of 10**24 must not hang `grpolab check` (the old copies looped up to 4 x the batch)."""
    import time

    from grpolab.rules import maths

    assert maths.divisors(12) == (1, 2, 3, 4, 6, 12) and maths.divisors(10**26) == () and maths.divisors(0) == ()
    assert maths.nearest(6, maths.divisors(64)) == [2, 4, 8]  # 4 and 8 are 2 away, then 2 (4 away)
    assert maths.listed([]) == "none" and maths.listed([4, 8]) == "4, 8"
    start = time.perf_counter()
    _, problems = check(
        "qwen3_8b",
        [
            "data.train_batch_size=800000000000000000000000",
            "algorithm.ppo_mini_batch_size=8",
            "verl_overrides.actor_rollout_ref.rollout.agent.num_workers=7",
        ],
        verl=False,
    )
    assert time.perf_counter() - start < 5
    [chunk] = [p for p in problems if p.rule == "dispatch-chunk"]
    assert "800000000000000000000016" in chunk.fix  # x 5 splits over 7 workers and the 8 dp groups


def test_registry_answers_what_the_planner_asks():
    """The planner screens with the registry's own helpers (plan/search.py and plan/hints.py call
    registry.problem_side, layout_bound and a rule's layout; the old planner.py's `_side` and layout test are gone): on
    every problem the test cases raise, those helpers answer what the planner's rule, written out here as it was,
    answered."""
    from grpolab.recipe.cards import model_facts
    from grpolab.rules import registry
    from grpolab.rules.validate import LAYOUT_FIX_RULES, layout_problems

    layout_keys = {f"train.{k}" for k in ("tp", "pp", "cp", "ep", "etp", "vpp", "pp_layout", "sp", "ulysses_sp")}
    layout_keys |= {"train.param_offload", "train.optimizer_offload", "rollout.tp", "rollout.dp", "rollout.ep"}

    def planner_side(p):  # the planner's own rule, written out
        rollout = ("rollout-world", "rollout-ep", "rollout-heads", "memory")
        return "rollout" if p.key.startswith("rollout.") and p.rule in rollout else "train"

    seen = 0
    for cases in CASES.values():
        for name, overrides in cases:
            recipe, problems = check(name, overrides, verl=False)
            if recipe is None:
                continue
            # the planner asks the side of the problems it screens layouts with, and of check's layout errors
            sided = layout_problems(recipe, model_facts(recipe)[0]) + [
                p for p in problems if p.rule in LAYOUT_FIX_RULES
            ]
            for p in sided:
                assert registry.problem_side(p.rule, p.key) == planner_side(p), p
                seen += 1
            for p in problems:
                planner_layout = p.rule in ("memory", "batch-divisible") or p.key in layout_keys
                assert (registry.layout_bound(p.rule) or p.key in layout_keys) == planner_layout, p
    assert seen > 20
    assert set(LAYOUT_FIX_RULES) == {r.id for r in registry.RULES if r.layout}


def test_the_learning_rate_rule_names_the_published_range_and_holds_for_every_recorded_public_launch():
    """lr 1000 on tiny (issue 44: a run that ended SUCCEEDED with its policy ruined) is a warning naming the highest
    published lr for the CPU trainer and its source; the shipped recipes and the lr of every one of the 62 recorded
    public verl launches (tests/data/corpus, inputs nobody here wrote) are within the range verl's engines take."""
    import re

    from grpolab.rules.learning_rate import FAR, published

    _, problems = check("tiny", ["algorithm.lr=1000"])
    (found,) = [p for p in problems if p.rule == "learning-rate"]
    assert found.severity == "warning" and found.key == "algorithm.lr" and found.value == 1000
    assert "1e+06 x above the highest learning rate published for train.engine trl" in found.message
    assert "docs/facts.md section 5" in found.message and "within 1e-06 - 0.001" in found.fix
    verl = [p.lr for p in published(True)]
    launches = sorted((Path(__file__).parent / "data" / "corpus" / "launches").glob("*.yaml"))
    lrs = [
        float(m)
        for path in launches
        for m in re.findall(r"actor_rollout_ref\.actor\.optim\.lr=([0-9.e+-]+)", path.read_text())
    ]
    assert len(lrs) >= 60  # nearly every launch sets it
    assert all(min(verl) / FAR <= lr <= max(verl) * FAR for lr in lrs), lrs
    assert min(lrs) >= min(verl) and max(lrs) <= max(verl)  # the table covers what was published
