"""Failures that print no error, read from a run's status and metrics (grpolab.monitor.metrics):

- `no-training-step`: the run ended SUCCEEDED without one training step (verl issue 7401: resuming at an epoch
  boundary exits cleanly after 0 steps);
- `reward-constant`: the reward is the same for every sample from the first steps on (exactly 0 or any one value:
  the reward is not wired to the data), from the monitor's own reward-flat alert (grpolab.monitor.alerts) starting
  at the first step, and every sample's score equal (score/min = score/max);
- `training-collapse`: the policy is ruined while the job goes on or ends SUCCEEDED (grpolab.monitor.collapse: an
  error alert, such as a validation accuracy fallen to nothing or a gradient norm of zero, that has not ended at
  the last step): an lr far too high, a diverged update;
- `throughput-collapse`: throughput collapsed and stays down while the run still logs (the monitor's
  throughput-drop alert, still ongoing at the last step);
- `stalled`: the run is RUNNING but its metrics and log have not grown for STALL_STEPS of its own median step time
  (at least STALL_MIN_S): a rank is stuck, the multi-node hang (slime issue 1487, vllm-ascend issue 3413).

    silent_failure(status, view, thresholds, run=None, now=None) -> Failure | None
"""

from __future__ import annotations

import os
import statistics
import time

from grpolab.monitor.alerts import alerts
from grpolab.monitor.collapse import collapse_of
from grpolab.monitor.diagnose import Failure
from grpolab.monitor.figures import candidates

FIRST_STEPS = 5  # "from the first steps on": the reward is flat from the first logged step over at least this many
STALL_STEPS = 5  # a run that logged nothing for this many of its median step times is stalled
STALL_MIN_S = 900.0  # and never before this long (a checkpoint save or a validation pass takes minutes)


def _stalled(status: dict, view, run, now: float | None) -> Failure | None:
    if run is None or status.get("state") != "RUNNING":
        return None
    times = [t for t in view.column("timing_s/step") if t is not None and t > 0] if view.steps else []
    paths = [p for p in (run.metrics_file, run.job_log) if p.exists()]
    if not paths:
        return None
    last = max(os.stat(p).st_mtime for p in paths)
    limit = max(STALL_MIN_S, STALL_STEPS * statistics.median(times)) if times else STALL_MIN_S
    quiet = (now if now is not None else time.time()) - last
    if quiet < limit:
        return None
    step = view.last_step
    return Failure(
        "stalled",
        f"The run is RUNNING but has logged nothing for {quiet / 60:.0f} min"
        + (f" since step {step}" if step is not None else "")
        + (f" (its steps took {statistics.median(times):.0f} s)" if times else "")
        + ": a rank is stuck (a collective that never completes, data loading, a reward call, a dead node).",
        "run `grpolab diagnose` on each rank's own log (a folder of them) to find the rank that stopped; dump its "
        "stacks (`py-spy dump --pid PID` on its node); a collective timeout (trainer.timeout_s) ends a hang with "
        "the rank named",
    )


def silent_failure(status: dict, view, thresholds=None, run=None, now: float | None = None) -> Failure | None:
    """The silent failure a run shows, or None. `status`: the run's record; `view`: its MetricsView, refreshed;
    `run`: its Run (for how long its files have been quiet)."""
    stalled = _stalled(status, view, run, now)
    if stalled is not None:
        return stalled
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
    for name in view.first_present(candidates("reward")):
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
                "check the reward function (the recipe's reward.function; `grpolab data RECIPE` dry-runs it) "
                "against the data: its data_source, the answer format it parses and the ground-truth column",
            )
    collapsed = collapse_of(found)
    if collapsed is not None:
        state_words = {"SUCCEEDED": "ended SUCCEEDED", "RUNNING": "is RUNNING", "STOPPED": "was STOPPED"}
        return Failure(
            "training-collapse",
            f"Training collapsed at step {collapsed.step}, though the run {state_words.get(state, f'is {state}')}: "
            f"{collapsed.reasons()}.",
            next(a.advice for a in found if a.rule == collapsed.rules[0])
            + " Its checkpoints after that step hold the ruined policy: do not resume or export them.",
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
