"""The family of a failure, from the structure of its first real error (grpolab.monitor.firsterror): the exception
type, the library whose frame raised it, the functions on its stack, the phase the log was in (a training step
logged before it, an inference engine at work, the rollout waking up), and only then words.

    classify(first, context) -> Verdict | None       a cause and family from the first error alone
    family_for(cause, first, context) -> str         the family of a failure whose cause the registry named
    FAMILIES (grpolab.monitor.family_table)           every family, what it means and its cause id

A family is the kind of failure a person names ("the rollout engine ran out of memory while it woke up", "two
packages at versions that do not fit"): finer than a cause id where the structure tells more. Cause ids stay stable
for whoever decides by them (a restart supervisor); the family is said beside the cause. The families' names are
those of the corpus (tests/data/failures/README.md lists them with their cause). The signs read (the patterns of a
stack and a message) are grpolab.monitor.signs; what a verdict says and its fix, grpolab.monitor.verdicts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import grpolab.monitor.signs as sg
import grpolab.monitor.verdicts as vd
from grpolab.monitor.cutlog import cut_phase
from grpolab.monitor.details import engine_arguments
from grpolab.monitor.family_table import FAMILIES
from grpolab.monitor.firsterror import CRASH, FirstError
from grpolab.monitor.libraries import ENGINES, STDLIB, TRAINERS
from grpolab.monitor.verdicts import Verdict

# a cause's family when nothing refines it: the family named after it, else:
_CAUSE_FAMILY = {
    "config-key": "hydra-config",
    "config-missing": "hydra-config",
    "import-error": "version-mismatch",
    "checkpoint-mismatch": "checkpoint-load",
    "reward-missing": "reward-missing",
}
# families that tell the registry's words belong to another failure: the failure takes the family's cause ("Torch not
# compiled with CUDA enabled" on an Ascend stack is a library at a version that takes the CUDA path, not a lost device;
# a worker that died of a segfault in torch.save's writer is a checkpoint that could not be written; an engine's config
# class refusing keys it does not have, `Extra inputs are not permitted`, is a config key's)
RECAUSED = ("version-mismatch", "checkpoint-save", "hydra-config")
DS = ("deepspeed",)  # DeepSpeed's hybrid engine is an RL engine of its own (DeepSpeed-Chat's generation)


@dataclass
class Context:
    """What the log shows around the first error, beyond its traceback."""

    stepped: bool = False  # a training step was logged before the error
    engine: bool = False  # the log shows an inference engine (vLLM, SGLang) at work before the error
    npu: bool = False  # the log shows an Ascend NPU stack (torch_npu, CANN, NPU devices)
    sync: bool = False  # the log shows the trainer-to-rollout weight channel set up or used, up to the error
    near: str = ""  # the lines around the error and the errors that followed it (the failure's own story)
    signal: str = ""  # a signal the process got from outside (SIGTERM, SIGKILL), where the log says


def recaused(cause: str, family: str) -> str:
    """The failure's cause once its family is known: the family's where RECAUSED says the registry's words were
    another failure's, unless the registry's cause is already one of that family's (config-missing: hydra-config)."""
    return FAMILIES[family][0] if family in RECAUSED and _CAUSE_FAMILY.get(cause) != family else cause


