"""The one renderer: a validated Recipe -> the launch (entrypoint, verl Hydra overrides, env).

Rendered for the verl that is installed: keys are looked up in that verl's own config files, so a key the
installed verl does not have (e.g. `actor.megatron.grad_offload` in 0.9.1) is left out with a warning instead
of failing at composition on the cluster. Keys inside verl's free-form dicts (override_transformer_config,
engine_kwargs, ...) are added with Hydra's `+` prefix. `to_sh` writes a standalone bash script.

Why one file of this size: the table of every first-class field and the verl key it renders to is one contract; the
shell and JSON writers beside it must quote exactly what it renders.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from grpolab.problems import Problem
from grpolab.recipe.dotted import flatten, has_dotted
from grpolab.recipe.schema import Recipe
from grpolab.verl import config as verl_schema

VERL_ENTRY = ["-m", "verl.trainer.main_ppo"]
LOCAL_ENTRY = ["-m", "grpolab.local.train"]
RUN_DIR = "${RUN_DIR}"  # placeholder when rendering without a run directory
# a plain word is left unquoted; the run-directory placeholder counts as plain, so that the bash script, which
# puts the real directory in its place, passes exactly what rendering with that directory would
_PLAIN = re.compile(r"^(\$\{RUN_DIR\}|[A-Za-z_/~])[A-Za-z0-9_\-./~]*$")
# a value starting with `~` (~/data) is always quoted: Hydra's grammar reads a bare `~` at the start of a value as
# something else and fails at composition, long after `check` passed. /abs and ./rel paths are plain words to
# Hydra, and stay unquoted so that the bash script (which puts the run directory in place of ${RUN_DIR}) passes
# exactly what rendering with that directory would
_PATHLIKE = re.compile(r"^~")
_RESERVED = {"true", "false", "null", "none", "nan", "inf"}


@dataclass
class Launch:
    """What is submitted: `python <entry> <overrides>` with `env` exported on every node."""

    recipe: str
    engine: str
    entry: list[str]
    overrides: list[str]
    env: dict[str, str]
    verl_version: str | None
    notes: list[Problem] = field(default_factory=list)

    def argv(self, python: str = "python3") -> list[str]:
        return [python, *self.entry, *self.overrides]

    def command(self, python: str = "python3") -> str:
        return " ".join(shlex.quote(a) for a in self.argv(python))

    def to_dict(self) -> dict:
        return {
            "recipe": self.recipe,
            "engine": self.engine,
            "entrypoint": self.command(),
            "argv": self.argv(),
            "overrides": self.overrides,
            "env": self.env,
            "verl_version": self.verl_version,
            "notes": [p.to_dict() for p in self.notes],
        }


def hydra_value(value: Any) -> str:
    """A Python value in Hydra's override grammar; strings are quoted unless they are plain words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    text = str(value)
    if _PLAIN.match(text) and text.lower() not in _RESERVED and not _PATHLIKE.match(text):
        return text
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def verl_keys(recipe: Recipe, run_dir: str) -> tuple[dict[str, Any], list[Problem]]:
    """The recipe as {verl dotted key: value}, and notes about what the installed verl cannot take."""
    keys, notes = first_class_keys(recipe, run_dir)
    for k, v in recipe.verl_overrides.items():  # the escape hatch goes last; the gate forbids shadowing
        keys[k] = v
    return keys, notes


