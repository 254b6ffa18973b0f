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
`source` of a missing file is skipped. Which call is the verl launch: grpolab.importer.launch_line. Variables the
script read while unset in the caller's environment are listed (grpolab.importer.variables: the names it reads are
tested once, at its launch, so the time stays linear in its variables). What the script leaves in the scratch
folder is read back safely and what it removed of its own folders is said (grpolab.importer.scratch); an emptied
PATH is unusable input.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpolab import owned
from grpolab.importer import sandbox, scratch
from grpolab.importer.launch_line import LAUNCHERS, MAIN, RUNNERS, ImportFailed, launch_in, module_call
from grpolab.importer.sandbox_cover import hidden_python, interpreters
from grpolab.importer.variables import exported_env, read_names, unset_reads
from grpolab.recipe.engines import FSDP
from grpolab.verl.config import base_config, verl_version

COW_MB = 256  # what a script may write outside the scratch folder, in MiB (sandbox_init's cap)
DEVICE_TOOLS = {"npu": "npu-smi", "cuda": "nvidia-smi"}
# no-ops everywhere: they download, install, wait, or act on processes and services
QUIET = tuple(
    "sleep wget curl git ssh scp rsync pip pip3 huggingface-cli hf modelscope sudo docker systemctl ulimit module "
    "kill pkill killall".split()
)
TRUSTED_QUIET = ("rm", "cp", "mv", "ln", "touch", "chmod", "chown", "tar")  # without isolation: files stay as they are
TIMEOUT_S = 60
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
os.makedirs(calls, exist_ok=True)  # the script may have deleted it (an `rm -rf` that resolved there): still recorded
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
_grpolab_vars() {
  [ -e "$GRPOLAB_IMPORT_CALLS/.launched" ] && return 0
  [ "${1:-}" = -c ] && return 0
  case " $* " in *main_generation*|*main_eval*) return 0 ;; *main_*|*recipe.*|*verl.*main*|*"job submit"*) ;; *) return 0 ;; esac
  local - _grpolab_n
  set +x  # restored on return (local -): a traced script's log is not filled with this loop
  { while IFS= read -r _grpolab_n; do [[ -v $_grpolab_n ]] && printf '%s\n' "$_grpolab_n"; done < "$GRPOLAB_IMPORT_NAMES"
  } > "$GRPOLAB_IMPORT_CALLS/vars-${EPOCHREALTIME/./}000-$BASHPID" 2>/dev/null
  : > "$GRPOLAB_IMPORT_CALLS/.launched" 2>/dev/null
  return 0
}
"""
# isolated, `rm` runs for real (inside the copy-on-write root): each call is logged, so that an import that stops
# early can say what the script removed (an `rm -rf ${ROOT}/${NAME}` with both unset reaches the scratch folder)
RM_LOG = r"""
rm() {
  command rm "$@"
  local _grpolab_rc=$?
  command mkdir -p "$GRPOLAB_IMPORT_CALLS" 2>/dev/null
  printf '%s\0' "$PWD" "$#" "$@" >> "$GRPOLAB_IMPORT_CALLS/rm.log" 2>/dev/null
  return $_grpolab_rc
}
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
    cwd: str = ""  # the folder the launch ran from (where `python3 -m MODULE` finds MODULE's package)


# ---------------------------------------------------------------------------------------------- the script


def check_script(path: Path, bash: str = "/bin/bash") -> str:
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
    syntax = subprocess.run([bash, "-n", str(path)], capture_output=True, text=True, timeout=30)
    if syntax.returncode:
        raise ImportFailed(f"{path}: not a valid bash script: {syntax.stderr.strip()}")
    return text


def _shim(shim: Path, python: str, recorder: Path, tool: str = '"$0"') -> None:
    """A launcher's stand-in: the recorder, under the tool's name (`"$0"`: the name it was reached by)."""
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(python)} -I {shlex.quote(str(recorder))} {tool} "$@"\n')
    shim.chmod(0o755)


def _bash(caller: dict[str, str]) -> str:
    """The bash that runs the script: the caller's (PATH), else the system's; ImportFailed when there is none (an
    emptied PATH still finds /bin/bash)."""
    found = shutil.which("bash", path=caller.get("PATH") or None) or next(
        (b for b in ("/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash") if os.access(b, os.X_OK)), None
    )
    if found is None:
        raise ImportFailed(
            "no bash on this machine (PATH and /bin, /usr/bin): `grpolab import` runs the script with bash"
        )
    return found


