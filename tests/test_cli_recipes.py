"""The recipe verbs as a user runs them: `grpolab ls | show | check | render`, exit codes, and messages for bad
input (never a traceback); the rendered bash script is strict, passes shellcheck and cannot be injected."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess

import pytest
import yaml

from grpolab.recipe.loader import load_recipe
from grpolab.verl.render import render


def no_traceback(proc):
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def test_ls_lists_every_recipe(cli):
    proc = cli("ls")
    assert proc.returncode == 0
    for name in ("glm5_2", "qwen3_5_122b_a10b_32k", "qwen3_30b_a3b", "qwen3_8b", "tiny"):
        assert name in proc.stdout


def test_show_prints_the_resolved_recipe(cli):
    proc = cli("show", "qwen3_8b", "--set", "cluster.device=npu")
    assert proc.returncode == 0
    data = yaml.safe_load(proc.stdout)
    assert data["cluster"]["device"] == "npu" and data["train"]["ulysses_sp"] == 4


def test_check_passes_shipped_recipe_and_prints_json(cli):
    proc = cli("check", "glm5_2", "--json")
    assert proc.returncode == 0, proc.stdout
    # warnings only: glm5_2 pins CANN 9.1.0, so env-required suggests HCCL_OP_EXPANSION_MODE=AIV
    assert all(p["severity"] == "warning" for p in json.loads(proc.stdout)), proc.stdout
    proc = cli("check", "qwen3_30b_a3b", "--set", "train.tp=8", "--json")
    assert proc.returncode == 1
    problems = json.loads(proc.stdout)
    assert problems and all(set(p) == {"rule", "severity", "key", "value", "message", "fix"} for p in problems)
    assert "kv-heads-tp" in {p["rule"] for p in problems}


def test_unknown_recipe_names_the_closest_and_lists_all(cli):
    proc = cli("check", "glm5")
    assert proc.returncode == 2
    assert "did you mean 'glm5_2'" in proc.stderr and "qwen3_8b" in proc.stderr
    no_traceback(proc)


def test_yaml_syntax_error_names_file_and_line(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("defaults: [base]\nrollout:\n  tp: 4\n   n: 8\n")
    proc = cli("check", str(bad))
    assert proc.returncode == 2
    assert f"{bad}:4:" in proc.stderr and "YAML syntax error" in proc.stderr
    no_traceback(proc)


def test_unknown_keys_and_bad_values_are_all_reported(cli, tmp_path):
    bad = tmp_path / "typos.yaml"
    bad.write_text("defaults: [recipes/qwen3_8b]\nrolout: {tp: 2}\ntrain: {tensor_parallel: 2}\n")
    proc = cli(
        "check",
        str(bad),
        "--set",
        "rollout.gpu_memory_utilization=0",
        "--set",
        "data.train_batch_size=-8",
        "--set",
        "train.pp=two",
    )
    assert proc.returncode == 1
    out = proc.stdout
    assert "did you mean 'rollout'" in out and str(bad) in out
    assert "train.tensor_parallel" in out
    assert "rollout.gpu_memory_utilization" in out and "greater than 0" in out
    assert "data.train_batch_size" in out and "train.pp" in out and "valid integer" in out
    assert "5 error(s)" in out
    no_traceback(proc)


def test_malformed_override_is_unusable_input(cli):
    proc = cli("check", "tiny", "--set", "rollout.tp")
    assert proc.returncode == 2 and "key=value" in proc.stderr
    no_traceback(proc)


def test_render_refuses_a_broken_recipe(cli):
    proc = cli("render", "glm5_2", "--set", "rollout.ep=32")
    assert proc.returncode == 1 and "rollout-ep" in proc.stdout


def test_render_formats(cli):
    proc = cli("render", "glm5_2", "--format", "json")
    launch = json.loads(proc.stdout)
    assert launch["argv"][1:3] == ["-m", "verl.trainer.main_ppo"] and "model_engine=megatron" in launch["overrides"]
    assert launch["env"]["VERL_VLLM_ASCEND_GLM52_PATCH"] == "1"
    assert any(
        o.startswith("+actor_rollout_ref.actor.megatron.override_transformer_config.use_flash_attn=")
        for o in launch["overrides"]
    )
    assert "trainer.logger=[console,file]" in launch["overrides"]
    proc = cli("render", "qwen3_5_122b_a10b_32k")
    assert proc.returncode == 0 and "grad_offload" not in proc.stdout  # not in verl 0.9.1: left out, said so
    assert "grad_offload" in proc.stderr


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (scripts/setup.sh --tools)")
@pytest.mark.parametrize("name", ["glm5_2", "qwen3_5_122b_a10b_32k", "qwen3_30b_a3b", "qwen3_8b", "tiny"])
def test_rendered_script_passes_shellcheck(cli, tmp_path, name):
    proc = cli("render", name, "--format", "sh")
    script = tmp_path / "launch.sh"
    script.write_text(proc.stdout)
    assert "set -euo pipefail" in proc.stdout
    subprocess.run(["bash", "-n", str(script)], check=True)
    lint = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout


def test_shell_metacharacters_cannot_inject(cli, tmp_path):
    """Recipe values full of shell syntax reach python verbatim and run nothing."""
    marker = tmp_path / "pwned"
    evil = f"$(touch {marker})`touch {marker}`; touch {marker} #'\""
    recipe = tmp_path / "evil.yaml"
    recipe.write_text(
        yaml.safe_dump(
            {
                "defaults": ["recipes/qwen3_8b"],
                "data": {"train_files": evil},
                "trainer": {"experiment": evil},
                "env": {"EVIL": evil},
            }
        )
    )
    proc = cli("render", str(recipe), "--format", "sh")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    script = tmp_path / "launch.sh"
    script.write_text(proc.stdout)
    fake = tmp_path / "python"  # stands in for the interpreter: passes the device check, records argv and env
    fake.write_text(
        '#!/usr/bin/env bash\n[ "$1" = -c ] && exit 0\n'
        'printf "%s\\n" "$@" > "$OUT/argv"; printf "%s" "$EVIL" > "$OUT/env"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    run = subprocess.run(
        ["bash", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHON": str(fake), "OUT": str(tmp_path), "RUN_DIR": str(tmp_path / "r")},
    )
    assert run.returncode == 0, run.stderr
    assert not marker.exists()
    assert (tmp_path / "env").read_text() == evil
    argv = (tmp_path / "argv").read_text().splitlines()
    expected = render(load_recipe(recipe), str(tmp_path / "r")).argv()[1:]
    assert argv == expected


def test_check_and_the_notebooks_list_problems_alike(cli, tmp_path):
    """One formatter: `grpolab check` prints the blocks and counts a notebook shows as text, errors first."""
    from grpolab.notebook.display import problems_text
    from grpolab.notebook.setup import check_recipe
    from grpolab.problems import ordered

    bad = tmp_path / "bad.yaml"
    bad.write_text("defaults: [recipes/glm5_2]\nrollout: {ep: 32}\ndata: {max_response_length: 999999}\n")
    proc = cli("check", str(bad))
    _, problems = check_recipe(str(bad))  # 01_setup's check
    text = problems_text(problems)
    assert "nearest yours (grpolab plan)" in text  # the planner's layout hint, in both
    assert proc.returncode == 1 and text.splitlines()[0].startswith("ERROR") and "error(s)" in text
    # the same blocks, in each front end's words: `--set rollout.ep=8 --set ...` on the CLI, a list of overrides
    # (what a notebook's `overrides` parameter takes) in the notebook
    assert "--set rollout.ep=" in proc.stdout and "--set" not in text
    hint = re.search(r'overrides (\["rollout\.ep=[^\]]*\])', text).group(1)
    assert " ".join(f"--set {o}" for o in json.loads(hint)) in proc.stdout
    # and the notebook's check found exactly what check printed
    assert "\n".join(p.format() for p in ordered(problems)) in proc.stdout, proc.stdout
