"""The figures a run is judged by, named once: KEY_METRICS (what the monitor shows and plots, in reading order)
and the headline pair of every progress line and outcome, reward and validation accuracy.

    headline_names(view) -> {"reward": "critic/score/mean", "val_acc": "val-core/arith/acc/mean@1"}
    latest_headline(view) -> {"reward": 0.41, "val_acc": 0.3}          the latest logged values
    first_and_last(view)  -> {"last_step": 30, "reward": {"first", "last", "first_step", "last_step"}, ...}
    steps_text(view)      -> "30 steps"                                       how far a run got, in every chart

A figure a run never logged is absent from these dicts.
"""

from __future__ import annotations

# The GRPO figures the monitor shows and plots, in reading order: (label, verl metric names). The first name
# a run logs is the one shown; the val-core entry is a prefix because the names carry the data source.
KEY_METRICS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("reward", ("critic/score/mean",)),
    ("val accuracy", ("val-core/",)),
    ("response length", ("response_length/mean",)),
    ("length clip ratio", ("response_length/clip_ratio",)),
    ("kl", ("actor/kl_loss", "critic/kl")),
    ("entropy", ("actor/entropy",)),
    ("pg clip fraction", ("actor/pg_clipfrac",)),
    ("grad norm", ("actor/grad_norm",)),
    ("throughput (tok/s/dev)", ("perf/throughput",)),
    ("step time (s)", ("timing_s/step",)),
    ("device memory (GB)", ("actor/perf/max_memory_allocated_gb",)),
    # an asynchronous run's (issue 42; verl's V1 trainer logs them, a synchronous run has none but staleness 0)
    ("staleness (versions)", ("training/off_policy/trajectory_staleness/mean",)),
    ("importance ratio", ("rollout_corr/rollout_is_mean",)),
)

# The headline figures: short name (progress lines, outcomes, JSON) -> the KEY_METRICS label they come from.
HEADLINE = {"reward": "reward", "val_acc": "val accuracy"}
STEP_TIME = "step time (s)"  # the KEY_METRICS entry a progress line's remaining time is estimated from

_CANDIDATES = dict(KEY_METRICS)


def candidates(label: str) -> tuple[str, ...]:
    """The verl metric names (or name prefixes) of a KEY_METRICS label."""
    return _CANDIDATES[label]


def headline_names(view) -> dict[str, str]:
    """{short name: the metric this run logs for it}: the first candidate logged; for validation accuracy, the
    first data source's `mean@N` figure that holds a value."""
    out: dict[str, str] = {}
    if view is None:
        return out
    for short, label in HEADLINE.items():
        for name in view.first_present(candidates(label)):
            if view.latest(name) is not None:
                out[short] = name
                break
    return out


def latest_headline(view) -> dict[str, float]:
    """{short name: the latest logged value} of the headline figures."""
    return {short: view.latest(name)[1] for short, name in headline_names(view).items()}


def first_and_last(view) -> dict:
    """The last step, and for each headline figure its first and last logged values with their steps."""
    if view is None:
        return {}
    out: dict = {"last_step": view.last_step}
    for short, name in headline_names(view).items():
        steps, values = view.series(name)
        out[short] = {"first": values[0], "last": values[-1], "first_step": steps[0], "last_step": steps[-1]}
    return out


def steps_text(view) -> str:
    """How far a run got, the same in the dashboard's picture and the comparison chart: its last step ("1 step",
    "1200 steps"; "0 steps" while only the validation before training is logged, "no steps" before anything is). A
    count of logged lines said "1 steps" where the comparison said "0 steps" for the same run."""
    last = view.last_step if view is not None and view.steps else None
    if last is None:
        return "no steps"
    return f"{last} step{'' if last == 1 else 's'}"