def family_for(cause: str, first: FirstError | None, context: Context | None = None) -> str:
    """The family of a failure the registry named `cause`, refined by its first error and what the log shows."""
    context = context or Context()
    text = _story(first, context)
    stack = _stack(first)
    if cause == "device-oom":
        return _memory(first, context)
    if _crashed_in(first, context, sg.CKPT_WRITE):  # a dead worker or a kill whose process crashed writing a checkpoint
        return "checkpoint-save"
    if cause == "no-device":
        if sg.INVISIBLE.search(text):
            return "device-visibility"
        if sg.RESOURCES.search(text):
            return "ray-resources"
        if first is not None and _device_query(first):
            return "device-query"
    if cause == "killed":  # stopped by its launcher (SIGTERM) after another process ended, not killed itself
        told = f"{text} {context.signal}"
        # (a node stopped whole, by an autoscaler or a scheduler, is no launcher's stop of a sibling)
        sibling = sg.SIGTERM.search(told) and not sg.SIGKILL.search(told) and not sg.NODE_STOPPED.search(told)
        return "sibling-crash" if sibling else "killed"
    if cause == "no-device" and context.npu and re.search(r"not compiled with CUDA", text):
        return "version-mismatch"  # on an Ascend stack: a library took the CUDA path where it should take the NPU's
    if cause == "startup-timeout" and sg.RAY_CONNECT.search(text):
        return "ray-cluster-connect"
    if cause == "engine-config" and sg.UNKNOWN_ARGS.search(text):  # a config class refusing keys it does not have
        return "hydra-config"
    if cause == "config-key" and first is not None and _reads_config(first):
        return "config-version-mismatch"
    if cause == "config-key" and first is not None and sg.ENGINE_ARGS.search(first.message):
        if sg.FLAG_KEYWORD.search(first.message):  # a flag's spelling given as a keyword: no version takes it
            return "engine-config"
        return "version-mismatch"  # (the registry's config class: an engine's, whose caller fits another version)
    if cause == "checkpoint-mismatch":
        if sg.CONVERSION.search(stack):
            return "checkpoint-conversion"
        if _a_save(first, stack, load=r"load"):
            return "checkpoint-save"
    if cause == "import-error":
        own = f"{first.type}: {first.message} " + " ".join(first.context) if first is not None else ""
        return _dependency(first, own, context.near) or "version-mismatch"
    if cause == "comm-init" and (context.sync or re.search(r"collective_rpc|StatelessProcessGroup|weight", text)):
        # the communicator between trainer and rollout: the weight-sync channel (not vLLM's or SGLang's own NCCL
        # wrapper, pynccl, which every tensor-parallel group of the engine uses too)
        return "weight-sync"
    return _CAUSE_FAMILY.get(cause, cause if cause in FAMILIES else "unknown")


