"""Reaching a Ray cluster, bounded: whether an address answers, and a GCS address's dashboard, in seconds.

Ray's own clients retry an unreachable address for minutes while printing its GCS retries; here every check has a
timeout and an unreachable address is a ClusterError that names what was tried (grpolab.jobs.cluster uses these).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import urllib.error
import urllib.request
from urllib.parse import urlsplit

REACH_TIMEOUT_S = 5.0  # a cluster address that does not answer within this is reported, not waited on
DRIVER_TIMEOUT_S = 15.0  # asking a cluster known by its GCS address for its dashboard (a short-lived driver)


class ClusterError(RuntimeError):
    """Ray cannot be reached or started; the message says what to do."""


def probe(url: str, headers: dict[str, str] | None = None, timeout: float = 2.0) -> int | None:
    """HTTP status of the dashboard's /api/version, or None when nothing answers."""
    try:
        req = urllib.request.Request(f"{url}/api/version", headers=headers or {})
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (urllib.error.URLError, OSError, ValueError):
        return None


def host_port(address: str) -> tuple[str, int] | None:
    """(host, port) of HOST:PORT, ray://HOST:PORT or http(s)://HOST[:PORT]/..."""
    if address.startswith(("http://", "https://")):
        try:
            parts = urlsplit(address)
            return parts.hostname or "127.0.0.1", parts.port or (443 if address.startswith("https") else 80)
        except ValueError:
            return None
    text = address.removeprefix("ray://").rstrip("/")
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def check_reachable(address: str, timeout: float = REACH_TIMEOUT_S) -> None:
    """ClusterError unless something accepts a TCP connection at a HOST:PORT (or ray://HOST:PORT) address: an
    unreachable cluster is reported in seconds instead of Ray's minutes of retries."""
    target = host_port(address)
    if target is None:
        raise ClusterError(f"cannot read Ray address {address!r}: use http://HOST:8265 (dashboard) or HOST:6379")
    try:
        with socket.create_connection(target, timeout=timeout):
            return
    except OSError as exc:
        raise ClusterError(
            f"cannot reach the Ray cluster at {address}: a TCP connection to {target[0]}:{target[1]} failed "
            f"({exc.strerror or exc or 'timed out'}) within {timeout:.0f} s\nfix: check the address (HOST:6379 or "
            "http://HOST:8265) and that the cluster runs"
        ) from None


_DASHBOARD_OF = """
import sys, ray
ctx = ray.init(address=sys.argv[1], logging_level="ERROR", log_to_driver=False)
print("DASHBOARD=" + (ctx.dashboard_url or ""), flush=True)
"""


def dashboard_of(gcs: str) -> str:
    """The dashboard URL of a cluster known by its GCS address: asked by a short-lived driver in a process of its
    own, so Ray's retries neither print here nor outlast DRIVER_TIMEOUT_S."""
    check_reachable(gcs)
    try:
        out = subprocess.run(
            [sys.executable, "-c", _DASHBOARD_OF, gcs],
            capture_output=True,
            text=True,
            timeout=DRIVER_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise ClusterError(
            f"the Ray cluster at {gcs} did not answer a driver within {DRIVER_TIMEOUT_S:.0f} s (something listens "
            "there, but not a Ray GCS that accepts us)\nfix: check the address, or pass the dashboard as "
            "--ray-address http://HOST:8265"
        ) from None
    url = next((line[10:] for line in out.stdout.splitlines() if line.startswith("DASHBOARD=")), None)
    if url is None:
        last = [line for line in out.stderr.strip().splitlines() if line.strip()][-1:] or ["no output"]
        raise ClusterError(f"cannot connect to the Ray cluster at {gcs}: {last[0][:300]}")
    if not url:
        raise ClusterError(f"the Ray cluster at {gcs} runs no dashboard: start it with --include-dashboard=true")
    return url if url.startswith("http") else f"http://{url}"
