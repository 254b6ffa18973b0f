"""Thresholds for the health alerts and the regression gate: one strict schema, one YAML file.

The numbers live in params/monitor/health.yaml (documented there, value by value); this module only says
which keys exist and what each may hold. Nothing has a default here on purpose: "defaults live in one place
only", so a key missing from the file is an error, exactly like a misspelled one (`extra="forbid"`).

    load_thresholds(path=None) -> Thresholds     # None: params/monitor/health.yaml
    ThresholdsError                               # names the file, the key and how to fix it

Rule ids (`nan`, `reward-flat`, ...) are used as YAML keys as they are, so a user reading an alert can find
its thresholds by searching the file for the rule id.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Annotated, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from grpolab.paths import params_dir

Fraction = Annotated[float, Field(ge=0.0, le=1.0)]
PositiveFloat = Annotated[float, Field(gt=0.0)]
NonNegativeFloat = Annotated[float, Field(ge=0.0)]
Steps = Annotated[int, Field(ge=1)]
MetricName = Annotated[str, Field(min_length=1)]


def default_path() -> Path:
    """params/monitor/health.yaml under the project's params directory ($GRPOLAB_PARAMS moves it)."""
    return params_dir() / "monitor" / "health.yaml"


class ThresholdsError(ValueError):
    """The thresholds file is missing, unreadable or does not fit the schema (message: file, key, fix)."""


class _Strict(BaseModel):
    # frozen: thresholds are read once and shared; a rule must not change them behind another rule's back.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)


# --- health alerts ---------------------------------------------------------------------------------------


class NanRule(_Strict):
    enabled: bool
    metrics: list[MetricName] = Field(min_length=1)


class RewardFlatRule(_Strict):
    enabled: bool
    metric: MetricName
    window: Steps
    min_range: NonNegativeFloat
    rearm_steps: Steps


class EntropyCollapseRule(_Strict):
    enabled: bool
    metric: MetricName
    floor: NonNegativeFloat
    fraction_of_start: Fraction
    start_steps: Steps
    patience: Steps
    rearm_steps: Steps


class KlSpikeRule(_Strict):
    enabled: bool
    metrics: list[MetricName] = Field(min_length=1)
    factor: Annotated[float, Field(gt=1.0)]
    window: Steps
    min_value: NonNegativeFloat


class LengthClippedRule(_Strict):
    enabled: bool
    metric: MetricName
    max_ratio: Fraction
    patience: Steps
    rearm_steps: Steps


class GradSpikeRule(_Strict):
    enabled: bool
    metric: MetricName
    factor: Annotated[float, Field(gt=1.0)]
    window: Steps
    min_value: NonNegativeFloat


class ThroughputDropRule(_Strict):
    enabled: bool
    metric: MetricName
    max_drop: Annotated[float, Field(gt=0.0, lt=1.0)]
    window: Steps
    patience: Steps
    rearm_steps: Steps


class AlertRules(_Strict):
    nan: NanRule
    reward_flat: RewardFlatRule = Field(alias="reward-flat")
    entropy_collapse: EntropyCollapseRule = Field(alias="entropy-collapse")
    kl_spike: KlSpikeRule = Field(alias="kl-spike")
    length_clipped: LengthClippedRule = Field(alias="length-clipped")
    grad_spike: GradSpikeRule = Field(alias="grad-spike")
    throughput_drop: ThroughputDropRule = Field(alias="throughput-drop")


# --- regression gate ---------------------------------------------------------------------------------------


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


class Thresholds(_Strict):
    alerts: AlertRules
    regression: Regression
    # Where these came from (set by load_thresholds): reports name the file. Private, so not a YAML key.
    _source: str = PrivateAttr(default="")

    @property
    def source(self) -> str:
        return self._source


# --- loading -----------------------------------------------------------------------------------------------


def _valid_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The pydantic model that owns the key at `loc` (for suggesting the closest valid key)."""
    model: type[BaseModel] = Thresholds
    parts, i = loc[:-1], 0
    while i < len(parts):
        fields = {f.alias or n: f for n, f in model.model_fields.items()}
        field = fields.get(parts[i])
        if field is None:
            return None
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model, i = annotation, i + 1
        elif get_origin(annotation) is dict:
            # a mapping of free names (regression.figures.<name>): skip the name, land on the value's model
            model, i = get_args(annotation)[1], i + 2
        else:
            return None
    return model


def _explain(error: dict, path: Path) -> str:
    loc = tuple(str(p) for p in error["loc"])
    key = ".".join(loc) or "(top level)"
    kind = error["type"]
    if kind == "extra_forbidden":
        model = _model_at(loc)
        valid = _valid_keys(model) if model else []
        close = difflib.get_close_matches(loc[-1], valid, n=1)
        fix = f"did you mean '{close[0]}'?" if close else f"valid keys here: {', '.join(valid)}"
        return f"{path}: unknown key '{key}': {fix}"
    if kind == "missing":
        return f"{path}: missing key '{key}': add it (every threshold is set in this file, there are no hidden defaults)"
    value = error.get("input")
    return f"{path}: key '{key}' = {value!r}: {error['msg']}; fix the value in the file"


def load_thresholds(path: str | Path | None = None) -> Thresholds:
    """Read and validate a thresholds file (default params/monitor/health.yaml).

    Raises ThresholdsError with one line per problem, each naming the file, the dotted key and the fix.
    """
    path = Path(path) if path is not None else default_path()
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ThresholdsError(f"{path}: no such thresholds file; pass an existing YAML file "
                              f"(the project's is {default_path()})") from None
    except OSError as exc:
        raise ThresholdsError(f"{path}: cannot read the thresholds file: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise ThresholdsError(f"{path}: not valid YAML{at}: {getattr(exc, 'problem', exc)}; fix the syntax") from None
    if not isinstance(data, dict):
        raise ThresholdsError(f"{path}: expected a mapping with keys 'alerts' and 'regression', "
                              f"got {type(data).__name__}; see params/monitor/health.yaml for the layout")
    try:
        thresholds = Thresholds.model_validate(data)
    except ValidationError as exc:
        lines = [_explain(err, path) for err in exc.errors()]
        raise ThresholdsError("\n".join(lines)) from None
    thresholds._source = str(path)
    return thresholds
