"""What a verl key MEANS in each supported verl version: the key its workers read, how Megatron is selected, the
defaults that changed, the valid values, read from that version's own config and source.

The facts are derived from a verl source tree (an unpacked wheel, a git checkout, the installed package) by
`derive()`; `scripts/verl_versions.py` runs it over the wheels of every supported release and a main snapshot and
writes `grpolab/data/verl_versions.json` (each fact with the file and line it comes from). For the verl being
checked (`grpolab.verl.config.verl_root()`: the installed one, or $GRPOLAB_VERL_ROOT) the table's row of its
version is used; a version the table lacks (another main) is derived from its own source at once.

What cannot be derived from source (what to do instead, how severe) is held in HELD, each with its source.
Every rule, the renderer (grpolab.verl.fieldmap's per-version layer), the memory estimate and the gate ask
`facts()`, never whether a key exists in a YAML file.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from grpolab.recipe import stack
from grpolab.recipe.dotted import MISSING, flatten, get_dotted
from grpolab.recipe.engines import FSDP, MEGATRON, VERL_ENGINES
from grpolab.recipe.yamlio import parse_yaml

TABLE = Path(__file__).resolve().parents[1] / "data" / "verl_versions.json"
# the declared supported range: 0.7.1 (the oldest release the seeds' upstream scripts were written for) up to
# verl's main, which calls itself 0.10.0.dev0 (a dev version sorts below its release)
SUPPORTED_MIN, SUPPORTED_BELOW = "0.7.1", "0.10.0"
SUPPORTED = f"{SUPPORTED_MIN} to main (below {SUPPORTED_BELOW})"

ROOT_ENV = "GRPOLAB_VERL_ROOT"  # a verl package folder to check and render for instead of the installed verl
GENERATED = {e.name: f"verl/trainer/config/_generated_{e.config_name}.yaml" for e in VERL_ENGINES}


@dataclass(frozen=True)
class Held:
    """A fact no source file states: what a recipe should do where a version's workers read nothing for a key."""

    field: str  # the recipe field
    severity: str  # error: the launch would mean something else; warning: only an estimate changes, and it follows
    nearest: str  # the nearest way on such a version
    source: str


HELD: tuple[Held, ...] = (
    Held(
        "trainer.timeout_s",
        "error",
        "on NPU set env.HCCL_EXEC_TIMEOUT (and HCCL_CONNECT_TIMEOUT) to the seconds you need: HCCL reads them itself;"
        " on GPU none: torch's default process-group timeout applies; or use verl 0.7.1, whose workers read it",
        "verl 0.8.0+ workers/engine_workers.py `initialize_global_process_group_ray(timeout_second=None)`; Ascend "
        "HCCL environment variables (HCCL_EXEC_TIMEOUT, HCCL_CONNECT_TIMEOUT), CANN docs",
    ),
    Held(
        "train.grad_offload",
        "warning",
        "gradients stay on the device (the memory estimate counts them); to save memory use train.optimizer_offload"
        " or train.optimizer_cpu_offload, or a larger train.pp / train.tp",
        "derived per version below: the key is absent, or assigned to an attribute nothing reads",
    ),
    Held(
        "train.ulysses_sp",
        "error",
        "use a verl whose default FSDP worker reads the key",
        "grpolab: a version reading neither ulysses key is not in the table",
    ),
)
# first-class settings whose verl default changed between versions: a recipe value that only comes from base.yaml
# (0.9.1's default) is named when the version checked defaults otherwise
WATCHED_DEFAULTS = ("train.vanilla_mbridge", "rollout.max_num_seqs", "rollout.calculate_log_probs")


# ---------------------------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class Source:
    """A verl source tree as data: `text(path)` (None when absent) and `files(prefix)`; paths start with verl/."""

    name: str
    text: Callable[[str], str | None]
    files: Callable[[str], list[str]]


def folder_source(package: Path, name: str = "") -> Source:
    """A verl package folder (site-packages/verl, an unpacked wheel's verl/, a checkout's verl/)."""
    root = Path(package).parent

    def text(rel: str) -> str | None:
        path = root / rel
        return path.read_text(errors="replace") if path.is_file() else None

    def files(prefix: str) -> list[str]:
        base = root / prefix
        return sorted(str(p.relative_to(root)) for p in base.rglob("*") if p.is_file()) if base.is_dir() else []

    return Source(name or str(package), text, files)


