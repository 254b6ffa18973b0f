"""Runs in a hostile world, as a user meets them: every view of a run's state agrees and is true, whatever went
wrong; reads are bounded; JSON is strict and errors keep to the contract; secrets never show.

- bad records (ill-typed values, a FIFO, another run's record) are one row each, every other run still lists,
  and `status` of one is a clean error; $GRPOLAB_RUNS pointing at a file is a clean error;
- a submission that fails (an unreachable address, a full disk once the run folder exists, a head stopped
  under it) leaves the run FAILED with its cause and no secrets file; an unreachable address fails within 30 s,
  naming what was tried, on stderr;
- `status`, `logs` and `stop` work on a full disk (RLIMIT_FSIZE) and on a read-only runs folder, and write nothing;
- `logs --tail` reads from the end; strict JSON (NaN/Infinity as null plus a flag); `--json` errors for every
  verb; a submit renders once (a spy) and submits what the gate rendered, with its Ray endpoint kept whole;
- the job's wrapper stops a job whose run folder was deleted and leaves no folder without a record.
Most cases need no Ray (Ray's Jobs API is replaced by a stub where a job must be accepted); the last test starts
a user's head from nothing and covers what only a real head shows: `grpolab runs` after a run ended on its own,
`stop` during a submission, `rm -rf runs/ID` mid-run, and `head stop` during a submission.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from grpolab.cli import VERBS, main
from grpolab.jobs import cluster, control, launch, runs, secrets, state
from grpolab.recipe.loader import load_recipe
from grpolab.recipe.secrets import REDACTED

ROOT = Path(__file__).resolve().parents[1]
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
LONG = ["trainer.total_steps=400", "trainer.test_freq=100", "local.warmup_steps=5"]
TOKEN = "hf-token-value-7q2"


def sets(overrides: list[str]) -> list[str]:
    return [a for s in overrides for a in ("--set", s)]


def call(capsys, *argv: str) -> tuple[int, str, str]:
    """The CLI in this process, as `grpolab ARGV` (exit status, stdout, stderr)."""
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def strict(text: str):
    """Parse JSON refusing NaN / Infinity (what browsers, jq and JSON.parse do)."""

    def refuse(name):
        raise AssertionError(f"not strict JSON: {name}")

    return json.loads(text, parse_constant=refuse)


def one_error_line(err: str, verb: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"grpolab {verb}:"), err
    return lines[0]


# ------------------------------------------------------------------------------------------ stand-ins for Ray


class StubJobs:
    """Ray's JobSubmissionClient without Ray: accepts jobs, answers for them, records stops."""

    def __init__(self, fail: Exception | None = None):
        self.fail, self.jobs, self.stopped = fail, {}, []

    def submit_job(self, entrypoint, submission_id, runtime_env, metadata):
        if self.fail is not None:
            raise self.fail
        self.jobs[submission_id] = SimpleNamespace(
            entrypoint=entrypoint, env=runtime_env["env_vars"], runtime_env=runtime_env, metadata=metadata,
            status="RUNNING",
        )  # fmt: skip
        return submission_id

    def get_job_info(self, job_id):
        job = self.jobs[job_id]
        return SimpleNamespace(
            status=job.status, message="", start_time=None, end_time=None, metadata=job.metadata,
            submission_id=job_id, driver_exit_code=None,
        )  # fmt: skip

    def get_job_logs(self, job_id):
        return ""

    def stop_job(self, job_id):
        self.stopped.append(job_id)
        self.jobs[job_id].status = "STOPPED"
        return True


@pytest.fixture
def stub_ray(monkeypatch):
    """The embedded head as a stub: it 'runs', and its Jobs API is StubJobs (nothing starts)."""
    jobs = StubJobs()
    monkeypatch.setattr(cluster, "ensure_local_head", lambda progress=print: cluster.embedded_endpoint())
    monkeypatch.setattr(cluster, "head_alive", lambda timeout=2.0: True)
    monkeypatch.setattr(cluster, "job_client", lambda ep: jobs)  # submits
    monkeypatch.setattr(cluster, "jobs_api", lambda ep: jobs)  # reads and stops
    return jobs


