"""What the checked verl does with a reward, read from its source files as data (ast), never imported.

`grpolab check` must stay fast and torch-free, and verl's reward modules import torch, so the facts come from
parsing the files of the verl being checked (grpolab.verl.versions.verl_root: $GRPOLAB_VERL_ROOT, else the installed
one, located with importlib's find_spec, which runs nothing), as the version table and the verl schema check do:

- `builtin()`: the data sources verl's own `default_compute_score` (verl/utils/reward_score/__init__.py) scores:
  every `data_source == "x"`, `data_source in [...]` and `data_source.startswith("x")` of its dispatch;
- `managers()`: the reward managers the trainer resolves by name (the registry that verl/trainer/ppo/reward.py
  imports `get_reward_manager_cls` from: verl 0.9.1's reward loop), each with the keyword names it calls
  `compute_score` with, the row columns it reads (`non_tensor_batch["data_source"]`,
  `["reward_model"]["ground_truth"]`) and the file it is in;
- `function_signature()`: the parameters of a user's reward function, from its file's ast (the file is not run).

Another verl version gives other sets: nothing here is a copied list.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from grpolab.paths import PROJECT_ROOT, recipe_relative

# the function name verl uses when none is given (trainer/config/reward/reward.yaml: `name: compute_score`)
DEFAULT_NAME = "compute_score"
_SCORE_FILE = ("utils", "reward_score", "__init__.py")
_DISPATCH = "default_compute_score"
_RESOLVER = ("trainer", "ppo", "reward.py")
_LEGACY_REGISTRY = "verl.workers.reward_manager"  # verl before the reward loop (<= 0.6): the managers' package


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class Builtin:
    """The data sources verl's built-in reward scores: exact names and name prefixes; where that was read."""

    names: frozenset[str]
    prefixes: tuple[str, ...]
    file: str

    def scores(self, source: str) -> bool:
        return source in self.names or any(source.startswith(p) for p in self.prefixes)

    def listed(self) -> str:
        return ", ".join(sorted(self.names) + [f"{p}*" for p in self.prefixes])


def _checked_root() -> Path | None:
    """The verl folder `check` reads (grpolab.verl.versions.verl_root: $GRPOLAB_VERL_ROOT, else the installed one)."""
    # lazy: yaml (the version table's module; the renderer and the CPU trainer import this module without it)
    from grpolab.verl.versions import verl_root

    return verl_root()


def builtin() -> Builtin | None:
    """verl's built-in reward dispatch as data; None without verl (or a dispatch this reader cannot find)."""
    return _builtin(_checked_root())


@lru_cache(maxsize=8)  # per verl folder: $GRPOLAB_VERL_ROOT may name another one
def _builtin(root: Path | None) -> Builtin | None:
    if root is None:
        return None
    path = root.joinpath(*_SCORE_FILE)
    tree = _parse(path)
    fn = next(
        (n for n in getattr(tree, "body", []) if isinstance(n, ast.FunctionDef) and n.name == _DISPATCH),
        None,
    )
    if fn is None:
        return None
    names: set[str] = set()
    prefixes: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare) and _is_source(node.left):
            for op, right in zip(node.ops, node.comparators):
                if isinstance(op, ast.Eq) and isinstance(right, ast.Constant) and isinstance(right.value, str):
                    names.add(right.value)
                elif isinstance(op, ast.In) and isinstance(right, (ast.List, ast.Tuple, ast.Set)):
                    names.update(
                        e.value for e in right.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
                    )
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "startswith"
            and _is_source(node.func.value)
        ):
            prefixes += [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    return Builtin(frozenset(names), tuple(dict.fromkeys(prefixes)), str(path))


def _is_source(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "data_source"


# ---------------------------------------------------------------------------------------------- managers


@dataclass(frozen=True)
class Manager:
    """One registered reward manager: how it calls the reward function and what it reads from a row."""

    name: str
    cls: str
    file: str
    keywords: tuple[str, ...]  # the keyword names of its compute_score call(s)
    columns: tuple[str, ...]  # row fields it indexes (a KeyError on the cluster when missing): dotted
    optional: tuple[str, ...] = field(default=())  # row fields it reads with .get (a default when missing)
    # what it puts into extra_info before the call: (key, where from: a row field it reads with .get, or the
    # dotted attribute it copies, e.g. config.trainer.experiment_name)
    adds: tuple[tuple[str, str], ...] = field(default=())
    merges: tuple[str, ...] = field(default=())  # row fields whose items it merges into extra_info (.update)
    # where the reward runs: "thread" (an executor thread of the event loop: `run_in_executor`), "process" (a Ray
    # actor of its own: `.remote`), else "main"
    mode: str = "main"

    @property
    def batched(self) -> bool:
        """Called once per batch with lists (verl's `batch` manager: data_sources=, solution_strs=, ...)."""
        return any(k.endswith("s") and k[:-1] in ("data_source", "solution_str", "ground_truth") for k in self.keywords)


@dataclass(frozen=True)
class Registry:
    module: str  # the package the trainer resolves reward managers from
    managers: dict[str, Manager]


def _registry_module(root: Path) -> str:
    """The package verl's trainer imports `get_reward_manager_cls` from (verl 0.9.1: the reward loop's)."""
    tree = _parse(root.joinpath(*_RESOLVER))
    for node in ast.walk(tree) if tree else ():
        if isinstance(node, ast.ImportFrom) and any(a.name == "get_reward_manager_cls" for a in node.names):
            return node.module or _LEGACY_REGISTRY
    return _LEGACY_REGISTRY


def managers() -> Registry | None:
    """Every reward manager the checked verl's trainer can resolve by name; None without verl."""
    return _managers(_checked_root())


@lru_cache(maxsize=8)
def _managers(root: Path | None) -> Registry | None:
    if root is None:
        return None
    module = _registry_module(root)
    folder = root.parent.joinpath(*module.split("."))
    if not folder.is_dir():  # a verl of config files only (tests/data/verl-main): its managers cannot be read here
        return None
    found: dict[str, Manager] = {}
    for path in sorted(folder.glob("*.py")):
        tree = _parse(path)
        if tree is None:
            continue
        decorators = _register_names(tree, module)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Name)
                    and deco.func.id in decorators
                    and deco.args
                    and isinstance(deco.args[0], ast.Constant)
                ):
                    name = str(deco.args[0].value)
                    keywords, columns, optional = _reads(node)
                    adds, merges = _extra_info(node)
                    found[name] = Manager(
                        name, node.name, str(path), keywords, columns, optional, adds, merges, _mode(node)
                    )
    return Registry(module, found)


