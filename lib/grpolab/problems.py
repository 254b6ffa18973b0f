"""Problems found in a recipe, and the two errors the loader raises.

A Problem is what every check reports: a stable rule id, the dotted key, the bad value, what is wrong and how to fix
it. Checks collect every problem instead of stopping at the first one. The rule ids are declared in
grpolab.rules.registry (a higher layer), which checks them where problems are collected: every problem a check
adds (grpolab.rules.checks) and every problem the gate returns.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    rule: str
    severity: Severity
    key: str
    value: Any
    message: str
    fix: str

    def to_dict(self) -> dict:
        return asdict(self)

    def format(self) -> str:
        """Three lines: severity, rule, key = value; the message; the fix."""
        value = json.dumps(self.value, default=str) if not isinstance(self.value, str) else self.value
        return f"{self.severity.upper():7} [{self.rule}] {self.key} = {value}\n        {self.message}\n        fix: {self.fix}"


def errors(problems: Iterable[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


def ordered(problems: Iterable[Problem]) -> list[Problem]:
    """Errors first, then by rule: the order every front end lists problems in."""
    return sorted(problems, key=lambda p: (p.severity != "error", p.rule))


def counts(problems: Iterable[Problem]) -> str:
    problems = list(problems)
    n_err = len(errors(problems))
    return f"{n_err} error(s), {len(problems) - n_err} warning(s)"


def report(problems: Iterable[Problem]) -> str:
    """The problems as `grpolab check` prints them (and notebooks show as text, in their own words): ordered
    blocks, then the counts."""
    problems = ordered(problems)
    return "\n".join([*(p.format() for p in problems), counts(problems)])


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to a misspelled word, or None when nothing is near."""
    match = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.5)
    return match[0] if match else None


class InputError(Exception):
    """This input cannot be used (no such recipe or run, unreadable or invalid YAML, a malformed override, a bad
    argument): the message says what and how to fix it. The one such exception: its subclasses name the kind
    (grpolab.jobs.runs.RunNotFound, grpolab.recipe.cards.ConfigError, ...), and the CLI maps every one to exit
    status 2, once, in grpolab.cli.main."""


class RecipeError(Exception):
    """The recipe does not fit the schema; carries every schema problem found (exit status 1)."""

    def __init__(self, problems: list[Problem], source: str = "") -> None:
        self.problems = problems
        self.source = source
        lines = [f"recipe {source} has {len(problems)} problem(s):"] + [p.format() for p in problems]
        super().__init__("\n".join(lines))
