"""Rule `verl-schema`: the rendered overrides checked against the installed verl's own config files.

verl ships its Hydra config in the wheel (verl/trainer/config). Two passes: a fast walk of the generated,
fully composed config that names EVERY unknown key (with the closest valid one) and wrong scalar types,
then Hydra's own compose (hydra-core only, no torch, no verl import) as the final word, which stops at the
first error. Nothing here imports verl itself.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import yaml

from grpolab.owned import replace_file
from grpolab.paths import cache_root
from grpolab.problems import Problem, closest
from grpolab.recipe.dotted import MISSING, get_dotted
from grpolab.recipe.engines import VERL_ENGINES, named
from grpolab.recipe.schema import Recipe
from grpolab.recipe.stack import installed
from grpolab.verl import fieldmap, versions
from grpolab.verl.fieldmap import REF, verl_key, verl_keys_of

# verl config dicts whose keys are free-form: new keys need Hydra's `+` and are not checked by verl
FREE_FORM = {
    "override_transformer_config",
    "override_optimizer_config",
    "override_ddp_config",
    "override_mcore_model_config",
    "engine_kwargs",
    "override_config",
    "apply_chat_template_kwargs",
    "mbridge_config",
    "sampler_kwargs",
    "mm_processor_kwargs",
    "kw_args",
    "reward_kwargs",
}
GENERATED = {e.name: f"_generated_{e.config_name}.yaml" for e in VERL_ENGINES}  # each verl engine's composed config


def generated(engine: str) -> str | None:
    """The file name of an engine's fully composed config as verl ships it (_generated_ppo_veomni_trainer.yaml for
    model_engine=veomni), None for an engine verl does not train."""
    found = named(engine)
    return f"_generated_{found.config_name}.yaml" if found.verl and found.config_name else None


verl_root = versions.verl_root  # the verl package folder checked for ($GRPOLAB_VERL_ROOT, else the installed one)
verl_version = versions.verl_version  # its version


def config_dir() -> Path | None:
    """verl's Hydra config folder (verl/trainer/config) of the verl checked for, or None."""
    root = verl_root()
    path = root / "trainer" / "config" if root is not None else None
    return path if path is not None and path.is_dir() else None


def base_config(engine: str, folder: Path | None = None) -> dict | None:
    """verl's fully composed default config for an engine (of `folder`, else of the verl checked for), or None: verl
    ships it generated for its main engines; another model_engine's is composed with Hydra (None where that version
    has no such engine)."""
    folder = folder or config_dir()
    name = generated(engine)
    if folder is None or name is None:
        return None
    return _base_config(folder, name, named(engine).model_engine or "")


@lru_cache(maxsize=16)
def _base_config(folder: Path, name: str, model_engine: str) -> dict | None:
    if (folder / name).is_file():
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        return yaml.load((folder / name).read_text(), Loader=loader)
    if not (folder / "model_engine" / f"{model_engine}.yaml").is_file():
        return None
    # lazy: omegaconf (only an engine verl ships no generated config for is composed)
    from omegaconf import OmegaConf

    try:
        with _hydra(folder) as hydra_compose:
            cfg = hydra_compose(config_name="ppo_trainer", overrides=[f"model_engine={model_engine}"])
            return OmegaConf.to_container(cfg, resolve=False)
    except Exception:  # Hydra raises several types: that version cannot compose the engine at all
        return None


def in_free_form(config: dict, dotted: str) -> bool:
    """Is the key inside one of verl's free-form dicts (so `+key=value` is the way to set it)?"""
    parents = dotted.split(".")[:-1]
    for i, part in enumerate(parents):
        if part in FREE_FORM:
            return True
        if get_dotted(config, ".".join(parents[: i + 1]), MISSING) is MISSING:
            return False
    return False


def _known_at(config: dict, dotted: str) -> tuple[str, list[str]]:
    """The deepest existing parent of a key and the keys valid there."""
    parts = dotted.split(".")
    for i in range(len(parts)):
        parent = ".".join(parts[:i])
        node = get_dotted(config, parent) if parent else config
        if not isinstance(node, dict) or parts[i] not in node:
            return parent, list(node) if isinstance(node, dict) else []
    return dotted, []


def _type_problem(default: Any, value: Any) -> str | None:
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "a boolean"
    if isinstance(default, int):
        return None if isinstance(value, int) and not isinstance(value, bool) else "an integer"
    if isinstance(default, float):
        return None if isinstance(value, (int, float)) and not isinstance(value, bool) else "a number"
    return None


