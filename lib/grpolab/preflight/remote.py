"""Cluster checks and the per-node fan-out.

Cluster level: Ray reachable at the given address (else RAY_ADDRESS, else the embedded head, started when
needed), a driver connects (auth works), enough alive nodes, and each node's device resources (`NPU` custom
resource or `GPU`) cover `cluster.devices_per_node`. Then one Ray task per alive node, pinned with
NodeAffinitySchedulingStrategy(node_id, soft=False), all launched at once and gathered with one wait, so the
per-node checks run in parallel and take about as long on 32 nodes as on one.

Addresses: preflight takes what `grpolab run` takes. A driver needs the cluster's own (GCS) address; given the
dashboard (http://HEAD:8265), preflight asks the cluster for it through the Jobs API: a one-line job prints the
RAY_ADDRESS that Ray gives every job's entrypoint (the GCS address), and is deleted once read. The dashboard
itself is asked first (a few seconds at most), so an unreachable address fails fast.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import time
from collections.abc import Callable

from grpolab.jobs import cluster as raycluster
from grpolab.jobs.reach import host_port
from grpolab.preflight.node import node_checks
from grpolab.preflight.report import CLUSTER, FAIL, OK, SKIP, WARN, Row

HEAD_RESOURCE = "node:__internal_head__"
NODE_TIMEOUT_S = 180.0  # per-node checks normally take 1-5 s; importing torch_npu on a cold node can take a minute
RESOURCE = {"npu": "NPU", "cuda": "GPU"}
ADDRESS_JOB_TIMEOUT_S = 60.0  # a one-line job: seconds on an idle head, its runtime env set up included
_GCS_LINE = re.compile(r"grpolab-gcs=([A-Za-z0-9_.\-\[\]:]+:\d+)\s*$", re.MULTILINE)  # host:port, a line of its own


def node_label(node: dict) -> str:
    """`IP/NODEID8`, `(head)` appended for the head node: what rows name a node by."""
    label = f"{node.get('NodeManagerAddress', '?')}/{str(node.get('NodeID', ''))[:8]}"
    return label + " (head)" if HEAD_RESOURCE in (node.get("Resources") or {}) else label


def _tcp_open(host: str, port: int, timeout: float = 3.0) -> str | None:
    """None when something listens at host:port, else why not."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return exc.strerror or str(exc)


def _same_cluster(current: str | None, wanted: str) -> bool:
    a, b = host_port(current or ""), host_port(wanted)
    if not a or not b or a[1] != b[1]:
        return False
    loop = {"127.0.0.1", "localhost", "0.0.0.0"}
    return a[0] == b[0] or a[0] in loop or b[0] in loop


class Connection:
    """A driver connection made for preflight; closed afterwards unless it was already open."""

    def __init__(self) -> None:
        self.ray = None
        self.owned = False
        self.address: str | None = None

    def close(self) -> None:
        if self.ray is not None and self.owned:
            raycluster.disconnect_driver()


def _unreachable(detail: str, fix: str, auth: str = "Ray is not reachable") -> tuple[None, list[Row]]:
    """No connection: row `ray` failed (what and the fix), row `auth` skipped (why)."""
    return None, [Row("ray", CLUSTER, FAIL, detail, fix), Row("auth", CLUSTER, SKIP, auth)]