def classify(first: FirstError, context: Context | None = None) -> Verdict | None:
    """A cause and family from the first error's structure, or None when it says nothing beyond its type."""
    context = context or Context()
    kind = first.short
    text = sg.ARGV_ECHO.sub("[...]", _story(first, context))
    message = sg.ARGV_ECHO.sub("[...]", first.message)
    stack = _stack(first)
    if sg.OOM.search(f"{first.type}: {message}") or sg.OOM.search(first.short):  # also relayed (RayTaskError(...))
        family = _memory(first, context)
        return Verdict(FAMILIES[family][0], family)
    if first.frames and sg.LOAD_LIBRARY.search(first.frames[-1].function) and kind in sg.NOT_FOUND_TYPES:
        return vd.version(first, "build-missing-extension")  # a package's loader did not find its compiled library
    if sg.KERNEL_CONFIG.search(text):  # CANN could not read its operators' kernel config: another CANN's, or chip's
        return vd.version(first, "version-mismatch")
    if sg.REWARD_LOAD.search(first.said or message):  # its reward (function, module, worker class) did not load
        return Verdict("reward-missing", "reward-missing")
    if sg.FEATURE_TYPE.search(message):  # a data file written by a newer datasets than the one reading it
        return vd.version(first, "version-mismatch")
    if sg.DATA_FIELD.match(f"{kind}: {message}"):  # a row without the column the code (a reward too) reads: the data's
        return vd.data(first)
    if lacks := sg.MODULE_LACKS.search(first.said or message):  # a module without a name another one imports
        if re.search(r"reward|score", lacks.group(0)):  # a reward module without the function the config names
            return Verdict("reward-missing", "reward-missing")
        return vd.version(first, "version-mismatch")  # (a package's, a reward library's too: its version)
    if sg.SIGNAL_THREAD.search(message) or (first.frames and sg.REWARD.search(_user_frames(first))):
        return vd.reward(first)
    if vd.reward_called_wrong(first):  # the trainer called the reward with arguments its signature does not take
        return vd.reward(first)
    if sg.MEDIA_TOKENS.search(message):
        return vd.data(first)
    if sg.PROMPT_TOO_LONG.search(message) or (first.frames and sg.DATA.search(stack) and kind != "ImportError"):
        return vd.data(first)
    if first.frames and sg.TEMPLATE.search(stack) and kind in ("TypeError", "ValueError", "KeyError"):
        return Verdict("chat-template", "chat-template")  # raised while the chat template was applied to a row
    if sg.UNTOKENIZED.search(message):  # a text column where token ids were due
        return vd.data(first)
    if kind == "NameError" and any(f.function == "<module>" for f in first.frames[-2:]):  # missing at import
        return vd.version(first, "version-mismatch")
    if kind == "NameError" and (m := sg.RENAMED.search(message)) and m.group(1).lower() == m.group(2).lower():
        return vd.version(first, "version-mismatch")  # a name only its case tells from another: a version renamed it
    if kind in ("ValueError", "InvalidVersion") and sg.VERSION_PARSE.search(message):
        return vd.version(first, "version-mismatch")
    if sg.DATALOADER.search(message):  # the data loader's worker raised on a row: the data's
        return vd.data(first)
    if sg.DATASET_SAYS.search(message):  # the data set's own content refused
        return vd.data(first)
    # a converter's own loader (mbridge's load_weights at start-up) is no weight sync; a converter's stack whose error
    # is torch.distributed's backend (NCCL/HCCL) is the communicator's (the registry's comm-init)
    # a command's own parser refused its line (a converter's too: its arguments, not the checkpoint); its unknown
    # arguments are the keys' (below)
    if not first.type and (parsed := sg.ARGPARSE.search(first.line)):
        program = parsed.group(1)
        if sub := sg.NO_SUBCOMMAND.search(first.line):  # a subcommand its installed version does not have
            said = f"{program} has no command '{sub.group(1)}' in the installed version: {parsed.group(0)}"
            fix = f"upgrade the package of {program} to a version with '{sub.group(1)}', or fix its spelling"
            return Verdict("import-error", "version-mismatch", said, fix)
        if not sg.UNKNOWN_ARGS.search(first.line):
            said = f"{program}'s command line was refused: {parsed.group(0)}"
            return Verdict("engine-config", "engine-config", said, f"fix the arguments of {program} in the launch")
    if _converting(first) and not sg.UNPACK.search(message) and not sg.DIST_BACKEND.search(first.type):
        return _conversion(kind, message)
    if sg.SYNC_DEVICE.search(message):  # the weight channel's communicator given a tensor on another device
        return vd.sync(first)
    if _loading_at_start(first):  # the engine's own load of its weights from files, which no sync call reached
        return Verdict("checkpoint-mismatch", "checkpoint-load")
    if kind == "TypeError" and sg.KEYWORD_REFUSED.search(message) and sg.SYNC.search(message):
        return vd.version(first, "version-mismatch")  # the sync's own call refused a keyword: the engine's version
    if sg.SYNC.search(stack) or sg.SYNC.search(message) or (not first.frames and sg.SYNC.search(context.near)):
        return vd.sync(first)
    # a segfault in the middle of a weight update; a weight of no elements loaded (a shard sent without its gather)
    if _crashed_in(first, context, sg.SYNC) or sg.EMPTY_WEIGHT.search(message):
        return vd.sync(first)
    if any(f.library == "wandb" and sg.WANDB_LOGIN.search(f.function) for f in first.frames):
        return Verdict("wandb-auth", "wandb-auth")  # raised in W&B's login: the key, whatever the message says
    if sg.WANDB_HOST.search(message) and not first.short.startswith("HTTP"):  # its servers out of reach
        return Verdict("wandb-auth", "wandb-auth", f"Weights & Biases could not be reached: {first.text[:200]}")
    if first.type.startswith("wandb."):  # W&B's own error (its init timed out, its server refused): the logger's
        return Verdict("wandb-auth", "wandb-auth", f"Weights & Biases failed: {first.text[:200]}")
    if kind == "TypeError" and sg.ARITY.search(message):  # a call's arguments its callee does not take: the same
        return vd.version(first, "api-mismatch")
    if sg.UNPACK.search(message):  # a call returned other values than its caller unpacks: an interface changed
        return vd.version(first, "api-mismatch")
    if re.search(r"initialize_cache|_initialize_kv_caches|determine_num_available_blocks", text):
        return Verdict("device-oom", "kv-cache-too-small")  # the engine failed while it sized its KV cache
    if sg.CONVERSION.search(stack) or sg.CONVERSION.search(message):
        return _conversion(kind, message)
    if sg.SHARDING_CHECK.search(f"{first.line} {message}"):  # the shards of a checkpoint being saved do not add up
        return Verdict("checkpoint-save", "checkpoint-save")
    if sg.NOT_A_MODEL.search(f"{message} {' '.join(first.context[:1])}"):  # no model_type: not a model's folder
        return Verdict(
            "checkpoint-mismatch",
            "checkpoint-load",
            f"The model path holds no model, or is not there (a local path not found is read as a Hub repo id): "
            f"{first.text[:200]}",
            "point the recipe's model path (model.path) at a folder with the model's config.json and weights, the "
            "same path on every node; write it in full (`~` and variables are not expanded there)",
        )
    if kind == "UnicodeDecodeError" and "transformers" in (first.library, first.caller):  # a binary file, not a config
        return Verdict(
            "checkpoint-mismatch",
            "checkpoint-load",
            f"transformers read a file that is not text where the model's config or tokenizer was due (a model path "
            f"that names a weights file, not the model's folder): {first.text[:200]}",
            "point the recipe's model path (model.path) at the model's folder (its config.json, tokenizer and "
            "weights), not at a weights file",
        )
    if sg.UNSUPPORTED_MODEL.search(message):  # a model the installed version does not know: a newer one does
        return vd.version(first, "version-mismatch")
    if vd.data_file_missing(first):  # the data set's file is not there
        return vd.data(first)
    if kind == "FileNotFoundError" and sg.CKPT_FILE.search(message):  # a distributed checkpoint's own file missing
        return Verdict(
            "checkpoint-mismatch",
            "checkpoint-load",
            f"A file of the checkpoint is not there where this rank reads it (written on another node, or not "
            f"finished): {first.text[:200]}",
            "put the checkpoint folder (the recipe's trainer.ckpt_dir) on storage every node mounts at the same "
            "path, or copy the checkpoint's files to every node before resuming",
        )
    if first.frames and sg.LOAD_CKPT.search(stack) or "Checkpoint" in kind or sg.LOAD_CKPT.search(message):
        if kind not in ("ImportError", "ModuleNotFoundError"):
            save = _a_save(first, stack)
            return Verdict(
                "checkpoint-save" if save else "checkpoint-mismatch", "checkpoint-save" if save else "checkpoint-load"
            )
    saving = sg.CKPT_WRITE.search(stack) or sg.SAVE_MODEL.search(stack)
    if first.frames and saving and kind in ("ValueError", "RuntimeError", "TypeError", "OSError"):
        return Verdict("checkpoint-save", "checkpoint-save")  # raised in a save (its format refused what it holds)
    if sg.RESHAPE.search(message) and sg.GROUP_SIZE.search(first.code):  # a view by the group size
        return Verdict("batch-divisible", "batch-divisible")
    if first.frames and sg.DS_BATCH.search(stack):  # DeepSpeed's batch check, its message cut or not
        return Verdict("batch-divisible", "batch-divisible")
    if kind == "KeyError" and sg.PARAM_KEY.match(message) and sg.LOADING_SHARDS.search(text):
        return Verdict("checkpoint-mismatch", "checkpoint-load")  # a weight file's parameter, read at the model's load
    if kind == "KeyError" and sg.PARAM_NAME.search(message) and sg.SERVER_LAUNCH.search(text):
        return Verdict("checkpoint-mismatch", "checkpoint-load")  # a server on its own loads only its weight files
    if kind == "KeyError" and sg.PARAM_NAME.search(message) and _engine_loading(first):  # its checkpoint's names
        return Verdict("checkpoint-mismatch", "checkpoint-load")
    if kind == "KeyError" and sg.PARAM_NAME.search(message):  # a parameter's name the receiving side does not know
        return vd.sync(first)  # (not a checkpoint's: that says so above): the name map between trainer and rollout
    if sg.CAPTURE.search(stack) or sg.CAPTURE.search(text):
        return Verdict("unknown", "cuda-graph-capture")
    # the allocator refused (its out of memory is the memory's, above; a module without the attribute, a version's)
    if sg.SAVER.search(f"{first.said} {stack}") and not (kind == "AttributeError" and sg.ACROSS.search(message)):
        return Verdict("unknown", "memory-saver-offload")
    if _device_query(first):  # (a query that failed because the visible-devices setting hid them: that setting)
        return Verdict("no-device", "device-visibility" if sg.INVISIBLE.search(text) else "device-query")
    if _reads_config(first):
        return Verdict("config-key", "config-version-mismatch")
    if sg.HYDRA_PATH.search(text):
        return Verdict("config-missing", "hydra-config")
    if sg.RAY_CONNECT.search(text):  # (also a record without a type: Ray's C++ `Failed to connect to GCS within 60 s`)
        return Verdict("startup-timeout", "ray-cluster-connect")
    if family := _dependency(first, f"{first.type}: {message} " + " ".join(first.context), context.near):
        return vd.version(first, family)
    if kind in ("ModuleNotFoundError", "ImportError"):  # behind a prefix the registry does not read (`error info: `)
        return vd.version(first, "version-mismatch")
    if sg.BUILD.search(stack):  # raised while a compiled extension was built where the job runs
        return vd.version(first, "build-missing-extension")
    if _crashed_in(first, context, sg.CKPT_WRITE):
        return Verdict("checkpoint-save", "checkpoint-save")
    if not first.type and (phase := cut_phase(first.frames)) is not None:  # a traceback cut in a telling phase
        return Verdict(phase.cause, phase.family, f"The log stops inside {phase.what}, before its error line")
    if not first.type and sg.COMMAND_MISSING.search(first.line):  # a tool the job runs is not installed
        # (a compiler, in a build that then failed: the package it would have built has no native part)
        building = sg.COMPILER.search(first.line) and re.search(sg.BUILD_FAILED, text)
        return vd.version(first, "build-missing-extension" if building else "missing-dependency")
    if kind == "ValueError" and sg.EMPTY_VALUE.search(message):  # a setting left empty, read as a number
        return Verdict("config-key", "hydra-config", f"A setting was left empty: {first.text[:200]}", _TYPED)
    if kind in ("ValueError", "NotImplementedError", "RuntimeError") and sg.UNKNOWN_CHOICE.search(message):
        # a choice it lacks (a value no choice has, whatever the setting names: `executor backend tp` is no layout)
        return replace(vd.engine_config(first), cause="engine-config", family="engine-config")
    if kind in ("RuntimeError", "ValueError", "AssertionError") and sg.PLEASE_SET.search(message):  # asks a setting
        return vd.engine_config(first)
    if any(f.library == "wandb" for f in first.frames) and kind not in ("ImportError", "ModuleNotFoundError"):
        return Verdict("wandb-auth", "wandb-auth", f"Weights & Biases failed: {first.text[:200]}")  # in W&B's code
    if sg.UNKNOWN_ARGS.search(said := f"{first.line} {message} {' '.join(first.context[:4])}"):  # keys not known
        flag = re.search(r"(?<![\w-])--([A-Za-z][\w.\-]*)", said)  # the first it names: the key rejected
        said = f"The launch passed arguments its parser does not know: {first.text}"
        return Verdict("config-key", "hydra-config", said, "", flag.group(1) if flag else None)
    if not first.type and sg.MODULE_LACKS.search(message):  # an AttributeError's words without its type
        return vd.version(first, "version-mismatch")
    if not first.type and sg.KEYWORD_REFUSED.search(message) and not sg.FLAG_KEYWORD.search(message):
        return vd.version(first, "version-mismatch")  # a TypeError's words without its type: the callee's version
    if not first.type:  # an error line without an exception type: nothing more from its structure
        return None
    if kind == "RuntimeError" and sg.ZERO_SPLIT.search(message):  # a batch split into pieces of 0
        return Verdict("batch-divisible", "batch-divisible")
    if kind == "AssertionError" and sg.NO_STEPS.search(message):  # the trainer's own check of one batch: no rows
        return vd.data(first)
    if kind == "ZeroDivisionError" and sg.NO_STEPS.search(context.near):  # 0 steps: fewer rows than one batch
        return vd.data(first)
    if sg.DEVICE_ID_RANGE.search(message):  # asked for a device the library does not see
        return Verdict("no-device", "device-query")
    if kind == "ZeroDivisionError" and sg.BATCH_WORDS.search(context.near):  # a batch size that came out 0: a
        return Verdict("batch-divisible", "batch-divisible")  # batch divided over more workers than it holds
    if sg.CHANGED.search(f"{message} {' '.join(first.context[:2])}"):  # the library says its interface changed
        return vd.version(first, "version-mismatch")
    if kind in ("AttributeError", "TypeError") and "'NoneType'" in message:  # a None where an object was due
        return Verdict("unknown", "trainer-bug")
    if kind == "NotImplementedError" and first.library in ("vllm", "vllm_ascend", "sglang") and first.caller:
        return vd.version(first, "version-mismatch")  # the engine's installed version lacks what another package calls
    if sg.ACROSS.search(message) and kind in ("AttributeError", "ImportError", "TypeError", "OSError", "ValueError"):
        return vd.version(first, "api-mismatch" if sg.UNPACK.search(message) else "version-mismatch")
    if sg.INVISIBLE.search(text):
        return Verdict("no-device", "device-visibility")
    if sg.RESOURCES.search(message):
        return Verdict("no-device", "ray-resources")
    if kind == "TypeError" and sg.STRING_VALUE.search(message) and "'str'" in message and _in_check(first):
        return Verdict("config-key", "hydra-config", f"A config value has the wrong type: {first.text[:200]}", _TYPED)
    if kind in ("RuntimeError", "ValueError", "AssertionError") and sg.DEVICE_MESH.search(stack):
        return Verdict("layout-mismatch", "layout-mismatch")  # a device mesh whose sizes the world does not fill
    if kind in ("ValueError", "AssertionError", "ValidationError", "NotImplementedError", "TypeError"):
        said = f"{message} {' '.join(first.context[:2])}"  # (a message printed over several lines)
        if _config_check(first) or _names_engine_arguments(said) or _relates(message):
            return vd.engine_config(first)
        if sg.SETTING.search(f"{message} {' '.join(first.context[:2])}"):  # a check that refuses a setting
            return vd.engine_config(first)
    if kind == "RuntimeError" and sg.LAYOUT_WORDS.search(told := f"{message} {' '.join(first.context[:3])}"):
        if _relates(told):  # a kernel's own check of the layout (CANN's `numHeads / numKvHeads = 8, MLA only support`)
            return vd.engine_config(first)
    if kind in ("AssertionError", "RuntimeError", "AttributeError", "ValueError") and sg.NOT_SET_UP.search(message):
        return Verdict("unknown", "trainer-bug")  # a part of the stack used before it was set up: the code's order
    if (
        kind
        in ("AttributeError", "TypeError", "KeyError", "IndexError", "UnboundLocalError", "NameError", "AssertionError")
        and first.library in TRAINERS
    ):
        return Verdict("unknown", "trainer-bug")
    if kind == "FileNotFoundError" and first.library in TRAINERS and f"-packages/{first.library}/" in message:
        return Verdict("unknown", "trainer-bug")  # a file the trainer's own package should ship: its packaging's
    if sg.DTENSOR_MIX.search(message):  # (a weight sync's says so above, by its stack)
        return Verdict("unknown", "trainer-bug")
    # a lookup that no setting makes fail, raised in an engine's own code: that code's bug (its RL path, mostly)
    if kind in ("KeyError", "IndexError", "UnboundLocalError", "NameError") and first.library in ENGINES + DS:
        return Verdict("unknown", "trainer-bug")
    if kind == "RuntimeError" and sg.TENSORS_DO_NOT_FIT.search(message):  # nothing above named a setting or a sync
        return Verdict(
            "unknown",
            "trainer-bug",
            f"Tensors the code built do not fit together (shapes, sizes or devices), and no setting, sync or load "
            f"is named: most often a bug of the framework's path for this model or layout: {first.text[:200]}",
        )
    return None


