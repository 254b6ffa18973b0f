"""Model facts (layers, heads, KV heads, experts, context) for the validator.

Facts come from the model's config.json when `model.path` holds one (Qwen3.5 MoE nests them under
`text_config`), else from the card in params/models/. When both exist and disagree, that is an error: the
card would make the validator check the wrong model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grpolab.problems import InputError, Problem, RecipeError
from grpolab.recipe.loader import load_card
from grpolab.recipe.schema import ModelCard, Recipe

# config.json key(s) -> card field; the first key present wins (architectures name the same fact differently)
CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "num_layers": ("num_hidden_layers", "num_layers"),
    "hidden_size": ("hidden_size",),
    "num_heads": ("num_attention_heads",),
    "num_kv_heads": ("num_key_value_heads", "num_attention_heads"),
    "num_experts": ("n_routed_experts", "num_experts", "num_local_experts"),
    "active_experts": ("num_experts_per_tok", "moe_topk"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "context_length": ("max_position_embeddings", "seq_length"),
    "head_dim": ("head_dim",),  # config.json's head_dim wins over a card's (GLM-5.2's 192 is qk_nope, see below)
    "linear_num_key_heads": ("linear_num_key_heads",),
    "linear_num_value_heads": ("linear_num_value_heads",),
    "full_attention_interval": ("full_attention_interval",),
    "linear_key_head_dim": ("linear_key_head_dim",),
    "linear_value_head_dim": ("linear_value_head_dim",),
    "mtp_layers": ("num_nextn_predict_layers", "mtp_num_hidden_layers"),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_nope_head_dim": ("qk_nope_head_dim",),
    "qk_rope_head_dim": ("qk_rope_head_dim",),
    "v_head_dim": ("v_head_dim",),
    "tie_word_embeddings": ("tie_word_embeddings",),
}
COMPARED = ("num_layers", "hidden_size", "num_heads", "num_kv_heads", "num_experts", "vocab_size")


def config_json(path: str) -> Path | None:
    if not path:
        return None
    candidate = Path(path).expanduser() / "config.json"
    return candidate if candidate.is_file() else None


def facts_from_config(config: dict, card: ModelCard | None, source: str) -> ModelCard:
    """A ModelCard built from config.json values, falling back to the card for what config.json lacks."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    merged = {**config, **text}
    values: dict[str, Any] = card.model_dump() if card else {}
    for field, keys in CONFIG_KEYS.items():
        for key in keys:
            if merged.get(key) is not None:
                values[field] = merged[key]
                break
    values["model_type"] = merged.get("model_type", values.get("model_type", "unknown"))
    values.setdefault("name", merged.get("_name_or_path") or source)
    if merged.get("kv_lora_rank"):
        values["attention"] = "mla"
    values.setdefault("attention", "gqa")
    heads = values.get("num_heads") or 1
    values.setdefault("head_dim", merged.get("head_dim") or (values.get("hidden_size", heads) // heads))
    values.setdefault("dense_layers", merged.get("first_k_dense_replace", 0))
    values.setdefault("num_experts", 0)
    values.setdefault("active_experts", 0)
    values.setdefault("shared_experts", merged.get("n_shared_experts") or 0)
    values.setdefault("params_b", 0.001)
    values.setdefault("expert_params_b", 0.0)
    values["index_topk_freq"] = merged.get("index_topk_freq", values.get("index_topk_freq"))
    values["index_skip_topk_offset"] = merged.get("index_skip_topk_offset", values.get("index_skip_topk_offset"))
    for field in (
        "linear_num_key_heads",
        "linear_num_value_heads",
        "full_attention_interval",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "kv_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "v_head_dim",
        "largest_tensor_mb",
    ):
        values.setdefault(field, None)
    values.setdefault("mtp_layers", 0)
    values.setdefault("tie_word_embeddings", False)
    values["source"] = source
    return ModelCard.model_validate(values)


def model_facts(recipe: Recipe) -> tuple[ModelCard | None, list[Problem]]:
    """The model's facts and any problem in finding them (missing card, card vs config.json mismatch)."""
    problems: list[Problem] = []
    card = None
    if recipe.model.card:
        try:
            card = load_card(recipe.model.card)
        except InputError as exc:
            problems.append(
                Problem(
                    "schema",
                    "error",
                    "model.card",
                    recipe.model.card,
                    str(exc),
                    "name a file in params/models/ (without .yaml)",
                )
            )
        except RecipeError as exc:
            problems.extend(exc.problems)
    cfg_path = config_json(recipe.model.path)
    if cfg_path is None:
        if card is None and not problems:
            problems.append(
                Problem(
                    "schema",
                    "error",
                    "model.card",
                    None,
                    f"{recipe.origin('model.path')}: model.path {recipe.model.path!r} has no config.json and no card is set",
                    "set model.card to a card in params/models/, or point model.path at a model directory",
                )
            )
        return card, problems
    try:
        config = json.loads(cfg_path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        problems.append(
            Problem(
                "schema",
                "error",
                "model.path",
                str(cfg_path),
                f"cannot read {cfg_path}: {exc}",
                "fix or replace the model's config.json",
            )
        )
        return card, problems
    facts = facts_from_config(config, card, str(cfg_path))
    if card is not None:
        for field in COMPARED:
            have, want = getattr(facts, field), getattr(card, field)
            if have != want:
                problems.append(
                    Problem(
                        "schema",
                        "error",
                        "model.card",
                        recipe.model.card,
                        f"{cfg_path} says {field} = {have}, but card {recipe.model.card!r} says {want}: "
                        "the path and the card describe different models",
                        f"point model.path at {card.name}, or set model.card to the card of the model at the path "
                        "(or null to use config.json alone)",
                    )
                )
    return facts, problems
