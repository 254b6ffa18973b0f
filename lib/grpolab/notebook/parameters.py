"""The cell after `parameters`: typed parameters and misspelled names papermill injected (see grpolab.notebook for how)."""

from __future__ import annotations

import ast
import types
import typing
from typing import Any

from grpolab.notebook.display import PAPERMILL_NAMES, NotebookStop, in_jupyterlab
from grpolab.notebook.runall import install as arm_runall_guard
from grpolab.problems import InputError, closest

# ------------------------------------------------------------------------------------------------ parameters


def _assigned(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names assigned plainly, names assigned with an annotation) at a cell's top level."""
    plain: set[str] = set()
    annotated: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            annotated.add(node.target.id)
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            plain |= {t.id for t in targets if isinstance(t, ast.Name)}
    return plain, annotated


def _given_names(history: list[str], declared: set[str]) -> tuple[set[str], set[str]]:
    """(names given as parameters, declared names the parameters cell left out), from the last cell executed before
    this one that gives parameters: papermill's injected cell (first line `# Parameters`), or the parameters cell
    itself as a user edits it in JupyterLab (the latest cell that declares a parameter with its annotation). In the
    parameters cell a plain assignment (`overide = [...]`, `modle = "tiny"`) gives a parameter too: the cell's
    text promises that a misspelled name stops the notebook. ((), ()) when no such cell ran."""
    for source in reversed(history[:-1]):  # the last entry is the cell running now
        if not isinstance(source, str) or not source.strip():
            continue
        first = source.lstrip().splitlines()[0].strip()
        try:
            tree = ast.parse(source)
        except SyntaxError:  # IPython magics, shell escapes: not a parameters cell
            continue
        plain, annotated = _assigned(tree)
        if first == "# Parameters":  # papermill's comment on the cell it injects
            return plain | annotated, set()
        if annotated & declared:  # the parameters cell
            return {n for n in plain | annotated if not n.startswith("_")}, declared - plain - annotated
    return set(), set()


def _conforms(value: Any, annotation: Any) -> bool:
    if annotation is Any or annotation is typing.Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return any(_conforms(value, a) for a in typing.get_args(annotation))
    if annotation is None or annotation is type(None):
        return value is None
    if origin in (list, tuple):
        args = typing.get_args(annotation)
        return isinstance(value, origin) and (not args or all(_conforms(v, args[0]) for v in value))
    if origin is dict:
        return isinstance(value, dict)
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True  # an annotation this checker does not know: accept


def _listish(annotation: Any, value: Any) -> bool:
    text = value.strip() if isinstance(value, str) else ""
    return typing.get_origin(annotation) is list and text.startswith("[") and text.endswith("]")


def _yaml_list(text: str) -> list | None:
    """A YAML flow list (what `-y` would have parsed), its items as strings for a list of strings; None if not."""
    # lazy: yaml (only a list parameter is read as YAML, not every `import grpolab.notebook`)
    import yaml

    # lazy: yaml (the one YAML reader; only a list parameter is read as YAML)
    from grpolab.recipe.yamlio import parse_yaml

    try:
        parsed = parse_yaml(text, "a list parameter")
    except (yaml.YAMLError, InputError, RecursionError):
        return None
    if not isinstance(parsed, list):
        return None
    return [item if isinstance(item, str) else str(item) for item in parsed]


def _describe(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        parts = [_describe(a) for a in typing.get_args(annotation)]
        return " or ".join(sorted(parts, key=lambda p: p != "None"))
    if annotation is None or annotation is type(None):
        return "None"
    if origin is list:
        args = typing.get_args(annotation)
        return "a list" + (f" of {_describe(args[0]).removeprefix('a ')}s" if args else "")
    return {bool: "True or False", int: "an integer", float: "a number", str: "a string"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def _hint(name: str, annotation: Any, value: Any) -> str:
    """How to give the value right where the user gives it: the parameters cell in JupyterLab, papermill's
    flags headless."""
    wants_list = typing.get_origin(annotation) is list
    if in_jupyterlab():
        if wants_list and isinstance(value, str):
            return f"; in the parameters cell write a list: {name} = [{value!r}]"
        if annotation is bool and isinstance(value, str):
            return f"; in the parameters cell write {name} = True or {name} = False (no quotes)"
        return ""
    if wants_list and isinstance(value, str):
        return f'; pass a list with papermill -y "{name}: [{value}]"'
    if annotation is bool and isinstance(value, str):
        return f"; pass -p {name} True or -p {name} False (capitalised)"
    return ""


def _signature(name: str, annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    return f"{name}: {text or str(annotation).replace('typing.', '')}"


def check_parameters(ns: dict) -> dict:
    """Validate the parameters of a notebook: call it as `check_parameters(globals())` in the cell after the
    `parameters` cell. Returns {name: value} of the declared parameters; raises NotebookStop listing every
    unknown parameter name (with the closest declared one) and every value of the wrong type. In a kernel it first
    arms the Run All guard (grpolab.notebook.runall), so that a stop here stops the cells after it."""
    arm_runall_guard()
    declared: dict[str, Any] = dict(ns.get("__annotations__") or {})
    if not declared:
        raise NotebookStop("this notebook has no typed parameters: run the cell tagged `parameters` first")
    history = ns.get("In") or ns.get("_ih") or []
    given, left_out = _given_names(list(history), set(declared))
    problems = []
    for name in sorted(given - set(declared) - set(PAPERMILL_NAMES)):
        near = closest(name, declared)
        problems.append(f"unknown parameter {name!r}" + (f": did you mean {near!r}?" if near else ""))
    for name in sorted(left_out & set(ns)):  # its value is an earlier run's, which this run would silently reuse
        problems.append(
            f"parameter {name!r} is missing from the parameters cell: it still holds {ns[name]!r} from an earlier "
            f"run; write it back, e.g. {_signature(name, declared[name])} = {ns[name]!r}"
        )
    for name, annotation in declared.items():
        if name not in ns:
            problems.append(f"parameter {name!r} is declared but not set: run the parameters cell")
            continue
        value = ns[name]
        if _listish(annotation, value):  # `-p runs '[a, b]'`: papermill passes the text; read it as YAML's list
            parsed = _yaml_list(value)
            if parsed is not None and _conforms(parsed, annotation):
                ns[name] = value = parsed
        if not _conforms(value, annotation):
            problems.append(
                f"parameter {name} must be {_describe(annotation)}, got {value!r} "
                f"({type(value).__name__}){_hint(name, annotation, value)}"
            )
    if problems:
        known = ", ".join(_signature(n, a) for n, a in declared.items())
        how = (
            "set them in the cell tagged parameters, e.g. overrides = ['rollout.tp=16'], then run it and this cell"
            if in_jupyterlab()
            else 'pass them with papermill -p NAME VALUE (lists: -y "overrides: [rollout.tp=16]")'
        )
        raise NotebookStop("\n".join(problems) + f"\nthis notebook's parameters: {known}\n" + how)
    return {name: ns[name] for name in declared}
