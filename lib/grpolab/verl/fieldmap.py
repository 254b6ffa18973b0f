"""The one map between recipe fields and verl keys: every verl key a first-class recipe field renders to.

A row (`Key`) names one verl key, the recipe field behind it, the training and rollout engines it renders for,
its value transform (recipe -> verl), the values for which it is left out, and whether the run owns it. Rows
are in render order. An `Alias` is another verl key that the installed verl (0.9.1) reads for the same setting:
a deprecated key it still maps at run time (`actor.ulysses_sequence_parallel_size`), or a key inside a free-form
dict that reaches the same engine field (`override_transformer_config.sequence_parallel`).

Everything that needs verl key names derives from this table: the renderer (`grpolab.verl.render`), the shadowing
check of `verl_overrides` (grpolab.rules.gate), the importer (a script's key -> its field, and its defaults), the
same-launch comparison (`normalise`) and docs/fieldmap.md (scripts/make_docs.py). No other module in lib/
spells the verl key of a first-class field (tests/test_fieldmap.py).

The rows spell the keys of verl 0.9.1. The per-version layer beside them (`row_key`, `alias_counts`) asks the version
table (grpolab.verl.versions) which key the checked verl's workers read instead (0.7.1's default FSDP worker reads
`actor.ulysses_sequence_parallel_size`), or that they read none (`nccl_timeout` after 0.7.1): a row keeps its
shape, and the renderer, the importer, the shadowing check and `normalise` all go through that layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grpolab.recipe import engines
from grpolab.recipe.dotted import flatten, get_dotted
from grpolab.recipe.engines import VERL_ENGINES
from grpolab.verl.transforms import IMPORTS, PARTS, TRANSFORMS  # noqa: F401 (the field map's, asked through it)

ARR = "actor_rollout_ref"
ACTOR, REF, ROLL = f"{ARR}.actor", f"{ARR}.ref", f"{ARR}.rollout"
MEG = f"{ACTOR}.megatron"
OTC = f"{MEG}.override_transformer_config"
OOC = f"{ACTOR}.optim.override_optimizer_config"
ENGINE_KWARGS = f"{ROLL}.engine_kwargs"
REWARD_FN = "reward.custom_reward_function"
V1 = "trainer.v1"  # verl 0.9.0+'s V1 trainer: its mode and each mode's settings (issue 42)
SEP, SWITCH = f"{V1}.separate_async", f"{V1}.separate_async.hybrid_rollout"
SEPARATE, COLOCATE = "schedule.mode=separate_async", "schedule.mode=colocate_async"  # `needs`: only in that mode
RAY_ENV = "ray_kwargs.ray_init.runtime_env.env_vars"  # verl passes these to Ray: the same as the recipe's `env`
VERL = tuple(e.name for e in VERL_ENGINES)  # the engines verl trains (grpolab.recipe.engines)
MEGATRON, FSDP = (engines.MEGATRON.name,), (engines.FSDP.name,)
ROLLOUT_WORD = "{rollout}"  # in a key: the recipe's rollout.engine (engine_kwargs.vllm, engine_kwargs.sglang)


@dataclass(frozen=True)
class Key:
    """One verl key and the recipe field that renders it."""

    verl: str
    field: str
    engines: tuple[str, ...] = VERL  # train engines it renders for (trl renders no verl keys)
    rollouts: tuple[str, ...] = ()  # rollout engines it renders for; () = any
    transform: str = ""  # a name in TRANSFORMS; "" = the field's value as it is
    omit: tuple = ()  # values for which the key is left out (verl's own default then applies)
    needs: str = ""  # another field that must be true for the key to render; `field=value`: hold that value
    kind: str = "value"  # value | dict (flattened under the key) | items (one level) | model (a sub-model's fields)
    owned: str = ""  # why the run owns the key: the same-launch comparison leaves it aside


@dataclass(frozen=True)
class Alias:
    """Another verl key the installed verl reads for a field's setting; `when` says when it takes effect."""

    verl: str
    field: str
    target: str  # the verl key whose setting it carries; "" = none: verl reads it for nothing (no effect)
    why: str
    engines: tuple[str, ...] = VERL
    when: str = "set"  # set: any value but null | gt1: above 1 (verl copies it only then)


