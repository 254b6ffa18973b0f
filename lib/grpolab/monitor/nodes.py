"""Every node of a run, from its telemetry (RUN/telemetry/*.jsonl, grpolab.jobs.telemetry): series, alerts, a picture.

    read_nodes(run) -> [NodeSeries]              one per node, its samples in time order
    node_alerts(nodes, rules) -> [NodeAlert]     a straggler, device memory creeping towards its limit, a host
                                                 near its RAM limit: each names the node (and the device)
    plot_nodes(nodes, alerts, path) -> Path      small multiples: one panel per node, utilisation and memory
    nodes_summary(run, rules) -> dict | None     what `grpolab monitor`, the dashboard and 04_monitor show

A node's utilisation is the mean of its devices' (nvidia-smi's GPU %, npu-smi's AICore %), or its host's CPU %
on a node without devices; its memory is its fullest device's share of that device's memory, or its host's RAM.
Thresholds: the `monitor.nodes` section (params/base.yaml; a run recorded without it gets base.yaml's).
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path

from grpolab import run_folder
from grpolab.jobs.runs import read_tail
from grpolab.monitor.thresholds import load_thresholds

MAX_SAMPLES = 5000  # per node, the newest: a day at telemetry_s 20; the picture and the alerts need no more
MAX_PANELS = 32  # nodes drawn (the alerted ones first); the rest are counted under the picture


@dataclass
class NodeSeries:
    node_id: str
    address: str
    t: list[float] = field(default_factory=list)
    util: list[float | None] = field(default_factory=list)  # %: devices' mean, else the host's CPU
    memory: list[float | None] = field(default_factory=list)  # share: the fullest device, else host RAM
    host_ram: list[float | None] = field(default_factory=list)  # share of the host's RAM used
    devices: dict[str, list[float | None]] = field(default_factory=dict)  # device -> share of its memory used
    device_tool: str | None = None

    @property
    def label(self) -> str:
        return f"{self.address} ({self.node_id[:8]})" if self.address else self.node_id[:12]


@dataclass(frozen=True)
class NodeAlert:
    rule: str  # straggler | device-memory-creep | device-memory-full | host-ram
    severity: str
    node: str  # the node's label: its address and the start of its id
    message: str
    advice: str

    def to_dict(self) -> dict:
        return asdict(self)


def _share(used, total) -> float | None:
    if isinstance(used, (int, float)) and isinstance(total, (int, float)) and total > 0:
        return float(used) / float(total)
    return None


def _mean(values) -> float | None:
    values = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(values) / len(values) if values else None


def read_nodes(run) -> list[NodeSeries]:
    """The run's nodes with their samples (none for a run without telemetry)."""
    folder = run_folder.telemetry_dir(run.path)
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.jsonl")):
        series = None
        for line in read_tail(path, MAX_SAMPLES):
            try:
                s = json.loads(line)
                t = float(s["t"])
            except (ValueError, TypeError, KeyError):
                continue
            if series is None:
                series = NodeSeries(str(s.get("node_id") or path.stem), str(s.get("address") or ""))
            devices = [d for d in s.get("devices") or [] if isinstance(d, dict)]
            shares = {str(d.get("device")): _share(d.get("mem_used_mb"), d.get("mem_total_mb")) for d in devices}
            ram = _share(s.get("host_mem_used_gb"), s.get("host_mem_total_gb"))
            series.t.append(t)
            series.util.append(_mean(d.get("util_pct") for d in devices) if devices else s.get("cpu_pct"))
            series.memory.append(max((v for v in shares.values() if v is not None), default=None) if devices else ram)
            series.host_ram.append(ram)
            for name, value in shares.items():
                column = series.devices.setdefault(name, [None] * (len(series.t) - 1))
                column.append(value)
            for column in series.devices.values():
                column.extend([None] * (len(series.t) - len(column)))
            series.device_tool = s.get("device_tool") or series.device_tool
        if series is not None and series.t:
            out.append(series)
    return out


