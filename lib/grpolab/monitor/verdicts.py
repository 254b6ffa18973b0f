"""What a family's verdict says and what to change, built from a first error's structure: a reward that raised or
cannot be called, a data row, the weight sync, two packages' versions, an engine's configuration check. Called by
grpolab.monitor.families.classify, which decides the family; this module words it (the argument and recipe field,
the two libraries and the params/stack_rules.yaml rows that pin them, the row of the data)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import grpolab.monitor.signs as sg
from grpolab.monitor.details import engine_arguments
from grpolab.monitor.firsterror import FirstError
from grpolab.monitor.libraries import STDLIB, USER
from grpolab.rules.pins import stack_rules


@dataclass
class Verdict:
    cause: str
    family: str
    message: str = ""  # what the structure says, for a person (the argument and values, the two libraries)
    fix: str = ""  # what to change (put before the cause's own fix)
    key: str | None = None  # the recipe field to change, where one applies
    rule: str | None = None  # the `grpolab check` rule that finds it before launch; "" none


def reward_called_wrong(first: FirstError) -> re.Match | None:
    """A TypeError of a call to a reward function whose signature does not take what the trainer passed
    (`accuracy_reward() missing 1 required positional argument: 'assistant'`): the call's match, its name group 1."""
    call = sg.SIGNATURE.search(first.message) if first.short == "TypeError" else None
    return call if call and sg.REWARD.search(call[1]) else None


def reward(first: FirstError) -> Verdict:
    frame = next((f for f in reversed(first.frames) if sg.REWARD.search(f"{f.function} {f.path}")), first.raising)
    where = f" in {frame.function} ({frame.path}:{frame.line})" if frame else ""
    if first.short == "NotImplementedError":  # the reward has no scoring for this input (its data_source): missing
        return Verdict("reward-missing", "reward-missing", f"No reward is implemented for this data{where}")
    if frame is not None and frame.function == "<module>":  # the reward's module raised while it was imported
        said = (
            f"The reward module raised while it was loaded{where}, so there is no reward function: {first.text[:200]}"
        )
        fix = (
            "the reward file runs code when it is imported (a request to a judge server, a file read): make what it "
            "needs reachable before launch, or move that work into the reward function; `grpolab data RECIPE` "
            "loads the reward before launch"
        )
        return Verdict("reward-missing", "reward-missing", said, fix, "reward.function", "reward-dry-run")
    if call := reward_called_wrong(first):
        said = f"The reward function {call[1]}() does not take the arguments the trainer passes: {first.message[:200]}"
        return Verdict("reward-missing", "reward-missing", said, "", "reward.function", "reward-dry-run")
    row = row_of(first)
    message = f"The reward function raised{where}: {first.text[:200]}" + (f"; on {row}" if row else "")
    fix = "`grpolab data RECIPE` dry-runs the reward on the data before launch: run it and fix the function"
    if sg.SIGNAL_THREAD.search(first.message) or "timeout" in first.text.lower():
        fix = (
            "the reward uses a signal-based timeout (signal.alarm, math_verify's default), which works only in a "
            "process's main thread, and trainers call rewards in threads: pass parsing_timeout=None / "
            "timeout_seconds=None to math_verify's parse/verify (and bound the time yourself), or score in a "
            "subprocess; " + fix
        )
    return Verdict("reward-error", "reward-error", message, fix, "reward.function", "reward-dry-run")


def data_file_missing(first: FirstError) -> bool:
    """A FileNotFoundError of a data set's own file (a parquet, a DatasetDict's `dataset_dict.json`)."""
    return first.short == "FileNotFoundError" and bool(sg.DATA_FILE.search(first.message))


def data(first: FirstError) -> Verdict:
    row = row_of(first)
    if sg.PROMPT_TOO_LONG.search(first.message):
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
    if data_file_missing(first):
        return Verdict(
            "data-error",
            "data-error",
            f"The data set is not where the run reads it: {first.text[:200]}",
            "point the recipe's data.train_files / data.val_files at the data set, a path every node sees, written "
            "in full; `grpolab data RECIPE` opens each file before launch",
            None,
            "data-columns",
        )
    return Verdict(
        "data-error",
        "data-error",
        f"A data row could not be read: {first.text[:200]}" + (f"; on {row}" if row else ""),
        "`grpolab data RECIPE` reads the first rows of each file (columns, prompts, data sources) before launch: run "
        "it to find the row, and fix the data (or its preparation, `grpolab data prepare`)",
        None,
        "data-columns",
    )


