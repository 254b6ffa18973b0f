"""Preflight time on 1 and on 4 simulated nodes: the per-node checks run in parallel, one Ray task per node.

What it does: starts a Ray cluster simulated on this machine (ray.cluster_utils.Cluster, num_cpus=1 per node,
each node advertising `GPU: 8`) with 1 node, runs `run_preflight` on the qwen3_8b recipe (cuda, FSDP: every
node runs the real device probe, a child Python that imports torch and counts CUDA devices, plus the package,
env, model, data, checkpoint checks), shuts it down, then does the same with 4 nodes. For each size it
prints the first (cold) call, whose per-node phase includes starting one Ray worker per node, and the median of
3 warm calls, split into the local, cluster and per-node phases, and the 4-node / 1-node ratio of the per-node
phase. The run fails on this machine (no GPUs); the timing is what is measured.

Note: the 4 simulated nodes share this machine's cores (2 on the project's test machines), so CPU-bound work
on them (each probe imports torch) is serialised by the hardware; on a real cluster each node has its own
CPUs and the per-node phase stays close to the 1-node time. The ratio printed here is an upper bound.

Command (from the project root; takes about 1-2 minutes, most of it starting the simulated clusters):
    .venv/bin/python benchmarks/preflight_speed.py [--recipe qwen3_8b] [--warm 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

RESOURCES = {"cuda": ("GPU", "num_gpus"), "npu": ("NPU", None), "cpu": (None, None)}


def start(n: int, device: str, per_node: int):
    from ray.cluster_utils import Cluster

    resource, kwarg = RESOURCES[device]

    def args(**extra):
        a = {"num_cpus": 1, "object_store_memory": 80 * 1024**2, **extra}
        if kwarg:
            a[kwarg] = per_node
        elif resource:
            a["resources"] = {resource: per_node}
        return a

    cluster = Cluster(initialize_head=True, head_node_args=args(include_dashboard=False, no_monitor=True,
                                                                include_log_monitor=False))
    try:
        for _ in range(n - 1):
            cluster.add_node(**args())
        cluster.wait_for_nodes()
    except Exception:
        cluster.shutdown()
        raise
    return cluster


def measure(n: int, recipe_name: str, warm: int) -> dict:
    import ray

    from grpolab.preflight import run_preflight
    from grpolab.recipe import load_recipe

    recipe = load_recipe(recipe_name)
    t0 = time.perf_counter()
    cluster = start(n, recipe.cluster.device, recipe.cluster.devices_per_node)
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

    return {"n": n, "start_s": started, "cold_total": cold.elapsed_s, "cold_nodes": cold.timings.get("nodes", 0.0),
            "warm_total": statistics.median(r.elapsed_s for r in warms) if warms else float("nan"),
            "warm_local": med("local"), "warm_cluster": med("cluster"), "warm_nodes": med("nodes"),
            "rows": len(cold.rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipe", default="qwen3_8b", help="recipe name or path (default qwen3_8b)")
    parser.add_argument("--warm", type=int, default=3, help="warm calls per cluster size (median reported)")
    args = parser.parse_args()
    results = [measure(n, args.recipe, args.warm) for n in (1, 4)]
    print(f"preflight {args.recipe}: seconds (cluster start-up not included)")
    print(f"{'nodes':>5} {'rows':>5} {'cold total':>11} {'cold nodes':>11} {'warm total':>11} "
          f"{'warm local':>11} {'warm cluster':>13} {'warm nodes':>11}   (cluster start {'':>4})")
    for r in results:
        print(f"{r['n']:>5} {r['rows']:>5} {r['cold_total']:>11.2f} {r['cold_nodes']:>11.2f} {r['warm_total']:>11.2f} "
              f"{r['warm_local']:>11.2f} {r['warm_cluster']:>13.2f} {r['warm_nodes']:>11.2f}   "
              f"({r['start_s']:.0f} s)")
    one, four = results
    print(f"per-node phase, 4 nodes / 1 node: cold {four['cold_nodes'] / one['cold_nodes']:.2f}x, "
          f"warm {four['warm_nodes'] / one['warm_nodes']:.2f}x (serial would be 4x); whole preflight: "
          f"cold {four['cold_total'] / one['cold_total']:.2f}x, warm {four['warm_total'] / one['warm_total']:.2f}x")


if __name__ == "__main__":
    main()
