"""`grpolab import`: an existing verl launch script -> a recipe whose render is the same effective launch.

`grpolab.importer.record` runs the script (isolated) and gives its launch; `to_recipe()` composes that launch with its
entry point's own Hydra config (verl's for main_ppo, a recipe's own for recipe.dapo.main_dapo, or the folder its
`--config-path` names: grpolab.verl.entry; a launch that does not compose is refused, naming the override and verl's
message) and maps it through the field map (grpolab.verl.fieldmap): each override onto its recipe field (a deprecated
alias by its effect), the rest into `verl_overrides`. Any training engine the checked verl registers is taken
(model_engine=veomni, actor.strategy=fsdp_turbo: the version table's). The reward's older keys that the entry point
ignores are applied as their new keys or kept inert, and said either way (grpolab.importer.legacy). Then, for every
first-class field the script leaves to verl's default, it sets the field to what the script's launch runs with
wherever base.yaml's default would differ: this needs no valid recipe, so a recipe that `check` refuses still carries
the script's values. Last, both launches are composed and compared key by key (grpolab.verl.config.differences);
what still differs is reported. grpolab.importer.writing writes the recipe with a comment on each value naming the
script's setting behind it; a secret's value is never written: it becomes a reference `${NAME}` to the launching
shell's variable. A script that names no device takes the one the user names (--device), else npu where it exports
variables only Ascend's stack reads (grpolab.importer.device_signs), else verl's own default (the checked verl's
config: cuda); an empty override (`key=`) is null (grpolab.importer.overrides).
"""

from __future__ import annotations

import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from grpolab import owned
from grpolab.importer import legacy
from grpolab.importer import overrides as overrides_
from grpolab.importer.device_signs import ascend_signs
from grpolab.importer.record import MAIN, ImportFailed, Recorded, record
from grpolab.importer.writing import recipe_yaml
from grpolab.paths import params_dir
from grpolab.recipe.dotted import flatten, get_dotted, has_dotted, set_dotted
from grpolab.recipe.engines import FSDP, MEGATRON, by_model_engine
from grpolab.recipe.loader import field_type, load_recipe, merge_layers
from grpolab.recipe.secrets import REDACTED, is_secret, references
from grpolab.verl import config as verl_schema
from grpolab.verl import entry as entry_point
from grpolab.verl import fieldmap, rewards, versions
from grpolab.verl.render import engine_selection, render

__all__ = ["ImportFailed", "Imported", "import_script", "record", "recipe_yaml", "to_recipe"]
RUN = "/RUN"  # the run directory a verification render uses


@dataclass
class Imported:
    """A recipe made from a script: its data, where each value came from, and what could not be mapped."""

    name: str
    data: dict
    sources: dict[str, str]  # dotted recipe key -> the script's override (or why it was set)
    unmapped: list[dict] = field(default_factory=list)  # {key, value, why}: not reproduced by the recipe
    recorded: Recorded | None = None
    deprecated: list[dict] = field(default_factory=list)  # {key, value, why}: verl marks the script's key deprecated
    legacy: list[dict] = field(default_factory=list)  # {key, value, new, applied, why}: older reward keys (legacy.py)
    unset: list[dict] = field(default_factory=list)  # {name, default}: variables the script read unset
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        shown = ("sources", "unmapped", "deprecated", "legacy", "unset", "notes")
        return {"name": self.name, "recipe": self.data, **{name: getattr(self, name) for name in shown}}


# ---------------------------------------------------------------------------------------------- composing


def _entry(recorded: Recorded) -> tuple[entry_point.EntryConfig | None, list[str]]:
    """The config the launch's entry point composes with (its own, where the script's checkout is on this machine),
    and notes. ImportFailed where the launch names a config folder (`--config-path`) that is not here."""
    config_path = overrides_.flag(recorded.argv, "--config-path") or overrides_.flag(recorded.argv, "--config-dir")
    config_name = overrides_.flag(recorded.argv, "--config-name")
    working = (recorded.ray.get("runtime_env") or {}).get("working_dir")
    path = recorded.env.get("PYTHONPATH") or os.environ.get("PYTHONPATH", "")
    roots = [
        Path(p) for p in (recorded.cwd, working, *path.split(":")) if isinstance(p, str) and p and Path(p).is_dir()
    ]
    found = entry_point.resolve(recorded.module, config_path, config_name, roots)
    if isinstance(found, entry_point.EntryConfig):
        return found, []
    if config_path is not None:
        raise ImportFailed(
            f"the launch composes its own Hydra config (--config-path={config_path}): {found}; import the script "
            "from the folder it runs in (its checkout), where that config is"
        )
    return None, [
        f"python3 -m {recorded.module}: {found}; its own Hydra config could not be read, so the launch was composed "
        "with verl's main_ppo config (import from the script's checkout to compose with the entry point's own)"
    ]


