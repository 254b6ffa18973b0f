"""Launch: every run is a Ray job submitted with Ray's Job Submission API, locally or on a cluster.

`submit()` asks the one gate, which renders the launch for the run's directory (errors stop the launch before
anything is created or started): that launch is what is submitted, rendered once. It resolves the Ray endpoint
once (kept as a structure in the run's record), creates the run directory and submits the job with the recipe's
env in its runtime_env. The Ray submission id IS the run id, so grpolab.jobs.state finds the job again from any
process, even after the launcher was killed. `prepare()` is the same without submitting (`run --dry-run`).

A submission that fails for any reason (a refused address, a full disk, the head stopped, an interrupt) leaves
the run FAILED with its cause and no secrets file; when even that cannot be written, the record names the
submitting process, and grpolab.jobs.state reports the run FAILED once that process is gone. A `grpolab stop`
during the submission is honoured as soon as Ray has the job.

On the embedded head the job is the run's own driver, `grpolab.heal.supervise`, which wraps each attempt with
`grpolab.jobs.job_entry` (secrets travel in a user-only file of the run directory instead of Ray's runtime_env,
which Ray logs and returns from its Jobs API: grpolab.jobs.secrets; the job records its own start, end and log in
the run directory) and restarts a failed attempt by the recipe's trainer.restarts. Secrets never reach the run
record.
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
from pathlib import Path

from grpolab.jobs import checkpoints, cluster, provenance, runs, secrets, state
from grpolab.jobs.cluster import Endpoint
from grpolab.paths import PROJECT_ROOT
from grpolab.problems import Problem, errors
from grpolab.recipe import stack
from grpolab.recipe.loader import recipe_dict, to_yaml
from grpolab.recipe.schema import Recipe
from grpolab.recipe.secrets import Redaction, redaction
from grpolab.rules.gate import gated_launch
from grpolab.verl.render import Launch

# passed from the launcher's environment into the job when the recipe logs there; never recorded
PASS_THROUGH = {"wandb": ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_MODE", "WANDB_ENTITY")}
AGENT_WAIT_S = 90
VERSIONS = ("grpolab", "verl", "ray", "torch", "transformers", "trl", "vllm", "vllm-ascend", "torch_npu")
# the job's own driver on the embedded head: the job wrapper around each attempt, and restarts (a module name, run
# by Ray on the cluster: not imported here)
DRIVER = "grpolab.heal.supervise"


class LaunchBlocked(Exception):
    """The recipe has errors; nothing was submitted."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__(f"{len(problems)} error(s) in the recipe; nothing was submitted")


def _versions() -> dict[str, str | None]:
    """What the launch record says is installed (grpolab.recipe.stack, the one reader of installed versions)."""
    return {"python": sys.version.split()[0], **{name: stack.installed(name)[0] for name in VERSIONS}}


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


@dataclass(frozen=True)
class Submission:
    """What is submitted (or, for --dry-run, would be): the gate's launch, where, and the job's command and env."""

    recipe: Recipe
    launch: Launch  # rendered once, by the gate, for the run's directory
    endpoint: Endpoint
    entrypoint: str
    env: dict[str, str]  # the job's env, secrets included: never written anywhere
    hide: Redaction  # what every record and message of this submission hides (recipe, --set, the node's env)

    def shown_env(self) -> dict[str, str]:
        """The job's env as records and messages show it: secrets redacted, a value read from the launching shell
        as its reference `${NAME}`."""
        return self.hide.env({**self.env, **self.launch.shown_env()})

    def describe(self) -> dict:
        """What `run --dry-run` prints: secrets redacted, however they arrived."""
        hide = self.hide
        return {
            "recipe": self.recipe.name,
            "endpoint": self.endpoint.label,
            "entrypoint": hide.text(self.entrypoint),
            "env": self.shown_env(),
            "verl_version": self.launch.verl_version,  # the verl the launch was rendered for (the keys it reads)
            "notes": [hide.problem(n).to_dict() for n in self.launch.notes],
        }


