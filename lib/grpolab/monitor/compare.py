"""The regression gate: a run against a baseline over a window of steps (Ascend nightly CI's thresholds).

    compare(run, baseline, steps=None, thresholds=None) -> Comparison

Each figure of `monitor.regression.figures` in params/base.yaml (device memory, throughput, step time,
reward mean) reduces its metric over steps first..last (inclusive; default `regression.steps`, 5-14) in both
runs, then fails when the run moved the wrong way by more than the limit. A metric neither run logs is
`skipped`; a metric only one run logs `fail`s (it cannot be checked). A run with no step in the window fails
the whole gate, and so does a comparison in which no figure was logged by both runs ("nothing to compare": an
empty comparison must not pass; `grpolab compare` exits 1 with that error). A run whose training collapsed
(grpolab.monitor.collapse, judged with its own recipe's thresholds) fails the gate whatever its figures, and a
collapsed baseline is no yardstick: it fails too.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from grpolab.monitor.alerts import alerts, fmt, json_number
from grpolab.monitor.collapse import collapse_of
from grpolab.monitor.metrics import MetricsView, load_metrics
from grpolab.monitor.thresholds import Thresholds, load_thresholds, thresholds_for
from grpolab.recipe.monitor_schema import GateFigure

_REDUCE = {"mean": lambda v: sum(v) / len(v), "max": max, "min": min}


@dataclass
class FigureResult:
    name: str  # key under regression.figures
    label: str
    metric: str
    unit: str
    run: float | None  # the reduced value in the run's window (None: not logged there)
    baseline: float | None
    change: float | None  # run - baseline; a fraction of the baseline when `relative`
    limit: float
    relative: bool
    fails_on: str
    status: str  # "pass" | "fail" | "skipped"
    note: str = ""
    both: bool = False  # both runs logged the metric in the window (NaN/inf included): the figure was compared

    def to_dict(self) -> dict:
        data = asdict(self)
        for key in ("run", "baseline", "change"):
            data[key] = json_number(data[key])
        return data

    def change_text(self) -> str:
        if self.change is None:
            return "-"
        return f"{100 * self.change:+.2f} %" if self.relative else f"{self.change:+.4g}{self._unit()}"

    def limit_text(self) -> str:
        amount = f"{100 * self.limit:.4g} %" if self.relative else f"{self.limit:.4g}{self._unit()}"
        return {"increase": f"<= +{amount}", "decrease": f">= -{amount}", "change": f"within +/-{amount}"}[
            self.fails_on
        ]

    def _unit(self) -> str:
        return f" {self.unit}" if self.unit else ""


@dataclass
class Comparison:
    run: str
    baseline: str
    steps: tuple[int, int]
    run_steps: int  # steps of the run inside the window
    baseline_steps: int
    figures: list[FigureResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # each one fails the gate
    notes: list[str] = field(default_factory=list)  # worth knowing, not failing

    @property
    def passed(self) -> bool:
        return not self.problems and all(f.status != "fail" for f in self.figures)

    @property
    def nothing_to_compare(self) -> bool:
        """Both runs have steps in the window, but no figure of the gate was logged by both: the gate compared
        nothing (a run with no step in the window is that problem instead)."""
        return bool(self.run_steps and self.baseline_steps) and not any(f.both for f in self.figures)

    @property
    def failed_figures(self) -> list[FigureResult]:
        return [f for f in self.figures if f.status == "fail"]

    def to_dict(self) -> dict:
        return {
            "run": self.run,
            "baseline": self.baseline,
            "steps": list(self.steps),
            "run_steps": self.run_steps,
            "baseline_steps": self.baseline_steps,
            "passed": self.passed,
            "nothing_to_compare": self.nothing_to_compare,
            "figures": [f.to_dict() for f in self.figures],
            "problems": list(self.problems),
            "notes": list(self.notes),
        }

    def table(self) -> str:
        """A plain-text table of every compared figure and the verdict."""
        first, last = self.steps
        rows = [("figure", "metric", "run", "baseline", "change", "limit", "result")]
        rows += [
            (
                f.label,
                f.metric,
                fmt(f.run),
                fmt(f.baseline),
                f.change_text(),
                f.limit_text(),
                f.status.upper() if f.status == "fail" else f.status,
            )
            for f in self.figures
        ]
        widths = [max(map(len, column)) for column in zip(*rows)]
        lines = [
            f"compare {self.run}  vs baseline {self.baseline}, steps {first}-{last} "
            f"({self.run_steps} and {self.baseline_steps} steps in the window)",
            "",
        ]
        lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
        lines += [f"  {f.label}: {f.note}" for f in self.figures if f.note]
        lines += [f"problem: {p}" for p in self.problems] + [f"note: {n}" for n in self.notes]
        failed = len(self.failed_figures)
        skipped = sum(f.status == "skipped" for f in self.figures)
        verdict = "NOTHING TO COMPARE" if self.nothing_to_compare else ("PASS" if self.passed else "REGRESSION")
        lines += [
            "",
            f"result: {verdict} ({failed} of {len(self.figures)} figures failed, {skipped} skipped"
            f"{', ' + str(len(self.problems)) + ' problem(s)' if self.problems else ''})",
        ]
        return "\n".join(lines)


def _label(view: MetricsView) -> str:
    return view.run.run_id if view.run is not None else str(view.path)


def _judge(spec: GateFigure, run_value: float, base_value: float) -> tuple[float, bool]:
    """(change, failed) for one figure."""
    change = delta = run_value - base_value
    if spec.relative:
        change = delta / abs(base_value) if base_value else (0.0 if delta == 0 else math.copysign(math.inf, delta))
    moved = {"increase": change, "decrease": -change, "change": abs(change)}[spec.fails_on]
    # A tiny tolerance so that a run compared with itself, or a change of exactly the limit, passes.
    return change, moved > spec.limit + 1e-12


def _figure(name: str, spec: GateFigure, run: MetricsView, base: MetricsView, first: int, last: int) -> FigureResult:
    result = FigureResult(
        name, spec.label, spec.metric, spec.unit, None, None, None, spec.limit, spec.relative, spec.fails_on, "skipped"
    )
    run_all = run.values_between(spec.metric, first, last)
    base_all = base.values_between(spec.metric, first, last)
    result.both = bool(run_all and base_all)
    run_vals = [v for v in run_all if math.isfinite(v)]
    base_vals = [v for v in base_all if math.isfinite(v)]
    reduce = _REDUCE[spec.reduce]
    result.run = reduce(run_vals) if run_vals else None
    result.baseline = reduce(base_vals) if base_vals else None
    if not run_all and not base_all:
        result.note = "logged by neither run in the window: skipped"
        return result
    if len(run_vals) < len(run_all):
        result.status, result.note = (
            "fail",
            f"the run has {len(run_all) - len(run_vals)} NaN/inf value(s) in the window",
        )
        return result
    if base_all and not base_vals:  # logged, but only as NaN/inf: say so, not "not logged by the baseline"
        result.status = "fail"
        result.note = (
            f"the baseline has only NaN/inf values ({len(base_all)}) in the window: cannot be checked; "
            "pick a healthy baseline run or another --steps window"
        )
        return result
    if not run_vals or not base_vals:
        who = "the baseline" if run_vals else "the run"
        other = "the run" if run_vals else "the baseline"
        result.status, result.note = "fail", f"logged by {other} only, not by {who}: cannot be checked"
        return result
    result.change, failed = _judge(spec, result.run, result.baseline)
    result.status = "fail" if failed else "pass"
    if len(base_vals) < len(base_all):
        result.note = f"the baseline has {len(base_all) - len(base_vals)} NaN/inf value(s) in the window (ignored)"
    return result


def compare(
    run, baseline, steps: tuple[int, int] | None = None, thresholds: Thresholds | str | None = None
) -> Comparison:
    """Compare `run` with `baseline` (each a MetricsView or anything `load_metrics` accepts) over steps first..last.

    `steps` defaults to `regression.steps` of the thresholds file (5-14).
    """
    given = thresholds
    if not isinstance(thresholds, Thresholds):
        thresholds = load_thresholds(thresholds)
    gate = thresholds.regression
    first, last = steps if steps is not None else gate.steps
    if first > last:
        raise ValueError(f"steps {first}-{last}: the first step must not be after the last")
    run_view, base_view = load_metrics(run), load_metrics(baseline)  # a MetricsView is refreshed: it may have grown
    result = Comparison(
        _label(run_view),
        _label(base_view),
        (first, last),
        len(run_view.steps_between(first, last)),
        len(base_view.steps_between(first, last)),
    )
    expected = last - first + 1
    for who, view, count in (("run", run_view, result.run_steps), ("baseline", base_view, result.baseline_steps)):
        if count == 0:
            logged = f"it logged steps {min(view.steps)}-{max(view.steps)}" if view.steps else "it logged no steps"
            result.problems.append(
                f"the {who} {_label(view)} has no step in {first}-{last} ({logged}): let it "
                f"reach step {last} or choose other steps with --steps"
            )
        elif count < expected:
            result.notes.append(f"the {who} has {count} of the {expected} steps {first}-{last}")
    for who, view in (("run", run_view), ("baseline", base_view)):
        # each run's health by its own limits (tiny's are wider than a cluster's), unless thresholds were given
        limits = thresholds if given is not None else (thresholds_for(view.run) if view.run else thresholds)
        collapsed = collapse_of(alerts(view, limits)) if view.steps else None
        if collapsed is not None:
            result.problems.append(
                f"the {who} {_label(view)}: {collapsed.text} ({', '.join(collapsed.rules)})"
                + (": a ruined policy passes no gate" if who == "run" else ": pick a healthy baseline")
            )
    result.figures = [_figure(name, spec, run_view, base_view, first, last) for name, spec in gate.figures.items()]
    if result.nothing_to_compare:
        result.problems.insert(0, _nothing_message(gate, run_view, base_view, first, last))
    return result


def _nothing_message(gate, run: MetricsView, base: MetricsView, first: int, last: int) -> str:
    """Why nothing was compared: the gate's metrics, and what each run logged in the window."""

    def logged(view: MetricsView) -> set[str]:
        return {n for n in view.names if view.values_between(n, first, last)}

    mine, theirs = logged(run), logged(base)
    common = sorted(mine & theirs)
    wanted = ", ".join(spec.metric for spec in gate.figures.values())
    shared = f"they share {len(common)} other metric(s) ({', '.join(common[:4])}{' ...' if len(common) > 4 else ''})"
    return (
        f"nothing to compare: no figure of the gate ({wanted}) is logged by both runs in steps {first}-{last}; "
        f"the run logs {len(mine)} metric(s) there, the baseline {len(theirs)}, "
        + (shared if common else "none in common")
        + "; compare runs of the same trainer, or set monitor.regression.figures to metrics both log"
    )