def _key_rows() -> tuple[Key, ...]:
    none = (None,)
    return (
        Key("algorithm.adv_estimator", "algorithm.adv_estimator"),
        Key("algorithm.use_kl_in_reward", "algorithm.use_kl_in_reward"),
        Key("data.train_files", "data.train_files"),
        Key("data.val_files", "data.val_files"),
        Key("data.train_batch_size", "data.train_batch_size"),
        Key("data.max_prompt_length", "data.max_prompt_length"),
        Key("data.max_response_length", "data.max_response_length"),
        Key("data.truncation", "data.truncation"),
        Key("data.filter_overlong_prompts", "data.filter_overlong_prompts"),
        Key("data.seed", "trainer.seed", owned="every run seeds its data order (verl's default: unseeded)"),
        Key(f"{ARR}.model.path", "model.path"),
        Key(f"{ARR}.model.trust_remote_code", "model.trust_remote_code"),
        Key(f"{ARR}.model.use_remove_padding", "model.use_remove_padding"),
        Key(f"{ARR}.model.enable_gradient_checkpointing", "train.gradient_checkpointing"),
        Key("data.prompt_key", "data.prompt_key"),
        Key("data.shuffle", "data.shuffle"),
        Key(f"{ARR}.nccl_timeout", "trainer.timeout_s"),
        Key(f"{ACTOR}.optim.lr", "algorithm.lr"),
        Key(f"{ACTOR}.optim.lr_warmup_steps", "algorithm.lr_warmup_steps"),
        Key(f"{ACTOR}.optim.weight_decay", "algorithm.weight_decay"),
        Key(f"{ACTOR}.optim.clip_grad", "algorithm.grad_clip"),
        Key(f"{ACTOR}.use_torch_compile", "train.torch_compile"),
        Key(f"{REF}.use_torch_compile", "train.torch_compile"),
        Key(f"{ACTOR}.checkpoint.save_contents", "trainer.save_contents"),
        Key(f"{ACTOR}.checkpoint.strict", "trainer.load_strict"),
        Key(f"{ACTOR}.ppo_mini_batch_size", "algorithm.ppo_mini_batch_size"),
        Key(f"{ACTOR}.ppo_micro_batch_size_per_gpu", "algorithm.micro_batch_size_per_device"),
        Key(f"{ACTOR}.use_dynamic_bsz", "train.dynamic_bsz"),
        Key(f"{ACTOR}.ppo_max_token_len_per_gpu", "train.max_token_len_per_device"),
        Key(f"{ACTOR}.use_kl_loss", "algorithm.use_kl_loss"),
        Key(f"{ACTOR}.kl_loss_coef", "algorithm.kl_loss_coef"),
        Key(f"{ACTOR}.kl_loss_type", "algorithm.kl_loss_type"),
        Key(f"{ACTOR}.entropy_coeff", "algorithm.entropy_coeff"),
        Key(f"{ACTOR}.clip_ratio_low", "algorithm.clip_ratio_low"),
        Key(f"{ACTOR}.clip_ratio_high", "algorithm.clip_ratio_high"),
        Key(f"{ACTOR}.clip_ratio_c", "algorithm.clip_ratio_c"),
        Key(f"{ACTOR}.loss_agg_mode", "algorithm.loss_agg_mode"),
        Key(
            f"{REF}.log_prob_micro_batch_size_per_gpu",
            "rollout.log_prob_micro_batch_size_per_device",
            transform="micro",
        ),
        Key(f"{ROLL}.name", "rollout.engine"),
        Key(f"{ROLL}.tensor_model_parallel_size", "rollout.tp"),
        Key(f"{ROLL}.data_parallel_size", "rollout.dp"),
        Key(f"{ROLL}.expert_parallel_size", "rollout.ep"),
        Key(f"{ROLL}.n", "rollout.n"),
        Key(f"{ROLL}.gpu_memory_utilization", "rollout.gpu_memory_utilization"),
        Key(f"{ROLL}.temperature", "rollout.temperature"),
        Key(f"{ROLL}.top_p", "rollout.top_p"),
        Key(f"{ROLL}.top_k", "rollout.top_k"),
        Key(f"{ROLL}.max_num_seqs", "rollout.max_num_seqs"),
        Key(f"{ROLL}.max_num_batched_tokens", "rollout.max_num_batched_tokens"),
        Key(f"{ROLL}.enforce_eager", "rollout.enforce_eager"),
        Key(f"{ROLL}.load_format", "rollout.load_format"),
        Key(
            f"{ROLL}.log_prob_micro_batch_size_per_gpu",
            "rollout.log_prob_micro_batch_size_per_device",
            transform="micro",
        ),
        Key(f"{ROLL}.checkpoint_engine.update_weights_bucket_megabytes", "rollout.update_weights_bucket_mb"),
        Key(f"{ROLL}.enable_rollout_routing_replay", "rollout.routing_replay"),
        Key(f"{ROLL}.enable_chunked_prefill", "rollout.enable_chunked_prefill"),
        Key(f"{ROLL}.enable_prefix_caching", "rollout.enable_prefix_caching"),
        Key(f"{ROLL}.free_cache_engine", "rollout.free_cache_engine"),
        Key(f"{ROLL}.calculate_log_probs", "rollout.calculate_log_probs"),
        Key(f"{ROLL}.val_kwargs", "rollout.val_kwargs", kind="model"),
        Key("trainer.project_name", "trainer.project"),
        Key("trainer.experiment_name", "trainer.experiment"),
        Key("trainer.nnodes", "cluster.nnodes"),
        Key("trainer.n_gpus_per_node", "cluster.devices_per_node"),
        Key("trainer.device", "cluster.device", transform="device", owned="verl sets it from the device it finds"),
        Key("trainer.total_epochs", "trainer.total_epochs"),
        Key("trainer.save_freq", "trainer.save_freq"),
        Key("trainer.test_freq", "trainer.test_freq"),
        Key("trainer.val_before_train", "trainer.val_before_train"),
        Key("trainer.logger", "trainer.logger", transform="logger", owned="the run adds `file`: metrics.jsonl"),
        Key("trainer.resume_mode", "trainer.resume_mode"),
        Key("trainer.balance_batch", "trainer.balance_batch"),
        Key("trainer.default_local_dir", "trainer.ckpt_dir", transform="ckpt_dir", owned="checkpoints go to runs/"),
        Key("trainer.total_training_steps", "trainer.total_steps", omit=none),
        Key("trainer.rollout_data_dir", "trainer.rollout_data_dir", omit=none),
        Key("trainer.resume_from_path", "trainer.resume_path", omit=none),
        # checkpoints kept: verl keeps the newest N itself, unless keep-best is on (the job wrapper keeps them then)
        Key("trainer.max_actor_ckpt_to_keep", "trainer.keep_ckpts", transform="keep", omit=none),
        Key("trainer.max_critic_ckpt_to_keep", "trainer.keep_ckpts", transform="keep", omit=none),
        # one seed for the data loader, the actor and the rollout (grpolab.jobs.provenance records it)
        Key(f"{ACTOR}.data_loader_seed", "trainer.seed", owned="every seed of the run renders from trainer.seed"),
        Key(f"{ROLL}.seed", "trainer.seed", owned="every seed of the run renders from trainer.seed"),
        Key(f"{ACTOR}.fsdp_config.seed", "trainer.seed", engines=FSDP, owned="every seed renders from trainer.seed"),
        Key(f"{ROLL}.max_model_len", "rollout.max_model_len", omit=none),
        Key(f"{ROLL}.cudagraph_capture_sizes", "rollout.cudagraph_capture_sizes", omit=none),
        Key(f"{ENGINE_KWARGS}.{ROLLOUT_WORD}", "rollout.engine_kwargs", kind="dict"),
        Key(f"{ENGINE_KWARGS}.sglang.attention_backend", "rollout.attention_backend", rollouts=("sglang",), omit=none),
        Key("data.apply_chat_template_kwargs", "data.chat_template_kwargs", kind="dict"),
        Key(f"{ACTOR}.strategy", "train.fsdp_strategy", engines=FSDP, omit=("fsdp",)),
        Key(f"{MEG}.tensor_model_parallel_size", "train.tp", engines=MEGATRON),
        Key(f"{MEG}.pipeline_model_parallel_size", "train.pp", engines=MEGATRON),
        Key(f"{MEG}.context_parallel_size", "train.cp", engines=MEGATRON),
        Key(f"{MEG}.expert_model_parallel_size", "train.ep", engines=MEGATRON),
        Key(f"{MEG}.expert_tensor_parallel_size", "train.etp", engines=MEGATRON),
        Key(f"{MEG}.virtual_pipeline_model_parallel_size", "train.vpp", engines=MEGATRON, transform="vpp"),
        Key(f"{MEG}.sequence_parallel", "train.sp", engines=MEGATRON),
        Key(f"{MEG}.use_remove_padding", "model.use_remove_padding", engines=MEGATRON),
        Key(f"{MEG}.pad_bshd_to_minibatch_max", "train.pad_bshd_to_minibatch_max", engines=MEGATRON),
        Key(f"{MEG}.param_offload", "train.param_offload", engines=MEGATRON),
        Key(f"{MEG}.optimizer_offload", "train.optimizer_offload", engines=MEGATRON),
        Key(f"{MEG}.use_distributed_optimizer", "train.distributed_optimizer", engines=MEGATRON),
        Key(f"{MEG}.use_dist_checkpointing", "train.use_dist_checkpointing", engines=MEGATRON),
        Key(f"{MEG}.use_mbridge", "train.use_mbridge", engines=MEGATRON),
        Key(f"{MEG}.vanilla_mbridge", "train.vanilla_mbridge", engines=MEGATRON),
        Key(f"{MEG}.dtype", "model.dtype", engines=MEGATRON),
        Key(f"{MEG}.router_replay.mode", "train.router_replay", engines=MEGATRON),
        Key(f"{MEG}.seed", "trainer.seed", engines=MEGATRON),
        Key(f"{REF}.megatron.param_offload", "train.ref_param_offload", engines=MEGATRON, transform="ref_offload"),
        Key(f"{REF}.megatron.use_dist_checkpointing", "train.use_dist_checkpointing", engines=MEGATRON),
        Key(f"{ACTOR}.optim.use_precision_aware_optimizer", "train.precision_aware_optimizer", engines=MEGATRON),
        Key(f"{MEG}.grad_offload", "train.grad_offload", engines=MEGATRON, omit=(False,)),
        Key(f"{MEG}.dist_checkpointing_path", "train.dist_checkpointing_path", engines=MEGATRON, omit=none),
        Key(f"{REF}.megatron.dist_checkpointing_path", "train.dist_checkpointing_path", engines=MEGATRON, omit=none),
        Key(f"{OTC}.recompute_granularity", "train.recompute.granularity", engines=MEGATRON, omit=none),
        Key(f"{OTC}.recompute_method", "train.recompute.method", engines=MEGATRON, omit=none),
        Key(f"{OTC}.recompute_num_layers", "train.recompute.num_layers", engines=MEGATRON, omit=none),
        Key(f"{OTC}.pipeline_model_parallel_layout", "train.pp_layout", engines=MEGATRON, omit=(None, "")),
        Key(OTC, "train.transformer", engines=MEGATRON, kind="items"),
        Key(f"{OOC}.optimizer_cpu_offload", "train.optimizer_cpu_offload", engines=MEGATRON, omit=(False,)),
        Key(
            f"{OOC}.optimizer_offload_fraction",
            "train.optimizer_offload_fraction",
            engines=MEGATRON,
            needs="train.optimizer_cpu_offload",
        ),
        Key(OOC, "train.optimizer", engines=MEGATRON, kind="items"),
        # the reward (issue 32): a function `path.py:name` renders verl's path and name keys; null = verl's built-in
        Key(f"{REWARD_FN}.path", "reward.function", transform="reward_path"),
        Key(f"{REWARD_FN}.name", "reward.function", transform="reward_name"),
        Key(f"{REWARD_FN}.reward_kwargs", "reward.kwargs", kind="dict"),
        Key("reward.reward_manager.name", "reward.manager"),
        Key(f"{ACTOR}.fsdp_config.param_offload", "train.param_offload", engines=FSDP),
        Key(f"{ACTOR}.fsdp_config.optimizer_offload", "train.optimizer_offload", engines=FSDP),
        Key(f"{ACTOR}.fsdp_config.ulysses_sequence_parallel_size", "train.ulysses_sp", engines=FSDP),
        Key(f"{REF}.fsdp_config.param_offload", "train.ref_param_offload", engines=FSDP, transform="ref_offload"),
        Key(f"{REF}.fsdp_config.ulysses_sequence_parallel_size", "train.ulysses_sp", engines=FSDP),
        # verl's V1 trainer modes (issue 42): 0.9.0+ reads trainer.v1.* (older: none; rule async-mode says what to do
        # instead); a mode's own keys render only in that mode, as verl reads them only there
        Key(f"{V1}.trainer_mode", "schedule.mode"),
        Key(f"{V1}.colocate_async.num_warmup_batches", "schedule.warmup_batches", transform="warmup", needs=COLOCATE),
        Key(f"{SEP}.num_warmup_batches", "schedule.warmup_batches", transform="warmup", needs=SEPARATE),
        Key(f"{SEP}.parameter_sync_step", "schedule.parameter_sync_step", transform="sync_step", needs=SEPARATE),
        Key(f"{V1}.sampler.max_off_policy_threshold", "schedule.max_off_policy"),
        Key(f"{V1}.sampler.max_off_policy_strategy", "schedule.off_policy_strategy"),
        Key(f"{ROLL}.nnodes", "schedule.rollout_nnodes"),
        Key(f"{ROLL}.n_gpus_per_node", "schedule.rollout_devices_per_node", transform="pool_devices"),
        Key(f"{ROLL}.checkpoint_engine.backend", "schedule.sync_backend"),
        Key(f"{ARR}.hybrid_engine", "schedule.hybrid_replicas"),
        *(
            Key(f"{SWITCH}.{leaf}", f"schedule.switch.{field}", needs=SEPARATE)
            for leaf, field in (("enable_switch", "enable"), ("switch_threshold_ratio", "threshold_ratio"))
            + (("adaptive_switch_threshold", "adaptive"), ("switch_threshold_step_up", "step_up"))
            + (("switch_threshold_step_down", "step_down"), ("switch_threshold_release_steps", "release_steps"))
            + (("switch_cost_window_size", "cost_window"),)
        ),
    )


