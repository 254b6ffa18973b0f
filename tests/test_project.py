"""The project's own promises: environment.yml installs the same package as pyproject.toml, CI runs exactly the
README's test command, every module says what it is for, and no heavy or Ascend-only package is imported at
module top level."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN_TOP_LEVEL = {"torch_npu", "vllm", "vllm_ascend", "mindspeed", "megatron", "sglang"}


def test_environment_yml_installs_this_package_with_pyproject_extras():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    python = next(d for d in conda if d.startswith("python"))
    minimum = project["requires-python"].removeprefix(">=")
    assert tuple(int(x) for x in python.split("=")[1].split(".")) >= tuple(int(x) for x in minimum.split("."))
    assert set(conda) == {python, "pip"}, "conda packages beyond python/pip would be a second source of deps"
    assert len(pip) == 1
    match = re.fullmatch(r"-e \.\[([a-z,]+)\]", pip[0])
    assert match, pip
    assert set(match.group(1).split(",")) <= set(project["optional-dependencies"])


def readme_test_command() -> str:
    text = (ROOT / "README.md").read_text()
    block = text.split("## Quick start", 1)[1].split("```", 2)[1]
    commands = [line.split("#")[0].strip() for line in block.splitlines()[1:] if line.split("#")[0].strip()]
    assert len(commands) == 2, commands
    return commands[1]


def test_ci_runs_exactly_the_readme_test_command():
    ci = [
        line.strip()
        for line in (ROOT / ".ci/run").read_text().splitlines()
        if line.strip() and not line.startswith(("#", "set ", "cd "))
    ]
    assert ci == [readme_test_command()]


def test_every_module_has_a_docstring_and_no_heavy_top_level_imports():
    for path in sorted((ROOT / "lib/grpolab").rglob("*.py")):
        tree = ast.parse(path.read_text())
        assert ast.get_docstring(tree), f"{path}: a module docstring says what it is for"
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module.split(".")[0]]
            assert not FORBIDDEN_TOP_LEVEL & set(names), f"{path}: imports {names} at module top level"


def test_scripts_and_benchmarks_have_a_header_with_their_command():
    for path in sorted([*(ROOT / "benchmarks").glob("*.py"), *(ROOT / "scripts").glob("*.py")]):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        assert path.name in doc and (".venv/bin/python" in doc or "python" in doc), path


def test_every_generated_doc_is_what_its_code_writes():
    """scripts/make_docs.py --check (its header's command): docs/causes.md, rules.md and fieldmap.md are current."""
    out = subprocess.run(
        [sys.executable, "scripts/make_docs.py", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.count("is up to date") == 3, out.stdout
