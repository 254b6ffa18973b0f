"""The run folder's layout: the name of every file and folder a run holds, declared once.

    runs/<run_id>/
        status.json     the run's record (grpolab.jobs.runs, grpolab.jobs.state)
        recipe.yaml     the fully resolved recipe
        launch.json     entrypoint, env (secrets redacted), versions, git commit
        job.json        written by the job itself (grpolab.jobs.job_entry)
        metrics.jsonl   verl's file-logger format, one line per step
        logs/job.log    the Ray job's output (logs/ also holds executed stage notebooks until notebooks/ exists)
        notebooks/      the executed stage notebooks of a notebook run
        notebooks/stages.json   what the stage notebooks hand to run.ipynb (a dry run's failed checks, ...)
        checkpoint/     where checkpoints go when trainer.ckpt_dir is null
        lineage.json    every attempt of the run and why it ended (grpolab.jobs.lineage, written by grpolab.heal)
        attempts/N/     what attempt N (a restart) wrote of its own: its metrics before they join metrics.jsonl
        telemetry/      one samples file per node: devices, host memory, CPU, disk (grpolab.jobs.telemetry)
        tmp/            the trainer's TMPDIR while its job runs (grpolab.jobs.job_entry), removed when it ends

Every reader and writer builds these paths from here (tests/test_one_home.py fails on the literals elsewhere). It
sits in the lowest layer because the CPU trainer and the renderer (layer 1) need the names as much as jobs/ does.
"""

from __future__ import annotations

from pathlib import Path

STATUS = "status.json"
RECIPE = "recipe.yaml"
LAUNCH = "launch.json"
JOB = "job.json"
METRICS = "metrics.jsonl"
LOGS = "logs"
JOB_LOG = "job.log"  # inside LOGS
NOTEBOOKS = "notebooks"
STAGE_RESULTS = "stages.json"  # inside NOTEBOOKS (or beside a dry run's stage notebooks, which have no run folder)
CHECKPOINT = "checkpoint"  # the default checkpoint folder (trainer.ckpt_dir: null)
LINEAGE = "lineage.json"
ATTEMPTS = "attempts"
TELEMETRY = "telemetry"
TMP = "tmp"

FILES = (STATUS, RECIPE, LAUNCH, JOB, METRICS, JOB_LOG, STAGE_RESULTS, LINEAGE)
FOLDERS = (LOGS, NOTEBOOKS, CHECKPOINT, ATTEMPTS, TELEMETRY, TMP)


def status_file(run_dir: str | Path) -> Path:
    return Path(run_dir) / STATUS


def recipe_file(run_dir: str | Path) -> Path:
    return Path(run_dir) / RECIPE


def launch_file(run_dir: str | Path) -> Path:
    return Path(run_dir) / LAUNCH


def job_file(run_dir: str | Path) -> Path:
    return Path(run_dir) / JOB


def metrics_file(run_dir: str | Path) -> Path:
    return Path(run_dir) / METRICS


def logs_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / LOGS


def job_log(run_dir: str | Path) -> Path:
    return logs_dir(run_dir) / JOB_LOG


def notebooks_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / NOTEBOOKS


def stage_results(notebooks: str | Path) -> Path:
    """The stage results beside the executed stage notebooks in `notebooks` (notebooks_dir(run), or the folder a
    dry run's stage notebooks are written to)."""
    return Path(notebooks) / STAGE_RESULTS


def checkpoint_dir(run_dir: str | Path) -> Path:
    """Where checkpoints go when trainer.ckpt_dir is null."""
    return Path(run_dir) / CHECKPOINT


def lineage_file(run_dir: str | Path) -> Path:
    return Path(run_dir) / LINEAGE


def attempt_dir(run_dir: str | Path, number: int) -> Path:
    """What attempt `number` (2, 3, ...: a restart) writes of its own."""
    return Path(run_dir) / ATTEMPTS / str(number)


def telemetry_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / TELEMETRY


def tmp_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / TMP
