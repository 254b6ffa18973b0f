"""The one recipe loader: name or path -> layered YAML -> dotted overrides -> one validated `Recipe`.

Layering (NeMo-RL style): a recipe lists its parents in `defaults:` (e.g. `[base, hardware/ascend-a3]`),
later layers win, at most two levels deep; params/base.yaml is always the first layer, since it is the one
home of every default. A layer may carry `per_device: {npu: {...}, cuda: {...}}`: the block that matches the
resolved `cluster.device` is applied after the layers, so one recipe serves both devices. Overrides from the
CLI, a notebook or papermill (`rollout.tp=16`) are applied last, typed by the schema.
Every schema problem is collected and reported with the file that set the key and the closest valid key.

Layering is a linearisation (C3, as Python's MRO and NeMo-RL): each file once, a parent before the files it
inherits from, a later parent in `defaults` over an earlier one, base.yaml first wherever it is listed; a parent
listed twice, or parents that order two files both ways round, are refused naming the files.
Files are read by grpolab.recipe.yamlio (the one YAML reader); schema errors are translated by
grpolab.recipe.schema_errors (the one translator).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from grpolab.paths import params_dir
from grpolab.problems import InputError, Problem, RecipeError, closest
from grpolab.recipe import schema_errors
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.dotted import dotted_keys, set_dotted
from grpolab.recipe.schema import Recipe
from grpolab.recipe.secrets import redact_override, redaction
from grpolab.recipe.yamlio import parse_yaml, read_yaml, rel_path

LOADER_KEYS = ("defaults", "per_device")  # directives the loader consumes; not recipe data
MAX_DEPTH = 2
CLI = "--set"


# ---------------------------------------------------------------------------------------------- finding


def recipe_names() -> list[str]:
    return sorted(p.stem for p in (params_dir() / "recipes").glob("*.yaml"))


def resolve_ref(ref: str | Path) -> Path:
    """A recipe name under params/recipes/, or a path to any YAML file."""
    text = str(ref)
    path = Path(text).expanduser()
    if path.suffix in (".yaml", ".yml") or "/" in text or path.is_file():
        if path.is_file():
            return path
        raise InputError(f"no recipe file {text!r}")
    candidate = params_dir() / "recipes" / f"{text}.yaml"
    if candidate.is_file():
        return candidate
    names = recipe_names()
    near = closest(text, names)
    hint = f"did you mean {near!r}? " if near else ""
    raise InputError(f"no recipe named {text!r}: {hint}known recipes: {', '.join(names)}")


def _parent_path(name: str, child: Path) -> Path:
    """`base`, `hardware/ascend-a3`, `recipes/qwen3_8b` (under params/), or a path relative to the child."""
    for base in (params_dir(), child.parent):
        candidate = base / (name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")
        if candidate.is_file():
            return candidate
    raise InputError(
        f"{rel_path(child)}: defaults names {name!r}, but there is no params/{name}.yaml; "
        "list parents as `base`, `hardware/<profile>` or `recipes/<name>`"
    )


# ---------------------------------------------------------------------------------------------- layering


def _merge(into: dict, layer: dict, origin: str, origins: dict, prefix: str = "") -> None:
    """Deep-merge `layer` into `into` (dicts merge, everything else replaces); record who set each key."""
    for key, value in layer.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            origins[dotted] = origins.get(dotted, origin)
            _merge(into[key], value, origin, origins, dotted + ".")
        else:
            old = into.get(key)
            into[key] = copy.deepcopy(value)
            origins[dotted] = origin
            if isinstance(old, dict):  # the keys below a replaced section now come from this layer too
                for k in dotted_keys(old, dotted):
                    if k in origins:
                        origins[k] = origin


def _parents(path: Path, data: dict, depth: int) -> list[Path]:
    """The files a layer's `defaults:` names, checked: a list of names, each once, within the depth contract."""
    parents = data.get("defaults") or []
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise InputError(f"{rel_path(path)}: `defaults` must be a list of names, e.g. [base, hardware/ascend-a3]")
    if parents and depth >= MAX_DEPTH:
        raise InputError(
            f"{rel_path(path)}: recipes inherit at most {MAX_DEPTH} levels deep; flatten the chain of `defaults`"
        )
    found = [_parent_path(p, path) for p in parents]
    twice = [p for i, p in enumerate(parents) if found[i].resolve() in {f.resolve() for f in found[:i]}]
    if twice:
        raise InputError(
            f"{rel_path(path)}: `defaults` lists {twice[0]!r} twice; list each parent once (the later one wins over "
            "the earlier ones)"
        )
    return found


