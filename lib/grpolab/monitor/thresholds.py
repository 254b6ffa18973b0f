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

from pathlib import Path

from pydantic import PrivateAttr, ValidationError

from grpolab import run_folder
from grpolab.paths import params_dir
from grpolab.problems import InputError, RecipeError
from grpolab.recipe.loader import load_recipe
from grpolab.recipe.monitor_schema import Monitor
from grpolab.recipe.schema_errors import translate
from grpolab.recipe.yamlio import load_yaml

SECTION = "monitor"


def default_path() -> Path:
    """params/base.yaml under the project's params directory ($GRPOLAB_PARAMS moves it): the one home."""
    return params_dir() / "base.yaml"


class ThresholdsError(InputError, ValueError):
    """The thresholds are missing, unreadable or do not fit the schema (message: file, key, fix): an unusable
    input (the CLI's exit status 2)."""


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
            data = rule.model_dump(exclude={"enabled", "metrics", "metric"})
            text = ", ".join(f"{k}={v}" for k, v in data.items()) if rule.enabled else "off"
            lines.append(f"{field.replace('_', '-'):17} {text}")
        return lines


def _validate(data, path: Path, prefix: str) -> Thresholds:
    if not isinstance(data, dict):
        raise ThresholdsError(
            f"{path}: expected a mapping with keys 'alerts' and 'regression', got "
            f"{type(data).__name__}; see section `monitor:` of params/base.yaml for the layout"
        )
    try:
        thresholds = Thresholds.model_validate(data)
    except ValidationError as exc:  # the recipe layer's one translator; one line per problem, key and fix named
        problems = translate(exc, Monitor, lambda _key: str(path), prefix)
        lines = [f"{p.message}{'' if p.value is None else f' (= {p.value!r})'}; {p.fix}" for p in problems]
        raise ThresholdsError("\n".join(lines)) from None
    thresholds._source = f"{path} ({SECTION}:)" if prefix else str(path)
    return thresholds


def _read(path: Path):
    """The file's YAML through the recipe layer's one reader (bounded, special files refused, strict YAML)."""
    if not path.exists():
        raise ThresholdsError(
            f"{path}: no such thresholds file; pass an existing YAML file (a recipe, or a "
            f"`{SECTION}:` section like the one in {default_path()})"
        )
    try:
        return load_yaml(path, "thresholds")
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

    try:
        recipe = load_recipe(ref)
    except (InputError, RecipeError) as exc:
        raise ThresholdsError(str(exc)) from None
    thresholds = Thresholds.model_validate(recipe.monitor.model_dump())
    thresholds._source = f"recipe {recipe.name} ({SECTION}:)"
    return thresholds


def _over(base: dict, recorded: dict) -> dict:
    """`recorded` laid over `base`, mapping by mapping."""
    out = dict(base)
    for key, value in recorded.items():
        out[key] = _over(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _current(name: str) -> Thresholds:
    """The thresholds a recipe of this name has today (its file under params/recipes), else params/base.yaml's."""
    if name and (params_dir() / "recipes" / f"{name}.yaml").is_file():
        try:
            return from_recipe(name)
        except ThresholdsError:
            pass
    return load_thresholds()


def thresholds_for(run) -> Thresholds:
    """The thresholds a run was launched with: `monitor:` of its recipe.yaml (fully resolved at launch). A rule
    added since the run was recorded takes the value its recipe has today (by the name in status.json), else
    params/base.yaml's; a run recorded before the section existed gets its recipe's whole, anything else (a bare
    metrics file) params/base.yaml's."""
    name = (run.status().get("recipe") if hasattr(run, "status") else None) or ""
    recipe_file = getattr(run, "path", None) and run_folder.recipe_file(run.path)
    if recipe_file and recipe_file.is_file():
        try:
            data = load_yaml(recipe_file, "run record")
        except InputError:
            data = None
        if isinstance(data, dict) and isinstance(data.get(SECTION), dict):
            return _validate(_over(_current(name).model_dump(), data[SECTION]), recipe_file, f"{SECTION}.")
    return _current(name)
