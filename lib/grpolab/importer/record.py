"""Record the verl launch a bash script makes, without launching anything: `record(script) -> Recorded`.

The script runs with the caller's environment, with bash, and isolated by the operating system (grpolab.importer.sandbox:
every file outside a scratch folder stays as it was, no network); with `trusted=True` it runs without that
isolation, HOME and the working directory moved into the scratch folder. Either way the launchers (python, python3,
torchrun, uv, ray, conda/pixi/poetry/... run) and the device tool of the device asked (npu-smi or nvidia-smi) are a
recorder that writes down each call (argv, exported env, a `--runtime-env` file's text) and exits 0. Isolated, the
recorder stands at the exec boundary: every interpreter and launcher file of the machine (`interpreters`) is covered
by it inside the isolation, so a script that changes PATH, runs an absolute path, `exec`s, uses `env -i`, a venv's
python or a `#!/usr/bin/env python3` file still reaches the recorder, never a real interpreter; what the script
writes outside the scratch folder is capped (COW_MB) and the import says when it hit the cap. Device probes
are answered for that device (`python3 -c 'import torch_npu'` fails for cuda; `torch.cuda.device_count()` answers);
commands that download, install, wait or change the machine (pip, git, wget, sleep, kill, ...) do nothing; a
`source` of a missing file is skipped. The verl launch is found through `python3 -m MODULE`, a `main_*.py` path,
`torchrun`, `uv run ... python3` and `ray job submit ... -- ...` (whose --address, --runtime-env(-json) and
--working-dir are kept); MODULE is verl.trainer.main_ppo or a recipe's entry point (`recipe.dapo.main_dapo`).
Variables the script read while unset in the caller's environment are listed.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from grpolab import owned
from grpolab.importer import sandbox
from grpolab.importer.sandbox_cover import hidden_python, interpreters
from grpolab.problems import InputError
from grpolab.recipe.yamlio import parse_yaml
from grpolab.verl.config import verl_version

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
COW_MB = 256  # what a script may write outside the scratch folder, in MiB (sandbox_init's cap)
DEVICE_TOOLS = {"npu": "npu-smi", "cuda": "nvidia-smi"}
# no-ops everywhere: they download, install, wait, or act on processes and services
QUIET = tuple(
    "sleep wget curl git ssh scp rsync pip pip3 huggingface-cli hf modelscope sudo docker systemctl ulimit module "
    "kill pkill killall".split()
)
TRUSTED_QUIET = ("rm", "cp", "mv", "ln", "touch", "chmod", "chown", "tar")  # without isolation: files stay as they are
TIMEOUT_S = 60
MAIN = "verl.trainer.main_ppo"
# verl's PPO entry, a recipe's (recipe.dapo.main_dapo), a fork's own beside main_ppo (verl.trainer.main_dapo), and the
# experimental trainers: not verl's generation, evaluation or SFT entry points
ENTRY = re.compile(
    r"^(verl\.trainer\.main_(?!generation|eval)\w+|recipe\.[\w.]+\.main_\w+|verl\.(experimental|recipe)\.[\w.]*main\w*)$"
)
# env the shell itself sets or that only points into the scratch folder: never part of a recipe
SHELL_ENV = {"PATH", "PWD", "OLDPWD", "SHLVL", "_", "BASH_ENV", "LINES", "COLUMNS", "PS4"}
BASH_VARS = {
    *SHELL_ENV,
    *"BASH BASHOPTS BASHPID BASH_ALIASES BASH_ARGC BASH_ARGV BASH_ARGV0 BASH_CMDS BASH_COMMAND BASH_LINENO "
    "BASH_SOURCE BASH_SUBSHELL BASH_VERSINFO BASH_VERSION DIRSTACK EPOCHREALTIME EPOCHSECONDS EUID FUNCNAME "
    "GROUPS HISTCMD HOSTNAME HOSTTYPE IFS LINENO MACHTYPE OPTARG OPTERR OPTIND OSTYPE PIPESTATUS PPID PS1 PS2 "
    "RANDOM REPLY SECONDS SHELL SHELLOPTS SRANDOM UID HOME TMPDIR USER LOGNAME".split(),
}

RECORDER = r"""
import json, os, sys, time, types
tool, argv = os.path.basename(sys.argv[1]), sys.argv[2:]
calls, device, count, release = SETTINGS  # written in: a script that clears its environment is still recorded
files = {}
for i, a in enumerate(argv):
    path = a.split("=", 1)[1] if a.startswith("--runtime-env=") else (argv[i + 1] if a == "--runtime-env" and i + 1 < len(argv) else None)
    if path:
        try:  # a regular file only: a FIFO would block the recorder
            if not os.path.isfile(path):
                raise OSError(path)
            with open(path) as fh:
                files[path] = fh.read(1 << 20)
        except (OSError, UnicodeDecodeError) as exc:
            files[path] = None
