"""Runs that heal themselves, for real (issue 43): the tiny trainer on the suite's Ray head, faults injected from
outside as they happen on a cluster (a Ray worker killed, the trainer's process killed, a reward that raises), the
launching terminal and the notebook kernel gone before the fault. The run's own driver (grpolab.heal.supervise) on
the head must restart a transient failure by itself, from its last complete checkpoint, into one continuous
curve, and stop a deterministic one after its first attempt with the diagnosis; `grpolab runs` and `status` say
which. Short runs (40 steps of 32 prompts, a checkpoint every 4); no timing is asserted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from grpolab.jobs import lineage
from grpolab.monitor.metrics import load_metrics
from grpolab.monitor.nodes import nodes_summary
from grpolab.monitor.thresholds import load_thresholds
from grpolab.recipe.loader import load_recipe

ROOT = Path(__file__).resolve().parents[1]
STEPS = 40


def healing(steps: int) -> list[str]:
    """A healing tiny run's overrides (here and in tests/test_heal_cluster.py): `steps` steps, saved often."""
    return [
        f"trainer.total_steps={steps}",
        "trainer.test_freq=8",
        "trainer.save_freq=4",
        "data.train_batch_size=32",  # 256 completions a step: steps slow enough to be killed mid-run
        "local.warmup_steps=5",
        "trainer.restarts.backoff_s=0",
        "trainer.telemetry_s=2",
    ]


HEALING = healing(STEPS)


def _sets(overrides: list[str]) -> list[str]:
    return [arg for o in overrides for arg in ("--set", o)]


def _trainer_after_a_save(run: Path) -> dict | None:
    """The running attempt's trainer (pid, worker pid, node) once the run has a checkpoint and trains on."""
    attempts = lineage.read(run).get("attempts") or []
    if not attempts or attempts[-1].get("decision") != "running" or not attempts[-1].get("trainer"):
        return None
    saved = sorted(run.glob("checkpoint/global_step_*"))
    metrics = run / "metrics.jsonl"
    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines()] if metrics.exists() else []
    if not saved or not steps or max(steps) < 6 or max(steps) >= STEPS - 8:
        return None
    return attempts[-1]["trainer"]


def _ended(cli, run_id: str) -> dict | None:
    status = json.loads(cli("status", run_id, "--json").stdout)
    return status if status.get("state") not in ("PENDING", "RUNNING") else None


def _assert_healed(cli, run: Path, cause: set[str]) -> list[dict]:
    """SUCCEEDED after exactly one restart for one of `cause`, nothing left out, and one continuous curve."""
    attempts = lineage.read(run)["attempts"]
    assert [a["decision"] for a in attempts] == ["restart", "succeeded"], attempts
    first, second = attempts
    assert first["cause"] in cause and first["restart"] == 1 and first["of"] == 3, first
    assert second["excluded"] == [] and not first.get("gone")  # the node was healthy: nothing is left out
    assert second["resumed_from"]["step"] % 4 == 0 and second["resumed_from"]["step"] <= first["step"]
    view = load_metrics(run / "metrics.jsonl")
    assert view.steps == list(range(STEPS + 1))  # every step once, in order: the steps logged twice are merged
    accuracy = view.first_present(["val-core/"]) or [n for n in view.names if n.startswith("val-core/")]
    assert view.latest(accuracy[0])[0] == STEPS  # the last validation of the run is there
    headline = f"restart 1 of 3 after {first['cause']}"
    row = next(line for line in cli("runs").stdout.splitlines() if line.startswith(run.name))
    assert "SUCCEEDED" in row and headline in row, row
    status = cli("status", run.name)
    assert status.returncode == 0 and f"restarts: {headline}" in status.stdout, status.stdout
    return attempts


