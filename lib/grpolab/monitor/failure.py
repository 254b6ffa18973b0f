"""The answer of a diagnosis (grpolab.monitor.diagnose): why a job failed, for every view that says it (`grpolab
diagnose`, `grpolab monitor`, status, the notebooks, the restart supervisor), one dataclass."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Failure:
    cause: str  # an id of grpolab.monitor.causes (or unknown, or a silent failure's id)
    message: str  # what happened, for a person: the cause, the origin rank and node, the key and values
    fix: str  # what to change
    lines: list[str] = field(default_factory=list)  # the lines that show it, origin first (ANSI colours removed)
    line_numbers: list[int] = field(default_factory=list)  # 1-based, in their file (see `files`)
    rank: int | None = None  # the first rank that failed or stalled, where the log names it
    node: str | None = None  # that rank's node (an ip or a host name)
    pid: int | None = None
    collective: str | None = None  # the collective a timeout waited in (ALLREDUCE, AllReduce, ...)
    group: str | None = None  # its process group / HCCL communicator
    key: str | None = None  # config-key: the rejected key; batch/layout: the recipe key to change
    rule: str | None = None  # the `grpolab check` rule that finds it before launch
    then: list[str] = field(default_factory=list)  # causes that followed from it (consequences), in order
    files: list[str] = field(default_factory=list)  # the file of each evidence line (when more than one was read)
    family: str = (
        ""  # the kind of failure (grpolab.monitor.family_table.FAMILIES): finer than the cause where it can be
    )
    first_error: str = ""  # the first real error: `Type: message` (or the first error line), "" when none shows
    library: str | None = None  # the library whose frame raised it (vllm, verl, torch, user code, ...)
    frame: str | None = None  # that frame: `path:line in function`

    def to_dict(self) -> dict:
        return asdict(self)