# verl key (actor_rollout_ref. written as `arr.`) -> the recipe field that renders it: the gate names the field
# when a verl_overrides key shadows one of these
_ARR = "actor_rollout_ref."
FIELD_OF = {
    "algorithm.adv_estimator": "algorithm.adv_estimator",
    "algorithm.use_kl_in_reward": "algorithm.use_kl_in_reward",
    "data.train_files": "data.train_files",
    "data.val_files": "data.val_files",
    "data.train_batch_size": "data.train_batch_size",
    "data.max_prompt_length": "data.max_prompt_length",
    "data.max_response_length": "data.max_response_length",
    "data.truncation": "data.truncation",
    "data.filter_overlong_prompts": "data.filter_overlong_prompts",
    "data.seed": "trainer.seed",
    "data.prompt_key": "data.prompt_key",
    "data.shuffle": "data.shuffle",
    "data.apply_chat_template_kwargs": "data.chat_template_kwargs",
    "arr.model.path": "model.path",
    "arr.model.trust_remote_code": "model.trust_remote_code",
    "arr.model.use_remove_padding": "model.use_remove_padding",
    "arr.model.enable_gradient_checkpointing": "train.gradient_checkpointing",
    "arr.nccl_timeout": "trainer.timeout_s",
    "arr.actor.optim.lr": "algorithm.lr",
    "arr.actor.optim.lr_warmup_steps": "algorithm.lr_warmup_steps",
    "arr.actor.optim.weight_decay": "algorithm.weight_decay",
    "arr.actor.optim.clip_grad": "algorithm.grad_clip",
    "arr.actor.use_torch_compile": "train.torch_compile",
    "arr.ref.use_torch_compile": "train.torch_compile",
    "arr.actor.checkpoint.save_contents": "trainer.save_contents",
    "arr.actor.checkpoint.strict": "trainer.load_strict",
    "arr.actor.ppo_mini_batch_size": "algorithm.ppo_mini_batch_size",
    "arr.actor.ppo_micro_batch_size_per_gpu": "algorithm.micro_batch_size_per_device",
    "arr.actor.use_dynamic_bsz": "train.dynamic_bsz",
    "arr.actor.ppo_max_token_len_per_gpu": "train.max_token_len_per_device",
    "arr.actor.use_kl_loss": "algorithm.use_kl_loss",
    "arr.actor.kl_loss_coef": "algorithm.kl_loss_coef",
    "arr.actor.kl_loss_type": "algorithm.kl_loss_type",
    "arr.actor.entropy_coeff": "algorithm.entropy_coeff",
    "arr.actor.clip_ratio_low": "algorithm.clip_ratio_low",
    "arr.actor.clip_ratio_high": "algorithm.clip_ratio_high",
    "arr.actor.clip_ratio_c": "algorithm.clip_ratio_c",
    "arr.actor.loss_agg_mode": "algorithm.loss_agg_mode",
    "arr.ref.log_prob_micro_batch_size_per_gpu": "rollout.log_prob_micro_batch_size_per_device",
    "arr.rollout.checkpoint_engine.update_weights_bucket_megabytes": "rollout.update_weights_bucket_mb",
    "arr.rollout.enable_rollout_routing_replay": "rollout.routing_replay",
    "arr.rollout.engine_kwargs.sglang.attention_backend": "rollout.attention_backend",
    "arr.rollout.log_prob_micro_batch_size_per_gpu": "rollout.log_prob_micro_batch_size_per_device",
    "arr.rollout.name": "rollout.engine",
    "arr.rollout.tensor_model_parallel_size": "rollout.tp",
    "arr.rollout.data_parallel_size": "rollout.dp",
    "arr.rollout.expert_parallel_size": "rollout.ep",
    "arr.rollout.engine_kwargs": "rollout.engine_kwargs",
    "arr.rollout.val_kwargs": "rollout.val_kwargs",
    "trainer.project_name": "trainer.project",
    "trainer.experiment_name": "trainer.experiment",
    "trainer.nnodes": "cluster.nnodes",
    "trainer.n_gpus_per_node": "cluster.devices_per_node",
    "trainer.device": "cluster.device",
    "trainer.total_training_steps": "trainer.total_steps",
    "trainer.resume_from_path": "trainer.resume_path",
    "trainer.default_local_dir": "trainer.ckpt_dir",
    "trainer.max_actor_ckpt_to_keep": "trainer.keep_ckpts",
    "trainer.max_critic_ckpt_to_keep": "trainer.keep_ckpts",
    "arr.actor.data_loader_seed": "trainer.seed",
    "arr.rollout.seed": "trainer.seed",
    "arr.actor.fsdp_config.seed": "trainer.seed",
    "arr.actor.megatron.tensor_model_parallel_size": "train.tp",
    "arr.actor.megatron.pipeline_model_parallel_size": "train.pp",
    "arr.actor.megatron.context_parallel_size": "train.cp",
    "arr.actor.megatron.expert_model_parallel_size": "train.ep",
    "arr.actor.megatron.expert_tensor_parallel_size": "train.etp",
    "arr.actor.megatron.virtual_pipeline_model_parallel_size": "train.vpp",
    "arr.actor.megatron.sequence_parallel": "train.sp",
    "arr.actor.megatron.use_remove_padding": "model.use_remove_padding",
    "arr.actor.megatron.use_distributed_optimizer": "train.distributed_optimizer",
    "arr.actor.megatron.dtype": "model.dtype",
    "arr.actor.megatron.router_replay.mode": "train.router_replay",
    "arr.actor.megatron.seed": "trainer.seed",
    "arr.ref.megatron.param_offload": "train.ref_param_offload",
    "arr.ref.fsdp_config.param_offload": "train.ref_param_offload",
    "arr.ref.megatron.use_dist_checkpointing": "train.use_dist_checkpointing",
    "arr.ref.megatron.dist_checkpointing_path": "train.dist_checkpointing_path",
    "arr.actor.optim.use_precision_aware_optimizer": "train.precision_aware_optimizer",
    "arr.actor.megatron.override_transformer_config.recompute_granularity": "train.recompute.granularity",
    "arr.actor.megatron.override_transformer_config.recompute_method": "train.recompute.method",
    "arr.actor.megatron.override_transformer_config.recompute_num_layers": "train.recompute.num_layers",
    "arr.actor.megatron.override_transformer_config.pipeline_model_parallel_layout": "train.pp_layout",
    "arr.actor.megatron.override_transformer_config": "train.transformer",
    "arr.actor.optim.override_optimizer_config.optimizer_cpu_offload": "train.optimizer_cpu_offload",
    "arr.actor.optim.override_optimizer_config.optimizer_offload_fraction": "train.optimizer_offload_fraction",
    "arr.actor.optim.override_optimizer_config": "train.optimizer",
    "arr.actor.fsdp_config.ulysses_sequence_parallel_size": "train.ulysses_sp",
    "arr.ref.fsdp_config.ulysses_sequence_parallel_size": "train.ulysses_sp",
    "arr.rollout.n": "rollout.n",
    "arr.rollout.gpu_memory_utilization": "rollout.gpu_memory_utilization",
    "arr.rollout.max_model_len": "rollout.max_model_len",
    "arr.rollout.temperature": "rollout.temperature",
    "arr.rollout.top_p": "rollout.top_p",
    "arr.rollout.top_k": "rollout.top_k",
    "arr.rollout.max_num_seqs": "rollout.max_num_seqs",
    "arr.rollout.max_num_batched_tokens": "rollout.max_num_batched_tokens",
    "arr.rollout.enforce_eager": "rollout.enforce_eager",
    "arr.rollout.load_format": "rollout.load_format",
    "arr.rollout.cudagraph_capture_sizes": "rollout.cudagraph_capture_sizes",
    "arr.rollout.enable_chunked_prefill": "rollout.enable_chunked_prefill",
    "arr.rollout.enable_prefix_caching": "rollout.enable_prefix_caching",
    "arr.rollout.free_cache_engine": "rollout.free_cache_engine",
    "arr.rollout.calculate_log_probs": "rollout.calculate_log_probs",
    "trainer.total_epochs": "trainer.total_epochs",
    "trainer.save_freq": "trainer.save_freq",
    "trainer.test_freq": "trainer.test_freq",
    "trainer.val_before_train": "trainer.val_before_train",
    "trainer.logger": "trainer.logger",
    "trainer.resume_mode": "trainer.resume_mode",
    "trainer.balance_batch": "trainer.balance_batch",
    "trainer.rollout_data_dir": "trainer.rollout_data_dir",
    "arr.actor.megatron.param_offload": "train.param_offload",
    "arr.actor.megatron.optimizer_offload": "train.optimizer_offload",
    "arr.actor.megatron.grad_offload": "train.grad_offload",
    "arr.actor.megatron.use_dist_checkpointing": "train.use_dist_checkpointing",
    "arr.actor.megatron.dist_checkpointing_path": "train.dist_checkpointing_path",
    "arr.actor.megatron.use_mbridge": "train.use_mbridge",
    "arr.actor.megatron.vanilla_mbridge": "train.vanilla_mbridge",
    "arr.actor.megatron.pad_bshd_to_minibatch_max": "train.pad_bshd_to_minibatch_max",
    "arr.actor.fsdp_config.param_offload": "train.param_offload",
    "arr.actor.fsdp_config.optimizer_offload": "train.optimizer_offload",
    "arr.actor.ulysses_sequence_parallel_size": "train.ulysses_sp",
}