def _declared() -> dict[str, tuple[list[str], dict[str, str]]]:
    """verl's config dataclasses read from their source (never imported): {class: (bases, {field: annotation})}."""
    return _declared_in(config_dir())


@lru_cache(maxsize=8)
def _declared_in(folder: Path | None) -> dict[str, tuple[list[str], dict[str, str]]]:
    found: dict[str, tuple[list[str], dict[str, str]]] = {}
    if folder is None:
        return found
    package = folder.parent.parent
    for sub in ("trainer/config", "workers/config", "utils/profiler"):
        for path in sorted((package / sub).rglob("*.py")):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef):
                    fields = {
                        item.target.id: ast.unparse(item.annotation)
                        for item in node.body
                        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                    }
                    found[node.name] = ([ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases], fields)
    return found


def _field_annotation(name: str | None, field: str) -> str | None:
    seen: set[str] = set()
    while name and name not in seen:
        seen.add(name)
        bases, fields = _declared().get(name, ([], {}))
        if field in fields:
            return fields[field]
        name = next((b for b in bases if b in _declared()), None)
    return None


def _takes_text(config: dict, key: str) -> bool:
    """Does verl's dataclass behind this key declare it as text (str, Any)? Walks `_target_` classes and the
    dataclass-typed fields nested in them."""
    node: Any = config
    cls: str | None = None
    annotation: str | None = None
    for part in key.split("."):
        if isinstance(node, dict) and isinstance(node.get("_target_"), str):
            cls = node["_target_"].rsplit(".", 1)[-1]
        annotation = _field_annotation(cls, part)
        node = node.get(part) if isinstance(node, dict) else None
        names = re.findall(r"[A-Za-z_]\w*", annotation or "")
        cls = next((n for n in names if n in _declared()), None)
    return bool(annotation) and bool(re.search(r"\b(str|Any)\b", annotation))


def static_problems(recipe: Recipe, config: dict, keys: dict[str, Any]) -> list[Problem]:
    problems = []
    version = verl_version()
    for key, value in keys.items():
        if key.startswith("+"):
            continue
        recipe_key = f"verl_overrides.{key}" if key in recipe.verl_overrides else key
        error = partial(Problem, "verl-schema", "error", recipe_key, value)  # then the message and the fix
        default = get_dotted(config, key, MISSING)
        if default is MISSING:
            if in_free_form(config, key):
                continue
            parent, valid = _known_at(config, key)
            near = closest(key.split(".")[len(parent.split(".")) if parent else 0], valid)
            fix = (
                f"did you mean {(parent + '.' if parent else '') + near!r}?"
                if near
                else f"valid keys under {parent or 'the root'}: {', '.join(valid[:12])}"
            )
            problems.append(
                error(
                    f"verl {version} does not know {key!r} (composition would fail: Could not override)",
                    fix + "; to add a free-form key on purpose, write it as '+" + key + "'",
                )
            )
            continue
        expected = _type_problem(default, value) if default is not None else None
        if expected and isinstance(value, str) and _takes_text(config, key):
            expected = None  # verl's dataclass declares text as well (rollout_is_threshold: str | float, "0.5_4.0")
        if expected:
            problems.append(
                error(
                    f"verl {version} expects {expected} for {key!r} (Hydra would pass the string on unchecked)",
                    f"give {key} {expected}",
                )
            )
    return problems


def _config_stamp(folder: Path | None = None) -> str | None:
    """A hash of every file of verl's config folder: what a composition's verdict depends on besides the overrides
    (a folder's content, not its path: two checkouts of the same verl share verdicts, and an edited config file is
    composed again). Hashed again only when a file's size or mtime changed."""
    folder = folder or config_dir()
    return _content_hash(folder, _files(folder)) if folder is not None else None


def _files(folder: Path) -> tuple[tuple[Path, int, int], ...]:
    """A config folder's yaml files with their size and mtime: what a hash of their content is remembered by."""
    return tuple((path, (st := path.stat()).st_size, st.st_mtime_ns) for path in sorted(folder.rglob("*.yaml")))


