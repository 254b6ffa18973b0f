"""The Ray connection: an explicit address, RAY_ADDRESS, or the embedded local head (the default).

The embedded head is a real `ray start --head` daemon that belongs to nobody's kernel: it is started in a session
of its own (setsid), so a notebook kernel's interrupt, restart or shutdown (Jupyter signals the kernel's whole
process group) never reaches it, and it outlives the notebook or CLI that started it (a killed launcher loses no
job). It is reused by the next call and stopped only by `grpolab head stop` (`stop_local_head()`), which stops
that head's processes and nothing else.

Safe by default:
- Ray's token authentication is on. The token lives in the head's state folder (`head_dir()`, mode 0700; the
  token file 0600) and reaches every client this project starts through `RAY_AUTH_TOKEN_PATH` or an explicit
  `Authorization` header, never as a value in a record or a log.
- The dashboard (Jobs API) listens on 127.0.0.1 only. `ray start` always advertises the machine's own address to
  the GCS, raylet and agents (it maps 127.0.0.1 to it), and Ray has no option to bind those gRPC servers to
  loopback, so they listen beyond it; every one of them refuses a request without the token. Metrics export is
  off and the dashboard's own Prometheus server is given a port it cannot bind (`embedded_env()`), so no
  unauthenticated metrics port is opened, and no Ray Client server is started (grpolab.jobs.ray_start).
  tests/test_head.py lists the head's sockets to keep it so.
- The head's state folder also holds its Ray temp dir (so two heads on one machine never share
  /tmp/ray/session_latest) and a lock, so two launches at once start one head and share it.

For a remote cluster, Ray's own token handling applies (RAY_AUTH_MODE=token with RAY_AUTH_TOKEN,
RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token), and the token is never written into a run record.

Addresses: `http(s)://host:8265` is a dashboard (the Jobs API); `host:6379` or `ray://host:10001` is a
cluster address for a driver. The Jobs API needs a dashboard address; preflight needs a driver connection.

Why one file of this size: every rule about the embedded head (its state folder, token, lock, start, stop, clients)
must agree; split, they would drift apart.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from grpolab import owned, paths
from grpolab.jobs.jobs_api import JobsApi, needs_sdk
from grpolab.jobs.reach import REACH_TIMEOUT_S, ClusterError, check_reachable, dashboard_of
from grpolab.jobs.reach import probe as _probe
from grpolab.recipe.files import json_object

EMBEDDED_GCS_PORT = int(os.environ.get("GRPOLAB_RAY_PORT", "6479"))
EMBEDDED_DASHBOARD_PORT = int(os.environ.get("GRPOLAB_DASHBOARD_PORT", "8365"))
OBJECT_STORE_BYTES = 512 * 1024**2  # an idle head needs ~0.75 GB; 512 MiB of object store is plenty here
START_TIMEOUT_S = 180  # a busy 2-core machine can take over a minute to bring the dashboard up
LOCK_TIMEOUT_S = 3 * START_TIMEOUT_S + 60  # a second launch waits for the first one's head (all its tries)


@dataclass(frozen=True)
class Endpoint:
    """Where a run's Ray is: resolved once per launch and kept as this structure in the run's record."""

    dashboard: str | None  # http://host:port for the Jobs API
    gcs: str | None  # host:port or ray://... for a driver
    embedded: bool

    @property
    def label(self) -> str:
        return "embedded local Ray head" if self.embedded else f"Ray cluster at {self.dashboard or self.gcs}"

    def to_dict(self) -> dict:
        return {"dashboard": self.dashboard, "gcs": self.gcs, "embedded": self.embedded}

    @classmethod
    def from_record(cls, record: dict) -> Endpoint | None:
        """The endpoint a run's record (status.json) keeps; None when it keeps none (not submitted yet)."""
        kept = record.get("endpoint")
        if isinstance(kept, dict):
            return cls(kept.get("dashboard"), kept.get("gcs"), bool(kept.get("embedded")))
        address = record.get("ray_address")  # a record from before the endpoint was kept whole
        if isinstance(address, str) and address:
            if record.get("embedded"):
                return embedded_endpoint()
            try:
                return parse_address(address)
            except ClusterError:
                return None
        return None


