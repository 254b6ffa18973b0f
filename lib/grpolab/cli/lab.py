"""`grpolab lab`: JupyterLab on working copies of the notebooks, so that the committed ones stay templates.

    grpolab lab                      copies notebooks/*.ipynb into runs/lab/ (a copy already there is kept: it is
                                     your work) and starts JupyterLab there, bound to 127.0.0.1 with Jupyter's token
    grpolab lab --dir PATH           the working folder is PATH instead
    grpolab lab --dry-run            say what it would copy and print the command; write and start nothing
    grpolab lab -- --ServerApp.X=Y   anything after `--` goes to `jupyter lab` as it is

JupyterLab saves outputs into the notebooks it opens (autosave too): on copies, `git status` stays clean and
`make test` stays green. The copies run exactly as the templates do (the stage notebooks run.ipynb executes are
the templates in notebooks/, read only). JupyterLab is told to save the state of the notebooks' widgets with them
(ipywidgets' `saveState`, through a settings file in the working folder), so that the few controls (Stop run,
smoothing, the plan explorer's inputs) reopen as what they were, not as "model not found"; every figure and
table beside them is an ordinary output anyway. The layout JupyterLab restores (its workspace) is kept in the
working folder as well, never in ~/.jupyter.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from grpolab import owned
from grpolab.cli.common import port_number
from grpolab.paths import PathRefused, contained, is_system_folder, runs_dir
from grpolab.problems import InputError
from grpolab.recipe.files import atomic_write, read_bytes

SETTINGS = {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}
SETTINGS_DIR = ".lab-settings"  # inside the working folder: JupyterLab's app settings (overrides.json) only
# inside the working folder too: JupyterLab's saved layout (which notebooks were open, which was current), so that a
# folder reopens its own tabs, and nothing is written to ~/.jupyter (where every folder restored the last one's tabs,
# and a notebook opened by its URL could come up behind another)
WORKSPACES_DIR = ".lab-workspaces"
BACKUP = "overrides.json.bak"  # inside SETTINGS_DIR: what overrides.json held before `grpolab lab` added SETTINGS
SETTINGS_LIMIT = 1 << 20  # a settings file is a few KB
_FIX = "fix it (or delete it: `grpolab lab` writes a new one) and run grpolab lab again"
DEFAULT_PORT = 8888


def register(sub) -> None:
    p = sub.add_parser("lab", help="JupyterLab on working copies of the notebooks (runs/lab/ by default)")
    p.add_argument("--dir", help="working folder for the copies (default: runs/lab/ under the runs folder)")
    p.add_argument("--port", type=port_number, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser (print the URL with its token)")
    p.add_argument("--dry-run", action="store_true", help="say what it would copy, print the command; write nothing")
    p.add_argument("jupyter_args", nargs=argparse.REMAINDER, help="after --: arguments for `jupyter lab` as they are")
    p.set_defaults(func=main)


def prepare(folder: Path, write: bool = True) -> tuple[list[str], list[str]]:
    """Copy every template notebook that the folder does not hold yet; write the settings file. Returns (copied,
    kept). Nothing is written through a symlink that leads out of the folder (grpolab.paths.contained: PathRefused);
    a copy is made beside its name and renamed into place, so it never follows a link. `write` False (--dry-run):
    the same checks and answer, and nothing written, not even the folder."""
    # lazy: IPython, pydantic (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.notebook.display import NOTEBOOKS_DIR

    if write:
        folder.mkdir(parents=True, exist_ok=True)
    copied, kept = [], []
    for template in sorted(NOTEBOOKS_DIR.glob("*.ipynb")):
        target = folder / template.name
        contained(folder, template.name)
        if os.path.lexists(target):
            kept.append(template.name)
            continue
        if write:
            tmp = owned.fresh_file(folder / f".{template.name}.{os.getpid()}.tmp")
            shutil.copyfile(template, tmp)
            owned.move(tmp, target)  # never over a file that appeared meanwhile
        copied.append(template.name)
    settings = contained(folder, SETTINGS_DIR)
    if write:
        write_overrides(settings)
    else:  # a dry run reads the settings file as the real run would: a typo stops both
        _read_overrides(settings)
    return copied, kept


def write_overrides(settings: Path) -> Path:
    """JupyterLab's overrides.json in `settings` with SETTINGS merged into what is there (a user's own overrides
    stay). scripts/setup.sh writes it into the environment's own app settings too, so that a plain `jupyter lab`
    from this environment also saves widget state.

    The file is the user's: it is rewritten only when it reads as a JSON object (JupyterLab's own reading of it)
    and lacks SETTINGS, and what it held is kept beside it first (BACKUP); one that does not read (a typo, a FIFO,
    a folder) is never replaced: InputError names it, where it does not read, and the fix."""
    settings.mkdir(parents=True, exist_ok=True)
    path, raw, current, merged = _read_overrides(settings)
    if raw is not None and merged == current:
        return path  # nothing to add: the file stays byte for byte
    if raw is not None:
        atomic_write(contained(settings, BACKUP), raw.decode("utf-8", "replace"))
    atomic_write(path, json.dumps(merged, indent=2) + "\n")
    return path


def _read_overrides(settings: Path) -> tuple[Path, bytes | None, dict, dict]:
    """(overrides.json in `settings`, its bytes or None, what it holds, that with SETTINGS merged in); InputError
    for a file that does not read as a JSON object (a link out of the folder: PathRefused)."""
    path = contained(settings, "overrides.json")
    try:
        raw = read_bytes(path, SETTINGS_LIMIT)
    except FileNotFoundError:
        raw = None
    except OSError as exc:
        raise InputError(
            f"{path}: {exc.strerror or exc}: JupyterLab's settings file is left as it is; {_FIX}"
        ) from None
    try:
        current = {} if raw is None else json.loads(raw)
    except (ValueError, RecursionError) as exc:  # a typo in the user's file: never replaced by ours
        raise InputError(f"{path}: not JSON ({exc}); it is left as it is: {_FIX}") from None
    if not isinstance(current, dict):
        raise InputError(f"{path}: a JSON {type(current).__name__}, not an object; it is left as it is: {_FIX}")
    merged = {**current}
    for plugin, values in SETTINGS.items():
        merged[plugin] = {**(current.get(plugin) if isinstance(current.get(plugin), dict) else {}), **values}
    return path, raw, current, merged


def command(folder: Path, port: int, browser: bool, extra: list[str] = ()) -> list[str]:
    """JupyterLab on 127.0.0.1 in `folder`, with Jupyter's own token (the default: not disabled here)."""
    jupyter = Path(sys.executable).with_name("jupyter")
    cmd = [str(jupyter) if jupyter.exists() else "jupyter", "lab", "--ServerApp.ip=127.0.0.1", f"--port={port}"]
    cmd += [f"--ServerApp.root_dir={folder}", f"--LabApp.app_settings_dir={folder / SETTINGS_DIR}"]
    cmd.append(f"--LabApp.workspaces_dir={folder / WORKSPACES_DIR}")
    if not browser:
        cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # Jupyter refuses root otherwise; it is the user's own choice to be root
    return cmd + [a for a in extra if a != "--"]


