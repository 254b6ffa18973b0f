"""The cost model (lib/grpolab/recipe/cost.py) against the published runs of params/baselines.yaml.

Prints, for every run, predicted / published step time, tokens/s per device and every phase the source splits
out, whether the run was used to fit its hardware profile's efficiency constants (`fit`) or held out, and the
worst ratio of each group. `--fit` searches the constants of each hardware profile (compute_efficiency,
bandwidth_efficiency, collective_latency_us; a grid, by coordinate descent from the profile's values) and the
model-wide FORWARD_ONLY_EFFICIENCY that best match the `fit` runs (least squares on the log of predicted /
published, step and phases alike) and prints them, with the model-wide DECODE_STEP_S; params/hardware/ and
grpolab/recipe/cost.py hold the values it found. Held-out runs are never looked at by the fit. `--markdown`
prints the README's calibration table (tests/test_cost.py keeps the two in step).

    .venv/bin/python benchmarks/calibration.py [--fit | --markdown]
"""

from __future__ import annotations

import argparse
import math
import sys

from grpolab.plan.baselines import Baseline, baselines, predict, recipe_of
from grpolab.recipe.cards import model_facts
from grpolab.recipe.cost import StepEstimate, step_estimate

BAND = 2.0  # the model's promise: every run within a factor of 2, overall and per phase
GRID = {
    # at most half of peak: no published large-model MFU is higher
    "compute_efficiency": (
        0.005,
        0.0075,
        0.01,
        0.015,
        0.02,
        0.03,
        0.05,
        0.08,
        0.1,
        0.12,
        0.15,
        0.2,
        0.25,
        0.3,
        0.35,
        0.4,
        0.45,
        0.5,
    ),
    "bandwidth_efficiency": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9),
    "collective_latency_us": (5, 10, 15, 20, 25, 30, 40, 60, 80, 100, 150, 200, 300),
}


def ratios(b: Baseline, e: StepEstimate) -> dict[str, float]:
    """predicted / published: "step", "tokens/s/device" and each published phase."""
    out = {"step": e.total / b.published.step_s}
    if b.published.tokens_per_device_s:
        out["tokens/s/device"] = e.tokens_per_device_s(b.world_size) / b.published.tokens_per_device_s
    phases = e.phases()
    for name, seconds in b.published.phases.items():
        out[name] = phases.get(name, 0.0) / seconds
    return out


def table(runs: list[Baseline]) -> float:
    """Print predicted / published per run and phase; return the worst factor (max of r and 1/r)."""
    worst = 1.0
    for use in ("fit", "held-out"):
        print(f"\n{use} runs (predicted / published):")
        for b in (b for b in runs if b.use == use):
            e = predict(b)
            r = ratios(b, e)
            phases = e.phases()
            cells = [f"step {e.total:.0f} / {b.published.step_s:.0f} s = {r['step']:.2f}"]
            if "tokens/s/device" in r:
                cells.append(f"tokens/s/device {r['tokens/s/device']:.2f}")
            for name in b.published.phases:
                cells.append(f"{name} {phases.get(name, 0):.0f} / {b.published.phases[name]:.0f} = {r[name]:.2f}")
            unpublished = [f"{k} {v:.0f}" for k, v in phases.items() if k not in b.published.phases]
            print(f"  {b.name} ({b.hardware}, {b.world_size} devices)")
            print("    " + "; ".join(cells))
            print(f"    not published, predicted: {', '.join(unpublished) or '-'} s")
            factor = max(max(v, 1 / v) for v in r.values() if v > 0)
            worst = max(worst, factor)
            flag = "" if factor <= BAND else f"   <-- outside the factor-{BAND:g} band"
            print(f"    worst factor {factor:.2f}{flag}")
    return worst


FORWARD_ONLY = (0.3, 0.4, 0.5, 0.6, 0.7, 0.85, 1.0)  # the model-wide constants, fitted with the profiles
DECODE_STEP = (0.0, 0.002, 0.005, 0.01, 0.02)
ASYNC_TAIL = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)  # fitted last, on the async `fit` runs alone


def _loss(prepared: list, constants: dict, model_wide: tuple[float, float], async_tail: float = 0.0) -> float:
    forward_only, decode_step = model_wide
    total = 0.0
    for b, recipe, facts in prepared:
        r2 = recipe.model_copy(update={"cluster": recipe.cluster.model_copy(update=constants)})
        e = step_estimate(r2, facts, forward_only=forward_only, decode_step=decode_step, async_tail=async_tail)
        for value in ratios(b, e).values():
            if value > 0:
                total += math.log(value) ** 2
    return total