def field_of(verl_key: str) -> str | None:
    """The recipe field that renders this verl key (None when no field does)."""
    key = verl_key.lstrip("+")
    short = "arr." + key[len(_ARR) :] if key.startswith(_ARR) else key
    parts = short.split(".")
    for i in range(len(parts), 0, -1):  # the longest known prefix: free-form dicts map as a whole
        found = FIELD_OF.get(".".join(parts[:i]))
        if found:
            return found
    section = {"rollout": "rollout", "data": "data", "trainer": "trainer"}.get(
        parts[1] if parts[0] == "arr" else parts[0]
    )
    if section and parts[-1] in _SECTION_FIELDS.get(section, ()):  # same name in the recipe section
        return f"{section}.{parts[-1]}"
    leaf = {
        "param_offload": "train.param_offload",
        "optimizer_offload": "train.optimizer_offload",
        "use_mbridge": "train.use_mbridge",
        "vanilla_mbridge": "train.vanilla_mbridge",
        "use_dist_checkpointing": "train.use_dist_checkpointing",
        "dist_checkpointing_path": "train.dist_checkpointing_path",
        "pad_bshd_to_minibatch_max": "train.pad_bshd_to_minibatch_max",
    }
    return leaf.get(parts[-1])


_SECTION_FIELDS = {
    "rollout": (
        "n",
        "gpu_memory_utilization",
        "max_model_len",
        "temperature",
        "top_p",
        "top_k",
        "max_num_seqs",
        "max_num_batched_tokens",
        "enforce_eager",
        "load_format",
        "cudagraph_capture_sizes",
        "enable_chunked_prefill",
        "enable_prefix_caching",
        "free_cache_engine",
        "calculate_log_probs",
    ),
    "trainer": (
        "total_epochs",
        "save_freq",
        "test_freq",
        "val_before_train",
        "logger",
        "resume_mode",
        "balance_batch",
        "rollout_data_dir",
    ),
}


