"""GRPO Lab's monitor: read a run's metrics as they grow, raise GRPO health alerts, classify failures,
gate regressions against a baseline, draw the curves.

Public API (the notebooks, `grpolab monitor` and `grpolab compare` call these):

    load_metrics(ref) -> MetricsView              ref: run id, run directory, Run, metrics.jsonl or job log
    alerts(metrics, thresholds=None) -> list[Alert]
    classify_failure(log_text) -> Failure | None  text in memory (diagnose_text); any log file, folder or stream: monitor.diagnose
    compare(run, baseline, steps=None, thresholds=None) -> Comparison      steps default 5-14 (base.yaml)
    plot_curves(metrics, alerts=(), path="curves.png", title=None) -> Path
    summary(ref, thresholds=None, png=None, refresh=True) -> dict        what `grpolab monitor --json` prints
    RunMonitor(ref).update() -> dict              the same, refreshed incrementally (dashboards)
    load_thresholds(path=None) -> Thresholds      `monitor:` of params/base.yaml (or a file), strictly validated
    thresholds_for(run) -> Thresholds             `monitor:` of the recipe the run was launched with

The live JupyterLab dashboard is `grpolab.monitor.dashboard.live(run, interval=5)`; it is not imported here
because it needs ipywidgets, which headless code never imports. matplotlib is imported only when drawing.

Modules: metrics (incremental reading), figures (the key figures, named once), clock (how a run's time is written),
alerts, causes (the cause registry: cause, causes_setup, causes_run, causes_end, causes_doc), diagnose (the
streaming diagnosis, with origin and details), diagnosis (a run's), silent (failures without an error line),
compare, plots and overlay (every chart: matplotlib), summary, progress (the one loop that follows a run), outcome,
thresholds, dashboard, synthetic (healthy or broken verl-format metrics for tests, benchmarks and demos).
"""

from grpolab.monitor.alerts import ALERT_RULES, Alert, alerts
from grpolab.monitor.causes import CAUSES
from grpolab.monitor.compare import Comparison, FigureResult, compare
from grpolab.monitor.diagnose import Failure
from grpolab.monitor.diagnose import diagnose_text as classify_failure
from grpolab.monitor.figures import KEY_METRICS
from grpolab.monitor.metrics import MetricsView, load_metrics
from grpolab.monitor.plots import plot_curves
from grpolab.monitor.summary import RunMonitor, format_summary, summary
from grpolab.monitor.thresholds import Thresholds, ThresholdsError, load_thresholds, thresholds_for

__all__ = [
    "Alert",
    "CAUSES",
    "Comparison",
    "Failure",
    "FigureResult",
    "KEY_METRICS",
    "MetricsView",
    "ALERT_RULES",
    "RunMonitor",
    "Thresholds",
    "ThresholdsError",
    "alerts",
    "classify_failure",
    "compare",
    "format_summary",
    "load_metrics",
    "load_thresholds",
    "plot_curves",
    "summary",
    "thresholds_for",
]
