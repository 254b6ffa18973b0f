"""Attention backends of the rollout engine: every backend the recipe names, wherever it names it, runs on the
recipe's device. The facts (which backend runs where, with their sources) are params/attention_backends.yaml.

Where a backend is set: SGLang, `rollout.attention_backend`, `rollout.engine_kwargs.<setting>` and
`verl_overrides` `actor_rollout_ref.rollout.engine_kwargs.sglang.<setting>`; vLLM, `rollout.engine_kwargs.
attention_backend` / `attention_config.backend`, the same under `verl_overrides` (`engine_kwargs.vllm`), and env
VLLM_ATTENTION_BACKEND. On NPU only the table's NPU backends pass, whatever the name (SGLang's NPU path runs
`ascend` only; vllm-ascend replaces any vLLM backend with its own); elsewhere a backend whose devices exclude the
recipe's is refused, and a name the table does not know is a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from grpolab.paths import params_dir
from grpolab.recipe.dotted import flatten
from grpolab.recipe.loader import read_yaml
from grpolab.rules.checks import Checks
from grpolab.verl.fieldmap import ROLL

TABLE = "params/attention_backends.yaml"
ENGINE_NAMES = {"sglang": "SGLang", "vllm": "vLLM"}
TABLES = {"sglang": ("sglang", "sglang_multimodal"), "vllm": ("vllm",)}
CUDA_LIKE = {"cuda", "rocm"}  # torch names an AMD GPU `cuda` too


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    return read_yaml(params_dir() / "attention_backends.yaml")


def table_faults() -> list[str]:
    """What is wrong with the table (missing fields, an NPU backend that does not list npu); [] if fine."""
    faults = []
    for name, entry in table().items():
        missing = [k for k in ("source", "settings", "npu", "backends") if k not in entry]
        missing += [f"npu.{k}" for k in ("backends", "severity", "why") if k not in entry.get("npu", {})]
        faults += [f"{name}: missing {k}" for k in missing]
        if missing:
            continue
        backends, npu = entry["backends"], entry["npu"]
        faults += [f"{name}: {b} runs on no device" for b, devices in backends.items() if not devices]
        for b, devices in backends.items():
            if ("npu" in devices) != (b in npu["backends"]):
                faults.append(f"{name}: {b} lists npu but is not in npu.backends (or the other way round)")
        faults += [f"{name}: npu backend {b} is not in backends" for b in npu["backends"] if b not in backends]
        if npu["severity"] not in ("error", "warning"):
            faults.append(f"{name}: npu.severity must be error or warning")
    faults += [f"no table for {engine}" for tables in TABLES.values() for engine in tables if engine not in table()]
    return faults


@dataclass(frozen=True)
class Setting:
    key: str  # where the recipe sets it (a dotted key of the recipe)
    value: str  # the backend's name as the engine reads it
    table: str  # which of the table's entries names it
    setting: str  # the engine's own name of the setting (attention_backend, mm_attention_backend, ...)


def normal(engine_table: str, value: Any) -> str:
    """A backend name as the engine compares it: vLLM upper-cases it and drops the old `_VLLM_V1` suffix (and
    reads `auto` as its own choice, returned as "")."""
    text = str(value).strip()
    if engine_table == "vllm":
        text = "" if text.lower() == "auto" else text.upper().removesuffix("_VLLM_V1")
    return text


def settings(c: Checks) -> list[Setting]:
    """Every attention backend the recipe names for its rollout engine, with the key that names it."""
    r = c.r
    ro, engine = r.rollout, r.rollout.engine
    found: list[Setting] = []
    overrides = r.flat_overrides()
    kwargs = flatten(ro.engine_kwargs)
    for name in TABLES.get(engine, ()):
        for setting in table()[name]["settings"]:
            places = [
                (f"rollout.engine_kwargs.{setting}", kwargs.get(setting)),
                (
                    f"verl_overrides.{ROLL}.engine_kwargs.{engine}.{setting}",
                    overrides.get(f"{ROLL}.engine_kwargs.{engine}.{setting}"),
                ),
            ]
            if engine == "sglang" and setting == "attention_backend":
                places.insert(0, ("rollout.attention_backend", ro.attention_backend))
            found += [Setting(key, normal(name, v), name, setting) for key, v in places if v is not None]
        env_var = table()[name].get("env")
        if env_var and r.env.get(env_var) is not None:
            found.append(Setting(f"env.{env_var}", normal(name, r.env[env_var]), name, "attention_backend"))
    return [s for s in found if s.value]


def rollout_backend(c: Checks) -> None:
    """Each backend the recipe names runs on its device; SGLang on NPU names `ascend` (verl would pick a CUDA one)."""
    r = c.r
    ro, device = r.rollout, r.cluster.device
    if ro.engine != "sglang" and ro.attention_backend is not None:
        c.add(
            "rollout-backend",
            "rollout.attention_backend",
            ro.attention_backend,
            f"rollout.attention_backend applies to SGLang only; rollout.engine {ro.engine} ignores it",
            "remove rollout.attention_backend",
            severity="warning",
        )
    named = settings(c)
    engine = ENGINE_NAMES.get(ro.engine, ro.engine)
    if ro.engine == "sglang" and device == "npu" and not [s for s in named if s.setting == "attention_backend"]:
        c.add(
            "rollout-backend",
            "rollout.attention_backend",
            None,
            "SGLang on NPU needs attention_backend `ascend`; with none set verl picks fa3 / flashinfer, CUDA kernels "
            "that fail when the rollout starts",
            "set rollout.attention_backend: ascend",
        )
    for s in named:
        devices = table()[s.table]["backends"].get(s.value)
        runs_on = ", ".join(devices) if devices else f"no device {TABLE} knows"
        npu = table()[s.table]["npu"]
        if device == "npu" and s.value not in npu["backends"]:
            if s.key == "rollout.attention_backend":
                fix = f"set rollout.attention_backend: {npu['backends'][0]}"
            else:
                own = ", which rollout.attention_backend sets" if s.setting == "attention_backend" else ""
                first = f" ({npu['backends'][0]} is {engine}'s backend on NPU{own})" if npu["backends"] else ""
                fix = f"remove {s.key}{first}"
            c.add(
                "rollout-backend",
                s.key,
                s.value,
                f"{engine}'s attention backend {s.value!r} runs on {runs_on}, not on Ascend NPUs: {npu['why']}",
                fix,
                severity=npu["severity"],
            )
        elif device == "cuda" and devices is None:
            c.add(
                "rollout-backend",
                s.key,
                s.value,
                f"{s.value!r} is not one of {engine}'s attention backends in {TABLE}; {engine} refuses a name it does "
                "not know when the rollout starts",
                f"check the name against {TABLE} (its sources list {engine}'s own), or remove {s.key}",
                severity="warning",
            )
        elif device == "cuda" and not CUDA_LIKE & set(devices):
            c.add(
                "rollout-backend",
                s.key,
                s.value,
                f"{engine}'s attention backend {s.value!r} runs on {runs_on}; this recipe runs on CUDA GPUs",
                (f"set {s.key}: null" if s.key == "rollout.attention_backend" else f"remove {s.key}")
                + f" ({engine} picks a CUDA backend itself)",
            )
