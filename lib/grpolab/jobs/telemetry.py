"""Per-node telemetry of a run: one light sampler per node of its Ray cluster, every trainer.telemetry_s seconds.

Each sample says what the node's tools say: its devices (`nvidia-smi`, `npu-smi`, where they are: utilisation,
memory used and total), its host memory, CPU and load, and the disk of its temp folder. The job's own driver
(grpolab.heal.supervise) keeps one sampler actor on every live node (a node that joins gets one; a node that goes
stops answering) and appends each node's samples to RUN/telemetry/<node>.jsonl, one JSON object a line. The
monitor (grpolab.monitor.nodes) reads them: small multiples per node and the node alerts (a straggler, device
memory creeping towards its limit, a host near its RAM limit).

    sample_here(disk_path) -> dict         this node, now (what a sampler returns)
    parse_nvidia_smi(text) / parse_npu_smi(text) -> [device]   the tools' output, one dict per device
    Samplers(run_dir, every_s)             the driver's side: start(), stop()
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from grpolab import run_folder
from grpolab.jobs.placement import alive_nodes

TOOL_TIMEOUT_S = 10.0
GIB = 1024**3
NVIDIA_QUERY = ["--query-gpu=index,utilization.gpu,memory.used,memory.total", "--format=csv,noheader,nounits"]


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:  # "[N/A]", "[Not Supported]", "-"
        return None


def parse_nvidia_smi(text: str) -> list[dict]:
    """`nvidia-smi --query-gpu=index,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits`:
    `0, 35, 10240, 81559` a line (MiB; a field a GPU does not report reads `[N/A]`)."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 4 or _number(cells[0]) is None:
            continue
        out.append(
            {
                "device": cells[0],
                "util_pct": _number(cells[1]),
                "mem_used_mb": _number(cells[2]),
                "mem_total_mb": _number(cells[3]),
            }
        )
    return out


# `npu-smi info`: a row per NPU (`| 0     910B3  | OK  | 93.6  40  0 / 0 |`), then a row per chip of it
# (`| 0  [phy-id] | 0000:C1:00.0 | 0  0 / 0  3161 / 65536 |`: AICore %, memory used / total, HBM used / total)
_NPU_ROW = re.compile(r"^\|\s*(\d+)\s+(\S*[A-Za-z]\S*)\s*\|\s*([A-Za-z]+)\s*\|")
_CHIP_ROW = re.compile(r"^\|\s*(\d+)(?:\s+\d+)?\s*\|\s*\S+\s*\|([^|]*)\|\s*$")
_PAIR = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")


def parse_npu_smi(text: str) -> list[dict]:
    """The chips of `npu-smi info`'s table (A2: one chip per NPU; A3: two), each as `NPU.chip`: AICore
    utilisation and the chip's HBM (its Memory-Usage where it has no HBM figure), in MB. The process table that
    follows the device table is not read."""
    out, npu = [], None
    for line in text.splitlines():
        if m := _NPU_ROW.match(line):
            npu = m.group(1)
            continue
        m = _CHIP_ROW.match(line)
        if m is None or npu is None:
            continue
        cell = m.group(2)
        pairs = [(float(a), float(b)) for a, b in _PAIR.findall(cell)]
        core = cell.split()[0] if cell.split() else ""
        used, total = next(((a, b) for a, b in reversed(pairs) if b > 0), pairs[-1] if pairs else (None, None))
        out.append(
            {"device": f"{npu}.{m.group(1)}", "util_pct": _number(core), "mem_used_mb": used, "mem_total_mb": total}
        )
        npu = None  # the next chip row belongs to the next NPU row
    return out


def _run(tool: str, args: list[str]) -> str | None:
    exe = shutil.which(tool)
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=TOOL_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def devices_here() -> tuple[str | None, list[dict]]:
    """(the tool that answered, its devices): nvidia-smi, else npu-smi; (None, []) on a node without either."""
    text = _run("nvidia-smi", NVIDIA_QUERY)
    if text is not None:
        return "nvidia-smi", parse_nvidia_smi(text)
    text = _run("npu-smi", ["info"])
    if text is not None:
        return "npu-smi", parse_npu_smi(text)
    return None, []


