"""From a pydantic validation error to problems a user can act on: the one schema walker and error translator.

`model_at(root, loc)` walks a schema (nested models, `dict[str, Model]` values, Optional models) to the model that
owns a key; `field_type(root, dotted)` gives a key's annotation; `translate(exc, root, where)` turns every error of
one validation into a Problem naming the file that set the key (`where(dotted key)`), the dotted key, the value,
what is wrong and the fix (the closest valid key for a misspelling). The recipe loader, model cards and the
monitor's thresholds all use these, so a misspelled key reads the same wherever it is.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from grpolab.problems import Problem, closest


def _model(annotation: Any) -> Any:
    """The pydantic model inside an annotation (`Optional[Local]` -> Local), else the annotation itself."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    members = [a for a in typing.get_args(annotation) if isinstance(a, type) and issubclass(a, BaseModel)]
    return members[0] if typing.get_origin(annotation) is typing.Union and len(members) == 1 else annotation


def _walk(root: type[BaseModel], parts: typing.Iterable[str]) -> Any:
    """The annotation at `parts` below root, through nested models, `dict[str, X]` values (regression.figures.<name>:
    the key names a value of the dict) and Optional models; None when the key is not in the schema."""
    model: Any = root
    for part in parts:
        model = _model(model)
        if isinstance(model, type) and issubclass(model, BaseModel) and part in model.model_fields:
            model = model.model_fields[part].annotation
        elif typing.get_origin(model) is dict:
            model = typing.get_args(model)[1]
        else:
            return None
    return model


def field_type(root: type[BaseModel], dotted: str) -> Any:
    """The schema annotation at a dotted key (None when the key is not in the schema)."""
    return _walk(root, dotted.split("."))


def model_at(root: type[BaseModel], loc: tuple[str, ...]) -> type[BaseModel] | None:
    """The pydantic model whose fields hold the key at `loc + (name,)`: the owner of a misspelled key."""
    model = _model(_walk(root, loc))
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


# pydantic's error type (its prefix) -> what a fix asks for, in a user's words
EXPECTED = {
    "int_": "a whole number",
    "float_": "a number",
    "bool_": "true or false",
    "string_": "a string",
    "list_": "a list, e.g. [a, b]",
    "dict_": "a mapping of keys to values",
}


def jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return str(value)


def translate(
    exc: ValidationError, root: type[BaseModel], where: Callable[[str], str], prefix: str = ""
) -> list[Problem]:
    """Every error of one validation as a Problem (rule `schema`, severity error). `where(key)` names the file or
    --set that set a dotted key; `prefix` is the path of the validated section in its file (`monitor.`)."""
    problems = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        bad_name = loc[-1:] == ("[key]",)  # a dict key (an env name) that breaks the key's rule
        loc = loc[:-1] if bad_name else loc
        key = prefix + ".".join(loc) if loc else prefix.rstrip(".") or "(top level)"
        origin = where(".".join(loc))
        value = err.get("input")
        kind = err["type"]
        if bad_name:
            message = f"{origin}: {loc[-1]!r} is not a valid name in {prefix + '.'.join(loc[:-1])}"
            fix = (
                "use letters, digits and '_' only, not starting with a digit (a shell variable name: the "
                "launch exports it on every node)"
            )
        elif kind == "extra_forbidden":
            parent = model_at(root, loc[:-1])
            valid = list(parent.model_fields) if parent else []
            near = closest(loc[-1], valid)
            message = f"{origin}: unknown key {key!r}"
            full = prefix + ".".join(loc[:-1] + (near,)) if near else ""
            fix = (
                (f"did you mean {near!r}?" if full == near else f"did you mean {near!r} ({full})?")
                if near
                else f"valid keys here: {', '.join(valid)}"
            )
            value = value if not isinstance(value, dict) else "{...}"
        elif kind == "missing":
            message = f"{origin}: missing key {key!r}"
            fix = (
                "add engines/trl to the recipe's defaults: params/engines/trl.yaml holds the CPU trainer's settings"
                if loc[:1] == ("local",)
                else "set it; params/base.yaml holds the default of every key (a recipe inherits it: add `base` to "
                "defaults)"
            )
            value = None
        else:
            message = f"{origin}: {err['msg']}"
            expected = err.get("ctx", {})
            wanted = next((words for k, words in EXPECTED.items() if kind.startswith(k)), "a valid value")
            fix = f"give {key} {wanted}" + (
                f" ({', '.join(f'{k} {v}' for k, v in expected.items())})" if expected else ""
            )
        problems.append(Problem("schema", "error", key, jsonable(value), message, fix))
    return problems
