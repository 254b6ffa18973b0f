"""The layers of lib/grpolab point one way, with no import cycles (README, "Architecture").

The folders are the layers: recipe (schema, loader, model cards, pipeline layouts, pins; with the loose modules
paths, problems and run_folder) -> local (the CPU trainer), verl (renderer, verl's config as data) and importer (a
launch script -> a recipe) -> rules (every check, the one gate) -> plan -> jobs (the head, Ray job control, run
records) -> monitor and preflight -> front ends (cli, notebook). The layers are import-linter's `layers` contract in
pyproject.toml ([tool.importlinter]), exhaustive: a new folder or loose module has to be given a layer there. Every
import counts, a function-level one included: a lazy import hides a loop, it does not remove it. And an import
is lazy (inside a function) only where it loads a third-party package its module does not load at import time, with
a `# lazy: PACKAGE (why)` comment; the standard library and what the module loads already go at the top."""

from __future__ import annotations

import ast
import functools
import io
import os
import re
import shutil
import subprocess
import sys
import tokenize
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


# --- function-level imports: only where heavy, and then saying why ------------------------------------------------
# A function-level import is lazy on purpose: it loads a third-party package (torch, ray, pydantic, yaml, numpy...)
# that its module does not load at import time, so that importing the module (the CLI's parser imports every verb's
# module; `import grpolab.monitor` in a notebook) stays fast. Measured statically, from the source alone: what a
# grpolab module loads at import time is the third-party top-level packages its module-level imports name, its
# packages' __init__ modules' and, transitively, those of every grpolab module they import (an `if TYPE_CHECKING:`
# block loads nothing; what a third-party package loads in turn is not followed). The standard library is cheap.
LAZY = re.compile(r"#\s*lazy:\s*\S")
THIRD_PARTY_EXEMPT = frozenset(sys.stdlib_module_names) | {"grpolab", "__future__"}


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The dotted names an import statement loads (`from a import b`: a, and a.b when that is a module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([base] if base else []))
    return [base] + [f"{base}.{a.name}" for a in node.names]


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def import_statements(tree: ast.AST):
    """(import node, inside a function) for every import that runs: `if TYPE_CHECKING:` blocks are skipped."""

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if _is_type_checking(child):
                for other in child.orelse:
                    yield from walk(ast.Module(body=[other], type_ignores=[]), in_function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            yield from walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    yield from walk(tree, False)


class Loads:
    """The third-party packages each grpolab module under `lib` loads at import time (see the comment above)."""

    def __init__(self, lib: Path) -> None:
        self.paths = {module_name_in(p, lib): p for p in sorted(lib.rglob("*.py"))}
        self.trees = {name: ast.parse(path.read_text()) for name, path in self.paths.items()}
        self.memo: dict[str, frozenset[str]] = {}

    def package_of(self, name: str) -> str:
        return name if self.paths[name].name == "__init__.py" else name.rsplit(".", 1)[0]

    def brought(self, dotted: list[str]) -> tuple[set[str], set[str]]:
        """(grpolab modules, third-party packages) that importing these dotted names runs: a module's packages too."""
        own, outside = set(), set()
        for target in dotted:
            top = target.split(".")[0]
            if top == "grpolab":
                parts = target.split(".")
                own.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in self.paths)
            elif top and top not in THIRD_PARTY_EXEMPT:
                outside.add(top)
        return own, outside

    @functools.cache  # noqa: B019 (one Loads per test session or planted copy)
    def direct(self, name: str) -> tuple[set[str], set[str]]:
        """(grpolab modules, third-party packages) that module `name`'s own module-level imports load."""
        own, outside = self.brought([name])  # its packages' __init__ modules run first
        for node, in_function in import_statements(self.trees[name]):
            if not in_function:
                more_own, more_outside = self.brought(_targets(node, self.package_of(name)))
                own |= more_own
                outside |= more_outside
        return own - {name}, outside

    def at_import(self, name: str) -> frozenset[str]:
        """Every third-party package importing `name` loads: over every grpolab module it reaches at import time."""
        if name not in self.memo:
            reached, todo, outside = {name}, [name], set()
            while todo:
                own, more = self.direct(todo.pop())
                outside |= more
                todo += sorted(own - reached)
                reached |= own
            self.memo[name] = frozenset(outside)
        return self.memo[name]

    def lazy_import_faults(self, name: str) -> list[str]:
        """Each function-level import of module `name` that has no `# lazy: why` comment naming a package it
        loads, or that loads no third-party package the module does not load already (cheap: it belongs at the top)."""
        text = self.paths[name].read_text()
        comments = {
            tok.start[0]: (tok.string, tok.line.strip().startswith("#"))
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        }
        mine, faults, covered = self.at_import(name), [], {}
        lazy = sorted(
            (n for n, in_function in import_statements(self.trees[name]) if in_function), key=lambda n: n.lineno
        )
        for node in lazy:
            own, outside = self.brought(_targets(node, self.package_of(name)))
            for other in own:
                outside |= self.at_import(other)
            new = sorted(outside - mine)
            shown = f"{self.paths[name].name}:{node.lineno} {ast.unparse(node)}"
            if not new:
                faults.append(
                    f"{shown}: cheap here (it loads no package {name} does not load already): import it at the top"
                )
                continue
            said = [comments[line][0] for line in range(node.lineno, node.end_lineno + 1) if line in comments]
            line, block = node.lineno - 1, []
            while line in comments and comments[line][1]:  # the comment lines right above, up to `# lazy:`
                block.insert(0, comments[line][0].lstrip("# "))
                if LAZY.search(comments[line][0]):
                    said.append("# " + " ".join(block))
                    break
                line -= 1
            reason = next((c for c in said if LAZY.search(c)), None)
            if reason is None:  # a group of consecutive imports under one comment
                reason = covered.get(node.lineno - 1)
            if reason is None:
                faults.append(f"{shown}: lazy without a `# lazy: why` comment (it loads {', '.join(new)})")
            elif not any(re.search(rf"\b{re.escape(p)}\b", reason, re.IGNORECASE) for p in new):
                faults.append(f"{shown}: its comment {reason!r} names none of the packages it loads ({', '.join(new)})")
            covered[node.end_lineno] = reason
        return faults


