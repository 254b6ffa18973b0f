"""Which call of a script starts verl, and with what: `launch_in(tool, argv, files)` reads a recorded call
(`python3 -m MODULE`, a `main_*.py` path, `torchrun`, `uv run ... python3`, `conda|pixi|... run`, `srun|mpirun ...`,
`ray job submit [options] -- ...`) and gives the entry module, the arguments after it and Ray's submission settings
(--address, --runtime-env(-json), --working-dir). MODULE is verl.trainer.main_ppo or another entry point (ENTRY).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from grpolab.problems import InputError
from grpolab.recipe.yamlio import parse_yaml

WRAPPERS = ("srun", "mpirun", "mpiexec")  # cluster launchers: `srun [options] python3 -m ...`
RUNNERS = ("uv", "conda", "mamba", "micromamba", "pixi", "poetry", "pdm", "pipenv", "hatch")  # `X run ... CMD`
LAUNCHERS = (
    "python",
    "python3",
    *(f"python3.{minor}" for minor in range(9, 14)),
    *"torchrun ray accelerate deepspeed".split(),
    *RUNNERS,
    *WRAPPERS,
)
MAIN = "verl.trainer.main_ppo"
# verl's PPO entry, a recipe's (recipe.dapo.main_dapo), a fork's own beside main_ppo (verl.trainer.main_dapo), and the
# experimental trainers: not verl's generation, evaluation or SFT entry points
ENTRY = re.compile(
    r"^(verl\.trainer\.main_(?!generation|eval)\w+|recipe\.[\w.]+\.\w*main\w*|verl\.(experimental|recipe)\.[\w.]*main\w*)$"
)


class ImportFailed(InputError):
    """The script cannot be imported (not a shell script, no launch line, failed before launching): exit 2."""


def _python_entry(argv: list[str]) -> tuple[str, list[str]] | None:
    """`python [options] -m MODULE args` or `python [options] path/main_x.py args` -> (module, args)."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-m" and i + 1 < len(argv):
            return argv[i + 1], argv[i + 2 :]
        if a.startswith("-m") and len(a) > 2:
            return a[2:], argv[i + 1 :]
        if a in ("-W", "-X", "--check-hash-based-pycs"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return _module_of(a), argv[i + 1 :]
    return None


def _module_of(script: str) -> str:
    """path/to/verl/trainer/main_ppo.py -> verl.trainer.main_ppo; recipe/dapo/main_dapo.py -> recipe.dapo.main_dapo."""
    parts = Path(script).with_suffix("").parts
    for anchor in ("recipe", "verl"):
        if anchor in parts:
            return ".".join(parts[len(parts) - 1 - parts[::-1].index(anchor) :])
    return script


def _torchrun_entry(argv: list[str]) -> tuple[str, list[str]] | None:
    for i, a in enumerate(argv):
        if a in ("-m", "--module") and i + 1 < len(argv):
            return argv[i + 1], argv[i + 2 :]
        if a.endswith(".py"):
            return _module_of(a), argv[i + 1 :]
    return None


_RUNNER_VALUE = {"-n", "--name", "-p", "--prefix", "--cwd", "-e", "--environment", "--env", "--manifest-path"}


def _runner_entry(argv: list[str]) -> tuple[str, list[str]] | None:
    """`conda|mamba|micromamba|pixi|poetry|pdm|pipenv|hatch run [options] COMMAND ARGS` -> COMMAND's launch."""
    if argv[:1] != ["run"]:
        return None
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in _RUNNER_VALUE else 1
    if i >= len(argv):
        return None
    found = module_call(argv[i], argv[i + 1 :], {})
    return found[:2] if found else None


def _uv_entry(argv: list[str]) -> tuple[str, list[str]] | None:
    for i, a in enumerate(argv):
        if re.fullmatch(r"python[\d.]*", Path(a).name):
            return _python_entry(argv[i + 1 :])
        if a == "torchrun":
            return _torchrun_entry(argv[i + 1 :])
        if a in ("-m", "--module") and i + 1 < len(argv) and argv[:1] == ["run"]:
            return argv[i + 1], argv[i + 2 :]
    return None


def _ray_entry(argv: list[str], files: dict) -> tuple[str, list[str], dict] | None:
    """`ray job submit [options] -- COMMAND` -> (module, args, {address, runtime_env})."""
    if argv[:2] != ["job", "submit"] or "--" not in argv:
        return None
    cut = argv.index("--")
    options, command = argv[2:cut], argv[cut + 1 :]
    settings: dict[str, Any] = {}
    runtime: dict[str, Any] = {}
    i = 0
    while i < len(options):
        name, _, value = options[i].partition("=")
        if (
            not _
            and name in ("--address", "--runtime-env", "--runtime-env-json", "--working-dir")
            and i + 1 < len(options)
        ):
            value, i = options[i + 1], i + 1
        if name == "--address":
            settings["address"] = value
        elif name == "--runtime-env-json":
            runtime.update(_object(value, "--runtime-env-json", yaml_text=False))
        elif name == "--runtime-env":
            text = files.get(value)
            if text is None:  # a file of the script's own checkout, not on this machine
                settings.setdefault("unread", []).append(value)
            else:
                runtime.update(_object(text, f"--runtime-env {value}", yaml_text=True))
        elif name == "--working-dir":
            runtime["working_dir"] = value
        i += 1
    found = module_call(command[0], command[1:], files) if command else None
    if not found:
        return None
    settings["runtime_env"] = runtime
    return found[0], found[1], settings


def _object(text: str, where: str, yaml_text: bool) -> dict:
    """A `--runtime-env-json` value (JSON) or a `--runtime-env` file's text (YAML) that must hold a mapping."""
    errors = (yaml.YAMLError, InputError) if yaml_text else (ValueError,)
    try:
        value = parse_yaml(text, where) if yaml_text else json.loads(text)
    except errors as exc:
        raise ImportFailed(f"ray job submit {where}: not {'YAML' if yaml_text else 'JSON'} ({exc})") from None
    if not isinstance(value, dict):
        raise ImportFailed(f"ray job submit {where}: not {'a mapping' if yaml_text else 'a JSON object'}")
    return value


def launch_in(tool: str, argv: list[str], files: dict) -> tuple[str, list[str], dict] | None:
    """(module, args after it, Ray settings) when this call starts a verl entry point, else None."""
    found = module_call(tool, argv, files)
    return found if found is not None and ENTRY.match(found[0]) else None


def module_call(tool: str, argv: list[str], files: dict) -> tuple[str, list[str], dict] | None:
    """(module, args after it, Ray settings) when this call starts a Python module (any: verl's entry points and a
    third-party trainer's), directly or through torchrun, uv, a runner, a wrapper or `ray job submit`; else None."""
    name = Path(tool).name
    ray: dict = {}
    if re.fullmatch(r"python[\d.]*", name):
        found = _python_entry(argv)
    elif name == "torchrun":
        found = _torchrun_entry(argv)
    elif name == "uv":
        found = _uv_entry(argv)
    elif name in RUNNERS:
        found = _runner_entry(argv)
    elif name in WRAPPERS:  # the first argument that is a launcher starts the command
        at = next((i for i, a in enumerate(argv) if Path(a).name in LAUNCHERS and Path(a).name not in WRAPPERS), None)
        inner = module_call(argv[at], argv[at + 1 :], files) if at is not None else None
        found = inner[:2] if inner else None
    elif name == "ray":
        submitted = _ray_entry(argv, files)
        found, ray = (submitted[:2], submitted[2]) if submitted else (None, {})
    else:
        found = None
    if not found:
        return None
    return found[0], found[1], ray
