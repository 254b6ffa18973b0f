"""`grpolab render --format sh`: every name or value from a recipe reaches the generated bash script quoted.

A recipe file named `evil$(echo${IFS}INJECTED>&2).yaml` renders a script that, run, prints nothing of it and passes
shellcheck; a name with a newline (which could end the header comment and start a command) is refused; a Ray address,
a runtime env and an env reference read from the shell go through `ray job submit` verbatim.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from grpolab.recipe.loader import load_recipe
from grpolab.verl.render import render

EVIL = "evil$(echo${IFS}INJECTED>&2)"
shellcheck = pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed (setup --tools)")


def _fake(tmp_path: Path, name: str) -> Path:
    """Stands in for python or ray: passes the device check (the runtime env's JSON is built for real), records its
    argv and the env it got."""
    fake = tmp_path / "bin" / name
    fake.parent.mkdir(exist_ok=True)
    fake.write_text(
        '#!/usr/bin/env bash\nif [ "$1" = -c ]; then case "$2" in *json*) exec python3 "$@" ;; *) exit 0 ;; esac; fi\n'
        f'printf "%s\\n" "$@" > "$OUT/{name}.argv"; printf "%s" "${{HF_TOKEN:-}}" > "$OUT/{name}.env"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    return fake


def _run(script: str, tmp_path: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    path = tmp_path / "launch.sh"
    path.write_text(script)
    fake = _fake(tmp_path, "python")
    _fake(tmp_path, "ray")
    return subprocess.run(
        ["bash", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={
            **os.environ,
            "PATH": f"{fake.parent}:{os.environ['PATH']}",
            "PYTHON": str(fake),
            "OUT": str(tmp_path),
            **(env or {}),
        },
    )


def _lint(script: str, tmp_path: Path) -> None:
    """shellcheck finds nothing (its `info` that `$(...)` does not expand in single quotes is the point)."""
    path = tmp_path / "lint.sh"
    path.write_text(script)
    lint = subprocess.run(["shellcheck", "--severity=warning", str(path)], capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout


@shellcheck
def test_a_recipe_name_with_a_command_substitution_runs_nothing(cli, tmp_path):
    recipe = tmp_path / f"{EVIL}.yaml"
    recipe.write_text("defaults: [recipes/qwen3_8b]\n")
    proc = cli("render", str(recipe), "--format", "sh")
    assert proc.returncode == 0, proc.stderr
    assert EVIL in proc.stdout  # named in the header comment, as it is
    _lint(proc.stdout, tmp_path)
    run = _run(proc.stdout, tmp_path, {"RUN_DIR": ""})  # the script names the run folder after the recipe
    assert run.returncode == 0, run.stderr
    assert "INJECTED" not in run.stdout + run.stderr
    runs = [p.name for p in (tmp_path / "runs").iterdir()]
    assert len(runs) == 1 and runs[0].startswith("evil__echo__IFS_INJECTED__2_-")
    assert (tmp_path / "python.argv").read_text().splitlines()[:2] == ["-m", "verl.trainer.main_ppo"]


def test_a_recipe_name_with_a_newline_is_refused(cli, tmp_path):
    recipe = tmp_path / "evil\necho INJECTED >&2\n.yaml"
    recipe.write_text("defaults: [recipes/qwen3_8b]\n")
    proc = cli("render", str(recipe), "--format", "sh")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "control character" in proc.stderr and "Traceback" not in proc.stderr


@shellcheck
def test_ray_submission_settings_and_env_references_reach_ray_verbatim(cli, tmp_path):
    address = "http://10.0.0.1:8265/$(echo INJECTED >&2)"
    recipe = tmp_path / "submitted.yaml"
    recipe.write_text(
        yaml.safe_dump(
            {
                "defaults": ["recipes/qwen3_8b"],
                "cluster": {"ray_address": address, "runtime_env": {"working_dir": "/src/'x'", "pip": ["a b"]}},
                "env": {"HF_TOKEN": "${HF_TOKEN}", "PLAIN": "it's $(fine)"},
            }
        )
    )
    proc = cli("render", str(recipe), "--format", "sh", env={"HF_TOKEN": "hf_value_from_the_shell"})
    assert proc.returncode == 0, proc.stderr
    assert "hf_value_from_the_shell" not in proc.stdout and "ray job submit --address" in proc.stdout
    _lint(proc.stdout, tmp_path)
    run = _run(proc.stdout, tmp_path, {"HF_TOKEN": "hf_value_from_the_shell", "RAY_ADDRESS": ""})
    assert run.returncode == 0, run.stderr
    assert "INJECTED" not in run.stdout + run.stderr
    argv = (tmp_path / "ray.argv").read_text().splitlines()
    assert argv[:4] == ["job", "submit", "--address", address]
    runtime = yaml.safe_load(argv[argv.index("--runtime-env-json") + 1])
    assert runtime["working_dir"] == "/src/'x'" and runtime["pip"] == ["a b"]
    assert (
        runtime["env_vars"]["HF_TOKEN"] == "hf_value_from_the_shell" and runtime["env_vars"]["PLAIN"] == "it's $(fine)"
    )
    expected = render(load_recipe(recipe), "${RUN_DIR}").argv()[1:]
    after = argv[argv.index("--") + 2 :]  # `-- python3 ARGS`
    assert [a for a in after if "RUN_DIR" not in a and "/runs/" not in a] == [a for a in expected if "RUN_DIR" not in a]


def test_a_rendering_note_never_shows_a_secret_value(monkeypatch, capsys):
    """`grpolab render` prints the renderer's notes on stderr: redacted like everything else it prints, whatever a
    note quotes (here one that quotes the value of a setting which copies the token), --show-secrets or not."""
    import dataclasses

    import grpolab.cli
    from grpolab.problems import Problem
    from grpolab.verl import render as render_module

    secret = "hf_secret_in_a_note_1234"
    real = render_module.render

    def noting(recipe, *args, **kwargs):
        launch = real(recipe, *args, **kwargs)
        note = Problem("verl-schema", "warning", "data.train_files", secret, f"cannot read {secret!r}", "fix it")
        return dataclasses.replace(launch, notes=[*launch.notes, note])

    monkeypatch.setattr(render_module, "render", noting)
    for extra in ([], ["--format", "json"], ["--show-secrets"]):
        code = grpolab.cli.main(["render", "tiny", "--set", f"env.HF_TOKEN={secret}", *extra])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert "cannot read '***redacted***'" in err and secret not in err, (extra, err)
        if not extra or extra[0] == "--format":
            assert secret not in out
