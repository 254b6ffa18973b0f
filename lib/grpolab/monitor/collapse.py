"""Training collapse: a run whose policy is ruined, whatever its job's state says. A job that ends SUCCEEDED has
only run its steps to the end; with an lr a million times too high it does, and its curves say the rest.

A run's training has collapsed while an alert of severity `error` (grpolab.monitor.alerts: nan, entropy-collapse,
reward-collapse, accuracy-collapse, grad-vanish, entropy-pinned, kl-explode; their limits and severities are the
`monitor:` section of params/base.yaml) has not ended at the run's last logged step: an episode that ended (the
run recovered) is an alert, not a collapse. The step it collapsed at is the earliest first step of those alerts.

    collapse_of(alerts) -> Collapse | None        alerts: Alert objects or their dicts (a summary's "alerts")
    run_collapse(run, thresholds=None) -> Collapse | None
    state_text(state, collapse) -> "SUCCEEDED, but training collapsed at step 2"

Every view of a run's state says it the same way (grpolab monitor, runs, status, diagnose, the notebooks), the
regression gate fails the run (grpolab.monitor.compare) and `grpolab diagnose RUN` names it (silent.py).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from grpolab.monitor.alerts import ALERT_RULES, Alert, alerts
from grpolab.monitor.metrics import MetricsView
from grpolab.monitor.thresholds import Thresholds, thresholds_for

BROKEN = "error"  # the severity that says an alert's rule found the run broken (monitor_schema's Severity)


@dataclass(frozen=True)
class Collapse:
    step: int  # where the earliest ongoing error alert started
    rules: tuple[str, ...]  # the error rules still firing at the last step, earliest first
    messages: tuple[str, ...]  # one message per rule (its earliest episode's)

    @property
    def text(self) -> str:
        return f"training collapsed at step {self.step}"

    def reasons(self) -> str:
        """`grad-vanish: actor/grad_norm is 0 from step 2 on ...; entropy-pinned: ...`"""
        return "; ".join(f"{rule}: {message}" for rule, message in zip(self.rules, self.messages))

    def to_dict(self) -> dict:
        data = asdict(self)
        data.update(rules=list(self.rules), messages=list(self.messages), text=self.text)
        return data


def collapse_of(found) -> Collapse | None:
    """The collapse the alerts show (their error alerts still ongoing at the last step), or None."""
    ongoing: dict[str, dict] = {}
    for a in found:
        a = a.to_dict() if isinstance(a, Alert) else a
        if a.get("severity") == BROKEN and a.get("ongoing"):
            kept = ongoing.get(a["rule"])
            if kept is None or a["step"] < kept["step"]:
                ongoing[a["rule"]] = a
    if not ongoing:
        return None
    order = {rule: index for index, rule in enumerate(ALERT_RULES)}
    firsts = sorted(ongoing.values(), key=lambda a: (a["step"], order.get(a["rule"], len(order))))
    return Collapse(firsts[0]["step"], tuple(a["rule"] for a in firsts), tuple(a["message"] for a in firsts))


def run_collapse(run, thresholds: Thresholds | None = None, view: MetricsView | None = None) -> Collapse | None:
    """The collapse of a run (a Run), from its metrics and its own thresholds (its recipe's `monitor:`); None when
    it logged nothing or nothing collapsed."""
    if view is None:
        if not run.metrics_file.exists():
            return None
        view = MetricsView.for_run(run)
    view.refresh()
    if not view.steps:
        return None
    return collapse_of(alerts(view, thresholds if thresholds is not None else thresholds_for(run)))


def collapse_dict(data) -> dict | None:
    """A collapse as the dict views carry (`collapse` of a summary, of `grpolab runs --json`): from a Collapse, a
    dict already, or None."""
    return data.to_dict() if isinstance(data, Collapse) else (data or None)


def state_text(state: str, collapse) -> str:
    """A run's state as every view says it: `SUCCEEDED`, or `SUCCEEDED, but training collapsed at step 2` (a
    FAILED or LOST run: `FAILED; training had collapsed at step 2`). `collapse`: a Collapse or its dict."""
    data = collapse_dict(collapse)
    if not data:
        return state
    if state in ("FAILED", "LOST"):
        return f"{state}; training had collapsed at step {data['step']}"
    return f"{state}, but training collapsed at step {data['step']}"