# ---------------------------------------------------------------------------------------------- helpers
def _story(first: FirstError | None, context: Context) -> str:
    """The first error's own text (with the lines it continues on) and what the log shows around it."""
    own = f"{first.type}: {first.message} " + " ".join(first.context[:3]) if first is not None else ""
    return own + " " + context.near


def _stack(first: FirstError | None) -> str:
    return " ".join(f"{f.function} {f.path}" for f in first.frames) if first is not None else ""


_REWARD_MODEL = re.compile(r"\w*reward_?model\w*", re.IGNORECASE)


def _user_frames(first: FirstError) -> str:
    """The functions and files of the frames outside the training stack's engines (where a reward lives)."""
    frames = (f for f in first.frames if f.library not in ENGINES or "reward" in f.path)
    # (a reward model's training script, `train_reward_model.py`, `trainer/rm.py`, is no reward function)
    return _REWARD_MODEL.sub(" ", " ".join(f"{f.function} {f.path}" for f in frames))


def _memory(first: FirstError | None, context: Context) -> str:
    text = _story(first, context) + " " + _stack(first)
    if sg.WAKEUP.search(text):
        return "rollout-wakeup-oom"
    # the KV cache cannot hold one sequence of the model's length (not: no memory left for it at all, a start-up's)
    if sg.KV.search(text) and re.search(
        r"max(?:imum)? (?:seq|model) len|max_model_len|stored in KV cache|initialize_cache|"
        r"is larger than the available KV cache memory|"  # (vLLM's message cut before its model length)
        r"Available KV cache memory: -\d",  # (the weights alone took more than the engine's share)
        text,
        re.IGNORECASE,
    ):
        return "kv-cache-too-small"
    engine = context.engine or (first is not None and _in_engine(first))
    if not context.stepped and (
        engine
        or sg.STARTUP.search(text)  # an engine's start-up phase (`Error executing method 'load_model'`)
        or re.search(
            # (`gpu_memory_utilization: 0.6`, `=0.6`: a config's line or an override, no engine's message)
            r"on startup|Free memory on device|cache blocks|gpu_memory_utilization(?! ?[:=] ?[\d.]+\b)|"
            r"--mem-fraction-static\b|"  # (SGLang's name for the same share of the device's memory)
            r"Engine core initiali[sz]ation|"
            r"engine (?:failed to start|initiali[sz]ation failed)|"
            r"Executor creation failed|"  # (TensorRT-LLM's executor: its model, sampler and KV cache at start)
            # a server's warm-up before it serves (text-generation-inference's `Warmup`), an orchestrator of
            # engines that did not start (vLLM-Omni's `Orchestrator initialization failed: CUDA out of memory`)
            r"\bwarmup\b|\b(?:Orchestrator|Server|Scheduler) initiali[sz]ation failed",
            text,
            re.IGNORECASE,
        )
    ):
        return "rollout-startup-oom"
    return "device-oom"


