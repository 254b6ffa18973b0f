"""What each rule id checks, its severity and the public report it comes from: the source of docs/rules.md.

scripts/make_rules_doc.py writes docs/rules.md from RULE_DOCS and params/stack_rules.yaml; a test fails when the
file is stale. Reports are cited by tracker and number; "no public number found" says so where none was found.
"""

from __future__ import annotations

# rule id -> (what it checks, severity, public report). Field rules: grpolab.rules.field_rules.
RULE_DOCS: dict[str, tuple[str, str, str]] = {
    "schema": (
        "Every key exists, is spelled right and has the right type and range (one strict pydantic schema); a "
        "model card is found, and a card agrees with the config.json at model.path.",
        "error",
        "grpolab's own contract",
    ),
    "world-divisible": (
        "Megatron: the world size is divisible by tp x pp x cp; FSDP: by the Ulysses size.",
        "error",
        "grpolab's seeded list (Megatron's parallel_state asserts it at start-up)",
    ),
    "expert-divisible": (
        "Megatron: the world size is divisible by ep x etp x pp.",
        "error",
        "grpolab's seeded list (Megatron's parallel_state)",
    ),
    "heads-tp": ("TP (FSDP: the Ulysses size) divides the attention heads.", "error", "grpolab's seeded list"),
    "kv-heads-tp": ("GQA models: training TP divides the KV heads.", "error", "grpolab's seeded list"),
    "experts-ep": ("EP divides the routed experts; a dense model has EP 1.", "error", "grpolab's seeded list"),
    "pp-layers": (
        "Megatron's split of the layers is valid: layers divisible by pp x vpp, or an uneven split given "
        "as num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage whose middle stages "
        "share the rest evenly (and every stage divisible by vpp).",
        "error",
        "grpolab's seeded list; first/last layouts: Megatron-LM issue 2718 (a 48-layer PP 2 "
        "first/last split silently dropped layers; checks added in Megatron-LM PR 2947)",
    ),
    "pp-layout": (
        "An explicit pipeline layout parses, has pp x vpp stages, places every layer, E first and L last; "
        "GLM-5.2's shared DSA indexer: every stage of training's split (layout, even or first/last) AND "
        "of the rollout's pipeline split (vLLM's even split or VLLM_PP_LAYER_PARTITION) starts on an "
        "allowed layer.",
        "error",
        "verl PR 7788 (GLM-5.2 recipe and its layouts)",
    ),
    "rollout-world": ("The world size is divisible by rollout tp x dp.", "error", "grpolab's seeded list"),
    "rollout-ep": (
        "Rollout EP > 1 equals rollout tp x dp and divides the experts.",
        "error",
        "grpolab's seeded list (verl asserts it inside the workers)",
    ),
    "rollout-heads": (
        "Rollout TP divides the attention heads, and divides or is a multiple of the KV heads.",
        "error",
        "vllm issue 4232, vllm issue 414 (heads not divisible by tensor parallel size)",
    ),
    "batch-divisible": (
        "train batch x n splits over train DP x micro-batch, and Megatron's real mini-batch "
        "(mini-batch x n) over DP x micro-batch.",
        "error",
        "verl issue 1004 (`assert self.batch.batch_size[0] % mini_batch_size == 0`), verl issue 1524",
    ),
    "mini-batch": ("The mini-batch is no larger than, and divides, the train batch.", "error", "grpolab's seeded list"),
    "lengths": (
        "prompt + response fits rollout.max_model_len and the model's context.",
        "error",
        "verl issue 673 (prompt longer than max_model_len)",
    ),
    "env-required": (
        "Environment a model/stack needs (GLM-5.2 patch flag, AIV with CANN >= 8.5 and mbridge, "
        "ASCEND_RT_VISIBLE_DEVICES covering a node, a wandb key or mode).",
        "error or warning",
        "verl PR 7779 (GLM-5.2 vllm-ascend patch); verl PR 6285 (AIV)",
    ),
    "stack": (
        "Pins parse; verl's pin matches the installed verl and its requirements; vllm-ascend 0.23 pins its "
        "CANN / torch / torch_npu / triton-ascend (params/stack_rules.yaml); preflight compares pins with "
        "what is installed, a setuptools_scm `0.23.1.devN+g<sha>` by its commit.",
        "error or warning",
        "vllm-ascend issue 16559 (releases/v0.23.0 installs as 0.23.1.dev0+g<sha>); verl's Ascend install "
        "guidance for the vLLM path (verl PR 6807, PR 7788)",
    ),
    "engine-support": (
        "The engines support the requested combination (FSDP parallelism, TRL on CPU, verl on "
        "GPU/NPU only, router replay on MoE).",
        "error or warning",
        "grpolab's seeded list",
    ),
    "verl-schema": (
        "The rendered overrides compose against the installed verl's own Hydra config.",
        "error or warning",
        "grpolab's seeded list",
    ),
    "unknown-override": (
        "train.transformer / train.optimizer keys are megatron-core (or MindSpeed) fields.",
        "warning",
        "grpolab's seeded list",
    ),
    "memory": (
        "A documented estimate of per-device training state and rollout weights fits device memory.",
        "error",
        "grpolab's seeded list (estimate: grpolab.recipe.memory)",
    ),
    # ------------------------------------------------------------------ learned from real failures (issue 13)
    "rollout-node": (
        "Class 1. Rollout TP divides the devices per node when rollout DP > 1; rollout TP larger than a "
        "node is a warning (TP over the network).",
        "error (vLLM), warning (SGLang, TP over nodes)",
        "verl issue 6856 (vLLM rollout DP > 1 fails when a replica spans nodes); verl 0.9.1 "
        "vllm_async_server.py asserts `gpus_per_node % tensor_model_parallel_size == 0`; verl PR 5339",
    ),
    "dispatch-chunk": (
        "Class 2. train batch x n (and data.val_batch_size) split evenly over the rollout's "
        "agent-loop workers (rollout.agent.num_workers, 8 by default); the split over the training "
        "DP groups is batch-divisible.",
        "error",
        "verl issue 473 and issue 1004 (`only support equal chunk`); verl PR 115",
    ),
    "vpp-microbatches": (
        "Class 3. With vpp > 1 the micro-batches per mini-batch are >= pp and a multiple of pp.",
        "error",
        "verl issue 1004 (`The number of contiguous micro-batches in a virtual pipeline "
        "stage should range in [PP=2 , M=1]`); NVIDIA-NeMo/Speech issue 14288",
    ),
    "dynamic-batch": (
        "Class 5. With dynamic batching the token budget per device (x cp for Megatron, x Ulysses "
        "for FSDP) holds the longest sample, prompt + response.",
        "error",
        "verl issue 3415 (budget x cp); agentscope-ai/Trinity-RFT issue 398 and "
        "Weiyun1025/verl-internvl issue 15 (`max_token_len must be greater than the sequence length`)",
    ),
    "seq-padding": (
        "Class 6. Megatron with CP > 1 or sequence parallel and no packing: prompt + response is a "
        "multiple of tp x cp x 2 (tp without CP); with packing, tp x cp x 2 above verl's 128-token "
        "synthetic padding rows is a warning.",
        "error; warning (packing)",
        "verl issue 6050 (`First dimension of the tensor should be divisible by tensor parallel size`); "
        "verl issue 5981, PR 4656, PR 6001, PR 7593 (short samples under CP)",
    ),
    "linear-attention": (
        "Class 7. Gated DeltaNet models (Qwen3.5, Qwen3-Next): training and rollout TP divide the "
        "linear key and value heads; CP > 1 needs megatron-core >= 0.18 (an unpinned "
        "megatron-core is a warning) and tp x cp dividing those heads.",
        "error",
        "Megatron-LM issue 3883 (`Gated delta net does not support context parallel`), GDN CP in "
        "Megatron-LM PR 2614 / PR 2642; verl PR 7604 (Ascend stack on core_r0.18.0)",
    ),
    "weight-bucket": (
        "Class 10. The largest single tensor (embedding, or a fused expert tensor named in the card) "
        "fits in the weight-sync bucket (rollout.update_weights_bucket_mb); on CUDA verl 0.9.1 sends it on its own "
        "(warning).",
        "error (NPU), warning (CUDA)",
        "verl issue 5779 (Qwen3.5-27B, GPU), verl issue 5952 (NPU), verl PR 5963 (Qwen3.5-122B)",
    ),
    "router-replay": (
        "Class 11. train.router_replay agrees with rollout.routing_replay: R2 without it, R3 with it; "
        "routing replay without replay or on a dense model is a warning.",
        "error or warning",
        "verl 0.9.1 ray_trainer.py (`Detected conflicting router replay configuration`); verl PR 4101, verl PR 7805",
    ),
    "rollout-backend": (
        "Class 12. SGLang on NPU uses attention_backend `ascend`; `ascend` on CUDA is refused; the "
        "field on vLLM is a warning.",
        "error or warning",
        "sgl-project/sglang issue 8004 and PR 7722 (Ascend attention backend); verl 0.9.1 "
        "async_sglang_server.py defaults to fa3 / flashinfer",
    ),
    "deprecated-key": (
        "Class 13. Deprecated verl keys (ppo_micro_batch_size, log_prob_micro_batch_size, ...) are "
        "refused beside their `_per_gpu` replacement, which grpolab always sets for the actor, ref and "
        "rollout; alone (critic, reward model) they are a warning.",
        "error or warning",
        "verl 0.9.1 workers/config/actor.py (`You have set both ...`); reported in the field, no "
        "public issue number found",
    ),
    "startup-timeout": (
        "Class 14. Models of 32B+ on 64+ devices: trainer.timeout_s >= 1800 and on NPU "
        "HCCL_CONNECT_TIMEOUT >= 1200 (default 120 s).",
        "warning",
        "modelscope/ms-swift PR 8281 (HCCL connect timeout at start-up); vllm-ascend PR 10949 review "
        "(1200 s for 4 x 16 NPUs); foundation-model-stack/fms-fsdp PR 19 (NCCL timeout at 70B init)",
    ),
    "known-bad": (
        "Class 15. Known bad version / environment combinations, as data in params/stack_rules.yaml (listed below).",
        "per entry",
        "per entry (below)",
    ),
    # grpolab.rules.checkpoint_space (issue 24)
    "checkpoint-space": (
        "The checkpoints kept at once (one from the layout verl writes, as save_contents names it, times what "
        "trainer.keep_ckpts keeps) against the free space where they go, when that is on this machine; "
        "preflight does it on every node.",
        "error (warning when only the 1/nnodes share fits)",
        "verl #2860 (a 10,480 s save); grpolab.recipe.checkpoint_size (verl/utils/checkpoint/*)",
    ),
    "checkpoint-keep": (
        "trainer.keep_best_metric needs a validation at each checkpoint's step (test_freq dividing save_freq) and a "
        "val- metric; keep_ckpts / keep_best_metric need saves.",
        "error or warning",
        "verl #3792, slime PR 1798 (keep the best checkpoint by validation score)",
    ),
}