def _line(text: str | None, pattern: str, path: str) -> str | None:
    """'path:N: code' for the first line matching `pattern`, None if none does."""
    for n, line in enumerate((text or "").splitlines(), 1):
        if re.search(pattern, line):
            return f"{path}:{n}: {line.strip()}"
    return None


# ---------------------------------------------------------------------------------------------- derivation


def derive(src: Source, layer: dict[str, tuple[str, ...]], keys: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """Every fact of one verl version, each with where it comes from. `layer`: the field map's keys of each
    versioned fact (grpolab.verl.fieldmap.VERSIONED); `keys`: (verl key, engine) of the field map's rows, whose
    defaults are recorded (scripts/verl_versions.py lists them; None: every key)."""
    version = (src.text("verl/version/version") or "").strip() or None
    gen = {e: parse_yaml(src.text(p) or "{}", p) or {} for e, p in GENERATED.items()}
    return {
        "version": version,
        "source": src.name,
        MEGATRON.name: _megatron(src),
        "legacy_workers": _legacy(src),
        "reads": _reads(src, gen, layer),
        "defaults": _defaults(gen, keys),
        "loss_agg_modes": _loss_agg_modes(src),
        "cudagraph_vllm": _cudagraph(src),
        "v1": _v1(src, gen[FSDP.name]),
        "engines": _engines(src),
        "legacy_reward": _legacy_reward(src),
        "rollouts": _rollouts(src),
        "own_batch": _own_batch(src),
    }


def _megatron(src: Source) -> dict[str, Any]:
    group = "verl/trainer/config/model_engine/megatron.yaml"
    if src.text(group) is not None:
        return {"overrides": ["model_engine=megatron"], "config_name": "ppo_trainer", "source": f"{group} exists"}
    listed = [p.rsplit("/", 1)[1] for p in src.files("verl/trainer/config/model_engine/")]
    return {
        "overrides": [],
        "config_name": "ppo_megatron_trainer",
        "source": f"no {group} (model_engine/: {', '.join(listed) or 'none'}); "
        "verl/trainer/config/ppo_megatron_trainer.yaml is the Megatron root config",
    }


def _accepted(src: Source, engine_yaml: str) -> tuple[list[str], str]:
    """The strategies an engine config accepts (its class's `assert self.strategy in [...]` or `== "..."`, in
    verl/workers/config/engine.py), and where that is said; the config's own `strategy:` when no assert is found."""
    text = src.text(engine_yaml) or ""
    target = re.search(r"^_target_:\s*[\w.]*?\.(\w+)\s*$", text, re.M)
    default = re.search(r"^strategy:\s*(\w+)", text, re.M)
    path = "verl/workers/config/engine.py"
    code = src.text(path) or ""
    start = code.find(f"class {target.group(1)}(") if target else -1
    if start >= 0:
        body = code[start : code.find("\nclass ", start + 1) if code.find("\nclass ", start + 1) > 0 else len(code)]
        found = re.search(r'assert self\.strategy (?:in \[([^\]]*)\]|== "(\w+)")', body)
        if found:
            names = re.findall(r'"([\w-]+)"', found.group(1)) if found.group(1) else [found.group(2)]
            line = code[: start + body.find(found.group(0))].count("\n") + 1
            return names, f"{path}:{line}: {found.group(0)}"
    return ([default.group(1)] if default else []), f"{engine_yaml}: strategy: {default.group(1) if default else '?'}"


def _engines(src: Source) -> dict[str, Any]:
    """The training engines this version registers: each engine's actor config (`NAME_actor.yaml`: `model_engine=NAME`
    selects it where the version has that config group; its default strategy, the strategies its engine config
    accepts, the engine config's key under the actor, its generated config when verl ships one), and every backend
    registered with verl's EngineRegistry."""
    cfg = "verl/trainer/config/"
    groups: dict[str, Any] = {}
    actors = [p for p in src.files(cfg + "actor/") if p.endswith("_actor.yaml")]
    for path in actors:  # an engine is an actor config `NAME_actor.yaml`; model_engine=NAME selects it where
        name = path.rsplit("/", 1)[1].removesuffix("_actor.yaml")  # the version has the group model_engine/NAME
        group = f"{cfg}model_engine/{name}.yaml"
        actor = src.text(path) or ""
        strategy = re.search(r"^strategy:\s*(\w+)", actor, re.M)
        engine = re.search(r"\.\./engine@(\w+):\s*(\w+)", actor)
        accepted, where = _accepted(src, f"{cfg}engine/{engine.group(2)}.yaml") if engine else ([], "")
        generated = f"{cfg}_generated_ppo{'' if name == 'dp' else '_' + name}_trainer.yaml"
        groups[name] = {
            "selected_by": f"model_engine={name}" if src.text(group) is not None else None,
            "strategy": strategy.group(1) if strategy else None,
            "strategies": accepted or ([strategy.group(1)] if strategy else []),
            "engine_key": engine.group(1) if engine else None,
            "generated": generated.rsplit("/", 1)[1] if src.text(generated) is not None else None,
            "source": "; ".join(s for s in (group if src.text(group) is not None else "", path, where) if s),
        }
    registered: dict[str, Any] = {}
    for path in src.files("verl/workers/engine/"):
        if not path.endswith(".py"):
            continue
        for n, line in enumerate((src.text(path) or "").splitlines(), 1):
            found = re.search(r"@EngineRegistry\.register\((.*)\)", line)
            if not found:
                continue
            args = found.group(1)
            backend = re.search(r"backend=(\[[^\]]*\]|\"[^\"]*\")", args)
            device = re.search(r"device=(\[[^\]]*\]|\"[^\"]*\")", args)
            for name in re.findall(r'"([\w-]+)"', backend.group(1) if backend else ""):
                entry = registered.setdefault(name, {"devices": [], "source": f"{path}:{n}: {line.strip()}"})
                devices = re.findall(r'"(\w+)"', device.group(1)) if device else ["cuda"]
                entry["devices"] = sorted(set(entry["devices"]) | set(devices))
    return {"model_engines": groups, "registered": dict(sorted(registered.items()))}


def _rollouts(src: Source) -> dict[str, Any]:
    """The rollout engines this version registers (`rollout.name`: RolloutReplicaRegistry.register("NAME", ...) or
    its older `_ROLLOUT_REGISTRY` table), each with its line, and where verl imports the modules a launch names in
    VERL_USE_EXTERNAL_MODULES (a plugin registers another rollout there: recipe.dynamo.register)."""
    registered: dict[str, str] = {}
    for path in src.files("verl/workers/rollout/"):
        if not path.endswith(".py"):
            continue
        for n, line in enumerate((src.text(path) or "").splitlines(), 1):
            found = re.search(r'RolloutReplicaRegistry\.register\(\s*"([\w-]+)"', line) or re.search(
                r'^\s*\("([\w-]+)",\s*"async"\):', line
            )
            if found:
                registered.setdefault(found.group(1), f"{path}:{n}: {line.strip()}")
    external = _line(src.text("verl/__init__.py"), r"VERL_USE_EXTERNAL_MODULES", "verl/__init__.py")
    return {"registered": dict(sorted(registered.items())), "external": external}


def _own_batch(src: Source) -> dict[str, str]:
    """Entry packages whose trainer takes its batch by itself and asserts data.train_batch_size is 0 (verl's
    fully_async_policy: its rollouter feeds the trainer `require_batches` mini-batches): {package: the assert}."""
    found: dict[str, str] = {}
    for path in src.files("verl/"):
        if not path.endswith(".py"):
            continue
        where = _line(src.text(path), r"assert .*data\.train_batch_size == 0\b", path)
        if where:
            found.setdefault(path.rsplit("/", 1)[0].replace("/", "."), where)
    return dict(sorted(found.items()))


def _legacy_reward(src: Source) -> dict[str, Any]:
    """The reward's older top-level keys and where this version moves each one (verl's own
    migrate_legacy_reward_impl), and the entry points that call that migration: every other entry point (verl 0.9.1's
    main_ppo) ignores the older keys. {"moves": {old key or prefix: new key or prefix}, "entries": [module],
    "source": where the migration is}."""
    path = "verl/experimental/reward_loop/reward_loop.py"
    code = src.text(path) or ""
    start = code.find("def migrate_legacy_reward_impl(")
    if start < 0:
        return {"moves": {}, "entries": [], "source": f"{path}: no migrate_legacy_reward_impl"}
    end = code.find("\ndef ", start + 1)
    body = code[start : end if end > 0 else len(code)]
    moves: dict[str, str] = {}
    loop: list[str] = []
    for line in body.splitlines():
        keys = re.search(r"for key in \[([^\]]*)\]", line)
        if keys:
            loop = re.findall(r'"(\w+)"', keys.group(1))
            continue
        found = re.search(r"config\.([\w.]+)(?:\[(\"?\w+\"?)\])?\s*=\s*config\.([\w.]+)(?:\[(\"?\w+\"?)\])?\s*$", line)
        if not found:
            continue
        new, new_sub, old, old_sub = found.groups()
        if new_sub == "key" and old_sub == "key":  # the loop over keys: one move per key
            moves.update({f"{old}.{k}": f"{new}.{k}" for k in loop})
        elif new_sub is None and old_sub is None or (new_sub and old_sub):
            moves[f"{old}.{old_sub.strip(chr(34))}" if old_sub else old] = (
                f"{new}.{new_sub.strip(chr(34))}" if new_sub else new
            )
    if re.search(r"legacy_rollout = config\.reward_model\.rollout", body):  # its keys, one by one
        moves["reward_model.rollout"] = "reward.reward_model.rollout"
    entries = []
    for file in src.files("verl/"):
        if file.endswith(".py") and file != path and "migrate_legacy_reward_impl(config" in (src.text(file) or ""):
            entries.append(file[:-3].replace("/", "."))
    line = code[:start].count("\n") + 1
    return {"moves": moves, "entries": sorted(entries), "source": f"{path}:{line}: def migrate_legacy_reward_impl"}


def _legacy(src: Source) -> dict[str, Any]:
    path = "verl/trainer/main_ppo.py"
    line = _line(src.text(path), r'use_legacy_worker_impl in \[\s*"auto"', path)
    legacy = bool(line) and src.text("verl/workers/fsdp_workers.py") is not None
    return {"default": legacy, "source": line or f"{path}: `auto` does not select verl/workers/fsdp_workers.py"}


def _reads(src: Source, gen: dict[str, dict], layer: dict[str, tuple[str, ...]]) -> dict[str, dict[str, Any]]:
    (ulysses, ulysses_old), (ref_ulysses, ref_old) = layer["ulysses"], layer["ref_ulysses"]
    timeout, grad_offload = layer["timeout"][0], layer["grad_offload"][0]
    reads: dict[str, dict[str, Any]] = {}
    legacy = _legacy(src)["default"]
    fsdp_w = "verl/workers/fsdp_workers.py"
    # Ulysses SP: the legacy FSDP worker builds its device mesh from actor.ulysses_sequence_parallel_size; the
    # engine workers from the engine config (fsdp_config)
    old = _line(src.text(fsdp_w), r'config\.actor\.get\("ulysses_sequence_parallel_size"', fsdp_w) if legacy else None
    if old:
        reads[ulysses] = {"key": ulysses_old, "source": old}
        reads[ref_ulysses] = {"key": ref_old, "source": old}
    else:
        eng = "verl/workers/engine/fsdp/transformer_impl.py"
        line = _line(src.text(eng), r"engine_config\.ulysses_sequence_parallel_size", eng)
        reads[ulysses] = {"key": ulysses if line else None, "source": line or f"{eng}: no reader"}
        reads[ref_ulysses] = {"key": ref_ulysses if line else None, "source": line or f"{eng}: no reader"}
    # the collective timeout: the legacy workers pass nccl_timeout to init_process_group
    found = None
    for path in ("verl/workers/fsdp_workers.py", "verl/workers/megatron_workers.py"):
        found = found or (_line(src.text(path), r'config\.get\("nccl_timeout"', path) if legacy else None)
    if found:
        reads[timeout] = {"key": timeout, "source": found}
    else:
        path = "verl/workers/engine_workers.py"
        line = _line(src.text(path), r"initialize_global_process_group_ray\(", path)
        reads[timeout] = {"key": None, "source": line or f"{path}: no reader of nccl_timeout"}
    reads[grad_offload] = _grad_offload(src, gen[MEGATRON.name], grad_offload)
    reads.update(_reward_reads(src, layer))
    if "schedule" in layer:
        reads.update(_schedule_reads(src, gen[FSDP.name], layer["schedule"], layer["hybrid_engine"][0]))
    return reads


def _reward_reads(src: Source, layer: dict[str, tuple[str, ...]]) -> dict[str, dict[str, Any]]:
    """The reward function's and manager's keys: the releases read them under `reward` (trainer/ppo/reward.py's
    `config.reward.get("custom_reward_function")`, `config.reward.reward_manager`), older trees at the top level."""
    path = "verl/trainer/ppo/reward.py"
    text = src.text(path)
    reads: dict[str, dict[str, Any]] = {}
    for fact, leaves, nested, top in (
        (
            "reward_function",
            ("path", "name", "reward_kwargs"),
            r'config\.reward\.get\("custom_reward_function"',
            r'config\.get\("custom_reward_function"',
        ),
        ("reward_manager", ("name",), r"config\.reward\.reward_manager\b", r"=\s*config\.reward_manager\b"),
    ):
        new, old = layer[fact]
        line = _line(text, nested, path)
        legacy = None if line else _line(text, top, path)
        for leaf in leaves:
            key = f"{new}.{leaf}" if line or not legacy else f"{old}.{leaf}"
            reads[f"{new}.{leaf}"] = {"key": key, "source": line or legacy or f"{path}: no reader"}
    return reads


# verl's V1 trainer (0.9.0+, verl/trainer/ppo/v1/): its modes, and what its separate_async trainer asserts when it
# is built (after the cluster has loaded the model): (fact, the line's pattern in trainer_separate_async.py)
V1_DIR = "verl/trainer/ppo/v1/"
SEPARATE_FILE = f"{V1_DIR}trainer_separate_async.py"
V1_ASSERTS = (
    ("sync_step", r"assert train_batch_size == parameter_sync_step \* ppo_mini_batch_size"),
    ("pool_nnodes", r"assert config\.actor_rollout_ref\.rollout\.nnodes > 0"),
    ("pool_devices", r"assert config\.actor_rollout_ref\.rollout\.n_gpus_per_node > 0"),
    ("sync_backend", r'checkpoint_engine\.backend != "naive"'),
    ("reward_pool", r"assert config\.reward\.reward_model\.enable_resource_pool"),
    ("switch_disaggregation", r'disaggregation_cfg\.get\("enabled"'),
)


def _v1(src: Source, config: dict) -> dict[str, Any]:
    """The V1 trainer of this version: its modes (each with the line that registers it), the default of
    trainer.use_v1, the start-up assertions of separate_async (each with its line, None where this version has
    none), which settings it takes (hybrid replicas off, step switching, a fractional warm-up, a null off-policy
    threshold), the checkpoint engines it registers, and where there is no V1 trainer, the experimental asynchronous
    entry point it has instead."""
    files = [p for p in src.files(V1_DIR) if p.endswith(".py")]
    modes: dict[str, str] = {}
    for path in files:
        for n, line in enumerate((src.text(path) or "").splitlines(), 1):
            m = re.search(r'@register_trainer\("(\w+)"\)', line)
            if m:
                modes[m.group(1)] = f"{path}:{n}: {line.strip()}"
    separate = src.text(SEPARATE_FILE)
    base = src.text(f"{V1_DIR}trainer_base.py")
    buffer = src.text(f"{V1_DIR}replay_buffer.py")
    fully_async = "verl/experimental/fully_async_policy/fully_async_main.py"
    backends: dict[str, str] = {}
    for path in (p for p in src.files("verl/checkpoint_engine/") if p.endswith(".py")):
        for n, line in enumerate((src.text(path) or "").splitlines(), 1):
            m = re.search(r'CheckpointEngineRegistry\.register\("(\w+)"\)', line)
            if m:
                backends.setdefault(m.group(1), f"{path}:{n}: {line.strip()}")
    use_v1 = get_dotted(config, "trainer.use_v1", MISSING)
    return {
        "modes": modes,
        "use_v1_default": None if use_v1 is MISSING else use_v1,
        "asserts": {fact: _line(separate, pattern, SEPARATE_FILE) for fact, pattern in V1_ASSERTS},
        "hybrid_replicas_off": _line(separate, r'get\("hybrid_engine"', SEPARATE_FILE),
        "switch": _line(separate, r"HybridRolloutSwitchConfig = omega_conf_to_dataclass", SEPARATE_FILE),
        "fractional_warmup": _line(
            base, r"def _add_async_warmup_batches\(self, num_warmup_batches: int \| float", f"{V1_DIR}trainer_base.py"
        ),
        "null_threshold": _line(buffer, r"if self\.max_off_policy_threshold is not None", f"{V1_DIR}replay_buffer.py"),
        "checkpoint_backends": backends,
        "experimental_async": fully_async if src.text(fully_async) is not None else None,
    }


def _schedule_reads(src: Source, config: dict, keys: tuple[str, ...], hybrid_engine: str) -> dict[str, dict[str, Any]]:
    """Which of the schedule's keys this version reads: a key its config lacks, none (no V1 trainer, no such setting
    in it, no rollout-only pool); hybrid_engine, as itself where no V1 trainer runs (the legacy trainers read it) or where
    separate_async reads it, else none (0.9.0's V1 trainers always place rollout replicas on the trainer)."""
    reads: dict[str, dict[str, Any]] = {}
    where = src.files(V1_DIR)[:1]
    for key in keys:
        if get_dotted(config, key, MISSING) is MISSING:
            why = f"{GENERATED[FSDP.name]}: no {key}" + ("" if where else f" (no {V1_DIR}: no V1 trainer)")
            reads[key] = {"key": None, "source": why}
    line = _line(src.text(SEPARATE_FILE), r'get\("hybrid_engine"', SEPARATE_FILE)
    if where and not line:
        reads[hybrid_engine] = {"key": None, "source": f"{SEPARATE_FILE}: no reader of hybrid_engine"}
    return reads


def _grad_offload(src: Source, megatron: dict, key: str) -> dict[str, Any]:
    if get_dotted(megatron, key, MISSING) is MISSING:
        return {"key": None, "source": f"{GENERATED[MEGATRON.name]}: no {key}"}
    leaf = key.rsplit(".", 1)[1]
    # the attribute is one of a worker's or an engine's own: read, if at all, in verl/workers
    files = {p: src.text(p) or "" for p in src.files("verl/workers/") if p.endswith(".py")}
    assigned: list[tuple[str, str]] = []  # (attribute, where)
    for path, text in files.items():
        for n, line in enumerate(text.splitlines(), 1):
            m = re.search(rf"self\.(\w+)\s*=.*\b{leaf}\b", line)
            if m:
                assigned.append((m.group(1), f"{path}:{n}: {line.strip()}"))
    for attr, _ in assigned:
        for path, text in files.items():
            for n, line in enumerate(text.splitlines(), 1):
                if re.search(rf"\b{attr}\b", line) and not re.search(rf"self\.{attr}\s*=[^=]", line):
                    return {"key": key, "source": f"{path}:{n}: {line.strip()}"}
    where = "; ".join(w for _, w in assigned) or "no assignment"
    return {"key": None, "source": f"assigned, never read: {where}"}


def _defaults(gen: dict[str, dict], keys: list[tuple[str, str]] | None) -> dict[str, Any]:
    """Each key's default in this version's generated config ('<absent>' when it has none); keys None: every
    leaf of both engines' configs (a version derived at run time)."""

    if keys is None:
        return {**flatten(gen[FSDP.name]), **flatten(gen[MEGATRON.name])}
    values = {key: get_dotted(gen[engine], key, MISSING) for key, engine in keys}
    return {key: "<absent>" if value is MISSING else value for key, value in values.items()}


def _loss_agg_modes(src: Source) -> dict[str, Any]:
    path = "verl/trainer/ppo/core_algos.py"
    text = src.text(path) or ""
    start = text.find("def agg_loss(")
    body = text[start : text.find("\ndef ", start + 1)] if start >= 0 else ""
    values: list[str] = []
    for m in re.finditer(r'loss_agg_mode\s*(==\s*"([\w-]+)"|in\s*\[([^\]]*)\])', body):
        values += [m.group(2)] if m.group(2) else re.findall(r'"([\w-]+)"', m.group(3))
    return {"values": list(dict.fromkeys(values)), "source": _line(text, r"def agg_loss\(", path) or path}


def _cudagraph(src: Source) -> dict[str, Any]:
    path = "verl/workers/rollout/vllm_rollout/vllm_async_server.py"
    line = _line(src.text(path), r"\] = self\.config\.cudagraph_capture_sizes", path)
    name = re.search(r'(\w+)\["(\w+)"\]\s*=', line or "")
    vllm = (
        None if not name else name.group(2) if name.group(1) == "engine_kwargs" else f"{name.group(1)}.{name.group(2)}"
    )
    return {"vllm_name": vllm, "source": line or f"{path}: not passed on"}


# ---------------------------------------------------------------------------------------------- lookup


@lru_cache(maxsize=1)
def table() -> dict[str, dict[str, Any]]:
    """The committed table: {version: facts} (scripts/verl_versions.py writes it)."""
    return json.loads(TABLE.read_text())["versions"]


def verl_root() -> Path | None:
    """The verl package folder everything is checked and rendered for: $GRPOLAB_VERL_ROOT (an unpacked wheel's
    verl/, a checkout's verl/), else the installed verl's, else None."""
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV])
    return _installed_root()


