"""The layers of lib/grpolab point one way, with no import cycles (README, "Architecture").

The folders are the layers: recipe (schema, loader, model cards, pipeline layouts, pins) -> local (the CPU
trainer), verl (renderer, verl's config as data) and importer (a launch script -> a recipe) -> rules (every check, the one gate) -> plan ->
jobs (the head, Ray job control, run records) -> monitor and preflight -> front ends (cli, notebook). Every
import counts, a function-level one included: a lazy import hides a loop, it does not remove it. A new module
goes into one of these folders."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib" / "grpolab"

# folder (or loose module) -> layer; a module may import only from its own layer or lower ones. The layers are
# the folders of lib/grpolab: `ls` shows the architecture.
LAYERS = {
    # the rule registry is a table of plain data that grpolab.problems checks every rule id against
    0: (
        "grpolab",
        "grpolab.paths",
        "grpolab.problems",
        "grpolab.recipe",
        "grpolab.rules.registry",
        "grpolab.run_folder",
    ),
    1: ("grpolab.importer", "grpolab.local", "grpolab.verl"),
    2: ("grpolab.rules",),
    3: ("grpolab.plan",),
    4: ("grpolab.jobs",),
    5: ("grpolab.monitor", "grpolab.preflight"),
    6: ("grpolab.cli", "grpolab.notebook", "grpolab.__main__"),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(LIB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(LIB.rglob("*.py"))}


def layer(name: str) -> int | None:
    best = None
    for level, prefixes in LAYERS.items():
        for prefix in prefixes:
            if name == prefix or (prefix != "grpolab" and name.startswith(prefix + ".")):
                if best is None or len(prefix) > best[1]:
                    best = (level, len(prefix))
    return None if best is None else best[0]


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


def test_every_module_has_a_layer():
    assert [name for name in MODULES if layer(name) is None] == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_point_down_the_layers(name):
    up = sorted(t for t in GRAPH[name] if layer(t) > layer(name))
    assert up == [], f"{name} (layer {layer(name)}) imports from a higher layer: {up}"


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
