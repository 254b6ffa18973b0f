"""Controlling a submitted run: stop its job, read its log, and reach a job whose run folder was deleted.

Every decision about a run's state is grpolab.jobs.state's; this module acts on it:
- `stop_run(run)` stops the run's Ray job (only a job grpolab submitted for that run: its metadata says so). A
  run whose submission is under way is asked to stop (its record says so, and the submitter stops the job as soon
  as Ray accepts it), and `stop_run` waits for the submission to settle, then stops what was submitted. When the
  run's head is gone but its job still runs on this machine, the job is stopped directly. Nothing here needs to
  write: on a full disk or a read-only runs folder a stop still stops.
- `log_lines(run, tail)` reads the job's log from its end (a 300 MB log costs its last lines, not its size).
- `find_orphan(run_id)` / `stop_orphan(...)`: a run folder deleted mid-run (`rm -rf runs/ID`) still has its Ray
  job, found by the run id (the Ray submission id).
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from pathlib import Path

from grpolab import run_folder
from grpolab.jobs import state
from grpolab.jobs.cluster import ClusterError, Endpoint
from grpolab.jobs.runs import TERMINAL_STATES, NotARun, Run, read_tail

SUBMISSION_WAIT_S = 150.0  # a submission retries a busy head's "try again" for 90 s; wait a little longer


class NothingToStop(Exception):
    """The run has ended (or was lost with its head); nothing was stopped. The message says which."""


def check_owned(run_id: str, info) -> None:
    """Refuse to act on a Ray job that grpolab did not submit for this run: its metadata must name this run's
    directory (grpolab.jobs.launch sets `grpolab_run_dir`). `info` is the Jobs API's JobDetails/JobInfo."""
    meta = getattr(info, "metadata", None) or {}
    owner = meta.get("grpolab_run_dir") if isinstance(meta, dict) else None
    if not owner or Path(owner).name != run_id:
        job = getattr(info, "submission_id", None) or getattr(info, "job_id", None) or "?"
        raise ClusterError(
            f"job {job} is not one grpolab submitted for run {run_id} (its metadata names "
            f"{owner or 'no grpolab run'}); not touching it"
        )


def _ended(run: Run, status: dict) -> NothingToStop:
    note = f" ({status['note']})" if status.get("note") else ""
    return NothingToStop(f"run {run.run_id} is {status['state']}: nothing to stop{note}")


def _await_submission(run: Run, clients: state.Clients, timeout: float) -> dict:
    """Ask the submitter to stop the job once Ray has it (best effort: a read-only record cannot say so), then
    wait until the submission has settled: Ray has the job, or the submission failed."""
    with contextlib.suppress(OSError, NotARun):
        run.write_status(stop_requested=time.time())
    deadline = time.time() + timeout
    status = state.refresh(run, clients)
    while not status.get("job_id") and status.get("state") not in TERMINAL_STATES:
        if time.time() > deadline:
            raise ClusterError(
                f"run {run.run_id} is still being submitted after {timeout:.0f} s; its submitter stops the job as "
                f"soon as Ray accepts it (check with `grpolab status {run.run_id}`)"
            )
        time.sleep(0.5)
        status = state.refresh(run, clients)
    return status


