"""Health alerts over a run's metrics: GRPO's usual ways of going wrong, without crying wolf on noise.

    alerts(metrics, thresholds=None) -> list[Alert]     # metrics: a MetricsView or anything load_metrics() takes
    group(alerts) -> list[dict]                          # one entry per rule: count, step range, worst, advice

Each Alert is one EPISODE of one rule: `step` where the trouble started, `confirmed` where the rule was sure
(persistence: `min_count` of the last `of_last` logged steps), `end` the last bad step so far, `ongoing` until
`rearm_steps` normal steps in a row end the episode, `count` bad steps, `worst` the worst value.
`message` says what happened; `advice` (the same for every alert of a rule) what to try.

Baselines are robust: the median (and MAD) of the previous `window` normal steps; steps inside an episode are
kept out of the baseline, so a long drop does not become the new normal. Rules ignore the first `warmup` steps.
A NaN/inf is an immediate alert (verl's file logger writes NaN as null; the metrics reader reads it as NaN).
Thresholds: the `monitor:` section of the run's recipe (grpolab.monitor.thresholds); a metric the run does not
log raises nothing.

Each rule is a short function; the robust-baseline and episode machinery that keeps them quiet on healthy runs is
grpolab.monitor.episodes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import partial
from types import SimpleNamespace

from grpolab.monitor.alerts_async import ASYNC_ADVICE, ASYNC_CHECKS
from grpolab.monitor.episodes import Episode, baseline_flags, find_episodes, finite_points, median_at, persistent
from grpolab.monitor.metrics import MetricsView, load_metrics
from grpolab.monitor.thresholds import Thresholds, load_thresholds

ADVICE = {
    "nan": "The update diverged or the reward returned NaN; later steps train on garbage. Try a lower lr, check "
    "the reward function for NaN/inf, and rerun from the last checkpoint before this step.",
    "reward-flat": "When every sample of a group gets the same reward, GRPO's advantages are zero and nothing is "
    "learned: check the reward function, the answer format it expects, and whether the task is "
    "too hard or too easy for the model.",
    "entropy-collapse": "The policy now picks nearly the same tokens every time, so GRPO's groups stop differing "
    "and exploration is gone. Try a lower lr, a higher rollout temperature, a smaller "
    "clip_ratio_high, or an entropy bonus; look for reward hacking in recent samples.",
    "kl-spike": "The policy moved far from the reference: lower the lr, raise kl_loss_coef, or tighten "
    "clip_ratio_low/high; check for a bad batch.",
    "length-clipped": "Truncated answers are unfinished and usually score 0, pushing GRPO towards short answers: "
    "raise data.max_response_length, add an overlong penalty / filter (DAPO), or check the "
    "samples for repetition loops.",
    "grad-spike": "Large gradients precede loss spikes and NaNs: lower the lr or the gradient clip, and look at "
    "the batches of these steps (very long or degenerate responses).",
    "throughput-drop": "Look for a straggler node or device, host memory swapping, longer responses "
    "(response_length/mean) or a rollout slowdown (timing_s/gen).",
    "slow-steps": "Steps take several times as long as they did: look for other processes on the host (CPU "
    "trainer: shared cores), memory swapping, longer responses (response_length/mean), or a straggler "
    "node; the remaining-time estimate follows the new pace.",
    # training collapse (severity error: the run is ruined, whatever its state says; grpolab.monitor.collapse)
    "reward-collapse": "The policy scores far worse than it started and stays there: the update wrecked it. "
    "Usually the lr is far too high (`grpolab check` warns on one outside the published range) or the loss "
    "diverged; lower algorithm.lr, and rerun from a checkpoint before this step or from scratch.",
    "accuracy-collapse": "Validation accuracy fell far below the untrained model's and stays there: the update "
    "wrecked the policy. Usually the lr is far too high (`grpolab check` warns on one outside the published "
    "range); lower algorithm.lr, and rerun from a checkpoint before this step or from scratch.",
    "grad-vanish": "No gradient reaches the weights, so nothing is learned: after a far too high lr the weights "
    "saturate (every output the same, gradient 0); also every group scored alike with no KL loss, or a "
    "frozen model. Lower algorithm.lr, check that the reward varies within a group, and rerun.",
    "entropy-pinned": "The policy's entropy no longer moves at all: at its maximum every token is equally likely "
    "(the weights were blown away, typically by a far too high lr); at zero the policy is deterministic. "
    "Lower algorithm.lr and rerun; the samples of these steps are noise.",
    "kl-explode": "The policy is far from the reference and stays there: the update diverged. Lower algorithm.lr, "
    "raise kl_loss_coef or tighten clip_ratio_low/high, and rerun from a checkpoint before this step.",
    **ASYNC_ADVICE,
}


@dataclass(frozen=True)
class Alert:
    rule: str  # one of ALERT_RULES (below)
    step: int  # where the episode started
    message: str
    metrics: tuple[str, ...]  # the metric(s) concerned, for marking the right plot panels
    value: float | None = None  # the value at `step`
    confirmed: int | None = None  # the step at which the rule was sure (step + detection delay)
    end: int | None = None  # the last bad step so far
    ongoing: bool = False  # the episode has not ended (fewer than rearm_steps normal steps since `end`)
    count: int = 1  # bad steps in the episode
    worst: float | None = None  # the worst value of the episode
    severity: str = "warning"

    @property
    def advice(self) -> str:
        return ADVICE[self.rule]

    def to_dict(self) -> dict:
        data = asdict(self)
        data["metrics"] = list(self.metrics)
        data["value"] = json_number(self.value)
        data["worst"] = json_number(self.worst)
        data["advice"] = self.advice
        return data


def json_number(value: float | None):
    """NaN and inf are not JSON: report them as the strings 'nan', 'inf', '-inf'."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def fmt(value: float | None) -> str:
    """A value as messages print it: 4 significant digits, "-" for none."""
    return "-" if value is None else f"{value:.4g}"


