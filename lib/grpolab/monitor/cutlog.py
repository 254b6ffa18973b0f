"""What a log cut inside its traceback still tells (a post that quotes the frames and leaves the error line out, an
excerpt that ends mid-traceback): the innermost frame shown, and the call that frame's source line was making when
the error was raised below it (`iteration, _ = load_checkpoint(` under `model.py", line 700, in
initialize_model_and_optimizer`: the failure is the checkpoint's load, whatever its line said).

    in_progress(frames, after) -> list[Frame]     the frames, with the call in progress as the innermost one
"""

from __future__ import annotations

import re

from grpolab.monitor.firsterror import FRAME, Frame, strip_prefix

# the first call a source line makes: `x = load_checkpoint(`, `self.bridge.load_weights(module, path)`, `return fn(`
_CALL = re.compile(
    r"^(?:return |await |yield |[\w\s,.\[\]()*]{1,200}?=[ \t]*)?(?:[A-Za-z_][\w]*\.){0,6}([A-Za-z_]\w*)\s*\("
)
_MARKS = re.compile(r"^[\s^~]*$")  # Python 3.11's `^^^^` under the expression


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
        m = _CALL.match(body)
        if m and m.group(1) != inner.function:
            return [*frames, Frame(inner.path, inner.line, m.group(1), inner.library)]
        break
    return frames