def _engine(config_name: str, values: dict[str, Any]) -> str:
    """The recipe's train.engine for the engine the launch trains with: any engine the checked verl registers
    (its model_engine and, for FSDP, the strategies its engine config accepts: grpolab.verl.versions); ImportFailed
    naming those it has when the launch asks for another."""
    megatron = MEGATRON.name  # verl's own word too: model_engine=megatron, actor.strategy=megatron
    model_engine = str(values.get("model_engine") or (megatron if megatron in config_name else FSDP.model_engine))
    strategy = values.get(f"{fieldmap.ACTOR}.strategy")
    if megatron in (model_engine, strategy):
        return megatron
    groups = ((fieldmap.checked_facts() or {}).get("engines") or {}).get("model_engines") or {}
    version = verl_schema.verl_version()
    if groups and model_engine not in groups:
        raise ImportFailed(
            f"the launch trains with model_engine={model_engine}, which verl {version} does not have (its engines: "
            f"{', '.join(f'model_engine={g}' for g in groups)}): it would not start there"
        )
    accepted = groups.get(model_engine, {}).get("strategies") or []
    if strategy is not None and accepted and strategy not in accepted:
        raise ImportFailed(
            f"the launch trains with model_engine={model_engine}, actor.strategy={strategy}, which verl {version}'s "
            f"engine does not accept (it accepts {', '.join(accepted)}): it would not start there"
        )
    return by_model_engine(model_engine).name


def _selection(engine: str, config_name: str, overrides: list[str]) -> tuple[str, list[str]]:
    """A script's engine selection in the form the checked verl takes: `model_engine=megatron` (0.8.0+) and
    `--config-name ppo_megatron_trainer` (0.7.1) both select Megatron; a form the version lacks (model_engine on
    0.7.1) is composed the way that version selects it."""

    name, selecting = engine_selection(engine)
    if name == FSDP.config_name or selecting or config_name != FSDP.config_name:
        return config_name, overrides  # the script's own form exists in this version: composed as it is
    rest = [o for o in overrides if o.split("=", 1)[0].lstrip("+") != "model_engine"]
    return name, [*selecting, *rest]


def compose_script(config_name: str, overrides: list[str], folder: Path | None = None) -> dict[str, Any]:
    """The script's launch composed with its entry point's config (`folder`; the installed verl's by default);
    ImportFailed naming the override and verl's message when it does not compose."""
    try:
        return verl_schema.effective(overrides, config_name, folder)
    except Exception as exc:  # Hydra raises several exception types; its message names the key
        message = " ".join(str(exc).split())
        keys = re.findall(r"'([A-Za-z_+][\w.+]*)'", message)
        culprit = next((o for k in keys for o in overrides if o.split("=", 1)[0].lstrip("+") == k.lstrip("+")), None)
        raise ImportFailed(
            f"the launch does not compose under the installed verl {verl_schema.verl_version()}"
            + (f": {culprit}" if culprit else "")
            + f": {message}"
        ) from None


# ---------------------------------------------------------------------------------------------- mapping


def _as_object(data: Any) -> Any:
    if isinstance(data, dict):
        return types.SimpleNamespace(**{k: _as_object(v) for k, v in data.items()})
    return data


def _string_fields(target: str, value: Any) -> Any:
    """A script's number for a text field (an experiment named 2024) is the text verl would use."""

    if field_type(target) is str and not isinstance(value, str) and value is not None:
        return str(value)
    return value


def _hardware(device: str, per_node: int) -> str:
    if device == "npu":
        return "ascend-a3" if per_node >= 16 else "ascend-a2"
    return "gpu-h100" if device == "cuda" else "cpu"


