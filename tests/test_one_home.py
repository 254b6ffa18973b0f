"""One home per fact (issue 20): a second definition of a rule id, of the small maths the rules share or of a
dotted-path helper anywhere in lib/ fails this test, and the scanners are shown to catch a planted duplicate.

What counts as a second definition (usages stay free):
- rule ids: a literal collection (tuple, list, set, dict keys) naming two or more registered ids (at least one
  hyphenated, so that a list of plain words such as section names is not taken for one), or a collection naming
  any id that is compared with a problem's `.rule` or assigned to a name containing RULE. Reporting a problem
  (`add("heads-tp", ...)`, `Problem("schema", ...)`) or picking one rule out (`p.rule == "verl-schema"`) is a use.
  The one declaration is grpolab/rules/registry.py.
- maths: a function named like divisors / nearest / train_dp outside grpolab/rules/maths.py.
- dotted paths: a function named like dotted / set_dotted / flatten / lookup, or one whose body walks a key's
  `.split(".")` parts into nested mappings (`node = node[part]`, `.get(part)`, `.setdefault(part, ...)`,
  `getattr(node, part)`), outside grpolab/recipe/dotted.py.
- run folder: a run's file name (status.json, recipe.yaml, launch.json, job.json, metrics.jsonl, job.log) as a
  literal, or one of its folder names (logs, notebooks, checkpoint) as a path segment (`run / "logs"`,
  `f"{run_dir}/checkpoint"`), outside grpolab/run_folder.py. A name inside prose (a message, a docstring) is free.
- versions: a pin split on "@" by hand (`.split("@")`, `.partition("@")`, their r- forms), or an installed version
  read from package metadata (`importlib.metadata`, `pkg_resources`, `metadata.version(...)`), outside
  grpolab/recipe/stack.py (parse_pin, installed). Code inside a string (a shim a sandbox runs) is not lib's own.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
from planted import planted_lib  # noqa: E402

from grpolab import run_folder  # noqa: E402
from grpolab.monitor.causes import CAUSES  # noqa: E402
from grpolab.problems import Problem  # noqa: E402
from grpolab.recipe.loader import load_recipe  # noqa: E402
from grpolab.rules.checks import Checks, known  # noqa: E402
from grpolab.rules.registry import RULE_IDS  # noqa: E402

LIB = Path(__file__).resolve().parents[1] / "lib" / "grpolab"
REGISTRY = "rules/registry.py"
MATHS = "rules/maths.py"
DOTTED = "recipe/dotted.py"
STACK = "recipe/stack.py"
RUN_FOLDER = "run_folder.py"
MATHS_NAME = re.compile(r"^_*(\w*divisors\w*|nearest|train_dp)$")
DOTTED_NAME = re.compile(r"^_*((set|get|has)_)?dotted$|^_*flatten\w*$|^_*lookup$")

# Second homes another engineer is still removing (each must still be found, and goes once switched). None now:
# plan/ reads the registry and rules.maths (issue 20, report of "wire").
PENDING: set[str] = set()


def modules(root: Path):
    """(path under root, source text) of every module."""
    for path in sorted(root.rglob("*.py")):
        yield path.relative_to(root).as_posix(), path.read_text()


# the diagnosis's cause ids share some names with rule ids (batch-divisible, chat-template, ...): in monitor/, whose
# literals name causes and families, such a name is the cause's (its one home is grpolab.monitor.causes)
CAUSE_IDS = frozenset(c.id for c in CAUSES)


def _ids_in(node: ast.AST, rel: str = "") -> list[str]:
    items = node.keys if isinstance(node, ast.Dict) else getattr(node, "elts", [])
    causes = CAUSE_IDS if rel.startswith("monitor/") else frozenset()
    return [e.value for e in items if isinstance(e, ast.Constant) and e.value in RULE_IDS and e.value not in causes]


def _names_rule(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "rule") or (
        isinstance(node, ast.Name) and node.id in ("rule", "rule_id")
    )


def rule_id_declarations(rel: str, text: str, tree: ast.AST) -> set[str]:
    found: set[str] = set()
    if rel == REGISTRY or not any(f"{q}{i}{q}" in text for i in RULE_IDS for q in "\"'"):
        return found
    compared, assigned = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(_names_rule(n) for n in [node.left, *node.comparators]):
            compared.update(id(n) for n in node.comparators)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and "RULE" in t.id.upper() for t in targets):
                assigned.add(id(node.value))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            continue
        ids = list(dict.fromkeys(_ids_in(node, rel)))
        listed = len(ids) >= 2 and any("-" in i for i in ids)
        if ids and (listed or id(node) in compared or id(node) in assigned):
            how = "compared with .rule" if id(node) in compared else "declared"
            found.add(f"{rel}: rule ids {tuple(ids)} {how}")
    return found


def maths_helpers(rel: str, text: str, tree: ast.AST) -> set[str]:
    if rel == MATHS:
        return set()
    return {
        f"{rel}: maths helper {node.name}()"
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and MATHS_NAME.match(node.name)
    }


def _split_dot(node: ast.AST) -> bool:
    """`x.split(".")`, possibly sliced."""
    if isinstance(node, ast.Subscript):
        node = node.value
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "split"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "."
    )


def _descends(stmt: ast.AST, part: str) -> bool:
    """`node = node[part]`, `node = node.get(part)`, `node = node.setdefault(part, ...)`, `node = getattr(node, part)`."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)):
        return False
    name, value = stmt.targets[0].id, stmt.value

    def is_name(n, want):
        return isinstance(n, ast.Name) and n.id == want

    if isinstance(value, ast.Subscript):
        return is_name(value.value, name) and is_name(value.slice, part)
    if isinstance(value, ast.Call) and value.args:
        f = value.func
        if isinstance(f, ast.Attribute) and f.attr in ("get", "setdefault"):
            return is_name(f.value, name) and is_name(value.args[0], part)
        if is_name(f, "getattr") and len(value.args) >= 2:
            return is_name(value.args[0], name) and is_name(value.args[1], part)
    return False