def _c3(owner: Path, lists: list[list[Path]]) -> list[Path]:
    """C3 merge (Python's MRO): one order that keeps every list's order; InputError naming the files if none.
    Linear in practice: at most two levels of a few files each."""
    lists = [list(x) for x in lists if x]
    out: list[Path] = []
    while lists:
        head = next((x[0] for x in lists if not any(x[0] in rest[1:] for rest in lists)), None)
        if head is None:
            a, b = lists[0][0], next(rest[0] for rest in lists if lists[0][0] in rest[1:])
            raise InputError(
                f"{rel_path(owner)}: its parents order {rel_path(a)} and {rel_path(b)} both ways round (each wins over the "
                "other in a different `defaults` list), so no layering keeps both; list them in one order"
            )
        out.append(head)
        lists = [[x for x in lst if x != head] for lst in lists]
        lists = [x for x in lists if x]
    return out


def _precedence(path: Path, base: Path, read: dict, depth: int = 0, seen: tuple = ()) -> list[Path]:
    """The layers of `path`, most important first: the file, then its parents linearised (C3, as Python's MRO,
    with "later in `defaults` wins"): each file once, a parent before everything it inherits from. base.yaml is
    left out: it is always the first layer (the one home of defaults), wherever it is listed."""
    key = path.resolve()
    if key in seen:
        raise InputError(
            f"{rel_path(path)}: `defaults` loops back to itself ({' -> '.join(rel_path(p) for p in seen)})"
        )
    if key not in read:
        read[key] = (path, read_yaml(path))  # the path as the user or `defaults` wrote it: messages show that
    found = [p for p in _parents(path, read[key][1], depth) if p.resolve() != base]
    lists = [_precedence(p, base, read, depth + 1, seen + (key,)) for p in reversed(found)]
    return [key] + _c3(path, lists + [[p.resolve() for p in reversed(found)]])


def _layers(path: Path) -> list[tuple[Path, dict]]:
    """The chain of (file, data) layers for a recipe, applied in this order: base.yaml first, the recipe last."""
    base = (params_dir() / "base.yaml").resolve()
    read: dict[Path, tuple[Path, dict]] = {}
    order = [] if path.resolve() == base else list(reversed(_precedence(path, base, read)))
    if base not in read:
        read[base] = (params_dir() / "base.yaml", read_yaml(base))
    _parents(base, read[base][1], 0)  # base.yaml's own `defaults` (none) is checked like any other
    return [read[base]] + [read[p] for p in order]


def _set_override(data: dict, dotted: str, value: Any) -> None:
    """Apply one `--set`; `verl_overrides.<verl.dotted.key>=v` sets that flat verl key, as the recipe writes it."""
    head, _, rest = dotted.partition(".")
    if head == "verl_overrides" and rest:
        if not isinstance(data.get(head), dict):
            data[head] = {}
        data[head][rest] = value
    else:
        set_dotted(data, dotted, value)


def field_type(dotted: str) -> Any:
    """The schema annotation at a dotted key of a recipe (None when the key is not in the schema)."""
    return schema_errors.field_type(Recipe, dotted)