def _register_names(tree: ast.Module, module: str) -> set[str]:
    """The local names under which a file imports the registry's `register` (`register as register_manager`)."""
    names = set()
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if node.module.startswith(module) or (node.level and node.module == "registry"):
            names.update(a.asname or a.name for a in node.names if a.name == "register")
    return names


def _reads(cls: ast.ClassDef) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    keywords: list[str] = []
    columns: list[str] = []
    optional: list[str] = []
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and "compute_score" in _chain(node.func):
            keywords += [k.arg for k in node.keywords if k.arg]
        elif isinstance(node, ast.Subscript):
            path = _row_path(node)
            if path:
                columns.append(path)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _chain(node.func.value)[-1:] == ["non_tensor_batch"]
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            optional.append(str(node.args[0].value))
    columns = [c for c in dict.fromkeys(columns) if not any(o != c and o.startswith(c + ".") for o in columns)]
    return tuple(dict.fromkeys(keywords)), tuple(columns), tuple(dict.fromkeys(optional))


def _extra_info(cls: ast.ClassDef) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """What the manager writes into extra_info: `extra_info[K] = V` (V a name it read with
    `non_tensor_batch.get("FIELD", ...)`, or an attribute chain) and `extra_info.update(NAME.items())`."""
    fields: dict[str, str] = {}  # local name -> the row field it was read from
    for node in ast.walk(cls):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr == "get"
            and _chain(node.value.func.value)[-1:] == ["non_tensor_batch"]
            and node.value.args
            and isinstance(node.value.args[0], ast.Constant)
        ):
            fields[node.targets[0].id] = str(node.value.args[0].value)
    adds: list[tuple[str, str]] = []
    merges: list[str] = []
    for node in ast.walk(cls):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if (
                isinstance(target, ast.Subscript)
                and _chain(target.value) == ["extra_info"]
                and isinstance(target.slice, ast.Constant)
            ):
                value = node.value
                source = fields.get(value.id, value.id) if isinstance(value, ast.Name) else ".".join(_chain(value))
                source = source.removeprefix("self.")
                adds.append((str(target.slice.value), source))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and _chain(node.func.value) == ["extra_info"]
            and node.args
        ):
            arg = node.args[0]
            name = _chain(arg.func.value) if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) else []
            if name and name[0] in fields:
                merges.append(fields[name[0]])
    return tuple(dict.fromkeys(adds)), tuple(dict.fromkeys(merges))


def _mode(cls: ast.ClassDef) -> str:
    """How the manager runs compute_score: in an executor thread, in a Ray actor, or in its own thread."""
    for node in ast.walk(cls):
        if not isinstance(node, ast.Call):
            continue
        chain = _chain(node.func)
        if "compute_score" in chain and chain[-1] == "remote":
            return "process"
        if chain[-1:] == ["run_in_executor"] and any(
            isinstance(n, ast.Call) and "compute_score" in _chain(n.func) for arg in node.args for n in ast.walk(arg)
        ):
            return "thread"
    return "main"