def _dead_pid() -> tuple[int, float]:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    since = psutil.Process(proc.pid).create_time()
    proc.wait()
    return proc.pid, since


# ------------------------------------------------------------------------------------------ records and listing

BAD_RECORDS = {
    "yesterday": {"created": "yesterday"},
    "huge": {"created": 1e400},
    "recipe-null": {"recipe": None},
    "state-list": {"state": ["RUNNING"]},
    "message-int": {"message": 5},
    "stamp-bool": {"ended": True},
}


def _record(root: Path, run_id: str, **fields) -> Path:
    path = root / run_id
    (path / "logs").mkdir(parents=True)
    record = {"run_id": run_id, "state": "SUCCEEDED", "recipe": "tiny", "created": 1_700_000_000.0, **fields}
    (path / "status.json").write_text(json.dumps(record))
    return path


def test_a_bad_record_is_one_row_and_every_other_run_lists(_isolated_runs, capsys):
    root = _isolated_runs
    _record(root, "good-1")
    _record(root, "good-2", state="FAILED", message="boom")
    for run_id, fields in BAD_RECORDS.items():
        _record(root, run_id, **fields)
    (root / "other").mkdir()
    (root / "other" / "status.json").write_text(json.dumps({"run_id": "someone-else", "state": "RUNNING"}))
    (root / "fifo").mkdir()
    os.mkfifo(root / "fifo" / "status.json")  # nothing ever writes to it: a read would block forever

    code, out, err = call(capsys, "runs")
    assert code == 0 and not err, err
    rows = {line.split()[0]: line for line in out.splitlines()[1:]}
    assert "SUCCEEDED" in rows["good-1"] and "FAILED" in rows["good-2"]
    for run_id in [*BAD_RECORDS, "other", "fifo"]:
        assert "unreadable record: " in rows[run_id], (run_id, out)
    assert "FIFO" in rows["fifo"] and "someone-else" in rows["other"] and "yesterday" in rows["yesterday"]

    code, out, _ = call(capsys, "runs", "--json")
    listed = {row["run_id"]: row for row in strict(out)}
    assert listed["good-1"]["state"] == "SUCCEEDED" and listed["huge"]["error"].startswith("unreadable record: ")

    for run_id in [*BAD_RECORDS, "fifo", "other"]:
        code, out, err = call(capsys, "status", run_id)
        assert code == 2 and not out, (run_id, out)
        assert "unreadable record" in one_error_line(err, "status") or "names run" in err
        code, out, err = call(capsys, "status", run_id, "--json")
        assert strict(out)["exit"] == 2 and "Traceback" not in err


def test_runs_folder_that_is_a_file_is_a_clean_error(tmp_path, monkeypatch, capsys):
    afile = tmp_path / "runs-file"
    afile.write_text("not a folder\n")
    monkeypatch.setenv("GRPOLAB_RUNS", str(afile))
    for argv in (["runs"], ["status", "x"], ["run", "tiny", "--ray-address", "http://127.0.0.1:1"]):
        code, out, err = call(capsys, *argv)
        line = one_error_line(err, argv[0])
        assert code == 2 and "is a file, not a folder" in line and "Errno" not in line, line
    assert afile.read_text() == "not a folder\n"


# ------------------------------------------------------------------------------------------ failed submissions


def test_an_unreachable_dashboard_fails_fast_on_stderr_and_leaves_the_run_failed(_isolated_runs, capsys, short_tiny):
    start = time.time()
    code, out, err = call(capsys, "run", "tiny", "--ray-address", "http://127.0.0.1:1", *sets(short_tiny))
    assert code == 1 and time.time() - start < 30
    line = one_error_line(err, "run")
    assert "http://127.0.0.1:1" in line and "Connection refused" in line and "cannot reach" not in out
    (run_dir,) = _isolated_runs.iterdir()
    code, out, _ = call(capsys, "runs")
    assert "FAILED" in out.splitlines()[1]
    code, out, _ = call(capsys, "status", run_dir.name, "--json")
    status = strict(out)
    assert code == 1 and status["state"] == "FAILED" and "127.0.0.1:1" in status["message"]
    assert status["endpoint"] == {"dashboard": "http://127.0.0.1:1", "gcs": None, "embedded": False}