def _recent(values: list, n: int) -> list[float]:
    return [v for v in values[-n:] if isinstance(v, (int, float)) and math.isfinite(v)]


def _held(values: list, limit: float, rules) -> bool:
    """The value is at or above `limit` at min_count of the last of_last samples."""
    return sum(1 for v in _recent(values, rules.of_last) if v >= limit) >= rules.min_count


def _trend(t: list[float], y: list[float | None]) -> tuple[float, float, float] | None:
    """(rise per second, the level now, the rise) from the medians of the first and the last third of the finite
    points: a steady rise, which one sample at a limit does not make; None for fewer than 6 points."""
    points = [(a, b) for a, b in zip(t, y) if isinstance(b, (int, float)) and math.isfinite(b)]
    if len(points) < 6:
        return None
    third = len(points) // 3
    head, tail = points[:third], points[-third:]
    t0, t1 = statistics.median(p[0] for p in head), statistics.median(p[0] for p in tail)
    y0, y1 = statistics.median(p[1] for p in head), statistics.median(p[1] for p in tail)
    if t1 <= t0:
        return None
    return (y1 - y0) / (t1 - t0), y1, y1 - y0


def node_alerts(nodes: list[NodeSeries], rules) -> list[NodeAlert]:
    """The node alerts of the last `window` samples of each node (see the module docstring)."""
    if rules is None or not rules.enabled:
        return []
    out: list[NodeAlert] = []
    ready = [n for n in nodes if len(n.t) >= rules.min_samples]
    medians = {n.node_id: statistics.median(u) for n in ready if (u := _recent(n.util, rules.window))}
    for n in ready if len(medians) >= 2 else []:
        if n.node_id not in medians:
            continue
        others = [m for k, m in medians.items() if k != n.node_id]
        theirs = statistics.median(others)
        mine = medians[n.node_id]
        if theirs >= rules.straggler_min_util and mine < rules.straggler_ratio * theirs:
            what = "its devices' utilisation" if n.devices else "its CPU utilisation"
            out.append(
                NodeAlert(
                    "straggler",
                    "warning",
                    n.label,
                    f"node {n.label} is a straggler: {what} is {mine:.0f} % (median of its last "
                    f"{len(_recent(n.util, rules.window))} samples), the other {len(others)} node(s)' {theirs:.0f} %",
                    "look at that node first: a slow or throttled device, a degraded link, another process on it; "
                    "a restart can leave it out (trainer.restarts.exclude_on)",
                )
            )
    for n in ready:
        t = n.t[-rules.window :]
        for device, column in sorted(n.devices.items()):
            recent = column[-rules.window :]
            where = f"device {device} of node {n.label}"
            if _held(recent, rules.device_memory_fraction, rules):
                now = _recent(recent, 1)[0]
                out.append(
                    NodeAlert(
                        "device-memory-full",
                        "error",
                        n.label,
                        f"{where} uses {now:.0%} of its memory (limit {rules.device_memory_fraction:.0%})",
                        "lower rollout.gpu_memory_utilization or the micro batch before it runs out",
                    )
                )
                continue
            trend = _trend(t, recent)
            if trend is None or trend[0] <= 0:
                continue
            slope, now, rise = trend
            seen = _recent(recent, rules.window)
            reach_s = (rules.device_memory_fraction - now) / slope
            if rise >= rules.creep_min_rise and 0 < reach_s <= rules.creep_horizon_s:
                out.append(
                    NodeAlert(
                        "device-memory-creep",
                        "warning",
                        n.label,
                        f"{where} is creeping up: {min(seen):.0%} -> {now:.0%} of its memory over "
                        f"{t[-1] - t[0]:.0f} s, on course to reach {rules.device_memory_fraction:.0%} in about "
                        f"{reach_s / 60:.0f} min",
                        "a leak (caches that grow, tensors kept across steps) fails this node with an out-of-memory: "
                        "save a checkpoint now (trainer.save_freq) and look at what grows",
                    )
                )
        if _held(n.host_ram, rules.host_ram_fraction, rules):
            now = _recent(n.host_ram, 1)[0]
            out.append(
                NodeAlert(
                    "host-ram",
                    "error",
                    n.label,
                    f"the host of node {n.label} uses {now:.0%} of its RAM (limit {rules.host_ram_fraction:.0%})",
                    "the kernel's OOM killer or Ray's memory monitor kills a worker next: fewer dataloader workers, "
                    "no CPU offload on this node, or more RAM",
                )
            )
    return out


