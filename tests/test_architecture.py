"""The layers of lib/grpolab point one way, with no import cycles (README, "Architecture").

The folders are the layers: recipe (schema, loader, model cards, pipeline layouts, pins; with the loose modules
paths, problems and run_folder) -> local (the CPU trainer), verl (renderer, verl's config as data) and importer (a
launch script -> a recipe) -> rules (every check, the one gate) -> plan -> jobs (the head, Ray job control, run
records) -> monitor and preflight -> front ends (cli, notebook). The layers are import-linter's `layers` contract in
pyproject.toml ([tool.importlinter]), exhaustive: a new folder or loose module has to be given a layer there. Every
import counts, a function-level one included: a lazy import hides a loop, it does not remove it."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "grpolab"


def lint_imports(root: Path, lib: Path) -> subprocess.CompletedProcess:
    """import-linter's verdict on the contracts in root/pyproject.toml, for the grpolab package under lib."""
    env = {**os.environ, "PYTHONPATH": str(lib)}
    run = "from importlinter.cli import lint_imports_command; lint_imports_command()"
    return subprocess.run(
        [sys.executable, "-c", run, "--config", str(root / "pyproject.toml"), "--no-cache", "--verbose"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_imports_point_down_the_layers():
    """import-linter's layers contract holds: no import (top-level or inside a function) points up a layer."""
    found = lint_imports(ROOT, ROOT / "lib")
    assert found.returncode == 0, found.stdout + found.stderr


@pytest.mark.parametrize(
    "module, planted",
    [
        ("problems.py", "def _planted():\n    from grpolab.rules import registry\n\n    return registry\n"),
        ("verl/render.py", "def _planted():\n    import grpolab.cli.check\n\n    return grpolab.cli.check\n"),
    ],
)
def test_the_layers_contract_catches_an_upward_lazy_import(tmp_path, module, planted):
    """Shown on a copy: an upward import inside a function breaks the contract and names the import."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(LIB, tmp_path / "lib" / "grpolab", ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "lib" / "grpolab" / module
    target.write_text(target.read_text() + "\n\n" + planted)
    found = lint_imports(tmp_path, tmp_path / "lib")
    name = "grpolab." + module.removesuffix(".py").replace("/", ".")
    assert found.returncode != 0 and "BROKEN" in found.stdout, found.stdout + found.stderr
    assert f"- {name} -> " in found.stdout, found.stdout


def test_a_new_folder_needs_a_layer(tmp_path):
    """The contract is exhaustive: a package under lib/grpolab that no layer names breaks it."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(LIB, tmp_path / "lib" / "grpolab", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "lib" / "grpolab" / "extra").mkdir()
    (tmp_path / "lib" / "grpolab" / "extra" / "__init__.py").write_text('"""A folder no layer names."""\n')
    found = lint_imports(tmp_path, tmp_path / "lib")
    assert found.returncode != 0 and "grpolab.extra" in found.stdout + found.stderr, found.stdout + found.stderr


def module_name(path: Path) -> str:
    parts = path.relative_to(LIB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(LIB.rglob("*.py"))}


def imports(name: str) -> set[str]:
    """The grpolab modules a module imports (anywhere in it)."""
    tree = ast.parse(MODULES[name].read_text())
    package = name if MODULES[name].name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rsplit(".", 1)[0] if "." in target else ""
            if target and target != name and target.startswith("grpolab"):
                found.add(target)
    return found


GRAPH = {name: imports(name) for name in MODULES}


def test_no_import_cycles():
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(GRAPH):
        if v not in index:
            visit(v)
    assert cycles == [], f"import cycles: {cycles}"


def private_reaches(name: str) -> list[str]:
    """`from grpolab.x import _y` and `x._y` on an imported grpolab module: another module's private name."""
    tree = ast.parse(MODULES[name].read_text())
    modules = {}  # local name -> grpolab module it stands for
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("grpolab"):
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                if target in MODULES:
                    modules[alias.asname or alias.name] = target
                elif alias.name.startswith("_") and not alias.name.startswith("__") and node.module != name:
                    found.append(f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("grpolab") and alias.asname:
                    modules[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{modules[node.value.id]}.{node.attr}")
    return sorted(set(found))


def test_no_module_reaches_for_another_modules_private_names():
    """What another module uses is public (named without a leading underscore); private names stay at home."""
    reaches = {name: private_reaches(name) for name in MODULES}
    assert {k: v for k, v in reaches.items() if v} == {}


MAX_MODULE_LINES = 600  # a room of one purpose; a longer module is doing two things (issue 20)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_is_one_room_with_its_purpose_written_down(name):
    """Every module in lib/ says what it is for in its docstring and stays under MAX_MODULE_LINES lines."""
    path = MODULES[name]
    text = path.read_text()
    doc = ast.get_docstring(ast.parse(text))
    assert doc and len(doc.split()) >= 4, f"{name}: a module docstring names its one purpose"
    lines = text.count("\n") + 1
    assert lines <= MAX_MODULE_LINES, f"{name}: {lines} lines; split it by purpose (at most {MAX_MODULE_LINES})"
