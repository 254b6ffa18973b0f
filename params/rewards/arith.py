"""The `tiny` recipe's reward, a function with verl's reward signature (reward.function in params/recipes/tiny.yaml):
shipped beside tiny's data, as a user's reward file sits beside their recipe (verl loads it by path).

verl's reward managers call `compute_score(data_source=, solution_str=, ground_truth=, extra_info=)`; the CPU
trainer (grpolab.local.train) calls this same function with the same keywords, and `grpolab data` dry-runs it.
The score is grpolab.local.task's: the sum then EOS scores 1, the right digits without EOS 0.5, a wrong answer of the
right size then EOS 0.1, anything else 0. The CPU trainer decodes completions with their special tokens, so EOS is
visible in solution_str (`<eos>`); verl decodes without them, so there a right answer scores at most 0.5.
"""

from __future__ import annotations

from typing import Any

from grpolab.local.task import score, split_completion


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: Any = None) -> float:
    return score(*split_completion(solution_str), str(ground_truth))
