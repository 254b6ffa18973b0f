"""The rule registry: every rule id `grpolab check` can report, declared once with what the rest derives from it.

Each rule has its id, default severity, family (the module of grpolab.rules that checks it, or the layer that
reports it), the side of a launch it concerns, whether a whole parallel layout can fix it, whether it needs the
model's facts (a card or config.json), what it checks and the public report it comes from. From this table come:
the id check of every problem collected (grpolab.rules.checks.known), check's whole-layout hints
(`layout_fix_rules`), what the planner needs (`problem_side`, `layout`, `layout_bound`), the checks
skipped without a model card (`card_rules`), the default severity of a rule's problem, and docs/rules.md. Plain
data: it imports only grpolab.problems (a problem's severity).
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Literal

from grpolab.problems import Severity
from grpolab.rules.registry_data import DATA_RULES, EITHER
from grpolab.rules.registry_schedule import SCHEDULE_RULES

Side = Literal["train", "rollout", "both", "none"]
Card = Literal["", "part", "all"]


@dataclass(frozen=True)
class Rule:
    id: str
    family: str  # the module of grpolab.rules that checks it (or the layer that reports it: recipe, verl, gate)
    side: Side  # the part of the launch it concerns; "both": the problem's key says which
    doc: str  # what it checks
    source: str  # the public report it comes from
    _: KW_ONLY
    severity: Severity = "error"  # the default; a check may report a problem of the rule at the other severity
    severity_doc: str = ""  # the severities as docs/rules.md states them, when a rule has more than its default
    layout: bool = False  # a whole valid layout fixes it: check's fix names the nearest whole layouts (grpolab plan)
    layout_bound: bool = False  # the layout decides it whatever key it names (per-device memory, the DP split)
    card: Card = ""  # needs the model's facts: "all" (skipped without them), "part" (checked partly), "" (not at all)
    stage: Literal["check", "data"] = "check"  # data: only `grpolab data` reports it (it runs reward, tokenizer)
    engine_layout: bool = False  # reasons about the training engine's layout: skipped where it is unknown (veomni)
    train_batch: bool = False  # reasons about data.train_batch_size: skipped where the entry point takes its own (0)
    rollout_engine: bool = False  # reads vLLM's / SGLang's own settings: nothing to check in another rollout engine


SEEDED = "grpolab's seeded list"

RULES: tuple[Rule, ...] = (
    Rule(
        "schema",
        "recipe",
        "none",
        "Every key exists, is spelled right and has the right type and range (one strict pydantic schema); a "
        "card agrees with the config.json at model.path.",
        "grpolab's own contract",
        severity_doc=EITHER,
    ),
    Rule(
        "model-card",
        "card",
        "none",
        "The model's facts (a card in params/models/ or the config.json at model.path) are found; without them "
        "the checks that need them are skipped and named in one warning, with how to add a card.",
        "GRPO Lab issue 21 (check refused every model without a hand-written card)",
        severity="warning",
    ),
    Rule(
        "world-divisible",
        "train_layout",
        "train",
        "Megatron: the world size is divisible by tp x pp x cp; FSDP: by the Ulysses size.",
        f"{SEEDED} (Megatron's parallel_state asserts it at start-up)",
        layout=True,
        engine_layout=True,
    ),
    Rule(
        "expert-divisible",
        "train_layout",
        "train",
        "Megatron: the world size is divisible by ep x etp x pp.",
        f"{SEEDED} (Megatron's parallel_state)",
        layout=True,
        engine_layout=True,
    ),
    Rule(
        "heads-tp",
        "train_layout",
        "train",
        "TP (FSDP: the Ulysses size) divides the attention heads.",
        SEEDED,
        layout=True,
        card="all",
        engine_layout=True,
    ),
    Rule(
        "kv-heads-tp",
        "train_layout",
        "train",
        "GQA models: training TP divides the KV heads.",
        SEEDED,
        layout=True,
        card="all",
        engine_layout=True,
    ),
    Rule(
        "experts-ep",
        "train_layout",
        "train",
        "EP divides the routed experts; a dense model has EP 1.",
        SEEDED,
        layout=True,
        card="all",
        engine_layout=True,
    ),
    Rule(
        "pp-layers",
        "pipeline",
        "train",
        "Megatron's split of the layers is valid: layers divisible by pp x vpp, or an uneven split given "
        "as num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage whose middle stages "
        "share the rest evenly (and every stage divisible by vpp).",
        f"{SEEDED}; first/last layouts: Megatron-LM issue 2718 (a 48-layer PP 2 "
        "first/last split silently dropped layers; checks added in Megatron-LM PR 2947)",
        layout=True,
        card="all",
        engine_layout=True,
    ),
    Rule(
        "pp-layout",
        "pipeline",
        "train",
        "An explicit pipeline layout parses, has pp x vpp stages, places every layer, E first and L last; "
        "GLM-5.2's shared DSA indexer: every stage of training's split (layout, even or first/last) AND "
        "of the rollout's pipeline split (vLLM's even split or VLLM_PP_LAYER_PARTITION) starts on an "
        "allowed layer.",
        "verl PR 7788 (GLM-5.2 recipe and its layouts)",
        layout=True,
        card="all",
        engine_layout=True,
    ),
    Rule(
        "rollout-world",
        "rollout_layout",
        "rollout",
        "The world size is divisible by rollout tp x dp.",
        SEEDED,
        layout=True,
    ),
    Rule(
        "rollout-ep",
        "rollout_layout",
        "rollout",
        "Rollout EP > 1 equals rollout tp x dp (not for TensorRT-LLM) and divides the experts; a MoE tensor-parallel "
        "size (moe_tensor_parallel_size) is for TensorRT-LLM only.",
        f"{SEEDED} (verl asserts it inside the workers)",
        layout=True,
        card="part",
    ),
    Rule(
        "rollout-heads",
        "rollout_layout",
        "rollout",
        "Rollout TP divides the attention heads, and divides or is a multiple of the KV heads.",
        "vllm issue 4232, vllm issue 414 (heads not divisible by tensor parallel size)",
        layout=True,
        card="all",
    ),
    Rule(
        "batch-divisible",
        "batch",
        "train",
        "train batch x n splits over train DP x micro-batch, and Megatron's real mini-batch "
        "(mini-batch x n) over DP x micro-batch.",
        "verl issue 1004 (`assert self.batch.batch_size[0] % mini_batch_size == 0`), verl issue 1524",
        layout_bound=True,
        engine_layout=True,
        train_batch=True,
    ),
    Rule(
        "mini-batch",
        "batch",
        "train",
        "The mini-batch is no larger than, and divides, the train batch.",
        SEEDED,
        train_batch=True,
    ),
    Rule(
        "lengths",
        "lengths",
        "both",
        "prompt + response fits rollout.max_model_len and the model's context.",
        "verl issue 673 (prompt longer than max_model_len)",
        card="part",
    ),
    Rule(
        "learning-rate",
        "learning_rate",
        "train",
        "algorithm.lr is within 10 x of the learning rates GRPO / PPO runs were published with for the engine "
        "(verl: 5e-8 to 3e-5; the CPU trainer: 1e-6 to 1e-3, tiny's built-in model included); the table with "
        "each source is below.",
        "verl 0.9.1's and TRL 1.16's default lr, 62 recorded public verl launches (tests/data/corpus), NeMo RL's "
        "GRPO docs; GRPO Lab issue 44 (tiny at lr 1000 ended SUCCEEDED with its policy ruined)",
        severity="warning",
    ),
    Rule(
        "env-required",
        "env",
        "none",
        "Environment a model/stack needs (GLM-5.2 patch flag, AIV with CANN >= 8.5 and mbridge, "
        "ASCEND_RT_VISIBLE_DEVICES covering a node, a wandb key or mode).",
        "verl PR 7779 (GLM-5.2 vllm-ascend patch); verl PR 6285 (AIV)",
        severity_doc=EITHER,
        card="part",
    ),
    Rule(
        "stack",
        "pins",
        "none",
        "Pins parse; verl's pin matches the installed verl and its requirements; vllm-ascend 0.23 pins its "
        "CANN / torch / torch_npu / triton-ascend (params/stack_rules.yaml); preflight compares pins with "
        "what is installed, a setuptools_scm `0.23.1.devN+g<sha>` by its commit.",
        "vllm-ascend issue 16559 (releases/v0.23.0 installs as 0.23.1.dev0+g<sha>); verl's Ascend install "
        "guidance for the vLLM path (verl PR 6807, PR 7788)",
        severity_doc=EITHER,
    ),
    Rule(
        "engine-support",
        "engines",
        "both",
        "The engines support the requested combination (FSDP parallelism, TRL on CPU, verl on "
        "GPU/NPU only, router replay on MoE), and the checked verl has the training engine and FSDP strategy asked "
        "(train.engine: each model_engine it registers, read from its own config per version; train.fsdp_strategy: "
        "those its FSDP engine accepts).",
        SEEDED,
        severity_doc=EITHER,
        card="part",
    ),
    Rule(
        "engine-layout",
        "engines",
        "train",
        "A training engine whose layout GRPO Lab's rules cannot reason about (another model_engine verl registers, "
        "such as veomni or torchtitan, or an FSDP strategy other than fsdp and fsdp2, such as fsdp_turbo) is "
        "checked without them: one warning names every rule skipped and why, instead of refusing the recipe.",
        "GRPO Lab issue 47 (veomni and fsdp_turbo launches refused though verl 0.9.1 runs them)",
        severity="warning",
    ),
    Rule(
        "verl-schema",
        "verl",
        "none",
        "The rendered overrides compose against the installed verl's own Hydra config.",
        SEEDED,
        severity_doc=EITHER,
    ),
    Rule(
        "verl-version",
        "verl_version",
        "none",
        "What the recipe asks means the same on the verl checked (0.7.1 to main): a first-class field whose key "
        "that version's workers read nothing for (trainer.timeout_s after 0.7.1, train.grad_offload), a value "
        "that version rejects (loss_agg_mode token-sum before 0.9.0), a base.yaml default that differs from "
        "that version's own, and a verl outside the supported range.",
        "each version's own source, derived into lib/grpolab/data/verl_versions.json by scripts/verl_versions.py",
        severity_doc=EITHER,
    ),
    Rule(
        "unknown-override",
        "overrides",
        "train",
        "train.transformer / train.optimizer keys are megatron-core (or MindSpeed) fields.",
        SEEDED,
        severity="warning",
    ),
    Rule(
        "override-shadows",
        "gate",
        "none",
        "A verl_overrides key does not replace what a first-class field renders (the rules check the field, "
        "Hydra would take the override unchecked).",
        "grpolab's own contract (the escape hatch is checked like the fields it would shadow)",
    ),
    Rule(
        "memory",
        "device_memory",
        "both",
        "A documented estimate of per-device training state and rollout weights fits device memory.",
        f"{SEEDED} (estimate: grpolab.recipe.memory)",
        layout=True,
        layout_bound=True,
        card="all",
        engine_layout=True,
    ),
    # ------------------------------------------------------------------ learned from real failures (issue 13)
    Rule(
        "rollout-node",
        "rollout_layout",
        "rollout",
        "Class 1. Rollout TP divides the devices per node when rollout DP > 1; rollout TP larger than a "
        "node is a warning (TP over the network).",
        "verl issue 6856 (vLLM rollout DP > 1 fails when a replica spans nodes); verl 0.9.1 "
        "vllm_async_server.py asserts `gpus_per_node % tensor_model_parallel_size == 0`; verl PR 5339",
        severity_doc="error (vLLM), warning (SGLang, TP over nodes)",
    ),
    Rule(
        "dispatch-chunk",
        "batch",
        "rollout",
        "Class 2. train batch x n (and data.val_batch_size) split evenly over the rollout's "
        "agent-loop workers (rollout.agent.num_workers, 8 by default); the split over the training "
        "DP groups is batch-divisible.",
        "verl issue 473 and issue 1004 (`only support equal chunk`); verl PR 115",
        train_batch=True,
    ),
    Rule(
        "vpp-microbatches",
        "batch",
        "train",
        "Class 3. With vpp > 1 the micro-batches per mini-batch are >= pp and a multiple of pp.",
        "verl issue 1004 (`The number of contiguous micro-batches in a virtual pipeline "
        "stage should range in [PP=2 , M=1]`); NVIDIA-NeMo/Speech issue 14288",
        engine_layout=True,
        train_batch=True,
    ),
    Rule(
        "dynamic-batch",
        "batch",
        "train",
        "Class 5. With dynamic batching the token budget per device (x cp for Megatron, x Ulysses "
        "for FSDP) holds the longest sample, prompt + response.",
        "verl issue 3415 (budget x cp); agentscope-ai/Trinity-RFT issue 398 and "
        "Weiyun1025/verl-internvl issue 15 (`max_token_len must be greater than the sequence length`)",
        engine_layout=True,
    ),
    Rule(
        "seq-padding",
        "lengths",
        "train",
        "Class 6. Megatron with CP > 1 or sequence parallel and no packing: prompt + response is a "
        "multiple of tp x cp x 2 (tp without CP); with packing, tp x cp x 2 above verl's 128-token "
        "synthetic padding rows is a warning.",
        "verl issue 6050 (`First dimension of the tensor should be divisible by tensor parallel size`); "
        "verl issue 5981, PR 4656, PR 6001, PR 7593 (short samples under CP)",
        severity_doc="error; warning (packing)",
        engine_layout=True,
    ),
    Rule(
        "linear-attention",
        "linear_attention",
        "both",
        "Class 7. Gated DeltaNet models (Qwen3.5, Qwen3-Next): training and rollout TP divide the "
        "linear key and value heads; CP > 1 needs megatron-core >= 0.18 (an unpinned "
        "megatron-core is a warning) and tp x cp dividing those heads.",
        "Megatron-LM issue 3883 (`Gated delta net does not support context parallel`), GDN CP in "
        "Megatron-LM PR 2614 / PR 2642; verl PR 7604 (Ascend stack on core_r0.18.0)",
        card="all",
        rollout_engine=True,
    ),
    Rule(
        "weight-bucket",
        "device_memory",
        "both",
        "Class 10. The largest single tensor (embedding, or a fused expert tensor named in the card) "
        "fits in the weight-sync bucket (rollout.update_weights_bucket_mb); on CUDA verl 0.9.1 sends it on its own "
        "(warning).",
        "verl issue 5779 (Qwen3.5-27B, GPU), verl issue 5952 (NPU), verl PR 5963 (Qwen3.5-122B)",
        severity_doc="error (NPU), warning (CUDA)",
        card="all",
    ),
    Rule(
        "router-replay",
        "engines",
        "both",
        "Class 11. train.router_replay agrees with rollout.routing_replay: R2 without it, R3 with it; "
        "routing replay without replay or on a dense model is a warning.",
        "verl 0.9.1 ray_trainer.py (`Detected conflicting router replay configuration`); verl PR 4101, verl PR 7805",
        severity_doc=EITHER,
        card="part",
    ),
    Rule(
        "rollout-backend",
        "backends",
        "rollout",
        "Class 12. Every attention backend the recipe names for its rollout engine, wherever it names it "
        "(rollout.attention_backend, rollout.engine_kwargs, verl_overrides, env VLLM_ATTENTION_BACKEND), runs on "
        "its device (params/attention_backends.yaml): on NPU SGLang runs `ascend` only, whatever other name is "
        "given (an error, also when none is set: verl would pick a CUDA one), and a vLLM backend is a warning "
        "(vllm-ascend replaces it with its own); on CUDA a backend of another device is an error, a name the table "
        "does not know a warning; the SGLang field on vLLM is a warning.",
        "sgl-project/sglang issue 8004 and PR 7722 (Ascend attention backend); verl 0.9.1 "
        "async_sglang_server.py defaults to fa3 / flashinfer; the engines' backend lists and vllm-ascend's "
        "platform.py, cited in params/attention_backends.yaml",
        severity_doc=EITHER,
        rollout_engine=True,
    ),
    Rule(
        "deprecated-key",
        "overrides",
        "none",
        "Class 13. Deprecated verl keys (ppo_micro_batch_size, log_prob_micro_batch_size, ...) are "
        "refused beside their `_per_gpu` replacement, which grpolab always sets for the actor, ref and "
        "rollout; alone (critic, reward model) they are a warning.",
        "verl 0.9.1 workers/config/actor.py (`You have set both ...`); reported in the field, no "
        "public issue number found",
        severity_doc=EITHER,
    ),
    Rule(
        "startup-timeout",
        "env",
        "none",
        "Class 14. Models of 32B+ on 64+ devices: trainer.timeout_s >= 1800 and on NPU "
        "HCCL_CONNECT_TIMEOUT >= 1200 (default 120 s).",
        "modelscope/ms-swift PR 8281 (HCCL connect timeout at start-up); vllm-ascend PR 10949 review "
        "(1200 s for 4 x 16 NPUs); foundation-model-stack/fms-fsdp PR 19 (NCCL timeout at 70B init)",
        severity="warning",
        card="all",
    ),
    Rule(
        "known-bad",
        "pins",
        "none",
        "Class 15. Known bad version / environment combinations, as data in params/stack_rules.yaml (listed below).",
        "per entry (below)",
        severity_doc="per entry",
        card="part",
    ),
    Rule(
        "checkpoint-space",
        "checkpoint_space",
        "none",
        "The checkpoints kept at once (one checkpoint from the layout verl writes, as trainer.save_contents names "
        "it, times what trainer.keep_ckpts keeps: grpolab.recipe.checkpoint_size) against the free space where "
        "they go, when that is on this machine (a cpu recipe, or a trainer.ckpt_dir that exists here or whose "
        "parent does); preflight "
        "does it on every node. Every checkpoint kept and a budget in epochs is a warning.",
        "verl #2860 (a 10,480 s save), verl #3792 (keeping checkpoints), verl/utils/checkpoint/* (the layouts)",
        severity_doc="error (a warning when only each node's 1/nnodes share fits)",
        card="all",
    ),
    Rule(
        "checkpoint-keep",
        "checkpoint_space",
        "none",
        "trainer.keep_best_metric scores a checkpoint by the validation of its own step: validations must run "
        "(test_freq > 0, dividing save_freq) and the metric be a val- one; keep_ckpts / keep_best_metric need saves.",
        "verl #3792, slime PR 1798 (keep the best checkpoint by validation score)",
        severity_doc=EITHER,
    ),
) + tuple(Rule(*fields, **options) for fields, options in DATA_RULES + SCHEDULE_RULES)

BY_ID: dict[str, Rule] = {}
for _r in RULES:
    if _r.id in BY_ID:
        raise ValueError(f"rule {_r.id!r} is declared twice in grpolab.rules.registry")
    BY_ID[_r.id] = _r
RULE_IDS: tuple[str, ...] = tuple(BY_ID)


def rule(rule_id: str) -> Rule:
    return BY_ID[rule_id]


def problem_side(rule_id: str, key: str) -> Literal["train", "rollout"]:
    """Which side's layout a problem of this rule asks to change: the rule's own side, or for a rule of both
    sides (or none) the side its key names (rollout.* is the rollout's, everything else the trainer's)."""
    own = BY_ID[rule_id].side
    if own in ("train", "rollout"):
        return own
    return "rollout" if key.startswith("rollout.") else "train"


def layout_bound(rule_id: str) -> bool:
    """Does the layout decide this rule whatever key its problem names (so the planner screens layouts with
    it even when the key is a batch or memory field)?"""
    return BY_ID[rule_id].layout_bound


def layout_fix_rules() -> tuple[str, ...]:
    return tuple(r.id for r in RULES if r.layout)


def check_rules() -> tuple[str, ...]:
    """The ids `grpolab check` reports (the others only `grpolab data`, which runs the reward and the tokenizer)."""
    return tuple(r.id for r in RULES if r.stage == "check")


def engine_layout_rules() -> tuple[str, ...]:
    """The ids of the rules that reason about the training engine's layout (skipped where it is unknown)."""
    return tuple(r.id for r in RULES if r.engine_layout)


def train_batch_rules() -> tuple[str, ...]:
    """The ids of the rules that reason about data.train_batch_size (skipped where the entry point takes its own)."""
    return tuple(r.id for r in RULES if r.train_batch)


def rollout_engine_rules() -> tuple[str, ...]:
    """The ids of the rules that read vLLM's or SGLang's own settings (nothing to check in another rollout)."""
    return tuple(r.id for r in RULES if r.rollout_engine)


def card_rules(card: Card) -> tuple[str, ...]:
    """The ids of the rules that need the model's facts wholly ("all") or partly ("part")."""
    return tuple(r.id for r in RULES if r.card == card)