KEYS: tuple[Key, ...] = _key_rows()

_PROVIDER = "verl passes override_transformer_config over the engine's setting to Megatron's model provider"
_INERT = "not a TransformerConfig field: Megatron's provider ignores it; the engine's use_distributed_optimizer counts"


def _alias_rows() -> tuple[Alias, ...]:
    rows = [
        Alias(
            f"{ACTOR}.ulysses_sequence_parallel_size",
            "train.ulysses_sp",
            f"{ACTOR}.fsdp_config.ulysses_sequence_parallel_size",
            "deprecated; verl's FSDPActorConfig copies it into fsdp_config when above 1",
            FSDP,
            "gt1",
        ),
        Alias(
            f"{REF}.ulysses_sequence_parallel_size",
            "train.ulysses_sp",
            f"{REF}.fsdp_config.ulysses_sequence_parallel_size",
            "deprecated; follows the actor's, and verl copies it into the ref's fsdp_config when above 1",
            FSDP,
            "gt1",
        ),
        Alias(
            f"{ACTOR}.optim.grad_clip",
            "algorithm.grad_clip",
            f"{ACTOR}.optim.clip_grad",
            "deprecated; verl's OptimizerConfig copies it into clip_grad",
        ),
        Alias(
            f"{OOC}.use_precision_aware_optimizer",
            "train.precision_aware_optimizer",
            f"{ACTOR}.optim.use_precision_aware_optimizer",
            "verl builds the same OptimizerConfig field from optim.use_precision_aware_optimizer",
            MEGATRON,
        ),
        Alias(
            f"{ENGINE_KWARGS}.vllm.compilation_config.cudagraph_capture_sizes",
            "rollout.cudagraph_capture_sizes",
            f"{ROLL}.cudagraph_capture_sizes",
            "verl copies rollout.cudagraph_capture_sizes into the same vLLM compilation_config",
        ),
    ]
    # verl's older reward keys (custom_reward_function.*, reward_model.reward_manager) are no aliases: which entry
    # point reads them, and where they moved, is each version's own (grpolab.verl.versions `legacy_reward`; verl
    # 0.9.1's main_ppo ignores them), and the importer says what it does with them (grpolab.importer.legacy)
    for role in (ACTOR, REF):  # the ref's override_transformer_config follows the actor's
        otc = f"{role}.megatron.override_transformer_config"
        for name, field in (
            ("tensor_model_parallel_size", "train.tp"),
            ("pipeline_model_parallel_size", "train.pp"),
            ("context_parallel_size", "train.cp"),
            ("expert_model_parallel_size", "train.ep"),
            ("expert_tensor_parallel_size", "train.etp"),
            ("virtual_pipeline_model_parallel_size", "train.vpp"),
            ("sequence_parallel", "train.sp"),
        ):
            rows.append(Alias(f"{otc}.{name}", field, f"{role}.megatron.{name}", _PROVIDER, MEGATRON))
        rows.append(Alias(f"{otc}.use_distributed_optimizer", "train.distributed_optimizer", "", _INERT, MEGATRON))
    return tuple(rows)


