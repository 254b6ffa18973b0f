"""Per-node checks: `node_checks(spec)` runs as a Ray task pinned to one node and returns that node's rows.

Imports only the standard library and grpolab.recipe.stack, so a worker starts it in milliseconds; torch, torch_npu
and pyarrow are reached only inside a check, guarded (the device probes run in a child process with a
timeout, so a broken driver stack cannot crash or hang the Ray worker).

The environment "as the job will see it" is the node's own environment (what `ray start` was given on that
node) with the recipe's `env` on top, expanded the way Ray's runtime_env `env_vars` are (`${VAR}` refers to
the node's value, unset = ""): the job is submitted with `runtime_env={"env_vars": recipe.env}`.

`spec` is a plain dict made on the driver by grpolab.preflight.spec.node_spec (nothing here reads the recipe
files: the nodes need not have params/). Each row is a dict {check, status, detail, fix}; the driver adds
the node name.

Why one file of this size: it is shipped to every node as one Ray task and must import nothing but the standard
library and grpolab's own data, so the per-node checks live together.
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from grpolab.recipe import stack

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
PROBE_TIMEOUT_S = 120  # importing torch + torch_npu and initialising the driver can take a minute
NPU_SMI_TIMEOUT_S = 20
MAX_PORTS = 2048  # ports bound per HCCL range (all of them for the usual ranges of 50-200 ports)
TOOLKIT_DEFAULT = "/usr/local/Ascend/ascend-toolkit"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _row(check: str, status: str, detail: str, fix: str = "") -> dict[str, str]:
    return {"check": check, "status": status, "detail": detail, "fix": fix}


# ---------------------------------------------------------------------------------------------- environment


def job_env(node_env: dict[str, str], recipe_env: dict[str, str]) -> dict[str, str]:
    """The environment a job's processes see: the node's, with the recipe's env on top (`${VAR}` expanded)."""
    env = dict(node_env)
    for key, value in recipe_env.items():
        env[key] = _VAR.sub(lambda m: node_env.get(m.group(1), ""), str(value))
    return env


