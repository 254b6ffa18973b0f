"""The family of a failure, from the structure of its first real error (grpolab.monitor.firsterror): the exception
type, the library whose frame raised it, the library that called it and the functions on its stack; words only
where the structure cannot tell (a message that names an argument and its values).

    family_of(first, context) -> Verdict | None   a cause, family and what to change, from the first error alone
    family_for(cause, first, context) -> str      the family of a failure whose cause the registry named
    FAMILIES                                       every family, what it means (tests/data/failures/README.md)

A family is the kind of failure a person names ("the rollout engine ran out of memory while starting", "two
packages at versions that do not fit"): finer than a cause id where the structure tells more (a device out of
memory while the rollout engine starts is `rollout-startup-oom`, during training `device-oom`). Cause ids stay
stable for whoever decides by them (a restart supervisor); the family is said beside the cause.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grpolab.monitor.firsterror import ENGINES, STDLIB, USER, FirstError, short_type

# Every family, and what it means. A cause's own family is its id unless _CAUSE_FAMILY says otherwise.
FAMILIES: dict[str, str] = {
    "hydra-config": "a config key or override was rejected by Hydra / OmegaConf (a misspelled or missing key, a "
    "struct-mode config, an override's syntax), or Hydra found no config on its search path",
    "config-version-mismatch": "the code reads a config key the config does not have: the config file and the "
    "code come from different versions",
    "engine-config": "an engine's own argument check refused a value (vLLM, SGLang, Megatron, verl's config "
    "classes): the argument, its value and the recipe field are named",
    "layout-mismatch": "the parallel layout does not fit the model or the devices",
    "batch-divisible": "a batch does not split evenly over the data-parallel groups or workers",
    "version-mismatch": "two installed packages do not fit together: a function, argument, attribute or symbol one "
    "of them calls is not there in the other's installed version",
    "missing-module": "a Python module is not installed where the job runs",
    "data-error": "a data row the trainer cannot use: a prompt longer than the limit, a missing column, a row that "
    "does not parse",
    "reward-error": "the reward function raised or timed out on a sample (signal-based timeouts in threads too)",
    "reward-missing": "no reward for the data's data_source, or the reward function cannot be loaded",
    "weight-sync": "the weights could not be sent from the trainer to the rollout engine (a layout, a device, a "
    "shard that was not gathered)",
    "checkpoint-mismatch": "a checkpoint could not be loaded: shapes, keys or its format do not fit the model",
    "chat-template": "the tokenizer has no chat template, or applying it failed",
    "rollout-startup-oom": "the rollout engine ran out of device memory while it started (weights, KV cache, "
    "graph capture)",
    "rollout-wakeup-oom": "the rollout engine ran out of device memory when it woke up after a training step "
    "(resume_memory_occupation / wake_up)",
    "device-oom": "the accelerator ran out of memory while training",
    "host-oom": "the host's RAM ran out",
    "disk-full": "a disk filled up",
    "nan-loss": "the loss or the gradients became NaN/inf",
    "device-fault": "the device itself failed",
    "no-device": "no usable accelerator, or Ray could not place the workers",
    "comm-init": "the communicator could not be set up",
    "comm-timeout": "a collective timed out: a rank stalled or died and the others waited",
    "port-in-use": "a port was already bound",
    "startup-timeout": "something did not come up in time",
    "wandb-auth": "Weights & Biases refused the login",
    "killed": "the process was killed from outside",
    "worker-died": "a Ray worker or actor died without a cause of its own in the log",
    "trainer-bug": "the training framework's own code failed (a None where an object was expected, an index out "
    "of range) on a path the user did not configure wrongly",
    "unknown": "an error no family above explains (the first error is said in full)",
    "warning-only": "the log shows warnings and no failure",
    "none": "the log shows no failure",
}
_CAUSE_FAMILY = {"config-key": "hydra-config", "import-error": "version-mismatch"}
# the RL training frameworks: a plain Python error raised in their own code is a bug of theirs (trainer-bug)
TRAINERS = ("verl", "prime_rl", "slime", "openrlhf", "areal", "realhf", "trl", "nemo_rl", "roll", "chatlearn", "skyrl")


@dataclass
class Verdict:
    cause: str
    family: str
    message: str = ""  # what the structure says, for a person (the argument and values, the two libraries)
    fix: str = ""  # what to change (put before the cause's own fix)
    key: str | None = None  # the recipe field to change, where one applies
    rule: str | None = None  # the `grpolab check` rule that finds it before launch; "" none


@dataclass
class Context:
    """What the log shows around the first error, beyond its traceback."""

    stepped: bool = False  # a training step was logged before the error
    engine: bool = False  # the log shows an inference engine (vLLM, SGLang) at work before the error
    wakeup: bool = False  # the error came while the rollout woke up (resume_memory_occupation, wake_up)


# ---------------------------------------------------------------------------------------------- the stack's roles
_REWARD = re.compile(r"reward|compute_score|score_fn|\bgrader\b|math_verify|verif(?:y|ier)|_judge", re.IGNORECASE)
_DATA = re.compile(
    r"__getitem__|_worker_loop|collate|rl_dataset|/dataset|datasets?/|_read_files|load_dataset|tokenize_and_"
    r"postprocess|_build_messages|dataloader",
    re.IGNORECASE,
)
_SYNC = re.compile(
    r"update_weights|sync_weights?|update_parameter|weight_sync|sync_model_weights|_sync_weight|sharding_manager|"
    r"broadcast_weights|load_weights_from|update_weights_from|send_weights|receive_weights|checkpoint_engine|"
    r"weight_update|resume_memory|param_sync",
    re.IGNORECASE,
)
_CKPT = re.compile(r"load_checkpoint|_load_base_checkpoint|dist_checkpointing|load_state_dict|checkpoint", re.I)
_CONFIG_CHECK = re.compile(
    r"(?:^|[/\\])(?:config|configs|arg_utils|server_args|arguments|transformer_config|\w*_config|\w*config)"
    r"(?:\.py$|[/\\])",
    re.IGNORECASE,
)
_CHECK_FUNCTION = re.compile(r"__post_init__|verify|validate|_check|check_|__init__|from_engine_args|create_\w*config")
_STARTUP = re.compile(
    r"determine_num_available_blocks|profile_run|_initialize_kv_caches|initialize_cache|init_device|load_model|"
    r"capture_model|_dummy_run|init_memory_pool|_init_cache_engine|initialize_from_config|_alloc|init_worker|"
    r"_init_executor|determine_available_memory|get_kv_cache_spec|initialize_kv_cache|compile_or_warm_up_model"
)
_WAKEUP = re.compile(r"resume_memory_occupation|wake_up|wakeup|resume\b", re.IGNORECASE)

# ---------------------------------------------------------------------------------------------- messages that name
_PROMPT_TOO_LONG = re.compile(
    r"prompt (?:length|\(length) ?(?:of )?\(?\d+\)? (?:tokens )?is (?:too )?long(?:er)?|sequence_length=\d+ is larger "
    r"than max_length|prompt \(\d+ tokens\) is too long|is longer than the maximum model length|"
    r"exceeds (?:the )?max(?:imum)?_?(?:prompt|model)_?len",
    re.IGNORECASE,
)
_SIGNAL_THREAD = re.compile(r"signal only works in main thread", re.IGNORECASE)
_ACROSS = re.compile(
    r"unexpected keyword argument|takes \d+ positional arguments? but|missing \d+ required (?:positional|keyword)|"
    r"got multiple values for argument|has no attribute|cannot import name|undefined symbol|No module named"
)
_LAYOUT_WORDS = re.compile(
    r"tensor[_ ]parallel|pipeline[_ ]parallel|expert[_ ]parallel|world[_ ]size|\btp\b|\bpp\b|\bep\b|attention heads|"
    r"num_heads|num_layers|hidden layers|experts",
    re.IGNORECASE,
)
_BATCH_WORDS = re.compile(r"batch_size|batch size|mini_batch|micro_batch|chunk", re.IGNORECASE)
_OOM = re.compile(r"out of memory|OutOfMemoryError|CUresult error: 2\b|ACL_ERROR_RT_MEMORY|207001", re.IGNORECASE)


def family_for(cause: str, first: FirstError | None, context: Context | None = None) -> str:
    """The family of a failure the registry named `cause`, refined by its first error and what the log shows."""
    context = context or Context()
    if cause == "device-oom":
        if context.wakeup or (first is not None and _on_stack(first, _WAKEUP)):
            return "rollout-wakeup-oom"
        if not context.stepped and (context.engine or (first is not None and _in_engine(first))):
            return "rollout-startup-oom"
        return "device-oom"
    if cause == "config-key" and first is not None and _reads_config(first):
        return "config-version-mismatch"
    if cause == "import-error" and first is not None and short_type(first.type) == "ModuleNotFoundError":
        return "missing-module"
    return _CAUSE_FAMILY.get(cause, cause)


def family_of(first: FirstError, context: Context | None = None) -> Verdict | None:
    """A cause and family from the first error's structure alone, or None when it says nothing more than its type."""
    context = context or Context()
    kind, message = first.short, first.message
    text = f"{kind}: {message}"
    functions = " ".join(f"{f.function} {f.path}" for f in first.frames)
    if _OOM.search(text):
        family = family_for("device-oom", first, context)
        return Verdict("device-oom", family) if "host" not in text.lower() else None
    if _SIGNAL_THREAD.search(message) or (first.frames and _REWARD.search(_user_frames(first))):
        return _reward(first)
    if _PROMPT_TOO_LONG.search(message) or (first.frames and _DATA.search(functions) and kind != "ImportError"):
        return _data(first)
    if _SYNC.search(functions) or re.search(r"update (?:parameter|weights?)|weight sync", message, re.IGNORECASE):
        return Verdict(
            "weight-sync",
            "weight-sync",
            f"The weights could not be sent from the trainer to the rollout engine: {first.text[:200]}",
            "check that the trainer and the rollout use layouts the weight sync supports (expert/tensor-parallel "
            "shards must be gathered before they are sent, the tensors on the device the engine expects), and the "
            "versions of the trainer and the engine the sync was written for",
        )
    if first.frames and _CKPT.search(functions) and kind not in ("ImportError", "ModuleNotFoundError"):
        return Verdict("checkpoint-mismatch", "checkpoint-mismatch")
    if _reads_config(first):
        return Verdict("config-key", "config-version-mismatch")
    if _ACROSS.search(message) and kind in (
        "AttributeError",
        "ImportError",
        "ModuleNotFoundError",
        "TypeError",
        "OSError",
    ):
        return _version(first)
    if kind in ("ValueError", "AssertionError", "ValidationError", "NotImplementedError", "TypeError") and (
        _config_check(first) or re.search(r"for \w*Config\b|Config\)?\s*$", message)
    ):
        return _engine_config(first)
    if kind in ("AttributeError", "TypeError", "KeyError", "IndexError", "UnboundLocalError", "NameError") and (
        first.library in TRAINERS
    ):
        return Verdict("unknown", "trainer-bug")
    return None


