"""Runs that heal themselves on a simulated multi-node cluster (issue 43): the embedded head of a fresh working
folder, placing no trainer itself (GRPOLAB_RAY_NUM_CPUS=0), and worker raylets joined to it (`ray start --address`,
one CPU each, several raylets on this one machine, as tests/test_preflight.py simulates nodes). Faults as they
happen on a cluster: a node vanishes mid-run (its raylet and workers killed), a device fault on the node the
trainer runs on (a real CUDA error line from tests/data/failures), and that fault again when no other node is left.
The run's own driver must restart on another node, leave the faulty node out (and only it), and stop when the
nodes left no longer hold the recipe, saying so. Every process started here is stopped at the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from grpolab.jobs import lineage
from grpolab.monitor.metrics import load_metrics
from tests.test_heal_run import _sets, healing

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
GRPOLAB = str(Path(PYTHON).with_name("grpolab"))
OFFSET = int(os.environ.get("GRPOLAB_TEST_PORT_OFFSET", "0")) + 10 * int(
    os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0
)
GCS_PORT, DASHBOARD_PORT = 6779 + OFFSET + 5, 8779 + OFFSET + 5  # apart from conftest's test and user heads
STEPS = 24
HEALING = healing(STEPS)
# a planted fault needs no slow steps (the reward faults once a checkpoint is saved): tiny's own batch, fewer steps
FAULTING = [*HEALING, "trainer.total_steps=12", "data.train_batch_size=8"]
# a device fault as a cluster reports it (verl issue 138): its last line, printed by the trainer's own process
DEVICE_FAULT = yaml.safe_load((ROOT / "tests" / "data" / "failures" / "verl-138.yaml").read_text())
assert DEVICE_FAULT["expect"]["cause"] == "device-fault"
FAULT_LINE = [line for line in DEVICE_FAULT["log"].splitlines() if line.strip()][-1].strip()


class Cluster:
    """The head (grpolab head start) and the worker raylets (`ray start --block`, each in a session of its own)."""

    def __init__(self, runs: Path) -> None:
        self.env = {
            **os.environ,
            "GRPOLAB_RAY_PORT": str(GCS_PORT),
            "GRPOLAB_DASHBOARD_PORT": str(DASHBOARD_PORT),
            "GRPOLAB_RAY_NUM_CPUS": "0",
            "GRPOLAB_RAY_RESOURCES": "",
            "GRPOLAB_RUNS": str(runs),
            # the head's GCS marks a vanished node dead after 3 missed 1 s health checks, not Ray's default 5 x 3 s:
            # what the run's driver and the test wait on, shorter (a test knob; nothing else changes)
            "RAY_health_check_period_ms": "1000",
            "RAY_health_check_failure_threshold": "3",
        }
        self.env.pop("GRPOLAB_HEAD_DIR", None)
        self.runs = runs
        self.workers: list[subprocess.Popen] = []

    def grpolab(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        return subprocess.run([GRPOLAB, *args], capture_output=True, text=True, timeout=timeout, env=self.env, cwd=ROOT)

    def start(self) -> None:
        out = self.grpolab("head", "start")
        assert out.returncode == 0, out.stdout + out.stderr
        self.token = json.loads(self.grpolab("head", "status", "--json").stdout)["token_file"]

    def join(self) -> subprocess.Popen:
        """One more worker node (one CPU, no dashboard of its own), once it is up; two `ray start` at one moment on
        one machine can collide, so nodes join one by one (and once more when the first try exited)."""
        before = self.nodes()
        for _ in range(2):
            proc = self._start_worker()
            deadline = time.time() + 180
            while time.time() < deadline and proc.poll() is None:
                if self.nodes() > before:
                    return proc
                time.sleep(2)
            if proc.poll() is None:
                break
        raise AssertionError(f"a worker node did not join (see {self.runs.parent}/worker-*.log)")

    def _start_worker(self) -> subprocess.Popen:
        env = {
            **os.environ,
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN_PATH": self.token,
            "RAY_enable_metrics_collection": "0",
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_enable_worker_prestart": "0",
        }
        env.pop("RAY_AUTH_TOKEN", None)
        cmd = [str(Path(PYTHON).with_name("ray")), "start", f"--address=127.0.0.1:{GCS_PORT}", "--block"]
        cmd += ["--num-cpus=1", "--node-ip-address=127.0.0.1", f"--object-store-memory={80 * 1024**2}"]
        cmd += ["--disable-usage-stats", "--include-log-monitor=false", "--dashboard-agent-listen-port=0"]
        cmd += ["--metrics-export-port=0", "--runtime-env-agent-port=0"]
        log = open(self.runs.parent / f"worker-{len(self.workers)}.log", "w")  # noqa: SIM115 (`ray start` writes it)
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.workers.append(proc)
        return proc

    def nodes(self) -> int:
        """Live nodes, as Ray says to a driver of the cluster (a process of its own: this one stays no driver)."""
        code = (
            "import ray\n"
            f"ray.init(address='127.0.0.1:{GCS_PORT}', logging_level='ERROR', log_to_driver=False)\n"
            "print(sum(1 for n in ray.nodes() if n['Alive']))"
        )
        env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": self.token}
        env.pop("RAY_ADDRESS", None)
        out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120, env=env)
        return int(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else 0

    def vanish(self, worker: subprocess.Popen) -> None:
        """The node goes away at once: its raylet, agents and workers killed (SIGKILL to its session)."""
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)

    def node_of(self, pid: int) -> subprocess.Popen:
        """The worker node a process of the cluster runs on (its `ray start` is among its parents)."""
        parents = {p.pid for p in psutil.Process(pid).parents()}
        return next(w for w in self.workers if w.pid in parents)

    def stop(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
                    worker.wait(timeout=20)
        self.grpolab("head", "stop")


@pytest.fixture
def sim(runs_root):
    """A fresh head that places no trainer; each test joins the worker nodes it needs."""
    cluster = Cluster(runs_root)
    cluster.grpolab("head", "stop")  # a head left on these ports by an interrupted session
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def _attempts(cluster: Cluster, run_id: str) -> list[dict]:
    return lineage.read(cluster.runs / run_id).get("attempts") or []


def _trainer_after_a_save(cluster: Cluster, run_id: str) -> dict | None:
    run = cluster.runs / run_id
    attempts = _attempts(cluster, run_id)
    if not attempts or attempts[-1].get("decision") != "running" or not attempts[-1].get("trainer"):
        return None
    metrics = run / "metrics.jsonl"
    steps = [json.loads(line)["step"] for line in metrics.read_text().splitlines()] if metrics.exists() else []
    if not list(run.glob("checkpoint/global_step_*")) or not steps or not 6 <= max(steps) < STEPS - 8:
        return None
    return attempts[-1]["trainer"]


def _ended(cluster: Cluster, run_id: str) -> dict | None:
    status = json.loads(cluster.grpolab("status", run_id, "--json").stdout)
    return status if status.get("state") not in ("PENDING", "RUNNING") else None


def _faulty_reward(folder: Path) -> Path:
    """tiny's reward, which reports a device fault and ends its process once, on the first completion it scores in
    training after the run saved a checkpoint (its cwd is the run directory; the dry run before the launch scores no
    completion of the model: it passes)."""
    reward = folder / "faulty_reward.py"
    marker = folder / "faulted-once"
    reward.write_text(
        "import os, sys\nfrom grpolab.local.task import score, split_completion\n\n"
        "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    saved = os.path.isdir('checkpoint') and any(n.startswith('global_step_') for n in os.listdir('checkpoint'))\n"
        f"    if '<eos>' in solution_str and saved and not os.path.exists({str(marker)!r}):\n"
        f"        open({str(marker)!r}, 'w').close()\n"
        f"        print({FAULT_LINE!r}, flush=True)\n"
        "        os._exit(1)\n"
        "    return score(*split_completion(solution_str), str(ground_truth))\n"
    )
    return reward


@pytest.mark.slow(300)
def test_a_node_that_vanishes_mid_run_and_a_device_fault_on_the_next_one(sim, tmp_path, wait_for):
    """1. The node the trainer runs on vanishes: the run restarts on the other worker (nothing is left out: the
    node is gone). 2. A new node joins; a device fault on the trainer's node: that node, and only it, is left out
    of the next attempt, which runs on the other one."""
    sim.join()
    sim.join()
    out = sim.grpolab("run", "tiny", "--run-id", "vanish", *_sets(HEALING))
    assert out.returncode == 0, out.stdout + out.stderr
    trainer = wait_for(lambda: _trainer_after_a_save(sim, "vanish"), timeout=300, every=0.2)
    doomed = sim.node_of(trainer["worker_pid"])
    sim.vanish(doomed)
    assert wait_for(lambda: _ended(sim, "vanish"), timeout=400, every=2)["state"] == "SUCCEEDED"
    first, second = _attempts(sim, "vanish")
    assert first["decision"] == "restart" and first["cause"] in ("worker-died", "killed"), first
    assert first.get("gone") and second["excluded"] == [], (first, second)  # gone, not left out by the policy
    assert second["trainer"]["node_id"] != trainer["node_id"] and second["decision"] == "succeeded"
    assert load_metrics(sim.runs / "vanish" / "metrics.jsonl").steps == list(range(STEPS + 1))

    wait_for(lambda: sim.nodes() == 2, timeout=120, every=3)  # the vanished node is known to be gone
    sim.join()
    reward = _faulty_reward(tmp_path)
    out = sim.grpolab(
        "run", "tiny", "--run-id", "fault", *_sets([*FAULTING, f"reward.function={reward}:compute_score"])
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert wait_for(lambda: _ended(sim, "fault"), timeout=400, every=2)["state"] == "SUCCEEDED"
    first, second = _attempts(sim, "fault")
    assert first["cause"] == "device-fault" and first["decision"] == "restart", first
    faulty = first["trainer"]["node_id"]
    assert [e["node_id"] for e in second["excluded"]] == [faulty]  # that node, and only it
    assert second["trainer"]["node_id"] != faulty
    log = (sim.runs / "fault" / "logs" / "job.log").read_text()
    assert f"({faulty[:8]}) is left out of the next attempts (device-fault on node" in log
    # the failed attempt's worker freed the node's CPU when its command ended: the fence held it at once (a worker
    # that kept it made every such restart wait the fence's whole FENCE_WAIT_S first)
    assert "; its resources held)" in log, log
    row = next(line for line in sim.grpolab("runs").stdout.splitlines() if line.startswith("fault"))
    assert "restart 1 of 3 after device-fault on node" in row
    shown = sim.grpolab("monitor", "fault", "--no-png").stdout
    assert f"without node {second['excluded'][0]['node']}: succeeded" in shown, shown


@pytest.mark.slow(150)
def test_a_device_fault_with_no_other_node_left_stops_and_says_the_cluster_is_too_small(sim, tmp_path, wait_for):
    """One worker node: a device fault on it leaves no node for the recipe's one; with too_small: stop the run
    stops after its first attempt, saying so (and whether the layout would pass the checks on fewer nodes)."""
    sim.join()
    reward = _faulty_reward(tmp_path)
    overrides = [*FAULTING, f"reward.function={reward}:compute_score", "trainer.restarts.too_small=stop"]
    out = sim.grpolab("run", "tiny", "--run-id", "too-small", *_sets(overrides))
    assert out.returncode == 0, out.stdout + out.stderr
    assert wait_for(lambda: _ended(sim, "too-small"), timeout=300, every=2)["state"] == "FAILED"
    (only,) = _attempts(sim, "too-small")
    assert only["decision"] == "stop" and only["cause"] == "device-fault", only
    assert "0 usable node(s) are left and the recipe needs cluster.nnodes 1 (no node to run on)" in only["why"]
    status = sim.grpolab("status", "too-small").stdout
    assert "stopped after attempt 1: device-fault is transient" in status, status
