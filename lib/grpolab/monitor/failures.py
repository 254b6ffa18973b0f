"""Why a job failed, read from its log text: the cause, what to do, and the lines that prove it.

    classify_failure(log_text) -> Failure | None

The causes are declared once in grpolab.monitor.causes (docs/causes.md); the diagnosis itself (the origin rank
and node, the key and values to change, streaming large logs) is grpolab.monitor.diagnose. This is its entry for
text already in memory (a log tail, a status message). None means the text shows no failure at all.
"""

from __future__ import annotations

from grpolab.monitor.causes import CAUSES
from grpolab.monitor.diagnose import Failure, diagnose_text

__all__ = ["CAUSES", "Failure", "classify_failure"]


def classify_failure(log_text: str) -> Failure | None:
    """The most likely cause of a failure shown in `log_text` (a job log, its tail, or a status message)."""
    return diagnose_text(log_text or "")