def _make(rule_id: str, rule, steps, values, episodes: list[Episode], message, metric: str, worst) -> list[Alert]:
    """One Alert per episode of a series; `message(episode)` says what happened, `worst(chunk)` its worst value."""
    return [
        Alert(
            rule_id,
            steps[ep.first],
            message(ep),
            (metric,),
            values[ep.first],
            confirmed=steps[ep.confirmed],
            end=steps[ep.last],
            ongoing=not ep.closed,
            count=ep.count,
            worst=worst(values[ep.first : ep.last + 1]),
            severity=rule.severity,
        )
        for ep in episodes
    ]


# --- the rules ---------------------------------------------------------------------------------------------


def _nan(view: MetricsView, rule) -> list[Alert]:
    watched = [m for m in rule.metrics if m in view]
    if not watched:
        return []
    # lazy: numpy (only the windowed checks need it; importing the monitor stays light)
    import numpy as np

    columns = [view.column(m) for m in watched]
    present = np.zeros(len(view.steps), dtype=bool)
    bad_any = np.zeros(len(view.steps), dtype=bool)
    for column in columns:
        logged = np.not_equal(np.array(column, dtype=object), None)
        present |= logged
        with np.errstate(invalid="ignore"):
            bad_any |= logged & ~np.isfinite(np.array(column, dtype=float))
    if not bad_any.any():
        return []
    rows = np.flatnonzero(present).tolist()  # steps where something watched was logged: NaN or a recovery
    bad_by_row = [
        [(m, c[row]) for m, c in zip(watched, columns) if c[row] is not None and not math.isfinite(c[row])]
        if bad_any[row]
        else []
        for row in rows
    ]
    out = []
    for ep in find_episodes([bool(bad) for bad in bad_by_row], 1, 1, 1):
        bad = bad_by_row[ep.first]
        step = view.steps[rows[ep.first]]
        names = ", ".join(f"{m}={json_number(v)}" for m, v in bad)
        out.append(
            Alert(
                "nan",
                step,
                f"non-finite values at step {step}: {names}",
                tuple(m for m, _ in bad),
                bad[0][1],
                confirmed=step,
                end=view.steps[rows[ep.last]],
                ongoing=not ep.closed,
                count=ep.count,
                worst=bad[0][1],
                severity=rule.severity,
            )
        )
    return out