@pytest.mark.slow(100)
def test_a_killed_worker_restarts_by_itself_after_the_terminal_that_launched_it_closed(
    ray_head, cli, runs_root, wait_for
):
    """`grpolab run --wait` in a terminal (a session of its own); the terminal closes (SIGHUP to its process group,
    then SIGKILL); then the trainer's Ray worker is killed. Nobody watches: the driver on the head restarts it."""
    grpolab = str(Path(sys.executable).with_name("grpolab"))
    terminal = subprocess.Popen(
        [grpolab, "run", "tiny", "--wait", "--run-id", "healed", *_sets(HEALING)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    run = runs_root / "healed"
    try:
        trainer = wait_for(lambda: _trainer_after_a_save(run), timeout=300, every=0.2)
    finally:
        os.killpg(terminal.pid, signal.SIGHUP)  # the terminal closes: its shell's process group is hung up
        try:
            terminal.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(terminal.pid, signal.SIGKILL)
            terminal.wait(timeout=20)
    assert lineage.read(run)["attempts"][-1]["decision"] == "running"  # the run outlived its terminal
    os.kill(trainer["worker_pid"], signal.SIGKILL)  # the Ray worker that runs the trainer dies
    assert wait_for(lambda: _ended(cli, "healed"), timeout=400, every=2)["state"] == "SUCCEEDED"
    attempts = _assert_healed(cli, run, {"worker-died"})
    assert attempts[0]["node"] == trainer["address"]  # where the worker ran, from Ray's own words
    # the run's telemetry: its node sampled as it went, and a healthy run raises no node alert
    nodes = nodes_summary(type("R", (), {"path": run, "run_id": run.name})(), load_thresholds().nodes)
    assert nodes and len(nodes["nodes"]) >= 1 and nodes["nodes"][0]["samples"] >= 2
    assert nodes["alerts"] == [], nodes["alerts"]


@pytest.mark.slow(100)
def test_a_killed_trainer_restarts_by_itself_after_the_notebook_kernel_that_launched_it_shut_down(
    ray_head, cli, runs_root, wait_for
):
    """A notebook kernel submits the run and is shut down (Jupyter signals its process group); then the trainer's
    own process is killed (SIGKILL: the `killed` cause). The driver on the head restarts it."""
    from jupyter_client import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=dict(os.environ), cwd=str(ROOT / "notebooks"))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        code = (
            "from grpolab.jobs import launch\nfrom grpolab.recipe.loader import load_recipe\n"
            f"run = launch.submit(load_recipe('tiny', {HEALING!r}), run_id='from-kernel', progress=print)"
        )
        reply = kc.execute_interactive(code, timeout=300)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    run = runs_root / "from-kernel"
    trainer = wait_for(lambda: _trainer_after_a_save(run), timeout=300, every=0.2)
    os.kill(trainer["pid"], signal.SIGKILL)
    assert wait_for(lambda: _ended(cli, "from-kernel"), timeout=400, every=2)["state"] == "SUCCEEDED"
    _assert_healed(cli, run, {"killed"})
    log = (run / "logs" / "job.log").read_text()
    assert "was ended by signal 9 (SIGKILL)" in log and "restart 1 of 3 from the checkpoint of step" in log


@pytest.mark.slow(60)
def test_a_reward_that_raises_stops_after_the_first_attempt_with_the_diagnosis(
    ray_head, cli, runs_root, tmp_path, wait_for
):
    """A deterministic failure: the reward function raises on every completion the model writes. No restart: the run ends FAILED after its
    first attempt, and `status` gives the diagnosis and why it was not restarted."""
    reward = tmp_path / "broken_reward.py"
    reward.write_text(  # it passes `grpolab run`'s dry run (answers without EOS), and fails on the model's own
        "from grpolab.local.task import score, split_completion\n\n"
        "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    if '<eos>' in solution_str:  # a completion of the CPU trainer (its EOS is kept)\n"
        "        return float(extra_info['answer'])  # a field the data does not have\n"
        "    return score(*split_completion(solution_str), str(ground_truth))\n"
    )
    out = cli("run", "tiny", "--run-id", "broken", *_sets([*HEALING, f"reward.function={reward}:compute_score"]))
    assert out.returncode == 0, out.stdout + out.stderr
    assert wait_for(lambda: _ended(cli, "broken"), timeout=300, every=2)["state"] == "FAILED"
    attempts = lineage.read(runs_root / "broken")["attempts"]
    assert len(attempts) == 1 and attempts[0]["decision"] == "stop", attempts
    assert attempts[0]["cause"] not in load_recipe("tiny").trainer.restarts.on_causes, attempts
    status = cli("status", "broken")
    assert status.returncode == 1
    assert "restarts: stopped after attempt 1" in status.stdout and "cause: " in status.stdout, status.stdout
    assert "extra_info" in status.stdout  # the evidence: the reward's own line
    row = next(line for line in cli("runs").stdout.splitlines() if line.startswith("broken"))
    assert "FAILED" in row and "stopped after attempt 1" in row