def first_class_keys(recipe: Recipe, run_dir: str = RUN_DIR) -> tuple[dict[str, Any], list[Problem]]:
    """The verl keys the renderer emits from the recipe's own fields (everything but verl_overrides)."""
    t, ro, d, a, tr = recipe.train, recipe.rollout, recipe.data, recipe.algorithm, recipe.trainer
    actor, ref, roll = "actor_rollout_ref.actor", "actor_rollout_ref.ref", "actor_rollout_ref.rollout"
    logger = list(dict.fromkeys([*tr.logger, "file"]))  # `file` writes metrics.jsonl: the monitor needs it
    micro = a.micro_batch_size_per_device
    log_prob_micro = ro.log_prob_micro_batch_size_per_device or micro
    keys: dict[str, Any] = {
        "algorithm.adv_estimator": a.adv_estimator,
        "algorithm.use_kl_in_reward": a.use_kl_in_reward,
        "data.train_files": d.train_files,
        "data.val_files": d.val_files,
        "data.train_batch_size": d.train_batch_size,
        "data.max_prompt_length": d.max_prompt_length,
        "data.max_response_length": d.max_response_length,
        "data.truncation": d.truncation,
        "data.filter_overlong_prompts": d.filter_overlong_prompts,
        "data.seed": tr.seed,
        "actor_rollout_ref.model.path": recipe.model.path,
        "actor_rollout_ref.model.trust_remote_code": recipe.model.trust_remote_code,
        "actor_rollout_ref.model.use_remove_padding": recipe.model.use_remove_padding,
        "actor_rollout_ref.model.enable_gradient_checkpointing": t.gradient_checkpointing,
        "data.prompt_key": d.prompt_key,
        "data.shuffle": d.shuffle,
        "actor_rollout_ref.nccl_timeout": tr.timeout_s,
        f"{actor}.optim.lr": a.lr,
        f"{actor}.optim.lr_warmup_steps": a.lr_warmup_steps,
        f"{actor}.optim.weight_decay": a.weight_decay,
        f"{actor}.optim.clip_grad": a.grad_clip,
        f"{actor}.use_torch_compile": t.torch_compile,
        f"{ref}.use_torch_compile": t.torch_compile,
        f"{actor}.checkpoint.save_contents": tr.save_contents,
        f"{actor}.checkpoint.strict": tr.load_strict,
        f"{actor}.ppo_mini_batch_size": a.ppo_mini_batch_size,
        f"{actor}.ppo_micro_batch_size_per_gpu": micro,
        f"{actor}.use_dynamic_bsz": t.dynamic_bsz,
        f"{actor}.ppo_max_token_len_per_gpu": t.max_token_len_per_device,
        f"{actor}.use_kl_loss": a.use_kl_loss,
        f"{actor}.kl_loss_coef": a.kl_loss_coef,
        f"{actor}.kl_loss_type": a.kl_loss_type,
        f"{actor}.entropy_coeff": a.entropy_coeff,
        f"{actor}.clip_ratio_low": a.clip_ratio_low,
        f"{actor}.clip_ratio_high": a.clip_ratio_high,
        f"{actor}.clip_ratio_c": a.clip_ratio_c,
        f"{actor}.loss_agg_mode": a.loss_agg_mode,
        f"{ref}.log_prob_micro_batch_size_per_gpu": log_prob_micro,
        f"{roll}.name": ro.engine,
        f"{roll}.tensor_model_parallel_size": ro.tp,
        f"{roll}.data_parallel_size": ro.dp,
        f"{roll}.expert_parallel_size": ro.ep,
        f"{roll}.n": ro.n,
        f"{roll}.gpu_memory_utilization": ro.gpu_memory_utilization,
        f"{roll}.temperature": ro.temperature,
        f"{roll}.top_p": ro.top_p,
        f"{roll}.top_k": ro.top_k,
        f"{roll}.max_num_seqs": ro.max_num_seqs,
        f"{roll}.max_num_batched_tokens": ro.max_num_batched_tokens,
        f"{roll}.enforce_eager": ro.enforce_eager,
        f"{roll}.load_format": ro.load_format,
        f"{roll}.log_prob_micro_batch_size_per_gpu": log_prob_micro,
        f"{roll}.checkpoint_engine.update_weights_bucket_megabytes": ro.update_weights_bucket_mb,
        f"{roll}.enable_rollout_routing_replay": ro.routing_replay,
        f"{roll}.enable_chunked_prefill": ro.enable_chunked_prefill,
        f"{roll}.enable_prefix_caching": ro.enable_prefix_caching,
        f"{roll}.free_cache_engine": ro.free_cache_engine,
        f"{roll}.calculate_log_probs": ro.calculate_log_probs,
        **{f"{roll}.val_kwargs.{k}": v for k, v in ro.val_kwargs.model_dump().items()},
        "trainer.project_name": tr.project,
        "trainer.experiment_name": tr.experiment,
        "trainer.nnodes": recipe.cluster.nnodes,
        "trainer.n_gpus_per_node": recipe.cluster.devices_per_node,
        "trainer.device": recipe.cluster.device,
        "trainer.total_epochs": tr.total_epochs,
        "trainer.save_freq": tr.save_freq,
        "trainer.test_freq": tr.test_freq,
        "trainer.val_before_train": tr.val_before_train,
        "trainer.logger": logger,
        "trainer.resume_mode": tr.resume_mode,
        "trainer.balance_batch": tr.balance_batch,
        "trainer.default_local_dir": tr.ckpt_dir or f"{run_dir}/checkpoint",
    }
    if tr.total_steps is not None:
        keys["trainer.total_training_steps"] = tr.total_steps
    if tr.rollout_data_dir is not None:
        keys["trainer.rollout_data_dir"] = tr.rollout_data_dir
    if tr.resume_path is not None:
        keys["trainer.resume_from_path"] = tr.resume_path
    # one seed for the data loader, the actor and the rollout (grpolab.jobs.provenance records it)
    keys[f"{actor}.data_loader_seed"] = tr.seed
    keys[f"{roll}.seed"] = tr.seed
    # verl keeps the newest N itself; with keep-best the job wrapper keeps them (verl's rotation would drop the best)
    if tr.keep_ckpts is not None and tr.keep_best_metric is None:
        keys["trainer.max_actor_ckpt_to_keep"] = tr.keep_ckpts
        keys["trainer.max_critic_ckpt_to_keep"] = tr.keep_ckpts
    ref_offload = t.param_offload if t.ref_param_offload is None else t.ref_param_offload
    if ro.max_model_len is not None:  # null: verl's default, the model's own context length
        keys[f"{roll}.max_model_len"] = ro.max_model_len
    if ro.cudagraph_capture_sizes is not None:
        keys[f"{roll}.cudagraph_capture_sizes"] = ro.cudagraph_capture_sizes
    keys.update(flatten(ro.engine_kwargs, f"{roll}.engine_kwargs.{ro.engine}"))
    if ro.attention_backend is not None and ro.engine == "sglang":  # verl pops it from engine_kwargs.sglang
        keys[f"{roll}.engine_kwargs.sglang.attention_backend"] = ro.attention_backend
    if d.chat_template_kwargs:
        keys.update(flatten(d.chat_template_kwargs, "data.apply_chat_template_kwargs"))
    notes: list[Problem] = []
    if t.engine == "megatron":
        mg = f"{actor}.megatron"
        keys.update(
            {
                f"{mg}.tensor_model_parallel_size": t.tp,
                f"{mg}.pipeline_model_parallel_size": t.pp,
                f"{mg}.context_parallel_size": t.cp,
                f"{mg}.expert_model_parallel_size": t.ep,
                f"{mg}.expert_tensor_parallel_size": t.etp,
                f"{mg}.virtual_pipeline_model_parallel_size": t.vpp if t.vpp > 1 else None,
                f"{mg}.sequence_parallel": t.sp,
                f"{mg}.use_remove_padding": recipe.model.use_remove_padding,
                f"{mg}.pad_bshd_to_minibatch_max": t.pad_bshd_to_minibatch_max,
                f"{mg}.param_offload": t.param_offload,
                f"{mg}.optimizer_offload": t.optimizer_offload,
                f"{mg}.use_distributed_optimizer": t.distributed_optimizer,
                f"{mg}.use_dist_checkpointing": t.use_dist_checkpointing,
                f"{mg}.use_mbridge": t.use_mbridge,
                f"{mg}.vanilla_mbridge": t.vanilla_mbridge,
                f"{mg}.dtype": recipe.model.dtype,
                f"{mg}.router_replay.mode": t.router_replay,
                f"{mg}.seed": tr.seed,
                f"{ref}.megatron.param_offload": ref_offload,
                f"{ref}.megatron.use_dist_checkpointing": t.use_dist_checkpointing,
                f"{actor}.optim.use_precision_aware_optimizer": t.precision_aware_optimizer,
            }
        )
        if t.grad_offload:
            keys[f"{mg}.grad_offload"] = True
        otc = f"{mg}.override_transformer_config"
        rc = t.recompute
        if t.dist_checkpointing_path is not None:
            keys[f"{mg}.dist_checkpointing_path"] = t.dist_checkpointing_path
            keys[f"{ref}.megatron.dist_checkpointing_path"] = t.dist_checkpointing_path
        recompute = {
            "recompute_granularity": rc.granularity,
            "recompute_method": rc.method,
            "recompute_num_layers": rc.num_layers,
        }
        keys.update({f"{otc}.{k}": v for k, v in recompute.items() if v is not None})  # null: megatron's own
        if t.pp_layout:
            keys[f"{otc}.pipeline_model_parallel_layout"] = t.pp_layout
        for k, v in t.transformer.items():
            keys[f"{otc}.{k}"] = v
        ooc = f"{actor}.optim.override_optimizer_config"
        if t.optimizer_cpu_offload:  # only when asked: it moves the optimizer step itself to the host CPU
            keys[f"{ooc}.optimizer_cpu_offload"] = True
            keys[f"{ooc}.optimizer_offload_fraction"] = t.optimizer_offload_fraction
        for k, v in t.optimizer.items():
            keys[f"{ooc}.{k}"] = v
    elif t.engine == "fsdp":
        keys.update(
            {
                f"{actor}.fsdp_config.param_offload": t.param_offload,
                f"{actor}.fsdp_config.optimizer_offload": t.optimizer_offload,
                f"{actor}.fsdp_config.ulysses_sequence_parallel_size": t.ulysses_sp,
                f"{actor}.fsdp_config.seed": tr.seed,
                f"{ref}.fsdp_config.param_offload": ref_offload,
                f"{ref}.fsdp_config.ulysses_sequence_parallel_size": t.ulysses_sp,
            }
        )
    return keys, notes


