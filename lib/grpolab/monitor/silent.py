"""Failures that print no error, read from a run's status and metrics (grpolab.monitor.metrics):

- `no-training-step`: the run ended SUCCEEDED without one training step (verl issue 7401: resuming at an epoch
  boundary exits cleanly after 0 steps);
- `reward-constant`: the reward is the same for every sample from the first steps on (exactly 0 or any one value:
  the reward is not wired to the data), from the monitor's own reward-flat alert (grpolab.monitor.alerts) starting
  at the first step, and every sample's score equal (score/min = score/max);
- `throughput-collapse`: throughput collapsed and stays down while the run still logs (the monitor's
  throughput-drop alert, still ongoing at the last step).

    silent_failure(status, view, thresholds) -> Failure | None
"""

from __future__ import annotations

from grpolab.monitor.alerts import alerts
from grpolab.monitor.diagnose import Failure
from grpolab.monitor.figures import KEY_METRICS

FIRST_STEPS = 5  # "from the first steps on": the reward is flat from the first logged step over at least this many


def _reward_names() -> tuple[str, ...]:
    return dict(KEY_METRICS)["reward"]


def silent_failure(status: dict, view, thresholds=None) -> Failure | None:
    """The silent failure a run shows, or None. `status`: the run's record; `view`: its MetricsView, refreshed."""
    state = status.get("state")
    steps = view.steps
    if state == "SUCCEEDED" and not steps:
        return Failure(
            "no-training-step",
            "The run ended SUCCEEDED without a single training step: nothing was trained (verl issue 7401: a resume "
            "at an epoch boundary exits cleanly after 0 steps; also a total_steps or total_epochs already reached).",
            "check trainer.total_steps / trainer.total_epochs against the checkpoint it resumed from; `grpolab resume "
            "RUN` refuses a resume with nothing left to train; start a new run or raise the budget",
        )
    if not steps:
        return None
    found = alerts(view, thresholds)
    first = steps[0]
    for name in view.first_present(_reward_names()):
        low, high = view.column(name.replace("/mean", "/min")), view.column(name.replace("/mean", "/max"))
        values = [v for v in view.column(name) if v is not None]
        if len(values) < FIRST_STEPS:
            continue
        flat = any(a.rule == "reward-flat" and a.step == first for a in found)
        every_sample = any(v is not None for v in low) and all(
            lo == hi for lo, hi in zip(low, high) if lo is not None and hi is not None
        )
        if len(set(values)) == 1 or (flat and every_sample):
            value = values[0]
            return Failure(
                "reward-constant",
                f"The reward is {value:g} for every sample from step {first} on ({name} over {len(values)} steps): "
                "the reward is not wired to the data, so GRPO's advantages are zero and nothing is learned.",
                "check the reward function against the data: its data_source (custom_reward_function.path / .name), "
                "the answer format it parses and the ground-truth column; score a few samples by hand",
            )
    drop = [a for a in found if a.rule == "throughput-drop" and a.ongoing]
    if drop:
        a = drop[-1]
        return Failure(
            "throughput-collapse",
            f"Throughput collapsed at step {a.step} and has not recovered while the run still logs: {a.message}.",
            a.advice,
        )
    return None
