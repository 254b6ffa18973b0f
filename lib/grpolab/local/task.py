"""The toy task of the `tiny` recipe: `a+b=` with `digits`-digit operands, answered by the sum then EOS.

Problems are generated in code. The validation split is a fixed held-out set of problems (the same for
every training seed, chosen with SPLIT_SEED) that never appears in the train split; each one's commuted
twin does, so validation accuracy measures whether the model learned to add, not whether it memorised
prompts (see split_problems).

The reward scores the answer AND the format: the exact sum followed by EOS scores 1; the right digits
without EOS right after score less (completions would otherwise learn to skip EOS and run on); a
well-formed wrong answer of the right size (as many digits as the sum) earns a small format credit;
anything else scores 0. Format credit for a wrong size too let early GRPO settle on one-digit answers
(right more often, since 55 of the 100 sums are below 10) and drop two-digit ones for hundreds of steps:
2 seeds of 6 measured, one never recovered within the run.

The supervised warm-up is short on purpose: it must teach the format (digits, then EOS) and leave the
answers to GRPO, see `warmup_pairs`.

Pure Python: no torch import.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grpolab.local.tiny import EOS
from grpolab.recipe.dotted import get_dotted

# The validation split does not move with the training seed: three seeds are measured on one split.
SPLIT_SEED = 20260901

SCORE_CORRECT = 1.0  # the exact sum, then EOS
SCORE_CORRECT_NO_EOS = 0.5  # the sum's digits, but no EOS right after (runs on, or truncated)
SCORE_FORMAT = 0.1  # as many digits as the sum has, then EOS, but the wrong number
SCORE_NONE = 0.0  # anything else, a wrong number of digits included


@dataclass(frozen=True)
class Problem:
    """One `a+b=` problem."""

    a: int
    b: int

    @property
    def prompt(self) -> str:
        return f"{self.a}+{self.b}="

    @property
    def answer(self) -> str:
        return str(self.a + self.b)


def all_problems(digits: int = 1) -> list[Problem]:
    """Every problem with operands of at most `digits` digits (0 .. 10**digits - 1), in a fixed order."""
    if not 1 <= digits <= 3:
        raise ValueError(f"digits must be 1..3, got {digits}")
    top = 10**digits
    return [Problem(a, b) for a in range(top) for b in range(top)]


def split_problems(
    digits: int = 1, val_size: int = 30, split_seed: int = SPLIT_SEED
) -> tuple[list[Problem], list[Problem]]:
    """(train, validation): `val_size` problems held out (fixed by split_seed), the rest train.

    Validation problems are drawn from a+b with a != b, at most one of each commuted pair, so that b+a is
    always in train: a model that memorises train prompts scores nothing on them, one that has learned to
    add (commutativity included) scores well. Held out at random instead, 30 of the 100 one-digit
    problems leave too little of the table for a 2-layer model to interpolate (supervised training
    reaches 0.45-0.7 on them, GRPO less), so the figure would measure luck, not learning.
    """
    problems = all_problems(digits)
    pairs = [p for p in problems if p.a < p.b]
    if not 0 < val_size <= len(pairs):
        raise ValueError(f"val_size must be 1..{len(pairs)} for digits={digits}, got {val_size}")
    rng = random.Random(split_seed)
    rng.shuffle(pairs)
    # Hold out one orientation of each chosen pair, picked at random too.
    held = {(p.a, p.b) if rng.random() < 0.5 else (p.b, p.a) for p in pairs[:val_size]}
    train = [p for p in problems if (p.a, p.b) not in held]
    val = [p for p in problems if (p.a, p.b) in held]
    return train, val


def max_answer_chars(digits: int = 1) -> int:
    """The longest answer, in characters (the largest sum)."""
    return len(str(2 * (10**digits - 1)))


def max_prompt_chars(digits: int = 1) -> int:
    """The longest prompt, in characters (one token per character): `a+b=`."""
    return 2 * digits + 2


def warmup_pairs(train: Sequence[Problem], count: int, seed: int) -> list[tuple[str, str]]:
    """(prompt, target) pairs for the supervised warm-up: `count` train problems drawn at random.

    The warm-up is a few dozen small steps at a low learning rate: enough for the format (one or two
    digits, then EOS) and a rough sense of the answers' range, far too little for the answers themselves;
    it leaves greedy validation accuracy near chance (0.07-0.13 measured, chance is 1 in 19), so what
    validation gains after it is GRPO's doing. Measured alternatives were worse: random targets (format
    only) teach the model to ignore the operands and GRPO then learns far more slowly; longer or faster
    warm-ups already answer 0.2-0.4 of the validation split.
    """
    rng = random.Random(seed)
    return [(p.prompt, p.answer) for p in (rng.choice(train) for _ in range(count))]


def train_schedule(train: Sequence[Problem], count: int, seed: int) -> list[Problem]:
    """The first `count` prompts GRPO trains on, in order: epochs over `train`, each a permutation drawn from
    (seed, epoch) alone.

    The trainer reads them in this order (TRL's shuffling off), so the data position is the step: a run resumed from
    a checkpoint at step k sees exactly the batches an uninterrupted run sees after step k (transformers' Trainer
    skips the first k), and a longer budget only appends to the same order. TRL's own sampler draws every epoch
    from one generator that a checkpoint does not keep, so a resumed run would see other batches.
    """
    out: list[Problem] = []
    epoch = 0
    while len(out) < count:
        order = list(train)
        random.Random(f"{seed}:{epoch}").shuffle(order)
        out += order
        epoch += 1
    return out[:count]


def split_completion(text: str) -> tuple[str, bool]:
    """A decoded completion (special tokens kept) -> (the leading run of digits, whether EOS follows it)."""

    digits = ""
    for ch in text:
        if not ch.isdigit():
            break
        digits += ch
    return digits, text[len(digits) :].startswith(EOS)


def score(digits: str, eos_follows: bool, answer: str) -> float:
    """The reward for one completion, from its leading digits and whether EOS follows them."""
    if digits and digits == answer:
        return SCORE_CORRECT if eos_follows else SCORE_CORRECT_NO_EOS
    if digits and eos_follows and len(digits) == len(answer):
        return SCORE_FORMAT
    return SCORE_NONE


def is_correct(digits: str, eos_follows: bool, answer: str) -> bool:
    """Exact match for validation accuracy: the sum, then EOS."""
    return eos_follows and digits == answer


class ArithReward:
    """TRL reward function: scores answer and format from the completion's token ids (EOS included).

    TRL hands reward functions the completions decoded WITHOUT special tokens, which hides whether EOS was
    generated, so the score is taken from `completion_ids` (TRL keeps the first EOS in them).
    """

    __name__ = "arith"  # TRL names the reward's metrics after it: rewards/arith/mean

    def __init__(self, tokenizer, function=None) -> None:
        self.tokenizer = tokenizer
        # the recipe's reward.function (verl's signature: grpolab.local.arith_reward for tiny); None: `score`
        self.function = function

    def texts(self, completion_ids: Sequence[Sequence[int]]) -> list[str]:
        return self.tokenizer.batch_decode([list(ids) for ids in completion_ids], skip_special_tokens=False)

    def __call__(self, prompts=None, completions=None, completion_ids=None, answer=None, **_: object) -> list[float]:
        texts = self.texts(completion_ids)
        if self.function is not None:  # called as verl's reward managers call it
            return [
                float(self.function(data_source=SOURCE, solution_str=text, ground_truth=ans, extra_info={}))
                for text, ans in zip(texts, answer, strict=True)
            ]
        return [score(*split_completion(text), ans) for text, ans in zip(texts, answer, strict=True)]


SOURCE = "arith"  # the data_source of the task's rows (verl_rows) and of the trainer's reward calls


def verl_rows(digits: int, val_size: int, split: str) -> list[dict]:
    """The task's train or val problems as verl-format rows (what `grpolab data prepare` writes): the prompt as
    chat messages, data_source, ability, reward_model.ground_truth, extra_info.index."""
    train, val = split_problems(digits, val_size)
    return [
        {
            "data_source": SOURCE,
            "prompt": [{"role": "user", "content": p.prompt}],
            "ability": "arithmetic",
            "reward_model": {"style": "rule", "ground_truth": p.answer},
            "extra_info": {"split": split, "index": i},
        }
        for i, p in enumerate(train if split == "train" else val)
    ]


def fingerprint(recipe: Any, name: str) -> dict:
    """The provenance fingerprint of a generated task (`generated:arith`, grpolab.jobs.provenance): a hash of its
    train and validation problems."""

    if name != "arith":
        return {"generated": name, "error": f"no generator named {name!r} (grpolab.local.task has `arith`)"}
    digits, val_size = get_dotted(recipe, "local.digits"), get_dotted(recipe, "local.val_size")
    try:
        train, val = split_problems(int(digits), int(val_size))
    except (TypeError, ValueError) as exc:
        return {"generated": name, "error": str(exc)}
    text = "\n".join(["train", *(p.prompt + p.answer for p in train), "val", *(p.prompt + p.answer for p in val)])
    return {"generated": name, "sha256": hashlib.sha256(text.encode()).hexdigest(), "problems": len(train) + len(val)}