def render(recipe: Recipe, run_dir: str | None = None) -> Launch:
    """The launch for the installed verl (or `python -m grpolab.local.train` for train.engine trl)."""
    run_dir = run_dir or RUN_DIR
    env = dict(recipe.env)
    if recipe.train.engine == "trl":
        return Launch(recipe.name, "trl", [*LOCAL_ENTRY, "--run-dir", run_dir], [], env, None)
    keys, notes = verl_keys(recipe, run_dir)
    schema = verl_schema.base_config(recipe.train.engine)
    overrides = ["model_engine=megatron"] if recipe.train.engine == "megatron" else []
    for key, value in keys.items():
        bare = key.lstrip("+")
        if key.startswith("+"):
            overrides.append(f"{key}={hydra_value(value)}")
        elif schema is None or has_dotted(schema, bare):
            overrides.append(f"{key}={hydra_value(value)}")
        elif verl_schema.in_free_form(schema, bare):
            overrides.append(f"+{key}={hydra_value(value)}")
        elif key in recipe.verl_overrides:
            overrides.append(f"{key}={hydra_value(value)}")  # the user's own key: verl-schema reports it
        else:
            notes.append(
                Problem(
                    "verl-schema",
                    "warning",
                    _recipe_key(key),
                    value,
                    f"the installed verl {verl_schema.verl_version()} has no {key!r}: left out of the launch",
                    "use a verl release that has it, or drop the setting from the recipe",
                )
            )
    env["VERL_FILE_LOGGER_PATH"] = f"{run_dir}/metrics.jsonl"
    return Launch(recipe.name, recipe.train.engine, list(VERL_ENTRY), overrides, env, verl_schema.verl_version(), notes)


