"""Launch: every run is a Ray job submitted with Ray's Job Submission API, locally or on a cluster.

`submit()` validates (errors stop the launch before anything is submitted), creates the run directory,
renders the launch for the installed verl (or the local TRL trainer), and submits it with the recipe's env in
the job's runtime_env. The Ray submission id IS the run id, so `refresh_status()` finds the job again from
any process, even after the launcher was killed. Secrets never reach the run record.

On the embedded head the job is wrapped by `grpolab.jobs.job_entry`: secrets travel in a user-only file of the run
directory instead of Ray's runtime_env (which Ray logs and returns from its Jobs API), and the job records its
own end and log in the run directory. `refresh_status()` reconciles Ray's answer with that record, so a run whose
head is gone ends SUCCEEDED / FAILED from its own record, or LOST when it left none, never RUNNING forever.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from grpolab.jobs import cluster, job_entry, provenance, runs
from grpolab.jobs.job_entry import ANSI
from grpolab.jobs.secrets import (  # noqa: F401 (kept importable)
    REDACTED,
    SECRET,
    redact_env,
    redact_text,
    secret_values,
)
from grpolab.jobs.secrets import is_secret as _is_secret
from grpolab.paths import PROJECT_ROOT
from grpolab.problems import Problem, errors
from grpolab.recipe.loader import recipe_dict, to_yaml
from grpolab.recipe.schema import Recipe
from grpolab.verl.render import Launch, render

# passed from the launcher's environment into the job when the recipe logs there; never recorded
PASS_THROUGH = {"wandb": ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_MODE", "WANDB_ENTITY")}
LOG_TAIL_LINES = 40
AGENT_WAIT_S = 90
VERSIONS = ("grpolab", "verl", "ray", "torch", "transformers", "trl", "vllm", "vllm-ascend", "torch_npu")


class LaunchBlocked(Exception):
    """The recipe has errors; nothing was submitted."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__(f"{len(problems)} error(s) in the recipe; nothing was submitted")


def is_secret(name: str, marked=()) -> bool:
    return _is_secret(name, marked)