def _gated(recipe: Recipe, run_dir: str | None) -> Launch:
    """The gate's verdict and the launch it rendered; LaunchBlocked when it finds an error."""

    problems, launch = gated_launch(recipe, run_dir=run_dir)
    if errors(problems):
        raise LaunchBlocked(redaction(recipe).problems(errors(problems)))
    return launch


def _submission(recipe: Recipe, launch: Launch, ep: Endpoint, run_dir: str | None) -> Submission:
    python = sys.executable if ep.embedded else "python3"  # a remote cluster has its own interpreter
    env = dict(launch.env)
    for logger, names in PASS_THROUGH.items():
        if logger in recipe.trainer.logger:
            env.update({n: os.environ[n] for n in names if n in os.environ and n not in env})
            if "WANDB_API_KEY" not in env and "WANDB_MODE" not in env:
                env["WANDB_MODE"] = "offline"  # no key: log offline, never block the run
            if run_dir and logger == "wandb":
                env.setdefault("WANDB_DIR", run_dir)  # the wandb run's files live in the run directory
    return Submission(recipe, launch, ep, launch.command(python), env, redaction(recipe, env=env))


def prepare(recipe: Recipe, address: str | None = None) -> Submission:
    """The submission without submitting anything (`run --dry-run`); LaunchBlocked when the gate finds an error."""
    ep = cluster.endpoint(address or recipe.cluster.ray_address, start=False)
    return _submission(recipe, _gated(recipe, None), ep, None)


def submit(
    recipe: Recipe,
    address: str | None = None,
    run_id: str | None = None,
    progress=print,
    root: Path | None = None,
    resumed_from: dict | None = None,
) -> runs.Run:
    """Gate, create runs/<run_id>/, and submit the Ray job. Returns the run. `resumed_from`: the parent run a
    resume continues (grpolab.jobs.resume), recorded in launch.json and status.json."""
    # resolved once (--ray-address, else the recipe's cluster.ray_address, else RAY_ADDRESS, else the embedded head);
    # the embedded head starts after the gate
    ep = cluster.endpoint(address or recipe.cluster.ray_address, start=False)
    path = runs.run_path(run_id or runs.new_run_id(recipe.name), root)
    if run_id is not None and path.exists():
        raise FileExistsError(f"run {run_id!r} already exists in {path.parent}; pick another run id")
    job = _submission(recipe, _gated(recipe, str(path)), ep, str(path))
    if ep.embedded:
        ep = cluster.ensure_local_head(progress)
    shared = Path(os.path.expanduser(recipe.trainer.ckpt_dir)) if recipe.trainer.ckpt_dir else None
    with checkpoints.claim(shared, path, path.name, state.live_state):  # one live run per trainer.ckpt_dir
        run = runs.create_run(
            recipe.name, run_id=path.name, root=path.parent, recipe=recipe.name, endpoint=ep.to_dict(),
            submitter=state.submitter(), resumed_from=resumed_from and {k: resumed_from[k] for k in ("run_id", "step")},
        )  # fmt: skip
    accepted = False
    try:
        client = _hand_over(run, job, resumed_from)
        accepted = True
        _stop_if_asked(run, client)
    except BaseException as exc:
        if not accepted:
            _failed(run, exc)
        if isinstance(exc, Exception) and not isinstance(exc, (cluster.ClusterError, OSError)):
            raise cluster.ClusterError(f"could not submit the job to the {ep.label}: {exc}") from None
        raise
    progress(f"submitted run {run.run_id} to the {ep.label}; run directory: {run.path}")
    return run


