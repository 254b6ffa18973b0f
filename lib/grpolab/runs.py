"""Run directories: `runs/<run_id>/` with the resolved recipe, the launch record, status, metrics and logs.

Layout (the architecture's contract):
    recipe.yaml     the fully resolved recipe
    launch.json     entrypoint, env (secrets redacted), versions, git commit
    status.json     {"run_id", "state", "job_id", "ray_address", "created", "updated", "message", ...}
    job.json        written by the job itself (grpolab.job_entry): pid, host, and at its end the exit code
    metrics.jsonl   verl's file-logger format, one line per step: {"step": N, "data": {...}}
    logs/           job.log (the Ray job's output), executed stage notebooks, ...
States are Ray's job states: PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED; and LOST: the run's Ray head went away
and the job left no record of its end.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from grpolab.paths import runs_dir

STATES = ("PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "LOST")
TERMINAL_STATES = ("SUCCEEDED", "FAILED", "STOPPED", "LOST")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class RunNotFound(LookupError):
    """RUN names no run id, run directory or metrics file."""


@dataclass(frozen=True)
class Run:
    """One run directory; the paths of its files."""

    path: Path

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def recipe_file(self) -> Path:
        return self.path / "recipe.yaml"

    @property
    def launch_file(self) -> Path:
        return self.path / "launch.json"

    @property
    def status_file(self) -> Path:
        return self.path / "status.json"

    @property
    def metrics_file(self) -> Path:
        return self.path / "metrics.jsonl"

    @property
    def logs_dir(self) -> Path:
        return self.path / "logs"

    @property
    def job_log(self) -> Path:
        return self.logs_dir / "job.log"

    def status(self) -> dict:
        """status.json as a dict ({} when the run has none yet)."""
        try:
            return json.loads(self.status_file.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def write_status(self, **fields) -> dict:
        """Merge fields into status.json atomically (write a temp file, then rename)."""
        status = self.status()
        status.update(fields)
        status.setdefault("run_id", self.run_id)
        status["updated"] = time.time()
        _atomic_write(self.status_file, json.dumps(status, indent=2, sort_keys=True) + "\n")
        return status


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def check_run_id(run_id: str) -> str:
    """A user-given run id must be one plain folder name: no '/', no '..', nothing that escapes runs/."""
    if not _RUN_ID.match(run_id) or run_id in (".", ".."):
        raise ValueError(
            f"run id {run_id!r} is not allowed: use letters, digits, '.', '_' and '-' only "
            "(no '/' or leading '.'), at most 128 characters"
        )
    return run_id


def new_run_id(name: str) -> str:
    """`<name>-<UTC time>-<random>`: sortable by time and unique even when two runs start in one second."""
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-") or "run"
    return f"{stem}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(3)}"


def create_run(name: str, run_id: str | None = None, root: Path | None = None) -> Run:
    """Make a new, empty run directory; never reuses an existing one."""
    root = Path(root or runs_dir())
    root.mkdir(parents=True, exist_ok=True)
    if run_id is not None:
        check_run_id(run_id)
    for _ in range(100):
        rid = run_id or new_run_id(name)
        path = root / rid
        try:
            path.mkdir()
        except FileExistsError:
            if run_id is not None:
                raise FileExistsError(f"run {run_id!r} already exists in {root}; pick another run id") from None
            continue
        run = Run(path)
        run.logs_dir.mkdir()
        run.write_status(state="PENDING", created=time.time())
        return run
    raise RuntimeError(f"could not find a free run id under {root}")  # pragma: no cover


def list_runs(root: Path | None = None) -> list[Run]:
    """Every run under runs/, oldest first."""
    root = Path(root or runs_dir())
    if not root.is_dir():
        return []
    runs = [Run(p) for p in root.iterdir() if p.is_dir() and (p / "status.json").exists()]
    return sorted(runs, key=lambda r: (r.status().get("created", 0), r.run_id))


def resolve_run(ref: str | os.PathLike, root: Path | None = None) -> Run:
    """RUN may be a run id (under runs/), a run directory, or a metrics.jsonl inside one."""
    text = str(ref)
    path = Path(text).expanduser()
    if path.is_file():
        return Run(path.resolve().parent)
    if path.is_dir():
        return Run(path.resolve())
    root = Path(root or runs_dir())
    if _RUN_ID.match(text) and (root / text).is_dir():
        return Run(root / text)
    known = [r.run_id for r in list_runs(root)]
    hint = f"; known runs: {', '.join(known[-5:])}" if known else f"; no runs under {root} yet"
    raise RunNotFound(f"no run {text!r}: not a run id under {root}, a run directory or a metrics file{hint}")