# ------------------------------------------------------------------------------------------ the head's state


HEAD_SCRATCH = "scratch"  # inside head_dir(): the temp dir of the head's processes (grpolab.paths.scratch_env)


def head_dir() -> Path:
    """The embedded head's state folder (token, lock, head.json, Ray's temp dir): $GRPOLAB_HEAD_DIR, else
    <tmp>/grpolab-<uid>/head-<gcs port>; created with mode 0700. Short on purpose: Ray puts unix sockets under
    it, and a socket path may not exceed 107 bytes."""
    base = os.environ.get("GRPOLAB_HEAD_DIR")
    path = Path(base) if base else Path(tempfile.gettempdir()) / f"grpolab-{os.getuid()}" / f"head-{EMBEDDED_GCS_PORT}"
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    for folder in {path, path.parent} if not base else {path}:
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)
    return path


def token_file() -> Path:
    """The embedded head's auth token (created on first use, readable by this user only)."""
    path = head_dir() / "auth_token"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))
    return path


def auth_headers() -> dict[str, str]:
    """The header that authenticates a client to the embedded head."""
    return {"Authorization": f"Bearer {token_file().read_text().strip()}"}


def embedded_endpoint() -> Endpoint:
    """The embedded head's endpoint, whether or not it runs."""
    return Endpoint(f"http://127.0.0.1:{EMBEDDED_DASHBOARD_PORT}", f"127.0.0.1:{EMBEDDED_GCS_PORT}", True)


def dashboard_alive(url: str, timeout: float = 2.0) -> bool:
    """True when a Ray dashboard answers at url (with or without auth)."""
    return _probe(url, timeout=timeout) is not None


def head_alive(timeout: float = 2.0) -> bool:
    """True when the embedded head answers and accepts our token."""
    return _probe(embedded_endpoint().dashboard, auth_headers(), timeout) == 200


def parse_address(address: str) -> Endpoint:
    text = address.strip()
    if text.startswith(("http://", "https://")):
        return Endpoint(text.rstrip("/"), None, False)
    if text.startswith("ray://") or ":" in text:
        return Endpoint(None, text, False)
    raise ClusterError(f"cannot read Ray address {address!r}: use http://HOST:8265 (dashboard) or HOST:6379")


def resolve(address: str | None = None) -> Endpoint | None:
    """The endpoint to use: the argument, else RAY_ADDRESS, else None (meaning the embedded head)."""
    text = address or os.environ.get("RAY_ADDRESS")
    if not text or text in ("local", "embedded"):
        return None
    return parse_address(text)


def embedded_env() -> dict[str, str]:
    """Environment for starting (or being a driver of) the embedded head: token auth on, our token file, no
    metrics port, no usage stats, and none of a remote cluster's settings."""
    env = dict(os.environ)
    for name in ("RAY_ADDRESS", "RAY_AUTH_TOKEN"):
        env.pop(name, None)
    env["RAY_AUTH_MODE"] = "token"
    env["RAY_AUTH_TOKEN_PATH"] = str(token_file())
    env["RAY_enable_metrics_collection"] = "0"  # the Prometheus exporter would listen on all interfaces, no auth
    # The dashboard head also serves Prometheus metrics, without a token, on every interface, at a fixed port
    # (Ray's DASHBOARD_METRIC_PORT, 44227) and with no switch to turn it off. Pointed at the GCS port, which the
    # head already holds, it cannot bind: Ray logs that and goes on without it. tests/test_head.py checks it.
    env["DASHBOARD_METRIC_PORT"] = str(EMBEDDED_GCS_PORT)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    # Ray's own start-up limits (60 s for the dashboard, 15-30 s for agents to register) are short on 2 busy cores
    env.setdefault("RAY_DASHBOARD_STARTUP_TIMEOUT_S", str(START_TIMEOUT_S))
    env.setdefault("RAY_agent_register_timeout_ms", str(START_TIMEOUT_S * 1000))
    # Ray prestarts one idle Python worker per CPU, at start-up and again when the first driver connects; a job here
    # runs in a worker of its own (its runtime_env differs), so those idle ones only cost CPU: about 2 s each, and
    # a 4-step tiny job took 23 s of CPU with them, 15 s without, on 2 cores
    env["RAY_enable_worker_prestart"] = "0"
    env["RAY_prestart_worker_first_driver"] = "0"
    return env