def _a_save(first: FirstError | None, stack: str, load: str = r"\bload") -> bool:
    """A checkpoint being saved, not loaded: a save's frames (`stack`), or with no stack shown the record's own words
    (Megatron's async writer's error). `load`: the words that say a load after all (the family's reading of a
    registry cause takes `load` anywhere, `_load_checkpoint` too)."""
    words = stack or (first.line if first is not None else "")
    saving = sg.SAVE.search(stack) if stack else sg.SAVING.search(words)
    return bool(saving) and not re.search(load, words, re.IGNORECASE)


def _crashed_in(first: FirstError | None, context: Context, sign: re.Pattern) -> bool:
    """The process crashed (a segfault, a fatal signal) in the middle of what `sign` reads in its native backtrace or
    the records around the crash: a checkpoint being written (torch.save's zip writer, Megatron's distributed
    checkpoint: sg.CKPT_WRITE), weights being sent to the rollout (`POST /update_weights`: sg.SYNC)."""
    if first is None or first.type or not CRASH.search(first.line):
        return False
    return bool(sign.search(f"{_stack(first)} {context.near}"))


def _conversion(kind: str, message: str) -> Verdict:
    """A converter failed: a library's interface it calls (its type says so, not a None it met), else the checkpoint
    it converts."""
    interface = kind in ("AttributeError", "ImportError", "TypeError") and "'NoneType' object" not in message
    return Verdict("import-error" if interface else "checkpoint-mismatch", "checkpoint-conversion")