# ---------------------------------------------------------------------------------------------- the families
def _user_frames(first: FirstError) -> str:
    """The functions and files of the frames outside the training stack's engines (where a reward lives)."""
    return " ".join(f"{f.function} {f.path}" for f in first.frames if f.library not in ENGINES or "reward" in f.path)


def _on_stack(first: FirstError, pattern: re.Pattern) -> bool:
    return any(pattern.search(f.function) or pattern.search(f.path) for f in first.frames) or bool(
        pattern.search(first.message)
    )


def _in_engine(first: FirstError) -> bool:
    return any(f.library in ("vllm", "vllm_ascend", "sglang") for f in first.frames) or any(
        _STARTUP.search(f.function) for f in first.frames
    )


def _reads_config(first: FirstError) -> bool:
    """OmegaConf's error raised where code reads a key of a loaded config (not Hydra applying an override)."""
    if first.short not in ("ConfigAttributeError", "ConfigKeyError", "MissingMandatoryValue"):
        return False
    callers = [f for f in first.frames if f.library not in ("omegaconf", "hydra", STDLIB)]
    return bool(callers) and not any(f.library == "hydra" for f in first.frames)


def _config_check(first: FirstError) -> bool:
    frame = first.raising
    if frame is None or frame.library not in ENGINES + ("vllm_ascend", "pydantic", "transformers"):
        return False
    return bool(_CONFIG_CHECK.search(frame.path) or _CHECK_FUNCTION.search(frame.function))