@lru_cache(maxsize=1)
def _installed_root() -> Path | None:
    """The installed verl's package folder, looked up once (the planner asks for every layout it screens)."""
    spec = importlib.util.find_spec("verl")  # finds the package without running its __init__
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def verl_version() -> str | None:
    """The version of the verl checked for: $GRPOLAB_VERL_ROOT's verl/version/version, else the installed verl's
    (grpolab.recipe.stack, the one reader of installed versions), or None."""
    if os.environ.get(ROOT_ENV):
        path = Path(os.environ[ROOT_ENV]) / "version" / "version"
        return path.read_text().strip() if path.is_file() else None
    root = verl_root()
    return _installed_version(str(root) if root else "")


@lru_cache(maxsize=4)
def _installed_version(root: str) -> str | None:
    """The installed verl's version, looked up once per package folder (metadata lookups cost a millisecond, and
    the field map asks for every key it matches)."""

    return stack.installed("verl")[0]


@lru_cache(maxsize=8)
def _derived(package: str, layer: tuple) -> dict[str, Any]:
    return derive(folder_source(Path(package)), dict(layer))


def facts(layer: dict[str, tuple[str, ...]], package: Path | None = None) -> dict[str, Any] | None:
    """The facts of the verl being checked (verl_root()), or None without one: the table's row of its version,
    else derived from its own source. Asked through grpolab.verl.fieldmap.checked_facts(), which gives its layer."""
    package = package if package is not None else verl_root()
    if package is None:
        return None
    version = verl_version()
    if version in table():
        return table()[version]
    return _derived(str(package), tuple(sorted(layer.items())))


def read_key(key: str, found: dict[str, Any] | None) -> str | None:
    """The key the version's workers read for a canonical (field map) key; None: they read nothing for it."""
    if found is None:
        return key
    entry = found["reads"].get(key)
    return key if entry is None else entry["key"]


def supported(version: str | None) -> bool | None:
    """Is the version inside the declared range? None when it cannot be parsed (or there is none)."""
    # lazy: packaging (only checking a version against the supported range needs it)
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(version or "")
    except InvalidVersion:
        return None
    return Version(SUPPORTED_MIN) <= v < Version(SUPPORTED_BELOW)


def held(field: str) -> Held | None:
    return next((h for h in HELD if h.field == field), None)


REFERENCE = "0.9.1"  # the version the field map's rows spell (and base.yaml's defaults follow)


def reference_default(key: str) -> Any:
    """verl 0.9.1's default for a first-class key, None when it has none."""
    value = table().get(REFERENCE, {}).get("defaults", {}).get(key)
    return None if value == "<absent>" else value


def having(key: str) -> list[str]:
    """The versions of the table whose config has the key."""
    return [v for v, f in table().items() if f["defaults"].get(key, "<absent>") != "<absent>"]
