"""`grpolab import`: a real-style verl launch script -> a recipe whose render gives back the script's launch.

The round trip composes the recorded launch and the render of the written recipe against the installed verl's
config and compares them key by key; bad input exits 2 and writes nothing; the script's side effects (rm, mkdir
outside the scratch directory, kill, ray) never happen; the seed upstream launches, as scripts, import to recipes
that check clean or only warn.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

from grpolab.recipe.loader import load_recipe
from grpolab.verl import config as verl_schema
from grpolab.verl.importer import ImportFailed, record
from grpolab.verl.render import render

DATA = Path(__file__).parent / "data"
SCRIPT = DATA / "import" / "run_qwen3_8b_grpo_npu.sh"
UPSTREAM = DATA / "upstream"
# keys every render owns (the run's logger, checkpoint dir, seed, device) and keys verl derives from names
RUN_OWNED = {"trainer.default_local_dir", "trainer.logger", "data.seed"}


def _effective_diff(argv: list[str], recipe) -> dict:
    name, overrides = verl_schema.split_argv(argv)
    upstream = verl_schema.effective(overrides, name)
    ours_name, ours = verl_schema.split_argv(render(recipe, "/RUN").argv())
    mine = verl_schema.effective(ours, ours_name)
    return {
        k: (upstream.get(k), mine.get(k))
        for k in set(upstream) | set(mine)
        if upstream.get(k) != mine.get(k) and k not in RUN_OWNED
    }


def test_round_trip_gives_back_the_scripts_argv_and_env(cli, tmp_path):
    out = tmp_path / "imported.yaml"
    proc = cli("import", str(SCRIPT), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert result["unmapped"] == [] and not [p for p in result["problems"] if p["severity"] == "error"]
    text = out.read_text()
    assert text.startswith("# Imported from") and "defaults: [base, hardware/ascend-a2]" in text
    # each value from the script carries a comment naming the setting it came from
    assert "tp: 4  # actor_rollout_ref.rollout.tensor_model_parallel_size=4" in text
    assert "ulysses_sp: 2  # actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size=2" in text
    recorded = record(SCRIPT)
    recipe = load_recipe(out)
    assert recipe.model.card == "qwen3_8b" and recipe.cluster.device == "npu"  # the DEVICE probe found npu-smi
    assert _effective_diff(recorded.argv, recipe) == {}
    launch = render(recipe, "/RUN")
    assert recorded.env == {k: v for k, v in launch.env.items() if k in recorded.env}
    assert set(recorded.env) == {
        "HCCL_CONNECT_TIMEOUT",
        "HCCL_HOST_SOCKET_PORT_RANGE",
        "HCCL_NPU_SOCKET_PORT_RANGE",
        "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES",
    }
    # $HOME in the script means the user's home, not the importer's scratch directory
    assert recipe.data.train_files == str(Path.home() / "data/gsm8k/train.parquet")


def test_the_device_probe_and_env_defaults_are_honoured():
    gpu = record(SCRIPT, device="cuda", env={"NDEVICES_PER_NODE": "16", "MODEL_PATH": "/m/Qwen3-4B"})
    assert "trainer.device=gpu" in gpu.argv and "trainer.n_gpus_per_node=16" in gpu.argv
    assert "actor_rollout_ref.model.path=/m/Qwen3-4B" in gpu.argv


def test_the_script_has_no_side_effects(tmp_path):
    sentinel = tmp_path / "keep-me"
    sentinel.write_text("x")
    outside = tmp_path / "made-by-the-script"
    script = tmp_path / "run.sh"
    script.write_text(f"""#!/bin/bash
