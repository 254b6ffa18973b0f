"""Launch for real: a local Ray head, `tiny` jobs with small step budgets, stop, a killed launcher, and a verl
recipe submitted to a head that advertises fake NPUs, which fails for the real reason. No mocks."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from grpolab.jobs import control, launch, runs
from grpolab.monitor.progress import follow
from grpolab.monitor.summary import failure_of
from grpolab.recipe.loader import load_recipe
from grpolab.recipe.secrets import REDACTED

SECRET = "sekrit-value-123"


def test_stop_keeps_every_finished_step(ray_head, wait_for):
    recipe = load_recipe("tiny", ["trainer.total_steps=500", "local.warmup_steps=5"])
    run = launch.submit(recipe, progress=lambda *_: None)
    wait_for(lambda: run.metrics_file.exists() and len(run.metrics_file.read_text().splitlines()) >= 3)
    # `grpolab status` of a running job asks the embedded head's Jobs API over HTTP: it never imports Ray (which
    # alone costs about 2 s of CPU per command)
    code = (
        "import sys; from grpolab.cli import main; main(['status', sys.argv[1], '--json']); print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, run.run_id], capture_output=True, text=True, timeout=120)
    assert re.search(r'"state":\s*"RUNNING"', out.stdout) and out.stdout.split()[-1] == "False", out.stdout + out.stderr
    status = control.stop_run(run)
    assert status["state"] == "STOPPED"
    steps = [json.loads(line)["step"] for line in run.metrics_file.read_text().splitlines()]
    assert steps and steps == sorted(steps)
    assert runs.resolve_run(run.run_id).status()["state"] == "STOPPED"


def test_the_jobs_api_submits_without_ray_and_answers_like_rays_client(ray_head, wait_for):
    """The REST client `grpolab run`, status and stop use on the embedded head (grpolab.jobs.jobs_api): it submits
    without importing Ray (about 2 s of CPU per command), refuses what Ray's SDK must prepare (a working_dir to
    upload: cluster.submit_client hands that to Ray's client), and errs as Ray's client does."""
    from grpolab.jobs import cluster

    job = f"rest-{os.getpid()}"
    code = (
        "import sys\nfrom grpolab.jobs import cluster\nenv = {'env_vars': {'GREETING': 'hello from REST'}}\n"
        "client = cluster.submit_client(cluster.embedded_endpoint(), env)\n"
        "print(client.submit_job(entrypoint='echo $GREETING', submission_id=sys.argv[1], runtime_env=env))\n"
        "print('ray' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code, job], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == [job, "False"], out.stdout + out.stderr
    api = cluster.jobs_api(ray_head)

    def ended() -> str | None:
        status = api.get_job_status(job)
        return status if status in ("SUCCEEDED", "FAILED", "STOPPED") else None

    assert wait_for(ended, 120) == "SUCCEEDED"
    assert "hello from REST" in api.get_job_logs(job)
    with pytest.raises(RuntimeError, match="already"):
        api.submit_job(entrypoint="true", submission_id=job)
    with pytest.raises(ValueError, match="working_dir"):
        api.submit_job(entrypoint="true", submission_id=f"{job}-2", runtime_env={"working_dir": "."})
    assert type(cluster.submit_client(ray_head, {"working_dir": "."})).__name__ == "JobSubmissionClient"
    with pytest.raises(RuntimeError, match="404"):
        api.get_job_info("no-such-job")
    with pytest.raises(RuntimeError):
        cluster.jobs_api(cluster.Endpoint(ray_head.dashboard, ray_head.gcs, True)).get_job_logs("no-such-job")


def test_a_tiny_job_whose_launcher_is_killed_finishes_with_verl_metrics_a_clean_record_and_offline_wandb(
    ray_head, cli, _isolated_runs, monkeypatch, wait_for, short_tiny
):
    """One 4-step job (each costs about 12 s of CPU here) for four things a user sees: `grpolab run --wait` killed
    right after the submission loses nothing (the job goes on to SUCCEEDED), the metrics in verl's format, a record
    without the secret, and wandb, asked for without a key, logging offline into the run directory, where the
    monitor points."""
    monkeypatch.delenv("WANDB_MODE", raising=False)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    sets = [*short_tiny, f"env.MY_API_KEY={SECRET}", "trainer.logger=[console,file,wandb]"]
    args = ["run", "tiny", "--wait", "--run-id", "killed-launcher"] + [a for s in sets for a in ("--set", s)]
    proc = subprocess.Popen(
        [str(Path(os.sys.executable).with_name("grpolab")), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=os.environ.copy(),
    )
    run_dir = _isolated_runs / "killed-launcher"
    wait_for(lambda: (run_dir / "status.json").exists() and "job_id" in (run_dir / "status.json").read_text())
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    def finished():
        out = cli("status", "killed-launcher")
        return out if "SUCCEEDED" in out.stdout else None

    out = wait_for(finished, timeout=240, every=3.0)
    assert "reward" in out.stdout
    assert len((run_dir / "metrics.jsonl").read_text().splitlines()) >= 4

    run = runs.resolve_run("killed-launcher")
    status = follow(run, lambda _view, _status: None, poll_s=1.0, timeout=240)
    assert status["state"] == "SUCCEEDED", status.get("log_tail")
    lines = [json.loads(line) for line in run.metrics_file.read_text().splitlines()]
    assert [line["step"] for line in lines if "critic/score/mean" in line["data"]][-1] == 4
    names = set().union(*(line["data"] for line in lines))
    assert {
        "critic/score/mean",
        "response_length/mean",
        "actor/kl_loss",
        "actor/entropy",
        "timing_s/step",
        "perf/throughput",
        "val-core/arith/acc/mean@1",
    } <= names
    assert (run.path / "checkpoint").is_dir()
    record = json.loads(run.launch_file.read_text())
    assert record["env"]["MY_API_KEY"] == REDACTED and record["versions"]["ray"]
    for path in run.path.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".yaml", ".jsonl", ".log"):
            assert SECRET not in path.read_text(errors="replace"), path
    assert "tiny" in run.recipe_file.read_text()

    assert status["wandb"]["mode"] == "offline"
    assert list((run.path / "wandb").glob("offline-run-*")), "the wandb run's files are in the run directory"
    out = cli("monitor", run.run_id)
    assert "wandb" in out.stdout and "offline" in out.stdout and "wandb sync" in out.stdout


@pytest.mark.slow(25)
def test_verl_recipe_on_fake_npu_head_fails_with_cause_and_log_tail(ray_head, cli):
    proc = cli("run", "qwen3_30b_a3b", "--wait", "--run-id", "fake-npu", timeout=420)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    status = runs.resolve_run("fake-npu").status()
    assert status["state"] == "FAILED"
    assert failure_of(runs.resolve_run("fake-npu"), status).cause != "unknown" and status["log_tail"]
    assert "cause:" in proc.stdout and "log tail:" in proc.stdout
    record = json.loads(runs.resolve_run("fake-npu").launch_file.read_text())
    assert "verl.trainer.main_ppo" in record["entrypoint"]
    assert record["env"]["VERL_FILE_LOGGER_PATH"].endswith("fake-npu/metrics.jsonl")


def test_errors_stop_the_launch_before_anything_is_submitted(cli, _isolated_runs):
    before = set(_isolated_runs.iterdir())
    proc = cli("run", "glm5_2", "--set", "rollout.ep=32")
    assert proc.returncode == 1 and "nothing was submitted" in proc.stdout
    assert set(_isolated_runs.iterdir()) == before


def test_dry_run_prints_what_would_be_submitted(cli, _isolated_runs):
    before = set(_isolated_runs.iterdir())
    proc = cli("run", "glm5_2", "--dry-run", "--set", "env.HF_TOKEN=abc123")
    assert proc.returncode == 0
    plan = json.loads(proc.stdout)
    assert "verl.trainer.main_ppo" in plan["entrypoint"] and plan["env"]["HF_TOKEN"] == REDACTED
    assert "abc123" not in proc.stdout
    assert set(_isolated_runs.iterdir()) == before


def test_run_ids_never_collide_and_cannot_escape(cli, _isolated_runs):
    ids = {runs.create_run("tiny").run_id for _ in range(20)}
    assert len(ids) == 20
    for bad in ("../escape", "a/b", ".hidden", ""):
        with pytest.raises(ValueError):
            runs.check_run_id(bad)
    proc = cli("run", "tiny", "--run-id", "../escape")
    assert proc.returncode == 2 and "not allowed" in proc.stderr
    assert not (_isolated_runs.parent / "escape").exists()
    runs.create_run("tiny", run_id="taken")
    with pytest.raises(FileExistsError):
        runs.create_run("tiny", run_id="taken")


def test_status_of_unknown_run_is_unusable_input(cli):
    proc = cli("status", "no-such-run")
    assert proc.returncode == 2 and "no run" in proc.stderr