@contextlib.contextmanager
def _head_lock(timeout: float = LOCK_TIMEOUT_S):
    """An exclusive lock on the head's state folder: one process starts or stops the head at a time."""
    path = head_dir() / "head.lock"
    with open(path, "a+") as fh:
        deadline = time.time() + timeout
        while True:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.time() > deadline:
                    raise ClusterError(
                        f"another process has held {path} for {timeout:.0f} s while starting or "
                        "stopping the embedded Ray head; try again, or `grpolab head stop`"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _record_file() -> Path:
    return head_dir() / "head.json"


def head_record() -> dict:
    """What was recorded when the embedded head started ({} when none was)."""
    return json_object(_record_file())


def ensure_local_head(progress=print) -> Endpoint:
    """Start the embedded head unless it already runs; return its endpoint. Safe to call from several processes
    at once: they share one head."""
    ep = embedded_endpoint()
    if head_alive():
        return ep
    with _head_lock():
        if head_alive():  # another process started it while we waited for the lock
            return ep
        if _probe(ep.dashboard) is not None:
            raise ClusterError(
                f"a Ray dashboard that is not GRPO Lab's embedded head (or has another token) answers "
                f"at {ep.dashboard}; stop it, or give the embedded head other ports with "
                "GRPOLAB_RAY_PORT and GRPOLAB_DASHBOARD_PORT"
            )
        leftovers = head_processes()
        if leftovers:  # a head that died half-way (its GCS killed, say) still holds ports: clear it first
            progress(f"clearing {len(leftovers)} process(es) of an embedded Ray head that no longer answers ...")
            _terminate(leftovers)
        _start_head(ep, progress)
    return ep


def _start_head(ep: Endpoint, progress, attempts: int = 3) -> None:
    progress(
        f"starting the embedded Ray head on 127.0.0.1 (dashboard {ep.dashboard}, token auth on); "
        "takes 5-20 s; `grpolab head stop` stops it ..."
    )
    for attempt in range(1, attempts + 1):
        why = _start_head_once(ep)
        if why is None:
            return
        _terminate(head_processes())
        # Ray gives its raylet a fixed 30 s to register with the GCS; on a busy machine that fails now and then
        if "timed out during startup" not in why or attempt == attempts:
            raise ClusterError(
                f"the embedded Ray head did not come up: {why}\nfix: free the ports {EMBEDDED_GCS_PORT} and "
                f"{EMBEDDED_DASHBOARD_PORT}-{EMBEDDED_DASHBOARD_PORT + 4} (or set GRPOLAB_RAY_PORT / "
                "GRPOLAB_DASHBOARD_PORT), or pass --ray-address of a running cluster; the full log is in "
                f"{head_dir() / 'head.log'}"
            )
        progress(
            f"the embedded Ray head timed out while starting (a busy machine); trying again ({attempt + 1}/"
            f"{attempts}) ..."
        )


def _start_head_once(ep: Endpoint) -> str | None:
    """Start `ray start --head --block` in a session of its own; None once it is up, else why not."""
    temp = head_dir() / "ray"
    cmd = [
        sys.executable,
        "-m",
        "grpolab.jobs.ray_start",  # Ray's `ray start`, less the Ray Client server nothing here uses
        "start",
        "--head",
        "--block",
        "--node-ip-address=127.0.0.1",
        f"--port={EMBEDDED_GCS_PORT}",
        "--no-monitor",  # no autoscaler on one machine
        # no log monitor: it streams workers' output to drivers, and every driver here connects with
        # log_to_driver=False (a job's output reaches its log by the job itself); it cost 1.5 s of CPU per start
        "--include-log-monitor=false",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={EMBEDDED_DASHBOARD_PORT}",
        "--include-dashboard=true",
        f"--object-store-memory={OBJECT_STORE_BYTES}",
        "--disable-usage-stats",
        # GRPOLAB_RAY_NUM_CPUS: a head that places no trainer (0), for tests of a cluster whose workers do
        f"--num-cpus={os.environ.get('GRPOLAB_RAY_NUM_CPUS') or os.cpu_count() or 2}",
        f"--temp-dir={temp}",
        # the agents' ports follow the dashboard's, so that two heads on one machine (a user's and the tests')
        # do not collide on Ray's fixed defaults
        f"--dashboard-agent-listen-port={EMBEDDED_DASHBOARD_PORT + 1}",
        f"--dashboard-agent-grpc-port={EMBEDDED_DASHBOARD_PORT + 2}",
        f"--metrics-export-port={EMBEDDED_DASHBOARD_PORT + 3}",
        f"--runtime-env-agent-port={EMBEDDED_DASHBOARD_PORT + 4}",
    ]
    resources = os.environ.get("GRPOLAB_RAY_RESOURCES")  # e.g. '{"NPU": 16}' to simulate an NPU node in tests
    if resources:
        cmd.append(f"--resources={resources}")
    log = head_dir() / "head.log"
    # the head's processes' temp dir, removed with the head (`grpolab head stop`); GRPOLAB_HEAD_DIR pins the head's
    # folder for grpolab code they run, which would otherwise look for it under their new temp dir
    scratch = head_dir() / HEAD_SCRATCH
    owned.remove_tree(scratch)  # a head killed without `head stop` left it
    owned.make_folder(scratch)
    with open(log, "w") as out:
        # --block keeps `ray start` as the parent of the head's daemons; start_new_session puts them all in a
        # session of their own, out of reach of the signals a Jupyter kernel's process group receives.
        proc = subprocess.Popen(
            cmd,
            env=paths.scratch_env(scratch, {**embedded_env(), "GRPOLAB_HEAD_DIR": str(head_dir())}),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=head_dir(),
        )
    record = {
        "pid": proc.pid,
        "sid": proc.pid,
        "gcs": ep.gcs,
        "dashboard": ep.dashboard,
        "temp_dir": str(temp),
        "started": time.time(),
        "token_file": str(token_file()),
    }
    _record_file().write_text(json.dumps(record, indent=2) + "\n")
    deadline = time.time() + START_TIMEOUT_S
    while True:
        text = log.read_text(errors="replace")
        if proc.poll() is not None:
            tail = [line for line in text.strip().splitlines() if line.strip()][-3:]
            return f"`ray start` exited {proc.returncode}: " + " | ".join(tail)
        # `ray start` prints this once its node registered; the dashboard may answer before that
        if "Ray runtime started" in text and _probe(ep.dashboard, auth_headers()) == 200:
            return None
        if time.time() > deadline:
            return f"it did not answer within {START_TIMEOUT_S} s"
        time.sleep(0.5)


def head_processes():
    """Every process of the embedded head: its session (from head.json), anything whose command line names its
    temp dir, and all their children (job drivers run in sessions of their own)."""
    # lazy: psutil (only listing the head's processes needs it; the run views load without it)
    import psutil

    sid = head_record().get("sid")
    mark = str(head_dir() / "ray")  # every Ray process of the head names its temp dir
    me = os.getpid()
    found: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter():
        try:
            if proc.pid == me:
                continue
            if (sid is not None and os.getsid(proc.pid) == sid) or mark in " ".join(proc.cmdline()):
                found.update({p.pid: p for p in [proc, *proc.children(recursive=True)] if p.pid != me})
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ProcessLookupError, OSError):
            continue
    return list(found.values())


