"""Issue 47: the launches people wrote in 2026 import wherever verl 0.9.1 composes them, and come back as the same
launch in effect or with each difference named.

- Every training engine the checked verl registers (read from its own source into the version table): VeOmni
  (model_engine=veomni), FSDP's fsdp_turbo strategy (its turbo_config with Hydra-escaped keys); check says which
  layout rules it skipped instead of refusing; an engine verl lacks is refused naming those it has.
- A recipe's entry point composes against its own Hydra config (its @hydra.main folder in the script's checkout, or
  --config-path), for import, check and render.
- The reward's older keys that verl 0.9.1's main_ppo ignores: applied as reward.* (path, name and kwargs together)
  and said loudly, or kept inert with --legacy-reward inert (the same launch, and check says they do nothing).

Every script and config here is written by the test (no third-party file).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from grpolab.importer import sandbox
from grpolab.importer.script import import_script, recipe_yaml
from grpolab.recipe.loader import load_recipe
from grpolab.rules.gate import check
from grpolab.rules.registry import engine_layout_rules
from grpolab.verl import config as verl_schema
from grpolab.verl import versions
from grpolab.verl.render import render

TRUSTED = sandbox.available() is not None
FLAGS = ("--trusted",) if TRUSTED else ()
BASE = (
    "actor_rollout_ref.model.path=Qwen/Qwen3-8B actor_rollout_ref.rollout.name=vllm "
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1"
)


def _imported(tmp_path: Path, body: str, **kw):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nset -euo pipefail\n" + body)
    imported = import_script(script, trusted=TRUSTED, device="cuda", **kw)
    out = tmp_path / f"{imported.name}.yaml"
    out.write_text(recipe_yaml(imported, str(script)))
    return imported, out


def test_the_version_table_reads_each_versions_engines_from_its_own_source():
    table = versions.table()
    assert table["0.9.1"]["engines"]["model_engines"]["dp"]["strategies"] == ["fsdp", "fsdp2", "fsdp_turbo"]
    assert "fsdp_turbo" not in table["0.9.0"]["engines"]["model_engines"]["dp"]["strategies"]
    assert "fsdp_turbo" in table["0.9.1"]["engines"]["registered"]
    for version in ("0.8.0", "0.9.0", "0.9.1"):
        assert table[version]["engines"]["model_engines"]["veomni"]["selected_by"] == "model_engine=veomni"
    assert table["0.7.1"]["engines"]["model_engines"]["megatron"]["selected_by"] is None  # its own root config
    # where verl moves the reward's older keys, and who calls that: 0.9.1's main_ppo does not
    legacy = table["0.9.1"]["legacy_reward"]
    assert legacy["moves"]["custom_reward_function"] == "reward.custom_reward_function"
    assert (
        "verl.trainer.main_ppo" not in legacy["entries"]
        and "verl.trainer.main_ppo" in table["0.7.1"]["legacy_reward"]["entries"]
    )


def test_a_veomni_launch_imports_checks_with_one_warning_and_renders_the_same_launch(tmp_path):
    imported, out = _imported(
        tmp_path,
        f"python3 -m verl.trainer.main_ppo model_engine=veomni {BASE} "
        "actor_rollout_ref.actor.veomni.fsdp_size=4 actor_rollout_ref.actor.veomni.ulysses_parallel_size=2 "
        "trainer.n_gpus_per_node=8 data.train_batch_size=16 actor_rollout_ref.actor.ppo_mini_batch_size=8\n",
    )
    assert imported.data["train"]["engine"] == "veomni" and imported.unmapped == []
    recipe, problems = check(out)
    assert not [p for p in problems if p.severity == "error"], [p.format() for p in problems]
    layout = [p for p in problems if p.rule == "engine-layout"]
    assert len(layout) == 1 and layout[0].severity == "warning"
    assert all(rule in layout[0].message for rule in engine_layout_rules())
    launch = render(recipe, "/RUN")
    assert "model_engine=veomni" in launch.overrides
    assert "actor_rollout_ref.actor.veomni.fsdp_size=4" in launch.overrides


def test_an_fsdp_turbo_launch_keeps_its_plan_and_composes(tmp_path):
    plan = r"+actor_rollout_ref.actor.fsdp_config.turbo_config.distributed.fsdp_plan.apply_modules='{model.layers.\{*\}:{},lm_head:{}}'"
    imported, out = _imported(
        tmp_path,
        f"python3 -m verl.trainer.main_ppo {BASE} actor_rollout_ref.actor.strategy=fsdp_turbo "
        f"actor_rollout_ref.ref.strategy=fsdp_turbo {plan}\n",
    )
    assert imported.data["train"]["fsdp_strategy"] == "fsdp_turbo" and imported.unmapped == []
    recipe, problems = check(out)
    assert not [p for p in problems if p.severity == "error"], [p.format() for p in problems]
    assert [p.key for p in problems if p.rule == "engine-layout"] == ["train.fsdp_strategy"]
    overrides = render(recipe, "/RUN").overrides
    assert "actor_rollout_ref.actor.strategy=fsdp_turbo" in overrides
    assert verl_schema.compose(overrides) is None  # the keys with `{*}` are escaped as Hydra wants them


def test_an_engine_the_checked_verl_lacks_is_refused_naming_those_it_has(cli, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\npython3 -m verl.trainer.main_ppo model_engine=automodell {BASE}\n")
    proc = cli("import", str(script), *FLAGS, "--out", "-")
    assert proc.returncode == 2 and "model_engine=automodell" in proc.stderr
    assert "model_engine=veomni" in proc.stderr and "model_engine=megatron" in proc.stderr


LEGACY = (
    "custom_reward_function.path=/srv/code_reward.py custom_reward_function.name=score "
    "+custom_reward_function.reward_kwargs.sandbox_fusion_url=http://sandbox:8080/run_code "
    "sandbox_fusion.url=http://sandbox:8080/run_code"
)


def test_older_reward_keys_main_ppo_ignores_are_applied_together_and_said_loudly(tmp_path):
    imported, out = _imported(tmp_path, f"python3 -m verl.trainer.main_ppo {BASE} {LEGACY}\n")
    reward = imported.data["reward"]
    assert reward["function"] == "/srv/code_reward.py:score"
    assert reward["kwargs"] == {"sandbox_fusion_url": "http://sandbox:8080/run_code"}  # the kwargs came along
    assert imported.data["verl_overrides"]["reward.sandbox_fusion.url"] == "http://sandbox:8080/run_code"
    assert {e["key"] for e in imported.legacy if e["applied"]} == {
        "custom_reward_function.path",
        "custom_reward_function.name",
        "custom_reward_function.reward_kwargs.sandbox_fusion_url",
        "sandbox_fusion.url",
    }
    text = out.read_text()
    assert "# LEGACY REWARD KEYS: verl 0.9.1's verl.trainer.main_ppo ignores them." in text
    assert "APPLIES them" in text and "--legacy-reward inert" in text
    # every difference from the original launch is named, and named as the older key applied
    assert imported.unmapped and all(u.get("legacy") for u in imported.unmapped), imported.unmapped
    assert all("the original launch ignores" in u["why"] for u in imported.unmapped)
    argv = render(load_recipe(out), "/RUN").overrides
    assert any(a.startswith("+reward.custom_reward_function.reward_kwargs.sandbox_fusion_url=") for a in argv)


def test_older_reward_keys_kept_inert_give_the_same_launch_and_check_says_they_do_nothing(cli, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {BASE} {LEGACY}\n")
    out = tmp_path / "r.yaml"
    proc = cli(
        "import", str(script), *FLAGS, "--device", "cuda", "--legacy-reward", "inert", "--out", str(out), "--json"
    )
    result = json.loads(proc.stdout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert result["unmapped"] == [] and not any(e["applied"] for e in result["legacy"])
    assert "reward" not in yaml.safe_load(out.read_text())
    warned = [p for p in result["problems"] if p["rule"] == "verl-version" and "ignores" in p["message"]]
    assert {p["key"] for p in warned} >= {
        "verl_overrides.custom_reward_function.path",
        "verl_overrides.sandbox_fusion.url",
    }
    proc = cli("import", str(script), *FLAGS, "--device", "cuda", "--out", "-")
    assert "LEGACY REWARD KEY: custom_reward_function.path" in proc.stderr


ENTRY = """\
import hydra