def test_an_unreachable_cluster_address_fails_within_30_s_naming_what_was_tried(_isolated_runs, cli):
    start = time.time()
    proc = cli("run", "tiny", "--ray-address", "127.0.0.1:1", timeout=60)
    assert proc.returncode == 1 and time.time() - start < 30, proc.stderr
    assert "127.0.0.1:1" in proc.stderr and "TCP connection" in proc.stderr and not proc.stdout.strip()
    assert "Failed to connect to GCS" not in proc.stderr  # Ray's own retries are not printed
    (run_dir,) = _isolated_runs.iterdir()
    assert json.loads((run_dir / "status.json").read_text())["state"] == "FAILED"


def test_a_submission_refused_by_the_head_is_failed_with_no_secrets_file(_isolated_runs, stub_ray, capsys, short_tiny):
    stub_ray.fail = ConnectionError("the head was stopped")
    recipe = load_recipe("tiny", [*short_tiny, f"env.HF_TOKEN={TOKEN}"])
    with pytest.raises(cluster.ClusterError, match="the head was stopped"):
        launch.submit(recipe, progress=lambda *_: None)
    (run_dir,) = _isolated_runs.iterdir()
    assert not (run_dir / secrets.SECRETS_FILE).exists()
    status = state.refresh(runs.Run(run_dir))
    assert status["state"] == "FAILED" and "the head was stopped" in status["message"]
    assert TOKEN not in "".join(p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file())


def test_a_full_disk_after_the_run_folder_exists_leaves_it_failed(_isolated_runs, stub_ray, monkeypatch, short_tiny):
    real = runs.atomic_write

    def full(path, text):
        if path.name == "recipe.yaml":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        real(path, text)

    monkeypatch.setattr(runs, "atomic_write", full)
    recipe = load_recipe("tiny", [*short_tiny, f"env.HF_TOKEN={TOKEN}"])
    with pytest.raises(OSError, match="No space left"):
        launch.submit(recipe, progress=lambda *_: None)
    (run_dir,) = _isolated_runs.iterdir()
    status = state.refresh(runs.Run(run_dir))
    assert status["state"] == "FAILED" and "No space left on device" in status["message"]
    assert not (run_dir / "recipe.yaml").exists() and not (run_dir / secrets.SECRETS_FILE).exists()
    assert not stub_ray.jobs


def test_a_submitter_that_died_unrecorded_leaves_the_run_failed_and_a_live_one_pending(_isolated_runs):
    import socket

    pid, since = _dead_pid()
    host = socket.gethostname()
    gone = runs.create_run("tiny", run_id="gone", submitter={"pid": pid, "host": host, "since": since})
    (gone.path / secrets.SECRETS_FILE).write_text("{}")
    status = state.refresh(gone)
    assert status["state"] == "FAILED" and f"pid {pid}" in status["message"]
    assert not (gone.path / secrets.SECRETS_FILE).exists()
    live = runs.create_run("tiny", run_id="live", submitter=state.submitter())
    assert state.refresh(live)["state"] == "PENDING"


def test_a_submit_renders_once_and_submits_what_the_gate_rendered(_isolated_runs, stub_ray, monkeypatch):
    """One render per submit, and the first-class keys built once: a recipe with verl_overrides (glm5_2) has them
    checked for shadowing from the keys its launch was rendered from, not from a second rendering."""
    from grpolab.rules import gate
    from grpolab.verl import fieldmap

    rendered, keys = [], []
    real, real_keys = gate.render, fieldmap.render_keys

    def spy(recipe, run_dir=None, first_class=None):
        rendered.append(run_dir)
        return real(recipe, run_dir, first_class)

    monkeypatch.setattr(gate, "render", spy)  # the one render a submit asks for is the gate's
    monkeypatch.setattr(
        fieldmap, "render_keys", lambda recipe, run_dir: keys.append(run_dir) or real_keys(recipe, run_dir)
    )
    for name in ("tiny", "qwen3_30b_a3b", "glm5_2"):
        rendered.clear()
        keys.clear()
        run = launch.submit(load_recipe(name), progress=lambda *_: None)
        assert rendered == [str(run.path)], (name, rendered)  # once, for the run's own directory
        assert keys == ([] if name == "tiny" else [str(run.path)]), (name, keys)  # the trl trainer has no verl keys
        job = stub_ray.jobs[run.run_id]
        assert str(run.path) in job.entrypoint
        if name != "tiny":
            assert job.env["VERL_FILE_LOGGER_PATH"] == f"{run.path}/metrics.jsonl"
        record = run.status()
        assert record["endpoint"] == cluster.embedded_endpoint().to_dict() and "ray_address" not in record


