"""Launch: every run is a Ray job submitted with Ray's Job Submission API, locally or on a cluster.

`submit()` validates (errors stop the launch before anything is submitted), creates the run directory,
renders the launch for the installed verl (or the local TRL trainer), and submits it with the recipe's env in
the job's runtime_env. The Ray submission id IS the run id, so `refresh_status()` finds the job again from
any process, even after the launcher was killed. Secrets never reach the run record.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from grpolab import cluster, runs
from grpolab.paths import PROJECT_ROOT
from grpolab.problems import Problem, errors
from grpolab.recipe import to_yaml
from grpolab.render import Launch, render
from grpolab.schema import Recipe

SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)", re.IGNORECASE)
REDACTED = "***redacted***"
# passed from the launcher's environment into the job when the recipe logs there; never recorded
PASS_THROUGH = {"wandb": ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_MODE", "WANDB_ENTITY")}
LOG_TAIL_LINES = 40
AGENT_WAIT_S = 90
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
VERSIONS = ("grpolab", "verl", "ray", "torch", "transformers", "trl", "vllm", "vllm-ascend", "torch_npu")


class LaunchBlocked(Exception):
    """The recipe has errors; nothing was submitted."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__(f"{len(problems)} error(s) in the recipe; nothing was submitted")


def redact(env: dict[str, str]) -> dict[str, str]:
    return {k: (REDACTED if SECRET.search(k) else v) for k, v in env.items()}


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
        out = subprocess.run(["git", "-C", str(PROJECT_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
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
        return {"recipe": self.recipe.name, "endpoint": self.endpoint, "entrypoint": self.entrypoint,
                "env": redact(self.env), "notes": [n.to_dict() for n in self.launch.notes]}


def plan(recipe: Recipe, run_dir: str | None = None, address: str | None = None) -> Plan:
    """Render the submission without submitting anything."""
    from grpolab.validate import validate

    problems = errors(validate(recipe))
    if problems:
        raise LaunchBlocked(problems)
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


def submit(recipe: Recipe, address: str | None = None, run_id: str | None = None, progress=print,
           root: Path | None = None) -> runs.Run:
    """Validate, create runs/<run_id>/, and submit the Ray job. Returns the run."""
    plan(recipe, address=address)  # raises LaunchBlocked before anything is created
    ep = cluster.endpoint(address, progress=progress)
    run = runs.create_run(recipe.name, run_id=run_id, root=root)
    p = plan(recipe, run_dir=str(run.path), address=address)
    run.recipe_file.write_text(_redacted_recipe(recipe))
    record = {
        "run_id": run.run_id,
        "recipe": recipe.name,
        "recipe_files": recipe.files,
        "engine": recipe.train.engine,
        "entrypoint": p.entrypoint,
        "env": redact(p.env),
        "versions": _versions(),
        "git_commit": _git_commit(),
        "ray": {"dashboard": ep.dashboard, "gcs": ep.gcs, "embedded": ep.embedded},
        "notes": [n.to_dict() for n in p.launch.notes],
        "created": time.time(),
    }
    run.launch_file.write_text(json.dumps(record, indent=2) + "\n")
    client = cluster.job_client(ep)
    deadline = time.time() + AGENT_WAIT_S
    while True:
        try:
            job_id = client.submit_job(
                entrypoint=p.entrypoint,
                submission_id=run.run_id,
                runtime_env={"env_vars": p.env},
                metadata={"grpolab_run_dir": str(run.path), "recipe": recipe.name},
            )
            break
        except Exception as exc:  # the Jobs API raises RuntimeError/ConnectionError variants
            # a head that has just started answers "No available agent ... try again later" for a few seconds
            if "try again" in str(exc) and time.time() < deadline:
                time.sleep(2.0)
                continue
            run.write_status(state="FAILED", message=f"submission failed: {exc}", ended=time.time())
            raise cluster.ClusterError(f"could not submit the job to {ep.label}: {exc}") from None
    wandb = None
    if "wandb" in recipe.trainer.logger:  # where the monitor says the wandb run is
        wandb = {"mode": p.env.get("WANDB_MODE", "online"), "dir": f"{p.env.get('WANDB_DIR', run.path)}/wandb",
                 "project": recipe.trainer.project}
    run.write_status(state="PENDING", job_id=job_id, ray_address=ep.dashboard or ep.gcs, embedded=ep.embedded,
                     recipe=recipe.name, total_steps=recipe.trainer.total_steps, started=time.time(), wandb=wandb)
    progress(f"submitted run {run.run_id} to the {ep.label}; run directory: {run.path}")
    return run


def _redacted_recipe(recipe: Recipe) -> str:
    return to_yaml(recipe, env=redact(recipe.env))


def _client_for(run: runs.Run):
    status = run.status()
    address = status.get("ray_address")
    if not address:
        return None
    ep = cluster.parse_address(address) if not status.get("embedded") else cluster.endpoint(None, start=False)
    if ep.embedded:
        os.environ["RAY_AUTH_MODE"] = "disabled"
        if not cluster.dashboard_alive(ep.dashboard):
            return None
    return cluster.job_client(ep)


def refresh_status(run: runs.Run) -> dict:
    """Ask Ray for the job's state, save its logs to logs/job.log, record the cause when it failed."""
    status = run.status()
    if status.get("state") in runs.TERMINAL_STATES and status.get("finalized"):
        return status
    try:
        client = _client_for(run)
    except cluster.ClusterError as exc:
        return run.write_status(note=f"Ray is unreachable: {exc}")
    if client is None:
        return run.write_status(note="Ray is unreachable; state as last seen")
    try:
        info = client.get_job_info(status.get("job_id") or run.run_id)
        logs = client.get_job_logs(status.get("job_id") or run.run_id)
    except Exception as exc:  # the job is unknown to this cluster (head restarted)
        return run.write_status(note=f"Ray does not know job {run.run_id}: {exc}")
    logs = ANSI.sub("", logs)  # Ray colours its log lines; records and notebooks want plain text
    run.job_log.write_text(logs)
    state = str(info.status.value if hasattr(info.status, "value") else info.status)
    fields = {"state": state, "message": info.message or "", "note": None}
    if info.end_time:
        fields["ended"] = info.end_time / 1000
    if state in runs.TERMINAL_STATES:
        fields["finalized"] = True
        fields["exit_code"] = getattr(info, "driver_exit_code", None)
        fields["log_tail"] = logs.strip().splitlines()[-LOG_TAIL_LINES:]
        if state == "FAILED":
            fields["failure"] = _classify(logs)
    return run.write_status(**fields)


def _classify(logs: str) -> dict | None:
    try:
        from grpolab.monitor import classify_failure
    except ImportError:  # pragma: no cover - the monitor ships with the package
        return None
    found = classify_failure(logs)
    if found is None:
        return None
    return found.to_dict() if hasattr(found, "to_dict") else dict(vars(found))


def stop_run(run: runs.Run, timeout: float = 60.0) -> dict:
    """Stop the job; the record keeps every finished step. Returns the final status."""
    client = _client_for(run)
    if client is None:
        raise cluster.ClusterError(f"cannot reach the Ray cluster of run {run.run_id} to stop it")
    client.stop_job(run.status().get("job_id") or run.run_id)
    deadline = time.time() + timeout
    status = refresh_status(run)
    while status.get("state") not in runs.TERMINAL_STATES and time.time() < deadline:
        time.sleep(1.0)
        status = refresh_status(run)
    return status


def wait(run: runs.Run, progress=print, poll_s: float = 2.0, timeout: float | None = None,
         every_s: float = 10.0) -> dict:
    """Follow a run until it ends (or `timeout`), printing progress lines (step / total, elapsed, remaining,
    reward, validation accuracy) at most one per `every_s` seconds (grpolab.monitor.progress)."""
    from grpolab.monitor import load
    from grpolab.monitor.progress import Progress

    view = None
    start = time.time()
    status = refresh_status(run)
    tracker = Progress(run.run_id, status.get("total_steps"), every_s=every_s, out=progress)
    while True:
        if run.metrics_file.exists():
            view = view or load(run.metrics_file)
            view.refresh()
            tracker.update(view, status)
        if status.get("state") in runs.TERMINAL_STATES:
            return status
        if timeout is not None and time.time() - start > timeout:
            return status
        time.sleep(poll_s)
        status = refresh_status(run)