@hydra.main(config_path="config", config_name="mine_trainer", version_base=None)
def main(config):
    pass
"""
CONFIG = """\
hydra:
  searchpath:
    - file://verl/trainer/config
defaults:
  - ppo_trainer
  - _self_
reward:
  reward_kwargs:
    buffer_cfg:
      enable: false
      len: 0
"""


def _checkout(tmp_path: Path) -> Path:
    """A checkout holding a recipe's entry point and its own config (written here), as verl-recipe lays them out."""
    checkout = tmp_path / "checkout"
    package = checkout / "recipe" / "mine"
    (package / "config").mkdir(parents=True)
    for folder in (checkout / "recipe", package):
        (folder / "__init__.py").write_text("")
    (package / "main_mine.py").write_text(ENTRY)
    (package / "config" / "mine_trainer.yaml").write_text(CONFIG)
    return checkout


LAUNCH_OWN = f"python3 -m recipe.mine.main_mine {BASE} reward.reward_kwargs.buffer_cfg.enable=True reward.reward_kwargs.buffer_cfg.len=512\n"


def test_a_recipe_entry_point_composes_against_its_own_config(tmp_path, monkeypatch):
    checkout = _checkout(tmp_path)
    monkeypatch.chdir(checkout)  # where the script runs: python3 -m finds recipe/ here
    imported, out = _imported(tmp_path, LAUNCH_OWN)
    trainer = imported.data["trainer"]
    assert trainer["entrypoint"] == "recipe.mine.main_mine" and trainer["entry_dir"] == str(checkout)
    assert imported.unmapped == [], imported.unmapped
    monkeypatch.chdir(tmp_path)  # check and render find it through the recipe, wherever they run
    recipe, problems = check(out)
    assert not [p for p in problems if p.severity == "error"], [p.format() for p in problems]
    launch = render(recipe, "/RUN")
    assert launch.argv()[1:3] == ["-m", "recipe.mine.main_mine"] and launch.config_name == "mine_trainer"
    assert "reward.reward_kwargs.buffer_cfg.len=512" in launch.overrides  # its own key: no `+`