class _Builder:
    """The recipe data being built, with the source of each value and what could not be reproduced."""

    def __init__(self, name: str, engine: str, rollout: str) -> None:
        self.name, self.engine, self.rollout = name, engine, rollout
        self.data: dict = {"train": {"engine": engine}}
        self.sources: dict[str, str] = {}
        self.unmapped: list[dict] = []
        self.notes: list[str] = []
        self.explicit: set[str] = set()  # fields the script set itself
        self.conflicts: dict[str, str] = {}  # verl key -> why its field cannot also hold its value
        self.verl_overrides: dict[str, Any] = {}
        self.env: dict[str, str] = {}
        self.parts: dict[str, dict[str, tuple[Any, str, str]]] = {}  # field -> part -> (value, why, key)
        self.upstream: dict[str, Any] = {}  # the script's launch, composed (flat keys)

    def part(self, row: fieldmap.Key, value: Any, why: str, key: str) -> None:
        """One part of a field that two keys set (reward.function: path and name); joined by `join_parts`."""
        self.parts.setdefault(row.field, {})[row.transform] = (value, why, key)

    def join_parts(self) -> None:
        for target, parts in self.parts.items():
            value, whys = None, []
            for transform, join in fieldmap.PARTS.items():  # path first, then name
                if transform in parts:
                    value = join(value, parts[transform][0])
                    whys.append(parts[transform][1])
            self.set(target, value, "; ".join(whys), next(iter(parts.values()))[2])

    def set(self, target: str, value: Any, why: str, key: str) -> None:
        value = _string_fields(target, value)
        if target in self.explicit and get_dotted(self.data, target) != value:
            # reported only if the launches then differ there (a key no worker reads may differ freely)
            self.conflicts[key] = (
                f"differs from {target} ({get_dotted(self.data, target)!r}), which another of the script's keys set; "
                "one field renders both, and verl_overrides cannot shadow it"
            )
            return
        if target not in self.explicit:  # the first key that set a field names it
            set_dotted(self.data, target, value)
            self.sources[target] = why
        self.explicit.add(target)

    def unread_in_mode(self, row: fieldmap.Key) -> str:
        """Why verl reads nothing of the row in the script's launch ("" when it does): a row that needs another
        field to hold a value (`schedule.mode=separate_async`) where the script's composed launch holds another."""
        field, _, want = row.needs.partition("=")
        if not want:
            return ""
        have = self.upstream.get(fieldmap.verl_key(field))
        if have is None or str(have) == want:
            return ""
        return f"verl reads it only when {fieldmap.verl_key(field)} is {want}; the script runs {have}"

    def override(self, text: str, key: str, value: Any) -> None:
        """A script's override onto its field, its alias's field, or verl_overrides."""
        found = fieldmap.match(key, self.engine, self.rollout)
        if found is None:
            raw = text.split("=", 1)[0]
            self.verl_overrides[raw] = value
            self.sources[f"verl_overrides.{raw}"] = text
        elif found.alias is not None:
            alias = found.alias
            effect = alias.target and value is not None
            if alias.when == "gt1":
                effect = effect and isinstance(value, int) and value > 1
            if not effect:
                self.notes.append(f"{text}: no effect in verl {verl_schema.verl_version()} ({alias.why}); left out")
                return
            target = next((r for r in fieldmap.KEYS if r.verl == alias.target and r.transform in fieldmap.PARTS), None)
            if target is not None:
                self.part(target, value, f"{text} ({alias.why})", key)
                return
            self.set(alias.field, value, f"{text} ({alias.why})", key)
        else:
            row = found.row
            if row.owned and any(
                r is not row and r.field == row.field and not r.owned and fieldmap.applies(r, self.engine, self.rollout)
                for r in fieldmap.KEYS
            ):  # the data order's seed: the run seeds it with trainer.seed, which here also seeds Megatron
                self.notes.append(f"{text}: the run owns {key} (it renders {row.field}, which also sets other keys)")
                return
            if row.kind == "value" and fieldmap.row_key(row, self.rollout) is None:  # this version reads nothing
                where = (fieldmap.checked_facts() or {}).get("reads", {}).get(key, {}).get("source", "its workers")
                self.notes.append(
                    f"{text}: no effect in verl {verl_schema.verl_version()} (its workers read nothing for it: "
                    f"{where}); left out"
                )
                return
            unused = self.unread_in_mode(row)
            if unused:  # another mode's setting (trainer.v1.colocate_async.* in separate_async): verl skips it
                self.notes.append(f"{text}: no effect: {unused}; left out")
                return
            if key in fieldmap.COPIED:  # verl overwrites it with another key's value at run time
                source, why = fieldmap.COPIED[key]
                self.notes.append(f"{text}: no effect in verl {verl_schema.verl_version()} ({why}); left out")
                return
            if row.transform in fieldmap.PARTS:
                self.part(row, value, text, key)
                return
            transform = fieldmap.IMPORTS.get(row.transform) if row.kind == "value" else None
            self.set(found.field, transform(value) if transform else value, text, key)