def _listed(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def check_env(spec: dict, node_env: dict[str, str], env: dict[str, str]) -> list[dict]:
    """Required variables present, recipe vs node conflicts, visible-device lists long enough."""
    rows: list[dict] = []
    recipe_env = spec["env"]
    for var, severity, why in spec["required_env"]:
        if not env.get(var):
            rows.append(
                _row(
                    f"env.{var}",
                    severity,
                    f"{var} is not set on this node nor in the recipe's env: {why}",
                    f"export {var}=... in the shell that runs `ray start` on this node (then restart Ray there), "
                    f"or add it under the recipe's env:",
                )
            )
    for var, value in recipe_env.items():
        mine = node_env.get(var)
        if mine is not None and mine != env[var] and "${" not in str(value):
            rows.append(
                _row(
                    f"env.{var}",
                    WARN,
                    f"this node sets {var}={mine!r} but the recipe sets {env[var]!r}: the job sees the recipe's value, "
                    "processes started outside the job (the raylet, other jobs) see the node's",
                    f"make them agree: change env.{var} in the recipe, or the node's environment before `ray start`",
                )
            )
    dpn = spec["devices_per_node"]
    visible_var = {"npu": "ASCEND_RT_VISIBLE_DEVICES", "cuda": "CUDA_VISIBLE_DEVICES"}.get(spec["device"])
    if visible_var and env.get(visible_var) is not None:
        ids = _listed(env[visible_var])
        if len(ids) < dpn:
            where = "the recipe's env" if visible_var in recipe_env else "this node's environment"
            rows.append(
                _row(
                    f"env.{visible_var}",
                    FAIL,
                    f"{visible_var}={env[visible_var]!r} (from {where}) lists {len(ids)} device(s) but the recipe uses "
                    f"{dpn} per node",
                    f"list {dpn} devices ({','.join(str(i) for i in range(dpn))}) in {visible_var}, or unset it",
                )
            )
    for var in ("HCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME"):
        value = env.get(var)
        if spec["device"] == "npu" and value:
            missing = _missing_interfaces(value)
            if missing:
                rows.append(
                    _row(
                        f"env.{var}",
                        WARN,
                        f"{var}={value!r} names no network interface of this node ({', '.join(missing)}); "
                        f"interfaces here: {', '.join(_interfaces())}",
                        f"set {var} to the interface that carries this node's IP (see `ip addr`)",
                    )
                )
    if not rows:
        noset = env.get("RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES")
        extra = (
            f"; RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES={noset}" if noset and spec["device"] == "npu" else ""
        )
        required = ", ".join(v for v, _, _ in spec["required_env"]) or "none for this recipe"
        rows.append(
            _row(
                "env",
                OK,
                f"{len(recipe_env)} recipe variable(s) applied; required variables present ({required}){extra}",
            )
        )
    return rows


def _interfaces() -> list[str]:
    try:
        return [name for _, name in socket.if_nameindex()]
    except OSError:
        return []


def _missing_interfaces(value: str) -> list[str]:
    """HCCL/GLOO interface names (comma list, `=` exact or `^=` exclusion prefixes) that match nothing here."""
    names = _interfaces()
    if not names:
        return []
    missing = []
    for item in _listed(value):
        if item.startswith("^"):
            continue  # an exclusion list cannot be wrong in a way we can see
        exact = item.startswith("=")
        name = item.lstrip("=")
        if not any((n == name) if exact else n.startswith(name) for n in names):
            missing.append(name)
    return missing


# ---------------------------------------------------------------------------------------------- device runtime


def _probe(code: str, env: dict[str, str]) -> tuple[dict | None, str]:
    """Run python code in a child process with the job's env; its last stdout line is JSON. (result, error)."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return None, f"did not finish in {PROBE_TIMEOUT_S} s (a hung driver or device?)"
    except OSError as exc:
        return None, str(exc)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode == 0 and lines:
        try:
            return json.loads(lines[-1]), ""
        except json.JSONDecodeError:
            pass
    err = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    return None, (err[-1] if err else f"exit status {proc.returncode}")[:300]


NPU_PROBE = """
import json, torch, torch_npu
n = torch.npu.device_count() if torch.npu.is_available() else 0
print(json.dumps({"count": n, "torch": torch.__version__, "torch_npu": getattr(torch_npu, "__version__", "?"),
                  "name": torch.npu.get_device_name(0) if n else None}))
"""
CUDA_PROBE = """
import json, torch
n = torch.cuda.device_count() if torch.cuda.is_available() else 0
print(json.dumps({"count": n, "torch": torch.__version__, "cuda": torch.version.cuda,
                  "name": torch.cuda.get_device_name(0) if n else None}))
"""


def _find_spec(name: str, env: dict[str, str]) -> bool:
    """Is a module importable by the job? (this worker's path plus the job's PYTHONPATH); never imports it."""
    if importlib.util.find_spec(name) is not None:
        return True
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
    return any((Path(p) / name).is_dir() or (Path(p) / f"{name}.py").is_file() for p in extra)


def check_torch_npu(spec: dict, env: dict[str, str]) -> dict:
    dpn = spec["devices_per_node"]
    pin = spec["stack"].get("torch_npu") or spec["stack"].get("torch-npu")
    install = f"pip install torch_npu=={pin}" if pin else "pip install torch_npu (the release that matches torch)"
    if not _find_spec("torch_npu", env):
        return _row(
            "torch_npu",
            FAIL,
            "torch_npu is not installed for this node's Python: no NPU can be used",
            f"{install} in the environment Ray runs on this node, with CANN installed first; "
            "never into a CPU-only environment",
        )
    result, error = _probe(NPU_PROBE, env)
    if result is None:
        return _row(
            "torch_npu",
            FAIL,
            f"`import torch_npu` fails: {error}",
            "source the CANN toolkit's set_env.sh before `ray start`, and install matching torch and "
            "torch_npu versions",
        )
    count = result["count"]
    detail = f"torch {result['torch']}, torch_npu {result['torch_npu']}: {count} NPU(s) visible"
    if count < dpn:
        return _row(
            "torch_npu",
            FAIL,
            f"{detail}, the recipe uses {dpn} per node",
            f"check `npu-smi info` and ASCEND_RT_VISIBLE_DEVICES on this node, or set cluster.devices_per_node={count}"
            if count
            else "check the driver (`npu-smi info`), CANN's set_env.sh and ASCEND_RT_VISIBLE_DEVICES",
        )
    return _row("torch_npu", OK, detail + (f" ({result['name']})" if result.get("name") else ""))


def check_cuda(spec: dict, env: dict[str, str]) -> dict:
    dpn = spec["devices_per_node"]
    if not _find_spec("torch", env):
        return _row(
            "cuda",
            FAIL,
            "torch is not installed for this node's Python",
            "pip install torch (a CUDA build) in the environment Ray runs on this node",
        )
    result, error = _probe(CUDA_PROBE, env)
    if result is None:
        return _row("cuda", FAIL, f"`import torch` fails: {error}", "repair the torch install on this node")
    count = result["count"]
    detail = f"torch {result['torch']} (CUDA {result['cuda'] or 'none: a CPU build'}): {count} GPU(s) visible"
    if count < dpn:
        return _row(
            "cuda",
            FAIL,
            f"{detail}, the recipe uses {dpn} per node",
            "install a CUDA build of torch and the NVIDIA driver (check `nvidia-smi`), check CUDA_VISIBLE_DEVICES"
            if not count
            else f"check `nvidia-smi` and CUDA_VISIBLE_DEVICES, or set cluster.devices_per_node={count}",
        )
    return _row("cuda", OK, detail + (f" ({result['name']})" if result.get("name") else ""))


def toolkit_roots(env: dict[str, str]) -> list[str]:
    roots = [env.get("ASCEND_TOOLKIT_HOME"), env.get("ASCEND_HOME_PATH"), TOOLKIT_DEFAULT]
    return list(dict.fromkeys(r for r in roots if r))


def cann_version(env: dict[str, str]) -> tuple[str | None, str]:
    """(version, the install-info file) from `<toolkit>/latest/*/ascend_toolkit_install.info` or near it."""
    for root in toolkit_roots(env):
        for pattern in (
            "latest/*/ascend_toolkit_install.info",
            "*/ascend_toolkit_install.info",
            "ascend_toolkit_install.info",
        ):
            for path in sorted(glob.glob(os.path.join(root, pattern))):
                version = read_install_info(path).get("version")
                if version:
                    return version, path
    return None, ""


def read_install_info(path: str) -> dict[str, str]:
    out = {}
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


def _compare_versions(have: str, want: str) -> int | None:
    """-1 / 0 / 1, or None when the versions cannot be ordered (CANN writes 8.0.RC2: PEP 440 reads it)."""
    try:
        from packaging.version import InvalidVersion, Version
    except ImportError:  # pragma: no cover
        return None
    try:
        a, b = Version(have), Version(want)
    except InvalidVersion:
        return None if have != want else 0
    return (a > b) - (a < b)


def check_cann(spec: dict, env: dict[str, str]) -> dict:
    pin = spec["stack"].get("cann")
    version, path = cann_version(env)
    if version is None:
        where = ", ".join(toolkit_roots(env))
        return _row(
            "cann",
            FAIL,
            f"no CANN toolkit found (no ascend_toolkit_install.info under {where})",
            f"install the CANN toolkit{' ' + pin if pin else ''} and `source <toolkit>/set_env.sh` "
            "before `ray start` on this node (or set ASCEND_TOOLKIT_HOME)",
        )
    if not pin:
        return _row("cann", OK, f"CANN {version} ({path}); the recipe pins no version (stack.cann)")
    pin_version = pin.split("@")[0].lstrip("v")
    order = _compare_versions(version, pin_version)
    if order is None and version != pin_version:
        return _row(
            "cann",
            WARN,
            f"CANN {version} ({path}); the recipe pins {pin}: cannot order the two",
            f"install CANN {pin_version}, or pin stack.cann to {version} after testing",
        )
    if order is not None and order < 0:
        return _row(
            "cann",
            FAIL,
            f"CANN {version} is older than the recipe's {pin_version} ({path})",
            f"install CANN {pin_version} or newer on this node and source its set_env.sh before `ray start`",
        )
    if order is not None and order > 0:
        return _row(
            "cann",
            WARN,
            f"CANN {version} is newer than the {pin_version} the recipe was tuned for ({path})",
            f"test the recipe on {version} and update stack.cann, or install {pin_version}",
        )
    return _row("cann", OK, f"CANN {version} matches stack.cann ({path})")


_SMI_ROW = re.compile(r"^\|\s*(\d+)\s+(\S*[A-Za-z]\S*)\s*\|\s*([A-Za-z]+)\s*\|")  # | 0  910B3  | OK  |


def parse_npu_smi(text: str) -> tuple[str | None, int]:
    """(chip name, NPU rows) from `npu-smi info`'s table: rows `| 0  910B3  | OK  | ...`."""
    names = [m.group(2) for m in (_SMI_ROW.match(line) for line in text.splitlines()) if m]
    if not names:
        return None, 0
    return max(set(names), key=names.count), len(names)


def check_npu_smi(spec: dict, env: dict[str, str]) -> dict:
    exe = shutil.which("npu-smi", path=env.get("PATH"))
    if exe is None:
        return _row(
            "npu-smi",
            SKIP,
            "npu-smi is not on PATH: the chip is not identified",
            "install the Ascend driver (it ships npu-smi) and put it on PATH",
        )
    try:
        proc = subprocess.run([exe, "info"], env=env, capture_output=True, text=True, timeout=NPU_SMI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return _row(
            "npu-smi",
            FAIL,
            f"`npu-smi info` did not answer in {NPU_SMI_TIMEOUT_S} s",
            "check the Ascend driver on this node (dmesg, `npu-smi info`)",
        )
    except OSError as exc:
        return _row("npu-smi", FAIL, f"`npu-smi info` cannot run: {exc}", "reinstall the Ascend driver")
    chip, count = parse_npu_smi(proc.stdout)
    if proc.returncode != 0 or chip is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return _row(
            "npu-smi",
            FAIL,
            f"`npu-smi info` lists no NPU: {tail[0][:200]}",
            "check the Ascend driver and firmware on this node",
        )
    return _row("npu-smi", OK, f"chip {chip}: {count} NPU(s) in `npu-smi info` (A3 cards hold 2 dies each)")


def check_devices(spec: dict, env: dict[str, str]) -> list[dict]:
    device = spec["device"]
    if device == "cpu":
        return [
            _row(
                "device",
                SKIP,
                f"cluster.device is cpu (train.engine {spec['engine']}): no accelerator runtime to check",
            )
        ]
    if device == "npu":
        return [
            check_torch_npu(spec, env),
            check_cann(spec, env),
            check_npu_smi(spec, env),
            _row("cuda", SKIP, "cluster.device is npu: GPU checks do not apply"),
        ]
    return [
        check_cuda(spec, env),
        _row("ascend", SKIP, "cluster.device is cuda: NPU checks (torch_npu, CANN, npu-smi) do not apply"),
    ]


# ---------------------------------------------------------------------------------------------- packages


def installed(package: str, env: dict[str, str]) -> tuple[str | None, str | None]:
    """(version, commit) as the job sees it: this worker's sys.path plus the job's PYTHONPATH; metadata only."""
    version, commit = stack.installed(package)
    if version is not None:
        return version, commit
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
    if not extra:
        return None, None
    for name in dict.fromkeys([package, re.sub(r"[-_.]+", "_", package), re.sub(r"[-_.]+", "-", package)]):
        for dist in metadata.distributions(name=name, path=extra):
            direct = dist.read_text("direct_url.json")
            try:
                commit = json.loads(direct).get("vcs_info", {}).get("commit_id") if direct else None
            except json.JSONDecodeError:
                commit = None
            return dist.version, commit
    return None, None


def _install_hint(package: str, pin: stack.Pin | None) -> str:
    if pin is None:
        return f"pip install {package}"
    if pin.commit:
        what = f"release {pin.version}" if pin.version else f"branch {pin.ref}"
        return f"install {package} {what} at commit {pin.commit} (from source: pip install git+<repo>@{pin.commit})"
    if pin.version:
        return f"pip install {package}=={pin.version}"
    return f"install {package} from its {pin.ref} branch"


def check_stack(spec: dict, env: dict[str, str]) -> list[dict]:
    """Every `stack` pin against the installed version, then packages the engines need but the recipe does not pin."""
    rows = []
    for package, text in spec["stack"].items():
        check = f"stack.{package}"
        if package in stack.NOT_PACKAGES:
            if spec["device"] != "npu":
                rows.append(_row(check, SKIP, f"{package} applies to NPU nodes; cluster.device is {spec['device']}"))
            continue  # cann: compared by the `cann` row from the toolkit's install info
        try:
            pin = stack.parse_pin(package, text)
        except ValueError as exc:
            rows.append(
                _row(
                    check,
                    FAIL,
                    f"cannot read the pin {text!r}: {exc}",
                    "write a version (0.23.0), version@commit or branch@commit",
                )
            )
            continue
        version, commit = installed(package, env)
        ok, explanation = stack.matches(pin, version, commit)
        if version is None:
            rows.append(
                _row(
                    check,
                    FAIL,
                    f"{package} is not installed (the recipe pins {text})",
                    _install_hint(package, pin) + " on every node",
                )
            )
        elif not ok:
            rows.append(
                _row(
                    check,
                    FAIL,
                    f"{package}: {explanation}; the recipe pins {text}",
                    _install_hint(package, pin) + f" on every node, or re-tune and update stack.{package}",
                )
            )
        else:
            rows.append(_row(check, OK, f"{package}: {explanation or 'installed ' + version} (pin {text})"))
    pinned = {stack.normal_name(p) for p in spec["stack"]}
    for package, why in spec["required_packages"]:
        if stack.normal_name(package) in pinned:
            continue
        version, _ = installed(package, env)
        if version is None:
            rows.append(
                _row(
                    f"stack.{package}",
                    FAIL,
                    f"{package} is not installed; {why}",
                    f"pip install {package} on every node (and pin it under stack: to record the version)",
                )
            )
        else:
            rows.append(_row(f"stack.{package}", OK, f"{package} {version} installed ({why}; not pinned)"))
    rows += _compat(spec, env)
    return rows


def _base(version: str) -> str:
    return re.split(r"[+]|\.post|rc|\.dev", version)[0]


def _compat(spec: dict, env: dict[str, str]) -> list[dict]:
    """Pairs that must come from the same release line (vllm-ascend / torch / vLLM conflicts: verl #5123, #6224)."""
    rows = []
    if spec["device"] != "npu":
        return rows
    torch_v, _ = installed("torch", env)
    npu_v, _ = installed("torch_npu", env)
    if torch_v and npu_v and _base(torch_v) != _base(npu_v):
        rows.append(
            _row(
                "compat.torch_npu",
                FAIL,
                f"torch_npu {npu_v} is built for torch {_base(npu_v)}, but torch {torch_v} is installed",
                f"install torch=={_base(npu_v)} (or the torch_npu release for torch {_base(torch_v)})",
            )
        )
    vllm_v, _ = installed("vllm", env)
    asc_v, _ = installed("vllm-ascend", env)
    if vllm_v and asc_v and _base(vllm_v).split(".")[:2] != _base(asc_v).split(".")[:2]:
        rows.append(
            _row(
                "compat.vllm-ascend",
                FAIL,
                f"vllm-ascend {asc_v} and vllm {vllm_v} are different release lines",
                "install vllm and vllm-ascend of the same release (e.g. both 0.23.x)",
            )
        )
    return rows


# ---------------------------------------------------------------------------------------------- model and data


WEIGHT_GLOBS = ("*.safetensors", "*.bin", "*.pt", "*.gguf")


def check_model(spec: dict) -> list[dict]:
    model = spec["model"]
    if model is None:
        return [_row("model", SKIP, spec["model_skip"])]
    raw = model["path"]
    if not raw:
        return [_row("model", FAIL, "model.path is empty", "set model.path to the model directory on every node")]
    path = Path(os.path.expanduser(raw))
    if not path.exists():
        if not raw.startswith(("/", "~", ".")) and raw.count("/") == 1:
            return [
                _row(
                    "model",
                    WARN,
                    f"{raw!r} is not a directory on this node: verl would fetch it from the "
                    "Hugging Face Hub at start-up on every node",
                    "download it once to shared storage and set model.path to that directory",
                )
            ]
        return [
            _row(
                "model",
                FAIL,
                f"model directory {raw} does not exist on this node",
                "copy the weights to the same path on every node (or shared storage), or set model.path",
            )
        ]
    config = path / "config.json"
    if not config.is_file():
        return [_row("model", FAIL, f"{raw} has no config.json", "point model.path at a Hugging Face model directory")]
    rows = []
    try:
        data = json.loads(config.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return [_row("model", FAIL, f"cannot read {config}: {exc}", "fix or replace the model's config.json")]
    card = model.get("card_data")
    if card:
        rows.append(_compare_card(config, data, card, model["card"]))
    else:
        rows.append(_row("model.config", OK, f"{config} readable (no card to compare)"))
    rows.append(_weights(path, raw))
    return rows


def _compare_card(config: Path, data: dict, card_data: dict, card_name: str) -> dict:
    """config.json's facts vs the card, over grpolab.recipe.cards.COMPARED (imported here: pydantic on demand)."""
    from grpolab.recipe.cards import COMPARED, facts_from_config
    from grpolab.recipe.schema import ModelCard

    card = ModelCard.model_validate(card_data)
    try:
        facts = facts_from_config(data, card, str(config))
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        return _row(
            "model.config",
            FAIL,
            f"{config} has values grpolab cannot read: {str(exc)[:200]}",
            "fix or replace the model's config.json",
        )
    wrong = [
        f"{f} {getattr(facts, f)} (card {getattr(card, f)})" for f in COMPARED if getattr(facts, f) != getattr(card, f)
    ]
    if wrong:
        return _row(
            "model.config",
            FAIL,
            f"{config} does not match card {card_name!r}: {', '.join(wrong)}",
            "point model.path at the model the card describes, or set model.card to this model's card",
        )
    shown = ", ".join(f"{f} {getattr(card, f)}" for f in COMPARED)
    return _row("model.config", OK, f"{config} matches card {card_name!r} ({shown})")


def _weights(path: Path, raw: str) -> dict:
    for index_name in ("model.safetensors.index.json", "pytorch_model.bin.index.json"):
        index = path / index_name
        if index.is_file():
            try:
                shards = sorted(set(json.loads(index.read_text()).get("weight_map", {}).values()))
            except (OSError, json.JSONDecodeError, AttributeError) as exc:
                return _row("model.weights", FAIL, f"cannot read {index}: {exc}", "re-download the model")
            missing = [s for s in shards if not (path / s).is_file()]
            if missing:
                return _row(
                    "model.weights",
                    FAIL,
                    f"{len(missing)} of {len(shards)} weight shards listed in {index_name} are missing "
                    f"(e.g. {', '.join(missing[:3])})",
                    "finish copying the weights to this node (same path on every node)",
                )
            return _row("model.weights", OK, f"{len(shards)} weight shard(s) present ({index_name})")
    found = [p.name for g in WEIGHT_GLOBS for p in path.glob(g)]
    if not found:
        return _row(
            "model.weights",
            FAIL,
            f"{raw} holds no weight files ({', '.join(WEIGHT_GLOBS)})",
            "copy the weights next to config.json (the trainer loads them even with rollout load_format dummy)",
        )
    return _row("model.weights", OK, f"{len(found)} weight file(s) present")


def check_data(spec: dict) -> list[dict]:
    data = spec["data"]
    if data is None:
        return [_row("data", SKIP, spec["data_skip"])]
    rows = []
    for key, raw in data["files"]:
        check = key
        if raw.startswith("generated:"):
            rows.append(_row(check, SKIP, f"{raw}: generated in code, no file to check"))
            continue
        path = Path(os.path.expanduser(raw))
        if not path.is_file():
            rows.append(
                _row(
                    check,
                    FAIL,
                    f"{raw} does not exist on this node",
                    "prepare the dataset (verl's examples/data_preprocess/*.py write parquet) and copy it "
                    f"to the same path on every node, or set {key}",
                )
            )
            continue
        if path.suffix != ".parquet":
            rows.append(
                _row(
                    check,
                    WARN,
                    f"{raw} is not parquet: its columns were not checked",
                    "verl's RLHFDataset reads parquet; convert the file",
                )
            )
            continue
        try:
            import pyarrow.parquet as pq
        except ImportError:
            rows.append(_row(check, WARN, "pyarrow is not installed here: columns not checked", "pip install pyarrow"))
            continue
        try:
            schema = pq.read_schema(str(path))
        except Exception as exc:  # pyarrow raises ArrowInvalid / OSError variants
            rows.append(
                _row(
                    check,
                    FAIL,
                    f"{raw} is not a readable parquet file: {str(exc)[:200]}",
                    "rewrite the file with pandas.DataFrame.to_parquet or pyarrow",
                )
            )
            continue
        rows.append(_columns(check, raw, schema, data))
    return rows


def _columns(check: str, raw: str, schema, data: dict) -> dict:
    names = list(schema.names)
    missing = []
    for column, why in data["columns"]:
        if column not in names:
            missing.append(f"{column!r} ({why})")
    if "reward_model" in names and data.get("needs_ground_truth"):
        field = schema.field("reward_model")
        sub = (
            [field.type.field(i).name for i in range(field.type.num_fields)]
            if hasattr(field.type, "num_fields")
            else []
        )
        if sub and "ground_truth" not in sub:
            missing.append("'reward_model.ground_truth' (the rule reward compares the answer with it)")
    if missing:
        return _row(
            check,
            FAIL,
            f"{raw} lacks column(s) {', '.join(missing)}; it has: {', '.join(names)}",
            "preprocess the data into verl's format (prompt as chat messages, data_source, "
            "reward_model.ground_truth), or set data.prompt_key / data.reward_fn_key in verl_overrides",
        )
    return _row(check, OK, f"{raw}: columns {', '.join(names)}")


# ---------------------------------------------------------------------------------------------- disk, ports, limits


def _gb(n: float) -> str:
    return f"{n / 1e9:,.1f} GB" if n >= 1e9 else f"{n / 1e6:,.0f} MB"


def check_checkpoint(spec: dict) -> dict:
    ck = spec["checkpoint"]
    raw = ck["path"]
    target = Path(os.path.expanduser(raw))
    anchor = target
    while not anchor.exists() and anchor != anchor.parent:
        anchor = anchor.parent
    if not anchor.is_dir():
        return _row(
            "checkpoint", FAIL, f"{raw}: {anchor} is not a directory", "set trainer.ckpt_dir to a directory path"
        )
    if anchor == target:
        try:
            with tempfile.NamedTemporaryFile(dir=target, prefix=".grpolab-preflight-"):
                pass
        except OSError as exc:
            return _row(
                "checkpoint",
                FAIL,
                f"{raw} is not writable on this node: {exc.strerror or exc}",
                "make it writable by the user that runs Ray, or set trainer.ckpt_dir",
            )
        where = raw
    else:
        if not os.access(anchor, os.W_OK | os.X_OK):
            return _row(
                "checkpoint",
                FAIL,
                f"{raw} does not exist and {anchor} is not writable: it cannot be created",
                "create the directory (writable by the Ray user) on every node, or set trainer.ckpt_dir",
            )
        where = f"{raw} (created at launch under {anchor})"
    free = shutil.disk_usage(anchor).free
    need, share = ck["bytes"], ck["bytes"] / max(spec["nnodes"], 1)
    size = f"a checkpoint needs about {_gb(need)} ({ck['estimate']})"
    if free < share:
        part = f", this node's 1/{spec['nnodes']} share {_gb(share)}" if spec["nnodes"] > 1 else ""
        return _row(
            "checkpoint",
            FAIL,
            f"{where}: {_gb(free)} free; {size}{part}",
            "free space, or set trainer.ckpt_dir to a larger (shared) filesystem",
        )
    if free < need:
        return _row(
            "checkpoint",
            WARN,
            f"{where}: {_gb(free)} free; {size}: enough only if this disk holds "
            "just this node's shard (a local disk, not shared storage)",
            "use a filesystem with room for a whole checkpoint if it is shared between nodes",
        )
    return _row("checkpoint", OK, f"{where}: writable, {_gb(free)} free; {size}")


def parse_port_ranges(text: str) -> list[int]:
    """ "60000-60050" or "60000-60050,60100" -> ports; "auto"/"" -> []. ValueError for anything else."""
    ports: list[int] = []
    if text.strip().lower() in ("", "auto"):
        return ports
    for part in _listed(text):
        lo, sep, hi = part.partition("-")
        a, b = int(lo), int(hi) if sep else int(lo)
        if not (0 < a <= b < 65536):
            raise ValueError(f"{part!r} is not a port range")
        ports.extend(range(a, b + 1))
    return ports


def port_free(port: int, attempts: int = 3) -> bool:
    """Can this node bind TCP `port` on all interfaces? Retried briefly: another preflight may hold it a moment."""
    for attempt in range(attempts):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("0.0.0.0", port))
                return True
            except OSError:
                if attempt + 1 < attempts:
                    time.sleep(0.05 + random.random() * 0.1)
    return False


def check_ports(spec: dict, env: dict[str, str]) -> list[dict]:
    if spec["device"] != "npu":
        return [_row("hccl-ports", SKIP, f"HCCL port ranges apply to NPU recipes; cluster.device is {spec['device']}")]
    rows = []
    for var in ("HCCL_HOST_SOCKET_PORT_RANGE", "HCCL_NPU_SOCKET_PORT_RANGE"):
        check = f"ports.{var}"
        value = env.get(var)
        if not value:
            rows.append(_row(check, SKIP, f"{var} is not set: HCCL chooses its own ports"))
            continue
        try:
            ports = parse_port_ranges(value)
        except ValueError as exc:
            rows.append(
                _row(
                    check,
                    FAIL,
                    f"{var}={value!r} is not a port range: {exc}",
                    f"write it as FIRST-LAST, e.g. {var}=60000-60050",
                )
            )
            continue
        if not ports:
            rows.append(_row(check, SKIP, f"{var}={value}: HCCL chooses its own ports"))
            continue
        tried = ports[:MAX_PORTS]
        taken = [p for p in tried if not port_free(p)]
        note = (
            ""
            if var.startswith("HCCL_HOST")
            else "; bound on the host's interfaces (the NPU NICs' own ports are not visible from here)"
        )
        partial = f" (first {MAX_PORTS} of {len(ports)})" if len(ports) > len(tried) else ""
        if taken:
            shown = ", ".join(str(p) for p in taken[:10]) + (" ..." if len(taken) > 10 else "")
            rows.append(
                _row(
                    check,
                    FAIL,
                    f"{len(taken)} of {len(tried)} port(s) in {var}={value} are in use: {shown}{note}",
                    f"stop what holds them (`ss -ltnp | grep <port>`), or move {var} to a free range",
                )
            )
        else:
            rows.append(_row(check, OK, f"all {len(tried)} port(s){partial} in {value} are free{note}"))
    return rows


def check_nofile(spec: dict) -> dict:
    if spec["device"] != "npu":
        return _row(
            "open-files", SKIP, f"the open-file limit matters on NPU (HCCL) nodes; cluster.device is {spec['device']}"
        )
    try:
        import resource
    except ImportError:  # pragma: no cover - not on Linux
        return _row("open-files", SKIP, "no resource module on this platform")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = spec["nofile_min"]
    shown = "unlimited" if soft == resource.RLIM_INFINITY else str(soft)
    if soft != resource.RLIM_INFINITY and soft < need:
        return _row(
            "open-files",
            FAIL,
            f"open-file limit {shown} (hard {hard}) is below {need}",
            f"run `ulimit -n {need}` in the shell that starts Ray on this node, then restart Ray there "
            "(raise the hard limit in /etc/security/limits.conf if needed)",
        )
    return _row("open-files", OK, f"open-file limit {shown} (>= {need})")


# ---------------------------------------------------------------------------------------------- the task


def _guard(name: str, fn: Callable[[], Any]) -> list[dict]:
    """Run one check; a bug or an unexpected error becomes a fail row, never a lost node report."""
    try:
        out = fn()
    except Exception as exc:  # one broken check must not hide the others
        return [
            _row(
                name,
                FAIL,
                f"the check itself failed: {type(exc).__name__}: {exc}"[:400],
                "report this as a grpolab bug, with the recipe",
            )
        ]
    return out if isinstance(out, list) else [out]


def node_checks(spec: dict) -> dict:
    """Every per-node check on the node this task runs on. Returns {host, elapsed_s, rows}."""
    t0 = time.perf_counter()
    node_env = dict(os.environ)
    env = job_env(node_env, spec["env"])
    rows: list[dict] = []
    rows += _guard("device", lambda: check_devices(spec, env))
    rows += _guard("stack", lambda: check_stack(spec, env))
    rows += _guard("env", lambda: check_env(spec, node_env, env))
    rows += _guard("model", lambda: check_model(spec))
    rows += _guard("data", lambda: check_data(spec))
    rows += _guard("checkpoint", lambda: check_checkpoint(spec))
    rows += _guard("hccl-ports", lambda: check_ports(spec, env))
    rows += _guard("open-files", lambda: check_nofile(spec))
    return {"host": socket.gethostname(), "elapsed_s": time.perf_counter() - t0, "rows": rows}