def _reward(first: FirstError) -> Verdict:
    frame = next((f for f in reversed(first.frames) if _REWARD.search(f"{f.function} {f.path}")), first.raising)
    where = f" in {frame.function} ({frame.path}:{frame.line})" if frame else ""
    row = _row(first)
    message = f"The reward function raised{where}: {first.text[:200]}" + (f"; on {row}" if row else "")
    fix = "`grpolab data RECIPE` dry-runs the reward on the data before launch: run it and fix the function"
    if _SIGNAL_THREAD.search(first.message) or "timeout" in first.text.lower():
        fix = (
            "the reward uses a signal-based timeout (signal.alarm, math_verify's default), which works only in a "
            "process's main thread and verl calls rewards in threads: pass parsing_timeout=None / "
            "timeout_seconds=None to math_verify's parse/verify (and bound the time yourself), or score in a "
            "subprocess; " + fix
        )
    return Verdict("reward-error", "reward-error", message, fix, "reward.function", "reward-dry-run")


def _data(first: FirstError) -> Verdict:
    row = _row(first)
    if _PROMPT_TOO_LONG.search(first.message):
        return Verdict(
            "data-error",
            "data-error",
            f"A prompt is longer than the limit: {first.text[:200]}" + (f"; on {row}" if row else ""),
            "set data.filter_overlong_prompts: true (verl drops the prompts longer than data.max_prompt_length), or "
            "raise data.max_prompt_length (and rollout.max_model_len with it); `grpolab data RECIPE` measures the "
            "prompts against the limit before launch",
            "data.max_prompt_length",
            "data-prompt",
        )
    return Verdict(
        "data-error",
        "data-error",
        f"A data row could not be read: {first.text[:200]}" + (f"; on {row}" if row else ""),
        "`grpolab data RECIPE` reads the first rows of each file (columns, prompts, data sources) before launch: run "
        "it to find the row and fix the data (or its preparation, `grpolab data prepare`)",
        None,
        "data-columns",
    )


