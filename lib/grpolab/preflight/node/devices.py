"""The device runtime on this node: torch_npu (and the NPUs it sees), the CANN toolkit's version against
`stack.cann`, the chip in `npu-smi info`; or torch's CUDA and its GPUs. The probes that import torch run in a
child process with a timeout, so a broken driver stack can neither crash nor hang the Ray worker.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import shutil
import subprocess
import sys

from grpolab.preflight.node.packages import importable
from grpolab.preflight.node.rows import FAIL, OK, SKIP, WARN, row
from grpolab.recipe import stack
from grpolab.recipe.files import read_text

PROBE_TIMEOUT_S = 120  # importing torch + torch_npu and initialising the driver can take a minute
NPU_SMI_TIMEOUT_S = 20
TOOLKIT_DEFAULT = "/usr/local/Ascend/ascend-toolkit"
INFO_BYTES = 1 << 20  # an install-info file is a few lines


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
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(lines[-1]), ""
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


def check_torch_npu(spec: dict, env: dict[str, str]) -> dict:
    dpn = spec["devices_per_node"]
    pin = spec["stack"].get("torch_npu") or spec["stack"].get("torch-npu")
    try:
        install = stack.install_hint("torch_npu", stack.parse_pin("torch_npu", pin)) if pin else ""
    except ValueError:  # the `stack.torch_npu` row says what is wrong with the pin
        install = ""
    install = install or "pip install torch_npu (the release that matches torch)"
    if not importable("torch_npu", env):
        fix = (
            f"{install} in the environment Ray runs on this node, with CANN installed first; never into a CPU-only "
            "environment"
        )
        return row("torch_npu", FAIL, "torch_npu is not installed for this node's Python: no NPU can be used", fix)
    result, error = _probe(NPU_PROBE, env)
    if result is None:
        fix = (
            "source the CANN toolkit's set_env.sh before `ray start`, and install matching torch and torch_npu versions"
        )
        return row("torch_npu", FAIL, f"`import torch_npu` fails: {error}", fix)
    count = result["count"]
    detail = f"torch {result['torch']}, torch_npu {result['torch_npu']}: {count} NPU(s) visible"
    if count < dpn:
        return row(
            "torch_npu",
            FAIL,
            f"{detail}, the recipe uses {dpn} per node",
            f"check `npu-smi info` and ASCEND_RT_VISIBLE_DEVICES on this node, or set cluster.devices_per_node={count}"
            if count
            else "check the driver (`npu-smi info`), CANN's set_env.sh and ASCEND_RT_VISIBLE_DEVICES",
        )
    return row("torch_npu", OK, detail + (f" ({result['name']})" if result.get("name") else ""))


def check_cuda(spec: dict, env: dict[str, str]) -> dict:
    dpn = spec["devices_per_node"]
    if not importable("torch", env):
        fix = "pip install torch (a CUDA build) in the environment Ray runs on this node"
        return row("cuda", FAIL, "torch is not installed for this node's Python", fix)
    result, error = _probe(CUDA_PROBE, env)
    if result is None:
        return row("cuda", FAIL, f"`import torch` fails: {error}", "repair the torch install on this node")
    count = result["count"]
    detail = f"torch {result['torch']} (CUDA {result['cuda'] or 'none: a CPU build'}): {count} GPU(s) visible"
    if count < dpn:
        return row(
            "cuda",
            FAIL,
            f"{detail}, the recipe uses {dpn} per node",
            "install a CUDA build of torch and the NVIDIA driver (check `nvidia-smi`), check CUDA_VISIBLE_DEVICES"
            if not count
            else f"check `nvidia-smi` and CUDA_VISIBLE_DEVICES, or set cluster.devices_per_node={count}",
        )
    return row("cuda", OK, detail + (f" ({result['name']})" if result.get("name") else ""))


def toolkit_roots(env: dict[str, str]) -> list[str]:
    roots = [env.get("ASCEND_TOOLKIT_HOME"), env.get("ASCEND_HOME_PATH"), TOOLKIT_DEFAULT]
    return list(dict.fromkeys(r for r in roots if r))


def cann_version(env: dict[str, str]) -> tuple[str | None, str]:
    """(version, the install-info file) from `<toolkit>/latest/*/ascend_toolkit_install.info` or near it."""
    for root in toolkit_roots(env):
        for pattern in ("latest/*/", "*/", ""):
            for path in sorted(glob.glob(os.path.join(root, pattern + "ascend_toolkit_install.info"))):
                version = read_install_info(path).get("version")
                if version:
                    return version, path
    return None, ""


def read_install_info(path: str) -> dict[str, str]:
    """`key=value` lines of a toolkit's install-info file ({} when it is not a readable regular file)."""
    try:
        text = read_text(path, INFO_BYTES, errors="replace")
    except OSError:
        return {}
    pairs = (line.partition("=") for line in text.splitlines())
    return {key.strip(): value.strip() for key, sep, value in pairs if sep}


