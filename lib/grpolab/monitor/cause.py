"""One failure cause of the registry (grpolab.monitor.causes): the type, and its patterns compiled once."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A line prefix that Ray, torchrun and loggers put before the text: "(TaskRunner pid=12, ip=10.0.0.1) ",
# "(vLLMHttpServer pid=6840) (Worker pid=7181) ", "[rank3]: ". Patterns anchored on a line start write "^{P}".
PREFIX = r"[ \t]*(?:\([^()\n]*pid=\d+[^()\n]*\)[ \t]*)*(?:\[rank\d+\]:[ \t]*)?(?:(?:ERROR|WARNING|INFO) [\d\-: ]+\[[^\]\n]*\][ \t]*)?"


@dataclass(frozen=True)
class Cause:
    id: str
    meaning: str  # what it means, for a person
    fix: str  # what to do
    patterns: tuple[str, ...]  # regexes, one line each (no \s: it crosses lines); "{P}" is PREFIX
    words: tuple[str, ...]  # lowercase; every line a pattern matches holds one of them (the prefilter)
    sources: tuple[str, ...]  # the public reports: "owner/repo issue N" (their logs: tests/data/failures)
    rule: str = ""  # the `grpolab check` rule that finds it before launch (grpolab.rules.registry), if one does
    unless: tuple[str, ...] = ()  # a line that also matches one of these is not evidence of this cause
    weak: tuple[str, ...] = ()  # a line that also matches one of these is a warning: this cause only if no other
    ignorecase: bool = False

    def compiled(self) -> re.Pattern:
        return _compiled(self)

    def excluded(self) -> re.Pattern | None:
        return _excluded(self)

    def weakened(self) -> re.Pattern | None:
        if not self.weak:
            return None
        if self.id not in _WEAK:
            _WEAK[self.id] = re.compile("|".join(f"(?:{p})" for p in self.weak), re.IGNORECASE)
        return _WEAK[self.id]


_CACHE: dict[str, tuple[re.Pattern, re.Pattern | None]] = {}
_WEAK: dict[str, re.Pattern] = {}


def _build(cause: Cause) -> tuple[re.Pattern, re.Pattern | None]:
    if cause.id not in _CACHE:
        flags = re.IGNORECASE if cause.ignorecase else 0
        pattern = re.compile("|".join(f"(?:{p.replace('{P}', PREFIX)})" for p in cause.patterns), flags)
        unless = re.compile("|".join(f"(?:{p})" for p in cause.unless), re.IGNORECASE) if cause.unless else None
        _CACHE[cause.id] = (pattern, unless)
    return _CACHE[cause.id]


def _compiled(cause: Cause) -> re.Pattern:
    return _build(cause)[0]


def _excluded(cause: Cause) -> re.Pattern | None:
    return _build(cause)[1]