def _converting(first: FirstError) -> bool:
    """The stack is a checkpoint converter's (Megatron-Bridge, mbridge, a model merger) and nothing outside its
    frames sends weights to a rollout (slime's update_weights converts on its way to SGLang: that is the sync)."""
    frames = [f"{f.function} {f.path}" for f in first.frames]
    converter = [text for text in frames if sg.CONVERSION.search(text)]
    return bool(converter) and not any(sg.SYNC.search(text) for text in frames if text not in converter)


def _in_engine(first: FirstError) -> bool:
    return any(f.library in ("vllm", "vllm_ascend", "sglang") for f in first.frames) or any(
        sg.STARTUP.search(f.function) for f in first.frames
    )


def _reads_config(first: FirstError) -> bool:
    """OmegaConf's error raised where code reads a key of a loaded config (not Hydra applying an override)."""
    if first.short not in ("ConfigAttributeError", "ConfigKeyError", "MissingMandatoryValue"):
        return False
    if not first.frames:  # no stack shown: an attribute read of a struct config (`cfg.key`) unless Hydra's words
        said = f"{first.said} {' '.join(first.context)}"  # or a dotted key (a read names its leaf; an override, a path)
        return first.short == "ConfigAttributeError" and not sg.OVERRIDE.search(said) and not _DOTTED.search(said)
    callers = [f for f in first.frames if f.library not in ("omegaconf", "hydra", STDLIB)]
    return bool(callers) and not any(f.library == "hydra" for f in first.frames)


