"""The one recipe loader: name or path -> layered YAML -> dotted overrides -> one validated `Recipe`.

Layering (NeMo-RL style): a recipe lists its parents in `defaults:` (e.g. `[base, hardware/ascend-a3]`),
later layers win, at most two levels deep; params/base.yaml is always the first layer, since it is the one
home of every default. A layer may carry `per_device: {npu: {...}, cuda: {...}}`: the block that matches the
resolved `cluster.device` is applied after the layers, so one recipe serves both devices. Overrides from the
CLI, a notebook or papermill (`rollout.tp=16`) are applied last, typed by the schema.
Every schema problem is collected and reported with the file that set the key and the closest valid key.

Why one file of this size: the one loader: layering, the hardened YAML reader, typed overrides and origins share the
same bookkeeping of which file set which key.
"""

from __future__ import annotations

import copy
import re
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from grpolab.paths import params_dir
from grpolab.problems import InputError, Problem, RecipeError, closest
from grpolab.recipe.dotted import dotted_keys, set_dotted
from grpolab.recipe.schema import ModelCard, Recipe
from grpolab.recipe.secrets import redact_override, redaction

LOADER_KEYS = ("defaults", "per_device")  # directives the loader consumes; not recipe data
MAX_DEPTH = 2
CLI = "--set"


def _rel(path: Path) -> str:
    """A path as users know it: relative to the project (params/...) when it is inside."""
    try:
        return str(path.resolve().relative_to(params_dir().resolve().parent))
    except (ValueError, OSError):
        return str(path)


MAX_BYTES = 4 << 20  # a recipe is a few KB; 4 MB leaves room for generated ones and stops a runaway file
MAX_NODES = 1_000_000  # values after expanding YAML aliases: a "billion laughs" file stops here, in well under 1 s


class _Constructor(yaml.constructor.SafeConstructor):
    """PyYAML's safe constructor, except that a key given twice in one mapping is an error naming both lines
    (PyYAML keeps the last one silently: a second `trainer:` section would drop the first)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = (
                    self.construct_scalar(key_node)
                    if key_node.tag == "tag:yaml.org,2002:str"
                    else self.construct_object(key_node)
                )
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r}: set at line {seen[key]} and again at line {line}; "
                        "YAML would keep only the last one: merge them into one",
                        key_node.start_mark,
                    )
                seen[key] = line
        return super().construct_mapping(node, deep)


class _Resolver(yaml.resolver.Resolver):
    """YAML 1.1's resolver, plus YAML 1.2 floats without a dot (`1e-6`): PyYAML reads those as strings."""


_Resolver.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
)


try:  # the C parser (libyaml) is ten times faster: a 1 MB recipe checks in well under 2 s
    from yaml._yaml import CParser as _CParser

    class _Loader(_CParser, _Constructor, _Resolver):
        def __init__(self, stream):
            _CParser.__init__(self, stream)
            _Constructor.__init__(self)
            _Resolver.__init__(self)
except ImportError:  # pragma: no cover - PyYAML built without libyaml

    class _Loader(
        yaml.reader.Reader,
        yaml.scanner.Scanner,
        yaml.parser.Parser,  # type: ignore[no-redef]
        yaml.composer.Composer,
        _Constructor,
        _Resolver,
    ):
        def __init__(self, stream):
            yaml.reader.Reader.__init__(self, stream)
            yaml.scanner.Scanner.__init__(self)
            yaml.parser.Parser.__init__(self)
            yaml.composer.Composer.__init__(self)
            _Constructor.__init__(self)
            _Resolver.__init__(self)


def _expanded_size(data: Any) -> int | None:
    """How many values data holds once YAML aliases are written out (None: an alias refers to itself).

    Aliases share one Python object, so the size of each container is computed once (memoised by identity):
    linear in the file, however deep the aliases nest."""
    sizes: dict[int, int] = {}
    visiting: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, done = stack.pop()
        children = (
            [c for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, (dict, list))]
            if isinstance(node, (dict, list))
            else []
        )
        if done:
            n = len(node) - len(children)
            sizes[id(node)] = 1 + n + sum(sizes[id(c)] for c in children)
            visiting.discard(id(node))
            continue
        if not isinstance(node, (dict, list)) or id(node) in sizes:
            continue
        if id(node) in visiting:
            return None
        visiting.add(id(node))
        stack.append((node, True))
        for c in children:
            if id(c) in visiting:
                return None
            stack.append((c, False))
    return sizes.get(id(data), 1)


