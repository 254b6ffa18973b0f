"""Run directories: `runs/<run_id>/` with the resolved recipe, the launch record, status, metrics and logs.

The layout (the architecture's contract) is declared in grpolab.run_folder. status.json is the run's record:
{"run_id", "state", "created", "updated", "recipe", "endpoint", "job_id", "submitted", "started", "ended",
"message", ...}; its fields and how a state is decided: grpolab.jobs.state.
States are Ray's job states: PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED; and LOST: the run's Ray head went away
and the job left no record of its end.

Reading is bounded and never blocks: a record that is not a regular file (a FIFO, a device) or is larger than a
record can be is refused, and a record with ill-typed values (`created: "yesterday"`, 1e400, `state: [...]`) is a
BadRecord that names why, so one bad run never hides the others (`scan_runs`). `locate` is the one way from a RUN
reference (a run id, a run directory, a file inside a run, a bare metrics file) to its run, metrics file and kind.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from grpolab import owned, run_folder
from grpolab.paths import runs_dir
from grpolab.problems import InputError
from grpolab.recipe import files
from grpolab.recipe.files import atomic_write

STATES = ("PENDING", "RUNNING", "SUCCEEDED", "FAILED", "STOPPED", "LOST")
TERMINAL_STATES = ("SUCCEEDED", "FAILED", "STOPPED", "LOST")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
RECORD_LIMIT = 4 << 20  # status.json and job.json hold a few KB (a 40-line log tail at most); never read more
CONSOLE_SUFFIXES = {".log", ".txt", ".out", ".err"}  # a file named as RUN with these is read as verl console output


class RunNotFound(InputError, LookupError):
    """RUN names no run id, run directory or metrics file: an unusable input (the CLI's exit status 2)."""


class NotARun(RunNotFound):
    """A directory without the project's own run record: nothing is written there."""


class BadRecord(RunNotFound):
    """The run's record (status.json) cannot be read or holds ill-typed values; the message says why."""


class RunsFolderError(OSError):
    """The runs folder ($GRPOLAB_RUNS) is not a folder that can hold runs."""


# seconds since the epoch: finite, and in a range time.localtime() can show
Stamp = Annotated[float, Field(ge=0, le=1e11)]


class StatusRecord(BaseModel):
    """The types of status.json's fields (validation only: views read the record as a dict). Unknown fields are
    kept, so a record written by a newer grpolab still lists; a known field with an ill-typed value (or null where
    the writer never writes null) makes the record a BadRecord."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)

    run_id: str
    state: Literal[STATES]
    created: Optional[Stamp] = None
    updated: Optional[Stamp] = None
    submitted: Optional[Stamp] = None
    started: Optional[Stamp] = None
    ended: Optional[Stamp] = None
    recipe: str = None  # type: ignore[assignment]  (absent until the submission records it; never null)
    message: str = ""
    note: Optional[str] = None
    lost: Optional[str] = None
    job_id: Optional[str] = None
    finalized: bool = False
    exit_code: Optional[int] = None
    log_tail: list[str] = []
    total_steps: Optional[int] = None
    embedded: Optional[bool] = None
    endpoint: Optional[dict] = None
    ray_address: Optional[str] = None  # records before the endpoint was kept as a structure
    submitter: Optional[dict] = None
    stop_requested: Optional[Stamp] = None
    wandb: Optional[dict] = None


def _why(exc: ValidationError) -> str:
    """Every ill-typed field, once each (the first problem inside a list or mapping speaks for it):
    `message = 5: Input should be a valid string; ...`."""
    parts, fields = [], set()
    for err in exc.errors():
        loc = err["loc"]
        if loc[:1] in fields:
            continue
        fields.add(loc[:1])
        key = ".".join(str(p) for p in loc) or "the record"
        value = json.dumps(err.get("input"), default=str, allow_nan=True)
        parts.append(f"{key} = {value if len(value) <= 60 else value[:57] + '...'}: {err['msg']}")
    return "; ".join(parts)


def read_json(path: Path, limit: int = RECORD_LIMIT) -> Any:
    """A small JSON file, read bounded (grpolab.recipe.files: a FIFO, a device or a file over `limit` bytes is
    refused with an OSError naming why, never waited on); ValueError when it is not UTF-8 JSON."""
    try:
        return json.loads(files.read_text(path, limit))
    except (UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"{Path(path).name} is not UTF-8 JSON: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{Path(path).name} is not JSON: {exc}") from None


def check_record(data: Any, run_id: str) -> dict:
    """A status.json document as a record of run `run_id`; BadRecord naming why it is not one."""
    if not isinstance(data, dict):
        raise BadRecord(f"status.json holds {type(data).__name__}, not a JSON object")
    if data.get("run_id") != run_id:
        raise BadRecord(f"status.json names run {str(data.get('run_id'))[:80]!r}, not {run_id!r}")
    try:
        StatusRecord.model_validate(data)
    except ValidationError as exc:
        raise BadRecord(_why(exc)) from None
    return data


@dataclass(frozen=True)
class Run:
    """One run directory; the paths of its files."""

    path: Path

    @property
    def run_id(self) -> str:
        return self.path.name

    @property
    def recipe_file(self) -> Path:
        return run_folder.recipe_file(self.path)

    @property
    def launch_file(self) -> Path:
        return run_folder.launch_file(self.path)

    @property
    def status_file(self) -> Path:
        return run_folder.status_file(self.path)

    @property
    def job_file(self) -> Path:
        return run_folder.job_file(self.path)

    @property
    def metrics_file(self) -> Path:
        return run_folder.metrics_file(self.path)

    @property
    def logs_dir(self) -> Path:
        return run_folder.logs_dir(self.path)

    @property
    def job_log(self) -> Path:
        return run_folder.job_log(self.path)

    def record(self) -> dict:
        """status.json, checked (StatusRecord): BadRecord naming why when it is missing, unreadable or ill-typed."""
        try:
            data = read_json(self.status_file)
        except FileNotFoundError:
            raise BadRecord(f"{self.status_file} does not exist") from None
        except (OSError, ValueError) as exc:
            raise BadRecord(f"{self.status_file}: {getattr(exc, 'strerror', None) or exc}") from None
        try:
            return check_record(data, self.run_id)
        except BadRecord as exc:
            raise BadRecord(f"{self.status_file}: {exc}") from None

    def status(self) -> dict:
        """status.json as a dict ({} when the run has none yet, or it is unreadable or ill-typed)."""
        try:
            return self.record()
        except BadRecord:
            return {}

    @property
    def is_run(self) -> bool:
        """True when this directory holds the project's own run record: status.json naming this run id."""
        return is_run_dir(self.path)

    def write_status(self, **fields) -> dict:
        """Merge fields into status.json atomically (write a temp file, then rename). Refuses (NotARun) a
        directory that is not a run: a path a user gave is never written to unless grpolab made it a run.
        OSError (a full disk, a read-only folder) leaves status.json as it was."""
        if not self.is_run:
            raise NotARun(
                f"{self.path} is not a run directory (no status.json with run_id {self.run_id!r}); "
                "nothing was written there"
            )
        # merged into what is there, checked or not: a writer never drops fields it does not know
        status = {**files.json_object(self.status_file, RECORD_LIMIT), **fields}
        status.setdefault("run_id", self.run_id)
        status["updated"] = time.time()
        atomic_write(self.status_file, json.dumps(status, indent=2, sort_keys=True) + "\n")
        return status


def is_run_dir(path: Path) -> bool:
    """A run directory: it holds status.json, a JSON object whose run_id is the directory's name."""
    try:
        data = read_json(run_folder.status_file(path))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("run_id") == Path(path).name


def read_tail(path: Path, lines: int, block: int = 1 << 16) -> list[str]:
    """The last `lines` lines of a text file, read backwards from its end in blocks: a 300 MB log costs what its
    last lines weigh, not its size. [] when it cannot be read."""
    if lines <= 0:
        return []
    try:
        with open(path, "rb") as fh:
            end = fh.seek(0, os.SEEK_END)
            data, pos = b"", end
            while pos > 0 and data.count(b"\n") <= lines:
                step = min(block, pos)
                pos -= step
                fh.seek(pos)
                data = fh.read(step) + data
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    out = text.splitlines()
    if pos > 0 and out:  # the first line read may be cut
        out = out[1:]
    return out[-lines:]


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


def runs_root(root: Path | None = None) -> Path:
    """The runs folder (root, else $GRPOLAB_RUNS, else <project>/runs); RunsFolderError when that path is a file
    or something else that cannot hold runs."""
    path = Path(root or runs_dir())
    if os.path.islink(path) and not path.exists():  # a symlink loop, or a link to nothing
        where = "$GRPOLAB_RUNS" if root is None and os.environ.get("GRPOLAB_RUNS") else "the runs folder"
        try:
            path.resolve(strict=True)
            why = "cannot be followed"
        except (RuntimeError, OSError) as exc:
            looped = isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == 40  # ELOOP
            why = "is a symlink loop" if looped else f"is a link to {os.readlink(path)}, which does not exist"
        raise RunsFolderError(f"{where} is {path}, which {why}; point GRPOLAB_RUNS at a folder (or fix the link)")
    if path.exists() and not path.is_dir():
        where = "$GRPOLAB_RUNS" if root is None and os.environ.get("GRPOLAB_RUNS") else "the runs folder"
        raise RunsFolderError(
            f"{where} is {path}, which is a file, not a folder; point GRPOLAB_RUNS at a folder (it is created "
            "when missing)"
        )
    return path


def run_path(run_id: str, root: Path | None = None) -> Path:
    """Where run `run_id` lives (ValueError for an id that is not one plain folder name)."""
    return runs_root(root) / check_run_id(run_id)


def create_run(name: str, run_id: str | None = None, root: Path | None = None, **fields) -> Run:
    """Make a new run directory with its record (state PENDING, `fields` added); never reuses an existing one."""
    root = runs_root(root)
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
            record = {**fields, "run_id": rid, "state": "PENDING", "created": now, "updated": now}
            atomic_write(run.status_file, json.dumps(record, indent=2, sort_keys=True) + "\n")
        except BaseException:  # a full or read-only disk: leave no half-made run behind
            owned.remove_tree(path, proof=run_folder.LOGS)
            raise
        return run
    raise RuntimeError(f"could not find a free run id under {root}")  # pragma: no cover


@dataclass(frozen=True)
class Entry:
    """One folder of runs/ that holds a status.json: its run and record, or why the record is unreadable."""

    run: Run
    record: dict | None
    problem: str | None = None

    @property
    def created(self) -> float:
        if self.record is not None and self.record.get("created") is not None:
            return float(self.record["created"])
        try:
            return self.run.status_file.lstat().st_mtime
        except OSError:
            return 0.0


def scan_runs(root: Path | None = None) -> list[Entry]:
    """Every folder under runs/ with a status.json, oldest first; a bad record is an Entry with its problem."""
    root = runs_root(root)
    if not root.is_dir():
        return []
    entries = []
    for path in root.iterdir():
        try:
            if path.name.startswith(".") or not path.is_dir() or not os.path.lexists(run_folder.status_file(path)):
                continue
        except OSError:
            continue
        run = Run(path)
        try:
            entries.append(Entry(run, run.record()))
        except BadRecord as exc:
            entries.append(Entry(run, None, str(exc).removeprefix(f"{run.status_file}: ")))
    return sorted(entries, key=lambda e: (e.created, e.run.run_id))


def list_runs(root: Path | None = None) -> list[Run]:
    """Every run under runs/ with a readable record, oldest first."""
    return [e.run for e in scan_runs(root) if e.record is not None]


@dataclass(frozen=True)
class Target:
    """What a RUN reference names: the run, and the metrics file to read with its kind ("jsonl" for verl's
    file-logger format, "console" for verl's console lines).

    `file` is None when RUN named the run itself: its metrics are metrics.jsonl, else (until that appears) the
    console lines of logs/job.log (`run_metrics`). For a bare metrics file outside any run, `run` is its folder,
    which is no run (`run.is_run` False): it is read, and nothing is ever written there."""

    run: Run
    file: Path | None = None

    @property
    def metrics(self) -> Path:
        return self.file if self.file is not None else run_metrics(self.run)[0]

    @property
    def kind(self) -> str:
        return file_kind(self.file) if self.file is not None else run_metrics(self.run)[1]


def file_kind(path: Path) -> str:
    return "console" if path.suffix.lower() in CONSOLE_SUFFIXES else "jsonl"


def run_metrics(run: Run) -> tuple[Path, str]:
    """A run's own metrics: metrics.jsonl when it has one (or no job log yet), else the console lines of its log."""
    if run.metrics_file.exists() or not run.job_log.exists():
        return run.metrics_file, "jsonl"
    return run.job_log, "console"


def locate(ref: str | os.PathLike | Run, root: Path | None = None, files: bool = True) -> Target:
    """RUN -> its run, metrics file and kind: the one resolver every verb, monitor and notebook uses.

    RUN is a Run, a run id (under runs/), a run directory, or a file: a file inside a run (metrics.jsonl,
    logs/job.log) belongs to that run; with `files`, a metrics file outside any run is accepted too (to be read
    only). A directory counts only when it holds the project's run record (status.json naming its run id): any
    other directory is refused, so nothing is ever written there. RunNotFound (NotARun, BadRecord) says why not."""
    if isinstance(ref, Run):
        return Target(ref)
    text = str(ref)
    path = Path(text).expanduser()
    try:
        if path.is_file():
            file = path.resolve()
            for candidate in (file.parent, file.parent.parent):  # metrics.jsonl, logs/job.log
                if is_run_dir(candidate):
                    return Target(Run(candidate), file)
            if files:
                return Target(Run(file.parent), file)
            raise NotARun(f"{text} is a file, not a run: pass a run id (see `grpolab runs`) or a run directory")
        if path.is_dir():
            run = Run(path.resolve())
            if run.status_file.exists() or os.path.lexists(run.status_file):
                run.record()  # BadRecord: the record is there but unreadable
                return Target(run)
            raise NotARun(
                f"{text} is not a run directory: it has no status.json naming run "
                f"{path.resolve().name!r} (grpolab writes one for every run it starts); pass a run id "
                "(see `grpolab runs`)"
            )
    except OSError as exc:  # a name too long, a permission refused on the way
        raise RunNotFound(f"no run {text!r}: {exc.strerror or exc}") from None
    root = runs_root(root)
    if _RUN_ID.match(text) and os.path.lexists(run_folder.status_file(root / text)):
        run = Run(root / text)
        run.record()
        return Target(run)
    known = [r.run_id for r in list_runs(root)]
    hint = f"; known runs: {', '.join(known[-5:])}" if known else f"; no runs under {root} yet"
    raise RunNotFound(f"no run {text!r}: not a run id under {root}, a run directory or a metrics file{hint}")


def resolve_run(ref: str | os.PathLike | Run, root: Path | None = None, metrics_file: bool = False) -> Run:
    """The run RUN names (see `locate`); with `metrics_file`, a bare metrics file's folder (read only)."""
    return locate(ref, root, files=metrics_file).run