def to_recipe(recorded: Recorded, name: str, device: str | None = None, legacy_reward: str = "apply") -> Imported:
    """Map the recorded launch onto a recipe (see the module docstring). An env value whose name holds a secret
    (grpolab.recipe.secrets.is_secret, the one test of a name) becomes a reference, wherever it came from. The
    reward's older keys that the launch's entry point ignores are applied as their new keys or kept inert
    (`legacy_reward`: grpolab.importer.legacy), and said either way."""
    own, entry_notes = _entry(recorded)
    folder = own.folder if own is not None and own.own else None
    config_name, overrides = verl_schema.split_argv(recorded.argv)
    overrides_empty = {o for o in overrides if o.endswith("=")}
    overrides, empty_notes = overrides_.empty_values(overrides)
    values = overrides_.parsed(overrides)
    engine = _engine(config_name, values)
    if own is not None:
        config_name = own.name
    if folder is None:
        config_name, overrides = _selection(engine, config_name, overrides)
    config = (verl_schema.entry_schema(folder, config_name) if folder else verl_schema.base_config(engine)) or {}
    lacking = [
        o
        for o in overrides
        if not has_dotted(config, o.split("=", 1)[0].lstrip("+"))
        and not verl_schema.in_free_form(config, o.split("=", 1)[0].lstrip("+"))
        and fieldmap.field_of(o.split("=", 1)[0]) is not None
    ]  # a first-class field's key the installed verl lacks (grad_offload): the recipe keeps it, the render warns
    try:
        upstream = compose_script(config_name, [o for o in overrides if o not in lacking], folder)
    except ImportFailed as exc:  # composed with verl's own config for want of the entry point's: say so
        raise ImportFailed("; ".join([str(exc), *entry_notes])) from None
    if folder is not None:  # a recipe's own config may select the engine itself (its defaults: Megatron's trainer)
        engine = _engine("", {k: upstream.get(k) for k in ("model_engine", f"{fieldmap.ACTOR}.strategy")})
    upstream = legacy.migrated(upstream, recorded.module)  # as an entry point that moves older keys runs it
    overrides, moved = legacy.rewrite(overrides, values, config, recorded.module, legacy_reward)
    values = overrides_.parsed(overrides)
    rollout = str(upstream.get(f"{fieldmap.ROLL}.name") or "vllm")
    build = _Builder(name, engine, rollout)
    build.upstream = upstream
    for text in overrides:
        key = text.split("=", 1)[0].lstrip("+")
        value = values[key]
        if key in ("model_engine", f"{fieldmap.REF}.strategy") or (
            key == f"{fieldmap.ACTOR}.strategy" and engine != FSDP.name
        ):
            continue  # the engine itself (the ref's strategy follows the actor's)
        if key.split(".", 1)[0] == "hydra":  # Hydra's own settings (where it writes its outputs), not verl's
            build.notes.append(f"{text}: Hydra's own setting, not verl's config; a run keeps its outputs in runs/")
            continue
        if key.startswith(fieldmap.RAY_ENV + "."):
            build.env[key[len(fieldmap.RAY_ENV) + 1 :]] = str(value)
            build.sources[f"env.{key[len(fieldmap.RAY_ENV) + 1 :]}"] = text
            continue
        build.override(text, key, value)
    build.join_parts()
    for target, why in build.sources.items():  # the script's own words: `key=` (composed as `key=null`)
        if why.endswith("=null") and why[: -len("null")] in overrides_empty:
            build.sources[target] = why[: -len("null")] + " (empty: null)"
    _reward_from(build, recorded.cwd)
    for target, why in build.sources.items():  # a value the recipe applies from an older key names that key
        parts = why.split("; ")
        older = [next((e for e in moved if e.applied and p.lstrip("+").startswith(e.new + "=")), None) for p in parts]
        if any(older):
            build.sources[target] = (
                "; ".join(f"{e.key}={p.split('=', 1)[1]}" if e else p for e, p in zip(older, parts))
                + " (an older key the original launch ignores, applied here: see LEGACY above)"
            )
    for text in lacking:
        if any(note.startswith(text + ": no effect") for note in build.notes):
            continue  # said already: this version reads nothing for it
        build.notes.append(
            f"{text}: the installed verl {verl_schema.verl_version()} has no such key; the recipe keeps it, "
            "the render leaves it out (with a warning)"
        )
    _cluster(build, recorded, device)
    if own is not None and own.own:  # the entry point's own config: check and render compose against it too
        _entry_fields(build, recorded, own)
    _reconcile(build, fieldmap.normalise(upstream, engine))
    _env(build, recorded)
    if build.verl_overrides:
        build.data["verl_overrides"] = build.verl_overrides
    hardware = build.data["cluster"].pop("_hardware")
    imported = Imported(
        name,
        {"defaults": ["base", f"hardware/{hardware}"], **build.data},
        build.sources,
        build.unmapped,
        recorded,
        unset=list(recorded.unset),
        notes=[*recorded.notes, *entry_notes, *empty_notes, *build.notes],
    )
    imported.legacy = [e.to_dict() for e in moved]
    _deprecations(imported, config_name, overrides)
    _verify(imported, upstream, engine, [o.split("=", 1)[0].lstrip("+") for o in lacking], values, build.conflicts)
    return imported