def _is_job(proc) -> bool:
    """A run's job (its driver grpolab.heal.supervise, or the wrapper grpolab.jobs.job_entry) or what it started:
    given time to write the run's end record."""
    marks = ("grpolab.heal.supervise", "grpolab.jobs.job_entry")
    try:
        return any(m in " ".join(p.cmdline()) for p in [proc, *proc.parents()] for m in marks)
    except Exception:  # psutil's NoSuchProcess/AccessDenied/ZombieProcess: it is gone or not ours to wait for
        return False


def _terminate(procs, timeout: float = 10.0, grace: float = 2.0) -> int:
    """SIGTERM every process; wait up to `timeout` for runs' jobs (they record their end), then `grace` for the
    rest, then SIGKILL what is left. Ray's GCS and raylet can take 10 s or more to act on SIGTERM, and a stopped
    head keeps nothing we need, so they are not waited for."""
    # lazy: psutil (only stopping the head's processes needs it)
    import psutil

    jobs = [proc for proc in procs if _is_job(proc)]
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            proc.terminate()
    psutil.wait_procs(jobs, timeout=timeout)
    _, alive = psutil.wait_procs(procs, timeout=grace)
    for proc in alive:
        with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
            proc.kill()
    psutil.wait_procs(alive, timeout=5)
    return len(procs)