def _fit_profile(prepared: list, model_wide: tuple[float, float]) -> tuple[float, dict]:
    """Coordinate descent over GRID from the profile's current constants: each constant in turn takes its best
    grid value with the others held, until no constant moves."""
    recipe = prepared[0][1]
    constants = {name: getattr(recipe.cluster, name) for name in GRID}
    best = _loss(prepared, constants, model_wide)
    for _ in range(6):
        moved = False
        for name, values in GRID.items():
            for value in values:
                trial = {**constants, name: value}
                loss = _loss(prepared, trial, model_wide)
                if loss < best - 1e-9:
                    best, constants, moved = loss, trial, True
        if not moved:
            break
    return best, constants


def fit(runs: list[Baseline]) -> None:
    """The model-wide FORWARD_ONLY_EFFICIENCY and DECODE_STEP_S and, per hardware profile, the constants of GRID
    that minimise the loss on the `fit` runs; a held-out run is dropped before anything of it is read."""
    profiles: dict[str, list] = {}
    asynchronous: list = []  # fit ASYNC_TAIL alone, with everything else as fitted on the synchronous runs
    for b in (b for b in runs if b.use == "fit"):
        recipe = recipe_of(b)
        into = asynchronous if recipe.schedule.mode != "sync" else profiles.setdefault(b.hardware, [])
        into.append((b, recipe, model_facts(recipe)[0]))
    results = {}
    for model_wide in ((f, d) for f in FORWARD_ONLY for d in DECODE_STEP):
        fits = {name: _fit_profile(prepared, model_wide) for name, prepared in sorted(profiles.items())}
        results[model_wide] = (sum(loss for loss, _ in fits.values()), fits)
    model_wide = min(results, key=lambda f: results[f][0])
    total, fits = results[model_wide]
    print(f"FORWARD_ONLY_EFFICIENCY {model_wide[0]}, DECODE_STEP_S {model_wide[1]} (total loss {total:.3f})")
    for name, (loss, constants) in fits.items():
        used = ", ".join(b.name for b, _, _ in profiles[name])
        print(
            f"{name}: fitted on {used}: " + ", ".join(f"{k} {v}" for k, v in constants.items()) + f" (loss {loss:.3f})"
        )
    if asynchronous:
        losses = {}
        for tail in ASYNC_TAIL:
            losses[tail] = sum(
                _loss([run], fits[run[0].hardware][1], model_wide, tail) if run[0].hardware in fits else 0.0
                for run in asynchronous
            )
        best = min(losses, key=lambda t: (losses[t], t))
        used = ", ".join(b.name for b, _, _ in asynchronous)
        print(f"ASYNC_TAIL {best} (loss {losses[best]:.3f}), fitted on {used}")


def markdown(runs: list[Baseline]) -> str:
    """The README's table: per run, estimate / published for the step and each published phase, fit or held out,
    and the worst factor (max of r and 1/r), then the worst over every run."""
    lines = [
        "| run | hardware | devices | use | step: estimate / published | phases: estimate / published | worst |",
        "|---|---|---|---|---|---|---|",
    ]
    worst = 1.0
    for b in sorted(runs, key=lambda b: (b.use != "fit", b.hardware, b.name)):
        e = predict(b)
        r = ratios(b, e)
        phases = e.phases()
        cells = [
            f"{name} {phases.get(name, 0):.0f} / {s:.0f} s = {r[name]:.2f}" for name, s in b.published.phases.items()
        ]
        factor = max(max(v, 1 / v) for v in r.values() if v > 0)
        worst = max(worst, factor)
        lines.append(
            f"| {b.name} | {b.hardware} | {b.world_size} | {b.use} | {e.total:.0f} / {b.published.step_s:g} s = "
            f"{r['step']:.2f} | {'; '.join(cells) or '-'} | {factor:.2f} |"
        )
    lines.append(f"\nWorst factor over every run and phase: {worst:.2f} (the band is {BAND:g}).")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="search each profile's constants on its fit runs")
    parser.add_argument("--markdown", action="store_true", help="print the README's table")
    args = parser.parse_args()
    runs = list(baselines())
    if args.fit:
        fit(runs)
        return 0
    if args.markdown:
        print(markdown(runs))
        return 0
    worst = table(runs)
    print(f"\nworst factor over every run and phase: {worst:.2f} (the band is {BAND:g})")
    return 0 if worst <= BAND else 1


if __name__ == "__main__":
    sys.exit(main())
