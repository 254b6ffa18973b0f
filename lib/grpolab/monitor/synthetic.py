"""Synthetic GRPO metrics in verl's format, healthy or with a planted pathology, for tests, benchmarks and
trying the monitor without a cluster.

    records = healthy(steps=60, seed=0)          # [{"step": 1, "data": {...verl names...}}, ...]
    records = plant(records, "entropy-collapse", at=30)
    write_jsonl("metrics.jsonl", records)

A healthy run: reward rising with noise, entropy slowly falling, KL small and growing, gradients below the
clip, few clipped responses, steady throughput (the first step slower: compilation), validation every 10
steps. `plant` changes the records from step `at` on (a sustained pathology, NaN written as null as verl
does) so that exactly the alert of that rule id fires there.
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path

from grpolab.monitor.alerts import ALERT_RULES

PLANTS = ALERT_RULES  # one pathology to plant for each alert rule


def healthy(steps: int = 60, seed: int = 0, extra_metrics: int = 0, val_every: int = 10) -> list[dict]:
    """`steps` records of a healthy GRPO run; `extra_metrics` adds filler metrics (`extra/metric_<i>`)."""
    rng = random.Random(seed)
    records = []
    for step in range(1, steps + 1):
        warm = step == 1
        reward = min(1.0, max(0.0, 0.15 + 0.45 * (1 - math.exp(-step / 25)) + rng.gauss(0, 0.03)))
        length = 220 + 0.5 * step + rng.gauss(0, 8)
        throughput = (600.0 if warm else 1000.0) * (1 + rng.gauss(0, 0.02))
        data = {
            "critic/score/mean": reward,
            "critic/score/max": 1.0,
            "critic/score/min": 0.0,
            "critic/rewards/mean": reward,
            "critic/advantages/mean": rng.gauss(0, 0.01),
            "response_length/mean": length,
            "response_length/max": min(512.0, length * 2),
            "response_length/min": 12.0,
            "response_length/clip_ratio": abs(rng.gauss(0.01, 0.005)),
            "prompt_length/mean": 60.0,
            "actor/pg_loss": rng.gauss(0, 0.02),
            "actor/kl_loss": 0.0008 * math.sqrt(step) * (1 + rng.gauss(0, 0.1)),
            "actor/pg_clipfrac": abs(rng.gauss(0.003, 0.001)),
            "actor/ppo_kl": abs(rng.gauss(0.0005, 0.0002)),
            "actor/entropy": 0.8 * math.exp(-step / 300) * (1 + rng.gauss(0, 0.02)),
            "actor/grad_norm": abs(rng.gauss(0.3, 0.05)),
            "actor/lr": 1e-6,
            "actor/perf/max_memory_allocated_gb": 41.0 + rng.random() * 0.2,
            "timing_s/gen": 6.0 * (1 + rng.gauss(0, 0.02)),
            "timing_s/old_log_prob": 0.8,
            "timing_s/ref": 0.7,
            "timing_s/adv": 0.01,
            "timing_s/update_actor": 2.3,
            "timing_s/step": (16.0 if warm else 10.0) * (1 + rng.gauss(0, 0.02)),
            "perf/total_num_tokens": 64 * 8 * (length + 60),
            "perf/time_per_step": 10.0,
            "perf/throughput": throughput,
            "perf/mfu/actor": 0.31,
        }
        for index in range(extra_metrics):
            data[f"extra/metric_{index}"] = rng.random()
        if val_every and step % val_every == 0:
            data["val-core/arith/acc/mean@1"] = min(1.0, 0.1 + 0.006 * step + rng.gauss(0, 0.02))
        records.append({"step": step, "data": data})
    return records


def _median_before(records: list[dict], name: str, at: int, window: int = 50) -> float:
    values = sorted(
        r["data"][name]
        for r in records
        if at - window <= r["step"] < at and isinstance(r["data"].get(name), (int, float))
    )
    return values[len(values) // 2] if values else 1.0


def plant(records: list[dict], rule: str, at: int) -> list[dict]:
    """A copy of `records` with the pathology of alert `rule` from step `at` on, as a broken run logs it:
    sustained (a run that is back to normal at the next step had noise, which the alerts ignore), spikes
    relative to the run's own recent median, NaN as verl's file logger writes it (null). Works on any
    verl-format records: these synthetic ones and recorded runs (benchmarks/monitor_alerts.py)."""
    if rule not in PLANTS:
        raise ValueError(f"unknown pathology {rule!r}: choose one of {', '.join(PLANTS)}")
    out = copy.deepcopy(records)
    kl = max(_median_before(out, "actor/kl_loss", at), 0.01)
    grad = max(_median_before(out, "actor/grad_norm", at), 1.0)
    for record in out:
        step, data = record["step"], record["data"]
        if rule == "kl-explode" and at - 60 <= step < at and "actor/kl_loss" in data:
            # a climb over 60 steps up to the limit, not a jump (a jump is kl-spike's): 1.05 at `at`
            data["actor/kl_loss"] = 1.05 * 1.1 ** (step - at)
        if step < at or "actor/pg_loss" not in data:  # validation-only lines (step 0) stay as they are
            continue
        if rule == "nan":  # the update diverged and stays diverged
            data["actor/pg_loss"] = None
            data["actor/grad_norm"] = None
        elif rule == "reward-flat":  # every sample of every group scores 1 (too easy): zero advantages
            for name in ("critic/score/mean", "critic/score/max", "critic/score/min"):
                if name in data:
                    data[name] = 1.0
            if "critic/score/std" in data:
                data["critic/score/std"] = 0.0
        elif rule == "reward-collapse":  # the policy scores next to nothing, still varying (not flat)
            data["critic/score/mean"] = 0.002 + 0.004 * (step % 3)
        elif rule == "accuracy-collapse":  # validation at every step from `at` on, and the policy answers nothing
            data["val-core/arith/acc/mean@1"] = 0.0
        elif rule == "grad-vanish":  # the weights saturated: no gradient
            data["actor/grad_norm"] = 0.0
        elif rule == "entropy-pinned":  # every token equally likely: ln(vocabulary), whatever was sampled
            data["actor/entropy"] = math.log(18)
        elif rule == "kl-explode":  # the policy drifts away for good: above the limit from `at`, climbing
            data["actor/kl_loss"] = min(8.0, 1.05 * 1.1 ** (step - at))
        elif rule == "entropy-collapse":
            data["actor/entropy"] = 0.004 + 0.001 * (step % 3)
        elif rule == "kl-spike" and step < at + 8:  # the policy runs away from the reference for 8 steps
            data["actor/kl_loss"] = 40 * kl
        elif rule == "length-clipped":
            data["response_length/clip_ratio"] = 0.8
            if "response_length/max" in data:
                data["response_length/max"] = max(data["response_length/max"], data.get("response_length/mean", 0))
        elif rule == "grad-spike" and step < at + 5:
            data["actor/grad_norm"] = 100 * grad
        elif rule == "throughput-drop":  # a 10 x drop in tokens/s/device (the step time is slow-steps' plant)
            data["perf/throughput"] *= 0.1
        elif rule == "slow-steps" and "timing_s/step" in data:  # steps take 3 x as long from `at` on
            data["timing_s/step"] *= 3.0
        # an asynchronous run's (issue 42): the metrics verl's V1 trainer logs, from `at` on
        elif rule == "staleness":  # samples 12 versions old (the bound: 8)
            data["training/off_policy/trajectory_staleness/max"] = 12.0
        elif rule == "trainer-starved" and "timing_s/step" in data:  # waits 80 % of an asynchronous step
            data["training/off_policy/trajectory_staleness/mean"] = 1.0
            data["timing_s/gen"] = 0.8 * data["timing_s/step"]
        elif rule == "is-ratio-drift":  # the rollout and the training policy part ways
            data["rollout_corr/rollout_is_mean"] = 1.6
        elif rule == "rollout-idle" and "timing_s/step" in data:  # stale samples dropped, the trainer never waits
            data["training/off_policy/evicted_samples"] = 32.0
            data["timing_s/gen"] = 0.01 * data["timing_s/step"]
    return out


def write_jsonl(path: str | Path, records: list[dict], append: bool = False) -> Path:
    """Write records as verl's file logger does: one `json.dumps` line each (NaN/inf as NaN/Infinity)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a" if append else "w") as handle:
        handle.writelines(json.dumps(record) + "\n" for record in records)
    return path


def console_lines(records: list[dict], numpy_repr: bool = True, prefix: str = "(TaskRunner pid=4242) ") -> list[str]:
    """The same records as verl's console logger prints them (numpy 2 reprs, Ray's actor prefix)."""
    lines = []
    for record in records:
        parts = [f"step:{record['step']}"]
        for name, value in record["data"].items():
            text = repr(float(value)) if isinstance(value, float) else repr(value)
            if numpy_repr:
                text = f"np.float64({text})" if isinstance(value, float) else f"np.int64({text})"
            parts.append(f"{name}:{text}")
        lines.append(prefix + " - ".join(parts))
    return lines
