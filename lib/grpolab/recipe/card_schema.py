"""The strict schema of a model card (params/models/*.yaml): the facts about a model architecture the rules, the
memory and cost models and the planner use when no config.json is at hand. Every field is required (a card states
each fact, with its source); grpolab.recipe.cards loads them.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, field_validator

from grpolab.recipe.schema import Strict


class ModelCard(Strict):
    """Facts about a model architecture (params/models/*.yaml), used when no config.json is at hand."""

    name: str
    model_type: str
    num_layers: int = Field(gt=0)
    dense_layers: int = Field(ge=0, description="leading dense (non-MoE) layers")
    hidden_size: int = Field(gt=0)
    num_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    attention: Literal["gqa", "mla"]
    num_experts: int = Field(ge=0, description="routed experts; 0 for a dense model")
    active_experts: int = Field(ge=0)
    shared_experts: int = Field(ge=0)
    vocab_size: int = Field(gt=0)
    context_length: int = Field(gt=0)
    params_b: float = Field(gt=0, description="total parameters, billions")
    expert_params_b: float = Field(ge=0, description="parameters inside routed experts, billions")
    # GLM-5.2's DSA indexer is shared across layers: a pipeline stage may start only on a layer (1-based)
    # <= index_skip_topk_offset or at offset + k * index_topk_freq. Null for models without the rule.
    index_topk_freq: Optional[int] = Field(gt=0)
    index_skip_topk_offset: Optional[int] = Field(ge=0)
    # Linear attention (Gated DeltaNet: Qwen3.5, Qwen3-Next): key/value head counts and the layer interval of
    # full attention (every Nth layer is full attention, the rest linear). Null for models without it.
    linear_num_key_heads: Optional[int] = Field(gt=0)
    linear_num_value_heads: Optional[int] = Field(gt=0)
    full_attention_interval: Optional[int] = Field(gt=0)
    # the fixed state a linear-attention layer keeps per sequence: value heads x key dim x value dim
    linear_key_head_dim: Optional[int] = Field(gt=0)
    linear_value_head_dim: Optional[int] = Field(gt=0)
    mtp_layers: int = Field(ge=0, description="multi-token-prediction layers (num_nextn_predict_layers)")
    # MLA (multi-head latent attention): the KV cache holds kv_lora_rank + qk_rope_head_dim values per token
    # per layer, not 2 x kv_heads x head_dim. Null for GQA models.
    kv_lora_rank: Optional[int] = Field(gt=0)
    qk_nope_head_dim: Optional[int] = Field(gt=0)
    qk_rope_head_dim: Optional[int] = Field(gt=0)
    v_head_dim: Optional[int] = Field(gt=0)
    tie_word_embeddings: bool
    largest_tensor_mb: Optional[float] = Field(
        gt=0,
        description="largest single tensor in MiB when it is not the embedding (e.g. fused experts); "
        "null = the embedding (vocab x hidden) is the largest",
    )
    source: str = Field(description="where these facts come from")

    @field_validator("active_experts")
    @classmethod
    def _at_most_every_expert(cls, value: int, info):
        experts = info.data.get("num_experts")  # declared above: validated first
        if experts is not None and value > experts:
            raise ValueError(f"more experts per token than the model has (num_experts: {experts}): at most {experts}")
        return value
