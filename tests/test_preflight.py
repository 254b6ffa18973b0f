"""Preflight for real on a 3-node Ray cluster simulated on this machine (ray.cluster_utils.Cluster).

Nodes (each num_cpus=1; the cluster is started once for the module and always shut down):
    head   NPU 16, full env, CANN 8.5.0, npu-smi on PATH, vllm-ascend 0.23.0 metadata
    short  NPU 8 (too few devices for an A3 recipe), otherwise like head
    noenv  NPU 16, no GLOO_SOCKET_IFNAME, CANN 8.3.0 (older than the pin), no npu-smi, vllm-ascend 0.22.0
Hardware that cannot exist here is faked only at the outermost boundary: a toolkit install-info file
(ASCEND_TOOLKIT_HOME), an `npu-smi` script on PATH, a package's dist-info on PYTHONPATH, all set in the
node's own environment (`env_vars` of the raylet). No Ray mocks; the check logic is the real one.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fixtures_preflight"))
from preflight_fakes import write_dist, write_model, write_npu_smi, write_parquet, write_toolkit  # noqa: E402

from grpolab.cli import main as cli_main  # noqa: E402
from grpolab.preflight import FAIL, OK, SKIP, run_preflight  # noqa: E402

ray = pytest.importorskip("ray")


def _free_block(n: int, avoid: int | None = None) -> int:
    """A first port p such that p..p+n-1 look free now, above the kernel's range of ephemeral ports: no outgoing
    connection (Ray's, another test's) takes one of them while the preflight runs, as one from that range once did.
    `avoid`: the first port of a block already chosen (n ports), which this one must not overlap."""
    import random

    from grpolab.preflight.node.limits import port_free

    try:
        high = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        high = 60999  # Linux's default
    low = max(high + 1, 1024) if high < 64000 else 20000  # (a kernel lending every port: below Ray's, at least)
    for _ in range(200):
        base = random.randrange(low, 65000 - n)
        if avoid is not None and abs(base - avoid) < n:
            continue
        if all(port_free(p, attempts=1) for p in range(base, base + n)):
            return base
    raise RuntimeError("no free port block")


def _start_cluster(envs: list[dict], npus: list[int]):
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True,
        shutdown_at_exit=True,
        head_node_args={
            "num_cpus": 1,
            "resources": {"NPU": npus[0]},
            "env_vars": envs[0],
            "object_store_memory": 80 * 1024**2,
            # no dashboard, autoscaler monitor or log monitor: a third of the start-up time on a busy 2-core machine
            "include_dashboard": False,
            "no_monitor": True,
            "include_log_monitor": False,
        },
    )
    try:
        nodes = [
            cluster.add_node(num_cpus=1, resources={"NPU": n}, env_vars=e, object_store_memory=80 * 1024**2)
            for e, n in zip(envs[1:], npus[1:])
        ]
        cluster.wait_for_nodes()
    except Exception:
        cluster.shutdown()
        raise
    return cluster, [cluster.head_node, *nodes]


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    root = tmp_path_factory.mktemp("preflight_sim")
    write_npu_smi(root / "bin")
    base_path = os.environ.get("PATH", "/usr/bin:/bin")
    for name, version in (("good", "0.23.0"), ("old", "0.22.0")):
        write_dist(root / f"site-{name}", "vllm-ascend", version)
    full = {
        "HF_TOKEN": "hf_node_value_1234",  # a secret the node holds: its value must never reach a row
        "HCCL_SOCKET_IFNAME": "lo",
        "GLOO_SOCKET_IFNAME": "lo",
        "ASCEND_TOOLKIT_HOME": str(write_toolkit(root / "tk-new", "8.5.0")),
        "PATH": f"{root / 'bin'}{os.pathsep}{base_path}",
        "PYTHONPATH": str(root / "site-good"),
    }
    noenv = {
        "HCCL_SOCKET_IFNAME": "lo",
        "ASCEND_TOOLKIT_HOME": str(write_toolkit(root / "tk-old", "8.3.0")),
        "PATH": base_path,
        "PYTHONPATH": str(root / "site-old"),
    }
    address_file = Path("/tmp/ray/ray_current_cluster")  # cluster_utils overwrites it: put it back afterwards
    saved = address_file.read_text() if address_file.is_file() else None
    try:
        try:
            cluster, nodes = _start_cluster([full, full, noenv], [16, 8, 16])
        except Exception:  # a raylet can miss its 30 s start window on a loaded 2-core machine: once more
            time.sleep(2)
            cluster, nodes = _start_cluster([full, full, noenv], [16, 8, 16])
        if ray.is_initialized():  # a driver left connected elsewhere: preflight's tests look at their own cluster
            ray.shutdown()
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        labels = {}
        for role, node in zip(("head", "short", "noenv"), nodes):
            labels[role] = next(n for n in ray.nodes() if n["NodeID"] == node.node_id)
        from grpolab.preflight.remote import node_label

        yield {"cluster": cluster, "root": root, "labels": {k: node_label(v) for k, v in labels.items()}}
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if "cluster" in locals():
            cluster.shutdown()
        if saved is not None:
            address_file.write_text(saved)


@pytest.fixture(scope="module")
def npu(sim):
    """qwen3_30b_a3b on 3 nodes, with real model/data/checkpoint paths and one HCCL port held."""
    root = sim["root"]
    model = write_model(root / "model", "qwen3_30b_a3b")
    train = write_parquet(root / "train.parquet")
    val = write_parquet(root / "val.parquet", reward=False)
    host = _free_block(4)
    npu_ports = _free_block(4, avoid=host)
    held = socket.socket()
    held.bind(("0.0.0.0", host + 2))
    held.listen()
    try:
        overrides = [
            "cluster.nnodes=3",
            f"model.path={model}",
            f"data.train_files={train}",
            f"data.val_files={val}",
            f"trainer.ckpt_dir={root / 'ckpt'}",
            "stack.vllm-ascend=0.23.0",
            f"env.HCCL_HOST_SOCKET_PORT_RANGE={host}-{host + 3}",
            f"env.HCCL_NPU_SOCKET_PORT_RANGE={npu_ports}-{npu_ports + 3}",
        ]
        t0 = time.perf_counter()
        report = run_preflight("qwen3_30b_a3b", address=sim["cluster"].address, progress=None, overrides=overrides)
        report.wall_s = time.perf_counter() - t0
        report.held_port = host + 2
    finally:
        held.close()
    return report


def rows(report, check, node=None):
    return {r.node: r for r in report.rows if r.check == check and (node is None or r.node == node)}


def test_rows_for_every_node(sim, npu):
    labels = sim["labels"]
    assert sorted(npu.nodes) == sorted(labels.values())
    assert npu.nodes[0] == labels["head"] and labels["head"].endswith("(head)")
    for check in (
        "devices",
        "torch_npu",
        "cann",
        "npu-smi",
        "cuda",
        "stack.verl",
        "stack.vllm-ascend",
        "model.config",
        "model.weights",
        "data.train_files",
        "data.val_files",
        "checkpoint",
        "ports.HCCL_HOST_SOCKET_PORT_RANGE",
        "ports.HCCL_NPU_SOCKET_PORT_RANGE",
        "open-files",
    ):
        assert set(rows(npu, check)) == set(labels.values()), check
    assert npu.failed and npu.wall_s < 60


def test_node_with_too_few_devices_is_named(sim, npu):
    short = sim["labels"]["short"]
    devices = rows(npu, "devices")
    assert devices[short].status == FAIL and "8 NPU" in devices[short].detail and devices[short].fix
    assert devices[sim["labels"]["head"]].status == OK
    (nodes,) = rows(npu, "nodes").values()
    assert nodes.status == FAIL and "2 with >= 16 NPU" in nodes.detail and "--resources" in nodes.fix


def test_node_missing_env_var_is_named(sim, npu):
    missing = rows(npu, "env.GLOO_SOCKET_IFNAME")
    assert list(missing) == [sim["labels"]["noenv"]]
    row = missing[sim["labels"]["noenv"]]
    assert row.status == FAIL and "ray start" in row.fix
    head_env = [r for r in npu.rows if r.node == sim["labels"]["head"] and r.check.startswith("env")]
    assert head_env and all(r.status != FAIL for r in head_env)
    # qwen3_30b_a3b sets no HCCL_EXEC_TIMEOUT: a warning on every node, not a failure
    assert {r.status for r in rows(npu, "env.HCCL_EXEC_TIMEOUT").values()} == {"warn"}


def test_toolkit_chip_and_metadata_per_node(sim, npu):
    head, noenv = sim["labels"]["head"], sim["labels"]["noenv"]
    cann = rows(npu, "cann")
    assert cann[head].status == OK and "8.5.0" in cann[head].detail
    assert cann[noenv].status == FAIL and "8.3.0 is older" in cann[noenv].detail
    smi = rows(npu, "npu-smi")
    assert smi[head].status == OK and "910B3" in smi[head].detail
    assert smi[noenv].status == SKIP and "not on PATH" in smi[noenv].detail
    pins = rows(npu, "stack.vllm-ascend")
    assert pins[head].status == OK and pins[noenv].status == FAIL and "0.22.0" in pins[noenv].detail
    torch_npu = rows(npu, "torch_npu")
    assert all(r.status == FAIL and r.fix for r in torch_npu.values())  # no torch_npu can exist here
    assert all(r.status == SKIP for r in rows(npu, "cuda").values())


def test_model_data_ports(sim, npu):
    head = sim["labels"]["head"]
    assert rows(npu, "model.config")[head].status == OK
    assert rows(npu, "model.weights")[head].status == OK
    assert rows(npu, "data.train_files")[head].status == OK
    val = rows(npu, "data.val_files")[head]
    assert val.status == FAIL and "'reward_model'" in val.detail
    taken = rows(npu, "ports.HCCL_HOST_SOCKET_PORT_RANGE")
    assert all(r.status == FAIL and str(npu.held_port) in r.detail for r in taken.values())
    assert all(r.status == OK for r in rows(npu, "ports.HCCL_NPU_SOCKET_PORT_RANGE").values())


def test_cpu_recipe_passes_and_skips_device_checks(sim):
    report = run_preflight("tiny", address=sim["cluster"].address, progress=None)
    assert not report.failed, report.table()
    assert len(report.nodes) == 3
    skipped = report.select(check="device", status=SKIP)
    assert len(skipped) == 3 and all("cpu" in r.detail for r in skipped)
    assert all(r.status == SKIP for r in report.select(check="devices"))


def test_no_secret_value_in_any_row_table_or_json(sim):
    """The recipe sets HF_TOKEN, two nodes hold another value: the rows say they differ, never what either is."""
    secret = "hf_recipe_value_5678"
    report = run_preflight("tiny", address=sim["cluster"].address, progress=None, overrides=[f"env.HF_TOKEN={secret}"])
    differ = rows(report, "env.HF_TOKEN")
    assert set(differ) == {sim["labels"]["head"], sim["labels"]["short"]}  # the third node has no HF_TOKEN
    assert all(r.status == "warn" and "HF_TOKEN=***redacted***" in r.detail for r in differ.values())
    for text in (report.table(), report.table(fold=False), report.to_json()):
        assert secret not in text and "hf_node_value_1234" not in text


def test_cli_glm5_2_one_row_per_missing_thing(sim, capsys):
    rc = cli_main(["preflight", "glm5_2", "--ray-address", sim["cluster"].address, "--json"])
    out, err = capsys.readouterr()
    assert rc == 1 and "Traceback" not in out + err
    data = json.loads(out)
    failed = {(r["check"], r["node"]) for r in data["rows"] if r["status"] == FAIL}
    head = sim["labels"]["head"]
    for check in (
        "torch_npu",
        "stack.vllm",
        "stack.megatron-core",
        "stack.mindspeed",
        "model",
        "data.train_files",
        "data.val_files",
    ):
        assert (check, head) in failed, check
    assert ("stack.vllm-ascend", sim["labels"]["noenv"]) in failed  # 0.22.0 there; head's 0.23.0 matches
    cann = [r for r in data["rows"] if r["check"] == "cann" and r["node"] == head]
    assert cann[0]["status"] == FAIL and "8.5.0" in cann[0]["detail"]  # the fake toolkit; glm5_2 pins CANN 9.1.0
    assert ("nodes", "cluster") in failed and ("devices", sim["labels"]["short"]) in failed
    assert all(r["fix"] for r in data["rows"] if r["status"] == FAIL)
    assert "preflight glm5_2" in err  # progress goes to stderr, stdout is one JSON document


def test_cli_table_and_exit_codes(sim, capsys):
    assert cli_main(["preflight", "tiny", "--ray-address", sim["cluster"].address]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("STATUS") and "passed" in out.splitlines()[-1]
    assert cli_main(["preflight", "no_such_recipe"]) == 2
    assert cli_main(["preflight", "tiny", "--set", "cluster.nnodes=oops"]) == 1  # schema error: a fail row


def test_unreachable_ray_keeps_the_drivers_rows():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    report = run_preflight("tiny", address=f"127.0.0.1:{port}", progress=None)
    (ray_row,) = report.select(check="ray")
    assert ray_row.status == FAIL and "nothing answers" in ray_row.detail and ray_row.fix
    assert report.select(check="recipe", status=OK) and report.select(node="cluster", check="node", status=SKIP)
    assert report.failed and not report.nodes


def test_embedded_head_tiny_passes_and_glm5_2_fails_cleanly(ray_head, cli):
    """The real `grpolab` command against the embedded local Ray head (the session's test head, conftest's ports)."""
    proc = cli("preflight", "tiny", "--json", timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert not report["failed"] and report["nodes"]
    assert {r["check"] for r in report["rows"] if r["status"] == SKIP} >= {"device", "model", "data"}

    proc = cli("preflight", "glm5_2", timeout=180)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    failing = {line.split()[1] for line in proc.stdout.splitlines() if line.startswith("FAIL")}
    assert {
        "nodes",
        "torch_npu",
        "cann",
        "stack.vllm-ascend",
        "stack.megatron-core",
        "model",
        "data.train_files",
        "data.val_files",
    } <= failing, proc.stdout
    assert proc.stdout.count("fix: ") >= len(failing)