ROW = re.compile(r"\b(?:row|index|idx|sample|example)[ #:=]{1,3}(\d+)", re.IGNORECASE)


def row_of(first: FirstError) -> str:
    for text in [first.message] + first.context:
        if m := ROW.search(text):
            return f"row {m.group(1)}"
    return ""


def sync(first: FirstError) -> Verdict:
    return Verdict(
        "weight-sync",
        "weight-sync",
        f"The weights could not be sent from the trainer to the rollout engine: {first.text[:200]}",
        "check that the trainer and the rollout use layouts the weight sync supports (expert/tensor-parallel shards "
        "gathered before they are sent, tensors on the device the engine expects, a layout the engine does not "
        "transform after its first load), and the versions of trainer and engine the sync was written for",
    )


def version(first: FirstError, family: str) -> Verdict:
    raising, caller = first.library, first.caller
    named = re.search(
        r"from '([\w.]+)'|module '([\w.]+)'|No module named '([\w.]+)'|([\w-]+) is not installed", first.message
    )
    other = next((g.split(".")[0] for g in named.groups() if g), None) if named else None
    libraries = [x for x in dict.fromkeys([raising, other, caller]) if x and x not in (STDLIB, USER)]
    if family == "missing-dependency":
        return Verdict(
            "import-error",
            family,
            f"{other or 'The package'} is not installed where the job runs",
            f"install {other or 'the package'} on every node (in the image the Ray workers use) and restart Ray",
        )
    if family == "build-missing-extension":
        return Verdict(
            "import-error",
            family,
            f"A compiled extension is missing: {first.text[:200]}",
            "reinstall the package so that its extension is built (its build flags, e.g. vllm-ascend's "
            "COMPILE_CUSTOM_KERNELS=1) against the installed torch / CANN / CUDA",
        )
    pair = " and ".join(libraries[:2]) if libraries else "two packages"
    between = f"between {pair}" if len(libraries) != 1 else f"of {pair} with another package"
    message = f"A version mismatch {between}: {first.text[:200]}"
    if rows := stack_rows(libraries):
        message += f"; params/stack_rules.yaml names this stack: {', '.join(rows)}"
    fix = (
        f"install versions of {pair} that fit together (the version the calling code was written for), and pin "
        "them in the recipe's stack: so `grpolab preflight` compares them with what each node has"
    )
    key = f"stack.{libraries[0].replace('_', '-')}" if libraries else None
    return Verdict("import-error", family, message, fix, key, "stack")


def stack_rows(libraries: list[str]) -> list[str]:
    """The rows of params/stack_rules.yaml that pin or require one of `libraries` (the table that would catch it)."""

    names = {name.replace("_", "-") for name in libraries} | set(libraries)
    out = []
    for row in stack_rules():
        pinned = set((row.get("when") or {}).get("stack") or {}) | set(row.get("requires") or {})
        if pinned & names:
            out.append(str(row["id"]))
    return out[:3]


def engine_config(first: FirstError) -> Verdict:
    frame = first.raising
    engine = f"{frame.library}'s" if frame else "A"
    text = f"{first.message} {' '.join(first.context[:3])}"
    if sg.LAYOUT_WORDS.search(text) and not sg.BATCH_WORDS.search(text):
        cause = "layout-mismatch"
    elif sg.BATCH_WORDS.search(text) and sg.RELATION.search(text):  # a batch's relation refused, not its mere name
        cause = "batch-divisible"
    else:
        cause = "engine-config"
    named = engine_arguments(text)
    message = f"{engine} configuration check refused a value: {first.text[:240]}"
    fix, key = "", None
    if named:
        shown = ", ".join(f"{arg} = {value}" if value else arg for arg, value, _ in named)
        message += f". The argument{'s' if len(named) > 1 else ''}: {shown}"
        fields = [(arg, f) for arg, _, f in named if f]
        if fields:
            key = fields[0][1]
            message += " (" + ", ".join(f"{arg}: the recipe field {f}" for arg, f in fields) + ")"
            fix = "change " + " or ".join(dict.fromkeys(f for _, f in fields)) + " as the message asks"
    elif sg.LENGTH_WORDS.search(text):  # the lengths asked of the rollout against the model's context
        key = "data.max_response_length"
        fix = (
            "keep data.max_prompt_length + data.max_response_length within the model's context length "
            "(max_position_embeddings), or take a model with a longer context"
        )
    return Verdict(cause, cause, message, fix, key, "")
