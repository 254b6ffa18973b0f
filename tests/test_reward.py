"""The reward in the recipe (issue 32): the `reward:` section renders to verl 0.9.1's keys through the field map,
`grpolab import` maps a script's reward keys onto it (and back), and `grpolab check` refuses a reward file, function,
signature or manager the installed verl cannot use, and a data_source with no built-in reward, reading verl's own
files as data (never importing verl or the reward)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
from verl_data import parquet, verl_row  # noqa: E402

from grpolab.importer.script import import_script  # noqa: E402
from grpolab.recipe.loader import load_recipe  # noqa: E402
from grpolab.rules.gate import check, gate, shadowing  # noqa: E402
from grpolab.verl import fieldmap, rewards  # noqa: E402
from grpolab.verl.render import render  # noqa: E402

DATA = Path(__file__).parent / "data"
SIGNATURES = yaml.safe_load((DATA / "rewards" / "signatures.yaml").read_text())
COMPLETE = (
    "actor_rollout_ref.rollout.name=vllm actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 "
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1"
)


def _problems(recipe, rule):
    return [p for p in check(recipe[0], recipe[1], verl=False)[1] if p.rule == rule]


def test_verl_facts_come_from_the_installed_verl():
    builtin, registry = rewards.builtin(), rewards.managers()
    assert builtin.scores("openai/gsm8k") and builtin.scores("aime2024") and not builtin.scores("my_task")
    assert "verl/utils/reward_score/__init__.py" in builtin.file
    assert registry.module == "verl.experimental.reward_loop.reward_manager"  # what trainer/ppo/reward.py imports
    assert {"naive", "dapo"} <= set(registry.managers) and "batch" not in registry.managers
    naive = registry.managers["naive"]
    assert naive.keywords == ("data_source", "solution_str", "ground_truth", "extra_info")
    assert set(naive.columns) == {"data_source", "reward_model.ground_truth"}


def test_verl_facts_come_from_the_checked_verl_when_grpolab_verl_root_names_one(tmp_path, monkeypatch):
    """Checked against another verl ($GRPOLAB_VERL_ROOT, as the version table and the schema check are), the reward
    facts are that verl's, not the installed one's; unset, the installed verl's again."""
    score = tmp_path / "verl" / "utils" / "reward_score"
    score.mkdir(parents=True)
    (score / "__init__.py").write_text(
        "def default_compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    if data_source == 'my_task':\n        return 1.0\n    raise NotImplementedError(data_source)\n"
    )
    monkeypatch.setenv("GRPOLAB_VERL_ROOT", str(tmp_path / "verl"))
    other = rewards.builtin()
    assert other.scores("my_task") and not other.scores("openai/gsm8k") and str(tmp_path) in other.file
    assert rewards.managers() is None  # that verl's reward managers are not there to read: nothing is claimed
    monkeypatch.delenv("GRPOLAB_VERL_ROOT")
    assert rewards.builtin().scores("openai/gsm8k") and not rewards.builtin().scores("my_task")


def test_the_reward_renders_to_verls_keys():
    recipe = load_recipe(
        "qwen3_8b", ["reward.function=/srv/rw.py:score", "reward.kwargs.scale=2", "reward.manager=dapo"]
    )
    argv = render(recipe, "/RUN").overrides
    assert "reward.custom_reward_function.path=/srv/rw.py" in argv
    assert "reward.custom_reward_function.name=score" in argv
    assert "+reward.custom_reward_function.reward_kwargs.scale=2" in argv
    assert "reward.reward_manager.name=dapo" in argv
    default = render(load_recipe("qwen3_8b"), "/RUN").overrides
    assert "reward.custom_reward_function.path=null" in default and "reward.reward_manager.name=naive" in default
    assert (
        fieldmap.render_keys(load_recipe("qwen3_8b", ["reward.function=a/b.py"]), "/R")[f"{fieldmap.REWARD_FN}.name"]
        == rewards.DEFAULT_NAME
    )


def test_a_legacy_reward_key_in_verl_overrides_says_it_does_nothing_and_names_the_field():
    """verl 0.9.1's main_ppo ignores the older top-level keys (it reads reward.* alone): no shadowing, a warning."""
    recipe = load_recipe("qwen3_8b", ["verl_overrides.custom_reward_function.path=/x.py"])
    assert shadowing(recipe) == []
    found = [p for p in gate(recipe) if p.key == "verl_overrides.custom_reward_function.path"]
    assert [(p.rule, p.severity) for p in found] == [("verl-version", "warning")]
    assert "ignores custom_reward_function.path" in found[0].message and "reward.function" in found[0].fix


@pytest.mark.parametrize(
    "keys, function, manager",
    [
        # verl 0.9.1's own keys
        (
            "reward.custom_reward_function.path=/srv/rw.py reward.custom_reward_function.name=score "
            "reward.reward_manager.name=dapo",
            "/srv/rw.py:score",
            "dapo",
        ),
        # verl's older keys (name before path), as older scripts write them
        (
            "custom_reward_function.name=my_fn custom_reward_function.path=/srv/rw.py reward_model.reward_manager=naive",
            "/srv/rw.py:my_fn",
            "naive",
        ),
        ("custom_reward_function.path=/srv/rw.py", "/srv/rw.py", "naive"),
    ],
)
def test_import_maps_a_scripts_reward_onto_the_recipe_and_back(tmp_path, keys, function, manager):
    script = tmp_path / "run.sh"
    script.write_text(
        f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {COMPLETE} {keys} +reward.custom_reward_function.reward_kwargs.scale=2\n"
    )
    imported = import_script(script, trusted=True, device="cuda")
    assert (
        imported.data["reward"]["function"] == function
        and imported.data.get("reward", {}).get("manager", "naive") == manager
    )
    assert imported.data["reward"]["kwargs"] == {"scale": 2}
    out = tmp_path / "r.yaml"
    from grpolab.importer.script import recipe_yaml

    out.write_text(recipe_yaml(imported, str(script)))
    argv = render(load_recipe(out), "/RUN").overrides
    path, name = rewards.split_function(function)
    assert f"reward.custom_reward_function.path={path}" in argv and f"reward.custom_reward_function.name={name}" in argv
    assert (
        f"reward.reward_manager.name={manager}" in argv
        and "+reward.custom_reward_function.reward_kwargs.scale=2" in argv
    )


