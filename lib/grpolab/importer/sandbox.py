"""Run an untrusted command isolated by the operating system: every file outside one scratch folder stays as it was,
and there is no network.

util-linux `unshare` (on every Debian and Ubuntu: util-linux is an essential package) makes new mount, pid, network,
IPC and UTS namespaces; grpolab.importer.sandbox_init then covers each mount with a copy-on-write overlay whose changes
vanish with the namespace, so a script may truncate `/abs/train.log` or `rm /abs/keep.txt` and both stay. As root it
runs in a plain mount namespace with capabilities dropped; as another user in a user namespace (the kernel must
allow unprivileged user namespaces: `sysctl kernel.unprivileged_userns_clone`, AppArmor's
`kernel.apparmor_restrict_unprivileged_userns` on Ubuntu 24.04). `available()` says whether this machine can, and
why not: `grpolab import` refuses to run a script without isolation unless told the script is trusted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from grpolab import owned

INIT = Path(__file__).with_name("sandbox_init.py")
UNSHARE = "GRPOLAB_UNSHARE"  # env: the util-linux unshare to use (default: `unshare` on PATH)
NAMESPACES = ["--mount", "--net", "--pid", "--ipc", "--uts", "--fork", "--kill-child"]
USER = ["--user", "--map-root-user"]
PROBE_S = 20
KEEP = "/.grpolab-keep"  # sandbox_init's: where `keep` shows a folder as it is


SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # where an emptied PATH still finds it


def _unshare() -> str:
    return os.environ.get(UNSHARE) or shutil.which("unshare") or shutil.which("unshare", path=SYSTEM_PATH) or "unshare"


def _command(mode: list[str], config: Path) -> list[str]:
    return [_unshare(), *mode, *NAMESPACES, "--", sys.executable, "-I", str(INIT), str(config)]


def _modes() -> list[list[str]]:
    """As root a plain mount namespace first (overlays keep their marks in trusted xattrs there); else a user one."""
    return [[], USER] if os.geteuid() == 0 else [USER, []]


def _run(mode: list[str], scratch: Path, argv: list[str], env: dict, cwd: str, timeout: float, extra: dict):
    config = scratch / "sandbox.json"
    config.write_text(json.dumps({**extra, "scratch": str(scratch), "argv": argv, "env": env, "cwd": cwd}))
    return subprocess.run(
        _command(mode, config),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        start_new_session=True,  # no controlling terminal: /dev/tty opens nothing (no TIOCSTI into the user's shell)
        env={"PATH": os.environ.get("PATH") or SYSTEM_PATH, "LANG": "C.UTF-8"},
    )


_WORKS: list[list[str]] = []  # the mode that isolated in this process, once one has


def _attempt(
    scratch: Path, argv: list[str], env: dict, cwd: str, timeout: float, modes: list | None = None, extra=None
):
    """Run isolated in the first mode that works here: (the process, None) or (None, why none does)."""
    if shutil.which(_unshare()) is None:
        return None, f"util-linux `unshare` is not installed ({_unshare()}; apt-get install util-linux)"
    why = ""
    for mode in modes or _WORKS[:1] or _modes():
        try:
            proc = _run(mode, scratch, argv, env, cwd, timeout, extra or {})
        except OSError as exc:
            why = str(exc)
            continue
        if proc.returncode == 125 and "grpolab sandbox: cannot isolate" in proc.stderr:
            why = proc.stderr.strip().splitlines()[-1]
            continue
        if proc.returncode != 0 and not _WORKS and "unshare:" in proc.stderr:
            why = proc.stderr.strip().splitlines()[-1]  # the namespaces themselves were refused
            continue
        if modes is None:
            _WORKS[:] = [mode]
        return proc, None
    return None, why


@lru_cache(maxsize=1)
def _probe() -> str | None:
    with owned.scratch("grpolab-probe-") as tmp:
        scratch = Path(tmp).resolve()
        written = scratch / "written"
        try:
            proc, why = _attempt(
                scratch, ["/bin/sh", "-c", f"echo ok > {written}"], {"PATH": "/usr/bin:/bin"}, "/", PROBE_S
            )
        except subprocess.TimeoutExpired:
            return f"an isolated command did not finish in {PROBE_S} s"
        if proc is not None and not written.is_file():
            return f"an isolated command could not write its scratch folder (exit {proc.returncode})"
        return why


def available() -> str | None:
    """None when this machine can isolate a command; else the reason it cannot (for the refusal message)."""
    return None if _WORKS else _probe()


def run(
    argv: list[str],
    env: dict[str, str],
    scratch: Path,
    cwd: str,
    timeout: float,
    user_namespace: bool | None = None,
    **extra,
) -> subprocess.CompletedProcess:
    """Run argv isolated; only `scratch` (a folder of the caller's) is shared and writable. RuntimeError when this
    machine cannot isolate (see `available`); subprocess.TimeoutExpired after `timeout` seconds (everything inside
    is killed with the namespace). `user_namespace` forces one way (None: the first that works here). `extra`:
    sandbox_init's optional settings (cow_mb, keep, hide, read_only)."""
    modes = None if user_namespace is None else [USER if user_namespace else []]
    proc, why = _attempt(Path(scratch).resolve(), argv, env, cwd, timeout, modes, extra)
    if proc is None:
        raise RuntimeError(why)
    return proc
