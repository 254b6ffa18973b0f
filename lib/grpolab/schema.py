"""The one strict schema of a GRPO Lab recipe, and of the model cards under params/models/.

Every section forbids unknown keys (a misspelled key is an error that names the closest valid key). Fields
have NO defaults here on purpose: every default lives in params/base.yaml, the one home for defaults, which
every recipe inherits first. Field-level constraints (positive sizes, a fraction in (0, 1]) are checked here;
rules that relate several fields (TP divides the heads, ...) live in grpolab.validate.
"""

from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from grpolab.monitor_schema import Monitor

Device = Literal["npu", "cuda", "cpu"]
Scalar = Union[bool, int, float, str, None]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Cluster(Strict):
    """Where the run goes: node count and devices per node; set by a hardware profile in params/hardware/."""

    hardware: str = Field(description="hardware profile name, informative (e.g. ascend-a3)")
    nnodes: int = Field(gt=0, description="nodes in the Ray cluster")
    devices_per_node: int = Field(gt=0, description="accelerators per node (A3: 16 dies, A2: 8)")
    device: Device = Field(description="npu, cuda or cpu")
    device_memory_gb: float = Field(gt=0, description="memory of one device in GB")


class Model(Strict):
    path: str = Field(description="HF model directory (or hub id) with config.json; facts are read from it")
    card: Optional[str] = Field(description="model card in params/models/, used when path has no config.json")
    trust_remote_code: bool
    use_remove_padding: bool
    dtype: Literal["bfloat16", "float16", "float32"]


class Recompute(Strict):
    granularity: Optional[Literal["full", "selective"]]
    method: Optional[Literal["uniform", "block"]]
    num_layers: Optional[int] = Field(ge=1)


class Train(Strict):
    """The training engine and its parallel layout (Megatron terms; FSDP uses only sp)."""

    engine: Literal["megatron", "fsdp", "trl"]
    tp: int = Field(gt=0, description="tensor parallel size")
    pp: int = Field(gt=0, description="pipeline parallel size")
    cp: int = Field(gt=0, description="context parallel size")
    ep: int = Field(gt=0, description="expert parallel size")
    etp: int = Field(gt=0, description="expert tensor parallel size")
    vpp: int = Field(gt=0, description="virtual pipeline stages per PP rank (1 = off)")
    pp_layout: Optional[str] = Field(description="Megatron pipeline layout, e.g. 'Et*10|t*12|...|t*4L'")
    sp: int = Field(
        gt=0,
        description="sequence parallel: megatron 1 = off or equal to tp = on; fsdp: Ulysses group size",
    )
    param_offload: bool
    grad_offload: bool
    optimizer_offload: bool
    optimizer_offload_fraction: float = Field(ge=0, le=1)
    precision_aware_optimizer: bool
    distributed_optimizer: bool
    recompute: Recompute
    use_mbridge: bool
    vanilla_mbridge: bool
    use_dist_checkpointing: bool
    router_replay: Literal["disabled", "R2", "R3"]
    dynamic_bsz: bool
    max_token_len_per_device: int = Field(gt=0)
    transformer: dict[str, Any] = Field(description="megatron-core TransformerConfig overrides")
    optimizer: dict[str, Any] = Field(description="megatron-core OptimizerConfig overrides")


class Rollout(Strict):
    engine: Literal["vllm", "sglang", "hf"]
    tp: int = Field(gt=0)
    dp: int = Field(gt=0)
    ep: int = Field(gt=0)
    n: int = Field(gt=0, description="responses per prompt (the GRPO group size)")
    gpu_memory_utilization: float = Field(gt=0, le=1)
    max_model_len: Optional[int] = Field(gt=0, description="prompt + response must fit; null = their sum")
    temperature: float = Field(ge=0)
    top_p: float = Field(gt=0, le=1)
    top_k: int = Field(ge=-1)
    max_num_seqs: int = Field(gt=0)
    max_num_batched_tokens: int = Field(gt=0)
    enforce_eager: bool
    cudagraph_capture_sizes: Optional[list[int]]
    load_format: str
    log_prob_micro_batch_size_per_device: Optional[int] = Field(gt=0)
    engine_kwargs: dict[str, Any] = Field(description="free-form kwargs for the rollout engine")