def test_a_recipe_entry_point_away_from_its_checkout_says_where_it_looked(cli, tmp_path):
    _checkout(tmp_path)
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\n" + LAUNCH_OWN)
    proc = cli("import", str(script), *FLAGS, "--out", "-")  # run from the project, not the checkout
    assert proc.returncode == 2 and "is not on this machine" in proc.stderr, proc.stderr
    assert "reward.reward_kwargs.buffer_cfg" in proc.stderr  # the override verl's own config lacks


@pytest.mark.parametrize("relative", [False, True])
def test_a_config_path_composes_against_that_folder(tmp_path, monkeypatch, relative):
    checkout = _checkout(tmp_path)
    folder = checkout / "recipe" / "mine" / "config"
    monkeypatch.chdir(checkout)
    where = folder if not relative else "recipe/mine/config"
    if relative:  # relative to main_ppo's own folder: not on this machine, refused naming it
        with pytest.raises(Exception, match="config"):
            _imported(
                tmp_path,
                f"python3 -m verl.trainer.main_ppo --config-path={where} --config-name=mine_trainer {BASE}\n",
            )
        return
    imported, out = _imported(
        tmp_path,
        f"python3 -m verl.trainer.main_ppo --config-path={where} --config-name=mine_trainer {BASE} "
        "reward.reward_kwargs.buffer_cfg.enable=True\n",
    )
    assert imported.data["trainer"]["config_path"] == str(folder) and imported.unmapped == []
    recipe, problems = check(out)
    assert not [p for p in problems if p.severity == "error"], [p.format() for p in problems]
    argv = render(recipe, "/RUN").argv()
    assert f"--config-path={folder}" in argv and "--config-name=mine_trainer" in argv


def test_a_recipe_config_that_selects_megatron_itself_imports_as_megatron(tmp_path, monkeypatch):
    """The entry point's own config may build on verl's Megatron trainer: the engine is read from what it composes,
    and an entry module named otherwise (recipe.NAME.NAME_main_ppo) is still an entry point."""
    checkout = _checkout(tmp_path)
    package = checkout / "recipe" / "mine"
    (package / "mine_main_ppo.py").write_text(ENTRY.replace("mine_trainer", "mine_megatron_trainer"))
    (package / "config" / "mine_megatron_trainer.yaml").write_text(
        CONFIG.replace("- ppo_trainer", "- ppo_megatron_trainer")
    )
    monkeypatch.chdir(checkout)
    imported, out = _imported(
        tmp_path,
        f"python3 -m recipe.mine.mine_main_ppo {BASE} actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2\n",
    )
    assert imported.data["train"]["engine"] == "megatron" and imported.data["train"]["tp"] == 2
    assert imported.data["trainer"]["entrypoint"] == "recipe.mine.mine_main_ppo" and imported.unmapped == []