def markdown() -> str:
    """docs/rules.md."""
    from grpolab.problems import RULES
    from grpolab.rules.field_rules import stack_rules

    lines = [
        "# Rules of `grpolab check`",
        "",
        "Generated by `scripts/make_rules_doc.py` from `grpolab.rules.docs` and `params/stack_rules.yaml`; do not "
        "edit by hand (a test fails when this file is stale).",
        "",
        "| rule | checks | severity | public report |",
        "|---|---|---|---|",
    ]
    for rule in RULES:
        what, severity, source = RULE_DOCS.get(rule, ("(not documented yet)", "", ""))
        lines.append(f"| `{rule}` | {what} | {severity} | {source} |")
    lines += [
        "",
        "## Stack rule table (params/stack_rules.yaml)",
        "",
        "| entry | rule | when | severity | source |",
        "|---|---|---|---|---|",
    ]
    for entry in stack_rules():
        when = "; ".join(f"{k}: {v}" for k, v in entry["when"].items())
        if entry.get("requires"):
            when += "; requires " + ", ".join(f"{k} {v}" for k, v in entry["requires"].items())
        lines.append(
            f"| `{entry['id']}` | `{entry.get('rule', 'known-bad')}` | {when} | {entry['severity']} | "
            f"{entry['source']} |"
        )
    return "\n".join(lines) + "\n"
