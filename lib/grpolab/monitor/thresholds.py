"""Which thresholds the monitor applies: the `monitor:` section of a recipe (grpolab.recipe.monitor_schema).

The numbers have one home, params/base.yaml (section `monitor:`, documented value by value); a recipe overrides
what fits it (params/recipes/tiny.yaml). This module finds the section that applies and validates it strictly:

    load_thresholds(path=None) -> Thresholds       # None: params/base.yaml; a file: its `monitor:` section
                                                    # (a recipe or a run's recipe.yaml) or a bare section;
                                                    # a recipe name: that recipe's
    thresholds_for(run) -> Thresholds               # the run's recipe.yaml (resolved at launch), else base.yaml
    ThresholdsError                                 # names the file, the dotted key and how to fix it

`Thresholds.source` says where they came from, `Thresholds.describe()` lists them in short lines (the notebook
and `grpolab monitor` show which thresholds applied).
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import get_args, get_origin

from pydantic import BaseModel, PrivateAttr, ValidationError

from grpolab.paths import params_dir
from grpolab.problems import InputError
from grpolab.recipe.files import kind
from grpolab.recipe.loader import read_yaml
from grpolab.recipe.monitor_schema import (  # noqa: F401  (re-exported: the monitor's callers import them from here)
    AlertRules,
    EntropyCollapseRule,
    GateFigure,
    LengthClippedRule,
    Monitor,
    NanRule,
    Regression,
    RewardFlatRule,
    SpikeRule,
    ThroughputDropRule,
)

SECTION = "monitor"


def default_path() -> Path:
    """params/base.yaml under the project's params directory ($GRPOLAB_PARAMS moves it): the one home."""
    return params_dir() / "base.yaml"


class ThresholdsError(ValueError):
    """The thresholds are missing, unreadable or do not fit the schema (message: file, key, fix)."""


class Thresholds(Monitor):
    # Where these came from (set by the loaders): reports name the file. Private, so not a YAML key.
    _source: str = PrivateAttr(default="")

    @property
    def source(self) -> str:
        return self._source

    def describe(self) -> list[str]:
        """One line per enabled alert rule with its limits, e.g. `kl-spike  > 5 x median and 6 sigma, 2 of 3`."""
        lines = []
        for field, rule in self.alerts:
            rule_id = field.replace("_", "-")
            if not rule.enabled:
                lines.append(f"{rule_id:17} off")
                continue
            data = rule.model_dump(exclude={"enabled", "metrics", "metric"})
            text = ", ".join(f"{k}={v}" for k, v in data.items())
            lines.append(f"{rule_id:17} {text}")
        return lines


