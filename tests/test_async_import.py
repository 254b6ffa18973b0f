"""verl's separate_async start-up assertions, caught by `grpolab check` on imported REAL launches (issue 42).

Each case is one of verl's own V1 end-to-end launches (tests/data/corpus, recorded from verl-project/verl at
1dda039b) with the arguments a user passes through the script's `"$@"`, which break exactly one assertion that verl
makes only when it builds the trainer, after the cluster has loaded the model. The importer puts every V1 setting
on its schedule.* field, and check names the rule, the key, the values and a fix; the unbroken launches import, check
clean and render the same effective launch (tests/test_corpus.py holds those).
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from grpolab.importer.script import import_script, recipe_yaml
from grpolab.problems import errors
from grpolab.rules.gate import check

CORPUS = Path(__file__).parent / "data" / "corpus"
SEPARATE = "verl_2026_special_e2e_run_v1_separate_async"
COLOCATE_RM = "verl_2026_special_e2e_run_v1_colocate_async_disrm"
POOL = "actor_rollout_ref.rollout"
# (launch, the arguments after the script's own, the rule, the recipe key, text the message must hold, text the fix
# must hold)
CASES = {
    "batch": (
        SEPARATE,
        ["data.train_batch_size=8"],
        "async-sync-step",
        "schedule.parameter_sync_step",
        "8 != 4 x 1",
        "data.train_batch_size: 4",
    ),
    "pool-nodes": (
        SEPARATE,
        [f"{POOL}.nnodes=0"],
        "async-rollout-pool",
        "schedule.rollout_nnodes",
        "nnodes > 0",
        "schedule.rollout_nnodes to 1 or more",
    ),
    "pool-devices": (
        SEPARATE,
        [f"{POOL}.n_gpus_per_node=0"],
        "async-rollout-pool",
        "schedule.rollout_devices_per_node",
        "n_gpus_per_node > 0",
        "schedule.rollout_devices_per_node",
    ),
    "backend": (
        SEPARATE,
        [f"{POOL}.checkpoint_engine.backend=naive"],
        "async-sync-backend",
        "schedule.sync_backend",
        "backend != naive",
        "schedule.sync_backend: nccl",
    ),
    "reward-model": (
        COLOCATE_RM,
        ["trainer.v1.trainer_mode=separate_async", f"{POOL}.nnodes=1", f"{POOL}.checkpoint_engine.backend=nccl"],
        "async-reward-pool",
        "verl_overrides.reward.reward_model.enable_resource_pool",
        "own resource pool",
        "enable_resource_pool: true",
    ),
    "switch-pd": (
        SEPARATE,
        [
            "trainer.v1.separate_async.hybrid_rollout.enable_switch=True",
            f"{POOL}.disaggregation.enabled=True",
        ],
        "async-switch",
        "schedule.switch.enable",
        "disaggregation",
        "schedule.switch.enable: false",
    ),
}


def _script(launch_id: str, extra: list[str], tmp: Path) -> Path:
    """The recorded launch as the bash script that makes it, `extra` appended as its `"$@"` would be."""
    rec = yaml.safe_load((CORPUS / "launches" / f"{launch_id}.yaml").read_text())
    sub = {"$HOME": "/home/corpus", "$PWD": "/work/corpus"}

    def real(text: str) -> str:
        for k, v in sub.items():
            text = text.replace(k, v)
        return text

    lines = ["#!/usr/bin/env bash", "set -euo pipefail"]
    lines += [f"export {k}={shlex.quote(real(v))}" for k, v in rec["env"].items()]
    lines.append(" ".join(shlex.quote(real(a)) for a in rec["launcher"] + rec["args"] + extra))
    script = tmp / f"{launch_id}.sh"
    script.write_text("\n".join(lines) + "\n")
    return script


def _imported_check(launch_id: str, extra: list[str], tmp: Path):
    script = _script(launch_id, extra, tmp)
    device = "npu" if launch_id.endswith("ascend") else "cuda"
    imported = import_script(script, name="v1", device=device)
    path = tmp / "v1.yaml"
    path.write_text(recipe_yaml(imported, str(script)))
    recipe, problems = check(path)
    return imported, recipe, problems


@pytest.mark.parametrize("launch_id", [SEPARATE, f"{SEPARATE}_ascend", COLOCATE_RM])
def test_a_real_v1_launch_lands_on_the_schedule_fields_and_checks_clean(launch_id, tmp_path):
    imported, recipe, problems = _imported_check(launch_id, [], tmp_path)
    assert not errors(problems), [p.format() for p in errors(problems)]
    assert recipe.schedule.mode == ("colocate_async" if launch_id == COLOCATE_RM else "separate_async")
    left = [k for k in imported.data.get("verl_overrides", {}) if k.startswith("trainer.v1") or ".nnodes" in k]
    assert not left, left  # every V1 setting on its field, none in the escape hatch
    if recipe.schedule.mode == "separate_async":
        assert recipe.schedule.rollout_nnodes == 1 and recipe.schedule.sync_backend == "nccl"
        assert recipe.data.train_batch_size == recipe.parameter_sync_step * recipe.algorithm.ppo_mini_batch_size


@pytest.mark.parametrize("case", CASES)
def test_each_separate_async_assertion_is_caught_on_an_imported_real_launch(case, tmp_path):
    launch_id, extra, rule, key, said, fix = CASES[case]
    _, _, problems = _imported_check(launch_id, extra, tmp_path)
    found = [p for p in errors(problems) if p.rule == rule]
    assert found, [p.format() for p in errors(problems)]
    p = found[0]
    assert p.key == key and said in p.message and fix in p.fix, p.format()
    assert "trainer_separate_async.py:" in p.message  # the line of the installed verl that would have failed
    # nothing else is wrong with the launch but what the case broke (the reward-model case also breaks the batch
    # invariant: its batch of 8 with a mini-batch of 8 asks parameter_sync_step 1)
    others = {q.rule for q in errors(problems)} - {rule}
    assert others <= ({"async-sync-step"} if case == "reward-model" else set()), [q.format() for q in errors(problems)]