def stop_local_head(timeout: float = 10.0) -> int:
    """Stop the embedded head only (`ray stop` would stop every Ray cluster of this machine, a user's own
    included): every process of its session and their children. Returns how many processes were stopped."""
    with _head_lock():
        count = _terminate(head_processes(), timeout)
        with contextlib.suppress(FileNotFoundError):
            owned.remove_file(_record_file())
        owned.remove_tree(head_dir() / HEAD_SCRATCH)
    _discard_secrets_of_unstarted_jobs()
    return count


def _discard_secrets_of_unstarted_jobs() -> None:
    """A job the stopped head had accepted but not started never takes its secrets file: remove those of the
    runs on this head, so no secret stays on disk (the runs end FAILED or LOST when next looked at)."""
    # lazy: pydantic (only stopping a head touches the run records and their secret files)
    from grpolab.jobs import runs, secrets

    ours = embedded_endpoint().dashboard
    try:
        candidates = list(runs.runs_root().glob(f"*/{secrets.SECRETS_FILE}"))
    except OSError:
        return
    for path in candidates:
        ep = Endpoint.from_record(runs.Run(path.parent).status())
        if ep is not None and ep.embedded and ep.dashboard == ours:
            secrets.discard(path.parent)


def head_status() -> dict:
    """Whether the embedded head runs, where, since when, and how to stop it (for `grpolab head status`)."""
    ep = embedded_endpoint()
    record = head_record()
    alive = head_alive()
    procs = head_processes() if (alive or record) else []
    return {
        "running": alive,
        "dashboard": ep.dashboard,
        "gcs": ep.gcs,
        "auth": "token",
        "token_file": str(head_dir() / "auth_token"),
        "state_dir": str(head_dir()),
        "started": record.get("started") if alive else None,
        "processes": len(procs),
        "stale": (not alive) and bool(procs),
    }


def describe_head(status: dict | None = None) -> str:
    """One or two lines for people: is the embedded head running, and how to stop it."""
    s = status or head_status()
    if s["running"]:
        since = time.strftime("%Y-%m-%d %H:%M", time.localtime(s["started"])) if s.get("started") else "?"
        return (
            f"embedded Ray head: running since {since} on 127.0.0.1 (dashboard {s['dashboard']}, GCS "
            f"{s['gcs']}, token auth, token in {s['token_file']})\n"
            "stop it with `grpolab head stop` (running jobs on it stop too)"
        )
    if s.get("stale"):
        return (
            f"embedded Ray head: not answering, but {s['processes']} of its processes remain; "
            "`grpolab head stop` clears them"
        )
    return "embedded Ray head: not running (the next launch starts it)"


# ------------------------------------------------------------------------------------------ clients


def endpoint(address: str | None = None, start: bool = True, progress=print) -> Endpoint:
    """The endpoint for jobs: a given/RAY_ADDRESS cluster, or the embedded head (started when needed)."""
    ep = resolve(address)
    if ep is not None:
        return ep
    return ensure_local_head(progress) if start else embedded_endpoint()


