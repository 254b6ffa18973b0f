"""The script's variables: which ones it exports for the launch and which ones it reads that the caller's environment
does not set (each with the default it used, or none), from its text and the names set at its launch.
"""

from __future__ import annotations

import re
from pathlib import Path

# env the shell itself sets or that only points into the scratch folder: never part of a recipe
SHELL_ENV = {"PATH", "PWD", "OLDPWD", "SHLVL", "_", "BASH_ENV", "LINES", "COLUMNS", "PS4"}
BASH_VARS = {
    *SHELL_ENV,
    *"BASH BASHOPTS BASHPID BASH_ALIASES BASH_ARGC BASH_ARGV BASH_ARGV0 BASH_CMDS BASH_COMMAND BASH_LINENO "
    "BASH_SOURCE BASH_SUBSHELL BASH_VERSINFO BASH_VERSION DIRSTACK EPOCHREALTIME EPOCHSECONDS EUID FUNCNAME "
    "GROUPS HISTCMD HOSTNAME HOSTTYPE IFS LINENO MACHTYPE OPTARG OPTERR OPTIND OSTYPE PIPESTATUS PPID PS1 PS2 "
    "RANDOM REPLY SECONDS SHELL SHELLOPTS SRANDOM UID HOME TMPDIR USER LOGNAME".split(),
}


def exported_env(env: dict[str, str], caller: dict[str, str], text: str, root: Path) -> dict[str, str]:
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


# `$NAME`, `${NAME}` or `${NAME<op>default}`; a default is read up to 4096 characters (linear in the script's size:
# an unclosed `${X:-...` never makes the scan run to the end of a 20 MB line for each occurrence)
_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)(?:\}|(:?[-=?+])((?:[^{}\n]|\{[^{}\n]*\}){0,4096})\})?")


def _code(text: str) -> str:
    """The script without comments and single-quoted strings (where `$NAME` is not expanded)."""
    return "\n".join(re.sub(r"(^|\s)#.*$", "", re.sub(r"'[^']*'", "''", line)) for line in text.splitlines())


def read_names(text: str, caller: dict[str, str]) -> list[str]:
    """The variables the script reads that the caller's environment does not set: the only names whose state at the
    launch matters (bash's own listing of every variable, `compgen -v`, takes quadratic time in their number)."""
    names = {m.group(1) for m in _REF.finditer(_code(text))}
    return sorted(n for n in names if n not in caller and n not in BASH_VARS)


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