_DOTTED = re.compile(r"Key '\w+\.[\w.]+' (?:is )?not in struct")
_TYPED = (
    "give the value as a number: a shell variable left unset (an override `key=$GPUS` with GPUS empty) or a "
    "quoted override passes a string"
)


def _in_check(first: FirstError) -> bool:
    """Raised in a check of the config (a _validate_config, a __post_init__, a check_* function)."""
    return any(sg.CHECK_FUNCTION.search(f.function) or sg.CONFIG_CHECK.search(f.path) for f in first.frames)


def _config_check(first: FirstError) -> bool:
    frame = first.raising
    if frame is None or frame.library not in ENGINES + ("pydantic", "transformers"):
        return False
    return bool(sg.CONFIG_CHECK.search(frame.path) or sg.CHECK_FUNCTION.search(frame.function))


def _relates(message: str) -> bool:
    """The message states a relation of batch or layout quantities that does not hold (`train_batch_size is not
    equal to micro_batch_per_gpu * gradient_acc_step * world_size 256 != 2 * 18 * 7`, "model context length should
    be greater than total sequence length")."""
    return bool(sg.RELATION.search(message)) and any(
        w.search(message) for w in (sg.BATCH_WORDS, sg.LAYOUT_WORDS, sg.LENGTH_WORDS)
    )