class Data(Strict):
    train_files: Union[str, list[str]]
    val_files: Union[str, list[str]]
    train_batch_size: int = Field(gt=0, description="prompts per step")
    max_prompt_length: int = Field(gt=0)
    max_response_length: int = Field(gt=0)
    truncation: Literal["error", "left", "right", "middle"]
    filter_overlong_prompts: bool
    chat_template_kwargs: dict[str, Any]


class Algorithm(Strict):
    adv_estimator: Literal["grpo", "gae", "reinforce_plus_plus", "rloo", "grpo_passk", "opo", "gpg"]
    ppo_mini_batch_size: int = Field(gt=0, description="prompts per optimizer step")
    micro_batch_size_per_device: int = Field(gt=0)
    lr: float = Field(gt=0)
    use_kl_loss: bool
    kl_loss_coef: float = Field(ge=0)
    kl_loss_type: Literal["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "full"]
    use_kl_in_reward: bool
    entropy_coeff: float
    clip_ratio_low: float = Field(ge=0)
    clip_ratio_high: float = Field(ge=0)
    clip_ratio_c: float = Field(gt=1)
    loss_agg_mode: Literal[
        "token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"
    ]


class Trainer(Strict):
    project: str
    experiment: str
    total_steps: Optional[int] = Field(gt=0)
    total_epochs: int = Field(gt=0)
    save_freq: int = Field(ge=-1)
    test_freq: int = Field(ge=-1)
    val_before_train: bool
    ckpt_dir: Optional[str]
    logger: list[Literal["console", "file", "wandb", "mlflow", "swanlab", "tensorboard", "clearml", "trackio"]]
    resume_mode: Literal["auto", "disable", "resume_path"]
    balance_batch: bool
    seed: int
    timeout_s: int = Field(gt=0, description="NCCL/HCCL collective timeout")


class Local(Strict):
    """Knobs of the CPU embedded default (train.engine: trl) only: the tiny model and the arithmetic task."""

    digits: int = Field(gt=0, le=3, description="operand digits: 1 -> `a+b=` with a, b in 0..9")
    val_size: int = Field(gt=0, description="validation problems held out of training")
    hidden_size: int = Field(gt=0)
    layers: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    intermediate_size: int = Field(gt=0)
    warmup_steps: int = Field(ge=0, description="supervised format-only warm-up steps before GRPO")
    warmup_batch_size: int = Field(gt=0)
    warmup_lr: float = Field(gt=0)
    threads: int = Field(ge=0, description="torch threads; 0 = torch's default")
    max_train_seconds: float = Field(ge=0, description="stop GRPO after this long; 0 = no limit")
    lr_schedule: Literal["constant", "linear", "cosine"] = Field(description="GRPO learning-rate schedule")


class Recipe(Strict):
    cluster: Cluster
    model: Model
    train: Train
    rollout: Rollout
    data: Data
    algorithm: Algorithm
    trainer: Trainer
    env: dict[str, str] = Field(description="exported on every node, nothing implicit")
    stack: dict[str, str] = Field(description="package -> version or commit pins that preflight compares")
    verl_overrides: dict[str, Scalar | list | dict] = Field(description="raw verl Hydra overrides")
    local: Local
    monitor: Monitor = Field(description="health-alert thresholds and the regression gate (grpolab.monitor_schema)")

    # where the recipe came from; set by the loader, not part of the data
    _name: str = PrivateAttr(default="")
    _files: list[str] = PrivateAttr(default_factory=list)
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)

    @property
    def name(self) -> str:
        return self._name

    @property
    def files(self) -> list[str]:
        """The files that made this recipe, first layer first."""
        return list(self._files)

    def origin(self, dotted_key: str) -> str:
        """The file that last set this key (or one of its parents), for error messages."""
        parts = dotted_key.split(".")
        for i in range(len(parts), 0, -1):
            found = self._origins.get(".".join(parts[:i]))
            if found:
                return found
        return self._files[-1] if self._files else "<recipe>"

    @property
    def world_size(self) -> int:
        return self.cluster.nnodes * self.cluster.devices_per_node


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
    source: str = Field(description="where these facts come from")
