"""This node's limits that a run meets at start-up: the HCCL port ranges free to bind, the open-file limit."""

from __future__ import annotations

import random
import resource
import socket
import time

from grpolab.preflight.node.env import listed
from grpolab.preflight.node.rows import FAIL, OK, SKIP, row

MAX_PORTS = 2048  # ports bound per HCCL range (all of them for the usual ranges of 50-200 ports)


def parse_port_ranges(text: str) -> list[int]:
    """ "60000-60050" or "60000-60050,60100" -> ports; "auto"/"" -> []. ValueError for anything else."""
    ports: list[int] = []
    if text.strip().lower() in ("", "auto"):
        return ports
    for part in listed(text):
        lo, sep, hi = part.partition("-")
        a, b = int(lo), int(hi) if sep else int(lo)
        if not (0 < a <= b < 65536):
            raise ValueError(f"{part!r} is not a port range")
        ports.extend(range(a, b + 1))
    return ports


def port_free(port: int, attempts: int = 3) -> bool:
    """Can this node bind TCP `port` on all interfaces? Retried briefly: another preflight may hold it a moment."""
    for attempt in range(attempts):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("0.0.0.0", port))
                return True
            except OSError:
                if attempt + 1 < attempts:
                    time.sleep(0.05 + random.random() * 0.1)
    return False


def check_ports(spec: dict, env: dict[str, str]) -> list[dict]:
    if spec["device"] != "npu":
        return [row("hccl-ports", SKIP, f"HCCL port ranges apply to NPU recipes; cluster.device is {spec['device']}")]
    rows = []
    for var in ("HCCL_HOST_SOCKET_PORT_RANGE", "HCCL_NPU_SOCKET_PORT_RANGE"):
        check = f"ports.{var}"
        value = env.get(var)
        if not value:
            rows.append(row(check, SKIP, f"{var} is not set: HCCL chooses its own ports"))
            continue
        try:
            ports = parse_port_ranges(value)
        except ValueError as exc:
            fix = f"write it as FIRST-LAST, e.g. {var}=60000-60050"
            rows.append(row(check, FAIL, f"{var}={value!r} is not a port range: {exc}", fix))
            continue
        if not ports:
            rows.append(row(check, SKIP, f"{var}={value}: HCCL chooses its own ports"))
            continue
        tried = ports[:MAX_PORTS]
        taken = [p for p in tried if not port_free(p)]
        note = (
            ""
            if var.startswith("HCCL_HOST")
            else "; bound on the host's interfaces (the NPU NICs' own ports are not visible from here)"
        )
        partial = f" (first {MAX_PORTS} of {len(ports)})" if len(ports) > len(tried) else ""
        if taken:
            shown = ", ".join(str(p) for p in taken[:10]) + (" ..." if len(taken) > 10 else "")
            fix = f"stop what holds them (`ss -ltnp | grep <port>`), or move {var} to a free range"
            rows.append(
                row(
                    check, FAIL, f"{len(taken)} of {len(tried)} port(s) in {var}={value} are in use: {shown}{note}", fix
                )
            )
        else:
            rows.append(row(check, OK, f"all {len(tried)} port(s){partial} in {value} are free{note}"))
    return rows


def check_nofile(spec: dict) -> dict:
    if spec["device"] != "npu":
        return row(
            "open-files", SKIP, f"the open-file limit matters on NPU (HCCL) nodes; cluster.device is {spec['device']}"
        )
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = spec["nofile_min"]
    shown = "unlimited" if soft == resource.RLIM_INFINITY else str(soft)
    if soft != resource.RLIM_INFINITY and soft < need:
        fix = (
            f"run `ulimit -n {need}` in the shell that starts Ray on this node, then restart Ray there (raise the "
            "hard limit in /etc/security/limits.conf if needed)"
        )
        return row("open-files", FAIL, f"open-file limit {shown} (hard {hard}) is below {need}", fix)
    return row("open-files", OK, f"open-file limit {shown} (>= {need})")