def _chain(node: ast.AST) -> list[str]:
    """`self.reward_actor.compute_score.remote` -> [self, reward_actor, compute_score, remote]."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return parts[::-1]


def _row_path(node: ast.Subscript) -> str:
    """`x.non_tensor_batch["reward_model"]["ground_truth"]` -> reward_model.ground_truth; "" for other subscripts."""
    keys = []
    while isinstance(node, ast.Subscript):
        if not (isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str)):
            return ""
        keys.append(node.slice.value)
        node = node.value
    if _chain(node)[-1:] != ["non_tensor_batch"] or not keys:
        return ""
    return ".".join(keys[::-1])


# ---------------------------------------------------------------------------------------------- a user's function


@dataclass(frozen=True)
class Signature:
    """A reward function's parameters as its file declares them."""

    name: str
    line: int
    positional_only: tuple[str, ...]
    names: tuple[str, ...]  # positional-or-keyword and keyword-only
    required: tuple[str, ...]  # of names, those without a default
    var_keyword: bool
    is_async: bool

    def text(self) -> str:
        params = list(self.names) + (["**kwargs"] if self.var_keyword else [])
        return f"{'async ' if self.is_async else ''}def {self.name}({', '.join(params)})"

    def refused(self, passed: tuple[str, ...]) -> tuple[list[str], list[str]]:
        """(keywords it cannot take, its required parameters that nothing passes) when called with `passed`."""
        unknown = [k for k in passed if k not in self.names and not self.var_keyword]
        unknown += [k for k in passed if k in self.positional_only]
        missing = [p for p in self.required if p not in passed] + list(self.positional_only)
        return list(dict.fromkeys(unknown)), list(dict.fromkeys(missing))


@dataclass(frozen=True)
class Found:
    """What a reward file holds under a name: a def (with its signature), another binding, or nothing."""

    signature: Signature | None = None
    bound_as: str = ""  # "import" / "assignment" / "class" when the name is bound some other way
    functions: tuple[str, ...] = ()  # the top-level functions the file defines (for the fix)
    syntax_error: str = ""


def function_signature(path: Path, name: str) -> Found:
    """Read `name` from the Python file at `path` without running it."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return Found(syntax_error=f"not UTF-8 text: {exc}")
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as exc:
        return Found(syntax_error=f"line {exc.lineno}: {exc.msg}")
    functions = tuple(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    found = None
    for node in tree.body:  # the last binding wins, as when Python runs the file
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = Found(signature=_signature(node), functions=functions)
        elif isinstance(node, ast.ClassDef) and node.name == name:
            found = Found(bound_as="class", functions=functions)
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and any(
            (a.asname or a.name.split(".")[0]) == name for a in node.names
        ):
            found = Found(bound_as="import", functions=functions)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found = Found(bound_as="assignment", functions=functions)
    return found or Found(functions=functions)


def _signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> Signature:
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    first_default = len(positional) - len(a.defaults)
    required = [p.arg for i, p in enumerate(positional) if i >= len(a.posonlyargs) and i < first_default]
    required += [p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None]
    posonly_required = tuple(p.arg for i, p in enumerate(a.posonlyargs) if i < first_default)
    return Signature(
        node.name,
        node.lineno,
        posonly_required,
        tuple(p.arg for p in [*a.args, *a.kwonlyargs]),
        tuple(required),
        a.kwarg is not None,
        isinstance(node, ast.AsyncFunctionDef),
    )


def split_function(function: str) -> tuple[str, str]:
    """`path.py:name` -> (path.py, name); `path.py` -> (path.py, compute_score)."""
    path, _, name = function.rpartition(":") if not function.endswith(".py") else (function, "", "")
    return path, name or DEFAULT_NAME


def resolve(recipe: Any) -> Path:
    """The file reward.function names, as this machine sees it: `~` expanded; a relative path read from the folder
    of the recipe file that set it (the current folder when a --set or a notebook set it), else from the project's
    root (the folder that holds params/: how the shipped `tiny` names its reward, from any run directory too)."""

    return recipe_relative(split_function(recipe.reward.function)[0], recipe.origin("reward.function"))


def locate(written: str, base: Path | None = None) -> Path:
    """A reward file's path: absolute as is; relative from `base`, else the project's root; the first that exists
    (else the first candidate, for the message that it is missing)."""

    path = Path(os.path.expanduser(written))
    if path.is_absolute():
        return path
    candidates = [(b / path).resolve() for b in (base, PROJECT_ROOT) if b is not None]
    return next((c for c in candidates if c.is_file()), candidates[0])
