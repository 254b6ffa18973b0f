"""The Ray connection: an explicit address, RAY_ADDRESS, or the embedded local head (the default).

The embedded head is a real `ray start --head` daemon bound to 127.0.0.1 with a capped object store, so it
outlives the notebook or CLI that started it (a killed launcher loses no job) and is reused by the next
call. It runs with token auth explicitly disabled, since only this machine's loopback can reach its Jobs API;
for a remote cluster, Ray's own token handling applies (RAY_AUTH_MODE / RAY_AUTH_TOKEN / ~/.ray/auth_token),
and the token is never written into a run record.

Addresses: `http(s)://host:8265` is a dashboard (the Jobs API); `host:6379` or `ray://host:10001` is a
cluster address for a driver. The Jobs API needs a dashboard address; preflight needs a driver connection.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

EMBEDDED_GCS_PORT = int(os.environ.get("GRPOLAB_RAY_PORT", "6479"))
EMBEDDED_DASHBOARD_PORT = int(os.environ.get("GRPOLAB_DASHBOARD_PORT", "8365"))
OBJECT_STORE_BYTES = 512 * 1024**2  # an idle head needs ~0.75 GB; 512 MiB of object store is plenty here
START_TIMEOUT_S = 90


class ClusterError(RuntimeError):
    """Ray cannot be reached or started; the message says what to do."""


@dataclass(frozen=True)
class Endpoint:
    dashboard: str | None  # http://host:port for the Jobs API
    gcs: str | None  # host:port or ray://... for a driver
    embedded: bool

    @property
    def label(self) -> str:
        return "embedded local Ray head" if self.embedded else f"Ray cluster at {self.dashboard or self.gcs}"


def _ray_bin() -> str:
    candidate = Path(sys.executable).with_name("ray")
    return str(candidate) if candidate.exists() else (shutil.which("ray") or "ray")


def _embedded() -> Endpoint:
    return Endpoint(f"http://127.0.0.1:{EMBEDDED_DASHBOARD_PORT}", f"127.0.0.1:{EMBEDDED_GCS_PORT}", True)


def dashboard_alive(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/version", timeout=timeout) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


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
    """Environment for talking to (or starting) the embedded head."""
    env = dict(os.environ)
    env["RAY_AUTH_MODE"] = "disabled"
    env.pop("RAY_ADDRESS", None)
    env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    return env


def ensure_local_head(progress=print) -> Endpoint:
    """Start the embedded head unless it already runs; return its endpoint."""
    ep = _embedded()
    os.environ["RAY_AUTH_MODE"] = "disabled"  # this process is a client of a head started without auth
    if dashboard_alive(ep.dashboard):
        return ep
    progress(f"starting the embedded Ray head on 127.0.0.1 (dashboard {ep.dashboard}); takes 10-20 s ...")
    cmd = [
        _ray_bin(), "start", "--head",
        "--node-ip-address=127.0.0.1", f"--port={EMBEDDED_GCS_PORT}",
        "--dashboard-host=127.0.0.1", f"--dashboard-port={EMBEDDED_DASHBOARD_PORT}", "--include-dashboard=true",
        f"--object-store-memory={OBJECT_STORE_BYTES}", "--disable-usage-stats",
        f"--num-cpus={os.cpu_count() or 2}",
        # the agents' ports follow the dashboard's, so that two heads on one machine (a user's and the tests')
        # do not collide on Ray's fixed defaults
        f"--dashboard-agent-listen-port={EMBEDDED_DASHBOARD_PORT + 1}",
        f"--dashboard-agent-grpc-port={EMBEDDED_DASHBOARD_PORT + 2}",
        f"--metrics-export-port={EMBEDDED_DASHBOARD_PORT + 3}",
        f"--runtime-env-agent-port={EMBEDDED_DASHBOARD_PORT + 4}",
        f"--ray-client-server-port={EMBEDDED_DASHBOARD_PORT + 5}",
    ]
    resources = os.environ.get("GRPOLAB_RAY_RESOURCES")  # e.g. '{"NPU": 16}' to simulate an NPU node in tests
    if resources:
        cmd.append(f"--resources={resources}")
    result = subprocess.run(cmd, env=embedded_env(), capture_output=True, text=True, timeout=START_TIMEOUT_S)
    if result.returncode != 0 and "already" not in (result.stderr + result.stdout).lower():
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-8:])
        raise ClusterError(f"`ray start --head` failed (exit {result.returncode}):\n{tail}\n"
                           "fix: run `ray stop --force` and try again, or pass --ray-address of a running cluster")
    deadline = time.time() + START_TIMEOUT_S
    while not dashboard_alive(ep.dashboard):
        if time.time() > deadline:
            raise ClusterError(f"the embedded Ray head started but its dashboard {ep.dashboard} does not answer")
        time.sleep(0.5)
    return ep


def stop_local_head(timeout: float = 10.0) -> int:
    """Stop the embedded head only (`ray stop` would stop every Ray cluster of this machine, a user's own
    included): every process of its Ray session, found through the GCS and dashboard ports, and their
    children. Returns how many processes were stopped."""
    import re

    import psutil

    def cmdline(proc) -> str:
        try:
            return " ".join(proc.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return ""

    ours = (f"--gcs_server_port={EMBEDDED_GCS_PORT}", f":{EMBEDDED_GCS_PORT} ", f":{EMBEDDED_GCS_PORT}\n",
            f"--port={EMBEDDED_DASHBOARD_PORT} ")
    lines = {proc.pid: cmdline(proc) + "\n" for proc in psutil.process_iter()}
    sessions = {m.group(0) for text in lines.values() if any(mark in text for mark in ours)
                for m in re.finditer(r"session_\d{4}-\d\d-\d\d_[\d_-]+\d", text)}
    targets: dict[int, psutil.Process] = {}
    for pid, text in lines.items():
        if pid != os.getpid() and (any(mark in text for mark in ours) or any(s in text for s in sessions)):
            try:
                proc = psutil.Process(pid)
                for child in [proc, *proc.children(recursive=True)]:
                    targets[child.pid] = child
            except psutil.NoSuchProcess:
                continue
    procs = [p for pid, p in targets.items() if pid != os.getpid()]
    for proc in procs:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    for proc in alive:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    return len(procs)


def endpoint(address: str | None = None, start: bool = True, progress=print) -> Endpoint:
    """The endpoint for jobs: a given/RAY_ADDRESS cluster, or the embedded head (started when needed)."""
    ep = resolve(address)
    if ep is not None:
        return ep
    return ensure_local_head(progress) if start else _embedded()


def job_client(ep: Endpoint):
    """Ray's JobSubmissionClient for an endpoint; for a GCS address, the dashboard is asked of Ray."""
    from ray.job_submission import JobSubmissionClient

    address = ep.dashboard
    if address is None:
        address = dashboard_of(ep.gcs)
    try:
        return JobSubmissionClient(address)
    except Exception as exc:  # Ray raises ConnectionError/RuntimeError/ValueError variants
        raise ClusterError(f"cannot reach the Ray Jobs API at {address}: {exc}\n"
                           "fix: check the address (http://HEAD:8265), that the cluster runs, and the auth token "
                           "(RAY_AUTH_TOKEN or ~/.ray/auth_token)") from None


def dashboard_of(gcs: str) -> str:
    """The dashboard URL of a cluster known by its GCS address (connects a short-lived driver)."""
    import ray

    ctx = ray.init(address=gcs, ignore_reinit_error=True, logging_level="ERROR", log_to_driver=False)
    url = ctx.dashboard_url
    if not url:
        raise ClusterError(f"the Ray cluster at {gcs} runs no dashboard: start it with --include-dashboard=true")
    return url if url.startswith("http") else f"http://{url}"


def connect_driver(ep: Endpoint):
    """ray.init() against the endpoint's cluster (for preflight's per-node tasks); returns the ray module."""
    import ray

    if ray.is_initialized():
        return ray
    if ep.gcs is None:
        raise ClusterError(f"{ep.label}: a driver needs the cluster address (HOST:6379), not the dashboard URL")
    try:
        ray.init(address=ep.gcs, logging_level="ERROR", log_to_driver=False)
    except Exception as exc:
        raise ClusterError(f"cannot connect to the Ray cluster at {ep.gcs}: {exc}") from None
    return ray
