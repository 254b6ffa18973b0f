"""One failure cause of the registry (grpolab.monitor.causes): the type, and its patterns compiled once."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

# srun --label's (and torchrun --tee's) `93: ` before a task's line: a prefix to the registry's patterns and the first
# error's reader (grpolab.monitor.firsterror), and the rank that printed the line to grpolab.monitor.origin
LABEL = r"\d{1,5}: "
# A line prefix that Ray, torchrun and loggers put before the text: "(TaskRunner pid=12, ip=10.0.0.1) ",
# "(vLLMHttpServer pid=6840) (Worker pid=7181) ", "[rank3]: ", srun --label's "3: ". Patterns anchored on a line start
# write "^{P}".
PREFIX = rf"[ \t]*(?:{LABEL})?(?:\([^()\n]*pid=\d+[^()\n]*\)[ \t]*)*(?:\[rank\d+\]:[ \t]*)?(?:(?:ERROR|WARNING|INFO) [\d\-: ]+\[[^\]\n]*\][ \t]*)?"


@dataclass(frozen=True)
class Cause:
    id: str
    meaning: str  # what it means, for a person
    fix: str  # what to do
    patterns: tuple[str, ...]  # regexes, one line each (no \s: it crosses lines); "{P}" is PREFIX. Hyperscan also
    # compiles them (in prefilter mode, grpolab.monitor.diagnose): Python's syntax that Hyperscan reads too
    words: tuple[str, ...]  # lowercase; every line a pattern matches holds one of them (the prefilter)
    sources: tuple[str, ...]  # the public reports: "owner/repo issue N" (their logs: tests/data/failures)
    rule: str = ""  # the `grpolab check` rule that finds it before launch (grpolab.rules.registry), if one does
    unless: tuple[str, ...] = ()  # a line that also matches one of these is not evidence of this cause
    weak: tuple[str, ...] = ()  # a line that also matches one of these is a warning: this cause only if no other
    ignorecase: bool = False

    def compiled(self) -> re.Pattern:
        return self._patterns[0]

    def excluded(self) -> re.Pattern | None:
        return self._patterns[1]

    def weakened(self) -> re.Pattern | None:
        return self._patterns[2]

    @cached_property
    def _patterns(self) -> tuple[re.Pattern, re.Pattern | None, re.Pattern | None]:
        """(patterns, unless, weak), compiled once per cause (a diagnosis asks for them on every matched line)."""
        flags = re.IGNORECASE if self.ignorecase else 0
        pattern = re.compile("|".join(f"(?:{p.replace('{P}', PREFIX)})" for p in self.patterns), flags)
        return pattern, _any(self.unless), _any(self.weak)


def _any(patterns: tuple[str, ...]) -> re.Pattern | None:
    """One caseless pattern matching any of `patterns`; None for none."""
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE) if patterns else None
