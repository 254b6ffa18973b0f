"""The first real error of a failed log: the exception type and message that started it, the frame that raised it
and the library that frame lives in, its rank and node. The layer under the cause registry (grpolab.monitor.causes):
what a diagnosis says of any failed log, also when no cause's pattern knows the error.

    exception_in(line) -> (type, inner, message, start) | None   a Python exception line, whatever its prefix
    frames_of(lines) -> [Frame]          the traceback frames (`File "...", line N, in f`) in lines above an error
    is_consequence(type, message) -> bool    an error that reports another's failure (a dead actor, a timeout, ...)
    error_level(line) -> bool            a record at error level, or a native crash's line (not a warning)
(how the first error is said, as printed and for a person: grpolab.monitor.firstsaid)
    code_under_frame(line, above) -> bool    a frame's source line: code, whose words report nothing

"The first real error": the last line of the first traceback not a consequence of another failure (a dead Ray
actor, a timeout, vLLM's "Engine core initialization failed. See root cause above"); grpolab.monitor.diagnose picks it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import grpolab.monitor.signs as sg
from grpolab.jobs.job_entry import ANSI
from grpolab.monitor.cause import LABEL
from grpolab.monitor.libraries import STDLIB, library_of

# An exception line: `ValueError: ...`, `torch.OutOfMemoryError: ...`, `ray.exceptions.RayTaskError(ValueError): ...`,
# `omegaconf.errors.MissingMandatoryValue: ...` (any type of a module named errors or exceptions),
# `AssertionError` alone, behind any prefix (Ray's `(pid=..)`, `[rank3]:`, vLLM's `ERROR 06-09 ... [core.py:1]`).
# The look-behind starts a match only at a name's first character, so the scan is linear in the line's length.
_EXCEPTION = re.compile(
    r"(?<![\w.'\"/<-])((?:[A-Za-z_]\w*\.)*(?:errors|exceptions)\.[A-Z]\w*|"  # a type of an errors module
    r"(?:[A-Za-z_]\w*\.)*[A-Z]\w*?(?:Error|Exception|Exit|Interrupt|Fault|Failure|Abort)|"
    r"(?:[A-Za-z_]\w*\.)+[A-Z]\w*?(?:Invalid|NotFound|Timeout|TimedOut|Denied|Refused)|"  # pyarrow.lib.ArrowInvalid
    r"KeyboardInterrupt|StopIteration|Exception)(?:\(([\w.]+)\))?(?:: ?(.*)|:?$|[ \t]{2,}(?=Traceback \(most recent"  # IPython's
    r" call last\)))"  # (`raise Exception(...)`'s too; IPython's header: `OutOfMemoryError     Traceback (most recent call last)`)
)
_NOT_AN_ERROR = re.compile(r"^(?:ERROR|WARNING|INFO)$")
# A frame: `File "/x/site-packages/vllm/config.py", line 123, in _verify_args`, or its tail where a post cut it
# (`/verl/protocol.py", line 491, in chunk`); faulthandler's dump of a crash (`File "x.py", line 123 in save`) has no comma
FRAME = re.compile(
    rf'(?:\bFile "|^[ \t]*(?:{LABEL})?"?(?=[^\s"]{{1,400}}\.py", line \d))([^"\n]+)", line (\d+)(?:,? in ([^\s,]+))?'
)
TRACEBACK = re.compile(r"Traceback \(most recent call last\):")


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    function: str
    library: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}" + (f" in {self.function}" if self.function else "")


def frames_of(lines: list[str]) -> list[Frame]:
    """The frames of the traceback that `lines` (the lines above an error line, oldest first) end with: from its
    `Traceback (most recent call last):` header (or the first frame shown) down; the innermost frame last."""
    out: list[Frame] = []
    for text in reversed(lines):
        if TRACEBACK.search(text):
            break
        if m := FRAME.search(text):
            out.append(Frame(m.group(1), int(m.group(2)), m.group(3) or "", library_of(m.group(1))))
        elif out and exception_in(text) and not text.lstrip().startswith(("raise", "File")):
            break  # the error line of the traceback above (a chained exception): not this traceback's frames
    return list(reversed(out))


def frames_after(chunk, end: int, innermost_first: bool = False) -> list[Frame]:
    """The frames that follow a relayed error's line ending at `end` (Ray prints the remote task's traceback under
    its `RayTaskError(KeyError): ray::task()` line), up to the next error line or traceback; innermost last.
    `innermost_first`: the dump lists the innermost call first (a crash's native backtrace, faulthandler's)."""
    out: list[Frame] = []
    for piece in bytes(chunk[end + 1 : end + 1 + _TRACE_AFTER]).split(b"\n"):
        text = ANSI.sub("", piece.decode("utf-8", "replace"))
        if m := FRAME.search(text):
            out.append(Frame(m.group(1), int(m.group(2)), m.group(3) or "", library_of(m.group(1))))
        elif TRACEBACK.search(text) or (exception_in(text) and not text.lstrip().startswith(("raise", "File"))):
            break
    return out[::-1] if innermost_first else out


_TRACE_AFTER = 32 << 10  # bytes after a relayed error read for its remote frames
# glog's date after its level letter: MMDD (`E1206 18:44:12.7`), or YYYYMMDD from glog 0.7 (`F20251111 12:28:58.5`)
GLOG_DATE = r"(?:\d{8}|\d{3,4})"
# what may stand before glog's level letter: a bracket (`[E1206 ...`), or Monarch's hyperactor's `[-]` before it
GLOG_LEAD = r"^[ \t]*(?:\[-\])?\[?"
_CODE = re.compile(
    r"^(?:[ \t]*\[?[EFWI]" + GLOG_DATE + r" [^\]\n]{0,120}\]|"
    r"[ \t]*(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) [^\]\n]{0,120}\])? {2,}\S"
)


# a record that says a part raised, its traceback's header behind it (SGLang's `[TP3] Scheduler hit an exception:
# Traceback (most recent call last):`): the part's failure, said where a log cut before the exception line stops
HIT = "hit an exception: "  # (its words, read by three patterns below)
_SAYS_RAISED = re.compile(rf"\b{HIT}Traceback \(")
# absl's failure handler (Ray's processes use it): `*** SIGABRT received at time=1734086759 ***`, a crash's banner
ABSL_CRASH = r"\*\*\* SIG[A-Z]{2,6} received at time="


def in_traceback(line: str) -> bool:
    """A traceback's part: its header, a frame, or a frame's source line (indented code behind a logger's header:
    vLLM's `ERROR 04-07 12:12:08 [multiproc_executor.py:597]     self.worker.init_device()`)."""
    if FRAME.search(line) or (TRACEBACK.search(line) and not _SAYS_RAISED.search(line)):
        return True
    body = strip_prefix(line)
    return bool(_CODE.match(body)) and exception_in(body) is None


def is_source(line: str, above: list[bytes]) -> bool:
    """`line` is a traceback frame's source line: the line above it (`above`, raw) is the frame, and `line` is
    indented deeper (an exception line after a frame without source, `File "<frozen runpy>"`, is not)."""
    if not above:
        return False
    frame = ANSI.sub("", above[-1].decode("utf-8", "replace"))
    if FRAME.search(frame) is None:
        return False
    return indent(line) > indent(frame)


_RAISES = re.compile(r"(?:^|\s)(?:raise [A-Za-z_]|assert [\w(])")


def code_under_frame(line: str, above: list[bytes]) -> bool:
    """`line` is the source line printed under a traceback's frame (`above`, raw: the line before it), behind any prefix
    or logger header: code, whose words (`collective_rpc(method, timeout, ...)`) report nothing. Not a `raise` /
    `assert` line: its words are the error it raises (a log cut before the error's line)."""
    if not above or FRAME.search(line) or _RAISES.search(line) or exception_in(strip_prefix(line)) is not None:
        return False
    frame = ANSI.sub("", above[-1].decode("utf-8", "replace"))  # (or pytest's: `vllm/llm.py:664: in collective_rpc`)
    framed = FRAME.search(frame) or re.match(r"\s*\S+\.py:\d+: in [\w<>.]+\s*$", strip_prefix(frame))
    return framed is not None and (in_traceback(line) or indent(line) > indent(frame))


_WHO = re.compile(rf"^(?:{LABEL})?(?:\([^()\n]{{0,300}}\)[ \t]?)*(?:\[rank\d+\]:)?")  # who printed it


def indent(line: str) -> int:
    rest = line[_WHO.match(line).end() :]
    return len(rest) - len(rest.lstrip(" \t"))


def exception_in(line: str) -> tuple[str, str | None, str, int] | None:
    """(type, inner type, message, where the type starts) of a Python exception line, or None. `inner`: the type a
    wrapper names (`RayTaskError(ValueError)`)."""
    if q := _QUOTED.match(line):  # an error quoted as posted (`"ValueError: ..."`): the quote is not its text
        line = " " * q.end() + line[q.end() :]
    for m in _EXCEPTION.finditer(line[:_HEAD]):
        name = m.group(1)
        if _NOT_AN_ERROR.match(name):
            continue
        message = _REPEATED.sub("", (m.group(3) or "")).strip()
        if q and message[-1:] in "\"'`":
            message = message[:-1].rstrip()
        if (
            m.group(3) is None
            and m.start() > 0
            and line[: m.start()].strip(" :]")
            and not line[: m.start()].endswith((": ", "]:", "] ", ") "))
        ):
            continue  # a bare name mid-sentence ("... raised a ValueError") is not an error line
        return name, m.group(2), message, m.start()
    return None


_QUOTED = re.compile(r"^[ \t]*[\"'`]+(?=[A-Za-z_])")
# Ray's count of a line printed by many workers at once: `... [repeated 43x across cluster]`
_REPEATED = re.compile(r"[ \t]*\[repeated \d+x across cluster\][ \t]*(?=\n|$)", re.MULTILINE)
# a line's owner as Ray, vLLM and torchrun prefix it: `(MegatronPolicyWorker pid=1, ip=10.0.0.1) `, `[rank3]: `
_OWNER_PREFIX = re.compile(
    rf"^[ \t]*(?:{LABEL})?(?:\([^()\n]{{0,300}}?\bpid=\d+[^()\n]{{0,300}}\)[ \t]*)*(?:\[rank\d+\]:[ \t]*)?"
)


def plain(said: str) -> str:
    """An error as printed, without who printed it (Ray's, vLLM's and torchrun's prefixes: the rank and node are
    said apart) and without Ray's repeat count: the error's own text."""
    return _REPEATED.sub("", _OWNER_PREFIX.sub("", said, count=1)).strip()


def short_type(name: str) -> str:
    return name.rsplit(".", 1)[-1]


# Errors that report another failure, not their own: Ray's dead actors and lost objects, a collective that timed
# out waiting for a rank that had failed, a process killed or interrupted from outside, vLLM's "see root cause above".
_CONSEQUENCE_TYPES = {
    "ActorDiedError",
    "RayActorError",
    "ActorUnavailableError",
    "OwnerDiedError",
    "NodeDiedError",
    "WorkerCrashedError",
    "ObjectLostError",
    "ObjectFetchTimedOutError",
    "RaySystemError",
    "ChildFailedError",
    "KeyboardInterrupt",
    "SystemExit",
    "CancelledError",
    "EngineDeadError",
    "EngineGenerateError",
    "BrokenPipeError",
    "ConnectionResetError",
    "DistBackendError",
    "HydraException",
    "RayTaskError",
    "RayChannelError",
    "TaskCancelledError",
}
_CONSEQUENCE_MESSAGE = re.compile(
    r"see (?:the )?root cause above|Engine core initialization failed|EngineCore encountered an issue|"
    r"check the stack trace above|died unexpectedly|\bdied during initiali[sz]ation|"
    r"worker (?:process )?(?:has )?died|is dead|"
    r"Watchdog caught collective operation timeout|\bNCCL communicator was aborted|ProcessGroup\w{0,40} is aborted|"
    r"terminate called|^ray::|Failed to run the task|one or more workers? (?:died|failed)|"
    rf"(?:Ray|worker) (?:task|actor) failed|{sg.EXITCODE}-?\d+|(?:non-zero|nonzero) exit|"
    rf"Job '[^'\n]*' failed|Fatal Python error|(?<!{HIT})Traceback \(most recent|"
    r"Error executing job with overrides|"
    r"Received sigquit from a child process|"  # SGLang's launcher: a child's own error is the cause
    r"Caught \w+ in DataLoader worker process",  # torch's relay: the worker's own error follows, `Original Traceback`
    re.IGNORECASE,
)


def is_consequence(type_name: str, message: str) -> bool:
    return relays(type_name) or bool(_CONSEQUENCE_MESSAGE.search(message[:_HEAD]))


_IPYTHON = re.compile(r"\S[ \t]{2,}Traceback \(most recent call last\)")  # `ValueError     Traceback (most recent ...`


def header_answered(hit, errors) -> bool:
    """`hit` (an error line read, with .exception and .line) is IPython's traceback header, its type alone, and a line
    of `errors` says the same type with its message (the traceback's last line): that one is the error. A log cut
    before it keeps the header, the one line that names the type."""
    if not hit.exception or hit.exception[2] or not _IPYTHON.search(hit.line):
        return False
    return any(h.exception and h.exception[0] == hit.exception[0] and h.exception[2] for h in errors if h is not hit)


def relays(type_name: str) -> bool:
    """The exception's type itself reports another's failure (a dead actor, a task's error relayed by Ray), where a
    message may only sound like one (a command the process ran "returned non-zero exit status": its own error)."""
    return short_type(type_name) in _CONSEQUENCE_TYPES


@dataclass
class FirstError:
    """The first real error of a log."""

    type: str  # the exception type as printed (`torch.OutOfMemoryError`), or "" for a non-Python error line
    message: str  # its message
    line: str  # the line as read (prefixes removed where known)
    number: int  # 1-based line number in its file
    file: str
    frames: list[Frame] = field(default_factory=list)  # the traceback's frames, innermost last
    rank: int | None = None
    node: str | None = None
    pid: int | None = None
    inner: str | None = None  # the type a wrapper names (RayTaskError(ValueError))
    context: list[str] = field(default_factory=list)  # the lines its message continues on
    said: str = ""  # the error as printed: its line (prefixes kept) and the lines its message continues on
    code: str = ""  # the source line the innermost frame shows (`x.view(num_devices, self.num_generations)`)

    @property
    def short(self) -> str:
        """The exception's own type name, without its module (`OutOfMemoryError`); a wrapper's inner type."""
        return short_type(self.inner or self.type) if (self.inner or self.type) else ""

    @property
    def text(self) -> str:
        """`Type: message`, as a person reads it."""
        if not self.type:
            return self.message
        return f"{self.type}: {self.message}" if self.message else self.type

    @property
    def raising(self) -> Frame | None:
        """The frame that raised it: the innermost one outside the standard library (a `raise` in functools or
        concurrent.futures re-raises another's error), else the innermost."""
        inner = [f for f in self.frames if f.library != STDLIB]
        return inner[-1] if inner else (self.frames[-1] if self.frames else None)

    @property
    def library(self) -> str | None:
        frame = self.raising
        return frame.library if frame else None

    @property
    def caller(self) -> str | None:
        """The library that called into the raising one (the nearest frame above it in another library)."""
        raising = self.library
        for f in reversed(self.frames):
            if f.library not in (raising, STDLIB):
                return f.library
        return None


# The prefilter's words for this layer (grpolab.monitor.diagnose): every line the patterns below read holds one.
WORDS = (
    "traceback",
    "error",
    "exception",
    "exit",
    "interrupt",
    "segmentation fault",
    "failure",
    "stopiteration",
    "fatal",
    "killed",
    "core dumped",
    "command not found",
    "assert",
    "raise ",
    "unhandled error",
    "succeeded",
    "training completed",
    "final validation metrics",
    "train_runtime",
    # a record that starts with its verdict (`Invalid object: ...`, `Failed to ...`), NCCL's error level
    "invalid",
    "failed",
    "unable",
    "cannot",
    "could not",
    "couldn't",
    "nccl warn",
    "nccl info",  # (NCCL's trace of a failed call's return code)
    # a crash's banner (UCX's `Caught signal 11`), a frame (a log cut inside one), a required state said missing
    "segfault",
    "caught signal",
    "received at time=",  # (absl's failure handler: `*** SIGABRT received at time=1734086759 ***`)
    '", line ',
    "is not set.",
    "are not set.",
    "is not initialized.",
    "is not initialised.",
    "what(): ",
    "max retries exceeded",  # (requests' refusal of a connection, said without its type)
    "critical",  # (CRITICAL, a level: vLLM's `CRITICAL 02-25 11:11:34 launcher.py:101] ...`)
    "panicked at",  # (a Rust thread's panic)
    "[e] ",  # (a bracketed one-letter error level: TensorRT-LLM's `[TRT-LLM] [E] `)
    "cudbg_exception",
    "× ",  # (uv's and pip's error mark)
    "*** [",  # (make's stop: `make: *** [all] Error 2`)
    "the size of tensor a",  # (torch's shape and device errors, posted without their type)
    "expected all tensors",
    "shapes cannot be multiplied",
    "unexpectedly",
    ": not found",  # (dash's `/bin/sh: 1: nvcc: not found`)
)

# Keywords that are patterns (case-sensitive, each of one length: the prefilter finds a line by where one ends): an
# error record's level said by a letter before its time and nothing else (glog's `E1206 18:44:12` and, from glog
# 0.7, `F20251111 12:28:58`; `E2026... node.operation is null` holds no word), CANN's error code (`E30008: AI CPU
# operator execution time out.`)
PATTERN_WORDS = (
    # (no word boundary before the letter: behind a colour code a page's copy lost its escape character from,
    # `[36mE20260118 12:10:31`, `[36mE30008: `, there is none; the error-line patterns below decide, this only admits)
    (r"[EF][01]\d[0-3]\d \d\d:\d\d:\d\d", 14),
    (r"[EF]20\d\d[01]\d[0-3]\d \d\d:\d\d:\d\d", 18),
    (r"E[A-Z0-9]\d{4}: ", 8),
)

# C++'s terminate printing the message of the exception it was thrown (`terminate called after throwing ...`): an
# error of the process's own, though it names no Python type
CPP_WHAT = re.compile(r"^[ \t]*what\(\): ")
# A log record at error level, in the formats of the corpus' logs: vLLM's `ERROR 06-09 17:58:55 [core.py:1]`,
# logging's `... - ERROR - ` / `ERROR:root:` / `| ERROR    |` / `[ERROR]`, glog's `E1206 18:44:12.7` / `[E1206 ...`,
# CANN's `[ERROR] 2025-06-09-06:57:54`, a shell's `error: ` / `Error: ` / `[Error] `, httpx's refusal of a response
# (`Server error '503 Service Unavailable' for url '...'`, whatever logs it), a native crash.
_LEVEL_ERROR = re.compile(
    GLOG_LEAD + r"[EF]" + GLOG_DATE + r" \d\d:\d\d:\d\d|"
    r"^[ \t]*(?:(?:[Ee]rror|ERROR|[Ff]atal|FATAL): |\[(?:[Ee]rror|ERROR)\] )"
    r"|^[Ee]rror executing job with|\b(?:Server|Client) error '\d{3} [^'\n]{1,60}' for url '"
    r"|\bSegmentation fault\b|\bcore dumped\b|\bBus error\b|^[ \t]*Killed\s*$"
    r"|Unhandled error \(suppress with"  # Ray: a task raised and nobody asked for its result
    # a process's crash, whatever prints it: torch's `!!!!!!! Segfault encountered !!!!!!!`, UCX's `[host:pid:0:tid]
    # Caught signal 11 (Segmentation fault: ...)`, CPython's `Fatal Python error: Aborted`
    r"|\bSegfault\b|\bCaught signal \d+\b|^[ \t]*Fatal Python error\b"
    rf"|^[ \t]*{ABSL_CRASH}"
    # a record that names the call that failed (NeMo RL's `Error in VllmInternalWorkerExtension.update_weights_...: `;
    # not a component's note such as torch's harmless `Error in cpuinfo: ...`, which names no call)
    r"|^[ \t]*(?:\[[^\]\n]{1,40}\][ \t]*){0,3}Error in (?:[A-Za-z_]\w{0,80}\.\w[\w.]{0,120}(?:\(\))?|request):"
    # an unlevelled record that says only that a required state is missing (vLLM's `Current vLLM config is not set.`)
    # (an environment variable's note, `HF_TOKEN is not set.`, is a setting's default, not a failure)
    r"|^[ \t]*(?![^\n]*\b[A-Z][A-Z0-9]*_[A-Z0-9_]+ (?:is|are) not)[A-Z][\w.\-]{0,40}(?: [\w.\-]{1,40}){0,5} (?:is|are) not "
    r"(?:set|initiali[sz]ed)\.[ \t]*$"
    # a native library's record tagged by its source file: `[torch_memory_saver.cpp] CUresult error: 1 (...)`
    r"|^[ \t]*\[[\w.\-/]{1,80}\.(?:cpp|cc|cu|cxx|c|h|hpp)(?::\d+)?\][^\n]{0,160}\b(?:error|failed|failure|invalid)\b"
    # CANN's error message, its code first (`EI0005: The arguments ...`); CUDA's driver result (`CUresult error result=2`)
    r"|^[ \t]*E[A-Z0-9]\d{4}: |^[ \t]*CUresult error\b"
    # the kernel's record of a hardware fault (APEI: `{6}[Hardware Error] Hardware error from APEI Generic ...`)
    r"|\[Hardware Error\][ \t]*(?:Hardware error from|error_type: )"
    # the dynamic loader's refusal (`python: error while loading shared libraries: libcudart.so.13: cannot open ...`);
    # an OpenAI-compatible server's refusal as its client says it (`Error code: 400 - {'object': 'error', ...}`)
    r"|\berror while loading shared libraries: |\bError code: [45]\d\d - \{"
    r"|^[ \t]*\*\*\* An error occurred in \w+"  # Open MPI's banner (`*** An error occurred in MPI_Init_thread`)
    # an unlevelled record that starts with its error and what it was doing (LM Studio's `Error rendering prompt with
    # jinja template: ...`; not a tool call the model generated: a sample's), an error said mid-sentence by its verdict
    # (`I often get a Error: Failed to parse chat template: ...`), requests' refusal of a connection said without its
    # type (`Max retries exceeded with url: /get_model_info (Caused by NewConnectionError)`)
    r"|^[ \t]*(?:\[[^\]\n]{1,40}\][ \t]*){0,3}Error (?!(?:decoding|parsing) tool call|executing tool\b)"
    r"[a-z]+ing\b[^\n:]{0,160}: "
    r"|\bError: (?:Failed|Invalid|Unable|Cannot|Could not)\b(?![^\n]{0,300}\bretry)|\bMax retries exceeded with url: "
    # SGLang's scheduler raising, its traceback on the same record (`[2026-05-20 02:29:31 TP3] Scheduler hit an
    # exception: Traceback ...`), and its launcher told that a child died (`Received sigquit from a child process.`)
    rf"|\b\w+ {HIT}|\bReceived sigquit from a child process\b"
    rf"|{sg.KERNEL_ASSERT.pattern}"  # a CUDA kernel's assertion (a device-side assert, said by the kernel)
    rf"|{CPP_WHAT.pattern}"
    # a Rust component's panic (HF tokenizers, sglang-router, Monarch: `thread 'tokio-runtime-worker' panicked at
    # src/lib.rs:12:5:`, its message after it or on the next line)
    r"|^[ \t]*thread '[^'\n]{1,80}'(?: \(\d+\))? panicked at "
    # a build that failed: the compiler's or the linker's error (`collect2: error: ld returned 1 exit status`,
    # `nvcc fatal   : Unsupported gpu architecture`), make's stop (`make[2]: *** [...] Error 1`)
    r"|^[ \t]*(?:collect2|ld|gcc|g\+\+|c\+\+|cc1plus|nvcc|ptxas|clang)(?::| fatal +:) (?:fatal )?(?:error: )?"
    rf"|{sg.MAKE_STOPPED}"
    # uv's and pip's error mark (`  × Failed to download and build ...`, `× Building wheel for x did not run
    # successfully.`); a logger's bracketed one-letter level behind its tags (TensorRT-LLM's `[TRT-LLM] [RANK 1] [E] `);
    # the CUDA core dump's record of a fault (`coredump: Detected an exception of type CUDBG_EXCEPTION_...`)
    r"|^[ \t]*× (?:Failed|No solution|[^\n]{0,120}did not run successfully)"
    r"|^[ \t]*(?:\[[^\]\n]{1,40}\][ \t]*){1,4}\[E\] |\bDetected an exception of type CUDBG_EXCEPTION_"
    # torch's shape and device errors posted without their `RuntimeError: ` (`The size of tensor a (64) must match the
    # size of tensor b (2048)`); cuDNN's API log at its error level (`E! CuDNN (v90100 70) function ... called:`,
    # `e!  Error: CUDNN_STATUS_EXECUTION_FAILED`); Ray naming the exception a task raised that it could not subclass
    r"|^[ \t]*(?:The size of tensor a \(\d+\) must match the size of tensor b|Expected all tensors to be on the same "
    r"device|mat1 and mat2 shapes cannot be multiplied)\b|^[ \t]*[Ee]! +(?:CuDNN \(v\d+|Error: CUDNN_STATUS_)"
    r"|\bUser exception type <class '[\w.]{1,120}'> in RayTaskError can't be subclassed"
    # docker's refusal (`docker: Error response from daemon: could not select device driver ...`); a launcher told
    # that the process it started is gone (SGLang's `Server process terminated unexpectedly.`)
    r"|\bError response from daemon: |^[ \t]*(?:[A-Z]\w{0,30} )?process (?:terminated|exited|died) unexpectedly\b"
    rf"|^[ \t]*{sg.ARGPARSE.pattern}|{sg.COMMAND_MISSING.pattern}"  # argparse's refusal; a shell's `command not found`
    # a record that starts with its verdict, behind a time or a tag at most: `[14:26:31] Invalid object: ...`
    # (a C++ source's tag too, where a post dropped the record's head: `gcs_rpc_client.h:552: Failed to connect`);
    # a part that says it did not start (`Engine core initialization failed.`)
    r"|^[ \t]*(?:\[[^\]\n]{1,40}\][ \t]*){0,3}(?:[\w.\-]{1,60}\.(?:h|hpp|cc|cpp|cxx|c):\d+:[ \t]*)?"
    r"(?!Unable to find image '[^'\n]{1,200}' locally)"  # (docker's note before it pulls an image)
    r"(?:Invalid|Failed|Unable|Cannot|Could not|Couldn't|"
    r"[A-Za-z]\w*(?: \w+){0,3} (?:initiali[sz](?:ation|ed|e)|start-?up) failed)\b"
    r"(?![^\n]{0,300}\b(?:retry|retrying|will retry|fall(?:ing)? ?back|skipp?ing|ignor(?:e|ed|ing))\b)"
)
# NCCL's WARN is its error level (NCCL_DEBUG=WARN prints a message when an NCCL call fails); a retry is not one
_NCCL_WARN = re.compile(r"\bNCCL WARN\b(?![^\n]{0,300}\bretry)", re.IGNORECASE)
# NCCL's trace of a call that failed, its return code after the arrow (`NCCL INFO bootstrap.cc:270 -> 2`): NCCL
# prints it at INFO, only for a code other than success (a channel's `NCCL INFO Channel 00 : 0[0] -> 1[1]` is no trace)
_NCCL_TRACE = re.compile(r"\bNCCL INFO [\w/.\-]{1,80}\.(?:cc|h|cu):\d+ -> [1-9]\d*\b")
# The level a log record names first, within its first characters (after Ray's and torchrun's prefixes)
_LEVEL = re.compile(
    # (a level word, not a setting's value: `NCCL_DEBUG=INFO` in a message names no level)
    r"(?<![=_.\-])\b(ERROR|CRITICAL|FATAL|WARNING|WARN|INFO|DEBUG)\b(?![=_])|"
    + GLOG_LEAD
    + r"([EFWI])"
    + GLOG_DATE
    + r" \d\d:"
    r"|\d\d:\d\d:\d\d[,.]\d+ ([EFWIC]) \d+ \d+\]"  # Ray's C++ log: [2025-06-13 01:49:41,730 E 1 1] (C: a failed check)
    r"|\[(error|critical|warning|warn|info|debug)\] "  # spdlog's: `[2026-01-29 12:08:30.614896] [error] [439962] ...`
)
_RAY_PREFIX = re.compile(rf"^[ \t]*(?:{LABEL})?(?:\([^()\n]{{0,300}}\)[ \t]*)*(?:\[rank\d+\]:[ \t]*)?")
# A process that ended with a non-zero status
_EXIT = re.compile(
    rf"\bexit(?:ed)?(?: with)? (?:code|status)[ :=]*(?:-?[1-9]\d*)\b|\b{sg.EXITCODE}-?[1-9]\d*\b|"
    r"returned non-zero exit status|failed with exit code -?[1-9]|\bexit code -?[1-9]\d*\b",
    re.IGNORECASE,
)
# The marks of a run that finished well (Ray's job status, verl's last line, HF Trainer's)
_SUCCESS = re.compile(
    r"\bJob '?[\w\-]+'? succeeded\b|\bjob \w+ succeeded\b|Final validation metrics:|Training completed\b|"
    r"'train_runtime': ",
    re.IGNORECASE,
)


_HEAD = 600  # characters of a line these patterns read: an error's type, level or exit status comes first


def strip_prefix(line: str) -> str:
    """The line without Ray's `(Actor pid=N, ip=A)`, torchrun's `[rankN]:` and srun --label's `N: ` prefixes."""
    return line[_RAY_PREFIX.match(line[:_HEAD]).end() :]


def level_of(line: str, until: int | None = None) -> str | None:
    """The level a log record names first (ERROR, WARNING, INFO, ...; glog's E/W/I letters as ERROR, WARNING,
    INFO), read in its first 80 characters after the prefixes; None when it names none. `until`: where the record's
    message starts (an exception's type): a level is named before it, a word after it is the message's."""
    head = strip_prefix(line[:until] if until is not None else line)
    if _NCCL_WARN.search(head[:160]) or _NCCL_TRACE.search(head[:200]):
        return "ERROR"
    m = _LEVEL.search(head[:80])
    if m is None:
        return None
    if letter := m.group(2) or m.group(3):
        return {"E": "ERROR", "F": "FATAL", "C": "CRITICAL", "W": "WARNING", "I": "INFO"}[letter]
    named = (m.group(1) or m.group(4)).upper()
    level = {"WARN": "WARNING"}.get(named, named)
    # an error record of what the model generated is the rollout's data, not a failure: a warning of the run
    return "WARNING" if level == "ERROR" and _GENERATED.search(head) else level


# a traceback's source line that raises or asserts: `    raise ValueError(`, `    assert camem_available, "..."`
# (a `raise` of an error type also unindented: a traceback's source line quoted alone)
SOURCE = re.compile(
    rf"[ \t]*(?:{LABEL})?(?:\([^()\n]{{0,300}}\)[ \t]*)*(?:\[rank\d+\]:)?(?:[ \t]+(?:raise [A-Za-z_]|assert [\w(])|[ \t]*raise "
    r"(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b)"
)
_RECORD = re.compile(  # a line that starts a record of its own (a rank's prefix before it too)
    r"\s*(?:\[rank\d+\]:\s*)?(?:\[?\d{4}-\d\d-\d\d|\[?[EFWI]" + GLOG_DATE + r" |(?:ERROR|WARNING|INFO|DEBUG)\b|"
    r"\[repeated|During "
    r"handling|The above exception|Traceback \(|File \")"
)


_ERROR_CODE = re.compile(r"E[A-Z0-9]\d{4}: \[PID")  # CANN: `EZ9999: [PID: 62938] 2025-05-27-06:52:12 ...`
_HYDRA_DETAIL = re.compile(r"To append to your config use \+|Key '[^'\n]+' (?:is )?not in (?:struct|')")


def continues(text: str, empty: bool, wrapped: bool = False) -> bool:
    """Whether `text` (the line after an error line, its prefix removed) continues the error's message: after an
    empty message or a line cut mid-sentence (`wrapped`) any line that starts no record of its own; else an
    indented or lower-case line, or one in parentheses or quotes (a wrapped path, a pydantic field and its error)."""
    if _RECORD.match(text) or exception_in(text):
        return False
    if empty or wrapped or _ERROR_CODE.match(text.lstrip()):  # CANN's detail of its error, under its code
        return True
    if _HYDRA_DETAIL.match(text.lstrip()):  # Hydra's advice and OmegaConf's reason under `Could not override 'a.b'.`
        return True
    head = text[:1]
    body = text.lstrip()[:1]
    return head in " \t" or body.islower() or body in "('\"`" or not body.isascii()


def error_level(line: str) -> bool:
    """A log record at error level (not a warning that mentions an error), or a native crash's line."""
    level = level_of(line)
    if level is not None:
        return level in ("ERROR", "CRITICAL", "FATAL")
    return bool(_LEVEL_ERROR.search(strip_prefix(line)[:_HEAD]))


# a record of the model's own output that did not parse (verl's agent loop: `Failed to decode tool call: Expecting ','
# delimiter`): a sample's reward, which the run goes on past
_GENERATED = re.compile(
    r"Failed to (?:decode|parse) (?:the )?tool call|Error (?:decoding|parsing) tool call|"
    r"Error (?:when )?executing tool\b"
)


def generated(record: str) -> bool:
    """A record of what the model generated (a tool call that did not parse): its exception is a sample's."""
    return bool(record) and bool(_GENERATED.search(record))


# vLLM's client noting its engine gone right after the engine's own `[core.py:1224] Shutdown complete`: the end of a
# run that finished (vLLM prints it when an offline run exits), not a failure
_CLIENT_LEFT = re.compile(r"Engine core proc \w+ died unexpectedly, shutting down client")
_SHUT_DOWN = re.compile(rb"\] Shutdown complete\s*$")


def after_shutdown(line: str, chunk, start: int) -> bool:
    """An engine's client saying its engine died (`line`, at `start` in `chunk`), the line after the engine said it
    shut down as asked. (The lines above are read only for such a line.)"""
    if not _CLIENT_LEFT.search(line[:_HEAD]):
        return False
    return any(_SHUT_DOWN.search(b) for b in lines_before(chunk, start, 1024)[-2:])


# a process's crash (a signal it could not survive): its native backtrace follows its line
CRASH = re.compile(
    rf"\bSegfault\b|\bCaught signal \d+\b|\bSegmentation fault\b|Fatal Python error|{ABSL_CRASH}",
    re.IGNORECASE,
)


def is_exit(line: str) -> bool:
    return bool(_EXIT.search(line[:_HEAD]))


def is_success(line: str) -> bool:
    return bool(_SUCCESS.search(line[:_HEAD]))


# ---------------------------------------------------------------------------------------------- as said
# Ray's, torchrun's and srun's prefixes
OWNER = re.compile(rf"^[ \t]*(?:{LABEL})?(?:\([^()\n]{{0,300}}\)[ \t]*)*(?:\[rank\d+\]:)?")


def lines_before(chunk, start: int, size: int) -> list[bytes]:
    """The whole lines of the `size` bytes before `start` (the first one only if it starts there: a chunk's start
    is a line's)."""
    begin = max(0, start - size)
    pieces = bytes(chunk[begin:start]).split(b"\n")[:-1]
    return pieces if begin == 0 else pieces[1:]
