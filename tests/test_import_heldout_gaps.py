"""Issue 47, the gaps a held-out set of 2026 launch scripts found (each case here is a script or recipe the test
writes itself; no third-party file is copied or run):

- a script that names no device takes verl's own default trainer.device (cuda, the version table's), not npu, and
  an SGLang launch then gets no false NPU attention-backend error; one that exports variables only Ascend's stack
  reads (VLLM_ASCEND_*, HCCL_*, ASCEND_*) is an NPU launch;
- verl's fully_async_policy sets data.train_batch_size=0 on purpose (its rollouter asserts it): accepted there with
  a warning naming the checks skipped, refused for any other entry point;
- a rollout GRPO Lab does not know: accepted where a plugin (VERL_USE_EXTERNAL_MODULES) registers it, with a warning
  naming the rules skipped; refused naming the rollouts the checked verl registers otherwise;
- a third-party trainer module that takes verl's overrides is named, exit 2, not "no launch line";
- an empty override (`max_model_len=`) is null, not a schema error;
- the async-correction warning names the file that set schedule.mode, not params/base.yaml;
- a resume of a run that takes its own batch does not divide the data by a train batch of 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grpolab.importer import sandbox
from grpolab.importer.script import ImportFailed, import_script, recipe_yaml
from grpolab.jobs.resume import training_budget
from grpolab.rules.gate import check
from grpolab.verl import versions

TRUSTED = sandbox.available() is not None
FLAGS = ("--trusted",) if TRUSTED else ()
BASE = (
    "actor_rollout_ref.model.path=Qwen/Qwen3-8B actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 "
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1 data.train_batch_size=16 "
    "actor_rollout_ref.actor.ppo_mini_batch_size=8 trainer.n_gpus_per_node=8"
)
ASYNC = "verl.experimental.fully_async_policy.fully_async_main"


def _script(tmp_path: Path, body: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nset -euo pipefail\n" + body)
    return script


def _imported(tmp_path: Path, body: str, **kw):
    script = _script(tmp_path, body)
    imported = import_script(script, trusted=TRUSTED, **kw)
    out = tmp_path / f"{imported.name}.yaml"
    out.write_text(recipe_yaml(imported, str(script)))
    return imported, out


def _recipe(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({"defaults": ["base", "hardware/gpu-h100"], **data}))
    return path


def test_a_script_naming_no_device_takes_verls_own_default_and_sglang_gets_no_false_npu_error(tmp_path):
    default = versions.table()["0.9.1"]["defaults"]["trainer.device"]
    imported, out = _imported(
        tmp_path, f"python3 -m verl.trainer.main_ppo {BASE} actor_rollout_ref.rollout.name=sglang\n"
    )
    assert imported.data["cluster"]["device"] == default == "cuda"
    assert "hardware/gpu-h100" in imported.data["defaults"]
    assert any("names no trainer.device" in n and "--device npu" in n for n in imported.notes)
    _, problems = check(out)
    assert not [p for p in problems if p.severity == "error"], [p.format() for p in problems]
    # the user naming the device still decides it
    named, _ = _imported(tmp_path / "npu", f"python3 -m verl.trainer.main_ppo {BASE}\n", device="npu")
    assert named.data["cluster"]["device"] == "npu"


def test_a_script_naming_no_device_but_exporting_ascend_variables_is_an_npu_launch(tmp_path):
    body = "export VLLM_ASCEND_ENABLE_FLASHCOMM1=1\nexport HCCL_CONNECT_TIMEOUT=1800\n"
    imported, out = _imported(tmp_path, body + f"python3 -m verl.trainer.main_ppo {BASE}\n")
    assert imported.data["cluster"]["device"] == "npu"
    assert "exports HCCL_CONNECT_TIMEOUT, VLLM_ASCEND_ENABLE_FLASHCOMM1" in imported.sources["cluster.device"]
    assert not any("--device npu" in n for n in imported.notes)  # no advice to say what the script already says
    # an NCCL variable alone says nothing of the device (NPU scripts set them too): verl's default stays
    cuda, _ = _imported(tmp_path / "nccl", f"export NCCL_DEBUG=INFO\npython3 -m verl.trainer.main_ppo {BASE}\n")
    assert cuda.data["cluster"]["device"] == "cuda"


def test_the_version_table_reads_the_rollouts_and_the_own_batch_entry_points_from_verls_source():
    row = versions.table()["0.9.1"]
    assert sorted(row["rollouts"]["registered"]) == ["sglang", "trtllm", "vllm"]
    assert all(".py:" in where for where in row["rollouts"]["registered"].values())
    assert "VERL_USE_EXTERNAL_MODULES" in row["rollouts"]["external"]
    assert "train_batch_size == 0" in row["own_batch"]["verl.experimental.fully_async_policy"]


def test_a_fully_async_launch_with_train_batch_size_0_imports_and_checks(tmp_path):
    body = (
        f"python3 -m {ASYNC} --config-path=config --config-name=fully_async_ppo_trainer {BASE} "
        "data.train_batch_size=0 actor_rollout_ref.hybrid_engine=False\n"
    )
    imported, out = _imported(tmp_path, body, device="cuda")
    assert imported.data["data"]["train_batch_size"] == 0
    _, problems = check(out)
    assert not [p for p in problems if p.severity == "error"], [p.format() for p in problems]
    said = [p for p in problems if p.key == "data.train_batch_size"]
    assert len(said) == 1 and said[0].severity == "warning" and "batch-divisible" in said[0].message


def test_train_batch_size_0_is_refused_for_the_sync_trainer_naming_who_takes_it(tmp_path):
    path = _recipe(tmp_path, {"model": {"path": "Qwen/Qwen3-8B"}, "data": {"train_batch_size": 0}})
    _, problems = check(path)
    errors = [p for p in problems if p.severity == "error"]
    assert [p.key for p in errors] == ["data.train_batch_size"], [p.format() for p in problems]
    assert "verl.trainer.main_ppo" in errors[0].message and "fully_async_policy" in errors[0].message


def test_a_rollout_a_plugin_registers_is_accepted_with_the_rules_it_skips(tmp_path):
    data = {"model": {"path": "Qwen/Qwen3-8B"}, "rollout": {"engine": "myrollout"}}
    plugin = _recipe(tmp_path, {**data, "env": {"VERL_USE_EXTERNAL_MODULES": "myproj.register"}})
    _, problems = check(plugin)
    assert not [p for p in problems if p.severity == "error"], [p.format() for p in problems]
    said = [p for p in problems if p.key == "rollout.engine"]
    assert len(said) == 1 and said[0].severity == "warning"
    assert "myproj.register" in said[0].message and "rollout-backend" in said[0].message
    (tmp_path / "bare").mkdir()
    _, problems = check(_recipe(tmp_path / "bare", data))
    refused = [p for p in problems if p.key == "rollout.engine"]
    assert len(refused) == 1 and refused[0].severity == "error"
    assert all(name in refused[0].message for name in ("vllm", "sglang", "trtllm"))


def test_a_third_party_trainer_module_is_named_and_refused_with_exit_2(cli, tmp_path):
    script = _script(tmp_path, f"python3 -m myproj.trainer.train_verl {BASE} myproj.filter=true\n")
    with pytest.raises(ImportFailed, match="third-party trainer module.*myproj.trainer.train_verl"):
        import_script(script, trusted=TRUSTED)
    proc = cli("import", str(script), *FLAGS, "--out", "-")
    assert proc.returncode == 2 and "myproj.trainer.train_verl" in proc.stderr
    assert "no launch line" not in proc.stderr and "only verl's entry points" in proc.stderr


def test_an_empty_override_is_null_not_a_schema_error(tmp_path):
    imported, out = _imported(
        tmp_path, f"LEN=\npython3 -m verl.trainer.main_ppo {BASE} actor_rollout_ref.rollout.max_model_len=$LEN\n"
    )
    assert imported.data["rollout"]["max_model_len"] is None
    assert any("max_model_len=: an empty value" in n for n in imported.notes)
    assert "max_model_len= (empty: null)" in out.read_text()
    _, problems = check(out)
    assert not [p for p in problems if p.severity == "error"], [p.format() for p in problems]
    assert not [u for u in imported.unmapped if "max_model_len" in u["key"]]


def test_the_async_correction_warning_names_the_file_that_set_the_mode(tmp_path):
    data = {
        "model": {"path": "Qwen/Qwen3-8B"},
        "cluster": {"nnodes": 2},
        "schedule": {"mode": "separate_async", "rollout_nnodes": 1, "max_off_policy": 4},
    }
    path = _recipe(tmp_path, data)
    _, problems = check(path)
    said = [p for p in problems if p.rule == "async-correction"]
    assert len(said) == 1, [p.format() for p in problems]
    assert said[0].message.startswith(f"{path} (schedule.mode;"), said[0].message
    assert "base.yaml" not in said[0].message


def test_a_resume_of_a_run_that_takes_its_own_batch_counts_no_epochs_by_the_train_batch(tmp_path):
    rows = tmp_path / "train.jsonl"
    rows.write_text('{"prompt": "a"}\n' * 4)
    data = {"model": {"path": "Qwen/Qwen3-8B"}, "data": {"train_files": str(rows), "train_batch_size": 0}}
    data["trainer"] = {"entrypoint": ASYNC, "total_steps": 7}
    recipe, _ = check(_recipe(tmp_path, data))
    assert training_budget(recipe) == (7, "trainer.total_steps")  # not rows // 0