env = {k: v for k, v in os.environ.items() if not k.startswith("GRPOLAB_IMPORT_")}
tmp = os.path.join(calls, ".%d-%d" % (time.time_ns(), os.getpid()))
with open(tmp, "w") as fh:
    json.dump({"tool": tool, "argv": argv, "env": env, "cwd": os.getcwd(), "files": files, "t": time.time_ns()}, fh)
os.rename(tmp, os.path.join(calls, "%d-%d.json" % (time.time_ns(), os.getpid())))
names = {"npu": "Ascend910B3", "cuda": "NVIDIA H100 80GB HBM3"}
if tool in ("npu-smi", "nvidia-smi"):
    if tool != {"npu": "npu-smi", "cuda": "nvidia-smi"}.get(device):
        sys.stderr.write(tool + ": command not found\n")
        sys.exit(127)
    if tool == "nvidia-smi" and any(a.startswith("--query") for a in argv):
        print("\n".join("%d, %s, 81559 MiB" % (i, names[device]) for i in range(count)))
    elif tool == "nvidia-smi" and "-L" in argv:
        print("\n".join("GPU %d: %s (UUID: GPU-0000%d)" % (i, names[device], i) for i in range(count)))
    else:
        print(tool.upper() + " (grpolab import: %d x %s)" % (count, names[device]))
        print("\n".join("| %d  %s  | OK |" % (i, names[device]) for i in range(count)))
    sys.exit(0)
if tool in RUNNERS:  # uv run [options] python3 ARGS: a probe through a runner is a probe
    at = next((i for i, a in enumerate(argv) if os.path.basename(a).startswith("python")), None)
    if at is not None:
        tool, argv = "python3", argv[at + 1:]
code = argv[1] if argv[:1] == ["-c"] and len(argv) > 1 else (sys.stdin.read() if argv[:1] == ["-"] else None)
if tool.startswith("python") and code is not None:
    torch = types.ModuleType("torch")
    torch.__version__ = "2.10.0"
    def accel(kind):
        on = device == kind
        return types.SimpleNamespace(is_available=lambda: on, device_count=lambda: count if on else 0,
                                     get_device_name=lambda i=0: names[kind], current_device=lambda: 0)
    torch.cuda = accel("cuda")
    if device == "npu":
        torch.npu = accel("npu")
        torch_npu = types.ModuleType("torch_npu")
        torch_npu.__version__ = "2.10.0"
        torch_npu.npu = torch.npu
        sys.modules["torch_npu"] = torch_npu
    else:
        sys.modules["torch_npu"] = None
    sys.modules["torch"] = torch
    verl = types.ModuleType("verl")
    verl.__version__, verl.__path__ = release, []
    utils = types.ModuleType("verl.utils")
    utils.__path__ = []
    dev = types.ModuleType("verl.utils.device")
    dev.get_device_name = lambda: device
    dev.is_cuda_available, dev.is_npu_available = device == "cuda", device == "npu"
    verl.utils, utils.device = utils, dev
    sys.modules.update({"verl": verl, "verl.utils": utils, "verl.utils.device": dev})
    sys.argv = ["-c", *argv[2:]] if argv[:1] == ["-c"] else ["-", *argv[1:]]
    exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