def connect(address: str | None, progress: Callable[[str], None]) -> tuple[Connection | None, list[Row]]:
    """(connection or None, rows `ray` and `auth`)."""

    conn = Connection()
    try:
        ep = raycluster.endpoint(address, start=True, progress=progress)
    except raycluster.ClusterError as exc:
        given = address or os.environ.get("RAY_ADDRESS")
        what = f"the Ray address {given!r} cannot be used" if given else "the embedded Ray head cannot be used"
        return _unreachable(
            f"{what}: {exc}",
            "pass --ray-address http://HEAD:8265 (the dashboard) or HEAD:6379 of a running cluster (or set "
            "RAY_ADDRESS)" + ("" if given else ", or free the embedded head's ports"),
        )
    if ep.gcs is None:
        gcs, why = gcs_of_dashboard(ep, progress)
        if gcs is None:
            return _unreachable(
                f"{ep.label}: {why}",
                "pass --ray-address http://HEAD:8265 (the dashboard `ray start --head` printed) of a running "
                "cluster, with its token (RAY_AUTH_MODE=token and RAY_AUTH_TOKEN or RAY_AUTH_TOKEN_PATH); or "
                "its cluster address HEAD:6379",
            )
        ep = raycluster.Endpoint(ep.dashboard, gcs, ep.embedded)
    where = host_port(ep.gcs)
    if where is not None:
        why = _tcp_open(*where)
        if why is not None:
            return _unreachable(
                f"nothing answers at {ep.gcs} ({why})",
                "start the cluster (`ray start --head` on the head node, `ray start --address=HEAD:6379` "
                "on the others) or pass the right --ray-address / RAY_ADDRESS",
            )
    # lazy: ray (only the cluster half of preflight talks to Ray; seconds to import)
    import ray

    conn.ray = ray
    if ray.is_initialized():
        current = ray.get_runtime_context().gcs_address
        if _same_cluster(current, ep.gcs):
            conn.address = current
        else:
            ray.shutdown()  # connected elsewhere: preflight must look at the cluster it was asked about
    if not ray.is_initialized():
        progress(f"connecting to the {ep.label} ({ep.gcs}) ...")
        try:
            raycluster.connect_driver(ep)
        except raycluster.ClusterError as exc:
            text = str(exc)
            if any(w in text.lower() for w in ("auth", "token", "unauthenticated", "permission denied")):
                fix = (
                    "give the cluster's token: RAY_AUTH_TOKEN=... or ~/.ray/auth_token (with RAY_AUTH_MODE=token), "
                    "as `ray start --head` printed it"
                )
                refused = Row("auth", CLUSTER, FAIL, f"the cluster refused the driver: {text[:300]}", fix)
                return None, [Row("ray", CLUSTER, OK, f"{ep.label} answers at {ep.gcs}"), refused]
            return _unreachable(
                text[:400],
                "check the address and that the driver's Ray and Python versions match the cluster's",
                "no driver connection",
            )
        conn.owned = True
        conn.address = ray.get_runtime_context().gcs_address
    mode = os.environ.get("RAY_AUTH_MODE", "default")
    return conn, [
        Row("ray", CLUSTER, OK, f"{ep.label} reachable at {ep.gcs} (Ray {ray.__version__})"),
        Row("auth", CLUSTER, OK, f"driver connected (RAY_AUTH_MODE={mode})"),
    ]


def gcs_of_dashboard(ep, progress: Callable[[str], None]) -> tuple[str | None, str]:
    """(the cluster's GCS address, "") from its dashboard, or (None, why not). See the module docstring."""

    if not raycluster.dashboard_alive(ep.dashboard, timeout=5.0):
        return None, f"no Ray dashboard answers at {ep.dashboard}"
    try:
        client = raycluster.job_client(ep)
    except raycluster.ClusterError as exc:
        return None, str(exc).splitlines()[0]
    job = f"grpolab-preflight-address-{secrets.token_hex(4)}"
    progress(f"asking the {ep.label} for its cluster address (a one-line job, {job}) ...")
    try:
        client.submit_job(
            # the quotes split the marker so that Ray's own log line quoting this command never matches it
            entrypoint='echo "grpolab-gcs""=$RAY_ADDRESS"',
            submission_id=job,
            metadata={"grpolab": "preflight: the cluster address of this dashboard"},
        )
        deadline = time.monotonic() + ADDRESS_JOB_TIMEOUT_S
        while str(getattr(client.get_job_status(job), "value", "")) not in ("SUCCEEDED", "FAILED", "STOPPED"):
            if time.monotonic() > deadline:
                client.stop_job(job)
                return None, f"the job that reads the cluster address did not finish in {ADDRESS_JOB_TIMEOUT_S:.0f} s"
            time.sleep(0.5)
        found = _GCS_LINE.findall(client.get_job_logs(job) or "")
    except Exception as exc:  # the Jobs API raises RuntimeError/ConnectionError variants (401 without a token)
        return None, f"the Jobs API at {ep.dashboard} refused the job that reads the cluster address: {exc}"[:400]
    finally:
        with contextlib.suppress(Exception):  # already gone, or never submitted: nothing is left behind either way
            client.delete_job(job)
    if not found:
        return None, "the cluster did not say its address (the job printed no RAY_ADDRESS)"
    return found[-1], ""


