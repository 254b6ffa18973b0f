"""Health alerts over a run's metrics: GRPO's usual ways of going wrong, caught in the first hour.

    alerts(metrics, thresholds=None) -> list[Alert]     # metrics: a MetricsView or anything load() takes

Each Alert is `{rule, step, message, metrics, value}`. `rule` is a stable id (RULES); `step` is the step
where the trouble started (a rule with `patience` waits that many steps before it speaks, but reports the
first one); `message` says what happened, why it matters and what to try. A rule fires once per episode and
re-arms when its condition clears, so a long collapse is one alert, not one per step.

The thresholds come from params/monitor/health.yaml (grpolab.monitor.thresholds); a metric the run does not
log raises nothing. Non-finite values are the `nan` rule's business: the other rules look at finite values only.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from dataclasses import asdict, dataclass
from statistics import median

from grpolab.monitor.metrics import MetricsView, load
from grpolab.monitor.thresholds import Thresholds, load_thresholds

RULES = ("nan", "reward-flat", "entropy-collapse", "kl-spike", "length-clipped", "grad-spike", "throughput-drop")


@dataclass(frozen=True)
class Alert:
    rule: str  # one of RULES
    step: int  # where it started
    message: str
    metrics: tuple[str, ...]  # the metric(s) concerned, for marking the right plot panels
    value: float | None = None  # the offending value at `step`

    def to_dict(self) -> dict:
        data = asdict(self)
        data["metrics"] = list(self.metrics)
        data["value"] = json_number(self.value)
        return data


def json_number(value: float | None):
    """NaN and inf are not JSON: report them as the strings 'nan', 'inf', '-inf'."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def _finite_points(view: MetricsView, name: str) -> tuple[list[int], list[float]]:
    steps, values = view.series(name)
    pairs = [(s, v) for s, v in zip(steps, values) if math.isfinite(v)]
    return [s for s, _ in pairs], [v for _, v in pairs]


def _onsets(flags: list[bool], patience: int, rearm: int = 1) -> list[tuple[int, int]]:
    """(first index, confirming index) of every episode: a run of at least `patience` consecutive True flags,
    counted only once the previous episode was followed by `rearm` consecutive False flags (no flapping)."""
    found, start, clear, armed = [], None, 0, True
    for index, flag in enumerate(flags):
        if not flag:
            start, clear = None, clear + 1
            armed = armed or clear >= rearm
            continue
        clear = 0
        if start is None:
            start = index
        if armed and index - start + 1 >= patience:
            found.append((start, index))
            armed = False
    return found


def _previous_medians(values: list[float], window: int) -> list[float | None]:
    """For each index, the median of the `window` values before it (None until that many exist).

    A sorted window kept with bisect: O(n * window) with small constants, no numpy needed.
    """
    out: list[float | None] = [None] * len(values)
    ordered: list[float] = []
    half = window // 2
    for index, value in enumerate(values):
        if index >= window:
            out[index] = ordered[half] if window % 2 else (ordered[half - 1] + ordered[half]) / 2
        insort(ordered, value)
        if len(ordered) > window:
            del ordered[bisect_left(ordered, values[index - window])]
    return out


# --- the rules ---------------------------------------------------------------------------------------------


def _nan(view: MetricsView, rule) -> list[Alert]:
    watched = [m for m in rule.metrics if m in view]
    if not watched:
        return []
    columns = [view.column(m) for m in watched]
    rows, bad_by_row = [], []
    for row in range(len(view.steps)):
        logged = [(m, c[row]) for m, c in zip(watched, columns) if c[row] is not None]
        if not logged:
            continue  # nothing watched was logged at this step: neither NaN nor a recovery
        rows.append(row)
        bad_by_row.append([(m, v) for m, v in logged if not math.isfinite(v)])
    out = []
    for first, _ in _onsets([bool(bad) for bad in bad_by_row], 1):
        bad = bad_by_row[first]
        step = view.steps[rows[first]]
        names = ", ".join(f"{m}={json_number(v)}" for m, v in bad)
        out.append(Alert(
            "nan", step,
            f"non-finite values at step {step}: {names}. The update diverged or the reward returned NaN; "
            "later steps train on garbage. Try a lower lr, check the reward function for NaN/inf, and "
            "rerun from the last checkpoint before this step.",
            tuple(m for m, _ in bad), bad[0][1],
        ))
    return out


def _reward_flat(view: MetricsView, rule) -> list[Alert]:
    steps, values = _finite_points(view, rule.metric)
    window = rule.window
    flags = [False] * len(values)
    for end in range(window - 1, len(values)):
        chunk = values[end - window + 1 : end + 1]
        flags[end] = max(chunk) - min(chunk) < rule.min_range
    out = []
    for first, _ in _onsets(flags, 1, rule.rearm_steps):
        start = first - window + 1  # the flat stretch begins where the first flat window begins
        chunk = values[start : first + 1]
        out.append(Alert(
            "reward-flat", steps[start],
            f"{rule.metric} stayed within {_fmt(max(chunk) - min(chunk))} (around {_fmt(chunk[-1])}) over "
            f"{window} steps from step {steps[start]} (threshold {rule.min_range}). When every sample of a "
            "group gets the same reward, GRPO's advantages are zero and nothing is learned: check the reward "
            "function, the answer format it expects, and whether the task is too hard or too easy for the model.",
            (rule.metric,), values[start],
        ))
    return out