def _check_size(data: Any, where: str) -> None:
    """Refuse data that expands (through YAML aliases) to more than MAX_NODES values, before anything walks it."""
    size = _expanded_size(data)
    if size is None:
        raise InputError(f"{where}: a YAML alias refers to the mapping or list that contains it; write the values out")
    if size > MAX_NODES:
        raise InputError(
            f"{where}: the YAML expands to more than {MAX_NODES:,} values (aliases `*name` "
            "repeated inside each other?); a recipe needs no such size: write the values out"
        )


def parse_yaml(text: str, where: str = "<text>") -> Any:
    """YAML text -> Python data with the loader's rules (duplicate keys refused, aliases bounded)."""
    data = yaml.load(text, Loader=_Loader)
    _check_size(data, where)
    return data


def read_text(path: Path) -> str:
    """A recipe file's text: InputError (exit 2) for a missing, unreadable, huge, binary or non-UTF-8 file."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise InputError(
                f"{_rel(path)}: {size:,} bytes is too big for a recipe (at most {MAX_BYTES:,}); is it the right file?"
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if b"\x00" in raw[:8192]:
        raise InputError(f"{_rel(path)}: a binary file, not a YAML recipe; pass a .yaml text file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{_rel(path)}:{line}: not UTF-8 text (byte {raw[exc.start]:#04x}); save the recipe as UTF-8"
        ) from None


def read_yaml(path: Path) -> dict:
    """A YAML mapping from a file; syntax errors name file:line:column (InputError, exit 2)."""
    text = read_text(path)
    try:
        data = parse_yaml(text, _rel(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{_rel(path)}:{mark.line + 1}:{mark.column + 1}" if mark else _rel(path)
        what = getattr(exc, "problem", None) or str(exc)
        kind = "YAML error" if isinstance(exc, yaml.constructor.ConstructorError) else "YAML syntax error"
        raise InputError(f"{where}: {kind}: {what}; fix the file at that line") from None
    except RecursionError:
        raise InputError(f"{_rel(path)}: the YAML nests too deep (or an alias refers to itself)") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"{_rel(path)}: a recipe must be a YAML mapping of sections, not {type(data).__name__}")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise InputError(f"{_rel(path)}: section names must be words, not {bad[0]!r}")
    return data


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
        f"{_rel(child)}: defaults names {name!r}, but there is no params/{name}.yaml; "
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


def _layers(path: Path, depth: int = 0, seen: tuple = ()) -> list[tuple[Path, dict]]:
    """The chain of (file, data) layers for a recipe, parents first."""
    if path.resolve() in seen:
        raise InputError(f"{_rel(path)}: `defaults` loops back to itself ({' -> '.join(_rel(p) for p in seen)})")
    data = read_yaml(path)
    parents = data.get("defaults") or []
    if isinstance(parents, str):
        parents = [parents]
    if not isinstance(parents, list) or not all(isinstance(p, str) for p in parents):
        raise InputError(f"{_rel(path)}: `defaults` must be a list of names, e.g. [base, hardware/ascend-a3]")
    if parents and depth >= MAX_DEPTH:
        raise InputError(
            f"{_rel(path)}: recipes inherit at most {MAX_DEPTH} levels deep; flatten the chain of `defaults`"
        )
    chain: list[tuple[Path, dict]] = []
    for parent in parents:
        chain += _layers(_parent_path(parent, path), depth + 1, seen + (path.resolve(),))
    return chain + [(path, data)]


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
    """The schema annotation at a dotted key (None when the key is not in the schema)."""
    model: Any = Recipe
    annotation: Any = None
    for part in dotted.split("."):
        if isinstance(model, type) and issubclass(model, BaseModel):
            field = model.model_fields.get(part)
            if field is None:
                return None
            annotation = field.annotation
            model = annotation
        elif typing.get_origin(model) is dict:
            annotation = typing.get_args(model)[1]
            model = annotation
        else:
            return None
    return annotation


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
    base = params_dir() / "base.yaml"
    chain = _layers(path)
    if all(p.resolve() != base.resolve() for p, _ in chain):
        chain = _layers(base) + chain  # base is always the first layer: the one home of defaults
    merged: dict = {}
    origins: dict[str, str] = {}
    per_device: dict = {}
    for file, data in chain:
        body = {k: v for k, v in data.items() if k not in LOADER_KEYS}
        _merge(merged, body, _rel(file), origins)
        block = data.get("per_device") or {}
        if not isinstance(block, dict):
            raise InputError(f"{_rel(file)}: `per_device` must map a device (npu, cuda, cpu) to recipe sections")
        for device, section in block.items():
            if not isinstance(section, dict):
                raise InputError(f"{_rel(file)}: per_device.{device} must be a mapping of recipe sections")
            _merge(per_device.setdefault(device, {}), section, _rel(file), {})
            per_device.setdefault("__origin__", {})[device] = _rel(file)
    parsed = [parse_override(o) for o in overrides]
    for key, value in parsed:
        _set_override(merged, key, value)
    device = (merged.get("cluster") or {}).get("device")
    if isinstance(device, str) and device in per_device:
        _merge(merged, per_device[device], f"{per_device['__origin__'][device]} (per_device.{device})", origins)
        for key, value in parsed:  # the command line still wins over the device block
            _set_override(merged, key, value)
    for text, (key, _) in zip(overrides, parsed):
        origins[key] = f"{CLI} {redact_override(text, _marked(merged))}"
    return merged, origins, [_rel(p) for p, _ in chain], path.stem


# ---------------------------------------------------------------------------------------------- validation


def _model_at(loc: tuple) -> Any:
    model: Any = Recipe
    for part in loc:
        if isinstance(model, type) and issubclass(model, BaseModel) and part in model.model_fields:
            model = model.model_fields[part].annotation
        else:
            return None
    return model


def schema_problems(
    exc: ValidationError, origins: dict[str, str], files: list[str], root: type = Recipe
) -> list[Problem]:
    """Turn pydantic's errors into Problems naming file, dotted key, value and fix."""
    problems = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        bad_name = loc[-1:] == ("[key]",)  # a dict key (an env name) that breaks the key's rule
        loc = loc[:-1] if bad_name else loc
        key = ".".join(loc)
        where = origins.get(key) or next(
            (origins[".".join(loc[:i])] for i in range(len(loc) - 1, 0, -1) if ".".join(loc[:i]) in origins), None
        )
        if where is None:  # an unknown section set by --set: the first key below it says who set it
            below = (v for k, v in origins.items() if k.startswith(key + "."))
            where = next(below, files[-1] if files else "<recipe>")
        value = err.get("input")
        kind = err["type"]
        if bad_name:
            message = f"{where}: {loc[-1]!r} is not a valid name in {'.'.join(loc[:-1])}"
            fix = (
                "use letters, digits and '_' only, not starting with a digit (a shell variable name: the "
                "launch exports it on every node)"
            )
        elif kind == "extra_forbidden":
            parent = _model_at(loc[:-1]) if root is Recipe else root
            valid = list(parent.model_fields) if isinstance(parent, type) and issubclass(parent, BaseModel) else []
            near = closest(loc[-1], valid)
            section = ".".join(loc[:-1]) or "the top level"
            message = f"{where}: unknown key {loc[-1]!r} in {section}"
            fix = f"did you mean {'.'.join(loc[:-1] + (near,))!r}?" if near else f"valid keys: {', '.join(valid)}"
            value = value if not isinstance(value, dict) else "{...}"
        elif kind == "missing":
            message = f"{where}: required key {key!r} is not set"
            fix = (
                "add engines/trl to the recipe's defaults: params/engines/trl.yaml holds the CPU trainer's settings"
                if loc[0] == "local"
                else "set it in the recipe; base.yaml holds the default of every key (add `base` to defaults)"
            )
            value = None
        else:
            message = f"{where}: {err['msg']}"
            expected = err.get("ctx", {})
            fix = f"give {key} a valid value" + (
                f" ({', '.join(f'{k} {v}' for k, v in expected.items())})" if expected else ""
            )
        problems.append(Problem("schema", "error", key, _jsonable(value), message, fix))
    return problems


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


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
        raise RecipeError(schema_problems(exc, {}, [_rel(path)], root=ModelCard), _rel(path)) from None