def plot_nodes(nodes: list[NodeSeries], alerts: list[NodeAlert], path: str | Path, title: str | None = None) -> Path:
    """Small multiples: one panel per node (the alerted first, MAX_PANELS at most), utilisation and memory in %
    against minutes since the first sample; an alerted node's title is red."""
    # lazy: matplotlib (only drawing needs it), on its Agg canvas
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: matplotlib (as above)

    flagged = {a.node for a in alerts}
    shown = sorted(nodes, key=lambda n: (n.label not in flagged, n.label))[:MAX_PANELS]
    start = min((n.t[0] for n in shown), default=0.0)
    columns = min(4, max(1, len(shown)))
    rows = max(1, math.ceil(len(shown) / columns))
    fig, axes = plt.subplots(rows, columns, figsize=(3.2 * columns, 2.3 * rows), squeeze=False, sharey=True)
    for ax in axes.flat[len(shown) :]:
        ax.set_visible(False)
    for ax, n in zip(axes.flat, shown):
        minutes = [(t - start) / 60 for t in n.t]
        ax.plot(minutes, [v if v is not None else float("nan") for v in n.util], lw=1.2, label="utilisation %")
        memory = [100 * v if v is not None else float("nan") for v in n.memory]
        ax.plot(minutes, memory, lw=1.2, label="device memory %" if n.devices else "host RAM %")
        ax.set_ylim(0, 105)
        ax.set_title(n.label, fontsize=8, color="#d62728" if n.label in flagged else "black")
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes.flat[0].legend(fontsize=6, loc="lower left")
    more = f" (+{len(nodes) - len(shown)} more)" if len(nodes) > len(shown) else ""
    fig.suptitle(f"{title + ': ' if title else ''}{len(nodes)} node(s){more}, x: minutes", fontsize=9)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def nodes_summary(run, rules=None, png: str | Path | None = None) -> dict | None:
    """{nodes, samples, last, alerts, picture} for a run with telemetry; None without. `rules`: monitor.nodes
    (None: base.yaml's); `png`: also draw the small multiples there."""
    nodes = read_nodes(run)
    if not nodes:
        return None
    if rules is None:
        rules = load_thresholds().nodes
    found = node_alerts(nodes, rules)
    picture = str(plot_nodes(nodes, found, png, run.run_id)) if png is not None else None
    return {
        "nodes": [
            {"node": n.label, "samples": len(n.t), "device_tool": n.device_tool, "devices": sorted(n.devices)}
            for n in nodes
        ],
        "last": max(n.t[-1] for n in nodes),
        "alerts": [a.to_dict() for a in found],
        "picture": picture,
    }


def node_lines(data: dict | None) -> list[str]:
    """The nodes as text lines (the summary's `nodes` section)."""
    if not data:
        return []
    nodes = data["nodes"]
    tools = sorted({n["device_tool"] or "no device tool: host only" for n in nodes})
    lines = [f"nodes     {len(nodes)} sampled ({', '.join(tools)}), {sum(n['samples'] for n in nodes)} samples"]
    if not data["alerts"]:
        lines.append("  node alerts: none")
    for a in data["alerts"]:
        lines.append(f"  {a['severity'].upper():7} {a['rule']:19} {a['message']}")
        lines.append(f"          try: {a['advice']}")
    if data.get("picture"):
        lines.append(f"  per node: {data['picture']}")
    return lines