@lru_cache(maxsize=16)
def _content_hash(folder: Path, files: tuple[tuple[Path, int, int], ...]) -> str:
    digest = hashlib.sha256(b"verl-config")
    for path, _, _ in files:
        digest.update(f"\n{path.relative_to(folder)}\n".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _cache_file(overrides: list[str], config_name: str = "ppo_trainer", folder: Path | None = None) -> Path | None:
    """Where a composition's verdict is remembered (grpolab.paths.cache_root()/verl-compose)."""
    stamp = _config_stamp(folder)
    if stamp is None:
        return None
    key = hashlib.sha256((stamp + "\n" + config_name + "\n" + "\n".join(overrides)).encode()).hexdigest()[:24]
    return cache_root() / "verl-compose" / f"{key}.json"


def compose(overrides: list[str], config_name: str = "ppo_trainer", folder: Path | None = None) -> str | None:
    """Compose with Hydra exactly as main_ppo would (against `folder`, a verl config folder, else the one of the
    verl checked for); None when it composes, else Hydra's message.

    The verdict is cached on disk (keyed by the config files' content, the root config and the overrides), so
    checking the same recipe again in a notebook skips Hydra's ~0.5 s."""
    folder = folder or config_dir()
    cache = _cache_file(overrides, config_name, folder)
    if cache is not None and cache.is_file():
        try:
            return json.loads(cache.read_text())["error"]
        except (OSError, ValueError, KeyError):
            pass
    error = _compose(overrides, config_name, folder)
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"error": error}))
        except OSError:
            pass  # a read-only home only costs speed
    return error


@contextmanager
def _hydra(folder: Path | None) -> Iterator[Callable[..., Any]]:
    """Hydra's compose, initialised on a verl config folder (Hydra's global state cleared before and after)."""
    # lazy: hydra (only composing against the installed verl's config needs it; seconds to import)
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(folder), version_base=None):
            yield compose
    finally:
        GlobalHydra.instance().clear()


def _searchpath(folder: Path | None) -> list[str]:
    """For a config folder other than the checked verl's (a recipe's own, which builds on verl's ppo_trainer): the
    override pointing its Hydra search path at the checked verl's config (grpolab.verl.entry)."""
    verl = config_dir()
    if folder is None or verl is None or Path(folder).resolve() == verl.resolve():
        return []
    return [f"hydra.searchpath=[file://{verl}]"]


def _compose(overrides: list[str], config_name: str, folder: Path | None) -> str | None:
    try:
        with _hydra(folder) as hydra_compose:
            hydra_compose(config_name=config_name, overrides=[*overrides, *_searchpath(folder)])
    except Exception as exc:  # hydra raises several exception types; the message is what users need
        return str(exc).strip()
    return None


# ---------------------------------------------------------------------------------------------- launches as data


def split_argv(argv: list[str]) -> tuple[str, list[str]]:
    """A `python3 -m verl.trainer.main_ppo ...` argument list -> (Hydra config name, overrides).

    The interpreter, `-m MODULE` and `--config-path` are dropped; `--config-name` picks the root config."""
    config_name, overrides, skip = "ppo_trainer", [], False
    args = list(argv)
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "-m":
            skip = True
        elif arg.startswith("--config-name"):
            value = arg.split("=", 1)[1] if "=" in arg else args[i + 1]
            skip = "=" not in arg
            config_name = value[:-5] if value.endswith(".yaml") else value
        elif arg.startswith("--config-path") or arg.startswith("--config-dir"):
            skip = "=" not in arg
        elif "=" in arg:
            overrides.append(arg)
    return config_name, overrides


def parse_overrides(overrides: list[str]) -> dict[str, Any]:
    """Hydra overrides -> {bare dotted key: value}, read with Hydra's own parser (as verl reads them)."""
    # lazy: hydra (only reading overrides with Hydra's parser needs it; seconds to import)
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return {o.key_or_group: _plain(o.value()) for o in parsed}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def effective(overrides: list[str], config_name: str = "ppo_trainer", folder: Path | None = None) -> dict[str, Any]:
    """The config verl would run with: composed (against `folder`, an entry point's own config folder, else the
    checked verl's) and interpolations resolved, flattened to dotted keys. Composing takes Hydra ~1 s: a launch
    composed before in this process is not composed again, and one composed before on this machine is read from the
    cache (as compose's verdicts are; _effective_cache_file says what its key holds)."""
    return copy.deepcopy(_effective(tuple(overrides), config_name, folder or config_dir()))


# resolvers whose value depends on nothing but the config itself; another one (oc.env, hydra's runtime.cwd, now, a
# resolver some library registered) depends on the process: a launch that uses one is composed every time
_PURE_RESOLVERS = {"oc.select", "oc.create", "oc.deprecated", "oc.decode", "oc.dict.keys", "oc.dict.values"}
_RESOLVER = re.compile(r"\$\{\s*([\w.]+)\s*:")