def parse_override(text: str) -> tuple[str, Any]:
    """`key=value` -> (key, typed value). Values are YAML (16, true, [2, 4], null) unless the key is a string."""
    if not isinstance(text, str) or "=" not in text:
        raise InputError(f"override {text!r} is not `key=value` (e.g. rollout.tp=16)")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise InputError(f"override {text!r}: the key before '=' must be a dotted path such as rollout.tp")
    if field_type(key) is str:  # env values, paths, names: keep exactly what was typed
        return key, raw
    try:
        value = parse_yaml(raw, f"override {key}") if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    except RecursionError:
        raise InputError(f"override {key}: the value nests too deep") from None
    return key, value


def merge_layers(ref: str | Path, overrides: Iterable[str] = ()) -> tuple[dict, dict, list[str], str]:
    """(merged data, origins per dotted key, files, recipe name) before schema validation."""
    path = resolve_ref(ref)
    chain = _layers(path)
    merged: dict = {}
    origins: dict[str, str] = {}
    per_device: dict = {}
    for file, data in chain:
        body = {k: v for k, v in data.items() if k not in LOADER_KEYS}
        _merge(merged, body, rel_path(file), origins)
        block = data.get("per_device") or {}
        if not isinstance(block, dict):
            raise InputError(f"{rel_path(file)}: `per_device` must map a device (npu, cuda, cpu) to recipe sections")
        for device, section in block.items():
            if not isinstance(section, dict):
                raise InputError(f"{rel_path(file)}: per_device.{device} must be a mapping of recipe sections")
            _merge(per_device.setdefault(device, {}), section, rel_path(file), {})
            per_device.setdefault("__origin__", {})[device] = rel_path(file)
    parsed = [parse_override(o) for o in overrides]
    for text, (key, value) in zip(overrides, parsed):
        _blame_override(merged, key, f"{CLI} {text}", origins)
        _set_override(merged, key, value)
    device = (merged.get("cluster") or {}).get("device")
    if isinstance(device, str) and device in per_device:
        _merge(merged, per_device[device], f"{per_device['__origin__'][device]} (per_device.{device})", origins)
        for text, (key, value) in zip(overrides, parsed):  # the command line still wins over the device block
            _blame_override(merged, key, f"{CLI} {text}", origins)
            _set_override(merged, key, value)
    marked = _marked(merged)
    for key, origin in origins.items():  # a secret `--set` is quoted redacted wherever its origin is named
        if origin.startswith(f"{CLI} "):
            origins[key] = f"{CLI} {redact_override(origin[len(CLI) + 1 :], marked)}"
    return merged, origins, [rel_path(p) for p, _ in chain], path.stem


def _blame_override(merged: dict, key: str, origin: str, origins: dict) -> None:
    """Record that a `--set` sets `key`, and every section it creates or replaces on the way and every key below
    a value it replaces: `--set trainer.logger.0=wandb` turns the list trainer.logger into a mapping, so a
    problem with trainer.logger is the --set's, not params/base.yaml's."""
    head, _, rest = key.partition(".")
    parts = [head, rest] if head == "verl_overrides" and rest else key.split(".")
    node: Any = merged
    for i, part in enumerate(parts):
        dotted = ".".join(parts[: i + 1])
        value = node.get(part) if isinstance(node, dict) else None
        if i == len(parts) - 1 or not isinstance(value, dict):  # the key itself, or a section the --set makes
            origins[dotted] = origin
            for below in dotted_keys(value, dotted) if isinstance(value, dict) else ():
                origins[below] = origin
        node = value


# ---------------------------------------------------------------------------------------------- validation


def schema_problems(
    exc: ValidationError, origins: dict[str, str], files: list[str], root: type = Recipe
) -> list[Problem]:
    """Pydantic's errors as Problems naming the file (or --set) that set each key: schema_errors.translate."""

    def where(key: str) -> str:
        parts = key.split(".") if key else []
        found = next(
            (origins[".".join(parts[:i])] for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in origins), None
        )
        if found is None:  # an unknown section set by --set: the first key below it says who set it
            found = next((v for k, v in origins.items() if k.startswith(key + ".")), None)
        return found or (files[-1] if files else "<recipe>")

    return schema_errors.translate(exc, root, where)


