"""Exported `tiny` weights scored as the run scored them: greedy accuracy on the validation split (`grpolab export`
compares it with the value the run logged at that step; grpolab.recipe.engines names this function for trl)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from grpolab.local.mapping import settings_from_recipe
from grpolab.local.metrics import VAL_ACC
from grpolab.local.task import load_data
from grpolab.local.train import greedy_accuracy, quiet_transformers


def score_export(recipe: Any, folder: Path) -> tuple[str, float]:
    """(the run's metric, its value for the Hugging Face weights in `folder`)."""

    quiet_transformers()
    # lazy: transformers (only scoring exported weights needs it; seconds to import)
    from transformers import AutoModelForCausalLM, PreTrainedTokenizerFast

    settings = settings_from_recipe(recipe)
    model = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(folder, local_files_only=True)
    _, val = load_data(settings)
    return VAL_ACC, greedy_accuracy(model, tokenizer, val, settings.max_response_length)
