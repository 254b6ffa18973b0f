"""The one strict schema of a GRPO Lab recipe (the model cards' is grpolab.recipe.card_schema, on the same Strict base).

Every section forbids unknown keys (a misspelled key is an error that names the closest valid key). Fields
have NO defaults here on purpose: every default lives in params/base.yaml, the one home for defaults, which
every recipe inherits first. Field-level constraints (positive sizes, a fraction in (0, 1]) are checked here;
rules that relate several fields (TP divides the heads, ...) live in grpolab.rules. What a recipe says beyond its
fields (its world size, the value verl runs with for a key, a package's pinned version) the Recipe answers itself.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, StringConstraints

from grpolab.recipe.dotted import flatten
from grpolab.recipe.engines import ENGINE_NAME, ROLLOUTS, Engine, named
from grpolab.recipe.monitor_schema import Monitor
from grpolab.recipe.stack import parse_pin

Device = Literal["npu", "cuda", "cpu"]
Scalar = Union[bool, int, float, str, None]


ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"  # what a shell can export (the renderer's bash script needs it)
EnvName = Annotated[str, StringConstraints(pattern=ENV_NAME)]
# An env value written exactly `${NAME}` is a reference: the value is read from the launching shell's environment
# when the launch is rendered (or, where that shell lacks it, by Ray from each node's environment, as runtime_env
# env_vars are), so a secret never sits in a recipe file (`grpolab import` writes secrets this way).
ENV_REF = r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$"
MODULE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"  # a dotted Python module name
# What the installed verl (0.9.1) accepts, spelled as verl spells it: tracking backends (verl.utils.tracking),
# advantage estimators (core_algos.AdvantageEstimator), KL estimators (core_algos.kl_penalty: each also with a `+`
# suffix, the straight-through gradient)
Logger = Literal[
    "console", "file", "wandb", "mlflow", "swanlab", "tensorboard", "clearml", "trackio", "vemlp_wandb", "rl_insight"
]
AdvEstimator = Literal[
    "grpo",
    "gae",
    "reinforce_plus_plus",
    "reinforce_plus_plus_baseline",
    "remax",
    "rloo",
    "grpo_passk",
    "opo",
    "gpg",
    "rloo_vectorized",
    "grpo_vectorized",
    "optimal_token_baseline",
    "tir_optimal_token_baseline",
    "gdpo",
]
_KL = ("kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "full")
KlType = Literal[_KL + tuple(k + "+" for k in _KL)]  # type: ignore[valid-type]


def _list_of_one(value: Any) -> Any:
    """verl takes one logger name as well as a list of them: a name is a list of one."""
    return [value] if isinstance(value, str) else value


def _null_is_one(value: Any) -> Any:
    """verl takes null for a size that is off (virtual pipeline stages): null is 1."""
    return 1 if value is None else value


class Strict(BaseModel):
    # strict: no bool -> int, no "8" -> 8, no 0 -> false; no inf/nan floats (a typo, never a setting)
    model_config = ConfigDict(extra="forbid", validate_assignment=True, strict=True, allow_inf_nan=False)


class Cluster(Strict):
    """Where the run goes: node count and devices per node; set by a hardware profile in params/hardware/."""

    hardware: str = Field(description="hardware profile name, informative (e.g. ascend-a3)")
    nnodes: int = Field(gt=0, description="nodes in the Ray cluster")
    devices_per_node: int = Field(gt=0, description="accelerators per node (A3: 16 dies, A2: 8)")
    device: Device = Field(description="npu, cuda or cpu")
    device_memory_gb: float = Field(gt=0, description="memory of one device in GB")
    ray_address: Optional[str] = Field(
        description="the Ray cluster the launch is submitted to (`ray job submit --address`); null = RAY_ADDRESS or "
        "the embedded local head"
    )
    runtime_env: dict[str, Any] = Field(
        description="Ray runtime env of the job besides `env` (working_dir, pip, py_modules, ...: what "
        "`ray job submit --runtime-env-json/--working-dir` passes)"
    )
    # constants of the cost model (grpolab.recipe.cost); sources and fits in each params/hardware/ file
    peak_bf16_tflops: float = Field(gt=0, description="dense bf16 peak of one device, TFLOP/s")
    hbm_gbps: float = Field(gt=0, description="device memory bandwidth, GB/s")
    intra_node_gbps: float = Field(gt=0, description="device-to-device bandwidth inside a node, GB/s per device")
    inter_node_gbps: float = Field(gt=0, description="device-to-device bandwidth across nodes, GB/s per device")
    host_gbps: float = Field(gt=0, description="device <-> host memory bandwidth (offload), GB/s per device")
    collective_latency_us: float = Field(ge=0, description="fixed cost of one collective, microseconds")
    compute_efficiency: float = Field(gt=0, le=1, description="share of peak FLOP/s a step sustains (planner)")
    bandwidth_efficiency: float = Field(gt=0, le=1, description="share of peak bandwidth reached (planner)")


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

    engine: Annotated[str, StringConstraints(pattern=ENGINE_NAME)] = Field(
        description="megatron | fsdp | trl (grpolab.recipe.engines declares each), or another training engine the "
        "checked verl registers (its model_engine: veomni, torchtitan, ...; `grpolab check` says which it has)"
    )
    tp: int = Field(gt=0, description="tensor parallel size")
    pp: int = Field(gt=0, description="pipeline parallel size")
    cp: int = Field(gt=0, description="context parallel size")
    ep: int = Field(gt=0, description="expert parallel size")
    etp: int = Field(gt=0, description="expert tensor parallel size")
    vpp: Annotated[int, BeforeValidator(_null_is_one)] = Field(
        gt=0, description="virtual pipeline stages per PP rank (1 or null = off)"
    )
    pp_layout: Optional[str] = Field(description="Megatron pipeline layout, e.g. 'Et*10|t*12|...|t*4L'")
    sp: bool = Field(description="Megatron sequence parallel (verl's default: on; takes effect only when tp > 1)")
    ulysses_sp: int = Field(gt=0, description="FSDP Ulysses sequence-parallel group size (1 = off)")
    fsdp_strategy: Annotated[str, StringConstraints(pattern=ENGINE_NAME)] = Field(
        description="FSDP version (verl's actor.strategy): fsdp, fsdp2, or another strategy the checked verl's FSDP "
        "engine accepts (fsdp_turbo from 0.9.1; `grpolab check` says which)"
    )
    param_offload: bool
    ref_param_offload: Optional[bool] = Field(
        description="offload the reference model's parameters; null = as param_offload"
    )
    grad_offload: bool
    optimizer_offload: bool = Field(
        description="verl's optimizer_offload: optimizer state off the device between steps"
    )
    optimizer_cpu_offload: bool = Field(
        description="megatron-core's optimizer_cpu_offload: run the optimizer step on the host CPU (a different setting)"
    )
    optimizer_offload_fraction: float = Field(ge=0, le=1, description="share of the step on the CPU when cpu-offloaded")
    precision_aware_optimizer: bool
    distributed_optimizer: bool
    recompute: Recompute
    use_mbridge: bool
    vanilla_mbridge: bool
    use_dist_checkpointing: bool
    router_replay: Literal["disabled", "R2", "R3"]
    dynamic_bsz: bool
    max_token_len_per_device: int = Field(gt=0)
    torch_compile: bool = Field(description="actor/ref use_torch_compile (verl's default: on)")
    gradient_checkpointing: bool = Field(description="model.enable_gradient_checkpointing (verl's default: on)")
    pad_bshd_to_minibatch_max: bool = Field(description="megatron: pad padded batches to the mini-batch maximum")
    dist_checkpointing_path: Optional[str] = Field(
        description="megatron dist-checkpoint of the model (with use_dist_checkpointing); null = none"
    )
    transformer: dict[str, Any] = Field(description="megatron-core TransformerConfig overrides")
    optimizer: dict[str, Any] = Field(description="megatron-core OptimizerConfig overrides")


class ValKwargs(Strict):
    """Sampling for validation (verl's rollout.val_kwargs)."""

    n: int = Field(gt=0)
    do_sample: bool
    temperature: float = Field(ge=0)
    top_p: float = Field(gt=0, le=1)
    top_k: int = Field(ge=-1)


class Rollout(Strict):
    engine: Annotated[str, StringConstraints(pattern=ENGINE_NAME)] = Field(
        description=f"{' | '.join(ROLLOUTS)} (hf: train.engine trl only), or another rollout the checked verl "
        "registers (`rollout.name`; a plugin may register one through env VERL_USE_EXTERNAL_MODULES): `grpolab check` "
        "says which it has and which rules it skips for one GRPO Lab does not know"
    )
    tp: int = Field(gt=0)
    dp: int = Field(gt=0)
    ep: int = Field(gt=0)
    n: int = Field(gt=0, description="responses per prompt (the GRPO group size)")
    gpu_memory_utilization: float = Field(gt=0, le=1)
    max_model_len: Optional[int] = Field(
        gt=0, description="prompt + response must fit; null = verl's default (the model's context length)"
    )
    temperature: float = Field(ge=0)
    top_p: float = Field(gt=0, le=1)
    top_k: int = Field(ge=-1)
    max_num_seqs: int = Field(gt=0)
    max_num_batched_tokens: int = Field(gt=0)
    enforce_eager: bool
    cudagraph_capture_sizes: Optional[list[int]]
    load_format: str
    log_prob_micro_batch_size_per_device: Optional[int] = Field(gt=0)
    enable_chunked_prefill: bool
    enable_prefix_caching: bool
    free_cache_engine: bool = Field(description="release the KV cache between rollouts")
    calculate_log_probs: bool = Field(description="the rollout engine returns log-probs of its samples")
    val_kwargs: ValKwargs
    engine_kwargs: dict[str, Any] = Field(description="free-form kwargs for the rollout engine")
    update_weights_bucket_mb: int = Field(
        gt=0, description="weight-sync bucket in MiB (verl checkpoint_engine.update_weights_bucket_megabytes)"
    )
    attention_backend: Optional[str] = Field(
        description="SGLang attention backend (`ascend` on NPU); null = SGLang's own choice"
    )
    routing_replay: bool = Field(
        description="record the MoE routing during rollout (verl enable_rollout_routing_replay; R3 needs it)"
    )


class Data(Strict):
    train_files: Union[str, list[str]]
    val_files: Union[str, list[str]]
    train_batch_size: int = Field(
        ge=0,
        description="prompts per step; 0 only for an entry point whose trainer takes its own batch (verl's "
        "fully_async_policy asserts 0: `grpolab check` refuses 0 for any other)",
    )
    max_prompt_length: int = Field(gt=0)
    max_response_length: int = Field(gt=0)
    # what the cost model (grpolab plan, the monitor's estimate) expects a step to hold; never rendered
    mean_prompt_length: Optional[int] = Field(gt=0, description="expected mean prompt tokens; null = the maximum")
    mean_response_length: Optional[int] = Field(
        gt=0, description="expected mean response tokens (the cost model's); null = the maximum"
    )
    truncation: Literal["error", "left", "right", "middle"]
    filter_overlong_prompts: bool
    chat_template_kwargs: dict[str, Any]
    prompt_key: str = Field(description="the dataset column that holds the prompt")
    shuffle: bool
    sample_rows: int = Field(gt=0, description="rows `grpolab data` (and check) read from the start of each file")


# `path.py:name` or `path.py` (the name is then verl's default, compute_score)
REWARD_FUNCTION = r"^[^:]+\.py(:[A-Za-z_][A-Za-z0-9_]*)?$"


class Reward(Strict):
    """The reward: verl's built-in by data_source, or a function of your own; the reward manager that calls it."""

    function: Optional[Annotated[str, StringConstraints(pattern=REWARD_FUNCTION)]] = Field(
        description="`path.py:name` of a reward with verl's signature; null = verl's built-in reward of each row's "
        "data_source"
    )
    kwargs: dict[str, Any] = Field(description="extra keyword arguments to the function (verl's reward_kwargs)")
    manager: str = Field(description="the reward manager, by its name in the installed verl's registry")
    max_step_share: float = Field(
        gt=0, le=1, description="the dry run: one step's reward calls may take at most this share of its estimate"
    )
    max_call_ms: float = Field(gt=0, description="the dry run without a step estimate: at most this per call")
    dry_run_timeout_s: float = Field(gt=0, description="the dry run stops the reward after this long")


class Algorithm(Strict):
    adv_estimator: AdvEstimator
    ppo_mini_batch_size: int = Field(gt=0, description="prompts per optimizer step")
    micro_batch_size_per_device: int = Field(gt=0)
    lr: float = Field(gt=0)
    lr_warmup_steps: int = Field(ge=-1, description="-1 = verl's warm-up ratio (0: none)")
    weight_decay: float = Field(ge=0)
    grad_clip: float = Field(gt=0, description="gradient-norm clipping threshold")
    use_kl_loss: bool
    kl_loss_coef: float = Field(ge=0)
    kl_loss_type: KlType
    use_kl_in_reward: bool
    entropy_coeff: float
    clip_ratio_low: float = Field(ge=0)
    clip_ratio_high: float = Field(ge=0)
    clip_ratio_c: float = Field(gt=1)
    loss_agg_mode: Literal[
        "token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"
    ]


CauseId = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9-]*$")]  # an id of the diagnosis's cause registry