def check_cann(spec: dict, env: dict[str, str]) -> dict:
    pin = spec["stack"].get("cann")
    try:
        parsed = stack.parse_pin("cann", pin) if pin else None
    except ValueError as exc:
        return row("cann", FAIL, f"cannot read the pin stack.cann={pin!r}: {exc}", "write a version such as 8.5.0")
    version, path = cann_version(env)
    if version is None:
        where = ", ".join(toolkit_roots(env))
        fix = (
            f"install the CANN toolkit{' ' + pin if pin else ''} and `source <toolkit>/set_env.sh` before `ray start` "
            "on this node (or set ASCEND_TOOLKIT_HOME)"
        )
        return row("cann", FAIL, f"no CANN toolkit found (no ascend_toolkit_install.info under {where})", fix)
    if not pin:
        return row("cann", OK, f"CANN {version} ({path}); the recipe pins no version (stack.cann)")
    pin_version = parsed.version or parsed.ref
    order = stack.compare_versions(version, pin_version)
    if order is None and version != pin_version:
        fix = f"install CANN {pin_version}, or pin stack.cann to {version} after testing"
        return row("cann", WARN, f"CANN {version} ({path}); the recipe pins {pin}: cannot order the two", fix)
    if order is not None and order < 0:
        fix = f"install CANN {pin_version} or newer on this node and source its set_env.sh before `ray start`"
        return row("cann", FAIL, f"CANN {version} is older than the recipe's {pin_version} ({path})", fix)
    if order is not None and order > 0:
        fix = f"test the recipe on {version} and update stack.cann, or install {pin_version}"
        return row(
            "cann", WARN, f"CANN {version} is newer than the {pin_version} the recipe was tuned for ({path})", fix
        )
    return row("cann", OK, f"CANN {version} matches stack.cann ({path})")


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
        fix = "install the Ascend driver (it ships npu-smi) and put it on PATH"
        return row("npu-smi", SKIP, "npu-smi is not on PATH: the chip is not identified", fix)
    try:
        proc = subprocess.run([exe, "info"], env=env, capture_output=True, text=True, timeout=NPU_SMI_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        fix = "check the Ascend driver on this node (dmesg, `npu-smi info`)"
        return row("npu-smi", FAIL, f"`npu-smi info` did not answer in {NPU_SMI_TIMEOUT_S} s", fix)
    except OSError as exc:
        return row("npu-smi", FAIL, f"`npu-smi info` cannot run: {exc}", "reinstall the Ascend driver")
    chip, count = parse_npu_smi(proc.stdout)
    if proc.returncode != 0 or chip is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        fix = "check the Ascend driver and firmware on this node"
        return row("npu-smi", FAIL, f"`npu-smi info` lists no NPU: {tail[0][:200]}", fix)
    return row("npu-smi", OK, f"chip {chip}: {count} NPU(s) in `npu-smi info` (A3 cards hold 2 dies each)")


def check_devices(spec: dict, env: dict[str, str]) -> list[dict]:
    device = spec["device"]
    if device == "cpu":
        said = f"cluster.device is cpu (train.engine {spec['engine']}): no accelerator runtime to check"
        return [row("device", SKIP, said)]
    if device == "npu":
        return [
            check_torch_npu(spec, env),
            check_cann(spec, env),
            check_npu_smi(spec, env),
            row("cuda", SKIP, "cluster.device is npu: GPU checks do not apply"),
        ]
    return [
        check_cuda(spec, env),
        row("ascend", SKIP, "cluster.device is cuda: NPU checks (torch_npu, CANN, npu-smi) do not apply"),
    ]