def test_stop_during_a_submission_stops_what_was_submitted(_isolated_runs, stub_ray):
    run = runs.create_run(
        "tiny", run_id="busy", submitter=state.submitter(), endpoint=cluster.embedded_endpoint().to_dict()
    )

    def submitter():  # what launch does once Ray has accepted the job, a moment later
        time.sleep(1.5)
        stub_ray.submit_job("job", run.run_id, {"env_vars": {}}, {"grpolab_run_dir": str(run.path)})
        run.write_status(job_id=run.run_id, submitter=None)

    import threading

    thread = threading.Thread(target=submitter)
    thread.start()
    status = control.stop_run(run, timeout=10)
    thread.join()
    assert stub_ray.stopped == [run.run_id] and status["state"] == "STOPPED"


# ------------------------------------------------------------------------------------------ full disk, read-only


def _ended_unrecorded(root: Path, alive_pid: int | None = None) -> runs.Run:
    """A run whose record says RUNNING; its job's own record says it ended (or, with alive_pid, that it runs
    here while its head is gone)."""
    run = runs.create_run("tiny", run_id="ended", root=root, recipe="tiny")
    gone = {"dashboard": "http://127.0.0.1:9", "gcs": None, "embedded": True}  # not this machine's head
    run.write_status(state="RUNNING", job_id="ended", endpoint=gone)
    run.job_log.write_text("".join(f"line {i}\n" for i in range(100)))
    record = {"pid": 1, "host": "elsewhere", "started": 1_700_000_000.0, "exit_code": 0, "ended": 1_700_000_090.0}
    if alive_pid is not None:
        import socket

        record = {"pid": alive_pid, "host": socket.gethostname(), "started": psutil.Process(alive_pid).create_time()}
    (run.path / "job.json").write_text(json.dumps(record))
    return run


def _no_writes(env: dict, *argv: str) -> subprocess.CompletedProcess:
    """`grpolab ARGV` where no file can grow (RLIMIT_FSIZE 0: every write of a byte fails, as on a full disk)."""

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    return subprocess.run(
        [GRPOLAB, *argv], env=env, capture_output=True, text=True, timeout=120, preexec_fn=limit, cwd=ROOT
    )


def test_status_logs_and_stop_work_on_a_full_disk(_isolated_runs):
    run = _ended_unrecorded(_isolated_runs)
    before = run.status_file.read_text()
    env = dict(os.environ)
    proc = _no_writes(env, "status", "ended")
    assert proc.returncode == 0 and "run ended: SUCCEEDED" in proc.stdout and "ran 1:30" in proc.stdout, proc
    assert "not recorded in status.json" in proc.stdout and "Traceback" not in proc.stderr
    assert run.status_file.read_text() == before  # nothing written
    proc = _no_writes(env, "logs", "--tail", "2", "ended")
    assert proc.returncode == 0 and proc.stdout.splitlines() == ["line 98", "line 99"], proc
    proc = _no_writes(env, "stop", "ended")
    assert proc.returncode == 0 and "SUCCEEDED: nothing to stop" in proc.stdout, proc

    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        shutil.rmtree(run.path)
        _ended_unrecorded(_isolated_runs, alive_pid=job.pid)
        proc = _no_writes(env, "stop", "ended")  # its head is gone, the job runs here: stopped directly
        assert proc.returncode == 0 and job.wait(timeout=30) is not None, proc
    finally:
        if job.poll() is None:
            job.kill()