def _device(build: _Builder, device: str | None, env: dict[str, str]) -> str:
    """The recipe's cluster.device: the device the script names, else the device the user named (--device), else npu
    where the script exports variables only Ascend's stack reads, else what the launch runs with when it names none:
    the device as the checked verl's own config defaults it (cuda in 0.9.1; its main_ppo switches it to npu when
    it finds an Ascend NPU, which the note says)."""
    named = get_dotted(build.data, "cluster.device")
    if named is not None:
        return named
    if device is not None:
        build.sources["cluster.device"] = f"--device {device} (the script names no device)"
        return device
    if signs := ascend_signs(env):
        build.sources["cluster.device"] = f"npu: the script names no device and exports {', '.join(signs[:3])}"
        return "npu"
    key = fieldmap.verl_key("cluster.device")
    default = build.upstream.get(key) or ((fieldmap.checked_facts() or {}).get("defaults") or {}).get(key)
    default = default or versions.reference_default(key)
    default = fieldmap.IMPORTS["device"](default)
    build.sources["cluster.device"] = (
        f"verl {verl_schema.verl_version()}'s default {key}={default} (the script names no device)"
    )
    build.notes.append(
        f"the script names no {key}: the recipe takes verl's own default, {default} (verl's main_ppo switches to npu "
        "on an Ascend machine); for NPUs import with --device npu or set cluster.device and hardware/ascend-a2|a3"
    )
    return default


def _cluster(build: _Builder, recorded: Recorded, device: str | None) -> None:
    dev = _device(build, device, recorded.env)
    set_dotted(build.data, "cluster.device", dev)
    per_node = get_dotted(build.data, "cluster.devices_per_node") or 1
    build.data["cluster"]["_hardware"] = _hardware(dev, per_node)
    if recorded.ray.get("address"):
        set_dotted(build.data, "cluster.ray_address", recorded.ray["address"])
        build.sources["cluster.ray_address"] = "ray job submit --address"
    runtime = dict(recorded.ray.get("runtime_env") or {})
    for k, v in (runtime.pop("env_vars", None) or {}).items():
        build.env[str(k)] = str(v)
        build.sources[f"env.{k}"] = "ray job submit --runtime-env(-json) env_vars"
    for path in recorded.ray.get("unread", []):
        why = (
            f"ray job submit --runtime-env {path}: the file is not on this machine (a file of the script's checkout); "
            "its settings (env_vars, pip, ...) are not in the recipe: add them to cluster.runtime_env and env"
        )
        build.unmapped.append({"key": "cluster.runtime_env", "value": path, "why": why})
    if runtime:
        set_dotted(build.data, "cluster.runtime_env", runtime)
        build.sources["cluster.runtime_env"] = "ray job submit --runtime-env(-json) / --working-dir"
    if recorded.module != MAIN:
        set_dotted(build.data, "trainer.entrypoint", recorded.module)
        build.sources["trainer.entrypoint"] = f"python3 -m {recorded.module}"


