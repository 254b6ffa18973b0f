"""Why a job failed, read from its log text: the cause, what to do, and the lines that prove it.

    classify_failure(log_text) -> Failure | None

Causes (stable ids): `device-oom` (CUDA/NPU out of memory, ACL/HBM allocation errors, vLLM KV cache),
`no-device` (no CUDA/NPU, torch_npu missing, Ray cannot place GPU/NPU actors), `disk-full` (no space left for a
checkpoint or log, quota, Ray's object store), `wandb-auth` (no or wrong W&B API key), `import-error` (missing module,
version conflict, ABI mismatch), `nan-loss` (NaN/inf loss or gradients), `comm-timeout` (HCCL/NCCL timeouts),
`killed` (SIGKILL, the kernel's or Ray's OOM killer, exit 137) and `unknown` (the log has an error, but no known
pattern). None means the text shows no failure at all.

A failed distributed job prints several of these: an out-of-memory rank leaves the others waiting until the
collective times out, and Ray then reports dead workers. The causes are therefore tried in an order that puts
the origin before its consequences (device-oom, no-device, disk-full, wandb-auth, import-error, nan-loss, then
comm-timeout, killed).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import asdict, dataclass, field

from grpolab.jobs.job_entry import ANSI

_MAX_EVIDENCE = 5
_MAX_LINE = 400  # evidence lines are cut here: a log line can hold a whole tensor dump


@dataclass(frozen=True)
class Failure:
    cause: str  # a stable id, see CAUSES
    message: str  # what happened, for a person
    fix: str  # what to try
    lines: list[str] = field(default_factory=list)  # the log lines that show it (ANSI colours removed)
    line_numbers: list[int] = field(default_factory=list)  # 1-based, in the text given

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class _Cause:
    id: str
    message: str
    fix: str
    pattern: re.Pattern


# A line prefix that Ray, torchrun and loggers put before the text: "(TaskRunner pid=12, ip=10.0.0.1) ",
# "[rank3]: ". Patterns that anchor on the start of a line write it as "^{P}". ANSI colours are removed first.
_PREFIX = r"[ \t]*(?:\([^()\n]*pid=\d+[^()\n]*\)[ \t]*)?(?:\[rank\d+\]:[ \t]*)?"


def _any(*patterns: str, flags: int = 0) -> re.Pattern:
    # One alternation searched over the whole text (MULTILINE): one pass in C instead of a loop over lines.
    # Patterns must not cross lines: no \s (it matches newlines), [^x\n] rather than [^x].
    return re.compile("|".join(f"(?:{p.replace('{P}', _PREFIX)})" for p in patterns), flags | re.MULTILINE)


CAUSES: tuple[_Cause, ...] = (
    _Cause(
        "device-oom",
        "the accelerator ran out of memory (device/HBM memory, not host RAM)",
        "lower rollout.gpu_memory_utilization or the batch (micro_batch_size_per_device, "
        "data.max_response_length, rollout max_num_batched_tokens), turn on param/optimizer offload or "
        "recompute, or raise TP/PP so each device holds less; `grpolab check` estimates memory before launch",
        _any(
            r"\b(?:CUDA|NPU|XPU) out of memory",
            r"torch\.(?:cuda\.|npu\.)?OutOfMemoryError",
            r"ACL_ERROR_RT_MEMORY_ALLOCATION|error code is 207001\b",
            r"\bEL0004\b",
            r"\bHBM\b.{0,60}(?:out of memory|insufficient|not enough|alloc(?:ate|ation)? fail)",
            r"No available memory for the cache blocks",
            r"larger than the available KV cache memory",
            r"CUBLAS_STATUS_ALLOC_FAILED",
            r"RuntimeError: .{0,80}\bout of memory\b",
            flags=re.IGNORECASE,
        ),
    ),
    _Cause(
        "no-device",
        "no usable accelerator: the job found no CUDA/NPU device, or Ray could not place the GPU/NPU workers",
        "check the nodes have devices and drivers (`npu-smi info` / `nvidia-smi`), that torch_npu is installed "
        "on Ascend nodes, that Ray was started with the devices (`ray start --resources='{\"NPU\": 16}'` on "
        "Ascend) and that cluster.nnodes x devices_per_node matches `ray status`",
        _any(
            r"No CUDA GPUs are available",
            r"Found no NVIDIA driver on your system",
            r"Torch not compiled with CUDA enabled",
            r"No module named '?torch_npu'?",
            r"\bNPU (?:is )?not available|\bno (?:available )?NPU (?:device|found)",
            r"Total available (?:GPUs|NPUs) [\d.]+ is less than total desired",
            r"resource request cannot be scheduled right now: \{[^}\n]*'(?:GPU|NPU)'",
            r"No available node types can fulfill resource request.*\b(?:GPU|NPU)\b",
            r"resources? (?:request )?cannot be satisfied",
            r"[Ii]nfeasible.*\b(?:GPU|NPU)\b",
            r"npu-smi: (?:command )?not found",
        ),
    ),
    _Cause(
        "disk-full",
        "a disk filled up: a checkpoint, a log or the Ray object store could not be written",
        "free space (old checkpoints under trainer.ckpt_dir, /tmp/ray sessions) or point trainer.ckpt_dir at a "
        "bigger volume; `grpolab preflight RECIPE` checks the checkpoint space before the next launch; resume "
        "from the last complete checkpoint",
        _any(
            r"No space left on device",
            r"\[Errno 28\]",
            r"PytorchStreamWriter failed writing file",
            r"ENOSPC",
            r"Disk quota exceeded|\[Errno 122\]",
            r"local disk(?: usage)? is (?:over|above) .{0,40}(?:capacity|threshold)|Object store is full",
        ),
    ),
    _Cause(
        "wandb-auth",
        "Weights & Biases refused the login: no API key, or a wrong one, reached the job",
        "export WANDB_API_KEY in the environment GRPO Lab is started from (it is passed to the job without being "
        "written to the run record), or `wandb login` on the head node; or log offline (WANDB_MODE=offline, "
        "`wandb sync` later) or drop `wandb` from trainer.logger",
        _any(
            r"wandb\.errors\.(?:errors\.)?AuthenticationError",
            r"api_key not configured",
            r"wandb: ERROR .{0,80}(?:not logged in|API key|api_key|401|Unauthorized)",
            r"401 Client Error: Unauthorized for url: https?://api\.wandb\.ai",
            r"(?:wandb|W&B).{0,80}(?:invalid|incorrect) API key|API key must be 40 characters",
            flags=re.IGNORECASE,
        ),
    ),
    _Cause(
        "import-error",
        "a Python module is missing or the installed versions do not fit together",
        "run `grpolab preflight RECIPE` to compare the installed stack with the recipe's pins, install the "
        "missing package (or the pinned version) on every node, and restart Ray so its workers pick it up",
        _any(
            r"^{P}(?:ModuleNotFoundError|ImportError): ",
            r"RayTaskError\((?:ModuleNotFoundError|ImportError)\)",
            r"VersionConflict",
            r"\brequires [\w.\-\[\]]+ *[<>=!~].*, but you have ",
            r"undefined symbol: ",
            r"\bversions? (?:conflict|mismatch)\b",
        ),
    ),
    _Cause(
        "nan-loss",
        "the loss or the gradients became NaN/inf",
        "lower the lr, check the reward function for NaN/inf, keep gradient clipping on, use bf16 rather than "
        "fp16, and resume from a checkpoint before the first NaN step (`grpolab monitor` shows the step)",
        _any(
            r"found NaN in local grad norm",
            r"grad_norm is not finite",
            r"\bloss (?:is|=|:) ?(?:nan|inf)\b",
            r"returned nan values in its \d+\w* output",
            r"is non-finite, so it cannot be clipped",
            r"Unexpected result nan",
            r"\bactor/(?:pg_loss|kl_loss|grad_norm|entropy):(?:np\.float\d+\()?-?(?:nan|inf)\b",
            flags=re.IGNORECASE,
        ),
    ),
    _Cause(
        "comm-timeout",
        "a collective (HCCL/NCCL) timed out: one rank stopped or was far slower, and the others waited",
        "look for an earlier error on one rank (often out of memory), check the network interfaces "
        "(HCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME / NCCL_SOCKET_IFNAME) and ports, and raise "
        "HCCL_CONNECT_TIMEOUT / HCCL_EXEC_TIMEOUT (or the NCCL timeout) for very large clusters",
        _any(
            r"Watchdog caught collective operation timeout",
            r"\bEI0002\b|The wait execution of the Notify register times out",
            r"\bEI0006\b|Getting socket times out",
            r"hccl \w* ?task timeout",
            r"HCCL watchdog thread terminated",
            r"\b(?:NCCL|HCCL)\b.{0,80}\b(?:timed out|Socket Timeout)\b",
            r"DistBackendError.{0,200}(?:timed out|Timeout)",
        ),
    ),
    _Cause(
        "killed",
        "the process was killed from outside (SIGKILL: the kernel's or Ray's out-of-memory killer, a scheduler, "
        "or a person)",
        "if host memory ran out (Ray's memory monitor or the kernel OOM killer), give the job more host RAM, "
        "lower dataloader workers or offload less to CPU, and cap Ray's object store; otherwise check the "
        "scheduler's time and memory limits",
        _any(
            r"^{P}Killed$",
            r"\bSIGKILL\b|\bsignal 9\b|\bsignal: killed\b",
            r"exit(?:ed)? (?:with )?(?:code|status)[ :=]*137\b|\breturn ?code[ :=]*-9\b",
            r"Out of memory: Kill(?:ed)? process|\boom-kill",
            r"Task was killed due to the node running low on memory|killed due to memory pressure",
            r"NODE_OUT_OF_MEMORY|ray\.exceptions\.OutOfMemoryError",
            r"A worker died or was killed|The actor died unexpectedly",
        ),
    ),
)

# Generic error lines, for the `unknown` cause: the last exception lines of a traceback are the best guess.
_ERROR_LINE = _any(r"^{P}(?:[\w.]+\.)?\w*(?:Error|Exception)(?:\([\w.]+\))?: ")


def _excerpt(line: str, at: int) -> str:
    """The line, or for a very long one the part around position `at` (where the pattern matched)."""
    if len(line) <= _MAX_LINE:
        return line
    start = max(0, min(at - _MAX_LINE // 3, len(line) - _MAX_LINE))
    return ("..." if start else "") + line[start : start + _MAX_LINE] + ("..." if start + _MAX_LINE < len(line) else "")


# Every pattern above (and _ERROR_LINE) needs one of these words (lowercase) in its line. Lines without any
# are dropped before the patterns run: a big log is mostly INFO lines, and Python's regex alternations are
# slow enough that this prefilter makes classifying a 2 MB log several times faster. A new pattern must add
# its word here if none fits (tests/test_monitor_failures.py feeds each pattern a real line).
_KEYWORDS = re.compile(
    "|".join(
        map(
            re.escape,
            (
                "error",
                "exception",
                "memory",
                "cuda",
                "npu",
                "gpu",
                "hbm",
                "ei00",
                "el00",
                "207001",
                "cublas",
                "nvidia",
                "resource",
                "infeasible",
                "conflict",
                "requires",
                "symbol",
                "version",
                "nan",
                "finite",
                "loss",
                "actor/",
                "timeout",
                "timed out",
                "times out",
                "watchdog",
                "hccl",
                "nccl",
                "kill",
                "signal",
                "exit",
                "code",
                "oom",
                "died",
                "space",
                "errno 28",
                "enospc",
                "quota",
                "object store",
                "disk",
                "wandb",
                "api_key",
                "api key",
                "unauthorized",
                "401",
            ),
        )
    )
)


class _Text:
    """The candidate lines of a log (ANSI colours removed), joined, with their original line numbers."""

    def __init__(self, text: str):
        self.numbers: list[int] = []
        kept: list[str] = []
        for number, line in enumerate(ANSI.sub("", text).split("\n"), 1):
            if _KEYWORDS.search(line.lower()):
                self.numbers.append(number)
                kept.append(line.rstrip())
        self.lines = kept
        self.text = "\n".join(kept)
        self.starts, position = [], 0
        for line in kept:
            self.starts.append(position)
            position += len(line) + 1

    def matches(self, pattern: re.Pattern) -> list[tuple[int, str, int]]:
        """(1-based line number, line, position of the LAST match in the line) for each matching line.

        The last match, because a long Ray message names the generic symptom first ("a worker died") and the
        telling detail ("killed by SIGKILL") last."""
        found: dict[int, int] = {}
        for match in pattern.finditer(self.text):
            index = bisect_right(self.starts, match.start()) - 1
            found[index] = match.start() - self.starts[index]
        return [(self.numbers[index], self.lines[index], at) for index, at in found.items()]


def _evidence(matches: list[tuple[int, str, int]]) -> tuple[list[str], list[int]]:
    """At most _MAX_EVIDENCE lines, skipping repeats that differ only in numbers (one per rank)."""
    seen, lines, numbers = set(), [], []
    for number, line, at in matches:
        key = re.sub(r"\d+", "#", line)
        if key in seen:
            continue
        seen.add(key)
        lines.append(_excerpt(line, at))
        numbers.append(number)
        if len(lines) == _MAX_EVIDENCE:
            break
    return lines, numbers


def classify_failure(log_text: str) -> Failure | None:
    """The most likely cause of a failure shown in `log_text` (a job log, its tail, or a status message)."""
    text = _Text(log_text or "")
    for cause in CAUSES:
        matches = text.matches(cause.pattern)
        if matches:
            evidence, numbers = _evidence(matches)
            return Failure(cause.id, cause.message, cause.fix, evidence, numbers)
    errors = text.matches(_ERROR_LINE)
    if not errors:
        return None
    # The last exception lines, not the first: a traceback ends with the error that stopped the job.
    evidence, numbers = _evidence(list(reversed(errors)))
    return Failure(
        "unknown",
        "the job failed with an error that matches no known cause",
        "read the lines below and the log around them (`grpolab logs RUN`); if it is a recurring cause, "
        "add its pattern to grpolab.monitor.failures",
        list(reversed(evidence)),
        list(reversed(numbers)),
    )