def record(
    script: str | Path, device: str = "npu", env: dict[str, str] | None = None, trusted: bool = False, devices: int = 8
) -> Recorded:
    """Run `script` with the launchers recorded (see the module docstring); its verl launch. ImportFailed otherwise.

    `env` is the caller's environment (default: this process's). Without `trusted`, ImportFailed when this machine
    cannot isolate the script."""
    path = Path(script).expanduser()
    caller = dict(os.environ if env is None else env)
    if "PATH" in caller and not any(os.path.isdir(d) for d in caller["PATH"].split(":") if d):
        raise ImportFailed(
            f"{path}: your PATH is {caller['PATH']!r}: the script would find none of its commands (dirname, seq, "
            "python3, ...) and run with values it does not mean; set PATH (e.g. PATH=/usr/local/bin:/usr/bin:/bin) "
            "and import again"
        )
    bash = _bash(caller)
    text = check_script(path, bash)
    root = owned.temp_folder("grpolab-import-").resolve()
    try:
        return _record(path, text, bash, root, caller, device, trusted, devices)
    finally:
        # however deep the script nested folders there, never following a link out; `tools` is proof the folder is ours
        # even when the script removed the marker (the isolation mounts it read-only, so it cannot remove that)
        owned.remove_tree(root, proof="tools")


def _record(
    path: Path, text: str, bash: str, root: Path, caller: dict, device: str, trusted: bool, devices: int
) -> Recorded:
    tools_dir, calls, home, work = root / "tools", root / "calls", root / "home", root / "work"
    bin_dir = tools_dir / "bin"
    for folder in (tools_dir, bin_dir, calls, home, work):
        folder.mkdir()
    for folder in (calls, home, work):  # gone after the run: the script removed the folder
        (folder / scratch.SENTINEL).touch()
    python, keep = (sys.executable, None) if trusted else hidden_python()
    recorder = tools_dir / "recorder.py"
    settings = (str(calls), device, devices, verl_version() or "0.0.0")
    recorder.write_text(f"SETTINGS = {settings!r}\nRUNNERS = {RUNNERS!r}\n" + RECORDER)
    names = tools_dir / "names"  # the variables the script reads: which of them are set is noted at its launch
    names.write_text("".join(n + "\n" for n in read_names(text, caller)))
    tools = [*LAUNCHERS, DEVICE_TOOLS[device]]
    other = DEVICE_TOOLS["cuda" if device == "npu" else "npu"]
    if shutil.which(other, path=caller.get("PATH") or None):
        tools.append(other)  # the real one is installed here: it answers "not found" for the device asked
    for tool in tools:
        _shim(bin_dir / tool, python, recorder, tool)
    cover = tools_dir / "cover"
    _shim(cover, python, recorder)
    hide = [] if trusted else [[str(cover), f] for f in interpreters(caller, text, os.getcwd()) if f != python]
    prelude = tools_dir / "prelude.sh"
    quiet = QUIET + (TRUSTED_QUIET if trusted else ())
    prelude.write_text(
        (PRELUDE + ("" if trusted else RM_LOG))
        .replace("$GRPOLAB_IMPORT_CALLS", str(calls))
        .replace("$GRPOLAB_IMPORT_NAMES", str(names))
        + (TRUSTED_PRELUDE if trusted else "")
        + "".join(f"{c}() {{ return 0; }}\n" for c in quiet)
        # a launcher by name is the recorder whatever PATH the script set
        + "".join(f'{t}() {{ _grpolab_vars "$@"; {shlex.quote(str(bin_dir / t))} "$@"; }}\n' for t in LAUNCHERS)
    )
    run_env = {
        **caller,
        "PATH": f"{bin_dir}:{caller.get('PATH') or '/usr/bin:/bin'}",
        "BASH_ENV": str(prelude),
        "GRPOLAB_IMPORT_ROOT": str(root),
    }
    if trusted:
        run_env.update({"HOME": str(home), "TMPDIR": str(root)})
    argv = [bash, str(path.resolve())]
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
    records = [r for r in map(scratch.call_record, scratch.entries(calls, suffix=".json")) if r is not None]
    dumps = sorted(
        (_stamp(p.name), set((scratch.read_text(p, scratch.NAMES_MAX) or "").split()))
        for p in scratch.entries(calls, prefix="vars-")
    )
    removed = scratch.removals(calls, root, cwd, caller, path)
    real = {str(home): os.path.expanduser("~"), str(work): os.getcwd()} if trusted else {}

    def unscratch(value: str) -> str:
        for scratch_path, actual in real.items():
            value = value.replace(scratch_path, actual)
        return value

    notes = list(removed)
    if "No space left on device" in stderr:
        notes.insert(
            0,
            f"the script filled the import's {COW_MB} MiB scratch layer (what it writes outside its own folder is "
            "kept in memory and capped): writes after that failed; if the launch depends on them, import on a "
            "machine where the script's outputs are not needed, or trim the script",
        )
    launches = []
    for rec in records:
        called = [unscratch(a) for a in rec["argv"]]
        probe = re.fullmatch(r"python[\d.]*", rec["tool"]) and called[:1] in (["-c"], ["-"])  # not a launch
        found = None if probe else launch_in(rec["tool"], called, rec.get("files", {}))
        if found:
            launches.append((rec, found))
    missing = sorted(set(re.findall(r"([\w.+-]+): command not found", stderr)))
    if missing and not any(d in (caller.get("PATH") or "").split(":") for d in ("/bin", "/usr/bin", "/usr/local/bin")):
        raise ImportFailed(  # the script's own commands failed, so its values are not what it means
            f"{path}: the script ran with your PATH ({caller.get('PATH', '')!r}), which holds no system folder: "
            f"{', '.join(missing[:8])}: command not found; set PATH (e.g. PATH=/usr/local/bin:/usr/bin:/bin) "
            "and import again"
        )
    if not launches:
        raise _no_launch(path, code, stderr.replace(str(root), "<import scratch>"), records, notes)
    rec, (module, args, ray) = launches[0]
    exported = {k: unscratch(v) for k, v in exported_env(rec["env"], caller, text, root).items()}
    at_launch = next((names for t, names in reversed(dumps) if t <= rec.get("t", 0)), None)
    recorded = Recorded(
        rec["tool"],
        module,
        args,
        exported,
        stderr,
        ray,
        unset_reads(text, caller, at_launch),
        notes,
        unscratch(str(rec.get("cwd") or "")),
    )
    if len(launches) > 1:
        recorded.notes.append(f"the script launches verl {len(launches)} times; the first launch is imported")
    return recorded