class Restarts(Strict):
    """Automatic restarts after a failure (grpolab.heal): the job's own driver diagnoses the failed attempt's log
    and resumes it from its last complete checkpoint only after a cause this policy names."""

    max: int = Field(ge=0, description="restarts allowed within `within_s` seconds; 0 = never restart")
    within_s: float = Field(gt=0, description="the window, in seconds, in which at most `max` restarts happen")
    on_causes: list[CauseId] = Field(
        description="the diagnosis's cause ids (docs/causes.md) after which the run restarts; any other cause, an "
        "id the diagnosis does not know, or no cause at all stops it"
    )
    exclude_on: list[CauseId] = Field(
        description="causes after which the node the diagnosis names as the origin is left out of the next attempt"
    )
    backoff_s: float = Field(ge=0, description="wait before the first restart; doubled before each further one")
    too_small: Literal["wait", "stop"] = Field(
        description="when the nodes left no longer hold the recipe's layout: wait (up to wait_s) for nodes, or stop"
    )
    wait_s: float = Field(ge=0, description="how long `too_small: wait` waits for enough nodes")


class Trainer(Strict):
    project: str
    experiment: str
    total_steps: Optional[int] = Field(gt=0)
    total_epochs: int = Field(gt=0)
    save_freq: int = Field(ge=-1, description="checkpoint every N steps; verl 0.9.1 saves only when > 0")
    save_contents: list[Literal["model", "optimizer", "extra", "hf_model"]] = Field(
        description="what a checkpoint holds (verl: actor.checkpoint.save_contents)"
    )
    load_strict: bool = Field(description="a checkpoint must match the model exactly when loaded")
    rollout_data_dir: Optional[str] = Field(description="dump rollouts here each step; null = off")
    resume_path: Optional[str] = Field(description="checkpoint to resume from with resume_mode resume_path")
    test_freq: int = Field(ge=-1)
    val_before_train: bool
    ckpt_dir: Optional[str]
    logger: Annotated[list[Logger], BeforeValidator(_list_of_one)] = Field(description="a name or a list of names")
    resume_mode: Literal["auto", "disable", "resume_path"]
    balance_batch: bool
    seed: int
    timeout_s: int = Field(gt=0, description="NCCL/HCCL collective timeout")
    entrypoint: Annotated[str, StringConstraints(pattern=MODULE)] = Field(
        description="the Python module verl runs as (`python3 -m ...`): verl.trainer.main_ppo, or a recipe's own "
        "entry point such as recipe.dapo.main_dapo"
    )
    entry_dir: Optional[str] = Field(
        description="the folder the entry point's package is found in (a verl checkout with recipe/): check and "
        "render compose against the entry point's own Hydra config there; null = verl's own entry points"
    )
    config_path: Optional[str] = Field(
        description="the launch's `--config-path` (relative: to the entry module's folder); null = the entry "
        "point's own (its @hydra.main)"
    )
    config_name: Optional[str] = Field(
        description="the launch's `--config-name`; null = the entry point's own (main_ppo: ppo_trainer)"
    )
    # checkpoint retention (grpolab.jobs.retention)
    keep_ckpts: Optional[int] = Field(gt=0, description="keep the newest N checkpoints; null = all")
    keep_best_metric: Optional[str] = Field(
        description="also keep the checkpoint with the best value of this validation metric; null = off"
    )
    keep_best_mode: Literal["max", "min"] = Field(description="which value of keep_best_metric is best")
    # the job's own driver (grpolab.heal.supervise): restarts and per-node telemetry
    restarts: Restarts
    telemetry_s: float = Field(
        ge=0, description="seconds between two samples of every node (devices, host memory, CPU, disk); 0 = off"
    )


