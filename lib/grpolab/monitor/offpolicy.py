"""An asynchronous run's off-policy figures (issue 42): how old the trained samples were, how many were dropped, the
importance ratio and the mismatch KL between the training and the rollout policy, and how long the trainer waited,
read from the metrics verl's V1 trainer logs (the CPU trainer's asynchronous loop logs the same names), with the
alerts of grpolab.monitor.alerts_async. 04_monitor shows them (grpolab.notebook.offpolicy) with their curves.

    summary = offpolicy(view)         # None for a run that logs no staleness (verl before 0.9, TRL's sync trainer)
    lines = format_offpolicy(summary)
"""

from __future__ import annotations

import statistics

from grpolab.monitor.metrics import MetricsView

STALENESS_MEAN = "training/off_policy/trajectory_staleness/mean"
STALENESS_MAX = "training/off_policy/trajectory_staleness/max"
EVICTED = "training/off_policy/evicted_samples"
IS_MEAN = "rollout_corr/rollout_is_mean"
MISMATCH_KL = "rollout_corr/kl"
WAIT, STEP = "timing_s/gen", "timing_s/step"
# the curves 04_monitor draws for an asynchronous run (grpolab.monitor.plots.PANELS titles)
PANELS = ("off-policy staleness", "importance ratio", "rollout mismatch KL", "dropped stale samples", "step time")
ASYNC_RULES = ("staleness", "trainer-starved", "is-ratio-drift", "rollout-idle")


def _values(view: MetricsView, name: str) -> list[float]:
    return [v for v in view.series(name)[1] if isinstance(v, (int, float)) and v == v] if name in view else []


def offpolicy(view: MetricsView) -> dict | None:
    """The off-policy figures of a run (None when it logs no staleness): `asynchronous` is whether any step trained
    on samples of an older policy (a synchronous V1 run logs staleness 0)."""
    mean, worst = _values(view, STALENESS_MEAN), _values(view, STALENESS_MAX)
    if not mean and not worst:
        return None
    ratio, kl, dropped = _values(view, IS_MEAN), _values(view, MISMATCH_KL), _values(view, EVICTED)
    steps = view.series(WAIT)[0] if WAIT in view else []
    waits = dict(zip(*view.series(WAIT))) if WAIT in view else {}
    shares = [
        waits[s] / t
        for s, t in zip(*view.series(STEP))
        if STEP in view and s in waits and isinstance(t, (int, float)) and t > 0 and waits[s] is not None
    ]
    return {
        "asynchronous": any(v > 0 for v in mean + worst),
        "steps": len(mean or worst),
        "staleness_mean": mean[-1] if mean else None,
        "staleness_mean_median": statistics.median(mean) if mean else None,
        "staleness_max": max(worst) if worst else None,
        "dropped": sum(dropped) if dropped else None,
        "is_ratio": ratio[-1] if ratio else None,
        "is_ratio_range": (min(ratio), max(ratio)) if ratio else None,
        "mismatch_kl": kl[-1] if kl else None,
        "wait_share": statistics.median(shares) if shares else None,
        "wait_steps": len(steps),
    }


def format_offpolicy(summary: dict | None, alerts=()) -> list[str]:
    """The figures as lines (and the asynchronous alerts among `alerts`, Alert objects or their dicts)."""
    if summary is None:
        return ["off-policy: the run logs no staleness (a synchronous trainer): nothing to show"]
    if not summary["asynchronous"]:
        return [f"off-policy: synchronous (staleness 0 at all {summary['steps']} steps)"]

    def num(value, digits: int = 3) -> str:
        return "-" if value is None else f"{value:.{digits}g}"

    lines = [
        f"off-policy staleness: {num(summary['staleness_mean'])} model versions now (median "
        f"{num(summary['staleness_mean_median'])}), at most {num(summary['staleness_max'])}, over "
        f"{summary['steps']} steps",
    ]
    if summary["dropped"] is not None:
        lines.append(f"dropped stale samples: {num(summary['dropped'], 6)} in all")
    if summary["is_ratio"] is not None:
        low, high = summary["is_ratio_range"]
        lines.append(
            f"importance ratio (rollout IS weight, mean): {num(summary['is_ratio'])} now, {num(low)} to {num(high)}"
        )
    if summary["mismatch_kl"] is not None:
        lines.append(f"rollout mismatch KL: {num(summary['mismatch_kl'])} now")
    if summary["wait_share"] is not None:
        lines.append(f"the trainer waited for samples {100 * summary['wait_share']:.0f} % of a step (median)")
    rules = [a for a in alerts if (a["rule"] if isinstance(a, dict) else a.rule) in ASYNC_RULES]
    for a in rules:
        rule, message = (a["rule"], a["message"]) if isinstance(a, dict) else (a.rule, a.message)
        lines.append(f"ALERT {rule}: {message}")
    if not rules:
        lines.append("no off-policy alert (staleness, trainer-starved, is-ratio-drift, rollout-idle)")
    return lines
