"""A recipe's parallel layout as plain values: the training layout (Megatron tp, pp, cp, ep, etp, vpp, a pipeline
layout, sequence parallel, offloads; FSDP's Ulysses group) and the rollout layout (tp, dp, ep).

The cost and memory model (grpolab.recipe.memory, grpolab.recipe.cost) prices a layout given as these values, so
that the planner can price thousands of candidates without copying a Recipe for each; `with_layout` makes the
Recipe copy once a layout is chosen. The recipe's own keys are `TRAIN_KEYS` and `ROLLOUT_KEYS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpolab.recipe.schema import Recipe

TRAIN_KEYS = ("tp", "pp", "cp", "ep", "etp", "vpp", "pp_layout", "param_offload", "optimizer_offload")
# A layout's `sp` is a group size: Megatron's sequence parallel spans tp (sp == tp when on, 1 when off), FSDP's
# Ulysses group is its own size. The recipe keeps them as train.sp (a bool) and train.ulysses_sp (an int).
ROLLOUT_KEYS = ("tp", "dp", "ep")


@dataclass(frozen=True)
class TrainLayout:
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    etp: int = 1
    vpp: int = 1
    pp_layout: str | None = None
    sp: int = 1
    param_offload: bool = False
    optimizer_offload: bool = False
    fsdp: bool = False  # FSDP shards data; sp is its Ulysses group

    def short(self) -> str:
        if self.fsdp:
            return f"fsdp sp{self.sp}" + self._offload()
        return (
            f"tp{self.tp} pp{self.pp} cp{self.cp} ep{self.ep} etp{self.etp}"
            + (f" vpp{self.vpp}" if self.vpp > 1 else "")
            + self._offload()
        )

    def _offload(self) -> str:
        if not (self.param_offload or self.optimizer_offload):
            return ""
        return " off:" + "+".join(n for n, on in (("param", self.param_offload), ("opt", self.optimizer_offload)) if on)

    def parallel(self) -> tuple:
        """The parallel sizes and pipeline layout (what a rule can reject), without the offload choice."""
        return (self.tp, self.pp, self.cp, self.ep, self.etp, self.vpp, self.pp_layout, self.sp)


def data_parallel(t: TrainLayout, world: int) -> tuple[int, int]:
    """(dense data-parallel size, expert data-parallel size) of a Megatron layout on `world` devices; FSDP shards
    over every device."""
    if t.fsdp:
        return world, world
    return max(world // (t.tp * t.pp * t.cp), 1), max(world // (t.ep * t.etp * t.pp), 1)


@dataclass(frozen=True)
class RolloutLayout:
    tp: int = 1
    dp: int = 1
    ep: int = 1

    def short(self) -> str:
        return f"tp{self.tp} dp{self.dp} ep{self.ep}"

    def astuple(self) -> tuple[int, int, int]:
        return (self.tp, self.dp, self.ep)

    @property
    def expert_shards(self) -> int:
        """Devices one rollout engine's routed experts are spread over: ep, else every rank of the engine (tp x
        dp): vLLM and SGLang run a MoE engine's data-parallel ranks as one MoE group, its experts split over all
        of them (expert parallel, or tensor parallel over tp x dp when expert parallel is off)."""
        return max(self.ep, self.tp * self.dp)


def train_fields(train: TrainLayout) -> dict:
    """The recipe's own train.* keys and values of a training layout (what `--set` and --json name)."""
    fields = {k: getattr(train, k) for k in TRAIN_KEYS}
    if train.fsdp:
        fields["ulysses_sp"] = train.sp
    else:
        fields["sp"] = train.sp > 1 or train.tp == 1  # with tp 1 sequence parallel has no effect: verl's default
    return fields


def train_of(recipe: Recipe) -> TrainLayout:
    t = recipe.train
    fsdp = recipe.engine.shards_over_world
    sp = t.ulysses_sp if fsdp else (t.tp if t.sp else 1)
    return TrainLayout(**{k: getattr(t, k) for k in TRAIN_KEYS}, sp=sp, fsdp=fsdp)


def rollout_of(recipe: Recipe) -> RolloutLayout:
    return RolloutLayout(**{k: getattr(recipe.rollout, k) for k in ROLLOUT_KEYS})


def with_layout(recipe: Recipe, train: TrainLayout | None = None, rollout: RolloutLayout | None = None) -> Recipe:
    """A copy of the recipe with a layout set (the schema is not re-run: a layout's values are in range)."""
    update = {}
    if train is not None:
        update["train"] = recipe.train.model_copy(update=train_fields(train))
    if rollout is not None:
        update["rollout"] = recipe.rollout.model_copy(update={k: getattr(rollout, k) for k in ROLLOUT_KEYS})
    return recipe.model_copy(update=update)


def overrides_of(train: TrainLayout | None, rollout: RolloutLayout | None) -> list[str]:
    """The layout as `--set` overrides (the recipe's own keys)."""
    out = []
    if train is not None:
        for key, value in train_fields(train).items():
            text = "null" if value is None else str(value).lower() if isinstance(value, bool) else value
            out.append(f"train.{key}={text}")
    if rollout is not None:
        out += [f"rollout.{key}={getattr(rollout, key)}" for key in ROLLOUT_KEYS]
    return out