def sample_here(disk_path: str | None = None) -> dict:
    """This node now: host memory (used = total - available), CPU % since the last sample, load, the disk of
    `disk_path` (else the temp folder), and the devices."""
    # lazy: psutil (only a sampler reads the host's figures)
    import psutil

    memory = psutil.virtual_memory()
    path = disk_path if disk_path and os.path.isdir(disk_path) else tempfile.gettempdir()
    disk = shutil.disk_usage(path)
    tool, devices = devices_here()
    return {
        "t": time.time(),
        "host": socket.gethostname(),
        "cpu_pct": psutil.cpu_percent(interval=None),
        "load1": os.getloadavg()[0],
        "cpus": psutil.cpu_count() or 0,
        "host_mem_used_gb": (memory.total - memory.available) / GIB,
        "host_mem_total_gb": memory.total / GIB,
        "disk_used_gb": (disk.total - disk.free) / GIB,
        "disk_total_gb": disk.total / GIB,
        "device_tool": tool,
        "devices": devices,
    }


class _Sampler:
    """The Ray actor on one node (no CPU reserved: it samples, it does not compute)."""

    def __init__(self, disk_path: str | None) -> None:
        # lazy: psutil (only a sampler reads the host's figures)
        import psutil

        psutil.cpu_percent(interval=None)  # the first reading of a process is since boot: start the interval here
        self.disk_path = disk_path

    def sample(self) -> dict:
        return sample_here(self.disk_path)


def node_file(run_dir: str | Path, node_id: str) -> Path:
    """RUN/telemetry/<node id, first 12 hex digits>.jsonl"""
    return run_folder.telemetry_dir(run_dir) / f"{node_id[:12]}.jsonl"


class Samplers:
    """The driver's side: a sampler actor per live node, asked every `every_s` seconds; each answer appended to its
    node's file with the node's id and address. A node whose sampler does not answer in time is skipped for that
    round (its line is missing: the plots show the gap)."""

    def __init__(self, run_dir: str | Path, every_s: float) -> None:
        self.run_dir, self.every_s = Path(run_dir), every_s
        self._actors: dict[str, object] = {}
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self.errors: list[str] = []

    def start(self) -> Samplers:
        if self.every_s > 0:
            self._thread = threading.Thread(target=self._loop, daemon=True, name="grpolab-telemetry")
            self._thread.start()
        return self

    def stop(self) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=self.every_s + TOOL_TIMEOUT_S + 5)
        # lazy: ray (the samplers are Ray actors)
        import ray

        for actor in self._actors.values():
            with contextlib.suppress(Exception):
                ray.kill(actor)
        self._actors.clear()

    def _loop(self) -> None:
        while not self._halt.is_set():
            try:
                self.round()
            except Exception as exc:  # a Ray hiccup: try again next round, say it once in the job's log
                if len(self.errors) < 3:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
            self._halt.wait(self.every_s)

    def round(self) -> int:
        """One sample of every live node; the number of nodes that answered."""
        # lazy: ray (the samplers are Ray actors: only the job's driver asks them)
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = {n.node_id: n for n in alive_nodes()}
        for node_id in set(self._actors) - set(nodes):
            self._actors.pop(node_id)  # its node is gone, and the actor with it
        for node_id in set(nodes) - set(self._actors):
            self._actors[node_id] = (
                ray.remote(_Sampler)
                .options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False))
                .remote(str(self.run_dir))
            )
        refs = {node_id: actor.sample.remote() for node_id, actor in self._actors.items()}
        ready, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=max(self.every_s, TOOL_TIMEOUT_S))
        answered = 0
        folder = run_folder.telemetry_dir(self.run_dir)
        folder.mkdir(exist_ok=True)
        for node_id, ref in refs.items():
            if ref not in ready:
                continue
            try:
                sample = ray.get(ref)
            except Exception:  # the node went away between the ask and the answer
                continue
            sample.update(node_id=node_id, address=nodes[node_id].address)
            with open(node_file(self.run_dir, node_id), "a", encoding="utf-8") as fh:
                fh.write(json.dumps(sample) + "\n")
            answered += 1
        return answered
