"""Recipe -> settings of the local TRL trainer -> GRPOConfig keyword arguments, and what TRL cannot honour.

Pure Python on purpose (no torch, no trl at module level): the validator imports `unsupported` to report
rule `engine-support` in milliseconds.

verl -> TRL 1.16 (docs/facts.md section 5):
    rollout.n                          -> num_generations
    algorithm.kl_loss_coef             -> beta (0 when use_kl_loss is false); TRL's KL is low_var_kl only, and
                                          without TRL's importance-ratio weighting of it (use_bias_correction_kl,
                                          on by default in TRL 1.16): verl's low_var_kl has none
    algorithm.clip_ratio_low / high    -> epsilon / epsilon_high
    algorithm.clip_ratio_c             -> delta (TRL's two-sided clip caps the ratio for negative advantages:
                                          verl's dual clip)
    algorithm.entropy_coeff            -> entropy_coef (both an entropy bonus; TRL's is always a token mean)
    algorithm.loss_agg_mode            -> loss_type: token-mean = dapo, seq-mean-token-mean = grpo,
                                          seq-mean-token-sum-norm = dr_grpo
    data.train_batch_size x rollout.n  -> generation_batch_size (completions generated per step)
    micro_batch_size_per_device        -> per_device_train_batch_size (completions per forward pass)
    ppo_mini_batch_size x n / micro    -> gradient_accumulation_steps (one optimizer update per mini-batch)
    data.max_response_length           -> max_completion_length (TRL 1.16 has no max_prompt_length: the trainer
                                          refuses data whose prompts are longer)
    train.gradient_checkpointing       -> gradient_checkpointing (TRL's default is on, as verl's)
    trainer.total_steps                -> max_steps x (optimizer updates per step)
A verl step generates once and makes train_batch_size / ppo_mini_batch_size optimizer updates; TRL's
global step counts optimizer updates, so `updates_per_step` converts between the two.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from grpolab.paths import recipe_relative
from grpolab.recipe.dotted import get_dotted

# verl's loss aggregation modes and the TRL loss type that aggregates the same way.
LOSS_AGG_TO_TRL = {
    "token-mean": "dapo",
    "seq-mean-token-mean": "grpo",
    "seq-mean-token-sum-norm": "dr_grpo",
}
# TRL's KL estimator is the k3 ("low variance") one: verl calls it low_var_kl (k3 is its alias).
TRL_KL_TYPES = ("low_var_kl", "k3")
LR_SCHEDULES = ("constant", "linear", "cosine")
ASYNC_MODES = ("sync", "colocate_async")  # the CPU trainer's modes (grpolab.local.async_loop: colocate_async)


@dataclass
class TinySettings:
    """Everything one local run needs, read from a recipe (no defaults here: params/base.yaml and the `tiny`
    recipe are the one home of every value; docs/facts.md section 5 has the measured ones).

    Names follow the recipe where a recipe field exists (comment: its dotted key); the rest are
    local-only knobs (the recipe's `local` section).
    """

    # the model (local.*)
    hidden_size: int
    layers: int
    heads: int
    kv_heads: int
    intermediate_size: int
    warmup_steps: int  # short supervised warm-up on train problems before GRPO: the format, not the answers
    warmup_batch_size: int
    warmup_lr: float  # 3e-3 already answers 0.2-0.4 of the validation split: too much
    threads: int  # torch threads; 0 = leave torch's default
    max_train_seconds: float  # stop GRPO after this long (0 = no limit); the run still ends cleanly
    # GRPO learning-rate schedule: constant (verl's default), linear or cosine (decay to 0 over total_steps).
    # Linear decay measured better than constant: the last validations stop swinging by +-0.15.
    lr_schedule: str
    # the task's data (recipe fields): verl-format files, read where `grpolab data` reads them (recipe_relative)
    train_files: list[str]  # data.train_files
    val_files: list[str]  # data.val_files
    prompt_key: str  # data.prompt_key: the column of chat messages
    # GRPO (recipe fields)
    n: int  # rollout.n
    train_batch_size: int  # data.train_batch_size: prompts per step
    ppo_mini_batch_size: int  # algorithm.ppo_mini_batch_size (prompts)
    micro_batch_size_per_device: int  # algorithm.micro_batch_size_per_device (completions)
    lr: float  # algorithm.lr
    use_kl_loss: bool  # algorithm.use_kl_loss
    kl_loss_coef: float  # algorithm.kl_loss_coef
    kl_loss_type: str  # algorithm.kl_loss_type
    clip_ratio_low: float  # algorithm.clip_ratio_low
    clip_ratio_high: float  # algorithm.clip_ratio_high
    clip_ratio_c: float  # algorithm.clip_ratio_c (dual clip)
    entropy_coeff: float  # algorithm.entropy_coeff
    loss_agg_mode: str  # algorithm.loss_agg_mode
    max_prompt_length: int  # data.max_prompt_length (tokens = characters)
    max_response_length: int  # data.max_response_length
    total_steps: int  # trainer.total_steps
    test_freq: int  # trainer.test_freq (steps between validations; <= 0: start and end only)
    save_freq: int  # trainer.save_freq (steps between checkpoints, the last step included; <= 0: none)
    seed: int  # trainer.seed: the warm-up's draws, TRL's sampler and generation, torch's init of the policy
    resume_mode: str  # trainer.resume_mode: resume_path continues from resume_path's checkpoint
    resume_path: str | None  # trainer.resume_path: a checkpoint folder (CKPT_DIR/global_step_N) of an earlier run
    ckpt_dir: str | None  # trainer.ckpt_dir: where checkpoints go (null: RUN_DIR/checkpoint)
    wandb: bool  # "wandb" in trainer.logger: TRL reports to wandb as well (offline without an API key)
    temperature: float  # rollout.temperature
    top_p: float  # rollout.top_p
    top_k: int  # rollout.top_k (-1: off)
    gradient_checkpointing: bool  # train.gradient_checkpointing: recompute activations in the backward pass
    # sync: TRL's GRPOTrainer; colocate_async: grpolab.local.async_loop (TRL's async trainer needs CUDA)
    mode: str  # schedule.mode
    warmup_batches: float  # schedule.warmup_batches: batches generated ahead of the trainer
    max_off_policy: int | None  # schedule.max_off_policy: most model versions a trained group may lag (None: any)
    off_policy_strategy: str  # schedule.off_policy_strategy: drop | wait
    reward_function: str | None = None  # reward.function (`path.py:name`, verl's signature); None: the task's score

    @property
    def updates_per_step(self) -> int:
        """Optimizer updates per GRPO step (TRL global steps per verl step)."""
        return max(1, self.train_batch_size // self.ppo_mini_batch_size)

    def replace(self, **changes: Any) -> TinySettings:
        known = {f.name for f in fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise KeyError(f"unknown TinySettings field(s): {', '.join(unknown)}")
        return TinySettings(**{**asdict(self), **changes})


def grpo_config_kwargs(settings: TinySettings, output_dir: str) -> dict[str, Any]:
    """Keyword arguments for trl.GRPOConfig that reproduce the settings (checked by `settings_problems`)."""
    check_settings(settings)
    s = settings
    completions_per_step = s.train_batch_size * s.n
    micro = min(s.micro_batch_size_per_device, s.ppo_mini_batch_size * s.n)
    return dict(
        output_dir=output_dir,
        # batch geometry: one generation of train_batch_size x n completions per verl step
        num_generations=s.n,
        per_device_train_batch_size=micro,
        generation_batch_size=completions_per_step,
        gradient_accumulation_steps=s.ppo_mini_batch_size * s.n // micro,
        max_steps=s.total_steps * s.updates_per_step,
        num_iterations=1,  # verl's ppo_epochs 1
        # algorithm
        learning_rate=s.lr,
        beta=s.kl_loss_coef if s.use_kl_loss else 0.0,
        use_bias_correction_kl=False,  # verl's low_var_kl has no importance-ratio weight (TRL 1.16 adds one by default)
        epsilon=s.clip_ratio_low,
        epsilon_high=s.clip_ratio_high,
        delta=s.clip_ratio_c,
        entropy_coef=s.entropy_coeff,
        loss_type=LOSS_AGG_TO_TRL[s.loss_agg_mode],  # check_settings: TRL has one
        scale_rewards="group",  # GRPO's advantage: (r - group mean) / group std, as verl's grpo estimator
        lr_scheduler_type=s.lr_schedule,
        warmup_steps=0,
        weight_decay=0.0,
        max_grad_norm=1.0,
        gradient_checkpointing=s.gradient_checkpointing,
        # rollout
        max_completion_length=s.max_response_length,
        temperature=s.temperature,
        top_p=s.top_p,
        top_k=max(0, s.top_k),  # verl's -1 (off) is TRL's 0
        # housekeeping: CPU, our own logging and checkpoints
        seed=s.seed,
        use_cpu=True,
        bf16=False,
        fp16=False,
        logging_steps=1,
        report_to=["wandb"] if s.wandb else "none",
        disable_tqdm=True,
        # checkpoints every save_freq GRPO steps and at the last one (as verl), with the optimizer, scheduler and RNG
        # state: what an exact resume needs (grpolab.local.checkpoint renames each to global_step_N)
        save_strategy="steps" if s.save_freq > 0 else "no",
        save_steps=max(1, s.save_freq) * s.updates_per_step,
        save_only_model=False,
        save_total_limit=None,  # retention is grpolab's (trainer.keep_ckpts, keep_best_metric): the job wrapper's
        dataloader_num_workers=0,
        shuffle_dataset=False,  # the dataset is already in training order (grpolab.local.task.train_schedule)
        remove_unused_columns=False,  # the reward needs the dataset's `answer` column
        log_completions=False,
    )


def settings_problems(settings: TinySettings) -> list[tuple[str, Any, str]]:
    """(dotted key, value, reason) for settings TRL cannot honour or that do not fit together."""
    s = settings
    out: list[tuple[str, Any, str]] = []
    if s.loss_agg_mode not in LOSS_AGG_TO_TRL:
        out.append(
            ("algorithm.loss_agg_mode", s.loss_agg_mode, f"TRL's loss types cover only {', '.join(LOSS_AGG_TO_TRL)}")
        )
    if s.use_kl_loss and s.kl_loss_coef and s.kl_loss_type not in TRL_KL_TYPES:
        out.append(("algorithm.kl_loss_type", s.kl_loss_type, "TRL's KL penalty is low_var_kl (k3) only"))
    if s.n < 2:
        out.append(("rollout.n", s.n, "GRPO needs at least 2 generations per prompt"))
    if s.ppo_mini_batch_size <= 0 or s.train_batch_size % s.ppo_mini_batch_size:
        out.append(
            (
                "algorithm.ppo_mini_batch_size",
                s.ppo_mini_batch_size,
                f"must divide data.train_batch_size ({s.train_batch_size})",
            )
        )
    elif s.micro_batch_size_per_device <= 0 or (s.ppo_mini_batch_size * s.n) % min(
        s.micro_batch_size_per_device, s.ppo_mini_batch_size * s.n
    ):
        out.append(
            (
                "algorithm.micro_batch_size_per_device",
                s.micro_batch_size_per_device,
                f"must divide ppo_mini_batch_size x rollout.n ({s.ppo_mini_batch_size * s.n})",
            )
        )
    if s.lr_schedule not in LR_SCHEDULES:
        out.append(("local.lr_schedule", s.lr_schedule, f"one of {', '.join(LR_SCHEDULES)}"))
    if s.total_steps < 1:
        out.append(("trainer.total_steps", s.total_steps, "the local trainer needs a step budget (>= 1)"))
    if s.resume_mode == "resume_path" and not s.resume_path:
        out.append(("trainer.resume_path", s.resume_path, "resume_mode resume_path needs a checkpoint folder"))
    if s.mode not in ASYNC_MODES:
        out.append(("schedule.mode", s.mode, f"the CPU trainer runs {' and '.join(ASYNC_MODES)}"))
    elif s.mode != "sync" and s.save_freq > 0:
        out.append(
            ("trainer.save_freq", s.save_freq, "the CPU trainer's asynchronous loop writes no checkpoints: set -1")
        )
    elif s.mode != "sync" and s.resume_mode == "resume_path":
        out.append(("trainer.resume_mode", s.resume_mode, "the CPU trainer's asynchronous loop does not resume"))
    return out


def check_settings(settings: TinySettings) -> None:
    """ValueError naming every problem of `settings_problems`."""
    problems = settings_problems(settings)
    if problems:
        raise ValueError("; ".join(f"{key}={value!r}: {reason}" for key, value, reason in problems))


def unsupported(recipe: Any) -> list[tuple[str, Any, str]]:
    """(dotted key, value, reason) for recipe fields the TRL engine cannot honour: rule `engine-support`.

    Only for `train.engine: trl` (other engines: []). The device, world size, model parallelism and rollout
    engine are checked by grpolab.rules.validate itself; this lists what depends on TRL's GRPO implementation:
    the algorithm's options and the batch geometry.
    """
    if get_dotted(recipe, "train.engine") not in (None, "trl"):
        return []
    algo = get_dotted(recipe, "algorithm")
    out: list[tuple[str, Any, str]] = []

    mode = get_dotted(algo, "loss_agg_mode")
    if mode is not None and mode not in LOSS_AGG_TO_TRL:
        out.append(
            ("algorithm.loss_agg_mode", mode, f"TRL has no loss type for it; TRL covers {', '.join(LOSS_AGG_TO_TRL)}")
        )
    kl_type = get_dotted(algo, "kl_loss_type")
    if get_dotted(algo, "use_kl_loss") is not False and kl_type is not None and kl_type not in TRL_KL_TYPES:
        out.append(("algorithm.kl_loss_type", kl_type, "TRL's KL penalty is low_var_kl (k3) only"))
    adv = get_dotted(algo, "adv_estimator")
    if adv is not None and adv != "grpo":
        out.append(("algorithm.adv_estimator", adv, "TRL's GRPOTrainer computes GRPO advantages only"))
    if get_dotted(algo, "use_kl_in_reward"):
        out.append(("algorithm.use_kl_in_reward", True, "TRL has no KL penalty in the reward, only in the loss"))
    overrides = get_dotted(recipe, "verl_overrides")
    if overrides:
        out.append(("verl_overrides", dict(overrides), "raw verl overrides have no meaning for the TRL engine"))
    values, missing = recipe_values(recipe)
    out += [
        (key, None, "the TRL engine needs a value here (e.g. a step budget for trainer.total_steps)") for key in missing
    ]
    try:
        extra = settings_problems(TinySettings(**values)) if not missing else []
    except (TypeError, ValueError, KeyError):
        extra = []
    seen = {key for key, _, _ in out}
    out.extend(p for p in extra if p[0] not in seen)
    return out


def recipe_values(recipe: Any) -> tuple[dict[str, Any], list[str]]:
    """(TinySettings values read from the recipe, dotted keys the recipe leaves unset)."""
    values: dict[str, Any] = {}
    missing: list[str] = []
    for field, dotted in [*RECIPE_FIELDS.items(), *((key, f"local.{key}") for key in LOCAL_FIELDS)]:
        value = get_dotted(recipe, dotted)
        if field in FILES and value is not None:  # a run folder's recipe.yaml too: where `grpolab data` read them
            origin = recipe.origin(dotted) if hasattr(recipe, "origin") else ""
            values[field] = [str(recipe_relative(f, origin)) for f in ([value] if isinstance(value, str) else value)]
        elif value is None and field in NULLABLE:
            values[field] = None
        elif value is None:
            missing.append(dotted)
        else:
            values[field] = value
    logger = get_dotted(recipe, "trainer.logger")
    if logger is None:
        missing.append("trainer.logger")
    else:
        values["wandb"] = "wandb" in logger
    return values, missing


def settings_from_recipe(recipe: Any) -> TinySettings:
    """TinySettings from a loaded Recipe (pydantic model or plain nested dict); every field must be set."""
    values, missing = recipe_values(recipe)
    if missing:
        raise ValueError(f"the recipe leaves {', '.join(missing)} unset; the TRL engine needs a value for each")
    return TinySettings(**values)


# TinySettings field -> the recipe's dotted key.
RECIPE_FIELDS = {
    "reward_function": "reward.function",
    "train_files": "data.train_files",
    "val_files": "data.val_files",
    "prompt_key": "data.prompt_key",
    "n": "rollout.n",
    "temperature": "rollout.temperature",
    "top_p": "rollout.top_p",
    "top_k": "rollout.top_k",
    "train_batch_size": "data.train_batch_size",
    "max_prompt_length": "data.max_prompt_length",
    "max_response_length": "data.max_response_length",
    "ppo_mini_batch_size": "algorithm.ppo_mini_batch_size",
    "micro_batch_size_per_device": "algorithm.micro_batch_size_per_device",
    "lr": "algorithm.lr",
    "use_kl_loss": "algorithm.use_kl_loss",
    "kl_loss_coef": "algorithm.kl_loss_coef",
    "kl_loss_type": "algorithm.kl_loss_type",
    "clip_ratio_low": "algorithm.clip_ratio_low",
    "clip_ratio_high": "algorithm.clip_ratio_high",
    "clip_ratio_c": "algorithm.clip_ratio_c",
    "entropy_coeff": "algorithm.entropy_coeff",
    "loss_agg_mode": "algorithm.loss_agg_mode",
    "total_steps": "trainer.total_steps",
    "test_freq": "trainer.test_freq",
    "save_freq": "trainer.save_freq",
    "seed": "trainer.seed",
    "resume_mode": "trainer.resume_mode",
    "resume_path": "trainer.resume_path",
    "ckpt_dir": "trainer.ckpt_dir",
    "gradient_checkpointing": "train.gradient_checkpointing",
    "mode": "schedule.mode",
    "warmup_batches": "schedule.warmup_batches",
    "max_off_policy": "schedule.max_off_policy",
    "off_policy_strategy": "schedule.off_policy_strategy",
}
# fields whose recipe value may be null (null has a meaning: no resume path, the default checkpoint folder)
NULLABLE = ("resume_path", "ckpt_dir", "reward_function", "max_off_policy")
FILES = ("train_files", "val_files")  # a file or a list in the recipe, a list of paths here
# The recipe's `local` section: tiny-only knobs, same names as TinySettings.
LOCAL_FIELDS = tuple(
    "hidden_size layers heads kv_heads intermediate_size warmup_steps warmup_batch_size warmup_lr threads "
    "max_train_seconds lr_schedule".split()
)