def _reward_from(build: _Builder, cwd: str) -> None:
    """A reward file the script names by a relative path is the one verl opens from the folder the launch runs in:
    the recipe names it by its full path there (a recipe's relative path is read from the recipe's own folder)."""
    function = get_dotted(build.data, "reward.function")
    if not isinstance(function, str) or not cwd:
        return
    path, name = rewards.split_function(function)
    if path and not Path(path).is_absolute() and (Path(cwd) / path).is_file():
        set_dotted(build.data, "reward.function", f"{Path(cwd) / path}:{name}")
        build.sources["reward.function"] += f" (read from the folder the launch runs in: {cwd})"


def _entry_fields(build: _Builder, recorded: Recorded, own: entry_point.EntryConfig) -> None:
    """Where the entry point and its own config are (the script's checkout), and the config flags the launch passed."""
    if own.module_dir is not None:
        set_dotted(build.data, "trainer.entry_dir", str(own.module_dir))
        build.sources["trainer.entry_dir"] = (
            f"where python3 -m {recorded.module} finds its package (the launch's folder)"
        )
    for flag, target in (("--config-path", "trainer.config_path"), ("--config-name", "trainer.config_name")):
        value = overrides_.flag(recorded.argv, flag) or (
            overrides_.flag(recorded.argv, "--config-dir") if flag == "--config-path" else None
        )
        if value is not None:
            set_dotted(build.data, target, value)
            build.sources[target] = f"{flag}={value}"


def _reconcile(build: _Builder, upstream: dict[str, Any]) -> None:
    """Every first-class field the script leaves to verl's default: set it to what the script runs with wherever
    base.yaml (and the hardware profile) would render something else."""

    # base.yaml and the hardware profile, merged: what a field holds when the recipe does not set it
    baseline = merge_layers(params_dir() / "hardware" / f"{build.data['cluster']['_hardware']}.yaml")[0]
    for key, value in flatten(build.data).items():
        if not key.endswith("_hardware"):
            set_dotted(baseline, key, value)
    current = _as_object(baseline)
    for row in fieldmap.KEYS:
        if row.kind != "value" or row.owned or not fieldmap.applies(row, build.engine, build.rollout):
            continue
        if row.field in build.explicit or not fieldmap.needs_met(row, baseline):
            continue
        key = fieldmap.key_name(row, build.rollout)
        if key not in upstream:
            continue
        want = upstream[key]
        have = fieldmap.TRANSFORMS[row.transform][0](get_dotted(baseline, row.field), current, RUN)
        if verl_schema.same(have, want) or (want is None and have is None):
            continue
        if want == "???" or (want is None and type(None) not in typing.get_args(field_type(row.field))):
            continue  # verl's mandatory marker, or null where the schema needs a value: the comparison reports it
        transform = fieldmap.IMPORTS.get(row.transform)
        value = _string_fields(row.field, transform(want) if transform else want)
        set_dotted(build.data, row.field, value)
        set_dotted(baseline, row.field, value)
        current = _as_object(baseline)
        build.explicit.add(row.field)
        build.sources.setdefault(row.field, f"verl's default, which the script keeps ({key}={want!r})")


def _env(build: _Builder, recorded: Recorded) -> None:
    """The launch's env; a secret (by its name: a value the script writes in clear as much as one it reads from the
    caller) becomes a reference to the launching shell's variable, never its value; any other value is kept."""
    env = {**recorded.env, **build.env}
    for name in recorded.env:
        build.sources.setdefault(f"env.{name}", "exported by the script")
    for name in env:
        if is_secret(name):
            env[name] = "${" + name + "}"
            build.sources[f"env.{name}"] = (
                f"a secret: read from ${name} of the shell that launches, never written here (export {name} there)"
            )
    if env:
        build.data["env"] = {k: str(v) for k, v in env.items()}


def _deprecations(imported: Imported, config_name: str, overrides: list[str]) -> None:
    for arg in [f"--config-name={config_name}", *overrides]:
        key = arg.split("=", 1)[0] if not arg.startswith("--") else arg
        note = verl_schema.deprecation(key)
        if note:
            value = arg.split("=", 1)[1] if "=" in arg else None
            why = f"verl {verl_schema.verl_version()}: {note}"
            imported.deprecated.append({"key": key, "value": value, "why": why})


