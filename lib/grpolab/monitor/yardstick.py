"""Is this run as fast as it should be? Its measured step time and tokens/s per device against the cost model's
estimate for the run's own recipe (at the response lengths the run actually has) and against the nearest
published run (params/baselines.yaml), and an alert while steps take more than twice their estimate.

    Yardstick(run).measure(view) -> dict | None     # what `grpolab monitor --json` shows as "yardstick"
    summary_lines(data) -> list[str]                # the lines `grpolab monitor` prints

The estimate needs the run's recipe (runs/<id>/recipe.yaml, written at launch) and the model's facts; the CPU
trainer (train.engine trl, `tiny`) has none: its step is Python overhead around a 126 K-parameter model, not the
FLOPs and bytes the model counts, so no estimate is made and no slow-run alert can fire for it.
"""

from __future__ import annotations

import math
import statistics
from contextlib import suppress

from grpolab import run_folder
from grpolab.plan.baselines import nearest_published_run
from grpolab.problems import InputError, RecipeError
from grpolab.recipe.cards import model_facts, resolve_model
from grpolab.recipe.cost import step_estimate, workload
from grpolab.recipe.loader import load_recipe

SLOW_FACTOR = 2.0  # a step taking more than twice its estimate runs below half the expected throughput
SLOW_STEPS = 3  # that many slow steps in a row open the alert (one slow step is a checkpoint or a hiccup)
CLEAR_STEPS = 3  # that many normal steps in a row end it
WARMUP_STEPS = 2  # the first steps compile graphs and fill caches: never judged
RECENT = 5  # the figures shown are medians of the last RECENT logged steps
STEP, THROUGHPUT = "timing_s/step", "perf/throughput"
RESPONSE, PROMPT = "response_length/mean", "prompt_length/mean"
RULE = "slower-than-estimate"


