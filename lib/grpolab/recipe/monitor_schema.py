"""The `monitor:` section of a recipe: thresholds of the health alerts and of the regression gate.

Strict pydantic models with NO defaults (the numbers live in params/base.yaml, section `monitor:`, and a recipe
overrides what fits it, e.g. `tiny`'s small noisy batches). grpolab.recipe.schema uses them as `Recipe.monitor`;
grpolab.monitor.thresholds loads them on their own (from a recipe, a run's recipe.yaml or a thresholds file).
This module imports nothing from grpolab so the recipe schema can use it without importing the monitor.

Rule fields are the rule ids with `_` for `-` (`kl_spike` is the `kl-spike` rule). Shared fields:
  enabled       false turns the rule off
  severity      `error` (the run is broken) or `warning` (worth a look)
  warmup        logged steps the rule ignores at the start (compilation, first batches)
  min_count, of_last   persistence: the condition must hold at `min_count` of the last `of_last` logged steps
  rearm_steps   an episode ends after this many normal steps in a row; the next episode is a new alert
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
NonNegativeFloat = Annotated[float, Field(ge=0.0)]
Steps = Annotated[int, Field(ge=1)]
Count = Annotated[int, Field(ge=0)]
MetricName = Annotated[str, Field(min_length=1)]
Severity = Literal["error", "warning"]


class _Strict(BaseModel):
    # frozen: thresholds are read once and shared; a rule must not change them behind another rule's back.
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Persistent(_Strict):
    enabled: bool
    severity: Severity
    min_count: Steps = Field(description="the condition holds at this many of the last `of_last` logged steps")
    of_last: Steps
    rearm_steps: Steps = Field(description="normal steps in a row that end an episode")

    @model_validator(mode="after")
    def _count_fits(self):
        if self.min_count > self.of_last:
            raise ValueError(f"min_count ({self.min_count}) must be <= of_last ({self.of_last})")
        return self


class NanRule(_Strict):
    enabled: bool
    severity: Severity
    metrics: list[MetricName] = Field(min_length=1)


class RewardFlatRule(_Strict):
    enabled: bool
    severity: Severity
    metric: MetricName
    window: Steps
    min_range: NonNegativeFloat
    rearm_steps: Steps


class EntropyCollapseRule(_Persistent):
    metric: MetricName
    floor: NonNegativeFloat
    fraction_of_start: Fraction
    start_steps: Steps


class SpikeRule(_Persistent):
    metrics: list[MetricName] = Field(min_length=1)
    factor: Annotated[float, Field(gt=1.0)]
    robust_z: NonNegativeFloat = Field(description="and this many robust standard deviations (1.4826 MAD) above")
    window: Steps
    warmup: Count
    min_value: NonNegativeFloat


class LengthClippedRule(_Persistent):
    metric: MetricName
    max_ratio: Fraction
    warmup: Count


class ThroughputDropRule(_Persistent):
    metric: MetricName
    max_drop: Annotated[float, Field(gt=0.0, lt=1.0)]
    window: Steps
    warmup: Count


class SlowStepsRule(_Persistent):
    metric: MetricName
    factor: Annotated[float, Field(gt=1.0)] = Field(description="a step this many times its running median is slow")
    window: Steps
    warmup: Count


class ScoreCollapseRule(_Persistent):
    metrics: list[MetricName] = Field(min_length=1, description="a name, or a prefix ending in '/' (val-core/)")
    start_steps: Steps = Field(description="the start: the mean of this many first logged values")
    min_start: NonNegativeFloat = Field(description="a start below this has nothing to fall from")
    fraction_of_start: Fraction


class GradVanishRule(_Persistent):
    metric: MetricName
    max_norm: NonNegativeFloat = Field(description="a norm at most this is zero: no update reaches the weights")


class EntropyPinnedRule(_Strict):
    enabled: bool
    severity: Severity
    metric: MetricName
    window: Annotated[int, Field(ge=2)]
    max_relative_range: NonNegativeFloat = Field(
        description="max - min over `window` steps at most this share of their mean = pinned"
    )
    rearm_steps: Steps


class KlExplodeRule(_Persistent):
    metrics: list[MetricName] = Field(min_length=1)
    max_value: NonNegativeFloat
    warmup: Count


class StalenessRule(_Persistent):
    metric: MetricName
    max_versions: NonNegativeFloat = Field(description="a trained sample lags its policy by more: an alert")
    warmup: Count


class TrainerStarvedRule(_Persistent):
    metric: MetricName = Field(description="the trainer's wait for samples")
    step_metric: MetricName
    max_share: Fraction = Field(description="of an asynchronous step spent waiting: above it, an alert")
    warmup: Count


class IsRatioDriftRule(_Persistent):
    metric: MetricName = Field(description="the mean importance-sampling weight (1: the policies agree)")
    max_drift: NonNegativeFloat
    warmup: Count


class RolloutIdleRule(_Persistent):
    metric: MetricName = Field(description="samples dropped as stale in a step")
    wait_metric: MetricName
    step_metric: MetricName
    min_wait_share: Fraction = Field(description="the trainer waits less than this share of the step")
    warmup: Count


class AlertRules(_Strict):
    nan: NanRule
    reward_flat: RewardFlatRule
    entropy_collapse: EntropyCollapseRule
    kl_spike: SpikeRule
    length_clipped: LengthClippedRule
    grad_spike: SpikeRule
    throughput_drop: ThroughputDropRule
    slow_steps: SlowStepsRule
    reward_collapse: ScoreCollapseRule
    accuracy_collapse: ScoreCollapseRule
    grad_vanish: GradVanishRule
    entropy_pinned: EntropyPinnedRule
    kl_explode: KlExplodeRule
    # an asynchronous run's (issue 42, grpolab.monitor.alerts_async)
    staleness: StalenessRule
    trainer_starved: TrainerStarvedRule
    is_ratio_drift: IsRatioDriftRule
    rollout_idle: RolloutIdleRule


class GateFigure(_Strict):
    """One compared figure: `reduce` the metric over the step window in both runs, then compare."""

    label: str = Field(min_length=1)
    metric: MetricName
    reduce: Literal["mean", "max", "min"]
    fails_on: Literal["increase", "decrease", "change"]
    limit: NonNegativeFloat
    relative: bool
    unit: str


class Regression(_Strict):
    steps: tuple[int, int]
    figures: dict[str, GateFigure] = Field(min_length=1)

    @field_validator("steps")
    @classmethod
    def _steps_order(cls, value: tuple[int, int]) -> tuple[int, int]:
        first, last = value
        if first < 0 or last < first:
            raise ValueError(f"steps must be [first, last] with 0 <= first <= last, got {list(value)}")
        return value


class NodeRules(_Strict):
    """The alerts on per-node telemetry (grpolab.monitor.nodes), each naming the node."""

    enabled: bool
    window: Steps = Field(description="the last samples of each node that are looked at")
    min_samples: Steps = Field(description="a node with fewer samples than this raises nothing yet")
    straggler_ratio: Fraction = Field(description="a node whose median utilisation is below this share of the others'")
    straggler_min_util: NonNegativeFloat = Field(description="... when the others' median is at least this (%)")
    device_memory_fraction: Fraction = Field(description="device memory used at or above this share is near its limit")
    creep_horizon_s: Annotated[float, Field(gt=0)] = Field(
        description="device memory rising steadily to reach device_memory_fraction within this many seconds"
    )
    creep_min_rise: Fraction = Field(description="... having risen at least this share of the total over the window")
    host_ram_fraction: Fraction = Field(description="host memory used (total - available) at or above this share")
    min_count: Steps = Field(description="a limit counts when it holds at min_count of the last of_last samples")
    of_last: Steps

    @model_validator(mode="after")
    def _count_fits(self):
        if self.min_count > self.of_last:
            raise ValueError(f"min_count ({self.min_count}) must be <= of_last ({self.of_last})")
        return self


class Monitor(_Strict):
    """A recipe's `monitor:` section."""

    alerts: AlertRules
    regression: Regression
    # a run recorded before per-node telemetry has no `nodes:` in its recipe.yaml: base.yaml's then apply
    nodes: NodeRules | None = None