def device_rows(recipe, nodes: list[dict]) -> list[Row]:
    """Alive nodes vs cluster.nnodes, and each node's device resource vs cluster.devices_per_node."""
    c = recipe.cluster
    res = RESOURCE.get(c.device)
    need = f"cluster.nnodes={c.nnodes} x devices_per_node={c.devices_per_node} {c.device}"
    if res is None:
        enough = len(nodes) >= c.nnodes
        said = f"{len(nodes)} alive node(s); the recipe needs {c.nnodes} (cluster.device cpu)"
        fix = "" if enough else "add nodes to the Ray cluster, or lower cluster.nnodes"
        skip = "cluster.device is cpu: no accelerator resources to count"
        return [Row("nodes", CLUSTER, OK if enough else FAIL, said, fix)] + [
            Row("devices", node_label(n), SKIP, skip) for n in nodes
        ]
    have = {node_label(n): int((n.get("Resources") or {}).get(res, 0)) for n in nodes}
    full = [label for label, count in have.items() if count >= c.devices_per_node]
    total = sum(have.values())
    detail = (
        f"{len(nodes)} alive node(s), {len(full)} with >= {c.devices_per_node} {res}; {total} {res} in all; "
        f"the recipe needs {need} = {c.nnodes * c.devices_per_node} {res}"
    )
    flag = f"--resources='{{\"NPU\": {c.devices_per_node}}}'" if res == "NPU" else f"--num-gpus={c.devices_per_node}"
    spare = len(full) >= c.nnodes  # enough full nodes: one without devices (a CPU head) is merely unused
    if spare:
        rows = [Row("nodes", CLUSTER, OK, detail)]
    else:
        fix = f"start Ray on {c.nnodes - len(full)} more node(s) with `ray start --address=HEAD:6379 {flag}`" + (
            " (Ray schedules NPUs as the custom resource NPU)" if res == "NPU" else ""
        )
        if full:
            fix += f", or lower cluster.nnodes to {len(full)}"
        rows = [Row("nodes", CLUSTER, FAIL, detail, fix)]
    for label, count in have.items():
        if count >= c.devices_per_node:
            extra = f" (uses {c.devices_per_node})" if count > c.devices_per_node else ""
            rows.append(Row("devices", label, OK, f"{count} {res}{extra}"))
        elif count == 0 and spare:
            fix = f"fine for a CPU-only head; otherwise restart Ray here with {flag}"
            rows.append(Row("devices", label, WARN, f"0 {res}: the run will not place workers here", fix))
        else:
            fix = f"restart Ray on this node with {flag} (check `{'npu-smi info' if res == 'NPU' else 'nvidia-smi'}`)"
            if count:
                fix += (
                    f" if it has them (A3: 16 dies, A2: 8); else use other nodes or set "
                    f"cluster.devices_per_node={count}"
                )
            said = f"{count} {res} on this node; the recipe uses {c.devices_per_node} per node"
            rows.append(Row("devices", label, FAIL, said, fix))
    return rows


def run_node_checks(spec: dict, nodes: list[dict], timeout_s: float, progress: Callable[[str], None]) -> list[Row]:
    """Launch the per-node task on every node at once, gather with one wait; rows named by node."""
    # lazy: ray (only the cluster half of preflight talks to Ray; seconds to import)
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(node_checks)
    refs = {}
    for n in nodes:
        strategy = NodeAffinitySchedulingStrategy(node_id=n["NodeID"], soft=False)
        name = f"grpolab-preflight-{str(n['NodeID'])[:8]}"
        ref = task.options(num_cpus=0, max_retries=0, scheduling_strategy=strategy, name=name).remote(spec)
        refs[ref] = node_label(n)
    progress(f"running per-node checks on {len(refs)} node(s) in parallel ...")
    ready, pending = ray.wait(list(refs), num_returns=len(refs), timeout=timeout_s)
    rows: list[Row] = []
    for ref, label in refs.items():  # keep the node order
        if ref in pending:
            ray.cancel(ref, force=True)
            fix = (
                "check the node (`ray status`, its raylet log); a hung mount under the model, data or checkpoint "
                "path blocks them"
            )
            rows.append(Row("node", label, FAIL, f"the per-node checks did not answer in {timeout_s:.0f} s", fix))
            continue
        try:
            result = ray.get(ref)
        except Exception as exc:  # RayTaskError, WorkerCrashedError, ...: report, never raise
            text = str(exc).strip().splitlines()
            last = text[-1] if text else type(exc).__name__
            fix = (
                "install grpolab (pip install -e .) in the Python environment Ray runs on every node"
                if "No module named 'grpolab" in str(exc)
                else "see the node's worker log (ray logs) for the traceback"
            )
            rows.append(Row("node", label, FAIL, f"the per-node checks failed: {last[:300]}", fix))
            continue
        rows += [Row(r["check"], label, r["status"], r["detail"], r.get("fix", "")) for r in result["rows"]]
    return rows