def redact(env: dict[str, str], marked=()) -> dict[str, str]:
    """env with secret values redacted (grpolab.jobs.secrets: by name, and the names the recipe marks)."""
    return redact_env(env, marked)


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in VERSIONS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _git_commit() -> str | None:
    if not (PROJECT_ROOT / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


@dataclass
class Plan:
    """What would be submitted (for --dry-run) or was submitted."""

    recipe: Recipe
    launch: Launch
    entrypoint: str
    env: dict[str, str]  # the job's env, secrets included: never written anywhere
    endpoint: str

    def describe(self) -> dict:
        return {
            "recipe": self.recipe.name,
            "endpoint": self.endpoint,
            "entrypoint": self.entrypoint,
            "env": redact(self.env, self.recipe.secrets),
            "notes": [n.to_dict() for n in self.launch.notes],
        }


def plan(recipe: Recipe, run_dir: str | None = None, address: str | None = None) -> Plan:
    """Render the submission without submitting anything; LaunchBlocked when the gate finds an error."""
    _gate(recipe)
    return _assemble(recipe, run_dir, address)


def _gate(recipe: Recipe) -> None:
    from grpolab.rules.gate import gate

    problems = errors(gate(recipe))
    if problems:
        raise LaunchBlocked(problems)


def _assemble(recipe: Recipe, run_dir: str | None, address: str | None) -> Plan:
    """The submission of a recipe that passed the gate: its launch, entrypoint and the job's env."""
    launch = render(recipe, run_dir)
    ep = cluster.resolve(address)
    python = sys.executable if ep is None else "python3"  # a remote cluster has its own interpreter
    env = dict(launch.env)
    for logger, names in PASS_THROUGH.items():
        if logger in recipe.trainer.logger:
            env.update({n: os.environ[n] for n in names if n in os.environ and n not in env})
            if "WANDB_API_KEY" not in env and "WANDB_MODE" not in env:
                env["WANDB_MODE"] = "offline"  # no key: log offline, never block the run
            if run_dir and logger == "wandb":
                env.setdefault("WANDB_DIR", run_dir)  # the wandb run's files live in the run directory
    label = "embedded local Ray head (127.0.0.1)" if ep is None else ep.label
    return Plan(recipe, launch, launch.command(python), env, label)


def submit(
    recipe: Recipe,
    address: str | None = None,
    run_id: str | None = None,
    progress=print,
    root: Path | None = None,
    resumed_from: dict | None = None,
) -> runs.Run:
    """Validate, create runs/<run_id>/, and submit the Ray job. Returns the run. `resumed_from`: the parent run a
    resume continues (grpolab.jobs.resume), recorded in launch.json and status.json."""
    _gate(recipe)  # once, and before anything is created or started (LaunchBlocked)
    ep = cluster.endpoint(address, progress=progress)
    run = runs.create_run(recipe.name, run_id=run_id, root=root)
    p = _assemble(recipe, str(run.path), address)
    run.recipe_file.write_text(_redacted_recipe(recipe))
    entrypoint, job_env = p.entrypoint, dict(p.env)
    if ep.embedded:  # the job wraps itself: secrets by a user-only file, its own end record and log
        secret = {k: v for k, v in job_env.items() if is_secret(k, recipe.secrets)}
        job_env = {k: v for k, v in job_env.items() if k not in secret}
        if secret:
            fd = os.open(run.path / job_entry.SECRETS_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as fh:
                json.dump(secret, fh)
        python = shlex.quote(sys.executable)
        entrypoint = f"{python} -m grpolab.jobs.job_entry {shlex.quote(str(run.path))} -- {p.entrypoint}"
        job_env.update(
            {k: v for k, v in cluster.embedded_env().items() if k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
        )
    record = {
        "run_id": run.run_id,
        "recipe": recipe.name,
        "recipe_files": recipe.files,
        "engine": recipe.train.engine,
        "entrypoint": redact_text(entrypoint, secret_values(p.env, recipe.secrets)),
        "env": redact(p.env, recipe.secrets),
        "versions": _versions() | provenance.packages(recipe),  # and what else shapes a run (its stack pins)
        "git_commit": _git_commit(),
        "ray": {"dashboard": ep.dashboard, "gcs": ep.gcs, "embedded": ep.embedded},
        "notes": [n.to_dict() for n in p.launch.notes],
        "created": time.time(),
        "provenance": provenance.record(recipe, recipe_dict(recipe) | {"env": redact(recipe.env, recipe.secrets)}),
        "resumed_from": resumed_from,
    }
    run.launch_file.write_text(json.dumps(record, indent=2) + "\n")
    client = cluster.job_client(ep)
    deadline = time.time() + AGENT_WAIT_S
    while True:
        try:
            job_id = client.submit_job(
                entrypoint=entrypoint,
                submission_id=run.run_id,
                runtime_env={"env_vars": job_env},
                metadata={"grpolab_run_dir": str(run.path), "recipe": recipe.name},
            )
            break
        except Exception as exc:  # the Jobs API raises RuntimeError/ConnectionError variants
            # a head that has just started answers "No available agent ... try again later" for a few seconds
            if "try again" in str(exc) and time.time() < deadline:
                time.sleep(2.0)
                continue
            (run.path / job_entry.SECRETS_FILE).unlink(missing_ok=True)
            run.write_status(state="FAILED", message=f"submission failed: {exc}", ended=time.time(), finalized=True)
            raise cluster.ClusterError(f"could not submit the job to {ep.label}: {exc}") from None
    wandb = None
    if "wandb" in recipe.trainer.logger:  # where the monitor says the wandb run is
        wandb = {
            "mode": p.env.get("WANDB_MODE", "online"),
            "dir": f"{p.env.get('WANDB_DIR', run.path)}/wandb",
            "project": recipe.trainer.project,
        }
    run.write_status(
        state="PENDING",
        job_id=job_id,
        ray_address=ep.dashboard or ep.gcs,
        embedded=ep.embedded,
        recipe=recipe.name,
        total_steps=recipe.trainer.total_steps,
        started=time.time(),
        wandb=wandb,
        resumed_from=resumed_from and {k: resumed_from[k] for k in ("run_id", "step")},
    )
    progress(f"submitted run {run.run_id} to the {ep.label}; run directory: {run.path}")
    return run


def _redacted_recipe(recipe: Recipe) -> str:
    return to_yaml(recipe, env=redact(recipe.env, recipe.secrets))


def _client_for(run: runs.Run):
    """The Jobs API client of the run's cluster, or None when that cluster does not answer."""
    status = run.status()
    address = status.get("ray_address")
    if not address:
        return None
    if status.get("embedded"):
        if not cluster.head_alive():
            return None
        return cluster.job_client(cluster.embedded_endpoint())
    return cluster.job_client(cluster.parse_address(address))


def job_record(run: runs.Run) -> dict:
    """What the job wrote about itself (grpolab.jobs.job_entry): pid, host, and at its end the exit code."""
    try:
        return json.loads((run.path / job_entry.RECORD_FILE).read_text())
    except (OSError, ValueError):
        return {}


def _driver_alive(record: dict) -> bool:
    """True when the job's wrapper still runs on this machine (its head may be gone: the trainer goes on)."""
    import socket

    import psutil

    pid = record.get("pid")
    if not pid or record.get("host") != socket.gethostname():
        return False
    try:
        proc = psutil.Process(pid)
        return (
            proc.is_running()
            and proc.status() != psutil.STATUS_ZOMBIE
            and proc.create_time() <= record.get("started", time.time()) + 1
        )
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def _log_text(run: runs.Run) -> str:
    try:
        return run.job_log.read_text(errors="replace")
    except OSError:
        return ""


def _finish_from_record(run: runs.Run, status: dict, why: str) -> dict:
    """The run's end when Ray cannot tell it: from the job's own record, else LOST (or still RUNNING when the
    orphaned job goes on here)."""
    record = job_record(run)
    logs = _log_text(run)
    tail = logs.strip().splitlines()[-LOG_TAIL_LINES:]
    if "exit_code" in record:
        code = record["exit_code"]
        state = "STOPPED" if record.get("stopped") else ("SUCCEEDED" if code == 0 else "FAILED")
        fields = {
            "state": state,
            "finalized": True,
            "exit_code": code,
            "ended": record.get("ended"),
            "log_tail": tail,
            "note": f"{why}; state from the run's own record (job.json)",
        }
        return run.write_status(**fields)
    if _driver_alive(record):
        return run.write_status(state="RUNNING", note=f"{why}; the job goes on (pid {record['pid']} on this machine)")
    if status.get("state") in ("PENDING", "RUNNING") or not status.get("state"):
        return run.write_status(
            state="LOST",
            finalized=True,
            ended=time.time(),
            log_tail=tail,
            lost=f"{why}, and the job left no end record",
            note=f"{why}; the job left no end record",
        )
    return run.write_status(note=why)


def refresh_status(run: runs.Run) -> dict:
    """Ask Ray for the job's state and reconcile it with the job's own record (the monitor names the cause of a
    failure from the log tail kept here).

    A run whose cluster is unreachable or no longer knows the job ends from its own record (job.json) or LOST;
    its log is in logs/job.log either way."""
    status = run.status()
    if status.get("state") in runs.TERMINAL_STATES and status.get("finalized"):
        return status
    if not status.get("job_id") and status.get("state") == "PENDING":
        return status  # created, not submitted yet
    try:
        client = _client_for(run)
    except cluster.ClusterError as exc:
        return _finish_from_record(run, status, f"Ray is unreachable ({str(exc).splitlines()[0]})")
    if client is None:
        return _finish_from_record(run, status, "its Ray head is gone")
    try:
        info = client.get_job_info(status.get("job_id") or run.run_id)
        logs = client.get_job_logs(status.get("job_id") or run.run_id)
    except Exception:  # the job is unknown to this cluster (the head was restarted)
        return _finish_from_record(run, status, f"Ray no longer knows job {run.run_id} (its head was restarted)")
    logs = ANSI.sub("", logs)  # Ray colours its log lines; records and notebooks want plain text
    if not (run.path / job_entry.RECORD_FILE).exists():
        run.job_log.write_text(logs)  # no wrapper wrote the log (a remote cluster, or the job never started)
    state = str(info.status.value if hasattr(info.status, "value") else info.status)
    fields = {"state": state, "message": info.message or "", "note": None}
    if info.end_time:
        fields["ended"] = info.end_time / 1000
    if state in runs.TERMINAL_STATES:
        fields["finalized"] = True
        fields["exit_code"] = getattr(info, "driver_exit_code", None)
        fields["log_tail"] = logs.strip().splitlines()[-LOG_TAIL_LINES:]
    return run.write_status(**fields)


class NothingToStop(Exception):
    """The run has ended (or was lost with its head); nothing was stopped. The message says which."""


def stop_run(run: runs.Run, timeout: float = 60.0) -> dict:
    """Stop the job; the record keeps every finished step. Returns the final status.

    When the run's Ray head is gone but its job still runs on this machine, the job is stopped directly; a run
    that has ended, or was lost with its head, raises NothingToStop."""
    status = refresh_status(run)
    if status.get("state") in runs.TERMINAL_STATES:
        raise NothingToStop(
            f"run {run.run_id} is {status['state']}: nothing to stop"
            + (f" ({status['note']})" if status.get("note") else "")
        )
    client = _client_for(run)
    if client is None:
        record = job_record(run)
        if not _driver_alive(record):
            status = refresh_status(run)
            raise NothingToStop(
                f"cannot reach the Ray cluster of run {run.run_id} and its job does not run here; "
                f"the run is {status.get('state')}"
            )
        import psutil

        with contextlib.suppress(psutil.NoSuchProcess):  # the head is gone: stop the orphaned job ourselves
            psutil.Process(record["pid"]).terminate()
    else:
        job_id = status.get("job_id") or run.run_id
        try:  # only a job grpolab submitted for this run (its metadata), and one Ray still knows
            info = client.get_job_info(job_id)
        except Exception as exc:  # the Jobs API answers 404 for a job of an earlier head
            raise cluster.ClusterError(
                f"Ray does not know job {job_id} of run {run.run_id} (the head that ran it "
                f"has restarted?): {str(exc).splitlines()[0] if str(exc) else exc}"
            ) from None
        runs.check_owned(run, info)
        client.stop_job(job_id)
    deadline = time.time() + timeout
    status = refresh_status(run)
    while status.get("state") not in runs.TERMINAL_STATES and time.time() < deadline:
        time.sleep(1.0)
        status = refresh_status(run)
    return status
