"""Preflight time on 1 and on 4 simulated nodes: the per-node checks run in parallel, one Ray task per node.

What it does: for 1 and then 4 nodes (--nodes N for another count), starts a Ray cluster simulated on this machine (ray.cluster_utils.Cluster,
num_cpus=1 per node), runs `run_preflight` against it, and shuts it down. Default recipe: qwen3_30b_a3b with
`cluster.nnodes` set to the node count; every node advertises `NPU: 16` and carries, in its own environment,
a fake Ascend toolkit (install-info file with version=8.5.0) and a fake `npu-smi` on PATH that answers after
--smi-delay seconds (default 1.0), standing in for a device query on real hardware. Those are the only fakes:
every check runs for real (torch_npu lookup, CANN, npu-smi, stack metadata, env, model, data, checkpoint,
ports, open files); the run fails on this machine, the timing is what is measured.

Printed per cluster size: the first (cold) call, whose per-node phase includes starting one Ray worker per
node, and the median of --warm further calls, split into the driver, cluster and per-node phases; then the
4-node / 1-node ratio of the per-node phase (a serial loop over nodes would be about 4x).

`--recipe qwen3_8b` (cuda) instead runs the GPU probe on each node: a child Python that imports torch. That is
CPU-bound, and the simulated nodes share this machine's cores (2 on the project's test machines), so its ratio
measures the machine, not the fan-out; on a real cluster each node has its own CPUs.

Command (from the project root; about 1-2 minutes, most of it starting the simulated clusters):
    .venv/bin/python benchmarks/preflight_speed.py [--smi-delay 1.0] [--warm 3] [--nodes 4] [--recipe qwen3_30b_a3b]
"""

from __future__ import annotations

import argparse
import os
import stat
import statistics
import tempfile
import time
from pathlib import Path

SMI_TABLE = """\
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| 0     910B3               | OK            | 93.6        40                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |"""


def fake_node_env(root: Path, delay: float) -> dict[str, str]:
    """A node environment with a fake toolkit and a slow fake `npu-smi` (the hardware boundary)."""
    info = root / "toolkit" / "latest" / "aarch64-linux" / "ascend_toolkit_install.info"
    info.parent.mkdir(parents=True, exist_ok=True)
    info.write_text("package_name=Ascend-cann-toolkit\nversion=8.5.0\n")
    smi = root / "bin" / "npu-smi"
    smi.parent.mkdir(parents=True, exist_ok=True)
    smi.write_text(f"#!/bin/sh\nsleep {delay}\ncat <<'EOF'\n{SMI_TABLE}\nEOF\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    return {
        "ASCEND_TOOLKIT_HOME": str(root / "toolkit"),
        "PATH": f"{smi.parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
    }


def start(n: int, device: str, per_node: int, env: dict[str, str]):
    from ray.cluster_utils import Cluster

    def args(**extra):
        a = {"num_cpus": 1, "object_store_memory": 80 * 1024**2, "env_vars": env, **extra}
        if device == "cuda":
            a["num_gpus"] = per_node
        elif device == "npu":
            a["resources"] = {"NPU": per_node}
        return a

    cluster = Cluster(
        initialize_head=True, head_node_args=args(include_dashboard=False, no_monitor=True, include_log_monitor=False)
    )
    try:
        for _ in range(n - 1):
            cluster.add_node(**args())
        cluster.wait_for_nodes()
    except Exception:
        cluster.shutdown()
        raise
    return cluster


def measure(n: int, recipe_name: str, warm: int, env: dict[str, str]) -> dict:
    import ray

    from grpolab.preflight import run_preflight
    from grpolab.recipe.loader import load_recipe

    recipe = load_recipe(recipe_name, [f"cluster.nnodes={n}"])
    t0 = time.perf_counter()
    cluster = start(n, recipe.cluster.device, recipe.cluster.devices_per_node, env)
    started = time.perf_counter() - t0
    try:
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
        cold = run_preflight(recipe, address=cluster.address, progress=None)
        assert len(cold.nodes) == n, cold.nodes
        warms = [run_preflight(recipe, address=cluster.address, progress=None) for _ in range(warm)]
    finally:
        ray.shutdown()
        cluster.shutdown()

    def med(key: str) -> float:
        return statistics.median(r.timings.get(key, 0.0) for r in warms) if warms else float("nan")

    return {
        "n": n,
        "start_s": started,
        "cold_total": cold.elapsed_s,
        "cold_nodes": cold.timings.get("nodes", 0.0),
        "warm_total": statistics.median(r.elapsed_s for r in warms) if warms else float("nan"),
        "warm_driver": med("driver"),
        "warm_cluster": med("cluster"),
        "warm_nodes": med("nodes"),
        "rows": len(cold.rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="qwen3_30b_a3b", help="recipe name or path (default qwen3_30b_a3b)")
    parser.add_argument("--smi-delay", type=float, default=1.0, help="seconds the fake npu-smi takes to answer")
    parser.add_argument("--warm", type=int, default=3, help="warm calls per cluster size (median reported)")
    parser.add_argument("--nodes", type=int, default=4, help="the larger cluster's node count, held against 1 node")
    args = parser.parse_args()
    if args.nodes < 2:
        parser.error(f"--nodes {args.nodes}: the larger cluster needs 2 nodes or more")
    with tempfile.TemporaryDirectory(prefix="grpolab-preflight-bench-") as tmp:
        env = fake_node_env(Path(tmp), args.smi_delay)
        results = [measure(n, args.recipe, args.warm, env) for n in (1, args.nodes)]
    print(
        f"preflight {args.recipe} (fake npu-smi answers in {args.smi_delay:g} s): seconds, cluster start-up "
        "not included"
    )
    print(
        f"{'nodes':>5} {'rows':>5} {'cold total':>11} {'cold nodes':>11} {'warm total':>11} "
        f"{'warm driver':>11} {'warm cluster':>13} {'warm nodes':>11}   cluster start"
    )
    for r in results:
        print(
            f"{r['n']:>5} {r['rows']:>5} {r['cold_total']:>11.2f} {r['cold_nodes']:>11.2f} {r['warm_total']:>11.2f} "
            f"{r['warm_driver']:>11.2f} {r['warm_cluster']:>13.2f} {r['warm_nodes']:>11.2f}   {r['start_s']:.0f} s"
        )
    one, many = results
    n = args.nodes
    print(
        f"per-node phase, {n} nodes / 1 node: cold {many['cold_nodes'] / one['cold_nodes']:.2f}x, "
        f"warm {many['warm_nodes'] / one['warm_nodes']:.2f}x (a serial loop would be about {n}x); whole "
        f"preflight: cold {many['cold_total'] / one['cold_total']:.2f}x, warm {many['warm_total'] / one['warm_total']:.2f}x"
    )


if __name__ == "__main__":
    main()