ALIASES: tuple[Alias, ...] = _alias_rows()

# keys verl overwrites at run time with another key's value, so that setting them alone does nothing
COPIED: dict[str, tuple[str, str]] = {
    f"{role}.megatron.use_remove_padding": (
        f"{ARR}.model.use_remove_padding",
        "verl's engine workers set each engine's use_remove_padding from the model's",
    )
    for role in (ACTOR, REF)
}
# a null the stack reads as another key's value: {key: (the key whose value it takes, why)}
NULL_MEANS: dict[str, tuple[str, str]] = {
    f"{role}.megatron.expert_tensor_parallel_size": (
        f"{role}.megatron.tensor_model_parallel_size",
        "Megatron-core's initialize_model_parallel: expert tensor parallel null = tensor parallel",
    )
    for role in (ACTOR, REF)
}


# ---------------------------------------------------------------------------------------------- queries


def applies(row: Key | Alias, engine: str, rollout: str | None = None) -> bool:
    """Does the row render (or the alias count) for this training engine and rollout engine? A row of every verl
    engine (VERL) renders for another engine verl registers as well (veomni: the data, rollout and algorithm keys)."""
    if engine not in row.engines and not (row.engines == VERL and engines.named(engine).verl):
        return False
    return rollout is None or not isinstance(row, Key) or not row.rollouts or rollout in row.rollouts