def _entropy_collapse(view: MetricsView, rule) -> list[Alert]:
    steps, values = _finite_points(view, rule.metric)
    start = median(values[: rule.start_steps]) if len(values) >= rule.start_steps else None
    limit = rule.floor if start is None else max(rule.floor, rule.fraction_of_start * start)
    flags = [v < limit for v in values]
    out = []
    for first, _ in _onsets(flags, rule.patience, rule.rearm_steps):
        since = "" if start is None else f", {_fmt(100 * values[first] / start if start else 0)} % of its start {_fmt(start)}"
        out.append(Alert(
            "entropy-collapse", steps[first],
            f"{rule.metric} fell to {_fmt(values[first])} at step {steps[first]} (limit {_fmt(limit)}{since}). "
            "The policy now picks nearly the same tokens every time, so GRPO's groups stop differing and "
            "exploration is gone. Try a lower lr, a higher rollout temperature, a smaller clip_ratio_high, "
            "or an entropy bonus; look for reward hacking in recent samples.",
            (rule.metric,), values[first],
        ))
    return out


def _spikes(view: MetricsView, rule_id: str, name: str, factor: float, window: int, min_value: float,
            advice: str) -> list[Alert]:
    steps, values = _finite_points(view, name)
    baselines = _previous_medians(values, window)
    flags = [b is not None and v > min_value and v > factor * b for v, b in zip(values, baselines)]
    out = []
    for first, _ in _onsets(flags, 1):
        out.append(Alert(
            rule_id, steps[first],
            f"{name} jumped to {_fmt(values[first])} at step {steps[first]}, "
            f"{_fmt(values[first] / baselines[first]) if baselines[first] else 'inf'} x the median "
            f"{_fmt(baselines[first])} of the previous {window} steps (limit {factor} x). {advice}",
            (name,), values[first],
        ))
    return out


def _kl_spike(view: MetricsView, rule) -> list[Alert]:
    out = []
    for name in rule.metrics:
        out += _spikes(view, "kl-spike", name, rule.factor, rule.window, rule.min_value,
                       "The policy moved far from the reference in one update: lower the lr, raise "
                       "kl_loss_coef, or tighten clip_ratio_low/high; check for a bad batch.")
    return out


def _grad_spike(view: MetricsView, rule) -> list[Alert]:
    return _spikes(view, "grad-spike", rule.metric, rule.factor, rule.window, rule.min_value,
                   "Large gradients precede loss spikes and NaNs: lower the lr or the gradient clip, and "
                   "look at the batch of this step (very long or degenerate responses).")


def _length_clipped(view: MetricsView, rule) -> list[Alert]:
    steps, values = _finite_points(view, rule.metric)
    out = []
    for first, _ in _onsets([v > rule.max_ratio for v in values], rule.patience, rule.rearm_steps):
        out.append(Alert(
            "length-clipped", steps[first],
            f"{_fmt(100 * values[first])} % of responses hit max_response_length at step {steps[first]} "
            f"(limit {_fmt(100 * rule.max_ratio)} % for {rule.patience} steps). Truncated answers are "
            "unfinished and usually score 0, pushing GRPO towards short answers: raise "
            "data.max_response_length, or add an overlong penalty / filter (DAPO), or check for "
            "repetition loops in the samples.",
            (rule.metric,), values[first],
        ))
    return out


def _throughput_drop(view: MetricsView, rule) -> list[Alert]:
    steps, values = _finite_points(view, rule.metric)
    baselines = _previous_medians(values, rule.window)
    flags = [b is not None and b > 0 and v < (1 - rule.max_drop) * b for v, b in zip(values, baselines)]
    out = []
    for first, _ in _onsets(flags, rule.patience, rule.rearm_steps):
        drop = 1 - values[first] / baselines[first]
        out.append(Alert(
            "throughput-drop", steps[first],
            f"{rule.metric} dropped {_fmt(100 * drop)} % at step {steps[first]} ({_fmt(values[first])} vs the "
            f"median {_fmt(baselines[first])} of the previous {rule.window} steps; limit "
            f"{_fmt(100 * rule.max_drop)} % for {rule.patience} steps). Look for a straggler node or device, "
            "host memory swapping, longer responses (response_length/mean) or a rollout slowdown "
            "(timing_s/gen).",
            (rule.metric,), values[first],
        ))
    return out


_CHECKS = {
    "nan": ("nan", _nan),
    "reward-flat": ("reward_flat", _reward_flat),
    "entropy-collapse": ("entropy_collapse", _entropy_collapse),
    "kl-spike": ("kl_spike", _kl_spike),
    "length-clipped": ("length_clipped", _length_clipped),
    "grad-spike": ("grad_spike", _grad_spike),
    "throughput-drop": ("throughput_drop", _throughput_drop),
}


def alerts(metrics, thresholds: Thresholds | str | None = None) -> list[Alert]:
    """Every alert the metrics raise, ordered by step then by rule.

    `metrics`: a MetricsView or anything `load` accepts (run id, run directory, metrics file).
    `thresholds`: a Thresholds, a path to a thresholds file, or None for params/monitor/health.yaml.
    """
    view = metrics if isinstance(metrics, MetricsView) else load(metrics)
    if not isinstance(thresholds, Thresholds):
        thresholds = load_thresholds(thresholds)
    found: list[Alert] = []
    for rule_id, (field, check) in _CHECKS.items():
        rule = getattr(thresholds.alerts, field)
        if rule.enabled:
            found += check(view, rule)
    return sorted(found, key=lambda a: (a.step, RULES.index(a.rule)))