def load_recipe(ref: str | Path, overrides: Iterable[str] = ()) -> Recipe:
    """Load, layer, override and validate a recipe. Raises InputError (exit 2) or RecipeError (exit 1)."""
    merged, origins, files, name = merge_layers(ref, overrides)
    try:
        recipe = Recipe.model_validate(merged)
    except ValidationError as exc:
        hide = redaction(overrides=overrides, marked=_marked(merged))
        raise RecipeError(hide.problems(schema_problems(exc, origins, files)), files[-1]) from None
    repeated = repeated_overrides(overrides)
    if repeated:  # they quote the overrides: a secret one shows redacted
        repeated = redaction(recipe, overrides=overrides).problems(repeated)
    return recipe.set_origin(name, files, origins, repeated)


def overrides_of(recipe: Recipe) -> list[str]:
    """The overrides (`--set`, a notebook's `overrides`) a recipe was loaded with, one per key they set, sorted,
    secret values redacted: what a command line repeats to load the same recipe (`grpolab render NAME --set ...`)."""
    return sorted({o[len(CLI) + 1 :] for o in recipe.origins.values() if o.startswith(f"{CLI} ")})


def _marked(merged: dict) -> list[str]:
    names = merged.get("secrets")
    return [str(n) for n in names] if isinstance(names, list) else []


def repeated_overrides(overrides: Iterable[str]) -> list[Problem]:
    """A warning for each key given more than once in the overrides: the last one wins, silently otherwise."""
    seen: dict[str, list[str]] = {}
    for text in overrides:
        seen.setdefault(str(text).split("=", 1)[0].strip(), []).append(str(text))
    return [
        Problem(
            "schema",
            "warning",
            key,
            texts[-1].split("=", 1)[1] if "=" in texts[-1] else None,
            f"{CLI}: {key} is set {len(texts)} times ({'; '.join(texts)}); the last one wins",
            f"give {key} once",
        )
        for key, texts in seen.items()
        if len(texts) > 1
    ]


def recipe_dict(recipe: Recipe) -> dict:
    return recipe.model_dump(mode="json")


def to_yaml(recipe: Recipe, env: dict[str, str] | None = None) -> str:
    """The fully resolved recipe as YAML (what `grpolab show` prints and runs/<id>/recipe.yaml holds).

    `env` replaces the env section (the run record passes it with secrets redacted)."""
    data = recipe_dict(recipe)
    if env is not None:
        data["env"] = env
    header = f"# resolved recipe {recipe.name!r} from: {', '.join(recipe.files)}\n"
    return header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)


def describe(path: Path) -> str:
    """The first comment line of a recipe file: its one-line description."""
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
        if line.strip():
            break
    return ""


# ---------------------------------------------------------------------------------------------- model cards


def card_path(name: str) -> Path:
    return params_dir() / "models" / f"{name}.yaml"


def load_card(name_or_path: str | Path) -> ModelCard:
    path = Path(name_or_path)
    if not path.suffix:
        path = card_path(str(name_or_path))
    if not path.is_file():
        names = sorted(p.stem for p in (params_dir() / "models").glob("*.yaml"))
        near = closest(str(name_or_path), names)
        raise InputError(
            f"no model card {str(name_or_path)!r} in params/models/"
            + (f"; did you mean {near!r}?" if near else f"; known cards: {', '.join(names)}")
        )
    data = read_yaml(path)
    try:
        return ModelCard.model_validate(data)
    except ValidationError as exc:
        raise RecipeError(schema_problems(exc, {}, [rel_path(path)], root=ModelCard), rel_path(path)) from None