def module_name_in(path: Path, lib: Path) -> str:
    parts = path.relative_to(lib.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


LOADS = Loads(LIB)


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_function_level_import_is_heavy_and_says_why(name):
    """An import inside a function loads a package its module does not load at import time, and a `# lazy:`
    comment (on the line or right above it; one may head a group of consecutive imports) names it and says why."""
    assert LOADS.lazy_import_faults(name) == []


def test_what_a_module_loads_at_import_is_measured():
    """The measure sees through packages and transitive imports: the CLI's parser loads none of the heavy packages,
    the recipe loader pydantic and yaml, any notebook module IPython (the package's __init__ imports display)."""
    assert LOADS.at_import("grpolab.cli") & {"pydantic", "yaml", "torch", "ray"} == set()
    assert {"pydantic", "yaml"} <= LOADS.at_import("grpolab.recipe.loader")
    assert "IPython" in LOADS.at_import("grpolab.notebook.setup")
    assert LOADS.at_import("grpolab.problems") == frozenset()


LAZY_PLANTS = {
    # module: (planted function, what the check says of it)
    "problems.py": ("def _p():\n    import json\n\n    return json\n", "import json: cheap here"),
    "rules/gate.py": (
        "def _p():\n    from grpolab.recipe.loader import load_recipe  # lazy: pydantic (fast)\n\n    return load_recipe\n",
        "from grpolab.recipe.loader import load_recipe: cheap here",
    ),
    "recipe/dotted.py": ("def _p():\n    import torch\n\n    return torch\n", "import torch: lazy without a"),
    "cli/check.py": (
        "def _p():\n    # lazy: torch (seconds to import)\n    from grpolab.recipe.loader import load_recipe\n\n"
        "    return load_recipe\n",
        "names none of the packages it loads (pydantic, yaml)",
    ),
}


def test_the_lazy_import_check_catches_planted_cases(tmp_path):
    """Shown on a copy: a lazy import of the standard library, one of a module its importer loads already, one
    without a comment, one whose comment names a package it does not load: each is the one fault of its module."""
    shutil.copytree(LIB, tmp_path / "grpolab", ignore=shutil.ignore_patterns("__pycache__"))
    for module, (code, _) in LAZY_PLANTS.items():
        target = tmp_path / "grpolab" / module
        target.write_text(target.read_text() + "\n\n" + code)
    loads = Loads(tmp_path / "grpolab")
    for module, (_, said) in LAZY_PLANTS.items():
        faults = loads.lazy_import_faults("grpolab." + module.removesuffix(".py").replace("/", "."))
        assert len(faults) == 1 and said in faults[0], (module, faults)


def _unusable_input_names() -> set[str]:
    """InputError and the names of its subclasses in lib/ (the one 'unusable input' exception and its kinds)."""
    found = {"InputError"}
    for _ in range(3):  # a subclass of a subclass (BadRecord of RunNotFound)
        for tree in LOADS.trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id in found for b in node.bases
                ):
                    found.add(node.name)
    return found


def re_raises(tree: ast.AST, unusable: set[str]) -> list[int]:
    """Lines of `except <unusable inputs> as exc: raise InputError(str(exc))`: one unusable input caught only to
    become another, which the CLI would report the same way (exit 2, the same message)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ExceptHandler) or node.name is None or node.type is None:
            continue
        caught = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
        names = {c.id if isinstance(c, ast.Name) else getattr(c, "attr", "") for c in caught}
        raised = node.body[0] if len(node.body) == 1 and isinstance(node.body[0], ast.Raise) else None
        call = raised.exc if raised is not None and isinstance(raised.exc, ast.Call) else None
        if (
            names <= unusable
            and call is not None
            and isinstance(call.func, ast.Name)
            and call.func.id == "InputError"
            and ast.unparse(call.args[0] if call.args else call) == f"str({node.name})"
        ):
            found.append(node.lineno)
    return found


def test_no_unusable_input_is_caught_to_become_another():
    """InputError (its kinds included: RunNotFound, ThresholdsError, PathRefused, ...) reaches the CLI's main as it
    is, which maps it to exit 2 once; shown to catch a planted re-raise."""
    unusable = _unusable_input_names()
    assert {"RunNotFound", "BadRecord", "ThresholdsError", "PathRefused", "ConfigError"} <= unusable
    assert {name: lines for name, tree in LOADS.trees.items() if (lines := re_raises(tree, unusable))} == {}
    planted = "try:\n    f()\nexcept (RunNotFound, InputError) as exc:\n    raise InputError(str(exc)) from None\n"
    assert re_raises(ast.parse(planted), unusable) == [3]
    kept = "try:\n    f()\nexcept ValueError as exc:\n    raise InputError(str(exc)) from None\n"
    assert re_raises(ast.parse(kept), unusable) == []
