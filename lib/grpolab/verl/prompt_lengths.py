"""Prompt lengths as verl counts them: the model's tokenizer, its chat template with the generation prompt, the
recipe's data.chat_template_kwargs (verl 0.9.1's RLHFDataset.maybe_filter_out_long_prompts does the same).

Only where the tokenizer is on disk (model.path, or its snapshot in the Hugging Face cache): nothing is downloaded.
transformers is imported here only, never by `grpolab check`.
"""

from __future__ import annotations

import pkgutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TOKENIZER_FILES = ("tokenizer_config.json", "tokenizer.json", "tokenizer.model", "vocab.json")


@dataclass
class Lengths:
    """Prompt tokens per sample row, or why there are none."""

    tokenizer: str = ""  # where it was loaded from
    lengths: list[int] = field(default_factory=list)
    no_template: bool = False  # the tokenizer has no chat template
    errors: list[tuple[int, str]] = field(default_factory=list)  # (row, why the template failed on it)
    why_none: str = ""  # no tokenizer here
    template: bool = True  # counted with the chat template (verl's way); False: the trainer's own, without one


def tokenizer_dir(model_path: str) -> Path | None:
    """The folder with the model's tokenizer: model.path itself, or the hub id's snapshot in the HF cache."""
    # lazy: pydantic, yaml (only `grpolab data` finds the tokenizer)
    from grpolab.recipe.cards import config_json

    candidates = [Path(model_path).expanduser()] if model_path else []
    found = config_json(model_path) if model_path else None
    if found is not None:
        candidates.append(found.parent)
    for folder in candidates:
        if folder.is_dir() and any((folder / f).is_file() for f in _TOKENIZER_FILES):
            return folder
    return None


def prompt_lengths(recipe: Any, prompts: list[Any]) -> Lengths:
    """Token counts of the chat-templated prompts (lists of messages; anything else is skipped by the caller). A
    trainer that builds its own tokenizer counts them itself (its engine's `prompt_tokens`: tiny's character
    tokenizer, built in code, without a chat template)."""
    own = recipe.engine.prompt_tokens
    if own:
        count = pkgutil.resolve_name(own)  # named by the engine's declaration: no import of the trainer here
        return Lengths(f"{own.split(':')[0]}'s tokenizer, built in code", count(prompts), template=False)
    folder = tokenizer_dir(recipe.model.path)
    if folder is None:
        return Lengths(why_none=f"no tokenizer on this machine for model.path {recipe.model.path!r}")
    # lazy: transformers (only `grpolab data` tokenizes prompts; seconds to import)
    from transformers import AutoTokenizer

    try:
        tok = AutoTokenizer.from_pretrained(
            str(folder), trust_remote_code=recipe.model.trust_remote_code, local_files_only=True
        )
    except Exception as exc:  # a broken or partial tokenizer folder
        return Lengths(str(folder), why_none=f"the tokenizer in {folder} does not load: {str(exc)[:200]}")
    out = Lengths(str(folder))
    if not getattr(tok, "chat_template", None):
        out.no_template = True
        return out
    kwargs = dict(recipe.data.chat_template_kwargs)
    for i, messages in enumerate(prompts):
        try:
            ids = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, **kwargs)
            if hasattr(ids, "keys") and "input_ids" in ids:  # newer transformers may return a BatchEncoding
                ids = ids["input_ids"]
            out.lengths.append(len(ids))
        except Exception as exc:
            out.errors.append((i, f"{type(exc).__name__}: {str(exc)[:200]}"))
    return out