def _pure(texts: Iterable[str]) -> bool:
    return all(name in _PURE_RESOLVERS for text in texts for name in _RESOLVER.findall(text))


@lru_cache(maxsize=16)
def _pure_folder(folder: Path, files: tuple[tuple[Path, int, int], ...]) -> bool:
    return _pure(path.read_text(errors="replace") for path, _, _ in files)


def _folder_key(folder: Path | None) -> str | None:
    """A config folder's content hash, or None where it cannot be cached (none, or a resolver that reads the
    process)."""
    if folder is None:
        return None
    files = _files(folder)
    return _content_hash(folder, files) if _pure_folder(folder, files) else None


def _effective_cache_file(overrides: tuple[str, ...], config_name: str, folder: Path | None) -> Path | None:
    """Where an effective launch is remembered: keyed by everything it depends on (the config folder's content and,
    for an entry point's own folder, the checked verl's, the root config, the overrides, Hydra's and OmegaConf's
    versions); None for a launch that reads the process (_PURE_RESOLVERS)."""
    folders = [folder, *([config_dir()] if _searchpath(folder) else [])]
    stamps = [_folder_key(f) for f in folders]
    if None in stamps or not _pure(overrides):
        return None
    tools = [str(v) for package in ("hydra-core", "omegaconf") for v in installed(package)]
    key = "\n".join(["effective/1", *tools, *[str(s) for s in stamps], config_name, *overrides])
    return cache_root() / "verl-effective" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


@lru_cache(maxsize=16)
def entry_schema(folder: Path, config_name: str, overrides: tuple[str, ...] = ()) -> dict | None:
    """An entry point's own config, composed (unresolved) as a nested dict: what its keys are; None when it does not
    compose."""
    # lazy: omegaconf (only an entry point's own config is composed for its keys)
    from omegaconf import OmegaConf

    try:
        with _hydra(folder) as hydra_compose:
            cfg = hydra_compose(config_name=config_name, overrides=[*overrides, *_searchpath(folder)])
            return OmegaConf.to_container(cfg, resolve=False)
    except Exception:  # Hydra raises several types; the caller composes the launch and names Hydra's message
        return None


@lru_cache(maxsize=32)
def _effective(overrides: tuple[str, ...], config_name: str, folder: Path | None) -> dict[str, Any]:
    cache = _effective_cache_file(overrides, config_name, folder)
    if cache is not None and cache.is_file():
        try:
            return json.loads(cache.read_text())
        except (OSError, ValueError):
            pass
    flat = _compose_effective(overrides, config_name, folder)
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            part = cache.with_name(f"{cache.name}.{os.getpid()}")  # written whole, then renamed: a reader never
            part.write_text(json.dumps(flat))  # sees half a file (two processes may compose the same launch)
            replace_file(part, cache)
        except (OSError, TypeError, ValueError):
            pass  # a read-only home only costs speed; a value JSON cannot hold is composed each time
    return flat


def _compose_effective(overrides: tuple[str, ...], config_name: str, folder: Path | None) -> dict[str, Any]:
    # lazy: omegaconf (only composing against the installed verl's config needs it; seconds to import)
    from omegaconf import OmegaConf

    with _hydra(folder) as hydra_compose:
        cfg = hydra_compose(config_name=config_name, overrides=[*overrides, *_searchpath(folder)])
        data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    flat: dict[str, Any] = {}

    def walk(prefix: str, node: Any) -> None:
        if isinstance(node, dict) and node:
            for k, v in node.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            flat[prefix] = node

    walk("", data)
    return flat


def deprecated() -> dict[str, str]:
    """Settings the installed verl's own config files mark deprecated: {key name or config file: verl's comment}.

    Read from the comment above each key (`# [Deprecated] ...`, `# [DEPRECATED] use ... instead`, `# [Will be
    deprecated, use ...]`) and from a config file whose first line says it is deprecated."""
    return _deprecated_in(config_dir())


@lru_cache(maxsize=8)
def _deprecated_in(folder: Path | None) -> dict[str, str]:
    found: dict[str, str] = {}
    if folder is None:
        return found
    mark = ("[deprecated", "[will be deprecated")
    for path in sorted(folder.rglob("*.yaml")):
        if path.name.startswith("_generated"):
            continue
        lines = path.read_text().splitlines()
        start = 0
        if lines and lines[0].startswith("#") and lines[0].lower().lstrip("# ").startswith(mark):
            found[f"--config-name={path.stem}"] = lines[0].lstrip("# ").strip()
            start = 1  # the file's own mark, not a key's
        for i, line in enumerate(lines[:-1]):
            text = line.strip()
            if i >= start and text.startswith("#") and text.lower().lstrip("# ").startswith(mark):
                nxt = next((n for n in lines[i + 1 :] if n.strip() and not n.strip().startswith("#")), "")
                key = nxt.split(":", 1)[0].strip()
                if key and ":" in nxt:
                    found.setdefault(key, text.lstrip("# ").strip())
    return found


