"""The one run-state function: a run's state and times, reconciled from its record, its job's own record and Ray.

    refresh(run, clients=None) -> dict    status.json's fields, reconciled (and recorded when the disk allows)
    run_times(status, job=None)           the run's (start, end) from its record (and its job's, job.json)
    elapsed_s(status, now=None, job=None) the run's running time from its record (None before its job started)

Every view of a run (`grpolab runs`, `status`, `logs`, `stop`, `run --wait`, `--json`, the monitor, the
dashboard, the notebooks) asks `refresh`, so they can never disagree. It decides, in this order:
1. a recorded end (SUCCEEDED, FAILED, STOPPED, LOST) stays;
2. the job's own end record (job.json with an exit code, written by grpolab.jobs.job_entry) ends the run, with
   its start and end times, even when nobody watched it and whatever Ray says by then;
3. a run not submitted yet is PENDING while the process submitting it lives, and FAILED with the cause once it
   is gone without Ray having the job (a refused address, a full disk, a head stopped mid-submission);
4. Ray's answer for the job (state, message, start and end times);
5. when Ray cannot answer (its head gone, unreachable, the job unknown): RUNNING while the job's wrapper still
   runs on this machine, else LOST (the last sign of life as its end).
What it decides is written back to status.json when it can be; on a full disk or a read-only runs folder
nothing is written, the answer is the same, and its note says it was not recorded. A run that ends without its
job having started has its secrets file removed.

The record's time fields (seconds since the epoch; None while unknown):
    created    the run directory was made        submitted  Ray accepted the job
    started    the job began running             ended      the job ended (or, LOST, was last seen alive)
A run's time is its own, whoever looks and whenever: from `started` (the job's own start, job.json, when it wrote
one) to `ended` (else job.json's end; a finished record with neither: its last update), never from when a view
opened. Every view (`status --json`, the monitor, the dashboard, the notebooks' progress) asks `run_times`.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path
from typing import Any

from grpolab.jobs import cluster, secrets
from grpolab.jobs.cluster import ClusterError, Endpoint
from grpolab.jobs.job_entry import ANSI
from grpolab.jobs.runs import TERMINAL_STATES, NotARun, Run, RunNotFound, read_tail, resolve_run
from grpolab.recipe.files import json_object

LOG_TAIL_LINES = 40
SUBMIT_GRACE_S = 600.0  # a record that names no submitter (an older grpolab's) is PENDING this long at most


def run_times(status: dict, job: dict | None = None) -> tuple[float | None, float | None]:
    """(start, end) of the run in seconds since the epoch, from its record: the job's own start (`job`, its
    job_record, when given) else the record's `started`; the record's `ended` else the job's; a finished record
    with neither: its last update (records from before runs kept their end). None where unknown; never an end
    before the start (two machines' clocks)."""
    job = job or {}
    start = next((float(t) for t in (job.get("started"), status.get("started")) if _stamp(t)), None)
    end = next((float(t) for t in (status.get("ended"), job.get("ended")) if _stamp(t)), None)
    if end is None and status.get("state") in TERMINAL_STATES and _stamp(status.get("updated")):
        end = float(status["updated"])
    if start is not None and end is not None and end < start:
        end = start
    return start, end


def elapsed_s(status: dict, now: float | None = None, job: dict | None = None) -> float | None:
    """How long the run's job has run: from its start to its end (to `now` while it runs; see run_times); None
    before it started. From the run's record, so every view agrees, whenever it was opened."""
    start, end = run_times(status, job)
    if start is None:
        return None
    return max(0.0, (end if end is not None else (time.time() if now is None else now)) - start)


def _stamp(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e11


def job_record(run: Run) -> dict:
    """What the job wrote about itself (job.json): pid, host, start, and at its end the exit code and end time;
    ill-typed values are dropped ({} when there is none)."""
    data = json_object(run.job_file)
    out = {}
    for key in ("pid", "child_pid", "exit_code", "signal"):
        if isinstance(data.get(key), int) and not isinstance(data.get(key), bool):
            out[key] = data[key]
    for key in ("started", "ended"):
        if _stamp(data.get(key)):
            out[key] = float(data[key])
    if isinstance(data.get("host"), str):
        out["host"] = data["host"]
    out["stopped"] = data.get("stopped") is True
    return out


def driver_alive(record: dict) -> bool:
    """True when the job's wrapper still runs on this machine (its head may be gone: the trainer goes on)."""
    return _alive(record.get("pid"), record.get("host"), record.get("started", time.time()))


def _alive(pid: Any, host: Any, since: float) -> bool:
    # lazy: psutil (only a local job's liveness check needs it)
    import psutil

    if not isinstance(pid, int) or host != socket.gethostname():
        return False
    try:
        proc = psutil.Process(pid)
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE and proc.create_time() <= since + 1
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def submitter() -> dict:
    """This process, as the submitter a run's record names while its submission is under way."""
    # lazy: psutil (only recording the submitter needs it)
    import psutil

    return {"pid": os.getpid(), "host": socket.gethostname(), "since": psutil.Process().create_time()}


def _submitting(status: dict) -> bool:
    """True while the process that submits this run may still do so."""
    who = status.get("submitter")
    created = status.get("created") if _stamp(status.get("created")) else 0.0
    if not isinstance(who, dict) or who.get("host") != socket.gethostname():  # unknown, or another machine's
        return time.time() - created < SUBMIT_GRACE_S
    since = who.get("since") if _stamp(who.get("since")) else 0.0
    return _alive(who.get("pid"), who.get("host"), since)


class Clients:
    """Jobs API clients by endpoint, made once per view: a listing asks each cluster once, and a cluster that does
    not answer is asked once."""

    def __init__(self) -> None:
        self._made: dict[Endpoint, tuple[Any, str]] = {}

    def get(self, ep: Endpoint) -> tuple[Any, str]:
        """(client, "") or (None, why the cluster cannot answer)."""
        if ep not in self._made:
            self._made[ep] = self._make(ep)
        return self._made[ep]

    @staticmethod
    def _make(ep: Endpoint) -> tuple[Any, str]:
        if ep.embedded:
            here = cluster.embedded_endpoint()
            if ep.dashboard not in (None, here.dashboard):
                return None, f"its embedded Ray head ({ep.dashboard}) is not the one configured here ({here.dashboard})"
            if not cluster.head_alive():
                return None, "its Ray head is gone"
            ep = here
        try:
            return cluster.jobs_api(ep), ""
        except ClusterError as exc:
            return None, f"Ray is unreachable ({str(exc).splitlines()[0]})"


def refresh(run: Run, clients: Clients | None = None) -> dict:
    """The run's reconciled status (see the module docstring); BadRecord when its record is unreadable."""
    status = run.record()
    if status.get("state") in TERMINAL_STATES:  # an end, once recorded, stays
        return status
    fields = _reconcile(run, status, clients or Clients())
    if not fields:
        return status
    if fields.get("state") in TERMINAL_STATES and not run.job_file.exists():
        with contextlib.suppress(OSError):
            secrets.discard(run.path)  # the job never started: it never took its secrets
    return _keep(run, status, fields)


def _keep(run: Run, status: dict, fields: dict) -> dict:
    """Write the decided fields when the disk allows; the answer is the same either way."""
    try:
        return run.write_status(**fields)
    except (OSError, NotARun) as exc:
        merged = {**status, **fields}
        why = "its folder is gone" if isinstance(exc, NotARun) else (getattr(exc, "strerror", None) or str(exc))
        merged["note"] = "; ".join(filter(None, [merged.get("note"), f"not recorded in status.json: {why}"]))
        return merged


def _reconcile(run: Run, status: dict, clients: Clients) -> dict:
    job = job_record(run)
    if "exit_code" in job:
        return _from_job_record(run, status, job)
    job_id = status.get("job_id")
    ep = Endpoint.from_record(status)
    if not job_id:
        if status.get("state") != "PENDING":
            return {}  # a record that names no job (written by hand): nothing to reconcile it with
        if _submitting(status):
            return {}
        found = _ask(clients, ep, run.run_id) if ep is not None else None
        if found is None:
            return _submission_failed(run, status)
        job_id = run.run_id  # Ray accepted it; the submitter ended before it could record that
    client, why = clients.get(ep) if ep is not None else (None, "its record names no Ray cluster")
    if client is None:
        return _without_ray(run, status, job, why)
    try:
        info = client.get_job_info(job_id)
    except Exception:  # the job is unknown to this cluster (the head was restarted)
        return _without_ray(run, status, job, f"Ray no longer knows job {job_id} (its head was restarted)")
    return _from_ray(run, job, job_id, client, info)


def _ask(clients: Clients, ep: Endpoint, job_id: str):
    """Ray's JobDetails for a job grpolab submitted for run `job_id`, or None."""
    client, _ = clients.get(ep)
    if client is None:
        return None
    try:
        info = client.get_job_info(job_id)
    except Exception:
        return None
    meta = getattr(info, "metadata", None) or {}
    owner = meta.get("grpolab_run_dir") if isinstance(meta, dict) else None
    return info if owner and Path(owner).name == job_id else None


def _last_seen(run: Run) -> float:
    """The last sign of life of a run's job: the newest of its log, metrics and job record."""
    times = []
    for path in (run.job_log, run.metrics_file, run.job_file):
        with contextlib.suppress(OSError):
            times.append(path.stat().st_mtime)
    return max(times) if times else time.time()


def _stopped_message(status: dict, job: dict, code) -> str:
    """Why a job that a signal ended was stopped: asked for (`grpolab stop`, Stop run: the record says so), or not:
    then the embedded head it ran on went away (`grpolab head stop`, or it died), or Ray stopped it (its own `ray job
    stop`, its dashboard). "stopped with code -15" said none of it (issue 44)."""
    signal = f"signal {job['signal']}" if isinstance(job.get("signal"), int) else f"code {code}"
    if status.get("stop_requested"):
        return f"stopped on request (grpolab stop or Stop run): the job ended on {signal}"
    ep = Endpoint.from_record(status)
    if ep is not None and ep.embedded:
        record = cluster.head_record()
        restarted = isinstance(record.get("started"), (int, float)) and record["started"] > (job.get("ended") or 0)
        if restarted or not cluster.head_alive(timeout=1.0):
            return (
                f"its Ray head went away mid-run (`grpolab head stop`, or the head died): the job ended on {signal}; "
                "nobody stopped this run. Its finished steps and checkpoints are kept: `grpolab resume` continues it"
            )
    return f"Ray stopped the job ({signal}) without `grpolab stop` asking: `ray job stop`, Ray's dashboard or the head"


def _from_job_record(run: Run, status: dict, job: dict) -> dict:
    code = job["exit_code"]
    state = "STOPPED" if job.get("stopped") else ("SUCCEEDED" if code == 0 else "FAILED")
    stopped = _stopped_message(status, job, code) if state == "STOPPED" else ""
    return {
        "state": state,
        "finalized": True,
        "exit_code": code,
        "started": job.get("started", status.get("started")),
        "ended": job.get("ended", _last_seen(run)),
        "message": stopped or ("" if state == "SUCCEEDED" else f"the job exited with code {code}"),
        "log_tail": read_tail(run.job_log, LOG_TAIL_LINES),
        "note": "state from the run's own record (job.json)",
    }


def _submission_failed(run: Run, status: dict) -> dict:
    who = status.get("submitter") if isinstance(status.get("submitter"), dict) else {}
    cause = (
        f"the process that submitted it (pid {who.get('pid')}) ended before Ray accepted the job"
        if who
        else f"it was not submitted within {SUBMIT_GRACE_S:.0f} s of being created"
    )
    return {
        "state": "FAILED",
        "finalized": True,
        "ended": _last_seen(run) if run.job_log.exists() else status.get("updated") or time.time(),
        "message": status.get("message") or f"the submission did not complete: {cause}",
        "note": "never submitted: no job ran",
    }


def _without_ray(run: Run, status: dict, job: dict, why: str) -> dict:
    """The run's end when Ray cannot tell it: RUNNING while its job goes on here, else LOST."""
    if driver_alive(job):
        return {
            "state": "RUNNING",
            "started": job.get("started"),
            "note": f"{why}; the job goes on (pid {job['pid']} on this machine)",
        }
    if status.get("state") in ("PENDING", "RUNNING"):
        return {
            "state": "LOST",
            "finalized": True,
            "started": job.get("started", status.get("started")),
            "ended": _last_seen(run),
            "log_tail": read_tail(run.job_log, LOG_TAIL_LINES),
            "lost": f"{why}, and the job left no end record",
            "note": f"{why}; the job left no end record",
        }
    return {"note": why}


def _from_ray(run: Run, job: dict, job_id: str, client, info) -> dict:
    state = str(info.status.value if hasattr(info.status, "value") else info.status)
    fields: dict[str, Any] = {"state": state, "message": info.message or "", "note": None, "job_id": job_id}
    if info.start_time:
        fields["started"] = job.get("started", info.start_time / 1000)
    if info.end_time:
        fields["ended"] = job.get("ended", info.end_time / 1000)
    tail: list[str] = []
    if not run.job_file.exists():  # no wrapper keeps the log (a remote cluster, or it never started)
        try:
            logs = ANSI.sub("", client.get_job_logs(job_id))  # Ray colours its lines; records want plain text
        except Exception:
            logs = ""
        tail = logs.strip().splitlines()[-LOG_TAIL_LINES:]
        with contextlib.suppress(OSError):
            run.job_log.write_text(logs)
    if state in TERMINAL_STATES:
        fields["finalized"] = True
        fields["exit_code"] = getattr(info, "driver_exit_code", None)
        fields["log_tail"] = read_tail(run.job_log, LOG_TAIL_LINES) or tail
    return fields


def find_job(run_id: str, address: str | None = None):
    """(endpoint, JobDetails) of the Ray job grpolab submitted as run `run_id`, asked of the embedded head (when it
    runs) and of `address` / RAY_ADDRESS; None when no cluster has it. For a run whose folder was deleted."""
    clients = Clients()
    candidates = [cluster.embedded_endpoint()]
    with contextlib.suppress(ClusterError):
        ep = cluster.resolve(address)
        if ep is not None:
            candidates.insert(0, ep)
    for ep in candidates:
        info = _ask(clients, ep, run_id)
        if info is not None:
            return ep, info
    return None


def live_state(run_dir: str) -> str | None:
    """The state of the run at run_dir when it is not over (None: over, gone, or not a run)."""

    if not run_dir or not Path(run_dir).is_dir():
        return None
    try:
        state = refresh(resolve_run(run_dir)).get("state")
    except (RunNotFound, OSError, ValueError):
        return None
    return None if state in TERMINAL_STATES else str(state)
