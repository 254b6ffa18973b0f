"""Run directories: `runs/<run_id>/` with the resolved recipe, the launch record, status, metrics and logs.

Layout (the architecture's contract):
    recipe.yaml     the fully resolved recipe
    launch.json     entrypoint, env (secrets redacted), versions, git commit
    status.json     {"run_id", "state", "job_id", "ray_address", "created", "updated", "message", ...}
    job.json        written by the job itself (grpolab.jobs.job_entry): pid, host, and at its end the exit code
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


class NotARun(RunNotFound):
    """A directory without the project's own run record: nothing is written there."""


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
        """status.json as a dict ({} when the run has none yet, or it is unreadable)."""
        try:
            data = json.loads(self.status_file.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return {}
        return data if isinstance(data, dict) else {}

    @property
    def is_run(self) -> bool:
        """True when this directory holds the project's own run record: status.json naming this run id."""
        return is_run_dir(self.path)

    def write_status(self, **fields) -> dict:
        """Merge fields into status.json atomically (write a temp file, then rename). Refuses (NotARun) a
        directory that is not a run: a path a user gave is never written to unless grpolab made it a run."""
        if not self.is_run:
            raise NotARun(
                f"{self.path} is not a run directory (no status.json with run_id {self.run_id!r}); "
                "nothing was written there"
            )
        status = self.status()
        status.update(fields)
        status.setdefault("run_id", self.run_id)
        status["updated"] = time.time()
        _atomic_write(self.status_file, json.dumps(status, indent=2, sort_keys=True) + "\n")
        return status


def is_run_dir(path: Path) -> bool:
    """A run directory: it holds status.json, a JSON object whose run_id is the directory's name."""
    try:
        data = json.loads((Path(path) / "status.json").read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    return isinstance(data, dict) and data.get("run_id") == Path(path).name


def _atomic_write(path: Path, text: str) -> None:
    """Write a temp file beside path, then rename it: a reader never sees a torn file. When the disk is full or
    read-only, the temp file is removed and the OSError goes on (path keeps its old content)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise


def check_owned(run: Run, info) -> None:
    """Refuse to act on a Ray job that grpolab did not submit for this run: its metadata must name this run's
    directory (grpolab.jobs.launch.submit sets `grpolab_run_dir`). `info` is the Jobs API's JobDetails/JobInfo."""
    meta = getattr(info, "metadata", None) or {}
    owner = meta.get("grpolab_run_dir") if isinstance(meta, dict) else None
    if not owner or Path(owner).name != run.run_id:
        from grpolab.jobs.cluster import ClusterError

        job = getattr(info, "submission_id", None) or getattr(info, "job_id", None) or "?"
        raise ClusterError(
            f"job {job} is not one grpolab submitted for run {run.run_id} (its metadata names "
            f"{owner or 'no grpolab run'}); not touching it"
        )


def check_run_id(run_id: str) -> str:
    """A user-given run id must be one plain folder name: no '/', no '..', nothing that escapes runs/."""
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id) or run_id in (".", ".."):
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
        try:
            run.logs_dir.mkdir()
            now = time.time()
            _atomic_write(
                run.status_file,
                json.dumps(
                    {"run_id": rid, "state": "PENDING", "created": now, "updated": now}, indent=2, sort_keys=True
                )
                + "\n",
            )
        except BaseException:  # a full or read-only disk: leave no half-made run behind
            import shutil

            shutil.rmtree(path, ignore_errors=True)
            raise
        return run
    raise RuntimeError(f"could not find a free run id under {root}")  # pragma: no cover


def list_runs(root: Path | None = None) -> list[Run]:
    """Every run under runs/, oldest first."""
    root = Path(root or runs_dir())
    if not root.is_dir():
        return []
    runs = [Run(p) for p in root.iterdir() if p.is_dir() and is_run_dir(p)]
    return sorted(runs, key=lambda r: (r.status().get("created", 0), r.run_id))


def resolve_run(ref: str | os.PathLike, root: Path | None = None, metrics_file: bool = False) -> Run:
    """RUN: a run id (under runs/), a run directory, or a file inside one (metrics.jsonl, logs/job.log).

    A directory counts only when it holds the project's run record (status.json naming its run id): any other
    directory is refused, so nothing is ever written there. With `metrics_file`, a metrics file outside any run
    is accepted too (to be read only: the Run it returns refuses writes)."""
    text = str(ref)
    root = Path(root or runs_dir())
    path = Path(text).expanduser()
    try:
        if path.is_file():
            parent = path.resolve().parent
            for candidate in (parent, parent.parent):  # metrics.jsonl, logs/job.log
                if is_run_dir(candidate):
                    return Run(candidate)
            if metrics_file:
                return Run(parent)
            raise NotARun(f"{text} is a file, not a run: pass a run id (see `grpolab runs`) or a run directory")
        if path.is_dir():
            if is_run_dir(path.resolve()):
                return Run(path.resolve())
            raise NotARun(
                f"{text} is not a run directory: it has no status.json naming run "
                f"{path.resolve().name!r} (grpolab writes one for every run it starts); pass a run id "
                "(see `grpolab runs`)"
            )
    except OSError as exc:  # a name too long, a permission refused on the way
        raise RunNotFound(f"no run {text!r}: {exc.strerror or exc}") from None
    if _RUN_ID.match(text) and is_run_dir(root / text):
        return Run(root / text)
    known = [r.run_id for r in list_runs(root)]
    hint = f"; known runs: {', '.join(known[-5:])}" if known else f"; no runs under {root} yet"
    raise RunNotFound(f"no run {text!r}: not a run id under {root}, a run directory or a metrics file{hint}")