def deprecation(key: str) -> str | None:
    """verl's deprecation note for an override key (or a `--config-name=X` argument), None when it is current."""
    notes = deprecated()
    if key in notes:
        return notes[key]
    note = notes.get(key.lstrip("+").rsplit(".", 1)[-1])
    if note is None:
        return None
    instead = re.search(r"use ([\w.]+)", note)
    if instead and key.endswith(instead.group(1)):  # the replacement itself (fsdp_config.ulysses_...)
        return None
    return note


# ---------------------------------------------------------------------------------------------- the same launch


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def same(a: Any, b: Any) -> bool:
    """Equal as verl reads them: numbers as numbers (2 == 2.0 == '2.0'), lists and dicts item by item."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    x, y = _number(a), _number(b)
    if x is not None and y is not None and not (isinstance(a, str) and isinstance(b, str)):
        return x == y
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def differences(
    upstream: dict[str, Any],
    argv: list[str],
    engine: str,
    skip: Iterable[str] = (),
    folder: Path | None = None,
    config_name: str | None = None,
) -> dict[str, tuple[Any, Any]]:
    """{key: (upstream, render)} where a launch (`argv`, composed here) differs from an already composed one
    (`upstream`, see `effective`), both with verl's run-time aliases applied (grpolab.verl.fieldmap.normalise), over
    the keys a worker reads. Left aside: keys the run owns (output paths, the logger, the seed of the data order, the
    device verl detects), the Ray runtime env's variables (the recipe's env carries them), keys this launch does not
    read (`unread`) and `skip`. `folder`, `config_name`: the entry point's own config the launch composes with."""

    name, overrides = split_argv(argv)
    name = config_name or name
    ours = fieldmap.normalise(effective(overrides, name, folder), engine)
    theirs = fieldmap.normalise(upstream, engine)
    owned = set(fieldmap.run_owned()) | set(skip) | unread(theirs)
    return {
        k: (theirs.get(k), ours.get(k))
        for k in sorted(set(theirs) | set(ours))
        if k not in owned and not k.startswith(fieldmap.RAY_ENV + ".") and not same(theirs.get(k), ours.get(k))
    }


def _legacy_reward_keys(config: dict[str, Any]) -> list[str]:
    """The composed launch's older reward keys that the checked verl's main_ppo neither reads nor moves."""
    facts = fieldmap.checked_facts() or {}
    found = facts.get("legacy_reward") or {}
    path = f"{fieldmap.REWARD_FN}.path"
    reads = (facts.get("reads") or {}).get(path, {}).get("key", path)
    if reads != path or "verl.trainer.main_ppo" in (found.get("entries") or []):
        return []  # a tree that reads them, or a main_ppo that moves them onto reward.*
    prefixes = tuple(found.get("moves") or ())
    return [k for k in config if any(k == p or k.startswith(p + ".") for p in prefixes)]


def unread(config: dict[str, Any]) -> set[str]:
    """Keys a composed launch sets that no worker reads: micro-batch sizes under dynamic batching, the in-reward KL
    controller without KL in the reward, the reference model's settings without a reference policy (no KL loss, no
    KL in the reward: verl builds no reference worker), and the reward's older keys where main_ppo ignores them
    (verl 0.9.1: custom_reward_function.*, reward_model.*, sandbox_fusion.*; the version table's legacy_reward)."""

    keys: set[str] = set(_legacy_reward_keys(config))
    actor_micro, ref_micro, rollout_micro = verl_keys_of("algorithm.micro_batch_size_per_device") + verl_keys_of(
        "rollout.log_prob_micro_batch_size_per_device"
    )
    if config.get(verl_key("train.dynamic_bsz")):
        keys |= {actor_micro, rollout_micro}
    if config.get(f"{REF}.log_prob_use_dynamic_bsz"):
        keys.add(ref_micro)
    if not config.get(verl_key("algorithm.use_kl_in_reward")):
        keys |= {k for k in config if k.startswith("algorithm.kl_ctrl.")}
        if not config.get(verl_key("algorithm.use_kl_loss")):
            keys |= {k for k in config if k.startswith(REF + ".")}
    return keys
