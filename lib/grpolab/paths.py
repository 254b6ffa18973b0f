"""Where things live: the params/ directory with the recipes, the runs/ directory with run records, and the cache
of what can be rebuilt (tiny models, verl's verdicts on composed launches).

Each can be moved with an environment variable (GRPOLAB_PARAMS, GRPOLAB_RUNS, GRPOLAB_CACHE) so that an installed
package, a notebook in another folder and the tests all find the same files.
"""

from __future__ import annotations

import getpass
import os
import re
import site
import sysconfig
import tempfile
from pathlib import Path

from grpolab.problems import InputError

# lib/grpolab/paths.py -> the project root is three levels up (a source checkout, installed editable).
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def params_dir() -> Path:
    """The params/ directory: $GRPOLAB_PARAMS, else the source checkout's own (an editable install), else the one a
    wheel install ships (`pip install .` puts it in the environment's data folder: <prefix>/share/grpolab/params)."""
    if os.environ.get("GRPOLAB_PARAMS"):
        return Path(os.environ["GRPOLAB_PARAMS"])
    own = PROJECT_ROOT / "params"
    if (own / "base.yaml").is_file():
        return own
    return installed_params() or own


def installed_params() -> Path | None:
    """The params/ a wheel install shipped (pyproject's data-files), in this environment's or the user's data folder."""

    for data in (sysconfig.get_path("data"), site.getuserbase()):
        folder = Path(data) / "share" / "grpolab" / "params"
        if (folder / "base.yaml").is_file():
            return folder
    return None


def runs_dir() -> Path:
    """The runs/ directory that holds one folder per run: $GRPOLAB_RUNS, else <project>/runs."""
    return Path(os.environ.get("GRPOLAB_RUNS") or PROJECT_ROOT / "runs")


def cache_root() -> Path:
    """What can be rebuilt: $GRPOLAB_CACHE, else $XDG_CACHE_HOME/grpolab, else ~/.cache/grpolab."""
    if os.environ.get("GRPOLAB_CACHE"):
        return Path(os.environ["GRPOLAB_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "grpolab"


# ---------------------------------------------------------------------------------------------- the path policy
# One policy for every verb that writes: a NAME flag (`import --name`, `plan --write`, `card`'s name) is one plain
# file name, never a path; a PATH flag (`--out`, `--dir`) may be anywhere the user names, but never a system folder,
# and nothing is written through a symlink that leads out of the folder the user named.

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}")
# folders no verb writes into or replaces: the machine's own, and the user's home itself (a folder below it is fine)
SYSTEM_FOLDERS = tuple(
    "/ /bin /boot /dev /etc /lib /lib32 /lib64 /opt /proc /root /run /sbin /srv /sys /tmp /usr /var".split()
    + ["/home", "/mnt", "/media"]
)


class PathRefused(InputError, ValueError):
    """A name or path a verb will not write to; the message names the flag, the value, the rule and the fix (an
    unusable input: the CLI's exit status 2)."""


def check_name(name: str, flag: str, fix: str = "") -> str:
    """`name` when it is one plain name (letters, digits, `_ . -`, not starting with `.`); else PathRefused."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise PathRefused(
            f"{flag} {name!r} is not a name: use letters, digits, '_', '.' and '-' only (no '/', no '..', not an "
            f"absolute path, at most 128 characters){'; ' + fix if fix else ''}"
        )
    return name


def is_system_folder(path: str | os.PathLike) -> bool:
    """True for a folder of the machine's own (/, /usr, /etc, ...) or the user's home folder itself."""
    resolved = os.path.realpath(path)
    return resolved in {os.path.realpath(p) for p in SYSTEM_FOLDERS} | {os.path.realpath(Path.home())}


# folders whose whole tree is the machine's own: nothing is written anywhere below them, through a link either
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin", "/sys", "/usr")


def in_system_tree(path: str | os.PathLike) -> bool:
    """True when `path`, every link followed, is in one of SYSTEM_TREES (a --out that is a link to /etc/...)."""
    real = Path(os.path.realpath(path))
    return any(real == Path(p) or Path(p) in real.parents for p in map(os.path.realpath, SYSTEM_TREES))


def contained(folder: str | os.PathLike, target: str | os.PathLike) -> Path:
    """`target` (a path inside `folder`) once every symlink is followed; PathRefused when that leaves `folder`
    (a link, or a dangling link, pointing elsewhere): nothing is written through it."""
    base = Path(os.path.realpath(folder))
    path = Path(folder) / target
    real = Path(os.path.realpath(path))
    if real != base and base not in real.parents:
        raise PathRefused(
            f"{path} leads out of {folder} (a symlink to {os.readlink(path) if path.is_symlink() else real}): "
            f"nothing is written through it; remove the link or choose another folder"
        )
    return real


def recipe_relative(written: str, origin: str) -> Path:
    """A file a recipe names (a data file, a reward file), as this machine sees it: `~` expanded, an absolute path as
    is; a relative one from the folder of the recipe file that set it (`origin`, as Recipe.origin gives it: relative
    to params/'s parent; the current folder when a --set or a notebook set it), else from the project's root
    (params/'s parent: the checkout, or <prefix>/share/grpolab of a wheel install; then the source tree's root, for
    lib/: how the shipped `tiny` names its data and reward, read from a run folder's recipe.yaml too); the first that
    exists, else the first (for the message that it is missing)."""
    path = Path(os.path.expanduser(written))
    if path.is_absolute():
        return path
    root = params_dir().resolve().parent
    where = Path(origin) if Path(origin).is_absolute() else root / origin
    base = where.parent if where.suffix in (".yaml", ".yml") and where.is_file() else Path.cwd()
    candidates = list(dict.fromkeys((folder / path).resolve() for folder in (base, root, PROJECT_ROOT)))
    return next((c for c in candidates if c.exists()), candidates[0])


def scratch_env(folder: str | os.PathLike, env: dict[str, str]) -> dict[str, str]:
    """`env` with `folder` as the temp dir of the processes started with it (the embedded head's, a run's trainer):
    what they leave there (wandb's media and artifact folders, multiprocessing's pymp-*: Ray's processes end by
    os._exit or a signal, which skips their clean-up) goes when the folder does, instead of piling up in /tmp. A
    TMPDIR the user set is theirs and stays. The caches meant to outlive a process keep the place they had: Ray's
    own temp dir (RAY_TMPDIR) and torch's compile cache (TORCHINDUCTOR_CACHE_DIR)."""
    if env.get("TMPDIR") and env.get("GRPOLAB_SCRATCH") != env["TMPDIR"]:
        return dict(env)
    system = env.get("RAY_TMPDIR") or tempfile.gettempdir()  # the first scratch_env set it: its children keep it
    try:  # torch names its cache after getpass's user
        user = getpass.getuser()
    except (OSError, KeyError):
        user = str(os.getuid())
    return {
        **env,
        "RAY_TMPDIR": system,
        "TORCHINDUCTOR_CACHE_DIR": env.get("TORCHINDUCTOR_CACHE_DIR") or f"{system}/torchinductor_{user}",
        "TMPDIR": str(folder),
        "GRPOLAB_SCRATCH": str(folder),  # ours, so a process started under it may set its own
    }