class Yardstick:
    """The estimate side of one run, read once (the recipe, the model's facts, the nearest published run)."""

    def __init__(self, run) -> None:
        self.run = run
        self._loaded = False
        self.recipe = self.facts = self.baseline = None
        self.why_none: str | None = None
        self._cache: dict[tuple, float] = {}

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        path = run_folder.recipe_file(getattr(self.run, "path", ""))
        if not path.is_file():
            self.why_none = "no recipe.yaml beside the metrics: the run's recipe is unknown"
            return

        try:
            recipe = load_recipe(path)
        except (InputError, RecipeError, OSError) as exc:
            self.why_none = f"the run's recipe.yaml does not load: {str(exc).splitlines()[0]}"
            return
        facts, _ = model_facts(recipe)
        self.recipe, self.facts = recipe, facts
        with suppress(InputError):
            self.baseline = nearest_published_run(recipe, facts.name if facts else None)
        if not recipe.engine.priced:
            self.why_none = (
                "train.engine trl (the CPU trainer): its step time is Python overhead around a tiny model, "
                "not what the cost model counts; no estimate"
            )
        elif facts is None:
            self.why_none = "no model facts here (model.path has no config.json on this machine and no model.card)"

    def estimate(self, response: float | None, prompt: float | None) -> float | None:
        """Seconds per step the model expects at these mean lengths (cached by 2 % buckets of the maximum);
        None when the run has no estimate (`why_none` says why)."""

        self._load()
        if self.why_none is not None:
            return None
        d = self.recipe.data
        bucket = max(d.max_response_length // 50, 1)
        key = (None if response is None else round(response / bucket), None if prompt is None else round(prompt))
        if key not in self._cache:
            r = None if response is None else max(key[0] * bucket, 1)
            self._cache[key] = step_estimate(self.recipe, self.facts, r, key[1]).total
        return self._cache[key]

    def measure(self, view) -> dict | None:
        """The figures and the alert for the metrics read so far (None until a step time is logged)."""
        steps, times = view.series(STEP)
        if not times:
            return None
        self._load()
        tail = times[-RECENT:]
        out: dict = {
            "step_s": statistics.median(tail),
            "tokens_per_device_s": _median_tail(view, THROUGHPUT),
            "at_step": steps[-1],
            "estimate": None,
            "why_no_estimate": self.why_none,
            "published": _published(self.baseline),
            "alert": None,
        }
        if self.why_none is None:
            try:
                self._compare(view, steps, times, out)
            except Exception as exc:  # the monitor must show the run whatever the estimate does
                out["why_no_estimate"] = f"the estimate failed ({type(exc).__name__}: {exc})"
        return out

    def _compare(self, view, steps: list[int], times: list[float], out: dict) -> None:
        """Fill in the estimate at the run's recent mean lengths and the slow-run alert."""

        response, prompt = _median_tail(view, RESPONSE), _median_tail(view, PROMPT)
        est = self.estimate(response, prompt)
        tokens = workload(self.recipe, response, prompt).tokens
        out["estimate"] = {
            "step_s": est,
            "tokens_per_device_s": tokens / est / self.recipe.world_size if est else None,
            "ratio": out["step_s"] / est if est else None,
            "at_mean_response": response,
            "kind": "estimate",
        }
        out["alert"] = self._alert(view, steps, times)

    def _alert(self, view, steps: list[int], times: list[float]) -> dict | None:
        """The last episode of steps slower than SLOW_FACTOR x their estimate (each step judged at its own mean
        response length); `ongoing` until CLEAR_STEPS normal steps in a row."""
        responses = dict(zip(*view.series(RESPONSE)))
        prompts = dict(zip(*view.series(PROMPT)))
        episode, run, clear = None, 0, 0
        for index, (step, seconds) in enumerate(zip(steps, times)):
            if index < WARMUP_STEPS or not math.isfinite(seconds):
                continue
            limit = SLOW_FACTOR * self.estimate(responses.get(step), prompts.get(step))
            if seconds > limit:
                run, clear = run + 1, 0
                if episode is not None and episode["ongoing"]:
                    episode.update(end=step, count=episode["count"] + 1, worst=max(episode["worst"], seconds / limit))
                elif run >= SLOW_STEPS:
                    first = steps[index - SLOW_STEPS + 1]
                    episode = {"first": first, "end": step, "count": run, "worst": seconds / limit, "ongoing": True}
            else:
                run, clear = 0, clear + 1
                if episode is not None and episode["ongoing"] and clear >= CLEAR_STEPS:
                    episode["ongoing"] = False
        if episode is None:
            return None
        if episode["ongoing"]:
            what = f"since step {episode['first']}, {episode['count']} steps took"
        else:
            what = f"steps {episode['first']}-{episode['end']} ({episode['count']}) took"
        return {
            "rule": RULE,
            "severity": "warning",
            "step": episode["first"],
            "end": episode["end"],
            "ongoing": episode["ongoing"],
            "count": episode["count"],
            "message": (
                f"{what} more than {SLOW_FACTOR:g} x the estimate for this recipe (below half the expected "
                "throughput)" + ("" if episode["ongoing"] else "; recovered since")
            ),
            "advice": "look for a stuck or slow rank (grpolab logs RUN), a layout that does not suit the cluster "
            "(grpolab plan RECIPE), host memory swapping, or offload you did not expect",
        }


def _median_tail(view, name: str) -> float | None:
    _, values = view.series(name)
    values = [v for v in values[-RECENT:] if v is not None and math.isfinite(v)]
    return statistics.median(values) if values else None


def _published(b) -> dict | None:
    if b is None:
        return None

    return {
        "name": b.name,
        "model": resolve_model(b.model).card.name,
        "hardware": b.hardware,
        "devices": b.world_size,
        "step_s": b.published.step_s,
        "tokens_per_device_s": b.published.tokens_per_device_s,
        "source": f"{b.source.repo} {b.source.path}",
    }


def summary_lines(data: dict | None) -> list[str]:
    """The yardstick as `grpolab monitor` prints it (nothing before the first logged step time)."""
    if not data:
        return []
    text = f"speed     step {data['step_s']:.3g} s"
    if data.get("tokens_per_device_s"):
        text += f", {data['tokens_per_device_s']:.4g} tokens/s per device"
    if est := data.get("estimate"):
        text += f"; estimate {est['step_s']:.3g} s ({est['ratio']:.2f}x)"
    else:
        text += f"; no estimate: {data.get('why_no_estimate')}"
    if pub := data.get("published"):
        text += f"; published: {pub['model']} on {pub['devices']} x {pub['hardware']}, {pub['step_s']:.0f} s"
    out = [text]
    if alert := data.get("alert"):
        out.append(f"  {alert['severity'].upper()} {alert['rule']}: {alert['message']}")
    return out
