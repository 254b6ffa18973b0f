"""The family of a failure from the structure of its first real error (grpolab.monitor.firsterror): the exception
type, the library whose frame raised it and the library that called it, not only words.

    family_of(first) -> Verdict | None

(filled in below)
"""

from __future__ import annotations

from dataclasses import dataclass

from grpolab.monitor.firsterror import FirstError


@dataclass
class Verdict:
    cause: str
    message: str = ""  # what the structure says, for a person (the argument and values, the two libraries)
    fix: str = ""  # what to change (prepended to the cause's own fix)
    key: str | None = None  # the recipe field to change, where one applies
    rule: str | None = None  # the `grpolab check` rule that finds it before launch; "" none


def family_of(first: FirstError) -> Verdict | None:
    return None