_ROW = re.compile(r"\b(?:row|index|idx|sample|example)[ #:=]+(\d+)", re.IGNORECASE)


def _row(first: FirstError) -> str:
    for text in [first.message] + first.context:
        if m := _ROW.search(text):
            return f"row {m.group(1)}"
    return ""


def _version(first: FirstError) -> Verdict:
    raising, caller = first.library, first.caller
    named = re.search(r"from '([\w.]+)'|module '([\w.]+)'|No module named '([\w.]+)'", first.message)
    other = next((g.split(".")[0] for g in named.groups() if g), None) if named else None
    if first.short == "ModuleNotFoundError":
        module = other or "a module"
        return Verdict(
            "import-error",
            "missing-module",
            f"The module {module} is not installed where the job runs"
            + (f" (imported by {raising})" if raising else ""),
            f"install {module} on every node (in the image the Ray workers use) and restart Ray",
        )
    libraries = [x for x in dict.fromkeys([raising, other, caller]) if x and x not in (STDLIB, USER)]
    pair = " and ".join(libraries[:2]) if libraries else "two packages"
    message = f"A version mismatch between {pair}: {first.text[:200]}"
    rows = _stack_rows(libraries)
    fix = (
        f"install versions of {pair} that fit together (the version the calling package was written for), and pin "
        "them in the recipe's stack: so `grpolab preflight` compares them with what each node has"
    )
    if rows:
        message += f"; params/stack_rules.yaml names this stack: {', '.join(rows)}"
    return Verdict(
        "import-error", "version-mismatch", message, fix, "stack." + libraries[0] if libraries else None, "stack"
    )


def _stack_rows(libraries: list[str]) -> list[str]:
    """The rows of params/stack_rules.yaml that pin or require one of `libraries` (the table that would catch it)."""
    # lazy: the rules' table (a diagnosis that names no version mismatch never reads it)
    from grpolab.rules.pins import stack_rules

    names = {name.replace("_", "-") for name in libraries} | set(libraries)
    out = []
    for row in stack_rules():
        pinned = set((row.get("when") or {}).get("stack") or {}) | set(row.get("requires") or {})
        if pinned & names:
            out.append(str(row["id"]))
    return out[:3]


def _engine_config(first: FirstError) -> Verdict:
    # lazy: the field map (a diagnosis that names no engine argument never loads it)
    from grpolab.monitor.details import engine_arguments

    frame = first.raising
    engine = frame.library if frame else "the engine"
    if _LAYOUT_WORDS.search(first.message) and not _BATCH_WORDS.search(first.message):
        cause = "layout-mismatch"
    elif _BATCH_WORDS.search(first.message):
        cause = "batch-divisible"
    else:
        cause = "engine-config"
    named = engine_arguments(first.message)
    message = f"{engine}'s configuration check refused a value: {first.text[:240]}"
    fix = ""
    key = None
    if named:
        shown = ", ".join(f"{arg} = {value}" if value else arg for arg, value, _ in named)
        message += f". The argument{'s' if len(named) > 1 else ''}: {shown}"
        fields = [(arg, field) for arg, _, field in named if field]
        if fields:
            key = fields[0][1]
            message += " (" + ", ".join(f"{arg}: the recipe field {field}" for arg, field in fields) + ")"
            fix = "change " + " or ".join(dict.fromkeys(field for _, field in fields)) + " as the message asks"
    return Verdict(cause, cause if cause != "engine-config" else "engine-config", message, fix, key, "")