def _reward_flat(view: MetricsView, rule) -> list[Alert]:
    steps, values = finite_points(view, rule.metric)
    window = rule.window
    flags = [False] * len(values)
    if len(values) >= window:
        # lazy: numpy (only the windowed checks need it; importing the monitor stays light)
        import numpy as np
        from numpy.lib.stride_tricks import sliding_window_view

        windows = sliding_window_view(np.asarray(values, dtype=float), window)  # windows[i] ends at i+window-1
        flat = np.flatnonzero(windows.max(axis=1) - windows.min(axis=1) < rule.min_range)
        for index in flat:
            flags[int(index) + window - 1] = True
    episodes = []
    for ep in find_episodes(flags, 1, 1, rule.rearm_steps):
        start = max(0, ep.first - window + 1)  # the flat stretch begins where the first flat window begins
        episodes.append(Episode(start, ep.first, ep.last, ep.last - start + 1, ep.closed))

    def message(ep):
        chunk = values[ep.first : ep.confirmed + 1]
        return (
            f"{rule.metric} stayed within {fmt(max(chunk) - min(chunk))} (around {fmt(chunk[-1])}) "
            f"for {window} steps from step {steps[ep.first]} (limit {rule.min_range})"
        )

    return _make("reward-flat", rule, steps, values, episodes, message, rule.metric, lambda c: c[-1])