class Local(Strict):
    """Knobs of the CPU embedded default (train.engine: trl) only: the tiny model and its warm-up (the task is data:
    data.train_files / data.val_files)."""

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


Mode = Literal["sync", "colocate_async", "separate_async"]


def sync_step(value: Optional[int], train_batch_size: int, ppo_mini_batch_size: int) -> int:
    """schedule.parameter_sync_step as verl runs it: the value, else train_batch_size / ppo_mini_batch_size (what
    separate_async asserts it equals)."""
    return value or max(train_batch_size // ppo_mini_batch_size, 1)


class Switch(Strict):
    """separate_async only: lend the trainer's idle devices to rollout between steps, and take them back once the
    replay buffer holds enough for the next step (verl 0.9.1+: trainer.v1.separate_async.hybrid_rollout.*)."""

    enable: bool = Field(description="hybrid step switching (verl's enable_switch)")
    threshold_ratio: float = Field(
        gt=0, le=1, description="share of train_batch_size sampleable before the lent devices are taken back"
    )
    adaptive: bool = Field(description="adapt the threshold to the trainer's idle time (adaptive_switch_threshold)")
    step_up: float = Field(ge=0, le=1, description="added to the ratio after sustained trainer idle")
    step_down: float = Field(ge=0, le=1, description="taken from the ratio after a sustained calm")
    release_steps: int = Field(gt=0, description="idle or calm steps in a row before the ratio moves")
    cost_window: int = Field(gt=0, description="recent switch costs the decision averages")


class Schedule(Strict):
    """How rollout and training share a step: verl's V1 trainer modes (verl 0.9.0+: trainer.v1.*). sync: generate,
    then train, on the same devices; colocate_async: the same devices, with partial rollout and warm-up batches
    (generation carries over between steps); separate_async: training on the trainer's nodes (cluster.nnodes) while
    a rollout-only pool (rollout_nnodes) generates continuously, weights synced every parameter_sync_step
    mini-batches."""

    mode: Mode = Field(description="sync | colocate_async | separate_async (verl's trainer mode)")
    warmup_batches: float = Field(
        ge=0, description="batches generated before the first step (num_warmup_batches of the async modes)"
    )
    parameter_sync_step: Optional[int] = Field(
        gt=0,
        description="separate_async: mini-batches between weight syncs; verl asserts train_batch_size = "
        "parameter_sync_step x ppo_mini_batch_size; null = train_batch_size / ppo_mini_batch_size",
    )
    max_off_policy: Optional[int] = Field(
        gt=0, description="most model versions a trajectory may span (sampler max_off_policy_threshold); null = off"
    )
    off_policy_strategy: Literal["drop", "wait"] = Field(
        description="a trajectory past max_off_policy: drop its group, or wait for it (max_off_policy_strategy)"
    )
    rollout_nnodes: int = Field(ge=0, description="separate_async: nodes of the rollout-only pool (0 = none)")
    rollout_devices_per_node: Optional[int] = Field(
        ge=0, description="devices per node of the rollout-only pool; null = cluster.devices_per_node"
    )
    sync_backend: str = Field(
        description="the checkpoint engine that sends weights to the rollout (naive, nccl, hccl, nixl, ...): "
        "separate_async needs one other than naive"
    )
    hybrid_replicas: bool = Field(
        description="separate_async: rollout replicas also on the trainer's devices (verl's hybrid engine; false = "
        "rollout only on the rollout-only pool, verl 0.9.1+)"
    )
    switch: Switch


class Recipe(Strict):
    cluster: Cluster
    model: Model
    train: Train
    rollout: Rollout
    data: Data
    algorithm: Algorithm
    reward: Reward
    trainer: Trainer
    env: dict[EnvName, str] = Field(
        description="exported on every node, nothing implicit; a value `${NAME}` is read from the launching shell"
    )
    secrets: list[EnvName] = Field(description="env names whose values are secret (besides names that look secret)")
    stack: dict[str, str] = Field(description="package -> version or commit pins that preflight compares")
    verl_overrides: dict[str, Scalar | list | dict] = Field(description="raw verl Hydra overrides")
    schedule: Schedule = Field(description="sync or asynchronous training (verl's V1 trainer modes)")
    local: Optional[Local] = Field(
        description="the CPU trainer's settings (train.engine trl only): params/engines/trl.yaml"
    )
    monitor: Monitor = Field(
        description="health-alert thresholds and the regression gate (grpolab.recipe.monitor_schema)"
    )

    # where the recipe came from; set by the loader, not part of the data
    _name: str = PrivateAttr(default="")
    _files: list[str] = PrivateAttr(default_factory=list)
    _origins: dict[str, str] = PrivateAttr(default_factory=dict)
    _load_notes: list = PrivateAttr(default_factory=list)  # loader warnings (Problems), e.g. a key --set twice

    def set_origin(
        self,
        name: str,
        files: list[str] | None = None,
        origins: dict[str, str] | None = None,
        notes: list | None = None,
    ) -> Recipe:
        """Record where this recipe came from (the loader's call; the planner renames a recipe made from a bare
        model card): its name, its files first layer first, the file that set each dotted key, loader warnings."""
        self._name = name
        if files is not None:
            self._files = list(files)
        if origins is not None:
            self._origins = dict(origins)
        if notes is not None:
            self._load_notes = list(notes)
        return self

    @property
    def name(self) -> str:
        return self._name

    @property
    def load_notes(self) -> list:
        """Warnings the loader found (grpolab.problems.Problem): validate() reports them with the rules'."""
        return list(self._load_notes)

    @property
    def files(self) -> list[str]:
        """The files that made this recipe, first layer first."""
        return list(self._files)

    @property
    def origins(self) -> dict[str, str]:
        """{dotted key: the file or `--set KEY=VALUE` that set it} (a copy; grpolab.recipe.loader.overrides_of)."""
        return dict(self._origins)

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

    @property
    def rollout_pool_world(self) -> int:
        """Devices of the rollout-only pool (separate_async; 0 when there is none): they generate and never train."""
        s = self.schedule
        return s.rollout_nnodes * (s.rollout_devices_per_node or self.cluster.devices_per_node)

    @property
    def rollout_pool(self) -> bool:
        """Does the launch have a rollout-only pool? Only separate_async creates one (verl reads its size there)."""
        return self.schedule.mode == "separate_async" and self.rollout_pool_world > 0

    @property
    def parameter_sync_step(self) -> int:
        """The mini-batches between weight syncs verl runs with: the field, else what verl's assertion asks."""
        return sync_step(
            self.schedule.parameter_sync_step, self.data.train_batch_size, self.algorithm.ppo_mini_batch_size
        )

    # What a recipe says beyond its fields, as the rules read it: asked of the recipe itself, like world_size.

    @property
    def engine(self) -> Engine:
        """train.engine's declaration (grpolab.recipe.engines): what this engine does differently."""
        return named(self.train.engine)

    @property
    def sequence_parallel(self) -> bool:
        """Megatron sequence parallel in effect. Accepts `train.sp` as an int (1 = off, = tp on) or a bool."""
        t = self.train
        on = bool(t.sp) if isinstance(t.sp, bool) else t.sp > 1
        return self.engine.model_parallel and on and t.tp > 1

    def flat_overrides(self) -> dict[str, Any]:
        """verl_overrides as {dotted key: value}: a recipe may nest them (`--set verl_overrides.a.b=1` does)."""
        return {key.lstrip("+"): value for key, value in flatten(self.verl_overrides).items()}

    def override(self, key: str, default: Any) -> Any:
        """The value verl runs with for a verl key: a raw verl override wins over the recipe's field (`default`),
        since the escape hatch is rendered last."""
        return self.flat_overrides().get(key, default)

    def pinned_version(self, package: str) -> str | None:
        """The version the recipe pins a package at; a branch such as core_r0.16.0 reads as 0.16.0; None if
        unknown."""
        text = self.stack.get(package)
        if text is None:
            return None
        try:
            pin = parse_pin(package, text)
        except ValueError:
            return None
        if pin.version:
            return pin.version
        match = re.search(r"(\d+\.\d+(?:\.\d+)*)", pin.ref or "")
        return match.group(1) if match else None