def needs_met(row: Key, source: Any) -> bool:
    """Does the recipe (or its mapping) hold what the row needs to render: `field` true, `field=value` that value?"""
    if not row.needs:
        return True
    field, _, want = row.needs.partition("=")
    value = get_dotted(source, field)
    return str(value) == want if want else bool(value)


def key_name(row: Key, rollout: str) -> str:
    return row.verl.replace(ROLLOUT_WORD, rollout)


# ---------------------------------------------------------------------------------------------- per-version layer

_CHECKED = object()  # "the facts of the verl being checked" (checked_facts())
_SP = "ulysses_sequence_parallel_size"
# the keys of each fact grpolab.verl.versions derives per version: (the row's key, the key older workers read)
VERSIONED: dict[str, tuple[str, ...]] = {
    "ulysses": (f"{ACTOR}.fsdp_config.{_SP}", f"{ACTOR}.{_SP}"),
    "ref_ulysses": (f"{REF}.fsdp_config.{_SP}", f"{REF}.{_SP}"),
    "timeout": (f"{ARR}.nccl_timeout",),
    "grad_offload": (f"{MEG}.grad_offload",),
    "cudagraph_alias": (f"{ENGINE_KWARGS}.vllm.compilation_config.cudagraph_capture_sizes",),
    # (the key the rows render, the top-level key older trees read instead)
    "reward_function": (REWARD_FN, "custom_reward_function"),
    "reward_manager": ("reward.reward_manager", "reward_manager"),
    # the schedule's keys (a version whose config lacks one reads none) and separate_async's hybrid-replica switch
    "schedule": tuple(r.verl for r in KEYS if r.field.startswith("schedule.") and r.verl != f"{ARR}.hybrid_engine"),
    "hybrid_engine": (f"{ARR}.hybrid_engine",),
}