def _device_query(first: FirstError) -> bool:
    """A device tool or the driver's device query failed: its command or call is the error's (a process that
    could not run it, or that it exited non-zero), not a word in a long message."""
    return bool(sg.DEVICE_TOOL.search(f"{first.message} {_stack(first)}")) and (
        first.short in ("CalledProcessError", "FileNotFoundError", "OSError", "RuntimeError", "PermissionError")
        or not first.type
    )


def _names_engine_arguments(message: str) -> bool:
    """The message names an engine argument of the field map with a value ("max_num_batched_tokens (8192)"), or
    states a relation that does not hold to an argument's value ("LoRA rank 64 is greater than max_lora_rank 16")."""
    named = engine_arguments(message)
    return any(field and value for _, value, field in named) or (
        bool(sg.RELATION.search(message)) and any(value for _, value, _ in named)
    )


def _loading_at_start(first: FirstError) -> bool:
    """The stack is an engine's start-up load of its weights from files (vLLM's and SGLang's model_loader entry
    points, then the per-layer loaders a weight sync goes through too), with no call of a weight sync on it: a
    checkpoint's load. (Building the model there, before its weights, is not one.)"""
    return (
        first.short in ("", "KeyError", "RuntimeError", "ValueError", "AssertionError")
        and _engine_loading(first)
        and any(sg.WEIGHT_LOADERS.search(f.function) for f in first.frames)
    )


def _engine_loading(first: FirstError) -> bool:
    """The stack holds an engine's start-up load (its model_loader's entry point) and no call of a weight sync."""
    frames = [f"{f.function} {f.path}" for f in first.frames]
    return any(sg.ENGINE_LOAD.match(text) for text in frames) and not any(sg.SYNC_CALL.search(text) for text in frames)


def _dependency(first: FirstError | None, text: str, near: str = "") -> str | None:
    """missing-dependency / build-missing-extension (or api-mismatch, an argument a newer version removed) where the
    error says so."""
    if first is None:
        return None
    told = f"{text} {near}"
    if sg.REMOVED_ARGUMENT.search(told):  # the command line an older version took: the interface changed
        return "api-mismatch"
    if sg.ARCH_COMPILE.search(told):  # a compiler older than the device it builds for
        return "version-mismatch"
    if re.search(sg.CANN_IMPORT, told):  # CANN's own Python modules not there (its toolkit's environment not set)
        return "missing-dependency"
    if re.search(sg.NO_BINARY, told):  # CANN's kernels package not installed, or (its config unread) another one's
        return "version-mismatch" if sg.KERNEL_CONFIG.search(told) else "missing-dependency"
    # (an extension that is there and misses a symbol was built against another version: a version mismatch)
    if (
        sg.EXTENSION.search(text)
        and "undefined symbol" not in text
        and (
            first.short
            in ("ImportError", "ModuleNotFoundError", "OSError", "AssertionError", "RuntimeError", "AttributeError")
            or not first.type
        )
    ):
        return "build-missing-extension"
    relayed = first.short == "RuntimeError" and sg.LAZY_IMPORT.search(first.message)  # its cause on the next line
    said = f"{first.message} {near}" if relayed else first.message
    if sg.SUBMODULE.search(said):  # the package is installed and lacks the module: a version mismatch
        return None
    if (first.short in ("ModuleNotFoundError", "ImportError") or relayed) and sg.MISSING.search(said):
        return "missing-dependency"
    return None