@pytest.fixture
def read_only_runs(_isolated_runs):
    """The runs folder made read-only for real: a read-only bind mount when root (root ignores modes), else
    chmod; skipped where neither can be done."""
    root = _isolated_runs
    mounted = False
    if os.geteuid() == 0:
        bound = subprocess.run(["mount", "--bind", "-o", "ro", str(root), str(root)], capture_output=True)
        remounted = (
            bound.returncode == 0
            and subprocess.run(["mount", "-o", "remount,ro,bind", str(root)], capture_output=True).returncode == 0
        )
        if not remounted:
            if bound.returncode == 0:
                subprocess.run(["umount", str(root)], capture_output=True)
            pytest.skip("root, and no read-only bind mount here")
        mounted = True
    else:
        for path in [root, *root.rglob("*")]:
            path.chmod(path.stat().st_mode & ~0o222)
    try:
        yield root
    finally:
        if mounted:
            subprocess.run(["umount", str(root)], capture_output=True)
        else:
            for path in [root, *root.rglob("*")]:
                path.chmod(path.stat().st_mode | 0o200)


def test_status_logs_and_stop_work_on_a_read_only_runs_folder(_isolated_runs, request):
    run = _ended_unrecorded(_isolated_runs)
    before = run.status_file.read_text()
    request.getfixturevalue("read_only_runs")
    for argv, code, expect in (
        (["status", "ended"], 0, "run ended: SUCCEEDED"),
        (["logs", "--tail", "1", "ended"], 0, "line 99"),
        (["stop", "ended"], 0, "nothing to stop"),
        (["runs"], 0, "SUCCEEDED"),
    ):
        proc = subprocess.run([GRPOLAB, *argv], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert proc.returncode == code and expect in proc.stdout and "Traceback" not in proc.stderr, (argv, proc)
    assert run.status_file.read_text() == before


# ------------------------------------------------------------------------------------------ bounded reads


def test_logs_tail_reads_from_the_end_of_a_huge_log(_isolated_runs):
    run = _record(_isolated_runs, "big")
    log = run / "logs" / "job.log"
    with open(log, "wb") as fh:  # 300 MB, sparse: cheap to make, dear to read whole
        fh.truncate(300 << 20)
        fh.seek(0, os.SEEK_END)
        fh.write(b"\nsecond to last\nthe last line\n")
    code = (  # VmHWM: this process's peak (ru_maxrss would carry over the pytest parent's across exec)
        "import sys\nfrom grpolab.cli import main\ncode = main(['logs', '--tail', '2', 'big'])\n"
        "peak = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "print('MAXRSS', peak, file=sys.stderr)\nsys.exit(code)"
    )
    start = time.time()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.splitlines() == ["second to last", "the last line"], proc
    peak_mb, seconds = int(proc.stderr.split("MAXRSS")[1].split()[0]) / 1024, time.time() - start
    assert peak_mb < 200 and seconds < 60, (peak_mb, seconds)  # reading it whole would take 300 MB and more


# ------------------------------------------------------------------------------------------ JSON and errors


def test_json_is_strict_with_a_flag_where_a_number_was_not_finite(capsys):
    code, out, _ = call(capsys, "check", "tiny", "--set", "rollout.gpu_memory_utilization=.nan", "--json")
    (problem,) = [p for p in strict(out) if p["key"] == "rollout.gpu_memory_utilization"]
    assert code == 1 and problem["value"] is None and problem["value_nonfinite"] == "NaN"
    from grpolab.cli.common import strict_json

    doc = strict_json({"a": float("inf"), "b": [1.0, float("-inf")], "c": {"d": float("nan")}, "e": 2.5})
    assert doc == {
        "a": None, "a_nonfinite": "Infinity", "b": [1.0, None], "b_nonfinite": {"1": "-Infinity"},
        "c": {"d": None, "d_nonfinite": "NaN"}, "e": 2.5,
    }  # fmt: skip


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_every_verb_prints_json_errors_and_errors_on_stderr(verb, capsys):
    code, out, err = call(capsys, verb, "--json", "--no-such-flag")
    doc = strict(out)
    assert code == 2 and doc["exit"] == 2 and doc["error"], out
    one_error_line(err, verb)


def test_head_start_json_with_a_foreign_server_on_the_port(cli, tmp_path):
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {
            "GRPOLAB_DASHBOARD_PORT": str(server.server_address[1]),
            "GRPOLAB_RAY_PORT": "1",
            "GRPOLAB_HEAD_DIR": str(tmp_path / "head"),
        }
        proc = cli("head", "start", "--json", env=env, timeout=120)
    finally:
        server.shutdown()
    doc = strict(proc.stdout)
    assert proc.returncode == 1 and doc["exit"] == 1 and "not GRPO Lab's embedded head" in doc["error"], proc
    assert "not GRPO Lab's embedded head" in proc.stderr


# ------------------------------------------------------------------------------------------ secrets


@pytest.mark.parametrize("as_json", [False, True])
def test_a_secret_set_twice_shows_neither_value(as_json, capsys):
    argv = ["check", "tiny", "--set", "env.HF_TOKEN=a", "--set", "env.HF_TOKEN=b"] + (["--json"] if as_json else [])
    code, out, err = call(capsys, *argv)
    assert code == 0 and "set 2 times" in out
    assert "HF_TOKEN=a" not in out + err and "HF_TOKEN=b" not in out + err
    if as_json:
        (warning,) = strict(out)
        assert warning["value"] == REDACTED and warning["message"].count(f"env.HF_TOKEN={REDACTED}") == 2
    code, out, err = call(capsys, "check", "tiny", "--set", f"env.HF_TOKEN={TOKEN}", "--set", "env.HF_TOKEN=zz9")
    assert TOKEN not in out + err and "zz9" not in out + err


@pytest.mark.parametrize("verb", [["show"], ["run", "--dry-run"], ["check"], ["render"]])
@pytest.mark.parametrize("override", ["env={HF_TOKEN: " + TOKEN + ", X: [1}", "env={HF_TOKEN: " + TOKEN])
def test_a_malformed_env_override_is_not_echoed(verb, override, capsys):
    code, out, err = call(capsys, *verb, "tiny", "--set", override)
    assert code == 1 and "env" in out + err and TOKEN not in out + err, out + err


def test_one_redaction_for_every_view_of_a_launch(capsys, monkeypatch):
    """A secret by `--set`, copied into a plain variable, and one from the node's env (wandb's key, passed
    through): hidden in run --dry-run, render (json, sh) and the notebook's launch view alike."""
    monkeypatch.setenv("WANDB_API_KEY", "wandb-node-key-55")
    overrides = [f"env.HF_TOKEN={TOKEN}", f"env.PLAIN_COPY={TOKEN}", "trainer.logger=[console,file,wandb]"]
    shown = []
    code, out, _ = call(capsys, "run", "--dry-run", "tiny", *sets(overrides))
    assert code == 0
    described = strict(out)
    assert described["env"]["HF_TOKEN"] == REDACTED and described["env"]["WANDB_API_KEY"] == REDACTED
    assert described["env"]["PLAIN_COPY"] == REDACTED
    shown.append(out)
    for fmt in ("json", "sh"):
        code, out, _ = call(capsys, "render", "tiny", "--format", fmt, *sets(overrides))
        assert code == 0
        shown.append(out)
    from grpolab.notebook.setup import redacted_launch

    shown.append(json.dumps(redacted_launch(load_recipe("tiny", overrides)).to_dict()))
    for text in shown:
        assert TOKEN not in text
    assert "wandb-node-key-55" not in shown[0]


# ------------------------------------------------------------------------------------------ a deleted run folder


def test_the_job_wrapper_stops_a_job_whose_run_folder_was_deleted_and_leaves_no_folder(_isolated_runs):
    run = runs.create_run("tiny", run_id="doomed", root=_isolated_runs)
    # a trainer that keeps writing into its run directory, recreating it as verl's and TRL's savers do
    writer = (
        "import os, sys, time\nrun = sys.argv[1]\nprint('started', flush=True)\nwhile True:\n"
        "    try:\n        os.makedirs(os.path.join(run, 'checkpoint'), exist_ok=True)\n"
        "        open(os.path.join(run, 'checkpoint', 'w'), 'a').write('x')\n"
        "    except OSError:\n        pass\n    time.sleep(0.2)\n"
    )
    wrapper = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "grpolab.jobs.job_entry",
            str(run.path),
            "--",
            sys.executable,
            "-c",
            writer,
            str(run.path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert wrapper.stdout.readline().strip() == "started"
        inode = run.path.stat().st_ino
        while run.path.exists() and run.path.stat().st_ino == inode:  # as `rm -rf`, racing the writer
            shutil.rmtree(run.path, ignore_errors=True)
        out, _ = wrapper.communicate(timeout=60)
    finally:
        if wrapper.poll() is None:
            os.kill(wrapper.pid, signal.SIGKILL)
    assert wrapper.returncode == 1 and "was deleted" in out, out
    assert not run.path.exists()


def test_a_run_whose_head_is_gone_and_never_started_has_no_secrets_file(_isolated_runs, monkeypatch):
    monkeypatch.setattr(cluster, "head_alive", lambda timeout=2.0: False)
    run = runs.create_run("tiny", run_id="never", endpoint=cluster.embedded_endpoint().to_dict())
    run.write_status(job_id="never", submitter=None)
    secrets.hand_off(run.path, {"HF_TOKEN": TOKEN}, [])
    status = state.refresh(run)
    assert status["state"] == "LOST" and not (run.path / secrets.SECRETS_FILE).exists()


# ------------------------------------------------------------------------------------------ with a real head


@pytest.mark.slow(70)
def test_true_states_from_no_head_runs_stop_deleted_folder_and_head_stop(no_head, wait_for, short_tiny):
    """From no head: `grpolab runs` right after a run ended on its own (nobody followed it) says SUCCEEDED with
    the run's own times; `stop` during a submission stops what was submitted; `rm -rf runs/ID` mid-run is
    reported as such and the job stops (by id) without its folder coming back; `head stop` during a
    submission leaves the run ended (FAILED, LOST, or STOPPED when its job had started), never PENDING, and no
    secrets file."""
    env = no_head
    root = Path(env["GRPOLAB_RUNS"])

    def grpolab(*args, timeout=300):
        return subprocess.run([GRPOLAB, *args], env=env, capture_output=True, text=True, timeout=timeout, cwd=ROOT)

    def text(path: Path) -> str:
        try:
            return path.read_text()
        except OSError:
            return ""

    def record(run_id):
        try:
            return json.loads((root / run_id / "status.json").read_text())
        except (OSError, ValueError):
            return {}

    def launching(run_id, *extra):
        return subprocess.Popen(
            [GRPOLAB, "run", "tiny", "--run-id", run_id, *sets(LONG), *extra],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=ROOT,
        )

    # a run nobody follows (no --wait); the cases below run while it trains, and it is looked at once it ended
    out = grpolab("run", "tiny", "--run-id", "alone", *sets(short_tiny))
    assert out.returncode == 0, out.stdout + out.stderr

    submitting = launching("stopped-early")
    wait_for(lambda: record("stopped-early"), every=0.05)  # the run folder exists: the submission is under way
    out = grpolab("stop", "stopped-early")
    submitting.communicate(timeout=300)
    assert out.returncode == 0 and ("STOPPED" in out.stdout or "nothing to stop" in out.stdout), out
    # the record settles on its own: asked until it says so (a run that stayed PENDING or RUNNING times out)
    wait_for(lambda: json.loads(grpolab("status", "stopped-early", "--json").stdout)["state"] in ("STOPPED", "FAILED"))

    out = grpolab("run", "tiny", "--run-id", "deleted", *sets(LONG))
    assert out.returncode == 0, out.stdout + out.stderr
    wait_for(lambda: "pid" in text(root / "deleted" / "job.json"), every=0.5)  # the job runs
    shutil.rmtree(root / "deleted", ignore_errors=True)
    out = grpolab("status", "deleted")
    assert out.returncode == 1 and "was deleted" in out.stdout, out.stdout + out.stderr
    out = grpolab("stop", "deleted")
    assert out.returncode == 0 and "deleted" in out.stdout, out.stdout + out.stderr
    time.sleep(2)
    assert not (root / "deleted").exists()

    wait_for(lambda: "exit_code" in text(root / "alone" / "job.json"), every=0.5)
    ended = json.loads(text(root / "alone" / "job.json"))
    listed = grpolab("runs")  # the first view of it since it ended: nobody called status
    assert "SUCCEEDED" in listed.stdout.split("alone", 1)[1].splitlines()[0], listed.stdout
    status = json.loads(grpolab("status", "alone", "--json").stdout)
    assert status["started"] == ended["started"] and status["ended"] == ended["ended"]
    assert status["elapsed_s"] == pytest.approx(ended["ended"] - ended["started"])

    submitting = launching("head-stopped", "--set", f"env.HF_TOKEN={TOKEN}")
    wait_for(lambda: record("head-stopped"), every=0.05)
    assert grpolab("head", "stop").returncode == 0
    submitting.communicate(timeout=300)
    assert not (root / "head-stopped" / secrets.SECRETS_FILE).exists()
    final = json.loads(grpolab("status", "head-stopped", "--json").stdout)
    assert final["state"] in ("FAILED", "LOST", "STOPPED"), final  # never PENDING or RUNNING
    for path in (root / "head-stopped").rglob("*"):
        if path.is_file():
            assert TOKEN not in path.read_text(errors="replace"), path


# ------------------------------------------------------------------------------------------ what a recipe names


def test_a_recipe_names_its_cluster_and_runtime_env(_isolated_runs, monkeypatch):
    """cluster.ray_address and cluster.runtime_env (e.g. from an imported script) are where and how the job goes,
    unless --ray-address says otherwise; the endpoint is kept whole in the run's record."""
    jobs = StubJobs()
    monkeypatch.setattr(cluster, "job_client", lambda ep: jobs)
    recipe = load_recipe("tiny", ["cluster.ray_address=http://10.9.9.9:8265", "cluster.runtime_env={pip: [rich]}"])
    run = launch.submit(recipe, progress=lambda *_: None)
    assert run.status()["endpoint"] == {"dashboard": "http://10.9.9.9:8265", "gcs": None, "embedded": False}
    job = jobs.jobs[run.run_id]
    assert job.entrypoint.startswith("python3 ")  # a remote cluster has its own interpreter
    assert job.runtime_env["pip"] == ["rich"] and job.runtime_env["env_vars"] == job.env
    assert launch.prepare(recipe, address="http://127.0.0.1:8265").endpoint.dashboard == "http://127.0.0.1:8265"


def test_the_wrapper_reads_a_secret_reference_from_its_node(_isolated_runs):
    """A secret the recipe reads as `${NAME}` that the launching shell lacked is read from the node running the
    job, as Ray does for runtime_env; a `$` inside a literal value stays."""
    run = runs.create_run("tiny", run_id="refs", root=_isolated_runs)
    secrets.hand_off(run.path, {"HF_TOKEN": "${NODE_HF}", "DB_PASSWORD": "pa$word${NOPE}"}, [])
    code = "import os; print(os.environ['HF_TOKEN'], os.environ['DB_PASSWORD'])"
    proc = subprocess.run(
        [sys.executable, "-m", "grpolab.jobs.job_entry", str(run.path), "--", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NODE_HF": "from-the-node"},
    )
    assert proc.returncode == 0 and proc.stdout.split() == ["from-the-node", "pa$word${NOPE}"], proc


def test_two_runs_into_one_shared_ckpt_dir_the_second_is_refused_while_the_first_lives(
    _isolated_runs, stub_ray, tmp_path, short_tiny
):
    from grpolab.jobs.checkpoints import CheckpointsBusy

    shared = tmp_path / "shared-ckpts"
    recipe = load_recipe("tiny", [*short_tiny, f"trainer.ckpt_dir={shared}"])
    first = launch.submit(recipe, progress=lambda *_: None)
    with pytest.raises(CheckpointsBusy, match=f"in use by run {first.run_id}"):
        launch.submit(recipe, progress=lambda *_: None)
    assert [p.name for p in _isolated_runs.iterdir()] == [first.run_id]  # the second made no run folder
    stub_ray.jobs[first.run_id].status = "STOPPED"
    first.write_status(state="STOPPED", finalized=True)
    second = launch.submit(recipe, progress=lambda *_: None)  # the folder is free once the first has ended
    assert json.loads((shared / ".grpolab-owner.json").read_text())["run_id"] == second.run_id
