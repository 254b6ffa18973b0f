"""The cause registry: every failure cause `grpolab diagnose` can name, declared once.

Each cause has its stable id, what it means, the fix, the `grpolab check` rules that should have caught it
before launch (where one can), the patterns that find it in a log, the lowercase words one of which every
matching line holds (the streaming prefilter's keywords: grpolab.monitor.diagnose), and the public reports it
was learned from (repository + thread; the logs themselves are cases of tests/data/failures). From this table
come the diagnosis (grpolab.monitor.diagnose), `classify_failure` (grpolab.monitor) and docs/causes.md
(grpolab.monitor.causes_doc, written by scripts/make_docs.py; a test fails when it is stale).

The order is the order of origin: a failed distributed job prints several causes at once (one rank runs out of
memory, the others time out in the collective it never reached, then Ray reports dead workers), so the causes
that start a failure come before those that follow from one (config and code errors, then layouts and batches,
then devices, memory and communicators, then timeouts, kills and dead workers).
"""

from __future__ import annotations

from grpolab.monitor.cause import PREFIX, Cause
from grpolab.monitor.causes_end import CAUSES as _END
from grpolab.monitor.causes_run import CAUSES as _RUN
from grpolab.monitor.causes_setup import CAUSES as _SETUP

__all__ = ["CAUSES", "PREFIX", "Cause", "BY_ID", "NONE", "UNKNOWN", "UNKNOWN_CAUSE", "SILENT"]

CAUSES: tuple[Cause, ...] = _SETUP + _RUN + _END

# The causes a diagnosis may also name that no log pattern finds.
UNKNOWN = "unknown"  # the log shows an error that no cause above explains
NONE = "none"  # the log shows no failure
SILENT = (
    "no-training-step",
    "reward-constant",
    "training-collapse",
    "throughput-collapse",
    "stalled",
)  # a run's metrics and status

BY_ID = {cause.id: cause for cause in CAUSES}
UNKNOWN_CAUSE = Cause(  # what a diagnosis says of an error line that no cause of the registry explains
    UNKNOWN,
    "the job failed with an error that matches no known cause",
    "read the first error and the traceback above it in the log: the library that raised it says which part of the "
    "stack to look at (its settings in the recipe, or its version: `grpolab preflight RECIPE` compares the installed "
    "stack with the recipe's pins)",
    (),
    (),
    (),
)
