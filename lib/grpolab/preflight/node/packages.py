"""The Python packages as the job will import them on this node: every `stack` pin against what is installed
(parsed by grpolab.recipe.stack, the one pin parser), the packages the engines need whether pinned or not, and
pairs that must come from one release line (torch / torch_npu, vllm / vllm-ascend). Metadata only: nothing
is imported.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

from grpolab.preflight.node.rows import FAIL, OK, SKIP, row
from grpolab.recipe import stack


def job_paths(env: dict[str, str]) -> list[str]:
    """The job's PYTHONPATH entries this worker does not already search."""
    return [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]


def importable(name: str, env: dict[str, str]) -> bool:
    """Is a module importable by the job? (this worker's path plus the job's PYTHONPATH); never imports it."""
    if importlib.util.find_spec(name) is not None:
        return True
    return any((Path(p) / name).is_dir() or (Path(p) / f"{name}.py").is_file() for p in job_paths(env))


def installed(package: str, env: dict[str, str]) -> tuple[str | None, str | None]:
    """(version, commit) as the job sees it: this worker's sys.path plus the job's PYTHONPATH; metadata only."""
    return stack.installed(package, job_paths(env))


def check_stack(spec: dict, env: dict[str, str]) -> list[dict]:
    """Every `stack` pin against the installed version, then packages the engines need but the recipe does not pin."""
    rows = []
    for package, text in spec["stack"].items():
        check = f"stack.{package}"
        if package in stack.NOT_PACKAGES:
            if spec["device"] != "npu":
                rows.append(row(check, SKIP, f"{package} applies to NPU nodes; cluster.device is {spec['device']}"))
            continue  # cann: compared by the `cann` row from the toolkit's install info
        try:
            pin = stack.parse_pin(package, text)
        except ValueError as exc:
            fix = "write a version (0.23.0), version@commit or branch@commit"
            rows.append(row(check, FAIL, f"cannot read the pin {text!r}: {exc}", fix))
            continue
        version, commit = installed(package, env)
        ok, explanation = stack.matches(pin, version, commit)
        if version is None:
            fix = stack.install_hint(package, pin) + " on every node"
            rows.append(row(check, FAIL, f"{package} is not installed (the recipe pins {text})", fix))
        elif not ok:
            fix = stack.install_hint(package, pin) + f" on every node, or re-tune and update stack.{package}"
            rows.append(row(check, FAIL, f"{package}: {explanation}; the recipe pins {text}", fix))
        else:
            rows.append(row(check, OK, f"{package}: {explanation or 'installed ' + version} (pin {text})"))
    pinned = {stack.normal_name(p) for p in spec["stack"]}
    for package, why in spec["required_packages"]:
        if stack.normal_name(package) in pinned:
            continue
        version, _ = installed(package, env)
        if version is None:
            fix = f"pip install {package} on every node (and pin it under stack: to record the version)"
            rows.append(row(f"stack.{package}", FAIL, f"{package} is not installed; {why}", fix))
        else:
            rows.append(row(f"stack.{package}", OK, f"{package} {version} installed ({why}; not pinned)"))
    rows += _rendered_for(spec, env)
    rows += _compat(spec, env)
    return rows


def _rendered_for(spec: dict, env: dict[str, str]) -> list[dict]:
    """The node's verl against the version the launch was rendered for: another version may read other keys
    (0.7.1's FSDP worker reads actor.ulysses_sequence_parallel_size, 0.9.1's fsdp_config's)."""
    target = spec.get("rendered_verl")
    if not target:
        return []
    version, _ = installed("verl", env)
    if version is None:
        return []  # the stack.verl row says it is missing
    if version == target:
        return [row("verl-rendered", OK, f"verl {version}: the version the launch is rendered for")]
    return [
        row(
            "verl-rendered",
            FAIL,
            f"this node runs verl {version}; the launch is rendered for verl {target}, whose keys it was written "
            "with (a version reads some settings from other keys, or from none)",
            f"install verl=={target} on every node, or render and check on a machine with verl {version}",
        )
    ]


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
        said = f"torch_npu {npu_v} is built for torch {_base(npu_v)}, but torch {torch_v} is installed"
        fix = f"install torch=={_base(npu_v)} (or the torch_npu release for torch {_base(torch_v)})"
        rows.append(row("compat.torch_npu", FAIL, said, fix))
    vllm_v, _ = installed("vllm", env)
    asc_v, _ = installed("vllm-ascend", env)
    if vllm_v and asc_v and _base(vllm_v).split(".")[:2] != _base(asc_v).split(".")[:2]:
        fix = "install vllm and vllm-ascend of the same release (e.g. both 0.23.x)"
        rows.append(
            row("compat.vllm-ascend", FAIL, f"vllm-ascend {asc_v} and vllm {vllm_v} are different release lines", fix)
        )
    return rows