def _reward_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "rw.py"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "entry", SIGNATURES, ids=[s["def"].split("(")[0][4:] + f"-{i}" for i, s in enumerate(SIGNATURES)]
)
def test_public_reward_signatures_get_the_verdict_verl_would(tmp_path, entry):
    name = entry["def"].split("(")[0].split()[-1]
    file = _reward_file(tmp_path, entry["def"] + ":\n    return 0.0\n")
    found = _problems(("qwen3_8b", [f"reward.function={file}:{name}"]), "reward-signature")
    if entry["ok"]:
        assert found == [], [p.format() for p in found]
        return
    assert len(found) == 1
    text = found[0].message + found[0].fix
    assert file in found[0].message and name in found[0].message and "naive" in found[0].message
    for word in entry.get("missing", []) + entry.get("unknown", []):
        assert word in text


def test_reward_kwargs_satisfy_a_parameter(tmp_path):
    file = _reward_file(
        tmp_path, "def judge_score(data_source, solution_str, ground_truth, judge, extra_info=None):\n    return 0.0\n"
    )
    assert _problems(("qwen3_8b", [f"reward.function={file}:judge_score"]), "reward-signature")
    assert not _problems(
        ("qwen3_8b", [f"reward.function={file}:judge_score", "reward.kwargs.judge=gpt"]), "reward-signature"
    )


@pytest.mark.parametrize(
    "text, function, words",
    [
        (None, "{dir}/nope.py:compute_score", ["nope.py", "is not at"]),
        ("def compute_score(:\n", "{file}", ["does not parse", "line 1"]),
        (
            "def compute_scor(data_source, solution_str, ground_truth, extra_info=None):\n    return 0\n",
            "{file}:compute_score",
            ["no function 'compute_score'", "compute_scor"],
        ),
    ],
)
def test_a_missing_file_a_syntax_error_or_a_missing_function_is_an_error(tmp_path, text, function, words):
    file = _reward_file(tmp_path, text) if text is not None else str(tmp_path / "rw.py")
    value = function.format(dir=tmp_path, file=file)
    found = _problems(("qwen3_8b", [f"reward.function={value}"]), "reward-function")
    assert len(found) == 1 and found[0].severity == "error" and found[0].key == "reward.function"
    for word in words:
        assert word in found[0].message + found[0].fix


def test_a_relative_reward_path_is_read_from_the_recipes_folder(tmp_path):
    (tmp_path / "rewards").mkdir()
    (tmp_path / "rewards" / "mine.py").write_text(
        "def score(data_source, solution_str, ground_truth, extra_info=None):\n    return 1.0\n"
    )
    recipe = tmp_path / "r.yaml"
    recipe.write_text("defaults: [recipes/qwen3_8b]\nreward:\n  function: rewards/mine.py:score\n")
    loaded, problems = check(str(recipe), verl=False)
    assert not [p for p in problems if p.rule.startswith("reward")]
    assert f"reward.custom_reward_function.path={tmp_path / 'rewards' / 'mine.py'}" in render(loaded, "/RUN").overrides


def test_an_unknown_manager_names_the_installed_ones():
    found = _problems(("qwen3_8b", ["reward.manager=batch"]), "reward-manager")
    assert len(found) == 1 and "naive" in found[0].message and "reward.manager" in found[0].fix
    assert _problems(("qwen3_8b", ["reward.manager=dapp"]), "reward-manager")[0].fix == "set reward.manager to 'dapo'"


def test_check_finds_a_data_source_without_a_built_in_reward(tmp_path):
    rows = [verl_row(i) for i in range(6)] + [verl_row(i, "my_task") for i in range(3)]
    file = parquet(tmp_path / "train.parquet", rows)
    started = time.perf_counter()
    found = _problems(("qwen3_8b", [f"data.train_files={file}"]), "data-source")
    assert time.perf_counter() - started < 5
    assert len(found) == 1 and "'my_task' (3 of 9 rows)" in found[0].message and file in found[0].message
    assert "reward.function" in found[0].fix
    # a reward of one's own scores any data_source
    reward = _reward_file(
        tmp_path, "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0\n"
    )
    assert not _problems(("qwen3_8b", [f"data.train_files={file}", f"reward.function={reward}"]), "data-source")


def test_check_does_not_import_verl_or_the_reward(tmp_path):
    marker = tmp_path / "ran"
    reward = _reward_file(
        tmp_path,
        f"open({str(marker)!r}, 'w')\ndef compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0\n",
    )
    code = (
        "import sys; from grpolab.rules.gate import check; "
        f"check('qwen3_8b', ['reward.function={reward}'], verl=False); "
        "print(json.dumps(sorted(m for m in ('verl', 'torch') if m in sys.modules)))"
    )
    import subprocess

    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [] and not marker.exists()
