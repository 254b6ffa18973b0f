"""The embedded Ray head as a user meets it, with no head running beforehand (`no_head`: ports of its own):

- it needs a token, and every socket it opens beyond loopback refuses a request without one;
- it belongs to nobody's kernel: two launches at once share one head, and signalling the process groups that
  started it (what Jupyter does on interrupt, restart and shutdown) leaves it running; `grpolab head stop` stops
  that head and nothing else;
- interrupting 03_launch's follow cell says the run goes on, without a traceback; shutting the kernel down does
  not stop the run, which ends SUCCEEDED; a head killed mid-run leaves the run ended from its own record (or
  LOST), never RUNNING, with its log in the run directory; and the next launch works.
No mocks: real Ray heads, real kernels, the real `tiny` trainer with small step budgets.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from grpolab.jobs import cluster

ROOT = Path(__file__).resolve().parents[1]
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
LOOPBACK = ("127.", "::1", "::ffff:127.")
# one method of each gRPC service a Ray head runs; a server that checks tokens answers UNAUTHENTICATED
GRPC_METHODS = (
    "/ray.rpc.NodeInfoGcsService/GetAllNodeInfo",
    "/ray.rpc.NodeManagerService/GetNodeStats",
    "/ray.rpc.ObjectManagerService/Pull",
    "/ray.rpc.CoreWorkerService/GetCoreWorkerStats",
    "/ray.rpc.ReporterService/GetTraceback",
    "/ray.rpc.RayletDriver/ClusterInfo",
)


def sets(overrides: list[str]) -> list[str]:
    return [a for s in overrides for a in ("--set", s)]


def grpolab(env: dict, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([GRPOLAB, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def head_status(env: dict) -> dict:
    return json.loads(grpolab(env, "head", "status", "--json").stdout)


def command_line(proc: psutil.Process) -> str:
    """A head process's command line; "" once it is gone (the suite's other worker runs jobs on the same head)."""
    try:
        return " ".join(proc.cmdline())
    except psutil.Error:
        return ""


def listens(ip: str, port: int) -> bool:
    return any(
        c.status == psutil.CONN_LISTEN and (c.laddr.ip, c.laddr.port) == (ip, port)
        for c in psutil.net_connections("tcp")
    )


def refused_without_token(host: str, port: int) -> bool:
    """True when the socket answers a request that carries no token with 'unauthenticated' (HTTP 401/403, gRPC
    UNAUTHENTICATED); False when it serves the request."""
    import grpc

    try:
        with urllib.request.urlopen(f"http://{host}:{port}/api/version", timeout=3):
            return False
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            return True
    except (OSError, ValueError, http.client.HTTPException):
        pass  # not HTTP/1: a gRPC server
    target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    with grpc.insecure_channel(target) as channel:
        for method in GRPC_METHODS:
            try:
                channel.unary_unary(method)(b"", timeout=5)
                return False
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.UNAUTHENTICATED:
                    return True
    return False


def test_embedded_head_requires_a_token_and_refuses_requests_without_it(ray_head, wait_for):
    from ray.job_submission import JobSubmissionClient

    token = cluster.token_file()
    assert stat.S_IMODE(token.stat().st_mode) == 0o600 and stat.S_IMODE(token.parent.stat().st_mode) == 0o700
    with pytest.raises(Exception, match="(?i)auth"):
        JobSubmissionClient(ray_head.dashboard).list_jobs()
    client = cluster.job_client(ray_head)
    job = client.submit_job(entrypoint=f"{sys.executable} -c 'import time; time.sleep(120)'")
    try:  # while a job runs, its supervisor and driver add sockets of their own
        wait_for(lambda: str(client.get_job_status(job)).endswith("RUNNING"), timeout=120)
        procs = {p.pid: p for p in cluster.head_processes()}
        assert not [c for c in map(command_line, procs.values()) if "ray.util.client.server" in c]  # ray_start.py
        owner = {}
        for c in psutil.net_connections("tcp"):
            if c.status == psutil.CONN_LISTEN and c.pid in procs:
                owner[(c.laddr.ip, c.laddr.port)] = c.pid
        listening = set(owner)
        dashboard_port = int(ray_head.dashboard.rsplit(":", 1)[1])
        assert {ip for ip, port in listening if port == dashboard_port} == {"127.0.0.1"}  # the Jobs API: loopback only
        exposed = sorted((ip, port) for ip, port in listening if not ip.startswith(LOOPBACK))
        assert exposed, listening  # Ray binds its GCS and raylet beyond loopback: each must check the token
        for ip, port in exposed:
            host = "127.0.0.1" if ip in ("0.0.0.0", "::") else ip
            who = command_line(procs[owner[(ip, port)]])[:300]
            if refused_without_token(host, port) or not listens(ip, port):  # gone: another worker's job ended
                continue
            raise AssertionError(f"{ip}:{port} ({who}) answers a request without the token")
    finally:
        client.stop_job(job)


def _starter(env: dict) -> subprocess.Popen:
    """A process that starts the head the way a notebook kernel does, in a process group of its own."""
    code = (
        "from grpolab.jobs import cluster\ncluster.ensure_local_head(progress=lambda *_: None)\n"
        "print('READY', flush=True)\nimport time\ntime.sleep(600)\n"
    )
    return subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )


@pytest.mark.slow(20)
def test_two_launches_share_one_head_that_outlives_their_process_groups_and_stops_alone(no_head, ray_head):
    env = no_head
    assert not head_status(env)["running"]
    starters = [_starter(env), _starter(env)]  # two launches at once, no head running
    try:
        for proc in starters:
            assert proc.stdout.readline().strip() == "READY", proc.stdout.read()
        gcs_port = env["GRPOLAB_RAY_PORT"]
        gcs = [
            p
            for p in psutil.process_iter(["name", "cmdline"])
            if p.info["name"] == "gcs_server" and f"--gcs_server_port={gcs_port}" in " ".join(p.info["cmdline"] or ())
        ]
        assert len(gcs) == 1, gcs  # one head, shared
        # the head's processes keep their temp files in its own folder (Ray's end by a signal or os._exit, which
        # skips their clean-up: each head left a multiprocessing pymp-* folder in /tmp), and stopping it removes it
        scratch = Path(head_status(env)["state_dir"]) / cluster.HEAD_SCRATCH
        assert gcs[0].environ()["TMPDIR"] == str(scratch) and scratch.is_dir()
        for proc in starters:  # Jupyter signals a kernel's whole process group on interrupt, restart and shutdown
            os.killpg(proc.pid, signal.SIGINT)
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        time.sleep(3)
        status = head_status(env)
        assert status["running"], status
    finally:
        for proc in starters:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    out = grpolab(env, "head", "stop")
    assert out.returncode == 0 and "stopped the embedded Ray head" in out.stdout, out.stdout + out.stderr
    status = head_status(env)
    assert not status["running"] and status["processes"] == 0
    assert not scratch.exists()
    assert "not running" in grpolab(env, "head", "status").stdout
    assert cluster.head_alive()  # the session's own head (other ports) was not touched


def _run_cells(kc, cells: list[str], interrupt_at: int | None = None, km=None, after: str = "") -> list[dict]:
    """Execute code cells in a kernel; interrupt the `interrupt_at` cell once `after` shows in its output."""
    outputs: list[dict] = []
    for index, code in enumerate(cells):
        msg_id = kc.execute(code)
        interrupted = False
        while True:
            msg = kc.get_iopub_msg(timeout=600)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind in ("stream", "error", "display_data", "execute_result"):
                outputs.append({"cell": index, "type": kind, **content})
                text = content.get("text", "")
                if index == interrupt_at and not interrupted and after in text:
                    time.sleep(2)
                    km.interrupt_kernel()
                    interrupted = True
            if kind == "status" and content["execution_state"] == "idle":
                break
    return outputs


@pytest.mark.slow(140)
def test_interrupt_kernel_shutdown_and_a_killed_head_never_lose_a_run(no_head, wait_for, short_tiny):
    """03_launch from no head: interrupt its follow cell, shut the kernel down; the run goes on to SUCCEEDED.
    Then a head killed mid-run: the run ends from its own record (or LOST), `stop` says so, the next launch works."""
    from jupyter_client import KernelManager
    from papermill.iorw import load_notebook_node

    env = {**no_head, "JPY_SESSION_NAME": ""}
    runs_root = Path(env["GRPOLAB_RUNS"])
    book = load_notebook_node(str(ROOT / "notebooks" / "03_launch.ipynb"))
    cells = [c.source for c in book.cells if c.cell_type == "code"]
    parameters = next(
        i
        for i, c in enumerate(c for c in book.cells if c.cell_type == "code")
        if "parameters" in c.metadata.get("tags", [])
    )
    cells.insert(
        parameters + 1,
        "model = 'tiny'\nrun_id = 'interrupted'\noverrides = "
        + repr(["trainer.total_steps=60", "trainer.test_freq=20", "local.warmup_steps=5"]),
    )
    follow = next(i for i, code in enumerate(cells) if "nb.follow(run)" in code)
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(ROOT / "notebooks"))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=120)
        outputs = _run_cells(kc, cells[: follow + 1], interrupt_at=follow, km=km, after="following run")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)  # Jupyter signals the kernel's process group
    followed = [o for o in outputs if o["cell"] == follow]
    assert any(
        "stopped following; the run goes on (grpolab status interrupted" in o.get("text", "") for o in followed
    ), followed
    assert not [o for o in outputs if o["type"] == "error"], [o for o in outputs if o["type"] == "error"]

    def ended(run_id: str) -> dict | None:
        status = json.loads(grpolab(env, "status", run_id, "--json").stdout)
        return status if status.get("state") not in ("PENDING", "RUNNING") else None

    assert wait_for(lambda: ended("interrupted"), timeout=300, every=3)["state"] == "SUCCEEDED"

    # a head killed mid-run (its GCS, kill -9): the run must not stay RUNNING forever
    out = grpolab(
        env,
        "run",
        "tiny",
        "--run-id",
        "head-killed",
        *sets(["trainer.total_steps=100", "trainer.test_freq=50", "local.warmup_steps=5"]),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    metrics = runs_root / "head-killed" / "metrics.jsonl"
    wait_for(lambda: metrics.exists() and len(metrics.read_text().splitlines()) >= 3, timeout=240)
    gcs_port = int(env["GRPOLAB_RAY_PORT"])
    gcs = [c.pid for c in psutil.net_connections("tcp") if c.status == psutil.CONN_LISTEN and c.laddr.port == gcs_port]
    assert gcs
    for pid in set(gcs):
        os.kill(pid, signal.SIGKILL)
    status = wait_for(lambda: ended("head-killed"), timeout=300, every=3)
    assert status["state"] in ("SUCCEEDED", "FAILED", "LOST"), status
    assert status.get("finalized") and status.get("note"), status
    if status["state"] == "LOST":
        assert "left no end record" in status["lost"]
    assert (runs_root / "head-killed" / "logs" / "job.log").read_text().strip()  # the log is kept in the run
    out = grpolab(env, "stop", "head-killed")
    assert out.returncode == 0 and "nothing to stop" in out.stdout, out.stdout + out.stderr
    out = grpolab(env, "run", "tiny", "--wait", "--run-id", "after-the-kill", *sets(short_tiny), timeout=420)
    assert out.returncode == 0 and "run after-the-kill: SUCCEEDED" in out.stdout, out.stdout[-3000:] + out.stderr


# ------------------------------------------------------------------------- the job's own record, without Ray


def test_job_wrapper_reads_and_deletes_secrets_and_records_its_end_and_log(tmp_path):
    from grpolab.jobs import runs, secrets

    run_dir = runs.create_run("tiny", run_id="run", root=tmp_path).path
    fd = os.open(run_dir / secrets.SECRETS_FILE, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump({"MY_API_KEY": "s3cret"}, fh)
    code = "import os, sys; print('key', len(os.environ['MY_API_KEY'])); print('cwd', os.getcwd()); sys.exit(3)"
    proc = subprocess.run(
        [sys.executable, "-m", "grpolab.jobs.job_entry", str(run_dir), "--", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3 and "key 6" in proc.stdout  # the value reached the job, the output reached Ray
    assert not (run_dir / secrets.SECRETS_FILE).exists()
    record = json.loads((run_dir / "job.json").read_text())
    assert record["exit_code"] == 3 and record["ended"] >= record["started"] and not record["stopped"]
    log = (run_dir / "logs" / "job.log").read_text()
    assert "key 6" in log and f"cwd {run_dir}" in log and "s3cret" not in log


def test_the_trainers_temp_files_stay_in_its_run_and_go_when_the_job_ends(tmp_path):
    from grpolab import run_folder
    from grpolab.jobs import runs

    # what wandb and multiprocessing make in a process that ends by os._exit (as Ray's workers do): never cleaned
    code = (
        "import multiprocessing.util, os, tempfile; print('made', tempfile.mkdtemp(suffix='wandb-media'));"
        "print('made', multiprocessing.util.get_temp_dir()); os._exit(0)"
    )
    run_dir = runs.create_run("tiny", run_id="run", root=tmp_path).path
    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "GRPOLAB_SCRATCH")}
    command = [sys.executable, "-m", "grpolab.jobs.job_entry", str(run_dir), "--", sys.executable, "-c", code]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
    made = [Path(line.split(" ", 1)[1]) for line in proc.stdout.splitlines() if line.startswith("made ")]
    assert proc.returncode == 0 and len(made) == 2, proc.stdout + proc.stderr
    for path in made:
        assert path.parent == run_folder.tmp_dir(run_dir).resolve() and not path.exists()
    assert not run_folder.tmp_dir(run_dir).exists()
    # a temp dir the user chose is theirs: kept, and what the trainer leaves there stays
    mine = tmp_path / "mine"
    mine.mkdir()
    run_dir = runs.create_run("tiny", run_id="run2", root=tmp_path).path
    proc = subprocess.run(
        command[:3] + [str(run_dir)] + command[4:],
        capture_output=True,
        text=True,
        timeout=60,
        env={**env, "TMPDIR": str(mine)},
    )
    made = [Path(line.split(" ", 1)[1]) for line in proc.stdout.splitlines() if line.startswith("made ")]
    assert proc.returncode == 0 and made and all(p.parent == mine and p.exists() for p in made), proc.stdout


def _orphan_run(root: Path, run_id: str, record: dict | None):
    """A run submitted to an embedded head that is gone, with the job record it left (or none)."""
    from grpolab.jobs import runs

    run = runs.create_run("tiny", run_id=run_id, root=root)
    run.write_status(state="RUNNING", job_id=run_id, endpoint=cluster.embedded_endpoint().to_dict())
    run.job_log.write_text("step 1\nstep 2\nTraceback (most recent call last):\nRuntimeError: boom\n")
    if record is not None:
        (run.path / "job.json").write_text(json.dumps(record))
    return run


@pytest.mark.parametrize(
    "record, state",
    [
        ({"pid": 1, "host": "elsewhere", "started": 0, "exit_code": 0, "ended": 5, "stopped": False}, "SUCCEEDED"),
        ({"pid": 1, "host": "elsewhere", "started": 0, "exit_code": 1, "ended": 5, "stopped": False}, "FAILED"),
        ({"pid": 1, "host": "elsewhere", "started": 0, "exit_code": -15, "ended": 5, "stopped": True}, "STOPPED"),
        ({"pid": 1, "host": "elsewhere", "started": 0}, "LOST"),
        (None, "LOST"),
    ],
    ids=["succeeded", "failed", "stopped", "no-end-record", "no-record"],
)
def test_a_run_whose_head_is_gone_ends_from_its_own_record(tmp_path, monkeypatch, record, state):
    from grpolab.jobs import control
    from grpolab.jobs import state as run_state

    monkeypatch.setattr(cluster, "head_alive", lambda timeout=2.0: False)  # the head is gone
    run = _orphan_run(tmp_path, "orphan", record)
    status = run_state.refresh(run)
    why = "own record" if state != "LOST" else "head is gone"
    assert status["state"] == state and status["finalized"] and why in status["note"], status
    assert status["log_tail"][-1] == "RuntimeError: boom"
    if state == "LOST":
        from grpolab.monitor.summary import failure_of

        assert failure_of(run, status).cause == "lost" and "left no end record" in status["lost"]
    with pytest.raises(control.NothingToStop, match=state):
        control.stop_run(run)


def test_a_run_whose_head_went_away_says_so_not_stopped_with_code_minus_15(tmp_path, monkeypatch):
    """Issue 44: `grpolab head stop` mid-run SIGTERMs the job, whose wrapper records a stop: the run read STOPPED
    "the job was stopped with code -15", as if someone had stopped it. A stop nobody asked for now says the head
    went away; one asked for (grpolab stop, Stop run) says so; one from Ray itself says that."""
    from grpolab.jobs import state as run_state

    ended = {"pid": 1, "host": "elsewhere", "started": 0, "exit_code": -15, "ended": 5, "stopped": True, "signal": 15}
    monkeypatch.setattr(cluster, "head_alive", lambda timeout=2.0: False)  # `grpolab head stop` ran
    status = run_state.refresh(_orphan_run(tmp_path, "head-stopped", ended))
    assert status["state"] == "STOPPED" and status["message"].startswith("its Ray head went away mid-run"), status
    assert "signal 15" in status["message"] and "code -15" not in status["message"]
    asked = _orphan_run(tmp_path, "asked", ended)
    asked.write_status(stop_requested=4.0)
    assert run_state.refresh(asked)["message"].startswith("stopped on request")
    monkeypatch.setattr(cluster, "head_alive", lambda timeout=2.0: True)  # the same head runs on
    monkeypatch.setattr(cluster, "head_record", lambda: {"started": 1.0})
    assert run_state.refresh(_orphan_run(tmp_path, "ray-stopped", ended))["message"].startswith("Ray stopped the job")


def test_a_run_whose_head_is_gone_but_whose_job_goes_on_here_stays_running_and_can_be_stopped(tmp_path, monkeypatch):
    import socket

    from grpolab.jobs import control, state

    monkeypatch.setattr(cluster, "head_alive", lambda timeout=2.0: False)
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        started = psutil.Process(job.pid).create_time()
        run = _orphan_run(tmp_path, "orphan-alive", {"pid": job.pid, "host": socket.gethostname(), "started": started})
        status = state.refresh(run)
        assert status["state"] == "RUNNING" and f"pid {job.pid}" in status["note"]
        status = control.stop_run(run, timeout=30)  # stopped directly: the head that would stop it is gone
        assert job.wait(timeout=30) is not None
        assert status["state"] == "LOST"  # it left no end record: killed before the wrapper could write one
    finally:
        if job.poll() is None:
            job.kill()
