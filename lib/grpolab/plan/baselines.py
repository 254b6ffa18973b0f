"""Published GRPO runs (params/baselines.yaml) as facts: read, turned into recipes, predicted by the one cost
model, and the nearest one to a recipe found (same model, then same hardware)."""

from __future__ import annotations

from functools import lru_cache
from typing import Literal, Optional

from pydantic import Field, ValidationError

from grpolab.paths import params_dir
from grpolab.plan.io import load
from grpolab.problems import InputError
from grpolab.recipe.cards import model_facts, resolve_model
from grpolab.recipe.cost import StepEstimate, step_estimate
from grpolab.recipe.loader import read_yaml
from grpolab.recipe.schema import Recipe, Strict


class Source(Strict):
    repo: str = Field(description="owner/name of the public repository")
    path: str
    commit: str
    date: str
    where: str = Field(description="the table or section the figures come from")


class Published(Strict):
    step_s: float = Field(gt=0, description="seconds per step, as published")
    tokens_per_device_s: Optional[float] = Field(gt=0, description="per device (a die on A3); null: not published")
    phases: dict[Literal["rollout", "old_log_prob", "reference", "update", "weight_sync"], float] = Field(
        description="seconds per phase where the source splits the step ({} when it does not)"
    )


class Baseline(Strict):
    name: str
    use: Literal["fit", "held-out"]
    model: str = Field(
        description="any model grpolab.recipe.cards.resolve_model knows (a card, a hub id, a family name)"
    )
    hardware: str = Field(description="a profile in params/hardware/")
    nnodes: int = Field(gt=0)
    devices_per_node: int = Field(gt=0)
    stack: str
    source: Source
    prompts: int = Field(gt=0)
    n: int = Field(gt=0)
    mini_batch_prompts: int = Field(gt=0)
    max_prompt: int = Field(gt=0)
    max_response: int = Field(gt=0)
    mean_prompt: int = Field(gt=0)
    mean_response: int = Field(gt=0)
    settings: list[str] = Field(description="layouts and settings as --set overrides on base.yaml")
    published: Published
    normalised: str = Field(description="how the source's units became ours")

    @property
    def world_size(self) -> int:
        """Every device of the run (a separate_async run's rollout-only pool included: tokens/s per device count it)."""
        return self.nnodes * self.devices_per_node

    @property
    def rollout_nnodes(self) -> int:
        """Nodes of a rollout-only pool (`schedule.rollout_nnodes=N` among the settings; 0 for a colocated run):
        the recipe's cluster.nnodes is the trainer's, the rest."""
        return next((int(s.split("=", 1)[1]) for s in self.settings if s.startswith("schedule.rollout_nnodes=")), 0)

    def overrides(self) -> list[str]:
        return [
            f"cluster.devices_per_node={self.devices_per_node}",
            f"data.train_batch_size={self.prompts}",
            f"rollout.n={self.n}",
            f"algorithm.ppo_mini_batch_size={self.mini_batch_prompts}",
            f"data.max_prompt_length={self.max_prompt}",
            f"data.max_response_length={self.max_response}",
            f"data.mean_prompt_length={self.mean_prompt}",
            f"data.mean_response_length={self.mean_response}",
            *self.settings,
        ]


class Baselines(Strict):
    runs: list[Baseline]


@lru_cache(maxsize=1)
def baselines() -> tuple[Baseline, ...]:
    """Every published run in params/baselines.yaml (InputError naming the key when the file is wrong)."""
    try:
        return tuple(Baselines.model_validate(read_yaml(params_dir() / "baselines.yaml")).runs)
    except ValidationError as exc:
        lines = [f"params/baselines.yaml: {'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
        raise InputError("\n".join(lines)) from None


def recipe_of(b: Baseline, extra: tuple[str, ...] = ()) -> Recipe:
    """The run as a recipe: its model card on base.yaml, its hardware profile, nodes and settings (then `extra`
    overrides, e.g. other efficiency constants while fitting them)."""
    return load(b.model, b.nnodes - b.rollout_nnodes, b.hardware, [*b.overrides(), *extra])


def predict(b: Baseline, extra: tuple[str, ...] = ()) -> StepEstimate:
    """The cost model's estimate of the run, at the run's own layout and measured mean lengths."""
    recipe = recipe_of(b, extra)
    facts, problems = model_facts(recipe)
    if facts is None:
        raise InputError(f"baseline {b.name}: no model facts: {'; '.join(p.message for p in problems)}")
    return step_estimate(recipe, facts)


def nearest_published_run(recipe: Recipe, model_name: str | None) -> Baseline | None:
    """The published run nearest a recipe: the same model on the same hardware, else the same model, closest
    in device count; None when no run used the model."""
    same = [b for b in baselines() if b.model == recipe.model.card or _card_name(b.model) == model_name]
    if not same:
        return None
    return min(
        same, key=lambda b: (b.hardware != recipe.cluster.hardware, abs(b.world_size - recipe.world_size), b.name)
    )


@lru_cache(maxsize=32)
def _card_name(card: str) -> str:
    return resolve_model(card).card.name