def _loop_over_parts(loop: ast.For) -> tuple[str | None, ast.AST]:
    """(the loop's part variable, what it iterates over), seeing through enumerate() / reversed() and slices."""
    target, it = loop.target, loop.iter
    if (
        isinstance(it, ast.Call)
        and isinstance(it.func, ast.Name)
        and it.func.id in ("enumerate", "reversed")
        and it.args
    ):
        it = it.args[0]
        if isinstance(target, ast.Tuple) and target.elts:
            target = target.elts[-1]
    return (target.id if isinstance(target, ast.Name) else None), it


def _name_in(node: ast.AST, names: set[str]) -> bool:
    node = node.value if isinstance(node, ast.Subscript) else node
    return isinstance(node, ast.Name) and node.id in names


def dotted_helpers(rel: str, text: str, tree: ast.AST) -> set[str]:
    found: set[str] = set()
    if rel == DOTTED:
        return found
    walks = 'split(".")' in text or "split('.')" in text
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if DOTTED_NAME.match(fn.name):
            found.add(f"{rel}: dotted-path helper {fn.name}() (named like one)")
            continue
        if not walks:
            continue
        split_vars = {
            t.id
            for n in ast.walk(fn)
            if isinstance(n, ast.Assign) and _split_dot(n.value)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        for loop in ast.walk(fn):
            if not isinstance(loop, ast.For):
                continue
            part, parts = _loop_over_parts(loop)
            if part is None or not (_split_dot(parts) or _name_in(parts, split_vars)):
                continue
            if any(_descends(s, part) for s in ast.walk(loop)):
                found.add(f"{rel}: dotted-path helper {fn.name}() (walks a key's parts into mappings)")
    return found


def version_readers(rel: str, text: str, tree: ast.AST) -> set[str]:
    found: set[str] = set()
    if rel == STACK:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr in ("split", "rsplit", "partition", "rpartition") and any(
                isinstance(a, ast.Constant) and a.value == "@" for a in node.args
            ):
                found.add(f'{rel}: a pin split by hand ({f.attr}("@"), line {node.lineno})')
            if isinstance(f.value, ast.Name) and f.value.id == "metadata" and f.attr in ("version", "distribution"):
                found.add(f"{rel}: an installed version read by hand (metadata.{f.attr}, line {node.lineno})")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            if isinstance(node, ast.ImportFrom) and node.module == "importlib":
                names += [f"importlib.{a.name}" for a in node.names]
            for name in names:
                if name.startswith(("importlib.metadata", "pkg_resources", "importlib_metadata")):
                    found.add(f"{rel}: an installed version read by hand (import {name}, line {node.lineno})")
    return found


_RUN_NAMES = "|".join(re.escape(n) for n in run_folder.FILES + run_folder.FOLDERS)
_RUN_PATH = re.compile(rf"^/({_RUN_NAMES})(?![\w.])|^({'|'.join(run_folder.FOLDERS)})/\S|\S/({_RUN_NAMES})$")
# another folder named like a run's: the project's own notebooks/ (the templates), not a run's
OTHER_FOLDERS = {("notebook/display.py", run_folder.NOTEBOOKS)}


def run_folder_literals(rel: str, text: str, tree: ast.AST) -> set[str]:
    found: set[str] = set()
    if rel == RUN_FOLDER:
        return found
    prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    segments = set()  # constants used as one segment of a path
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            segments.add(id(node.right))
        elif isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in ("join", "joinpath", "Path", "with_name"):
                segments.update(id(a) for a in node.args)
        elif isinstance(node, ast.JoinedStr):
            prose.update(id(v) for v in node.values)
            before, part = (node.values + [None, None])[:2]
            if (  # f"{run_dir}/checkpoint": a path joined in a string (a URL's "/api/jobs/{id}/logs" is none)
                len(node.values) == 2
                and isinstance(before, ast.FormattedValue)
                and isinstance(part, ast.Constant)
                and _RUN_PATH.match(part.value)
            ):
                found.add(f"{rel}: run folder path {part.value!r} (line {part.lineno})")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in prose:
            continue
        value = node.value
        if (rel, value) in OTHER_FOLDERS:
            continue
        if (
            value in run_folder.FILES
            or (value in run_folder.FOLDERS and id(node) in segments)
            or (" " not in value and _RUN_PATH.search(value))
        ):
            found.add(f"{rel}: run folder name {value!r} (line {node.lineno})")
    return found


def second_homes(root: Path) -> set[str]:
    found: set[str] = set()
    for rel, text in modules(root):
        tree = ast.parse(text)
        found |= (
            rule_id_declarations(rel, text, tree)
            | maths_helpers(rel, text, tree)
            | dotted_helpers(rel, text, tree)
            | version_readers(rel, text, tree)
            | run_folder_literals(rel, text, tree)
        )
    return found


@functools.cache
def found_in_lib() -> frozenset[str]:
    """second_homes(LIB), scanned once per process by the first test that asks (not at collection, where each
    xdist worker would scan lib/ whether it runs these tests or not)."""
    return frozenset(second_homes(LIB))


def test_every_fact_has_one_home_in_lib():
    found = found_in_lib()
    assert found - PENDING == set(), (
        "a second home: use grpolab.rules.registry / rules.maths / recipe.dotted / recipe.stack / run_folder"
    )
    assert PENDING - found == set(), "switched: remove these from PENDING"


def test_the_homes_themselves_are_seen():
    """The scanners find the real definitions in their homes (else they could pass by finding nothing)."""
    homes = {"registry": LIB / REGISTRY, "maths": LIB / MATHS, "dotted": LIB / DOTTED}
    stack = (LIB / STACK).read_text()  # the version scanner, run on the pin parser's own home, finds it there
    seen = version_readers("elsewhere.py", stack, ast.parse(stack))
    for what in ('a pin split by hand (partition("@")', "read by hand (import importlib.metadata", "(metadata.distr"):
        assert [f for f in seen if what in f], (what, seen)
    layout = (LIB / RUN_FOLDER).read_text()  # the run-folder scanner, run on the layout's own home, finds it there
    seen = run_folder_literals("elsewhere.py", layout, ast.parse(layout))
    for name in run_folder.FILES:  # (its folder names are plain words there; the plants show them as segments)
        assert [f for f in seen if f"run folder name {name!r}" in f], (name, seen)
    for name, path in homes.items():
        tree = ast.parse(path.read_text())
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        if name == "maths":
            assert {"divisors", "nearest", "train_dp"} <= {n for n in names if MATHS_NAME.match(n)}
        if name == "dotted":
            walkers = [
                n.name
                for n in ast.walk(tree)
                if isinstance(n, ast.FunctionDef)
                and any(isinstance(f, ast.For) and any(_descends(s, "part") for s in ast.walk(f)) for f in ast.walk(n))
            ]
            assert {"get_dotted", "set_dotted"} <= set(walkers)


PLANTS = {
    "rules": 'SKIPPED_RULES = ("heads-tp", "kv-heads-tp")\n',
    "one_rule": 'def layoutish(p):\n    return p.rule in ("memory",)\n',
    "divisors": "def _divisors(n):\n    return [d for d in range(1, n + 1) if n % d == 0]\n",
    "train_dp": "def train_dp(recipe):\n    return recipe.world_size\n",
    "walk": (
        'def value_at(config, key):\n    node = config\n    for part in key.split("."):\n'
        "        node = node.get(part, {})\n    return node\n"
    ),
    "set": (
        'def put(data, key, value):\n    parts = key.split(".")\n    for part in parts[:-1]:\n'
        "        data = data.setdefault(part, {})\n    data[parts[-1]] = value\n"
    ),
    "named": "def lookup(config, key):\n    return config\n",
    "pin": 'def release(pin):\n    return pin.split("@")[0]\n',
    "installed": "from importlib import metadata\n\ndef verl():\n    return metadata.version('verl')\n",
    "imported": "import importlib.metadata as md\n",
    "status": 'def record(run):\n    return run.path / "status.json"\n',
    "logs": 'def log(run_dir):\n    return run_dir / "logs" / "out.txt"\n',
    "ckpt": 'def ckpt(run_dir):\n    return f"{run_dir}/checkpoint"\n',
}
EXPECTED = {
    "rules": "rule ids ('heads-tp', 'kv-heads-tp') declared",
    "one_rule": "rule ids ('memory',) compared with .rule",
    "divisors": "maths helper _divisors()",
    "train_dp": "maths helper train_dp()",
    "walk": "dotted-path helper value_at() (walks",
    "set": "dotted-path helper put() (walks",
    "named": "dotted-path helper lookup() (named",
    "pin": 'a pin split by hand (split("@")',
    "installed": "an installed version read by hand (",
    "imported": "an installed version read by hand (import importlib.metadata",
    "status": "run folder name 'status.json'",
    "logs": "run folder name 'logs'",
    "ckpt": "run folder path '/checkpoint'",
}
HARMLESS = (
    'SECTIONS = ("cluster", "stack", "memory")\n'  # plain words that happen to be rule ids
    'def pick(problems):\n    return [p for p in problems if p.rule == "verl-schema"]\n'  # a use
    'def parts(key):\n    return [part.upper() for part in key.split(".")]\n'  # splits, walks nothing
    'SHIM = "from importlib.metadata import version"\n'  # code in a string: a sandbox's, not lib's
    'VERBS = {"logs": "print a run\'s log"}\n'  # a word, not a path segment
    'def why(path):\n    return f"{path}: status.json is not JSON"\n'  # prose naming the file
    'def url(job):\n    return f"/api/jobs/{job}/logs"\n'  # a URL, not a run folder
)


def test_a_planted_duplicate_fails(tmp_path):
    """A copy of lib/ with each duplicate planted in a module of its own (and one harmless module) shows exactly
    the planted ones as new second homes."""
    new = second_homes(planted_lib(LIB, tmp_path, "monitor", HARMLESS, PLANTS)) - found_in_lib()
    for name in PLANTS:
        assert [f for f in new if f.startswith(f"monitor/planted_{name}.py: {EXPECTED[name]}")], (name, new)
    assert {f.split(":")[0] for f in new} == {f"monitor/planted_{name}.py" for name in PLANTS}


def literal_problem_rules(tree: ast.AST) -> list[str]:
    """The rule ids a module makes a Problem with, written as a literal (`Problem("schema", ...)`)."""
    return [
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Problem"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ]


def test_every_problem_lib_makes_names_a_declared_rule():
    """A Problem made anywhere in lib/ (the recipe and verl layers below the registry included) with a literal rule
    id names a rule of grpolab.rules.registry; ids chosen at run time are checked where problems are collected."""
    made = {rel: literal_problem_rules(ast.parse(text)) for rel, text in modules(LIB) if "Problem(" in text}
    assert sum(map(len, made.values())) > 10 and "schema" in made["recipe/loader.py"]
    assert {rel: [r for r in ids if r not in RULE_IDS] for rel, ids in made.items() if set(ids) - set(RULE_IDS)} == {}
    planted = 'from grpolab.problems import Problem\n\nP = Problem("shcema", "error", "k", 1, "m", "f")\n'
    assert literal_problem_rules(ast.parse(planted)) == ["shcema"]


def test_an_undeclared_rule_id_fails_where_problems_are_collected():
    typo = Problem("heads_tp", "error", "train.tp", 3, "m", "f")
    with pytest.raises(ValueError, match="unknown rule id 'heads_tp'"):
        known([typo])
    with pytest.raises(ValueError, match="unknown rule id 'heads_tp'"):
        Checks(load_recipe("tiny"), None).add("heads_tp", "train.tp", 3, "m", "f", severity="error")
    assert known([Problem("heads-tp", "error", "train.tp", 3, "m", "f")])[0].rule == "heads-tp"
