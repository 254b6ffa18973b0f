"""The toy task of the `tiny` recipe: `a+b=` answered by the sum then EOS, read from verl-format data files.

The problems are data, as on a cluster: data.train_files / data.val_files in verl's layout (the prompt as chat
messages, reward_model.ground_truth, data_source, extra_info), `tiny`'s being params/data/tiny/{train,val}.parquet,
written by `grpolab data prepare --preset arith` from the jsonl beside them (params/data_presets.yaml says how
they were drawn). The validation split holds out one of each of 30 commuted pairs a+b / b+a (a != b) and trains on
its twin, so validation accuracy measures whether the model learned to add, not whether it memorised prompts:
held out at random instead, 30 of the 100 one-digit problems leave too little of the table for a 2-layer model to
interpolate (supervised training reaches 0.45-0.7 on them, GRPO less), so the figure would measure luck.

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

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import takewhile
from pathlib import Path
from typing import Any

from grpolab.local.mapping import TinySettings
from grpolab.local.tiny import EOS

SCORE_CORRECT = 1.0  # the exact sum, then EOS
SCORE_CORRECT_NO_EOS = 0.5  # the sum's digits, but no EOS right after (runs on, or truncated)
SCORE_FORMAT = 0.1  # as many digits as the sum has, then EOS, but the wrong number
SCORE_NONE = 0.0  # anything else, a wrong number of digits included
PREPARE = "write it with `grpolab data prepare` (verl's layout)"


@dataclass(frozen=True)
class Problem:
    """One row of the task's data: the text the tiny model reads and its ground truth."""

    prompt: str  # the user message: the tiny model has no chat template, its text is the prompt
    answer: str  # reward_model.ground_truth
    data_source: str
    extra_info: dict[str, Any] = field(default_factory=dict, compare=False)  # passed to the reward as verl does


def load_problems(files: Sequence[str], key: str, prompt_key: str) -> list[Problem]:
    """The rows of data files in verl's layout (parquet, or json lines), in file order; ValueError naming the file,
    the row and the column for a row the trainer cannot use (`key`: the recipe key that names the files)."""
    out: list[Problem] = []
    for file in files:
        rows = _rows(Path(file), key)
        for i, row in enumerate(rows):
            out.append(_problem(row, f"{key} {file}: row {i}", prompt_key))
        if not rows:
            raise ValueError(f"{key} {file} has no rows: the trainer needs problems; {PREPARE}")
    return out


def load_data(settings: TinySettings) -> tuple[list[Problem], list[Problem]]:
    """(train, validation) problems from the recipe's data files."""
    return (
        load_problems(settings.train_files, "data.train_files", settings.prompt_key),
        load_problems(settings.val_files, "data.val_files", settings.prompt_key),
    )


def check_lengths(settings: TinySettings, tokenizer, problems: Sequence[Problem]) -> None:
    """TRL 1.16 neither drops nor cuts long prompts, and an answer must fit with its EOS: refuse such data."""
    prompt = max(problems, key=lambda p: len(tokenizer(p.prompt, add_special_tokens=False).input_ids))
    length = len(tokenizer(prompt.prompt, add_special_tokens=False).input_ids)
    if length > settings.max_prompt_length:
        raise ValueError(
            f"data.max_prompt_length={settings.max_prompt_length} is shorter than the longest prompt "
            f"({prompt.prompt!r}: {length} tokens)"
        )
    answer = max(problems, key=lambda p: len(tokenizer(p.answer, add_special_tokens=False).input_ids))
    length = len(tokenizer(answer.answer, add_special_tokens=False).input_ids)
    if length + 1 > settings.max_response_length:
        raise ValueError(
            f"data.max_response_length={settings.max_response_length} leaves no room for the longest answer "
            f"({answer.answer!r}: {length} tokens) and EOS"
        )


def _rows(path: Path, key: str) -> list[dict]:
    if not path.is_file():
        raise ValueError(f"{key} {path}: no such file; {PREPARE}, or point {key} at the task's files")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq  # lazy: pyarrow (only reading a parquet task needs it)

        return pq.read_table(path).to_pylist()
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    raise ValueError(f"{key} {path}: the CPU trainer reads .parquet or .jsonl in verl's layout; {PREPARE}")


def _problem(row: dict, where: str, prompt_key: str) -> Problem:
    messages = row.get(prompt_key)
    if not (isinstance(messages, list) and len(messages) == 1 and isinstance(messages[0], dict)) or (
        messages[0].get("role") != "user" or not isinstance(messages[0].get("content"), str)
    ):
        raise ValueError(
            f"{where}: column {prompt_key!r} is {str(messages)[:80]!r}; the tiny model has no chat template, so each "
            f"prompt is one message [{{'role': 'user', 'content': text}}]; {PREPARE}"
        )
    truth = (row.get("reward_model") or {}).get("ground_truth")
    if truth is None or "data_source" not in row:
        raise ValueError(
            f"{where}: no {'reward_model.ground_truth' if truth is None else 'data_source'} (the reward is called "
            f"with data_source= and ground_truth=); its columns: {', '.join(row)}; {PREPARE}"
        )
    return Problem(messages[0]["content"], str(truth), str(row["data_source"]), dict(row.get("extra_info") or {}))


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
    digits = "".join(takewhile(str.isdigit, text))
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
    generated, so the score is taken from `completion_ids` (TRL keeps the first EOS in them). The dataset's
    other columns (answer, data_source, extra_info: grpolab.local.train.train_dataset) come as keywords.
    """

    __name__ = "arith"  # TRL names the reward's metrics after it: rewards/arith/mean

    def __init__(self, tokenizer, function=None) -> None:
        self.tokenizer = tokenizer
        # the recipe's reward.function (verl's signature: params/rewards/arith.py for tiny); None: `score`
        self.function = function
        self.last_scores: list[float] = []  # the last batch's (for critic/score/max and min)

    def texts(self, completion_ids: Sequence[Sequence[int]]) -> list[str]:
        return self.tokenizer.batch_decode([list(ids) for ids in completion_ids], skip_special_tokens=False)

    def __call__(
        self, prompts=None, completions=None, completion_ids=None, answer=None, data_source=None, extra_info=None, **_
    ) -> list[float]:
        texts = self.texts(completion_ids)
        if self.function is not None:  # called as verl's reward managers call it, with the row's own fields
            self.last_scores = [
                float(
                    self.function(data_source=source, solution_str=text, ground_truth=ans, extra_info=json.loads(info))
                )
                for text, ans, source, info in zip(texts, answer, data_source, extra_info, strict=True)
            ]
        else:
            self.last_scores = [score(*split_completion(text), ans) for text, ans in zip(texts, answer, strict=True)]
        return self.last_scores
