"""`grpolab import`: a verl launch script -> a recipe whose render is the same effective launch.

The round trip composes the recorded launch and the render of the written recipe with the installed verl's own
config (verl's run-time aliases applied, numbers compared as numbers, run-owned keys aside: grpolab.verl.config.
differences) and needs no difference. The script runs with the caller's environment; unset variables it read are
listed; a secret becomes a reference; the launchers people use (torchrun, uv run, ray job submit, a recipe's entry
point) are recognised; FSDP2 and deprecated keys keep their effect; device probes answer for the device asked; a
launch that does not compose exits 2 naming the override. Isolation from the machine: tests/test_import_isolation.py.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
import yaml

from grpolab.importer import sandbox
from grpolab.importer.script import import_script, record
from grpolab.recipe.cards import model_facts
from grpolab.recipe.dotted import has_dotted
from grpolab.recipe.loader import load_recipe
from grpolab.verl import config as verl_schema
from grpolab.verl.render import render, to_sh

DATA = Path(__file__).parent / "data"
SCRIPT = DATA / "import" / "run_qwen3_8b_grpo_npu.sh"
UPSTREAM = DATA / "upstream"
# a machine that cannot isolate a script (tests/test_import_isolation.py covers that) runs these trusted
TRUSTED = sandbox.available() is not None
FLAGS = ("--trusted",) if TRUSTED else ()
# what a launch needs besides the keys a test is about (verl has no default for these)
COMPLETE = (
    "actor_rollout_ref.rollout.name=vllm actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1 "
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1"
)


def same_launch(recorded, recipe) -> dict:
    """{key: (script, render)} over every key a worker reads; {} for the same effective launch. A key the installed
    verl lacks (grad_offload) cannot compose: the script is composed without it (the recipe keeps it in its field)."""
    name, overrides = verl_schema.split_argv(recorded.argv)
    config = verl_schema.base_config(recipe.train.engine)
    lacking = [
        o.split("=", 1)[0].lstrip("+")
        for o in overrides
        if not o.startswith("+") and "." in o.split("=", 1)[0] and not has_dotted(config, o.split("=", 1)[0])
    ]
    upstream = verl_schema.effective([o for o in overrides if o.split("=", 1)[0].lstrip("+") not in lacking], name)
    return verl_schema.differences(upstream, render(recipe, "/RUN").argv(), recipe.train.engine, skip=lacking)


def _script(tmp_path: Path, body: str, name: str = "run.sh") -> Path:
    script = tmp_path / name
    script.write_text("#!/bin/bash\nset -euo pipefail\n" + body)
    return script


def test_round_trip_gives_back_the_scripts_launch_and_env(cli, tmp_path):
    out = tmp_path / "imported.yaml"
    proc = cli("import", str(SCRIPT), *FLAGS, "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["unmapped"] == [] and not [p for p in result["problems"] if p["severity"] == "error"]
    text = out.read_text()
    assert text.startswith("# Imported from") and "defaults: [base, hardware/ascend-a2]" in text
    # each value from the script carries a comment naming the setting it came from
    assert "tp: 4  # actor_rollout_ref.rollout.tensor_model_parallel_size=4" in text
    assert "ulysses_sp: 2  # actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=2" in text
    recorded = record(SCRIPT, trusted=TRUSTED)
    recipe = load_recipe(out)
    assert recipe.cluster.device == "npu"  # the DEVICE probe found npu-smi
    facts, _ = model_facts(recipe)  # the model's facts come from its name (grpolab.recipe.cards), no card is written
    assert recipe.model.card is None and facts is not None and facts.num_layers == 36
    assert same_launch(recorded, recipe) == {}
    launch = render(recipe, "/RUN")
    assert recorded.env == {k: v for k, v in launch.env.items() if k in recorded.env}
    assert set(recorded.env) == {
        "HCCL_CONNECT_TIMEOUT",
        "HCCL_HOST_SOCKET_PORT_RANGE",
        "HCCL_NPU_SOCKET_PORT_RANGE",
        "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES",
    }
    # $HOME in the script means the user's home
    assert recipe.data.train_files == str(Path.home() / "data/gsm8k/train.parquet")
    # the variables it read unset, each with the default it used
    unset = {u["name"]: u["default"] for u in result["unset"]}
    assert unset["MODEL_PATH"] == "Qwen/Qwen3-8B" and "NNODES" in unset and "HOME" not in unset


def test_the_callers_environment_reaches_the_script_and_unset_variables_are_listed(cli, tmp_path):
    path = tmp_path / "run.sh"
    path.write_text(
        "#!/bin/bash\n"
        'python3 -m verl.trainer.main_ppo data.train_files="${WORK_DIR}/datasets/x.parquet" '
        "actor_rollout_ref.model.path=${MODEL:-Qwen/Qwen3-8B} data.val_files=${VAL_DIR}/v.parquet\n"
    )
    imported = import_script(path, env={**os.environ, "WORK_DIR": "/mnt/work"}, trusted=TRUSTED)
    assert imported.data["data"]["train_files"] == "/mnt/work/datasets/x.parquet"  # not /datasets/x.parquet
    assert {u["name"]: u["default"] for u in imported.unset} == {"MODEL": "Qwen/Qwen3-8B", "VAL_DIR": None}
    proc = cli("import", str(path), *FLAGS, "--out", "-", env={"WORK_DIR": "/mnt/work"})
    assert "unset in your environment: $VAL_DIR (it expanded empty)" in proc.stderr
    assert "$MODEL (the script's default 'Qwen/Qwen3-8B' applied)" in proc.stderr


def test_a_secret_becomes_a_reference_with_a_note(cli, tmp_path):
    script = _script(
        tmp_path,
        "export WANDB_API_KEY=${WANDB_API_KEY}\nexport HF_TOKEN=hf_written_in_the_script_123\nexport NCCL_DEBUG=WARN\n"
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.logger='[console,wandb]'\n",
    )
    out = tmp_path / "r.yaml"
    proc = cli("import", str(script), *FLAGS, "--out", str(out), env={"WANDB_API_KEY": "wandb-secret-value-42"})
    assert proc.returncode in (0, 1), proc.stderr
    text = out.read_text()
    assert "wandb-secret-value-42" not in text + proc.stdout + proc.stderr
    assert "hf_written_in_the_script_123" not in text
    env = yaml.safe_load(text)["env"]
    assert (
        env["WANDB_API_KEY"] == "${WANDB_API_KEY}" and env["HF_TOKEN"] == "${HF_TOKEN}" and env["NCCL_DEBUG"] == "WARN"
    )
    assert "WANDB_API_KEY: ${WANDB_API_KEY}  # a secret: read from $WANDB_API_KEY of the shell that launches" in text
    # the render reads the reference from the launching shell; the bash script reads it itself
    os.environ["WANDB_API_KEY"] = "wandb-secret-value-42"
    try:
        launch = render(load_recipe(out), "/RUN")
    finally:
        del os.environ["WANDB_API_KEY"]
    assert (
        launch.env["WANDB_API_KEY"] == "wandb-secret-value-42"
        and launch.shown_env()["WANDB_API_KEY"] == "${WANDB_API_KEY}"
    )
    sh = cli("render", str(out), "--format", "sh", env={"WANDB_API_KEY": "wandb-secret-value-42"})
    assert 'export WANDB_API_KEY="${WANDB_API_KEY:?' in sh.stdout and "wandb-secret-value-42" not in sh.stdout


def test_the_notebook_and_the_cli_import_a_script_through_one_path(cli, tmp_path, monkeypatch):
    """01_setup's `script` and `grpolab import` call the one import (grpolab.importer.script.import_script), whose
    secret test is the recipe layer's: a token written in clear in the script becomes a reference in both, and a
    plain variable read from the caller's environment keeps its value in both (it is no secret)."""
    from grpolab.notebook import from_script

    script = _script(
        tmp_path,
        "export HF_TOKEN=hf_written_in_clear_123\nexport NCCL_DEBUG=${NCCL_DEBUG}\n"
        f"python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B {COMPLETE}\n",
    )
    expected = {"HF_TOKEN": "${HF_TOKEN}", "NCCL_DEBUG": "INFO"}
    out = tmp_path / "cli.yaml"
    proc = cli("import", str(script), *FLAGS, "--out", str(out), env={"NCCL_DEBUG": "INFO"})
    assert proc.returncode in (0, 1), proc.stderr
    assert yaml.safe_load(out.read_text())["env"] == expected and "hf_written_in_clear_123" not in out.read_text()
    if TRUSTED:  # no isolation here: the notebook (which never passes --trusted) refuses, as it should
        return
    monkeypatch.setenv("GRPOLAB_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    written = Path(from_script(str(script), "tiny"))
    assert written.parent == tmp_path / "runs" / ".imports"
    assert (
        yaml.safe_load(written.read_text())["env"] == expected and "hf_written_in_clear_123" not in written.read_text()
    )


@pytest.mark.parametrize("device, expected", [("npu", "npu"), ("cuda", "gpu")])
def test_device_probes_answer_for_the_device_asked(tmp_path, device, expected):
    script = _script(
        tmp_path,
        "if python3 -c 'import torch; import torch_npu' >/dev/null 2>&1; then A=npu; else A=gpu; fi\n"
        "if npu-smi info >/dev/null 2>&1; then B=npu; else B=gpu; fi\n"
        "if nvidia-smi >/dev/null 2>&1; then C=gpu; else C=npu; fi\n"
        'N=$(python3 -c "import torch; print(torch.cuda.device_count())")\n'
        "python3 -m verl.trainer.main_ppo +a=$A +b=$B +c=$C +n=$N\n",
    )
    recorded = record(script, device=device, devices=4, trusted=TRUSTED)
    assert recorded.argv == [f"+a={expected}", f"+b={expected}", f"+c={expected}", f"+n={4 if device == 'cuda' else 0}"]
    env = {**os.environ, "NDEVICES_PER_NODE": "16", "MODEL_PATH": "/m/Qwen3-4B"}
    gpu = record(SCRIPT, device="cuda", env=env, trusted=TRUSTED)
    assert "trainer.device=gpu" in gpu.argv and "trainer.n_gpus_per_node=16" in gpu.argv  # the script's GPU branch
    assert "actor_rollout_ref.model.path=/m/Qwen3-4B" in gpu.argv


@pytest.mark.parametrize(
    "body, message",
    [
        ("\x00\x01binary", "binary"),
        ("#!/usr/bin/env python3\nprint('hi')\n", "not a shell script"),
        ("#!/bin/bash\nif then fi\n", "not a valid bash script"),
        ("#!/bin/bash\necho nothing to launch\n", "no launch line"),
        ("#!/bin/bash\nset -e\nfalse\npython3 -m verl.trainer.main_ppo trainer.nnodes=1\n", "exited with status 1"),
        ("#!/bin/bash\nset -u\necho $NEEDED_DIR\npython3 -m verl.trainer.main_ppo\n", "it needs $NEEDED_DIR"),
        ("#!/bin/bash\npython3 -m verl.trainer.sft_trainer data.x=1\n", "no launch line"),
        ("#!/bin/bash\npython3 -m verl.trainer.main_ppo 'data.train_files=[unclosed'\n", "is not a Hydra override"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(cli, tmp_path, body, message):
    script = tmp_path / "bad.sh"
    script.write_bytes(body.encode())
    out = tmp_path / "recipe.yaml"
    proc = cli("import", str(script), *FLAGS, "--out", str(out))
    assert proc.returncode == 2 and message in proc.stderr and not out.exists(), proc.stderr
    proc = cli("import", str(script), *FLAGS, "--out", str(out), "--json")
    assert proc.returncode == 2 and not out.exists()
    assert json.loads(proc.stdout)["exit"] == 2


def test_a_launch_that_does_not_compose_exits_2_naming_the_override(cli, tmp_path):
    script = _script(
        tmp_path,
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.val_befor_train=False\n",
    )
    out = tmp_path / "r.yaml"
    proc = cli("import", str(script), *FLAGS, "--out", str(out))
    assert proc.returncode == 2 and not out.exists()
    assert "trainer.val_befor_train=False" in proc.stderr and "Could not override" in proc.stderr
    assert "internal error" not in proc.stderr and "grpolab-import-" not in proc.stderr  # no scratch path
    own = _script(
        tmp_path, "python3 -m verl.trainer.main_ppo --config-path=/opt/cfg --config-name=mine a.b=1\n", "o.sh"
    )
    proc = cli("import", str(own), *FLAGS, "--out", str(out))
    assert proc.returncode == 2 and "composes its own Hydra config (--config-path=/opt/cfg)" in proc.stderr


def test_an_existing_output_is_never_overwritten(cli, tmp_path):
    out = tmp_path / "recipe.yaml"
    out.write_text("mine\n")
    proc = cli("import", str(SCRIPT), *FLAGS, "--out", str(out))
    assert proc.returncode == 2 and out.read_text() == "mine\n"


def _as_script(args_file: Path, tmp_path: Path) -> Path:
    args = [a.replace("$HOME", "/home/u").replace("$WORK_DIR", "/work/d") for a in args_file.read_text().splitlines()]
    script = tmp_path / f"{args_file.stem}.sh"
    script.write_text("#!/bin/bash\nset -euo pipefail\npython3 " + " ".join(shlex.quote(a) for a in args) + "\n")
    return script


@pytest.mark.parametrize("args_file", sorted(UPSTREAM.glob("*.args")), ids=lambda p: p.stem)
def test_seed_upstream_launches_import_to_the_same_launch(cli, tmp_path, args_file):
    out = tmp_path / "r.yaml"
    script = _as_script(args_file, tmp_path)
    proc = cli("import", str(script), *FLAGS, "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert not [p for p in result["problems"] if p["severity"] == "error"]
    assert result["unmapped"] == [], result["unmapped"]  # grad_offload (not in verl 0.9.1) is kept in its field
    assert yaml.safe_load(out.read_text())["defaults"][0] == "base"
    assert same_launch(record(script, trusted=TRUSTED), load_recipe(out)) == {}


@pytest.mark.skipif(TRUSTED, reason="01_setup imports isolated; this machine cannot isolate a script")
def test_01_setup_imports_a_script(tmp_path, readme_command):
    """`-p script run.sh`: 01_setup shows the imported recipe, what it could not reproduce, and the check. The
    README's command as written (tests/test_readme.py leaves it to this test)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "out.ipynb"
    argv = readme_command(".venv/bin/papermill notebooks/01_setup.ipynb out.ipynb -p script")
    assert argv[1:3] == ["notebooks/01_setup.ipynb", "out.ipynb"] and argv[3:] == [
        "-p",
        "script",
        str(SCRIPT.relative_to(root)),
    ]
    proc = subprocess.run(
        [argv[0], argv[1], str(out), *argv[3:]], capture_output=True, text=True, timeout=300, cwd=root
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    said = proc.stdout + proc.stderr
    assert "Traceback" not in said, said[max(0, said.find("Traceback") - 2000) :][:6000]
    text = out.read_text()
    assert (
        "# Imported from" in text and "not reproduced" in text and "every setting of the script is reproduced" in text
    )
    assert "recipe run_qwen3_8b_grpo_npu: ready to launch" in text
    # the imported recipe is kept in runs/ (this test's own), not in a temporary folder nobody cleans
    kept = tmp_path / "runs" / ".imports" / "run_qwen3_8b_grpo_npu.yaml"
    assert kept.is_file() and str(kept) in text and "# Imported from" in kept.read_text()
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/bin/bash\necho nothing to launch\n")
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("papermill")),
            str(root / "notebooks" / "01_setup.ipynb"),
            str(tmp_path / "bad.ipynb"),
            "-p",
            "script",
            str(bad),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    assert proc.returncode != 0 and "no launch line" in (tmp_path / "bad.ipynb").read_text()


@pytest.mark.parametrize(
    "launcher",
    [
        "torchrun --nnodes=1 --nproc_per_node=8 -m verl.trainer.main_ppo",
        "uv run --with verl python3 -m verl.trainer.main_ppo",
        'ray job submit --address=http://10.0.0.1:8265 --runtime-env-json=\'{"env_vars": {"A": "1"}, '
        '"pip": ["x"]}\' --working-dir /src -- python3 -m verl.trainer.main_ppo',
        "python3 /opt/verl/verl/trainer/main_ppo.py",
    ],
)
def test_every_launcher_is_recorded(cli, tmp_path, launcher):
    script = _script(
        tmp_path,
        f"{launcher} --config-name=ppo_megatron_trainer actor_rollout_ref.model.path=Qwen/Qwen3-8B "
        "trainer.n_gpus_per_node=8 trainer.nnodes=1 actor_rollout_ref.actor.ppo_micro_batch_size=8\n",
    )
    recorded = record(script, trusted=TRUSTED)
    assert recorded.module == "verl.trainer.main_ppo"
    assert recorded.argv[:2] == ["--config-name=ppo_megatron_trainer", "actor_rollout_ref.model.path=Qwen/Qwen3-8B"]
    out = tmp_path / "r.yaml"
    result = json.loads(cli("import", str(script), *FLAGS, "--out", str(out), "--json").stdout)
    deprecated = {d["key"] for d in result["deprecated"]}
    assert deprecated == {"--config-name=ppo_megatron_trainer", "actor_rollout_ref.actor.ppo_micro_batch_size"}
    data = yaml.safe_load(out.read_text())
    assert data["train"]["engine"] == "megatron"
    if launcher.startswith("ray"):  # the submission's settings become the recipe's cluster settings
        assert data["cluster"]["ray_address"] == "http://10.0.0.1:8265"
        assert data["cluster"]["runtime_env"] == {"pip": ["x"], "working_dir": "/src"} and data["env"]["A"] == "1"
        recipe = load_recipe(out)
        sh = to_sh(render(recipe), recipe)
        assert "ray job submit --address" in sh and "RAY_ADDRESS=http://10.0.0.1:8265" in sh


def test_a_recipe_entry_point_is_kept_and_rendered_back(cli, tmp_path):
    script = _script(
        tmp_path,
        "python3 -m recipe.dapo.main_dapo actor_rollout_ref.model.path=Qwen/Qwen3-8B data.gen_batch_size=32 "
        f"algorithm.filter_groups.enable=True trainer.n_gpus_per_node=8 {COMPLETE}\n",
    )
    out = tmp_path / "r.yaml"
    proc = cli("import", str(script), *FLAGS, "--out", str(out), "--json")
    assert proc.returncode in (0, 1), proc.stderr
    recipe = load_recipe(out)
    assert recipe.trainer.entrypoint == "recipe.dapo.main_dapo"
    assert render(recipe, "/RUN").argv()[1:3] == ["-m", "recipe.dapo.main_dapo"]
    assert same_launch(record(script, trusted=TRUSTED), recipe) == {}


def test_fsdp2_and_deprecated_keys_keep_their_effect(tmp_path):
    script = _script(
        tmp_path,
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B "
        "actor_rollout_ref.actor.strategy=fsdp2 actor_rollout_ref.ref.strategy=fsdp2 "
        "actor_rollout_ref.actor.ulysses_sequence_parallel_size=4 actor_rollout_ref.model.use_remove_padding=True "
        f"{COMPLETE}\n",
    )
    imported = import_script(script, trusted=TRUSTED)
    assert imported.data["train"]["fsdp_strategy"] == "fsdp2"
    assert imported.data["train"]["ulysses_sp"] == 4  # verl copies the deprecated key into fsdp_config: SP 4, not 1
    assert imported.unmapped == []


def test_reconciliation_runs_when_check_fails(cli, tmp_path):
    """The script leaves val_before_train to verl (true); base.yaml says false: the recipe must say true even when
    the recipe does not pass check (here: no model card for this model)."""
    script = _script(tmp_path, "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=/nowhere/Unknown-7B\n")
    out = tmp_path / "r.yaml"
    proc = cli("import", str(script), *FLAGS, "--out", str(out), "--json")
    data = yaml.safe_load(out.read_text())
    assert proc.returncode in (0, 1)
    assert data["trainer"]["val_before_train"] is True and data["trainer"]["total_epochs"] == 30
    assert data["algorithm"]["use_kl_loss"] is False  # verl's default, not base.yaml's true


def test_what_verl_accepts_check_accepts(cli, tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        "defaults: [recipes/qwen3_30b_a3b]\ntrainer: {logger: console}\ntrain: {vpp: null}\n"
        "rollout: {engine: sglang, attention_backend: ascend}\nalgorithm: {loss_agg_mode: token-sum, kl_loss_type: k3+}\n"
    )
    proc = cli("check", str(recipe), "--json")
    problems = json.loads(proc.stdout)
    assert not [p for p in problems if p["rule"] == "schema"], problems
    assert load_recipe(recipe).trainer.logger == ["console"] and load_recipe(recipe).train.vpp == 1
