"""What the import's isolation covers with its recorder: every interpreter and launcher file of this machine, and
where the recorder's own interpreter stays reachable (grpolab.importer.record runs scripts with them; grpolab.importer.sandbox
and sandbox_init do the covering).

A script reaches an interpreter by name (PATH, which it may change), by an absolute path, through `exec`, `env -i`,
a venv's link, a runner (`conda run`), or a `#!/usr/bin/env python3` line: all of them end at one of a few real files.
Covering those files inside the isolation puts the recorder at the exec boundary, whatever the script does.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import deque

from grpolab.importer import sandbox

# the files the recorder covers inside the isolation, wherever they are: interpreters, launchers, device tools
INTERPRETER = re.compile(
    r"^(python[\d.]*|pypy[\d.]*|torchrun|ray|accelerate|deepspeed|uvx?|conda|mamba|micromamba|pixi|poetry|pdm|"
    r"pipenv|hatch|pyenv|npu-smi|nvidia-smi|srun|mpirun|mpiexec)$"
)
WALK_S = 3.0  # the search for interpreters on this machine stops after this long (it takes well under 1 s)
# folders the search never enters: they hold libraries and data, not interpreters
WALK_SKIP = {
    "proc", "sys", "dev", "site-packages", "dist-packages", "node_modules", ".git", "__pycache__", "include",
    "share", "lib", "lib64", "lib32", "src", "pkgs", "man", "doc", "locale", "tests", ".cache",
}  # fmt: skip


def interpreters(caller: dict[str, str], text: str, cwd: str) -> list[str]:
    """Every file on this machine the recorder covers inside the isolation (INTERPRETER names: pythons, launchers,
    runners, device tools), as real paths: found in the caller's PATH, in the folders and paths the script names,
    and in every `bin` folder of the machine (a bounded walk: WALK_S). A venv's python is a link to one of them,
    so covering the real file covers every way of reaching it: a PATH the script changes, an absolute path, `exec`,
    `env -i`, a `#!/usr/bin/env python3` line."""
    found: set[str] = set()
    folders = [*(caller.get("PATH") or "").split(":"), *re.findall(r"(/[\w./+-]*/bin)\b", text)]
    # relative venv pythons (.venv/bin/python3): the words holding `bin/python`, found in one pass (a regex starting
    # `\S*` at every character is quadratic on a 20 MB line)
    relative = [
        m.group(0) for w in text.split() if "bin/python" in w for m in [re.search(r"\S*bin/python[\d.]*", w)] if m
    ]
    named = re.findall(r"(/[\w./+-]+)", text) + [os.path.join(cwd, m) for m in relative]

    def add(path: str) -> None:
        real = os.path.realpath(path)
        if os.path.isfile(real) and os.access(real, os.X_OK):
            found.add(real)

    for path in named:
        if INTERPRETER.match(os.path.basename(path)):
            add(path)
    for folder in folders:
        try:
            names = os.listdir(folder) if folder else []
        except OSError:
            continue
        for name in names:
            if INTERPRETER.match(name):
                add(os.path.join(folder, name))
    deadline = time.monotonic() + WALK_S
    remote = _remote_mounts()
    folders_left = deque(["/"])  # walked breadth-first without recursion: a folder nested thousands deep (a test's, a
    while folders_left and time.monotonic() <= deadline:  # script's) is just more of the bounded walk
        top = folders_left.popleft()
        try:
            entries = list(os.scandir(top))
        except OSError:
            continue
        files = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if not is_dir:
                files.append(entry.name)
            elif (
                entry.name not in WALK_SKIP
                and not entry.name.startswith("grpolab-import-")
                and entry.path not in remote
            ):
                folders_left.append(entry.path)
        if os.path.basename(top) in ("bin", "sbin", "shims", "Scripts"):
            for name in files:
                if INTERPRETER.match(name):
                    add(os.path.join(top, name))
    return sorted(found)


def hidden_python() -> tuple[str, str | None]:
    """(the interpreter the recorder runs on inside the isolation, the folder sandbox_init keeps for it): this
    Python's installation, seen at sandbox.KEEP, where no cover reaches it."""
    exe, prefix = os.path.realpath(sys.executable), os.path.realpath(sys.base_prefix)
    if not exe.startswith(prefix + os.sep):
        return exe, None  # an unusual install: the recorder runs on it where it is (it is then not covered)
    return sandbox.KEEP + exe[len(prefix) :], prefix


# file systems the walk never enters: a stalled network mount would hang it (their interpreters are still found
# through PATH and the paths the script names)
REMOTE_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "9p", "autofs")


def _remote_mounts() -> set[str]:
    found = set()
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                fields = line.split()
                fstype = fields[fields.index("-") + 1] if "-" in fields else ""
                if fstype in REMOTE_FS or fstype.startswith("fuse"):
                    found.add(fields[4].replace("\\040", " "))
    except (OSError, ValueError, IndexError):
        pass
    return found