set -xeuo pipefail
source /nonexistent/env.sh
rm -rf {sentinel}
mkdir -p {outside}
ray stop --force
ray start --head
kill -9 1 || true
pip install something
python3 -m verl.trainer.main_ppo trainer.nnodes=1 2>&1 | tee {tmp_path}/log.txt
""")
    recorded = record(script)
    assert recorded.argv == ["trainer.nnodes=1"] and recorded.tool == "python3"
    assert sentinel.read_text() == "x" and not outside.exists() and not (tmp_path / "log.txt").exists()


@pytest.mark.parametrize(
    "body, message",
    [
        ("\x00\x01binary", "binary"),
        ("#!/usr/bin/env python3\nprint('hi')\n", "not a shell script"),
        ("#!/bin/bash\nif then fi\n", "not a valid bash script"),
        ("#!/bin/bash\necho nothing to launch\n", "no launch line"),
        ("#!/bin/bash\nset -e\nfalse\npython3 -m verl.trainer.main_ppo trainer.nnodes=1\n", "exited with status 1"),
    ],
)
def test_bad_input_exits_2_and_writes_nothing(cli, tmp_path, body, message):
    script = tmp_path / "bad.sh"
    script.write_bytes(body.encode())
    out = tmp_path / "recipe.yaml"
    proc = cli("import", str(script), "--out", str(out))
    assert proc.returncode == 2 and message in proc.stderr and not out.exists()
    proc = cli("import", str(script), "--out", str(out), "--json")
    assert proc.returncode == 2 and not out.exists()
    with pytest.raises(ImportFailed, match=message):
        record(script)


def test_an_existing_output_is_never_overwritten(cli, tmp_path):
    out = tmp_path / "recipe.yaml"
    out.write_text("mine\n")
    proc = cli("import", str(SCRIPT), "--out", str(out))
    assert proc.returncode == 2 and out.read_text() == "mine\n"


def _as_script(args_file: Path, tmp_path: Path) -> Path:
    args = [a.replace("$HOME", "/home/u").replace("$WORK_DIR", "/work/d") for a in args_file.read_text().splitlines()]
    script = tmp_path / f"{args_file.stem}.sh"
    script.write_text("#!/bin/bash\nset -euo pipefail\npython3 " + " ".join(shlex.quote(a) for a in args) + "\n")
    return script


@pytest.mark.parametrize("args_file", sorted(UPSTREAM.glob("*.args")), ids=lambda p: p.stem)
def test_seed_upstream_launches_import_clean_or_with_warnings(cli, tmp_path, args_file):
    out = tmp_path / "r.yaml"
    proc = cli("import", str(_as_script(args_file, tmp_path)), "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)
    assert not [p for p in result["problems"] if p["severity"] == "error"]
    # what is not reproduced is only what verl 0.9.1 cannot take
    assert all(u["key"].endswith("grad_offload") for u in result["unmapped"]), result["unmapped"]
    assert yaml.safe_load(out.read_text())["defaults"][0] == "base"


def test_01_setup_imports_a_script(tmp_path):
    """`-p script run.sh`: 01_setup shows the imported recipe, what it could not reproduce, and the check."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "out.ipynb"
    proc = subprocess.run(
        [
            str(Path(sys.executable).with_name("papermill")),
            str(root / "notebooks" / "01_setup.ipynb"),
            str(out),
            "-p",
            "script",
            str(SCRIPT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
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
        "ray job submit --address=http://127.0.0.1:8265 --runtime-env-json='{}' -- python3 -m verl.trainer.main_ppo",
    ],
)
def test_every_launcher_is_recorded_and_unknown_and_deprecated_keys_are_reported(cli, tmp_path, launcher):
    script = tmp_path / "run.sh"
    script.write_text(
        f"#!/bin/bash\nset -euo pipefail\n{launcher} --config-name=ppo_megatron_trainer "
        "actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.n_gpus_per_node=8 trainer.nnodes=1 "
        "trainer.val_befor_train=False actor_rollout_ref.actor.ppo_micro_batch_size=8\n"
    )
    assert record(script).argv[:2] == [
        "--config-name=ppo_megatron_trainer",
        "actor_rollout_ref.model.path=Qwen/Qwen3-8B",
    ]
    out = tmp_path / "r.yaml"
    proc = cli("import", str(script), "--out", str(out), "--json")
    result = json.loads(proc.stdout)
    assert proc.returncode == 1  # written; the typo the script carries is an error `grpolab check` names
    assert any(p["rule"] == "verl-schema" and "val_befor_train" in p["key"] for p in result["problems"])
    assert "trainer.val_befor_train" in [u["key"] for u in result["unmapped"]]
    deprecated = {d["key"] for d in result["deprecated"]}
    assert deprecated == {"--config-name=ppo_megatron_trainer", "actor_rollout_ref.actor.ppo_micro_batch_size"}