def _recipe_key(verl_key: str) -> str:
    if verl_key.endswith(".grad_offload"):
        return "train.grad_offload"
    return f"verl_overrides.{verl_key}"


def to_json(launch: Launch) -> str:
    return json.dumps(launch.to_dict(), indent=2)


def to_sh(launch: Launch, recipe: Recipe) -> str:
    """A standalone bash script: strict mode, every value quoted, env exported, an up-front device check."""
    q = shlex.quote
    c = recipe.cluster
    lines = [
        "#!/usr/bin/env bash",
        f"# GRPO Lab launch for recipe {recipe.name} ({', '.join(recipe.files)}); generated by `grpolab render "
        f"{recipe.name} --format sh`.",
        (
            f"# Needs {c.nnodes} node(s) x {c.devices_per_node} {c.device} device(s) in a running Ray cluster; run it "
            "on the head node. Edit the recipe, not this file."
            if recipe.train.engine != "trl"
            else "# Runs here, on this machine's CPU (grpolab.local.train); no cluster needed. Edit the recipe, not this "
            "file."
        ),
        "set -euo pipefail",
        "",
        f'RUN_DIR="${{RUN_DIR:-$PWD/runs/{recipe.name}-$(date -u +%Y%m%d-%H%M%S)}}"',
        'PYTHON="${PYTHON:-python3}"',
        'mkdir -p "$RUN_DIR/logs"',
        "",
    ]
    if c.device == "npu":
        lines += [
            "# Up-front device check: fail in a second, not after the cluster has loaded the model.",
            "if ! \"$PYTHON\" -c 'import torch, torch_npu, sys; sys.exit(0 if torch.npu.is_available() else 1)' "
            ">/dev/null 2>&1; then",
            "  echo 'error: torch_npu does not import or no NPU is visible on this node; this recipe needs "
            f"{c.nnodes} x {c.devices_per_node} Ascend NPUs (install torch_npu + CANN, check npu-smi info)' >&2",
            "  exit 1",
            "fi",
        ]
    elif c.device == "cuda":
        lines += [
            "# Up-front device check: fail in a second, not after the cluster has loaded the model.",
            "if ! \"$PYTHON\" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' "
            ">/dev/null 2>&1; then",
            f"  echo 'error: no CUDA device visible; this recipe needs {c.nnodes} x {c.devices_per_node} GPUs "
            "(check nvidia-smi and the torch build)' >&2",
            "  exit 1",
            "fi",
            "",
        ]
    for name, value in launch.env.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(f"env name {name!r} is not a valid shell variable name")
        if value.startswith(RUN_DIR):
            rest = value[len(RUN_DIR) :]
            lines.append(f'export {name}="$RUN_DIR"{q(rest) if rest else ""}')
        else:
            lines.append(f"export {name}={q(value)}")
    lines += ["args=("] if lines[-1] == "" else ["", "args=("]
    for arg in [*launch.entry, *launch.overrides]:
        if RUN_DIR in arg:
            head, tail = arg.split(RUN_DIR, 1)
            tail = q(tail) if tail else ""  # no stray '' after "$RUN_DIR"
            lines.append(f'  {q(head)}"$RUN_DIR"{tail}' if head else f'  "$RUN_DIR"{tail}')
        else:
            lines.append(f"  {q(arg)}")
    lines += [")", '"$PYTHON" "${args[@]}" 2>&1 | tee "$RUN_DIR/logs/job.log"', ""]
    return "\n".join(lines)
