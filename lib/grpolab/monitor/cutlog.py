"""What a log cut inside its traceback still tells (a post that quotes the frames and leaves the error line out, an
excerpt that ends mid-traceback): the innermost frame shown, and the call that frame's source line was making when
the error was raised below it (`iteration, _ = load_checkpoint(` under `model.py", line 700, in
initialize_model_and_optimizer`: the failure is the checkpoint's load, whatever its line said).

    in_progress(frames, after) -> list[Frame]     the frames, with the call in progress as the innermost one
    cut_phase(frames) -> Phase | None              what the innermost frames were doing, where that names a failure
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import grpolab.monitor.signs as sg
from grpolab.monitor.firsterror import FRAME, Frame, strip_prefix

# the first call a source line makes: `x = load_checkpoint(`, `self.bridge.load_weights(module, path)`, `return fn(`
_CALL = re.compile(
    r"^(?:return |await |yield |[\w\s,.\[\]()*\"']{1,200}?=[ \t]*)?(?:[A-Za-z_][\w]*\.){0,6}([A-Za-z_]\w*)\s*(?:\(|$)"
)  # (a name at the line's end: the log cut inside the call, `= compute_prompt_mini_batch_bou`)
_MARKS = re.compile(r"^[\s^~]*$")  # Python 3.11's `^^^^` under the expression
_IMPORT = re.compile(r"^(?:from|import) [A-Za-z_]")  # an import statement (`from megatron.core import x`, or cut)


def in_progress(frames: list[Frame], after: list[str]) -> list[Frame]:
    """`frames` (innermost last) and, where the line under the innermost one (`after`: the lines that follow it) is
    its source line making a call, that call as one more frame of the same file: the function the error was raised
    in, or under."""
    if not frames:
        return frames
    inner = frames[-1]
    for text in after[:2]:
        body = strip_prefix(text).strip()
        if not body or _MARKS.match(body):
            continue
        if FRAME.search(text):
            break
        if _IMPORT.match(body):  # the module it imports raised, or is not there
            return [*frames, Frame(inner.path, inner.line, sg.IMPORT_FRAME, inner.library)]
        m = _CALL.match(body)
        if m and m.group(1) != inner.function:
            return [*frames, Frame(inner.path, inner.line, m.group(1), inner.library)]
        break
    return frames


@dataclass(frozen=True)
class Phase:
    cause: str
    family: str
    what: str  # for a person: what the log stops inside


# what the innermost frames of a cut traceback were doing (a sign, how many innermost frames it reads, as
# "function" or "path:line in function"), and the failure that most often stops a run there; first match wins
PHASES = (
    (sg.BATCH_SPLIT, 2, "frame", Phase("batch-divisible", "batch-divisible", "the split of a batch over the workers")),
    (sg.IMPORTING, 2, "function", Phase("import-error", "version-mismatch", "an import (a module that is not there)")),
    (sg.LOADING, 3, "function", Phase("checkpoint-mismatch", "checkpoint-load", "a load of weights from files")),
    (sg.SAVE, 3, "function", Phase("checkpoint-save", "checkpoint-save", "a save of a checkpoint")),
    (sg.PLACEMENT, 3, "function", Phase("startup-timeout", "startup-timeout", "a wait for Ray's placement groups")),
    (
        sg.STORE,
        3,
        "function",
        Phase("port-in-use", "port-in-use", "the process group's store (its port: most often taken)"),
    ),
    (
        sg.WAKEUP,
        3,
        "function",
        Phase("device-oom", "rollout-wakeup-oom", "the rollout engine's wake-up (its memory: most often too little)"),
    ),
    (sg.GROUP_GETTER, 2, "function", Phase("unknown", "trainer-bug", "a getter of a parallel group not set up yet")),
    (
        sg.PLUGIN_PATCH,
        2,
        "function",
        Phase(
            "import-error", "version-mismatch", "a platform plugin's patch of its engine (most often another version)"
        ),
    ),
    (
        sg.VERSION_CHECK,
        2,
        "function",
        Phase("import-error", "version-mismatch", "a check of the installed packages' versions"),
    ),
)


def cut_phase(frames: list[Frame]) -> Phase | None:
    """The failure a traceback cut before its error line most likely is, from what its innermost frames did."""
    for sign, depth, shown, phase in PHASES:
        inner = frames[-depth:]
        if inner and sign.search(" ".join(str(f) if shown == "frame" else f.function for f in inner)):
            return phase
    return None