def _no_launch(path: Path, code: int | None, stderr: str, records: list[dict], notes: list[str]) -> ImportFailed:
    """Why nothing was imported: the script's exit and what it did on the way (folders it removed), its last lines."""
    tail = "\n".join(stderr.strip().splitlines()[-5:])
    if "Argument list too long" in stderr:
        tail = (
            "the script's environment (or a command line) is larger than the kernel lets a program start with "
            "(Argument list too long): a launch after that could not start; export less (a variable of more "
            "than 128 KiB cannot be passed to any program)\n" + tail
        )
    if notes:
        tail = "\n".join(notes) + "\n" + tail
    other = _third_party(records)
    if other is not None:
        return ImportFailed(
            f"{path}: the script launches a third-party trainer module, `python3 -m {other}`: it takes verl's "
            "overrides but runs its own trainer, whose config and code GRPO Lab cannot see; GRPO Lab imports only "
            f"verl's entry points ({MAIN}, verl's experimental trainers, a verl recipe's entry point), so nothing was "
            "imported"
        )
    if code not in (0, None):
        needs = sorted(set(re.findall(r"([A-Za-z_]\w*): unbound variable", stderr)))
        hint = f"; it needs ${', $'.join(needs)}: set it in your environment and import again" if needs else ""
        return ImportFailed(f"{path}: the script exited with status {code} before launching verl{hint}:\n{tail}")
    ran = [
        " ".join([r["tool"], *r["argv"]])[:120]
        for r in records
        if r["tool"] in LAUNCHERS and r["argv"][:1] not in (["-c"], ["-"])
    ]
    return ImportFailed(
        f"{path}: no launch line: the script never ran `python3 -m {MAIN}` or a recipe's entry point "
        "(`python3 -m recipe.NAME.main_NAME`), directly or through torchrun, uv run or ray job submit"
        + (f"; it ran: {'; '.join(ran[:3])}" if ran else "")
        + (f"\n{tail}" if tail else "")
    )


def _third_party(records: list[dict]) -> str | None:
    """The module of the first recorded call that starts a Python module other than verl's entry points with verl's
    overrides (`section.key=value`, a key under a top-level section of verl's own config): another
    project's trainer built on verl (rllm's), which import cannot compose. None when there is none."""
    sections = {key.split(".", 1)[0] for key in base_config(FSDP.name) or {}}
    for r in records:
        if r["tool"] not in LAUNCHERS:
            continue
        found = module_call(r["tool"], r["argv"], r.get("files", {}))
        if found is None or found[0].startswith("-") or found[0].split(".", 1)[0] in ("verl", "recipe"):
            continue  # verl's own other entry points (sft_trainer, main_generation): not a launch to import
        keys = [a.split("=", 1)[0].lstrip("+").split(".", 1)[0] for a in found[1] if "=" in a and "." in a]
        if any(k in sections for k in keys):
            return found[0]
    return None


def _stamp(name: str) -> int:
    """vars-<microseconds>000-<pid>: when the shell dumped its variables, in ns (0 when bash lacks EPOCHREALTIME)."""
    part = name.split("-")[1]
    return int(part) if part.isdigit() else 0