def _verify(
    imported: Imported,
    upstream: dict[str, Any],
    engine: str,
    lacking: list[str],
    script: dict[str, Any],
    conflicts: dict[str, str],
) -> None:
    """Render the recipe and compare both launches key by key; what differs (run-owned keys aside) is reported."""

    folder = owned.temp_folder("grpolab-import-")
    try:
        path = folder / f"{imported.name}.yaml"
        path.write_text(yaml.safe_dump(imported.data, sort_keys=False))
        recipe = load_recipe(path)
    except Exception as exc:  # a RecipeError or a file error: the check that follows names each schema problem
        imported.notes.append(f"the recipe does not load ({type(exc).__name__}); the launches were not compared")
        return
    finally:
        owned.remove_tree(folder)
    launch = render(recipe, RUN)
    argv = launch.argv()
    try:
        folder = Path(launch.config_dir) if launch.config_dir else None
        diff = verl_schema.differences(upstream, argv, engine, lacking, folder, launch.config_name if folder else None)
    except Exception as exc:  # the render does not compose: `grpolab check` names the key
        why = f"the recipe's launch does not compose: {str(exc).splitlines()[0]}"
        imported.unmapped.append({"key": "verl_overrides", "value": None, "why": why})
        return
    for key, (want, have) in sorted(diff.items()):
        if any(u["key"] == key for u in imported.unmapped):
            continue
        older = legacy.explain(key, [legacy.Legacy(**e) for e in imported.legacy])
        why = conflicts.get(key) or older or f"the imported recipe renders {have!r} where the script runs {want!r}"
        cwd = imported.recorded.cwd if imported.recorded else ""
        if isinstance(want, str) and isinstance(have, str) and cwd and have == str(Path(cwd) / want):
            why = f"the same file by its full path: the script's {want!r} is read from the folder its launch runs in"
        twin = key.removesuffix("_per_gpu")
        if want is None and twin != key and script.get(twin) is not None:
            why = (
                f"the script sets the deprecated global {twin}={script[twin]!r}, which verl "
                f"{verl_schema.verl_version()} no longer reads: its workers need {key.rsplit('.', 1)[1]}, which the "
                "script leaves unset (its launch would fail at start); the recipe sets it"
            )
        imported.unmapped.append({"key": key, "value": want, "why": why, **({"legacy": True} if older else {})})


def import_script(
    script: str | Path,
    name: str | None = None,
    device: str | None = None,
    *,
    trusted: bool = False,
    env: dict[str, str] | None = None,
    devices: int = 8,
    legacy_reward: str = "apply",
) -> Imported:
    """record + to_recipe: the recipe a script makes; the one import path of `grpolab import` and 01_setup's
    `script`. ImportFailed (exit 2) for unusable input. `legacy_reward`: apply or keep inert the reward's older keys
    the launch's entry point ignores (grpolab.importer.legacy)."""
    path = Path(script)
    # the probes answer as an NPU machine unless the user names the device; a script that names no device
    # then gets verl's own default (_device), not the probes' answer
    recorded = record(path, device=device or "npu", env=env, trusted=trusted, devices=devices)
    name = name or re.sub(r"[^A-Za-z0-9_]+", "_", path.stem).strip("_") or "imported"
    try:
        imported = to_recipe(recorded, name, device, legacy_reward)
    except ImportFailed as exc:
        raise ImportFailed(f"{path}: {exc}") from None
    return hide_secrets(imported, dict(os.environ if env is None else env))


def hide_secrets(imported: Imported, caller: dict[str, str]) -> Imported:
    """The one redaction of an import, before anything is printed or written: the caller's secret values become
    `${NAME}` references wherever they appear (any key, a comment, a note), and the default a script gives a
    secret variable is never shown."""
    for field_name in ("data", "sources", "unmapped", "deprecated", "legacy", "notes"):
        setattr(imported, field_name, references(getattr(imported, field_name), caller))
    imported.unset = [
        {**u, "default": REDACTED} if is_secret(u["name"]) and u.get("default") is not None else u
        for u in references(imported.unset, caller)
    ]
    return imported