def stop_run(run: Run, timeout: float = 60.0) -> dict:
    """Stop the job; the record keeps every finished step. Returns the final status (NothingToStop when the run
    has ended, or was lost with its head)."""
    clients = state.Clients()
    status = state.refresh(run, clients)
    if status.get("state") in TERMINAL_STATES:
        raise _ended(run, status)
    if not status.get("job_id"):  # a submission under way: stop what it submits
        status = _await_submission(run, clients, SUBMISSION_WAIT_S)
        if status.get("state") in TERMINAL_STATES:
            raise _ended(run, status)
    with contextlib.suppress(OSError, NotARun):  # the record says the stop was asked for, not the head going away
        run.write_status(stop_requested=time.time())
    ep = Endpoint.from_record(status)
    client, why = clients.get(ep) if ep is not None else (None, "its record names no Ray cluster")
    if client is None:
        job = state.job_record(run)
        if not state.driver_alive(job):
            status = state.refresh(run, clients)
            raise NothingToStop(
                f"cannot reach the Ray cluster of run {run.run_id} ({why}) and its job does not run here; "
                f"the run is {status.get('state')}"
            )
        # lazy: psutil (only stopping a local job's processes needs it)
        import psutil

        with contextlib.suppress(psutil.NoSuchProcess):  # the head is gone: stop the orphaned job ourselves
            psutil.Process(job["pid"]).terminate()
    else:
        job_id = status.get("job_id") or run.run_id
        try:  # only a job grpolab submitted for this run (its metadata), and one Ray still knows
            info = client.get_job_info(job_id)
        except Exception as exc:  # the Jobs API answers 404 for a job of an earlier head
            raise ClusterError(
                f"Ray does not know job {job_id} of run {run.run_id} (the head that ran it "
                f"has restarted?): {str(exc).splitlines()[0] if str(exc) else exc}"
            ) from None
        check_owned(run.run_id, info)
        client.stop_job(job_id)
    deadline = time.time() + timeout
    status = state.refresh(run, clients)
    while status.get("state") not in TERMINAL_STATES and time.time() < deadline:
        time.sleep(1.0)
        status = state.refresh(run, clients)
    return status


def write_log(run: Run, tail: int = 0, out=None) -> bool:
    """Print the run's job log (its last `tail` lines; 0: all of it, streamed); False when it has none yet."""
    out = out or sys.stdout
    if not run.job_log.is_file():
        return False
    if tail:
        lines = read_tail(run.job_log, tail)
        if lines:
            out.write("\n".join(lines) + "\n")
        return True
    out.flush()
    with open(run.job_log, "rb") as fh:
        shutil.copyfileobj(fh, getattr(out, "buffer", None) or _TextSink(out), 1 << 20)
    return True


class _TextSink:
    """A binary-writable view of a text stream (pytest's captured stdout has no .buffer)."""

    def __init__(self, out) -> None:
        self.out = out

    def write(self, data: bytes) -> int:
        self.out.write(data.decode("utf-8", errors="replace"))
        return len(data)


def find_orphan(run_id: str, address: str | None = None):
    """(endpoint, JobDetails) of the Ray job of run `run_id` whose folder is gone, or None."""
    found = state.find_job(run_id, address)
    if found is None:
        return None
    ep, info = found
    owner = Path((getattr(info, "metadata", None) or {}).get("grpolab_run_dir", ""))
    return (ep, info) if not run_folder.status_file(owner).exists() else None


def job_summary(info) -> dict:
    """Ray's JobDetails as the few fields a person reads: state, message, run folder."""
    return {
        "state": str(info.status.value if hasattr(info.status, "value") else info.status),
        "message": info.message or "",
        "run_dir": (getattr(info, "metadata", None) or {}).get("grpolab_run_dir"),
    }


def describe_orphan(run_id: str, ep: Endpoint, info) -> str:
    job = job_summary(info)
    return (
        f"run {run_id}: its folder {job['run_dir']} was deleted (no record is left); its Ray job on the {ep.label} "
        f"is {job['state']}" + (f": {job['message']}" if job["message"] else "")
    )


def stop_orphan(run_id: str, ep: Endpoint, timeout: float = 60.0) -> str:
    """Stop the Ray job of a run whose folder was deleted; its final Ray state."""
    client, why = state.Clients().get(ep)
    if client is None:
        raise ClusterError(f"cannot stop job {run_id}: {why}")
    info = client.get_job_info(run_id)
    check_owned(run_id, info)
    job_state = str(info.status.value if hasattr(info.status, "value") else info.status)
    if job_state in TERMINAL_STATES:
        raise NothingToStop(f"run {run_id}: its folder was deleted and its Ray job is {job_state}: nothing to stop")
    client.stop_job(run_id)
    deadline = time.time() + timeout
    while job_state not in TERMINAL_STATES and time.time() < deadline:
        time.sleep(1.0)
        info = client.get_job_info(run_id)
        job_state = str(info.status.value if hasattr(info.status, "value") else info.status)
    return job_state
