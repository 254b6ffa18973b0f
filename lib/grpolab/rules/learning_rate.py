"""algorithm.lr against the learning rates GRPO and PPO runs were published with, for the recipe's engine: an lr far
outside them ruins a run that still ends SUCCEEDED (tiny at lr 1000: the weights saturate at the first update, the
gradient is 0 from step 2 and validation accuracy falls from 0.10 to 0.00; tests/data/monitor/tiny_lr1000.jsonl).

PUBLISHED is the one table (docs/rules.md prints it): each learning rate with where it was published, an engine's
usual one first (the fix's example). The range an
engine takes is the lowest to the highest of its rows; an lr more than FAR times beyond it is a warning (an lr a few
times off may be a choice; one a hundred times off is a typo or a unit slip). verl's engines (Megatron, FSDP) fine-
tune pretrained LLMs; the CPU trainer (`trl`) also trains tiny, a 126 K-parameter model built from scratch, whose
lr is a thousand times an LLM's.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpolab.rules.checks import Checks

FAR = 10.0  # an lr this many times above the highest (or below the lowest) published one is far outside


@dataclass(frozen=True)
class Published:
    lr: float
    verl: bool  # published for verl's engines (True) or for the CPU trainer, TRL's GRPOTrainer (False)
    what: str
    source: str


PUBLISHED: tuple[Published, ...] = (
    Published(
        1e-6,
        True,
        "verl 0.9.1's default actor lr; also the lr of 57 of the 62 recorded public verl launches",
        "verl/trainer/config/actor/actor.yaml (optim.lr) in the verl 0.9.1 wheel; tests/data/corpus/MANIFEST.yaml",
    ),
    Published(
        5e-8,
        True,
        "Qwen2.5-7B GRPO on Ascend NPU (FSDP), the lowest recorded",
        "verl-project/verl examples/grpo_trainer/run_qwen2_5_7b_grpo_npu.sh @72207cef (tests/data/corpus)",
    ),
    Published(
        5e-7,
        True,
        "Qwen3-4B GRPO on NPU; Qwen3-0.6B Megatron + SGLang quick start on Ascend",
        "volcengine/verl examples/grpo_trainer/run_qwen3_4b_grpo_vllm_1k_npu.sh (tests/data/corpus)",
    ),
    Published(
        1e-5,
        True,
        "Qwen3-30B-A3B GRPO with Megatron",
        "verl-project/verl examples/grpo_trainer/run_qwen3_30b_a3b_megatron.sh @1dda039b (tests/data/corpus)",
    ),
    Published(
        3e-5,
        True,
        "Qwen2-7B GRPO with LoRA on one H100, the highest recorded (LoRA trains a few adapter weights)",
        "volcengine/verl examples/tuning/7b/qwen2-7b_grpo-lora_1_h100_fsdp_vllm.sh @b178a3cd (tests/data/corpus)",
    ),
    Published(
        5e-6,
        True,
        "NeMo RL's GRPO of Nemotron-Nano-9B-v2 (min_lr 5e-7)",
        "docs.nvidia.com/nemo/gym/latest/training-tutorials/nemo-rl-grpo/nemo-rl-configuration.html",
    ),
    Published(
        1e-3,
        False,
        "tiny: GRPO of a 126 K-parameter model built from scratch, after a warm-up at 1e-3",
        "docs/facts.md section 5 (benchmarks/tiny_grpo.py, three seeds)",
    ),
    Published(
        1e-6,
        False,
        "TRL 1.16's GRPOConfig.learning_rate default (`1e-6 instead of 5e-5`)",
        "trl/trainer/grpo_config.py in the TRL 1.16.0 wheel",
    ),
)


def published(verl: bool) -> tuple[Published, ...]:
    """The rows of an engine kind (verl's engines, or the CPU trainer)."""
    return tuple(p for p in PUBLISHED if p.verl == verl)


def _g(value: float) -> str:
    return f"{value:.3g}"


def learning_rate(c: Checks) -> None:
    """Warn when algorithm.lr is more than FAR times above the highest, or below the lowest, published lr."""
    lr, engine = c.r.algorithm.lr, c.r.engine
    rows = published(engine.verl)
    low, high = min(rows, key=lambda p: p.lr), max(rows, key=lambda p: p.lr)
    if high.lr * FAR >= lr >= low.lr / FAR:
        return
    side, edge = ("above", high) if lr > high.lr else ("below", low)
    what = "verl's engines" if engine.verl else f"train.engine {engine.name} (TRL's GRPOTrainer)"
    consequence = (
        "an update this large saturates the weights at once: the run goes on to SUCCEEDED with its policy ruined "
        "(the monitor's training-collapse alerts)"
        if side == "above"
        else "the weights barely move: the run spends its budget learning nothing"
    )
    c.add(
        "learning-rate",
        "algorithm.lr",
        lr,
        f"lr {_g(lr)} is {_g(lr / edge.lr if side == 'above' else edge.lr / lr)} x {side} the "
        f"{'highest' if side == 'above' else 'lowest'} learning rate published for {what}, {_g(edge.lr)} "
        f"({edge.what}; {edge.source}); {consequence}",
        f"set algorithm.lr within {_g(low.lr)} - {_g(high.lr)} (published for {what}: docs/rules.md lists "
        f"each with its source), e.g. {_g(rows[0].lr)}",
    )