sys.exit(0)
"""

PRELUDE = r"""
source() { if [ -e "$1" ]; then builtin source "$@"; else echo "grpolab import: skipped a missing file: $1" >&2; fi; }
.() { source "$@"; }
cd() { builtin cd "$@" 2>/dev/null || return 0; }
nohup() { "$@"; }
_grpolab_vars() { compgen -v > "$GRPOLAB_IMPORT_CALLS/vars-${EPOCHREALTIME/./}000-$BASHPID" 2>/dev/null || true; }
"""
TRUSTED_PRELUDE = r"""
mkdir() {
  local a
  for a in "$@"; do
    case "$a" in
      -*) ;;
      /*) case "$a" in "$GRPOLAB_IMPORT_ROOT"/*) command mkdir -p "$a" ;; esac ;;
      *) command mkdir -p "$a" ;;
    esac
  done
  return 0
}
tee() { cat; }
"""


class ImportFailed(InputError):
    """The script cannot be imported (not a shell script, no launch line, failed before launching): exit 2."""


@dataclass
class Recorded:
    """The verl launch a script makes: its entry module, the arguments after it, the env the script exported, Ray's
    submission settings, the variables it read unset, and notes."""

    tool: str
    module: str
    argv: list[str]
    env: dict[str, str]
    stderr: str = ""
    ray: dict[str, Any] = field(default_factory=dict)  # address, runtime_env (working_dir included)
    unset: list[dict] = field(default_factory=list)  # {name, default}: read while unset in the caller's environment
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- the script


def check_script(path: Path) -> str:
    """The script's text; ImportFailed for a file that is not a readable bash script."""
    if not path.is_file():
        raise ImportFailed(f"no script {str(path)!r}")
    try:
        with open(path, encoding="utf-8", newline="") as fh:  # newline="": a CR stays as bash sees it
            text = fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFailed(f"{path}: not a readable text file ({exc}); give a bash launch script") from None
    if "\x00" in text:
        raise ImportFailed(f"{path}: a binary file, not a shell script")
    if "\r" in text:
        lines = [n for n, line in enumerate(text.split("\n"), 1) if line.endswith("\r")]
        raise ImportFailed(
            f"{path}: Windows (CRLF) line ends on {len(lines)} line(s) (first: line {lines[0] if lines else '?'}): "
            "bash reads the CR as part of each line's last word, so a `\\` continuation ends the command there and "
            "the overrides after it are lost; convert it first (`sed -i 's/\\r$//' SCRIPT` or `dos2unix SCRIPT`), "
            "then import again"
        )
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    if first.startswith("#!") and not re.search(r"\b(ba|z|k)?sh\b", first):
        raise ImportFailed(f"{path}: not a shell script (its first line is {first!r})")
    syntax = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30)
    if syntax.returncode:
        raise ImportFailed(f"{path}: not a valid bash script: {syntax.stderr.strip()}")
    return text


def _shim(shim: Path, python: str, recorder: Path, tool: str = '"$0"') -> None:
    """A launcher's stand-in: the recorder, under the tool's name (`"$0"`: the name it was reached by)."""
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(python)} -I {shlex.quote(str(recorder))} {tool} "$@"\n')
    shim.chmod(0o755)


def record(
    script: str | Path, device: str = "npu", env: dict[str, str] | None = None, trusted: bool = False, devices: int = 8
) -> Recorded:
    """Run `script` with the launchers recorded (see the module docstring); its verl launch. ImportFailed otherwise.

    `env` is the caller's environment (default: this process's). Without `trusted`, ImportFailed when this machine
    cannot isolate the script."""
    path = Path(script).expanduser()
    text = check_script(path)
    caller = dict(os.environ if env is None else env)
    with owned.scratch("grpolab-import-") as tmp:
        root = Path(tmp).resolve()
        tools_dir, calls, home, work = root / "tools", root / "calls", root / "home", root / "work"
        bin_dir = tools_dir / "bin"
        for folder in (tools_dir, bin_dir, calls, home, work):
            folder.mkdir()
        python, keep = (sys.executable, None) if trusted else hidden_python()
        recorder = tools_dir / "recorder.py"
        settings = (str(calls), device, devices, verl_version() or "0.0.0")
        recorder.write_text(f"SETTINGS = {settings!r}\nRUNNERS = {RUNNERS!r}\n" + RECORDER)
        tools = [*LAUNCHERS, DEVICE_TOOLS[device]]
        other = DEVICE_TOOLS["cuda" if device == "npu" else "npu"]
        if shutil.which(other, path=caller.get("PATH")):
            tools.append(other)  # the real one is installed here: it answers "not found" for the device asked
        for tool in tools:
            _shim(bin_dir / tool, python, recorder, tool)
        cover = tools_dir / "cover"
        _shim(cover, python, recorder)
        hide = [] if trusted else [[str(cover), f] for f in interpreters(caller, text, os.getcwd()) if f != python]
        prelude = tools_dir / "prelude.sh"
        quiet = QUIET + (TRUSTED_QUIET if trusted else ())
        prelude.write_text(
            PRELUDE.replace("$GRPOLAB_IMPORT_CALLS", str(calls))
            + (TRUSTED_PRELUDE if trusted else "")
            + "".join(f"{c}() {{ return 0; }}\n" for c in quiet)
            # a launcher by name is the recorder whatever PATH the script set
            + "".join(f'{t}() {{ _grpolab_vars; {shlex.quote(str(bin_dir / t))} "$@"; }}\n' for t in LAUNCHERS)
        )
        run_env = {
            **caller,
            "PATH": f"{bin_dir}:{caller.get('PATH') or '/usr/bin:/bin'}",
            "BASH_ENV": str(prelude),
            "GRPOLAB_IMPORT_ROOT": str(root),
        }
        if trusted:
            run_env.update({"HOME": str(home), "TMPDIR": str(root)})
        argv = ["/bin/bash", str(path.resolve())]
        cwd = str(work) if trusted else os.getcwd()
        try:
            if trusted:
                proc = subprocess.run(
                    argv,
                    cwd=cwd,
                    env=run_env,
                    capture_output=True,
                    text=True,
                    timeout=TIMEOUT_S,
                    stdin=subprocess.DEVNULL,
                )
            else:
                proc = sandbox.run(
                    argv, run_env, root, cwd, TIMEOUT_S, cow_mb=COW_MB, keep=keep, hide=hide, read_only=[str(tools_dir)]
                )
            code, stderr = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired:
            code, stderr = None, f"(stopped after {TIMEOUT_S} s)"
        except RuntimeError as exc:
            raise ImportFailed(
                f"{path}: refusing to run the script: this machine cannot isolate it ({exc}); `grpolab import` runs "
                "a script where nothing outside a scratch folder can change, which needs Linux namespaces (util-linux "
                "`unshare`; as a user, unprivileged user namespaces). If you trust the script, pass --trusted to run "
                "it without isolation"
            ) from None
        records = [json.loads(p.read_text()) for p in sorted(calls.glob("*.json"))]
        dumps = sorted((_stamp(p.name), set(p.read_text().split())) for p in calls.glob("vars-*"))
    real = {str(home): os.path.expanduser("~"), str(work): os.getcwd()} if trusted else {}

    def unscratch(value: str) -> str:
        for scratch, actual in real.items():
            value = value.replace(scratch, actual)
        return value

    notes = []
    if "No space left on device" in stderr:
        notes.append(
            f"the script filled the import's {COW_MB} MiB scratch layer (what it writes outside its own folder is "
            "kept in memory and capped): writes after that failed; if the launch depends on them, import on a "
            "machine where the script's outputs are not needed, or trim the script"
        )
    launches = []
    for rec in records:
        called = [unscratch(a) for a in rec["argv"]]
        probe = re.fullmatch(r"python[\d.]*", rec["tool"]) and called[:1] in (["-c"], ["-"])  # not a launch
        found = None if probe else launch_in(rec["tool"], called, rec.get("files", {}))
        if found:
            launches.append((rec, found))
    if not launches:
        tail = "\n".join(stderr.strip().splitlines()[-5:])
        if "Argument list too long" in stderr:
            tail = (
                "the script's environment (or a command line) is larger than the kernel lets a program start with "
                "(Argument list too long): a launch after that could not start; export less (a variable of more "
                "than 128 KiB cannot be passed to any program)\n" + tail
            )
        if notes:
            tail = notes[0] + "\n" + tail
        if code not in (0, None):
            needs = sorted(set(re.findall(r"([A-Za-z_]\w*): unbound variable", stderr)))
            hint = f"; it needs ${', $'.join(needs)}: set it in your environment and import again" if needs else ""
            raise ImportFailed(f"{path}: the script exited with status {code} before launching verl{hint}:\n{tail}")
        ran = [
            " ".join([r["tool"], *r["argv"]])[:120]
            for r in records
            if r["tool"] in LAUNCHERS and r["argv"][:1] not in (["-c"], ["-"])
        ]
        raise ImportFailed(
            f"{path}: no launch line: the script never ran `python3 -m {MAIN}` or a recipe's entry point "
            "(`python3 -m recipe.NAME.main_NAME`), directly or through torchrun, uv run or ray job submit"
            + (f"; it ran: {'; '.join(ran[:3])}" if ran else "")
            + (f"\n{tail}" if tail else "")
        )
    rec, (module, args, ray) = launches[0]
    exported = {k: unscratch(v) for k, v in _exported(rec["env"], caller, text, root).items()}
    at_launch = next((names for t, names in reversed(dumps) if t <= rec.get("t", 0)), None)
    recorded = Recorded(rec["tool"], module, args, exported, stderr, ray, unset_reads(text, caller, at_launch), notes)
    if len(launches) > 1:
        recorded.notes.append(f"the script launches verl {len(launches)} times; the first launch is imported")
    return recorded


def _stamp(name: str) -> int:
    """vars-<microseconds>000-<pid>: when the shell dumped its variables, in ns (0 when bash lacks EPOCHREALTIME)."""
    part = name.split("-")[1]
    return int(part) if part.isdigit() else 0


def _exported(env: dict[str, str], caller: dict[str, str], text: str, root: Path) -> dict[str, str]:
    """What the script exports for the launch: a value it changed or added, and a caller's variable it re-exports."""
    named = set(re.findall(r"(?:^|[\s;(&|])export\s+([A-Za-z_]\w*)", text, re.M))
    named |= set(re.findall(r"(?:^|[\s;(&|])export\s+(?:[A-Za-z_]\w*=\S*\s+)*([A-Za-z_]\w*)", text, re.M))
    return {
        k: v
        for k, v in env.items()
        if k not in SHELL_ENV
        and k != "HOME"
        and not k.startswith("BASH_FUNC_")
        and str(root) not in v
        and (caller.get(k) != v or k in named)
    }


# ---------------------------------------------------------------------------------------------- launch lines


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
    found = launch_in(argv[i], argv[i + 1 :], {})
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
    found = launch_in(command[0], command[1:], files) if command else None
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
        inner = launch_in(argv[at], argv[at + 1 :], files) if at is not None else None
        found = inner[:2] if inner else None
    elif name == "ray":
        submitted = _ray_entry(argv, files)
        found, ray = (submitted[:2], submitted[2]) if submitted else (None, {})
    else:
        found = None
    if not found or not ENTRY.match(found[0]):
        return None
    return found[0], found[1], ray


# ---------------------------------------------------------------------------------------------- variables

_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(?:\}|(:?[-=?+])((?:[^{}]|\{[^{}]*\})*)\})?")


def _code(text: str) -> str:
    """The script without comments and single-quoted strings (where `$NAME` is not expanded)."""
    return "\n".join(re.sub(r"(^|\s)#.*$", "", re.sub(r"'[^']*'", "''", line)) for line in text.splitlines())


def unset_reads(text: str, caller: dict[str, str], at_launch: set[str] | None) -> list[dict]:
    """Variables the script read that the caller's environment does not set: {name, default} (default None: it
    expanded to nothing, or was set by the script only after the read)."""
    found: dict[str, dict] = {}
    for match in _REF.finditer(_code(text)):
        name, op, default = match.group(1), match.group(2), match.group(3)
        if name in caller or name in BASH_VARS:
            continue
        if op in ("-", ":-", "=", ":="):
            found.setdefault(name, {"name": name, "default": default})
        elif at_launch is not None and name not in at_launch and name not in found:
            found[name] = {"name": name, "default": None}
    return sorted(found.values(), key=lambda u: u["name"])
