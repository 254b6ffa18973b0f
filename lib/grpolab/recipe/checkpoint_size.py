"""How many bytes a recipe's checkpoints take: one checkpoint from its layout, times the most kept at once.

One checkpoint, P = the model's parameters (its card's params_b), as verl 0.9.1 writes it (verl/utils/checkpoint/):
    FSDP      model shards in the actor's fp32 (4 P), AdamW's two fp32 moments (8 P), `hf_model` a full model
              gathered in fp32 (4 P); `extra` (scheduler and RNG) is small
    Megatron  `model` as Hugging Face weights through mbridge in model.dtype (bf16: 2 P), or Megatron shards in it
              with use_dist_checkpointing, both with `hf_model` too; the distributed optimizer's fp32 main
              parameters and two moments (12 P)
    TRL       (the local trainer) fp32 weights (4 P), AdamW's moments (8 P), and trainer_state.json's log of every
              step (about 1 KB a step, measured on `tiny`)
plus the engine's small_files_bytes (grpolab.recipe.engines) for the tokenizer, configs and data.pt. Sizes follow `trainer.save_contents`.

Kept at once: verl's rotation (max_actor_ckpt_to_keep = N) deletes down to N - 1 before it saves, so N are on disk
(2 with N = 1: the old one goes once the new one is complete); the job wrapper prunes after a save (grpolab.jobs.
checkpoints), so N + 1, and with keep-best one more. Without keep_ckpts every save stays: ceil(total_steps /
save_freq) of them (verl also saves the last step), unknown when the budget is in epochs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.memory import ADAM_BYTES, DTYPE_BYTES  # the one home of bytes per parameter
from grpolab.recipe.schema import Recipe

TRL_LOG_BYTES_PER_STEP = 1_100  # trainer_state.json's log_history: measured 122 KB after 120 tiny steps


@dataclass(frozen=True)
class CheckpointEstimate:
    one_bytes: int  # one checkpoint
    parts: dict[str, int]  # what one checkpoint is made of
    kept: int | None  # checkpoints on disk at once (None: every save stays and their number is unknown)
    saves: int | None  # checkpoints the run writes (None: unknown)
    how: str  # the arithmetic in words, for messages

    @property
    def total_bytes(self) -> int | None:
        return None if self.kept is None else self.one_bytes * self.kept


def parts(recipe: Recipe, facts: ModelCard) -> dict[str, int]:
    """Bytes of one checkpoint by content, as the recipe's engine writes them."""
    p = facts.params_b * 1e9
    contents = set(recipe.trainer.save_contents)
    engine = recipe.engine
    weights, fp32 = DTYPE_BYTES[recipe.model.dtype], DTYPE_BYTES["float32"]
    moments = ADAM_BYTES - fp32  # Adam's two fp32 moments, without the fp32 master copy
    out: dict[str, int] = {}
    if engine.dist_checkpoint:
        if "model" in contents:
            out[f"model ({recipe.model.dtype})"] = int(weights * p)
        if "hf_model" in contents and ("model" not in contents or recipe.train.use_dist_checkpointing):
            out[f"hf_model ({recipe.model.dtype})"] = int(weights * p)
        if "optimizer" in contents:
            out["optimizer (fp32 main params + Adam moments)"] = int(ADAM_BYTES * p)
    elif engine.verl:
        if "model" in contents:
            out["model shards (fp32)"] = int(fp32 * p)
        if "optimizer" in contents:
            out["optimizer (fp32 Adam moments)"] = int(moments * p)
        if "hf_model" in contents:
            out["hf_model (fp32)"] = int(fp32 * p)
    else:  # trl: transformers' Trainer saves all of it for an exact resume
        out["model (fp32)"] = int(fp32 * p)
        out["optimizer (fp32 Adam moments)"] = int(moments * p)
        out["trainer_state.json"] = TRL_LOG_BYTES_PER_STEP * (recipe.trainer.total_steps or 0)
    out["tokenizer, configs, data position"] = engine.small_files_bytes
    return out


def saves(recipe: Recipe) -> int | None:
    """Checkpoints the run writes: every save_freq steps and the last step; None when the budget is in epochs."""
    tr = recipe.trainer
    if tr.save_freq <= 0:
        return 0
    if tr.total_steps is None:
        return None
    return math.ceil(tr.total_steps / tr.save_freq)


def kept_at_once(recipe: Recipe) -> tuple[int | None, str]:
    """(the most checkpoints on disk at once, why)."""
    tr = recipe.trainer
    count = saves(recipe)
    if count == 0:
        return 0, "trainer.save_freq <= 0: no checkpoints"
    wrapper = tr.keep_best_metric is not None or not recipe.engine.verl
    if tr.keep_ckpts is None and tr.keep_best_metric is None:
        if count is None:
            return None, "trainer.keep_ckpts is null: every checkpoint stays, and the number of saves is unknown"
        return count, f"trainer.keep_ckpts is null: every one of the {count} saves stays"
    if not wrapper:
        kept = max(tr.keep_ckpts, 2)
        why = f"verl keeps trainer.keep_ckpts = {tr.keep_ckpts}" + (
            " (and the old one while the next is written)" if tr.keep_ckpts == 1 else ""
        )
    else:
        newest = tr.keep_ckpts if tr.keep_ckpts is not None else count
        if newest is None:
            return None, "trainer.keep_ckpts is null: every checkpoint stays, and the number of saves is unknown"
        kept = newest + 1 + (1 if tr.keep_best_metric else 0)
        why = (
            f"the newest {newest}"
            + (" + the best by " + tr.keep_best_metric if tr.keep_best_metric else "")
            + " + the one being written (pruned after each save)"
        )
    if count is not None and count < kept:
        return count, f"{why}; the run saves only {count}"
    return kept, why


def estimate(recipe: Recipe, facts: ModelCard) -> CheckpointEstimate:
    """The bytes of one checkpoint, and how many are kept at once."""
    sizes = parts(recipe, facts)
    one = sum(sizes.values())
    kept, why = kept_at_once(recipe)
    listed = " + ".join(f"{k} {human_bytes(v)}" for k, v in sizes.items())
    how = f"{recipe.train.engine}: {listed} for {facts.params_b * 1e9:.3g} parameters; {why}"
    return CheckpointEstimate(one, sizes, kept, saves(recipe), how)


def human_bytes(n: float) -> str:
    """A byte count a person reads at once: 98.4 GB, 2.95 TB, 1.7 MB."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"
