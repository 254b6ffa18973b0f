"""How the first real error is said: as its process printed it (the lines its message continues on, the record that
introduced it, the CANN code named above its detail) and, for a person, with the frame and library that raised it.

    as_printed(chunk, start, end, message, line) -> str   an error line as printed, with its message's other lines
    introduced(trace) -> str             the record that introduced an exception (`Error in X:` above its traceback)
    code_named_above(before, line) -> str    the line above a CANN error's detail that named its code first
    frame_code(before) -> str            the source line its innermost frame shows
    sentence(first, full) -> str         the first error said for a person, with its raising frame and library
"""

from __future__ import annotations

import re

from grpolab.jobs.job_entry import ANSI
from grpolab.monitor.firsterror import (
    FRAME,
    OWNER,
    TRACEBACK,
    FirstError,
    continues,
    error_level,
    exception_in,
    generated,
    in_traceback,
    indent,
    is_consequence,
    strip_prefix,
)
from grpolab.monitor.libraries import STDLIB

_AFTER = 4096  # bytes after an error line read for the lines its message continues on
_HEADER = re.compile(r"(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[[\w.\-]+:\d+\] ")


def as_printed(chunk, start: int, end: int, message: str, line: str) -> str:
    """An error line as printed (ANSI colours removed, trailing spaces kept: `ValueError: ` before a message that
    starts on the next line) and the lines its message continues on: after an empty message, or lines that do not
    start a record of their own (a lower-case or indented line, a path in parentheses), up to 4, without the
    Ray / torchrun prefix the error line has."""
    raw = ANSI.sub("", bytes(chunk[start:end]).decode("utf-8", "replace")).rstrip("\r\n")
    owner = OWNER.match(line) if line else None
    prefix = owner.group(0).strip() if owner else ""
    # vLLM writes each line of a record behind the same header (`ERROR 09-26 10:48:07 [runner.py:3029] `)
    head = m.group(0) if line and (m := _HEADER.match(line[owner.end() :].lstrip())) else ""
    out = [raw]
    for piece in bytes(chunk[end + 1 : end + 1 + _AFTER]).split(b"\n")[:6]:
        text = ANSI.sub("", piece.decode("utf-8", "replace")).rstrip("\r")
        if prefix:
            if not text.lstrip().startswith(prefix):
                break
            text = text.lstrip()[len(prefix) :].lstrip(" ")
        if head:
            if not text.lstrip().startswith(head):
                break
            text = text.lstrip()[len(head) :]
        body = text.strip()
        wrapped = not re.search(r"[.!?)\]:;]\s*$", out[-1])  # the line before ends mid-sentence
        if not body or len(out) > 4 or not continues(text, len(out) == 1 and not message.strip(), wrapped):
            break
        out.append(text)
    return "\n".join(out)


def introduced(trace: list[str]) -> str:
    """The record that introduced an exception (said before it, with a newline): the error-level line just above
    its traceback's header, or just above the exception line when no traceback is shown (`[ERROR:swift] Method
    execution failed: collective_rpc` over a bare `NotImplementedError`; `Error in X.update_weights_from_collective:`
    over its `ValueError`). `trace`: the lines above the exception line, oldest first."""
    at = len(trace) - 1
    if at >= 0 and (FRAME.search(trace[at]) or in_traceback(trace[at]) or indent(trace[at]) > 0):
        while at >= 0 and not TRACEBACK.search(trace[at]):  # up through this traceback's frames to its header
            if not (FRAME.search(trace[at]) or in_traceback(trace[at]) or indent(trace[at]) > 0):
                return ""  # not one traceback (another error's lines): nothing introduces it
            at -= 1
        at -= 1
    if at < 0 or TRACEBACK.search(trace[at]):
        return ""
    record = trace[at]
    body = strip_prefix(record).strip()
    if not body or exception_in(body) or in_traceback(record) or is_consequence("", body):
        return ""
    if not error_level(record) and not generated(record):  # (a generated one's error level is not the run's)
        return ""
    return record.rstrip() + "\n"


# CANN's error code (EZ9999, EI0006): its detail follows the line naming it
CANN_CODE = re.compile(r"\bE[A-Z0-9]\d{4}\b")


def code_named_above(before: list[str], line: str) -> str:
    """The line above a CANN error's detail (`EZ9999[PID: 1] ...`) that named its code first (`[rank9]:[W106 ...]
    Warning: EZ9999: Inner Error!`, torch_npu's report of it), said before the detail with a newline; else ""."""
    code = CANN_CODE.search(line)
    if code is None or not before or code.group(0) not in before[-1] or CANN_CODE.search(line[: code.start()]):
        return ""
    return before[-1].rstrip() + "\n" if re.search(r"error", before[-1], re.IGNORECASE) else ""


def frame_code(before: list[str]) -> str:
    """The source line under the innermost frame of the traceback `before` ends with (Python prints it below its
    `File "...", line N, in f`, 3.11's carets `^^^` below it), or "" where none is shown."""
    lines = [strip_prefix(text).strip() for text in before[-4:]]
    lines = [text for text in lines if text and not set(text) <= set("^~ ")]
    if len(lines) < 2 or not lines[-2].startswith('File "') or lines[-1].startswith('File "'):
        return ""
    return lines[-1]


def sentence(first: FirstError, full: bool) -> str:
    text = first.text if full else first.text[:200]
    out = f"The first error: {text}"
    frame = first.raising
    if frame is not None:
        out += f" (raised in {frame.library}: {frame}"
        caller = first.caller
        out += f"; called from {caller})" if caller and caller != STDLIB else ")"
    return out