def checked_facts() -> dict | None:
    """The version table's facts of the verl being checked (grpolab.verl.versions), None without verl."""
    # lazy: yaml (the version table is read only when the checked verl's facts are asked)
    from grpolab.verl import versions

    return versions.facts(VERSIONED)


def _facts(found: Any) -> dict | None:
    return checked_facts() if found is _CHECKED else found


def row_key(row: Key, rollout: str, found: Any = _CHECKED) -> str | None:
    """The key the checked verl's workers read for a row (`found`: a version's facts); None: they read none."""
    # lazy: yaml (the version table is read only when the checked verl's facts are asked)
    from grpolab.verl import versions

    return versions.read_key(key_name(row, rollout), _facts(found))


def alias_counts(alias: Alias, found: Any = _CHECKED) -> bool:
    """Does the checked verl read the alias for the same setting? Not where it is the key its workers read (a row's
    there: row_key), nor where the setting reaches its engine under another name (vLLM's cuda_graph_sizes)."""
    facts = _facts(found)
    if facts is not None and any(entry["key"] == alias.verl for entry in facts["reads"].values()):
        return False
    if facts is not None and alias.verl == VERSIONED["cudagraph_alias"][0]:
        return facts["cudagraph_vllm"]["vllm_name"] == "compilation_config.cudagraph_capture_sizes"
    return True