def _entropy_collapse(view: MetricsView, rule) -> list[Alert]:
    steps, values = finite_points(view, rule.metric)
    start = sorted(values[: rule.start_steps])[rule.start_steps // 2] if len(values) >= rule.start_steps else None
    limit = rule.floor if start is None else max(rule.floor, rule.fraction_of_start * start)

    def message(ep):
        since = f", {fmt(100 * values[ep.first] / start)} % of its start {fmt(start)}" if start else ""
        return f"{rule.metric} fell to {fmt(values[ep.first])} at step {steps[ep.first]} (limit {fmt(limit)}{since})"

    episodes = persistent([v < limit for v in values], rule)
    return _make("entropy-collapse", rule, steps, values, episodes, message, rule.metric, min)


def _spikes(rule_id: str, view: MetricsView, rule) -> list[Alert]:
    out = []
    for name in rule.metrics:
        steps, values = finite_points(view, name)

        def bad(value, base):
            if value <= rule.min_value:
                return False
            median = base.median()
            return value > rule.factor * median and value - median > rule.robust_z * base.sigma(median)

        def bad_vec(v, med, sig):
            return (v > rule.min_value) & (v > rule.factor * med) & (v - med > rule.robust_z * sig)

        flags, medians = baseline_flags(values, rule, bad, bad_vec)

        def message(ep, name=name, steps=steps, values=values, medians=medians):
            median = median_at(medians, ep.first)
            ratio = fmt(values[ep.first] / median) if median else "inf"
            return (
                f"{name} jumped to {fmt(values[ep.first])} at step {steps[ep.first]}, {ratio} x the "
                f"median {fmt(median)} of the previous normal steps (limit {rule.factor} x and "
                f"{rule.robust_z} sigma, {rule.min_count} of {rule.of_last} steps)"
            )

        out += _make(rule_id, rule, steps, values, persistent(flags, rule), message, name, max)
    return out


def _length_clipped(view: MetricsView, rule) -> list[Alert]:
    steps, values = finite_points(view, rule.metric)

    def message(ep):
        return (
            f"{fmt(100 * values[ep.first])} % of responses hit max_response_length at step "
            f"{steps[ep.first]} (limit {fmt(100 * rule.max_ratio)} %, {rule.min_count} of "
            f"{rule.of_last} steps)"
        )

    episodes = persistent([i >= rule.warmup and v > rule.max_ratio for i, v in enumerate(values)], rule)
    return _make("length-clipped", rule, steps, values, episodes, message, rule.metric, max)


def _throughput_drop(view: MetricsView, rule) -> list[Alert]:
    steps, values = finite_points(view, rule.metric)
    flags, medians = baseline_flags(
        values,
        rule,
        lambda v, base: v < (1 - rule.max_drop) * base.median(),
        lambda v, med, sig: v < (1 - rule.max_drop) * med,
    )

    def message(ep):
        median = median_at(medians, ep.first)
        drop = 1 - values[ep.first] / median if median else 0.0
        return (
            f"{rule.metric} dropped {fmt(100 * drop)} % at step {steps[ep.first]} "
            f"({fmt(values[ep.first])} vs the median {fmt(median)} of the previous normal steps; "
            f"limit {fmt(100 * rule.max_drop)} %, {rule.min_count} of {rule.of_last} steps)"
        )

    return _make("throughput-drop", rule, steps, values, persistent(flags, rule), message, rule.metric, min)


def _slow_steps(view: MetricsView, rule) -> list[Alert]:
    steps, values = finite_points(view, rule.metric)
    flags, medians = baseline_flags(
        values,
        rule,
        lambda v, base: v > rule.factor * base.median(),
        lambda v, med, sig: v > rule.factor * med,
    )

    def message(ep):
        median = median_at(medians, ep.first)
        ratio = values[ep.first] / median if median else 0.0
        return (
            f"{rule.metric} is {fmt(ratio)} x its running median since step {steps[ep.first]} "
            f"({fmt(values[ep.first])} s vs {fmt(median)} s over the previous normal steps; limit "
            f"{fmt(rule.factor)} x, {rule.min_count} of {rule.of_last} steps)"
        )

    return _make("slow-steps", rule, steps, values, persistent(flags, rule), message, rule.metric, max)


# --- training collapse: the policy ruined, whatever the job's state (severity error; grpolab.monitor.collapse) ---


def _score_collapse(rule_id: str, view: MetricsView, rule) -> list[Alert]:
    """The reward or a validation accuracy fell to `fraction_of_start` of where it started and stays there: values
    at most that limit at `min_count` of the last `of_last` logged values. The start is the mean of the first
    `start_steps` logged values: the policy before its updates (verl validates before training, and a step's
    rollout comes before its update)."""
    out = []
    for name in view.first_present(rule.metrics):
        steps, values = finite_points(view, name)
        if len(values) <= rule.start_steps:
            continue
        start = sum(values[: rule.start_steps]) / rule.start_steps
        if start < rule.min_start:  # nothing to fall from (a task the model cannot do yet, a signed reward)
            continue
        limit = rule.fraction_of_start * start
        flags = [i >= rule.start_steps and v <= limit for i, v in enumerate(values)]

        def message(ep, name=name, steps=steps, values=values, start=start, limit=limit):
            return (
                f"{name} fell to {fmt(values[ep.first])} at step {steps[ep.first]} from {fmt(start)} at the start "
                f"and stays down: at most {fmt(100 * rule.fraction_of_start)} % of the start (limit {fmt(limit)}, "
                f"{rule.min_count} of {rule.of_last} logged values)"
            )

        out += _make(rule_id, rule, steps, values, persistent(flags, rule), message, name, min)
    return out


def _grad_vanish(view: MetricsView, rule) -> list[Alert]:
    """The gradient norm is zero (at most `max_norm`) at `min_count` of the last `of_last` steps (a norm that is not
    finite is the nan rule's)."""
    steps, values = finite_points(view, rule.metric)
    flags = [v <= rule.max_norm for v in values]

    def message(ep):
        return (
            f"{rule.metric} is {fmt(values[ep.first])} from step {steps[ep.first]} on (at most {rule.max_norm:g} at "
            f"{rule.min_count} of {rule.of_last} steps): no update reaches the weights"
        )

    return _make("grad-vanish", rule, steps, values, persistent(flags, rule), message, rule.metric, max)


def _entropy_pinned(view: MetricsView, rule) -> list[Alert]:
    """The entropy stays within `max_relative_range` of its mean for `window` steps: a sampled policy's mean entropy
    moves from batch to batch (by a few per cent), unless every token is equally likely (its maximum, ln of the
    vocabulary) or certain (zero)."""
    steps, values = finite_points(view, rule.metric)
    flags = [False] * len(values)
    if len(values) >= rule.window:
        # lazy: numpy (only the windowed checks need it; importing the monitor stays light)
        import numpy as np
        from numpy.lib.stride_tricks import sliding_window_view

        windows = sliding_window_view(np.asarray(values, dtype=float), rule.window)
        spread = windows.max(axis=1) - windows.min(axis=1)
        for index in np.flatnonzero(spread <= rule.max_relative_range * np.abs(windows.mean(axis=1))):
            flags[int(index) + rule.window - 1] = True
    episodes = []
    for ep in find_episodes(flags, 1, 1, rule.rearm_steps):
        start = max(0, ep.first - rule.window + 1)  # pinned from where the first still window begins
        episodes.append(Episode(start, ep.first, ep.last, ep.last - start + 1, ep.closed))
    first = values[0] if values else None

    def message(ep):
        value = values[ep.first]
        where = (
            f"above its first value {fmt(first)}: pinned at its maximum, every token equally likely"
            if first is not None and ep.first > 0 and value > first
            else "the policy's distribution no longer changes"
        )
        return (
            f"{rule.metric} stayed at {fmt(value)} (within {rule.max_relative_range:g} of it) for {rule.window} steps "
            f"from step {steps[ep.first]}, {where}"
        )

    return _make("entropy-pinned", rule, steps, values, episodes, message, rule.metric, lambda c: c[-1])


def _kl_explode(view: MetricsView, rule) -> list[Alert]:
    """KL to the reference above `max_value` at `min_count` of the last `of_last` steps (an absolute limit: the
    kl-spike rule finds jumps relative to the run's own KL)."""
    out = []
    for name in rule.metrics:
        steps, values = finite_points(view, name)
        flags = [i >= rule.warmup and v > rule.max_value for i, v in enumerate(values)]

        def message(ep, name=name, steps=steps, values=values):
            return (
                f"{name} reached {fmt(values[ep.first])} at step {steps[ep.first]} and stays above {rule.max_value:g} "
                f"({rule.min_count} of {rule.of_last} steps): the policy diverged from the reference"
            )

        out += _make("kl-explode", rule, steps, values, persistent(flags, rule), message, name, max)
    return out


# rule id -> its check; its thresholds are the field of the same name with `_` for `-` (Thresholds.alerts)
_CHECKS = {
    "nan": _nan,
    "reward-flat": _reward_flat,
    "entropy-collapse": _entropy_collapse,
    "kl-spike": partial(_spikes, "kl-spike"),
    "length-clipped": _length_clipped,
    "grad-spike": partial(_spikes, "grad-spike"),
    "throughput-drop": _throughput_drop,
    "slow-steps": _slow_steps,
    "reward-collapse": partial(_score_collapse, "reward-collapse"),
    "accuracy-collapse": partial(_score_collapse, "accuracy-collapse"),
    "grad-vanish": _grad_vanish,
    "entropy-pinned": _entropy_pinned,
    "kl-explode": _kl_explode,
}
# an asynchronous run's rules (issue 42, grpolab.monitor.alerts_async), handed this module's episode machinery
_KIT = SimpleNamespace(finite_points=finite_points, persistent=persistent, make=_make, fmt=fmt)
_CHECKS.update({rule_id: partial(check, kit=_KIT) for rule_id, check in ASYNC_CHECKS.items()})
ALERT_RULES = tuple(_CHECKS)  # the rule ids, in the order alerts of the same step are listed


def alerts(metrics, thresholds: Thresholds | str | None = None) -> list[Alert]:
    """Every alert (episode) the metrics raise, ordered by step then by rule.

    `metrics`: a MetricsView or anything `load_metrics` accepts (run id, run directory, metrics file).
    `thresholds`: a Thresholds, a path (see load_thresholds), or None for params/base.yaml's `monitor:`.
    """
    view = metrics if isinstance(metrics, MetricsView) else load_metrics(metrics)
    if not isinstance(thresholds, Thresholds):
        thresholds = load_thresholds(thresholds)
    found: list[Alert] = []
    for rule_id, check in _CHECKS.items():
        rule = getattr(thresholds.alerts, rule_id.replace("-", "_"))
        if rule.enabled:
            found += check(view, rule)
    return sorted(found, key=lambda a: (a.step, ALERT_RULES.index(a.rule)))


def group(found) -> list[dict]:
    """Alerts (Alert objects or their dicts) grouped by rule, errors first, then by first step:
    `{rule, severity, count, first, last, ongoing, worst, metrics, messages, advice}` (`ongoing`: the latest
    episode has not ended). The advice appears once per rule."""
    groups: dict[str, dict] = {}
    for a in found:
        a = a.to_dict() if isinstance(a, Alert) else a
        g = groups.setdefault(
            a["rule"],
            {
                "rule": a["rule"],
                "severity": a.get("severity", "warning"),
                "count": 0,
                "first": a["step"],
                "last": a["step"],
                "worst": None,
                "metrics": [],
                "messages": [],
                "advice": ADVICE.get(a["rule"], ""),
            },
        )
        g["count"] += 1
        g["first"] = min(g["first"], a["step"])
        g["last"] = max(g["last"], a.get("end") or a["step"])
        g["ongoing"] = g.get("ongoing", False) or bool(a.get("ongoing"))
        g["messages"].append(a["message"])
        g["metrics"] += [m for m in a["metrics"] if m not in g["metrics"]]
        g["worst"] = _worse(a["rule"], g["worst"], a.get("worst"))
    return sorted(groups.values(), key=lambda g: (g["severity"] != "error", g["first"]))


_LOW_IS_WORSE = {"entropy-collapse", "throughput-drop", "reward-flat", "reward-collapse", "accuracy-collapse"}


def _worse(rule: str, old, new):
    if old is None or isinstance(new, str):
        return new
    if new is None or isinstance(old, str):
        return old
    return min(old, new) if rule in _LOW_IS_WORSE else max(old, new)