def job_client(ep: Endpoint):
    """Ray's JobSubmissionClient for an endpoint; for a GCS address, the dashboard is asked of Ray. Bounded: an
    address where nothing answers is a ClusterError within REACH_TIMEOUT_S (+ DRIVER_TIMEOUT_S for a GCS address),
    naming what was tried."""
    # lazy: ray (only submitting to or asking a cluster needs it; seconds to import)
    from ray.job_submission import JobSubmissionClient

    address = ep.dashboard
    if address is None:
        address = dashboard_of(ep.gcs)
    headers = auth_headers() if ep.embedded else None
    if _probe(address, headers, timeout=REACH_TIMEOUT_S) is None:
        check_reachable(address)  # nothing listens there: says so, naming the TCP error
        raise ClusterError(
            f"cannot reach the Ray Jobs API at {address}: nothing answered GET {address}/api/version within "
            f"{REACH_TIMEOUT_S:.0f} s\nfix: check the address (http://HEAD:8265), that the cluster runs and that this "
            "machine can reach it"
        )
    try:
        return JobSubmissionClient(address, headers=headers)
    except Exception as exc:  # Ray raises ConnectionError/RuntimeError/ValueError variants
        raise ClusterError(
            f"cannot reach the Ray Jobs API at {address}: {exc}\n"
            "fix: check the address (http://HEAD:8265), that the cluster runs, and the auth token "
            "(RAY_AUTH_TOKEN or ~/.ray/auth_token)"
        ) from None


def jobs_api(ep: Endpoint):
    """A client that reads and stops jobs: for the embedded head, its Jobs REST API without importing Ray
    (grpolab.jobs.jobs_api: a status call stays well under a second; each request bounded by its TIMEOUT_S, and
    grpolab.jobs.state asks head_alive() first); for any other cluster, Ray's own client (job_client), which
    resolves that cluster's auth."""
    if not ep.embedded:
        return job_client(ep)
    return JobsApi(ep.dashboard, auth_headers())


def submit_client(ep: Endpoint, runtime_env: dict):
    """A client to submit a job with that runtime_env: for the embedded head, when the runtime_env is one the REST
    API takes as it is (environment variables), grpolab.jobs.jobs_api without importing Ray (about 2 s of CPU less
    per `grpolab run`); else Ray's own client (job_client), which prepares the rest and resolves a remote cluster's
    auth."""
    if ep.embedded and not needs_sdk(runtime_env):
        return jobs_api(ep)
    return job_client(ep)


def connect_driver(ep: Endpoint):
    """ray.init() against the endpoint's cluster (for preflight's per-node tasks); returns the ray module."""
    # lazy: ray (only preflight's per-node tasks need a driver; seconds to import)
    import ray

    if ray.is_initialized():
        return ray
    if ep.gcs is None:
        raise ClusterError(f"{ep.label}: a driver needs the cluster address (HOST:6379), not the dashboard URL")
    check_reachable(ep.gcs)
    if ep.embedded:  # this process becomes a driver of the embedded head: it needs the head's token
        _DRIVER_ENV_SAVED.update({k: os.environ.get(k) for k in _AUTH_VARS})
        os.environ.pop("RAY_AUTH_TOKEN", None)
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN_PATH"] = str(token_file())
        _reload_ray_auth()
    try:
        ray.init(address=ep.gcs, logging_level="ERROR", log_to_driver=False)
    except Exception as exc:
        raise ClusterError(f"cannot connect to the Ray cluster at {ep.gcs}: {exc}") from None
    return ray


_AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")
_DRIVER_ENV_SAVED: dict[str, str | None] = {}


def _reload_ray_auth() -> None:
    """Ray reads its auth settings once, when it is imported: have it read them again, as Ray itself does."""
    try:
        # lazy: ray (only reloading a driver's auth settings needs it)
        from ray._raylet import AuthenticationTokenLoader, Config

        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()
    except (ImportError, AttributeError):  # another Ray version: the environment is all it reads
        pass


def disconnect_driver() -> None:
    """ray.shutdown(), and this process's Ray auth settings back as they were before connect_driver."""
    # lazy: ray (only a connected driver is shut down)
    import ray

    if ray.is_initialized():
        ray.shutdown()
    if _DRIVER_ENV_SAVED:
        for name, value in _DRIVER_ENV_SAVED.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        _DRIVER_ENV_SAVED.clear()
        _reload_ray_auth()
