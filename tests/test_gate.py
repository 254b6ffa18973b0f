"""One gate: `grpolab check`, `render`, `run --dry-run`, preflight's local rows and the notebooks refuse exactly
the same recipes, including a bad verl_overrides key (verl-schema), a verl_overrides key that shadows a
first-class field (override-shadows) and a plain rule error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grpolab import notebook as nb
from grpolab.preflight.driver import driver_rows
from grpolab.recipe.loader import load_recipe
from grpolab.rules.gate import gate

ROOT = Path(__file__).resolve().parents[1]
PAPERMILL = Path(sys.executable).with_name("papermill")

BAD = {  # what is wrong -> (recipe, --set overrides, the rule that must refuse it)
    "unknown verl key": ("qwen3_8b", ["verl_overrides.trainer.val_befor_train=false"], "verl-schema"),
    "shadowing override": (
        "glm5_2",
        ["verl_overrides.actor_rollout_ref.rollout.tensor_model_parallel_size=16"],
        "override-shadows",
    ),
    "rule error": ("glm5_2", ["rollout.ep=32"], "rollout-ep"),
}


def _sets(overrides: list[str]) -> list[str]:
    return [arg for o in overrides for arg in ("--set", o)]


@pytest.mark.parametrize("case", sorted(BAD))
def test_every_front_end_refuses_what_check_refuses(case, cli, _isolated_runs):
    recipe_name, overrides, rule = BAD[case]
    proc = cli("check", recipe_name, *_sets(overrides), "--json")
    assert proc.returncode == 1, proc.stdout
    assert rule in {p["rule"] for p in json.loads(proc.stdout) if p["severity"] == "error"}

    before = set(_isolated_runs.iterdir())
    proc = cli("run", recipe_name, "--dry-run", *_sets(overrides))
    assert proc.returncode == 1 and "nothing was submitted" in proc.stdout and f"[{rule}]" in proc.stdout
    assert set(_isolated_runs.iterdir()) == before

    proc = cli("render", recipe_name, *_sets(overrides))
    assert proc.returncode == 1 and f"[{rule}]" in proc.stdout

    recipe = load_recipe(recipe_name, overrides)
    rows = driver_rows(recipe)
    assert any(r.status == "fail" and f"[{rule}]" in r.detail for r in rows), [r.detail for r in rows]

    _, problems = nb.check_recipe(recipe_name, overrides)
    assert rule in {p.rule for p in problems if p.severity == "error"}
    with pytest.raises(nb.NotebookStop, match="nothing was submitted"):
        nb.launch(recipe, dry_run=True)


def test_shadowing_names_the_field_to_use():
    recipe = load_recipe("glm5_2", ["verl_overrides.actor_rollout_ref.rollout.tensor_model_parallel_size=16"])
    shadow = next(p for p in gate(recipe) if p.rule == "override-shadows")
    assert shadow.key == "verl_overrides.actor_rollout_ref.rollout.tensor_model_parallel_size"
    assert "rollout.tp" in shadow.fix and shadow.value == 16
    assert shadow.message.startswith("--set verl_overrides.")  # names where the override came from
    # a key inside a free-form dict a first-class field renders names that field too
    recipe = load_recipe(
        "glm5_2", ["verl_overrides.+actor_rollout_ref.actor.megatron.override_transformer_config.swiglu=false"]
    )
    assert "train.transformer" in next(p for p in gate(recipe) if p.rule == "override-shadows").fix


def test_set_verl_overrides_sets_the_flat_key():
    recipe = load_recipe("qwen3_8b", ["verl_overrides.trainer.critic_warmup=2"])
    assert recipe.verl_overrides["trainer.critic_warmup"] == 2
    assert not [p for p in gate(recipe) if p.severity == "error"]
    # the recipe file's own verl_overrides stay, the command line adds to them
    glm = load_recipe("glm5_2", ["verl_overrides.trainer.critic_warmup=0"])
    assert glm.verl_overrides["algorithm.rollout_correction.rollout_is"] == "token"
    assert glm.verl_overrides["trainer.critic_warmup"] == 0


def test_shipped_recipes_pass_the_gate():
    for name in ("glm5_2", "qwen3_5_122b_a10b_32k", "qwen3_30b_a3b", "qwen3_8b", "tiny"):
        assert not [p for p in gate(load_recipe(name)) if p.severity == "error"], name


def test_03_launch_refuses_a_shadowing_override(tmp_path, _isolated_runs):
    out = tmp_path / "out.ipynb"
    proc = subprocess.run(
        [
            str(PAPERMILL),
            str(ROOT / "notebooks" / "03_launch.ipynb"),
            str(out),
            "-p",
            "model",
            "glm5_2",
            "-p",
            "dry_run",
            "True",
            "-y",
            "overrides: [verl_overrides.actor_rollout_ref.rollout.tensor_model_parallel_size=16]",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode != 0
    assert "override-shadows" in out.read_text() and "nothing was submitted" in out.read_text()


def test_a_compose_verdict_is_remembered_by_verls_config_content(tmp_path, monkeypatch):
    """The gate's last word (Hydra's compose) is remembered on disk: two checkouts of the same verl share the
    verdict, and an edited config file is composed again (its mtime alone would miss a copy or a same-second edit)."""
    import shutil

    from grpolab.verl import config

    monkeypatch.setenv("GRPOLAB_CACHE", str(tmp_path / "cache"))
    overrides = ["trainer.total_epochs=2"]
    keys = []
    for copy, edit in (("a", False), ("b", False), ("c", True)):
        folder = shutil.copytree(config.config_dir(), tmp_path / copy)
        if edit:
            path = folder / "ppo_trainer.yaml"
            path.write_text(path.read_text() + "\n# edited\n")
        monkeypatch.setattr(config, "config_dir", lambda folder=folder: folder)
        keys.append(config._cache_file(overrides))
    assert keys[0] == keys[1] and keys[2] != keys[0]
    assert keys[0].parent == tmp_path / "cache" / "verl-compose"
    monkeypatch.setattr(config, "config_dir", lambda: tmp_path / "a")
    assert config.compose(overrides) is None and keys[0].is_file()  # composed once, then remembered
    assert json.loads(keys[0].read_text()) == {"error": None}


def test_an_effective_launch_is_remembered_only_where_nothing_but_the_config_decides_it(tmp_path, monkeypatch):
    """verl.config.effective's launch is remembered on disk (what an import composes again), and reading it back
    gives what Hydra composes; a launch that reads the process (an override through oc.env, a config file through
    hydra's runtime.cwd) is composed every time, and a config edited after is composed again."""
    import shutil

    from grpolab.verl import config

    monkeypatch.setenv("GRPOLAB_CACHE", str(tmp_path / "cache"))
    folder = shutil.copytree(config.config_dir(), tmp_path / "verl")
    monkeypatch.setattr(config, "config_dir", lambda: folder)
    overrides = (
        "trainer.total_epochs=2",
        "actor_rollout_ref.actor.optim.lr=3e-6",
        "data.max_prompt_length=${oc.select:x,7}",
    )
    fresh = config._compose_effective(overrides, "ppo_trainer", folder)
    assert config._effective.__wrapped__(overrides, "ppo_trainer", folder) == fresh
    (remembered,) = (tmp_path / "cache" / "verl-effective").glob("*.json")
    assert (
        config._effective.__wrapped__(overrides, "ppo_trainer", folder) == fresh == json.loads(remembered.read_text())
    )
    assert fresh["data.max_prompt_length"] == 7 and fresh["trainer.total_epochs"] == 2

    monkeypatch.setenv("EPOCHS", "3")
    from_env = ("trainer.total_epochs=${oc.env:EPOCHS}",)
    assert config._effective.__wrapped__(from_env, "ppo_trainer", folder)["trainer.total_epochs"] == "3"
    assert config._effective_cache_file(from_env, "ppo_trainer", folder) is None
    monkeypatch.setenv("EPOCHS", "4")
    assert config._effective.__wrapped__(from_env, "ppo_trainer", folder)["trainer.total_epochs"] == "4"

    path = folder / "ppo_trainer.yaml"
    path.write_text(path.read_text() + "\n# edited\n")
    edited = config._effective_cache_file(overrides, "ppo_trainer", folder)
    assert edited is not None and edited != remembered and not edited.exists()
    path.write_text(path.read_text() + "\ncwd: ${hydra:runtime.cwd}\n")
    assert config._effective_cache_file(overrides, "ppo_trainer", folder) is None