def fields() -> list[str]:
    """Every first-class recipe field that renders a verl key, in render order."""
    return list(dict.fromkeys(row.field for row in KEYS))


def verl_keys_of(field: str, engine: str | None = None, rollout: str = "vllm") -> list[str]:
    """The verl keys a recipe field renders to (for one training engine, or any)."""
    return [
        key_name(row, rollout)
        for row in KEYS
        if row.field == field and (engine is None or applies(row, engine, rollout))
    ]


def verl_key(field: str, engine: str | None = None) -> str:
    """The (first) verl key a recipe field renders to; KeyError for a field that renders none."""
    keys = verl_keys_of(field, engine)
    if not keys:
        raise KeyError(field)
    return keys[0]


def value_of(recipe: Any, field: str) -> Any:
    value = get_dotted(recipe, field)
    return value.model_dump() if hasattr(value, "model_dump") else value


def omitted(value: Any, omit: tuple) -> bool:
    return any(value is o or (value == o and type(value) is type(o)) for o in omit)


def render_keys(recipe: Any, run_dir: str, found: Any = _CHECKED) -> dict[str, Any]:
    """{verl key: value} that the recipe's first-class fields render to, in the table's order, under the names the
    checked verl's workers read (a key they read nothing for is left out: grpolab.rules.verl_version says so)."""
    engine, rollout = recipe.train.engine, recipe.rollout.engine
    found = _facts(found)
    keys: dict[str, Any] = {}
    for row in KEYS:
        if not applies(row, engine, rollout) or not needs_met(row, recipe):
            continue
        value = TRANSFORMS[row.transform][0](value_of(recipe, row.field), recipe, run_dir)
        if omitted(value, row.omit):
            continue
        name = row_key(row, rollout, found)
        if name is None:
            continue
        if row.kind == "value":
            keys[name] = value
        elif row.kind == "dict":
            keys.update(flatten(value or {}, name))
        else:  # items, model: one level under the key
            keys.update({f"{name}.{k}": v for k, v in (value or {}).items()})
    return keys


@dataclass(frozen=True)
class Match:
    """Where a verl key lands in a recipe: the field (a dotted recipe key), and the row or alias behind it."""

    field: str
    row: Key | None = None
    alias: Alias | None = None

    @property
    def owner(self) -> str:
        """The first-class field that owns the key (a dict field as a whole: train.transformer)."""
        return self.row.field if self.row is not None and self.row.kind != "value" else self.field


def match(verl_key: str, engine: str, rollout: str = "vllm") -> Match | None:
    """The recipe field a verl key (as a script writes it; `+` allowed) sets, for this engine; None when none does."""
    # lazy: pydantic, yaml (the loader's schema loads only when an imported key is matched to a field)
    from grpolab.recipe.loader import field_type

    key = verl_key.lstrip("+")
    found = _facts(_CHECKED)
    for row in KEYS:
        if row.kind != "value" or not applies(row, engine, rollout):
            continue
        read = row_key(row, rollout, found)
        if read == key or (read is None and key_name(row, rollout) == key):  # unread there: still the field's key
            return Match(row.field, row=row)
    for alias in ALIASES:
        if alias.verl == key and applies(alias, engine) and alias_counts(alias, found):
            return Match(alias.field, alias=alias)
    for row in KEYS:  # a key inside a dict field
        name = key_name(row, rollout)
        if row.kind != "value" and applies(row, engine, rollout) and key.startswith(name + "."):
            field = f"{row.field}.{key[len(name) + 1 :]}"
            if row.kind == "model" and field_type(field) is None:
                return None  # not one of the sub-model's fields: stays a raw verl override
            return Match(field, row=row)
    return None


def field_of(verl_key: str) -> str | None:
    """The first-class recipe field behind a verl key for any engine, rendered or read as an alias; None if none."""
    for engine in VERL:
        for rollout in ("vllm", "sglang"):
            found = match(verl_key, engine, rollout)
            if found:
                return found.owner
    return None


def run_owned() -> dict[str, str]:
    """{verl key: why} the run owns: a script's value and the render's may differ on purpose."""
    return {row.verl: row.owned for row in KEYS if row.owned}