def _hand_over(run: runs.Run, job: Submission, resumed_from: dict | None = None):
    """Write the run's files and submit its job; the Jobs API client that accepted it."""
    recipe, ep, hide = job.recipe, job.endpoint, job.hide
    if ep.dashboard is None:  # a cluster known by its GCS address: its Jobs API asked once, kept in the record
        ep = Endpoint(cluster.dashboard_of(ep.gcs), ep.gcs, False)
    runs.atomic_write(run.recipe_file, to_yaml(recipe, env=hide.env(recipe.env)))  # never a torn file
    entrypoint, job_env = job.entrypoint, dict(job.env)
    if ep.embedded:  # the job wraps itself: secrets by a user-only file, its own end record and log
        job_env = secrets.hand_off(run.path, job_env, recipe.secrets)
        python = shlex.quote(sys.executable)
        entrypoint = f"{python} -m {DRIVER} {shlex.quote(str(run.path))} -- {job.entrypoint}"
        job_env.update(
            {k: v for k, v in cluster.embedded_env().items() if k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")}
        )
    record = {
        "run_id": run.run_id,
        "recipe": recipe.name,
        "recipe_files": recipe.files,
        "engine": recipe.train.engine,
        "entrypoint": hide.text(entrypoint),
        "env": job.shown_env(),
        "versions": _versions() | provenance.packages(recipe),  # and what else shapes a run (its stack pins)
        "rendered_for_verl": job.launch.verl_version,  # the verl whose keys the launch was written with
        "git_commit": _git_commit(),
        "ray": ep.to_dict(),
        "notes": [hide.problem(n).to_dict() for n in job.launch.notes],
        "created": time.time(),
        "provenance": provenance.record(recipe, recipe_dict(recipe) | {"env": hide.env(recipe.env)}),
        "resumed_from": resumed_from,
    }
    runs.atomic_write(run.launch_file, json.dumps(record, indent=2) + "\n")
    runtime_env = dict(job.launch.cluster.get("runtime_env") or {})  # the recipe's (working_dir, pip, ...)
    runtime_env["env_vars"] = {**(runtime_env.get("env_vars") or {}), **job_env}
    client = cluster.submit_client(ep, runtime_env)
    deadline = time.time() + AGENT_WAIT_S
    while True:
        try:
            job_id = client.submit_job(
                entrypoint=entrypoint,
                submission_id=run.run_id,
                runtime_env=runtime_env,
                metadata={"grpolab_run_dir": str(run.path), "recipe": recipe.name},
            )
            break
        except Exception as exc:  # the Jobs API raises RuntimeError/ConnectionError variants
            # a head that has just started answers "No available agent ... try again later" for a few seconds
            if "try again" in str(exc) and time.time() < deadline:
                time.sleep(2.0)
                continue
            raise cluster.ClusterError(f"could not submit the job to the {ep.label}: {exc}") from None
    wandb = None
    if "wandb" in recipe.trainer.logger:  # where the monitor says the wandb run is
        wandb = {
            "mode": job.env.get("WANDB_MODE", "online"),
            "dir": f"{job.env.get('WANDB_DIR', run.path)}/wandb",
            "project": recipe.trainer.project,
        }
    with contextlib.suppress(OSError):  # a full disk: Ray has the job, and the state function finds it by run id
        run.write_status(
            job_id=job_id,
            submitted=time.time(),
            total_steps=recipe.trainer.total_steps,
            wandb=wandb,
            submitter=None,
            endpoint=ep.to_dict(),
        )
    return client


def _failed(run: runs.Run, exc: BaseException) -> None:
    """A submission that failed before Ray accepted the job: no secrets file, and the run FAILED with its cause
    (when even that cannot be written, grpolab.jobs.state says FAILED once this process is gone)."""
    with contextlib.suppress(OSError):
        secrets.discard(run.path)
    if isinstance(exc, KeyboardInterrupt):
        cause = "the submission was interrupted"
    elif isinstance(exc, OSError) and not isinstance(exc, ConnectionError):
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        cause = f"submission failed: {where}{exc.strerror or exc}"
    else:
        cause = f"submission failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    with contextlib.suppress(OSError, runs.NotARun):
        run.write_status(state="FAILED", message=cause, ended=time.time(), finalized=True, submitter=None)


def _stop_if_asked(run: runs.Run, client) -> None:
    """`grpolab stop` came while the job was being submitted: stop it now that Ray has it."""
    if run.status().get("stop_requested"):
        with contextlib.suppress(Exception):
            client.stop_job(run.run_id)