def main(args) -> int:
    given = Path(args.dir).expanduser() if args.dir else runs_dir() / "lab"
    flag = f"--dir {args.dir}" if args.dir else f"the working folder {given}"
    try:
        folder = given.resolve(strict=False)
        folder.exists()
    except (RuntimeError, OSError) as exc:  # a symlink loop (RuntimeError up to Python 3.12)
        raise InputError(f"{flag}: {exc}: it is a symlink loop; remove the link or name another folder") from None
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{flag}: {folder}: a file, not a folder; name a folder for the working copies")
    if is_system_folder(folder):
        raise InputError(f"{flag}: {folder} is a system folder (or your home itself); name a folder of its own")
    try:
        copied, kept = prepare(folder, write=not args.dry_run)
    except PathRefused as exc:
        raise InputError(f"{flag}: {exc}") from None
    except OSError as exc:
        raise InputError(f"cannot make working copies in {folder}: {exc.strerror or exc}") from None
    if args.dry_run:
        print(f"dry run: nothing is written or started; `grpolab lab` would work in {folder}")
    if copied:
        print(f"{'would copy' if args.dry_run else 'copied'} {', '.join(copied)} into {folder}")
    if kept:
        print(f"kept your copies of {', '.join(kept)} in {folder} (delete one to get the template again)")
    cmd = command(folder, args.port, browser=not args.no_browser, extra=args.jupyter_args)
    print("the committed notebooks in notebooks/ stay templates; your work and its outputs stay in this folder")
    print(" ".join(cmd))
    if args.dry_run:
        return 0
    sys.stdout.flush()
    os.execv(cmd[0], cmd) if os.path.isabs(cmd[0]) else os.execvp(cmd[0], cmd)
    return 0  # pragma: no cover - execv does not return


if __name__ == "__main__":  # scripts/setup.sh: python -m grpolab.cli.lab APP_SETTINGS_DIR
    try:
        print(f"setup: JupyterLab saves widget state ({write_overrides(Path(sys.argv[1]))})")
    except InputError as exc:  # the environment's settings file is the user's: left alone, set-up goes on
        print(f"setup: {exc}", file=sys.stderr)