def normalise(effective: dict[str, Any], engine: str) -> dict[str, Any]:
    """A composed verl config (flat dotted keys) with every alias applied to its target, as verl does at run
    time, the alias keys removed, a null that means another key's value replaced by it (NULL_MEANS) and a key verl
    overwrites at run time given the value it gets (COPIED): two launches that differ only in how they spell a
    setting become equal. Per the checked verl's version: a key its workers read nothing for is removed, and the
    key they read for a row stands under the row's name (its value is what counts, whatever the row's key says)."""
    # lazy: yaml (the version table is read only when a composed config is normalised)
    from grpolab.verl import versions

    out = dict(effective)
    found = _facts(_CHECKED)
    for canonical, entry in (found or {}).get("reads", {}).items():
        read = entry["key"]
        if read is None:
            out.pop(canonical, None)
        elif read != canonical and read in out:
            out[canonical] = out.pop(read)
    for alias in ALIASES:
        if alias.verl not in out:
            continue
        value = out.pop(alias.verl)
        if not alias_counts(alias, found):
            if versions.read_key(alias.verl, found) == alias.verl:
                out[alias.verl] = value  # another setting on this version: compared as itself
            continue
        if not applies(alias, engine) or value is None or not alias.target:
            continue
        if alias.when == "gt1" and not (isinstance(value, int) and value > 1):
            continue
        out[alias.target] = value
    for key, (other, _) in NULL_MEANS.items():
        if key in out and out[key] is None and other in out:
            out[key] = out[other]
    for key, (source, _) in COPIED.items():
        if key in out and source in out:
            out[key] = out[source]
    mode = out.get(f"{V1}.trainer_mode")  # another mode's own section (trainer.v1.MODE.*): this mode never reads it
    others = tuple(f"{V1}.{m}." for m in ("sync", "colocate_async", "separate_async") if m != mode)
    return {k: v for k, v in out.items() if not (isinstance(mode, str) and k.startswith(others))}


def markdown() -> str:
    """docs/fieldmap.md: the table as people read it (scripts/make_docs.py writes it)."""
    by_field: dict[str, list[Key]] = {}
    for row in KEYS:
        by_field.setdefault(row.field, []).append(row)
    lines = [
        "# Recipe fields and the verl keys they render to",
        "",
        "Generated from `lib/grpolab/verl/fieldmap.py` by `scripts/make_docs.py`; do not edit. `grpolab render`",
        "writes these keys, `grpolab import` reads them back into the field, and `verl_overrides` may not set them (nor",
        "an alias: a key the installed verl reads for the same setting). `{rollout}` is the recipe's rollout.engine.",
        "",
        "| recipe field | verl key(s) | engines | value | aliases (read by verl for the same setting) |",
        "|---|---|---|---|---|",
    ]
    for name, rows in by_field.items():
        engines = sorted({e for r in rows for e in r.engines})
        rollouts = sorted({e for r in rows for e in r.rollouts})
        transform = "; ".join(
            dict.fromkeys(
                [TRANSFORMS[r.transform][1] for r in rows if r.transform]
                + [f"left out when {', '.join(repr(o) for o in r.omit)}" for r in rows if r.omit]
                + [f"only with {r.needs}" for r in rows if r.needs]
                + [f"{r.kind}: each sub-key under the key" for r in rows if r.kind != "value"]
                + [f"run-owned: {r.owned}" for r in rows if r.owned]
                + [
                    f"verl overwrites `{r.verl}` with `{COPIED[r.verl][0]}` at run time"
                    for r in rows
                    if r.verl in COPIED
                ]
            )
        )
        aliases = "<br>".join(f"`{a.verl}` ({a.why})" for a in ALIASES if a.field == name)
        keys = "<br>".join(f"`{r.verl}`" for r in rows)
        where = "/".join(engines) + (" with " + "/".join(rollouts) if rollouts else "")
        lines.append(f"| `{name}` | {keys} | {where} | {transform or 'as is'} | {aliases} |")
    lines += [
        "",
        f"`{RAY_ENV}.NAME` (a launch's Ray runtime env) is the recipe's `env.NAME`: every run exports `env` through its",
        "Ray job's runtime env.",
        "",
        *(f"A null `{k}` is read as `{v}` ({why})." for k, (v, why) in NULL_MEANS.items()),
        "",
    ]
    return "\n".join(lines)
