"""The local CPU trainer (`python -m grpolab.local.train`): a real short run, the recipe mapping, the reward.

The run test starts the real entry point in a subprocess (tiny model built into a temporary cache, TRL's
GRPOTrainer, a few steps) and reads what it wrote: verl-format metrics with verl's names and checkpoints in verl's
layout; then resumes from the first checkpoint in another run directory and gets the uninterrupted run's steps back.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grpolab.local import checkpoint, metrics, task
from grpolab.local.mapping import grpo_config_kwargs, settings_from_recipe, unsupported
from grpolab.recipe.loader import load_recipe, recipe_dict

ROOT = Path(__file__).resolve().parents[1]


def tiny_recipe_dict(**changes) -> dict:
    """The shipped tiny recipe as a plain nested dict (what `unsupported` and the mapping read), with changes
    given as section__key=value; clip_ratio_high 0.28 and seed 3 make the mapping visible in the tests."""
    recipe = recipe_dict(load_recipe("tiny", ["algorithm.clip_ratio_high=0.28", "trainer.seed=3"]))
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        recipe[section][key] = value
    return recipe


# ------------------------------------------------------------------------------------------ reward, task


def test_correct_answer_with_eos_beats_without() -> None:
    with_eos = task.score("12", True, "12")
    without = task.score("12", False, "12")
    assert with_eos == 1.0
    assert without < with_eos


def test_wrong_answer_scores_low() -> None:
    assert task.score("13", True, "12") <= 0.1
    assert task.score("", True, "12") == 0.0
    assert task.score("", False, "12") == 0.0
    assert task.score("1", True, "12") <= 0.1  # a prefix of the answer is still wrong
    # a wrong answer of the wrong size earns less than one of the right size
    assert task.score("7", True, "12") < task.score("13", True, "12")


def test_reward_reads_eos_from_token_ids() -> None:
    from grpolab.local.tiny import build_tokenizer

    tok = build_tokenizer()
    reward = task.ArithReward(tok)
    ids = lambda text: tok(text, add_special_tokens=False).input_ids  # noqa: E731
    eos = tok.eos_token_id
    completions = [ids("12") + [eos], ids("12+"), ids("12"), ids("13") + [eos], ids("=") + [eos]]
    scores = reward(
        prompts=["5+7="] * 5, completions=["12", "12+", "12", "13", "="], completion_ids=completions, answer=["12"] * 5
    )
    assert scores[0] == 1.0
    assert scores[1] < scores[0] and scores[2] < scores[0]
    assert scores[3] <= 0.1 and scores[4] == 0.0


def tiny_data() -> tuple[list[task.Problem], list[task.Problem]]:
    """tiny's train and validation problems, read by the trainer from the files its recipe names."""
    from grpolab.local.task import load_data

    return load_data(settings_from_recipe(load_recipe("tiny")))


def test_tinys_validation_is_held_out_and_every_twin_is_trained() -> None:
    train, val = tiny_data()
    assert len(val) == 30 and len(train) == 70 and {p.data_source for p in train + val} == {"arith"}
    assert not {p.prompt for p in train} & {p.prompt for p in val}
    twin = lambda p: "+".join(reversed(p.prompt[:-1].split("+"))) + "="  # noqa: E731 - a+b= -> b+a=
    assert all(twin(p) != p.prompt and twin(p) in {q.prompt for q in train} for p in val)
    assert all(int(p.answer) == sum(map(int, p.prompt[:-1].split("+"))) for p in train + val)
    assert [p.extra_info["index"] for p in val] == list(range(30))  # verl's extra_info, passed to the reward