def _valid_keys(model: type[BaseModel]) -> list[str]:
    return list(model.model_fields)


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The pydantic model that owns the key at `loc` (for suggesting the closest valid key)."""
    model: type[BaseModel] = Monitor
    parts, i = loc[:-1], 0
    while i < len(parts):
        field = model.model_fields.get(parts[i])
        if field is None:
            return None
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model, i = annotation, i + 1
        elif get_origin(annotation) is dict:
            model, i = get_args(annotation)[1], i + 2  # regression.figures.<name>: land on the value's model
        else:
            return None
    return model


def _explain(error: dict, path: Path, prefix: str) -> str:
    loc = tuple(str(p) for p in error["loc"])
    key = prefix + (".".join(loc) or "(top level)")
    kind = error["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc)
        valid = _valid_keys(model) if model else []
        close = difflib.get_close_matches(loc[-1], valid, n=1)
        fix = f"did you mean '{close[0]}'?" if close else f"valid keys here: {', '.join(valid)}"
        return f"{path}: unknown key '{key}': {fix}"
    if kind == "missing":
        return (
            f"{path}: missing key '{key}': add it (a thresholds file sets every key; a recipe inherits "
            f"the rest from params/base.yaml)"
        )
    value = error.get("input")
    return f"{path}: key '{key}' = {value!r}: {error['msg']}; fix the value in the file"


def _validate(data, path: Path, prefix: str) -> Thresholds:
    if not isinstance(data, dict):
        raise ThresholdsError(
            f"{path}: expected a mapping with keys 'alerts' and 'regression', got "
            f"{type(data).__name__}; see section `monitor:` of params/base.yaml for the layout"
        )
    try:
        thresholds = Thresholds.model_validate(data)
    except ValidationError as exc:
        raise ThresholdsError("\n".join(_explain(err, path, prefix) for err in exc.errors())) from None
    thresholds._source = f"{path} ({SECTION}:)" if prefix else str(path)
    return thresholds


def _read(path: Path):
    """The file's YAML through the project's one hardened reader (size capped, duplicate keys and alias bombs
    refused); a FIFO, a device or a directory is refused before anything reads it."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ThresholdsError(
            f"{path}: no such thresholds file; pass an existing YAML file (a recipe, or a "
            f"`{SECTION}:` section like the one in {default_path()})"
        ) from None
    except OSError as exc:
        raise ThresholdsError(f"{path}: cannot read the thresholds file: {exc.strerror or exc}") from None
    if kind(mode) != "a regular file":
        raise ThresholdsError(f"{path} is {kind(mode)}, not a thresholds file: nothing was read; pass a YAML file")
    try:
        return read_yaml(path)
    except InputError as exc:
        raise ThresholdsError(str(exc)) from None


def load_thresholds(path: str | Path | None = None) -> Thresholds:
    """Read and validate thresholds: None -> params/base.yaml's `monitor:` section; a file holding a `monitor:`
    key (a fully resolved recipe.yaml, base.yaml) -> that section; any other file -> the section itself.
    A recipe file that only overrides a few keys is resolved through the recipe loader (its layers fill the rest).
    Raises ThresholdsError with one line per problem, each naming the file, the dotted key and the fix."""
    if path is not None and not Path(path).exists() and (params_dir() / "recipes" / f"{path}.yaml").is_file():
        return from_recipe(str(path))  # a recipe name: `grpolab monitor FILE --thresholds tiny`
    path = Path(path) if path is not None else default_path()
    data = _read(path)
    if isinstance(data, dict) and SECTION in data:
        if "defaults" in data:  # a recipe with layers: the loader merges base.yaml under its overrides
            return from_recipe(path)
        return _validate(data[SECTION], path, f"{SECTION}.")
    return _validate(data, path, "")


def from_recipe(ref) -> Thresholds:
    """The thresholds of a recipe (a name under params/recipes or a path), its layers merged."""
    from grpolab.problems import RecipeError
    from grpolab.recipe.loader import load_recipe

    try:
        recipe = load_recipe(ref)
    except (InputError, RecipeError) as exc:
        raise ThresholdsError(str(exc)) from None
    thresholds = Thresholds.model_validate(recipe.monitor.model_dump())
    thresholds._source = f"recipe {recipe.name} ({SECTION}:)"
    return thresholds


def thresholds_for(run) -> Thresholds:
    """The thresholds a run was launched with: `monitor:` of its recipe.yaml (fully resolved at launch); a run
    recorded before the section existed gets its recipe's (by the name in status.json), anything else (a bare
    metrics file) params/base.yaml's."""
    recipe_file = getattr(run, "path", None) and Path(run.path) / "recipe.yaml"
    if recipe_file and recipe_file.is_file():
        try:
            data = read_yaml(recipe_file)
        except InputError:
            data = None
        if isinstance(data, dict) and isinstance(data.get(SECTION), dict):
            return _validate(data[SECTION], recipe_file, f"{SECTION}.")
    # a run recorded before recipes had a `monitor:` section: its recipe's current thresholds, by name
    name = (run.status().get("recipe") if hasattr(run, "status") else None) or ""
    if name and (params_dir() / "recipes" / f"{name}.yaml").is_file():
        try:
            return from_recipe(name)
        except ThresholdsError:
            pass
    return load_thresholds()