def test_the_trainer_refuses_rows_it_cannot_use(tmp_path: Path) -> None:
    row = {
        "data_source": "arith",
        "prompt": [{"role": "user", "content": "1+2="}],
        "reward_model": {"ground_truth": "3"},
    }
    for bad, words in [
        ({**row, "prompt": "1+2="}, "column 'prompt' is '1+2='"),
        ({**row, "prompt": [{"role": "system", "content": "x"}, *row["prompt"]]}, "one message"),
        ({k: v for k, v in row.items() if k != "reward_model"}, "no reward_model.ground_truth"),
    ]:
        (tmp_path / "t.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(bad) + "\n")
        with pytest.raises(ValueError, match="data.train_files .*t.jsonl: row 1: ") as caught:
            task.load_problems([str(tmp_path / "t.jsonl")], "data.train_files", "prompt")
        assert words in str(caught.value) and "grpolab data prepare" in str(caught.value)
    with pytest.raises(ValueError, match="no such file"):
        task.load_problems([str(tmp_path / "none.parquet")], "data.val_files", "prompt")


def test_warmup_never_sees_validation_problems() -> None:
    train, val = tiny_data()
    pairs = task.warmup_pairs(train, 2000, seed=1)
    assert not {prompt for prompt, _ in pairs} & {p.prompt for p in val}
    assert all(target.isdigit() for _, target in pairs)


# ---------------------------------------------------------------------------------------------- mapping


def test_mapping_module_imports_no_torch() -> None:
    code = (
        "import sys, grpolab.local.mapping, grpolab.local.task, grpolab.local.metrics; "
        "print('torch' in sys.modules or 'trl' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_recipe_maps_onto_grpo_config() -> None:
    s = settings_from_recipe(tiny_recipe_dict())
    assert (s.n, s.lr, s.kl_loss_coef, s.clip_ratio_high, s.seed) == (8, 1e-3, 0.04, 0.28, 3)
    kw = grpo_config_kwargs(s, "/tmp/out")
    assert kw["num_generations"] == 8
    assert kw["beta"] == 0.04
    assert kw["use_bias_correction_kl"] is False  # verl's low_var_kl has no importance-ratio weighting; TRL's is on
    assert (kw["epsilon"], kw["epsilon_high"]) == (0.2, 0.28)
    assert kw["loss_type"] == "grpo"
    assert kw["learning_rate"] == 1e-3
    assert kw["max_completion_length"] == 4
    assert kw["generation_batch_size"] == 64 and kw["per_device_train_batch_size"] == 64
    assert kw["gradient_accumulation_steps"] == 1 and kw["max_steps"] == 1200
    assert kw["top_k"] == 0 and kw["seed"] == 3
    assert kw["delta"] == 3.0 and kw["entropy_coef"] == 0.0  # verl's dual clip and entropy bonus
    # tiny turns it off (TRL's default is on: it also generates without the KV cache, 30 % slower a step)
    assert kw["gradient_checkpointing"] is False
    on = settings_from_recipe(tiny_recipe_dict(train__gradient_checkpointing=True))
    assert grpo_config_kwargs(on, "/tmp/out")["gradient_checkpointing"] is True


@pytest.mark.parametrize(
    "mode, loss_type", [("token-mean", "dapo"), ("seq-mean-token-mean", "grpo"), ("seq-mean-token-sum-norm", "dr_grpo")]
)
def test_loss_agg_mode_maps(mode: str, loss_type: str) -> None:
    s = settings_from_recipe(tiny_recipe_dict(algorithm__loss_agg_mode=mode))
    assert grpo_config_kwargs(s, "/tmp/out")["loss_type"] == loss_type


def test_kl_off_and_mini_batches() -> None:
    s = settings_from_recipe(
        tiny_recipe_dict(
            algorithm__use_kl_loss=False,
            data__train_batch_size=16,
            algorithm__ppo_mini_batch_size=4,
            algorithm__micro_batch_size_per_device=16,
        )
    )
    kw = grpo_config_kwargs(s, "/tmp/out")
    assert kw["beta"] == 0.0
    # 16 prompts x 8 generated per step; 4 optimizer updates of 4 prompts x 8, each two passes of 16
    assert kw["generation_batch_size"] == 128
    assert kw["per_device_train_batch_size"] == 16 and kw["gradient_accumulation_steps"] == 2
    assert s.updates_per_step == 4 and kw["max_steps"] == 1200 * 4


def test_grpo_config_accepts_the_kwargs(tmp_path: Path) -> None:
    from trl import GRPOConfig

    s = settings_from_recipe(
        tiny_recipe_dict(
            data__train_batch_size=16, algorithm__ppo_mini_batch_size=4, algorithm__micro_batch_size_per_device=16
        )
    )
    config = GRPOConfig(**grpo_config_kwargs(s, str(tmp_path)))
    assert config.generation_batch_size == 128 and config.steps_per_generation == 8
    assert config.gradient_checkpointing is False and config.use_bias_correction_kl is False
    assert config.num_generations == 8 and config.loss_type == "grpo"


def test_unsupported_is_empty_for_the_tiny_recipe() -> None:
    assert unsupported(tiny_recipe_dict()) == []


@pytest.mark.parametrize(
    "dotted, value",
    [
        ("algorithm.loss_agg_mode", "seq-mean-token-sum"),
        ("algorithm.kl_loss_type", "mse"),
        ("algorithm.adv_estimator", "gae"),
        ("algorithm.use_kl_in_reward", True),
        ("algorithm.ppo_mini_batch_size", 3),
        ("algorithm.micro_batch_size_per_device", 48),
        ("rollout.n", 1),
    ],
)
def test_unsupported_catches_what_trl_cannot_honour(dotted: str, value: object) -> None:
    recipe = tiny_recipe_dict(**{dotted.replace(".", "__"): value})
    found = {key: (val, reason) for key, val, reason in unsupported(recipe)}
    assert dotted in found
    assert found[dotted][0] == value and found[dotted][1]


@pytest.mark.parametrize(
    "dotted, value, words",
    [("data.max_response_length", 2, "needs 3 tokens"), ("data.max_prompt_length", 3, "needs 4 tokens")],
)
def test_check_refuses_data_the_cpu_trainer_cannot_fit(dotted: str, value: int, words: str) -> None:
    """TRL neither drops nor cuts a long prompt, and an answer needs room for its EOS: check reads it in the data."""
    from grpolab.rules.validate import validate

    found = [p for p in validate(load_recipe("tiny", [f"{dotted}={value}"])) if p.key == dotted]
    assert {(p.rule, p.severity) for p in found} == {("engine-support", "error")}  # one per file (train, val)
    assert "params/data/tiny/train.parquet" in found[0].message and words in found[0].message


def test_unsupported_ignores_other_engines() -> None:
    recipe = tiny_recipe_dict(train__engine="megatron", algorithm__loss_agg_mode="seq-mean-token-sum")
    assert unsupported(recipe) == []


def test_the_tiny_recipe_maps_to_trls_config() -> None:
    from grpolab.recipe.loader import load_recipe

    recipe = load_recipe("tiny")
    s = settings_from_recipe(recipe)
    grpo_config_kwargs(s, "/tmp/out")  # raises on anything it cannot map
    assert unsupported(recipe) == []


# ---------------------------------------------------------------------------------------------- metrics


def test_trl_names_become_verl_names() -> None:
    logs = {
        "reward": 0.5,
        "kl": 0.01,
        "entropy": 1.2,
        "completions/mean_length": 2.5,
        "grad_norm": 0.3,
        "clip_ratio/region_mean": 0.0,
        "learning_rate": 1e-3,
        "loss": 0.02,
        "step_time": 0.05,
        "completions/clipped_ratio": 0.0,
        "epoch": 1.0,
        "bad": float("nan"),
    }
    out = metrics.to_verl(logs)
    assert out["critic/score/mean"] == 0.5 and out["actor/kl_loss"] == 0.01
    assert out["response_length/mean"] == 2.5 and out["actor/pg_clipfrac"] == 0.0
    assert out["timing_s/step"] == 0.05 and out["actor/lr"] == 1e-3 and out["actor/pg_loss"] == 0.02
    assert "epoch" not in out and "bad" not in out


def test_writer_flushes_every_line(tmp_path: Path) -> None:
    path = tmp_path / "m.jsonl"
    writer = metrics.JsonlWriter(path)
    writer.write(1, {"critic/score/mean": 0.25})
    # readable before close: a killed run keeps every finished step
    assert json.loads(path.read_text().splitlines()[0]) == {"step": 1, "data": {"critic/score/mean": 0.25}}
    writer.close()


def test_metrics_path_follows_verl_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VERL_FILE_LOGGER_PATH", raising=False)
    assert metrics.metrics_path(tmp_path) == tmp_path / "metrics.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / "x.jsonl"))
    assert metrics.metrics_path(tmp_path) == tmp_path / "x.jsonl"


# ------------------------------------------------------------------------------------------- a real run


SMALL_RUN = (
    "defaults: [base, engines/trl]\nrollout: {n: 4}\n"
    "data: {train_batch_size: 4, train_files: params/data/tiny/train.parquet, val_files: params/data/tiny/val.parquet}\n"
    "algorithm: {ppo_mini_batch_size: 4, micro_batch_size_per_device: 16}\n"
    "trainer: {total_steps: 4, test_freq: 2, save_freq: 2, seed: 7}\nlocal: {warmup_steps: 5}\n"
)


def _train(run_dir: Path, tmp_path: Path, *sets: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GRPOLAB_CACHE": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    env.pop("VERL_FILE_LOGGER_PATH", None)
    args = [a for s in sets for a in ("--set", s)]
    return subprocess.run(
        [sys.executable, "-m", "grpolab.local.train", "--run-dir", str(run_dir), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.slow(20)
def test_real_run_writes_verl_metrics_and_checkpoints_and_resumes_exactly(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "recipe.yaml").write_text(SMALL_RUN)
    proc = _train(run_dir, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "step 4/4 reward=" in proc.stdout

    rows = metrics.read_jsonl(run_dir / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4]
    assert set(rows[0]["data"]) >= {metrics.VAL_ACC}
    for row in rows[1:]:
        data = row["data"]
        for name in (
            "critic/score/mean",
            "critic/score/max",
            "critic/score/min",
            "response_length/mean",
            "response_length/clip_ratio",
            "actor/kl_loss",
            "actor/entropy",
            "actor/pg_clipfrac",
            "actor/grad_norm",
            "actor/lr",
            "actor/pg_loss",
            "timing_s/step",
            "perf/throughput",
            "actor/perf/max_memory_allocated_gb",
        ):
            assert name in data, (row["step"], name)
        assert 0.0 <= data["critic/score/mean"] <= 1.0
    assert [r["step"] for r in rows if metrics.VAL_ACC in r["data"]] == [0, 2, 4]

    # checkpoints in verl's layout, every save_freq steps and at the last one; each a transformers model
    root = run_dir / "checkpoint"
    assert (root / "latest_checkpointed_iteration.txt").read_text() == "4"
    assert sorted(p.name for p in root.glob("global_step_*")) == ["global_step_2", "global_step_4"]
    for step in (2, 4):
        assert checkpoint.missing_files(root / f"global_step_{step}") == []
        marker = checkpoint.read_marker(root / f"global_step_{step}")
        assert marker["step"] == step and marker["bytes"] > 0 and marker["seconds"] >= 0
    assert checkpoint.reference_dir(root / "global_step_2") == (run_dir / "warmup").resolve()

    # resumed from step 2 in another run directory: the steps go on from 3, exactly as the uninterrupted run's
    child = tmp_path / "child"
    child.mkdir()
    (child / "recipe.yaml").write_text(SMALL_RUN)
    resumed = _train(child, tmp_path, "resume_mode=resume_path", f"resume_path={root / 'global_step_2'}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    again = metrics.read_jsonl(child / "metrics.jsonl")
    assert [r["step"] for r in again] == [3, 4]
    for before, after in zip(rows[3:], again):
        for name in ("critic/score/mean", "actor/kl_loss", "actor/grad_norm", "actor/lr", metrics.VAL_ACC):
            assert after["data"].get(name) == pytest.approx(before["data"].get(name), abs=1e-6), (after["step"], name)
    assert (child / "warmup" / "config.json").is_file()  # its own copy of the KL reference, for its own children
    assert checkpoint.missing_files(child / "checkpoint" / "global_step_4") == []


def test_resume_path_must_be_a_complete_checkpoint(tmp_path: Path) -> None:
    from grpolab.local.train import load_settings, resume_from

    (tmp_path / "recipe.yaml").write_text(SMALL_RUN)
    half = tmp_path / "global_step_2"
    half.mkdir()
    (half / "config.json").write_text("{}")
    settings = load_settings(tmp_path, sets=["resume_mode=resume_path", f"resume_path={half}"])
    with pytest.raises(ValueError, match="is not a complete checkpoint .*grpolab_checkpoint.json, model.safetensors"):
        resume_from(settings, tmp_path)
    assert resume_from(load_settings(tmp_path), tmp_path) is None  # auto, and no checkpoint of its own yet


def test_train_schedule_is_the_same_prefix_for_every_budget() -> None:
    train, _ = tiny_data()
    long, short = task.train_schedule(train, 1000, seed=3), task.train_schedule(train, 300, seed=3)
    assert long[:300] == short and len(long) == 1000
    assert sorted(long[:70], key=lambda p: p.prompt) == sorted(train, key=lambda p: p.prompt)  # an epoch each
    assert task.train_schedule(train, 300, seed=4) != short


def test_tinys_reward_is_a_verl_signature_function_the_trainer_calls_with_the_same_scores() -> None:
    """tiny's recipe names params/rewards/arith.py (verl's signature); the trainer loads it as verl does and
    calls it with verl's keywords: the scores are the task's own, EOS included (issue 32)."""
    from grpolab.local.mapping import settings_from_recipe
    from grpolab.local.tiny import build_tokenizer
    from grpolab.local.train import load_reward
    from grpolab.recipe.loader import load_recipe

    settings = settings_from_recipe(load_recipe("tiny"))
    function = load_reward(settings.reward_function)
    assert function.__name__ == "compute_score" and settings.reward_function.endswith("rewards/arith.py:compute_score")
    tok = build_tokenizer()
    ids = lambda text: tok(text, add_special_tokens=False).input_ids  # noqa: E731
    eos = tok.eos_token_id
    completions = [ids("12") + [eos], ids("12+"), ids("12"), ids("13") + [eos], ids("=") + [eos], ids("1") + [eos]]
    kwargs = dict(prompts=["5+7="] * 6, completions=[""] * 6, completion_ids=completions, answer=["12"] * 6)
    kwargs |= dict(data_source=["arith"] * 6, extra_info=['{"index": 0}'] * 6)
    assert (
        task.ArithReward(tok, function)(**kwargs) == task.ArithReward(tok)(**kwargs) == [1.0, 0.5, 0.5, 0.1, 0.0, 0.0]
    )
