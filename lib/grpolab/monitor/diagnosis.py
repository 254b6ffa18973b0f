"""A run's diagnosis, one function for every view (`grpolab diagnose RUN`, `grpolab monitor`, `status`, 04_monitor):
its whole log (logs/job.log, streamed: grpolab.monitor.diagnose) with the status message, the same answer as the
same log given to `grpolab diagnose` as a file (for a run its driver restarted, the last attempt's part of the log); then, when the log shows no failure, what its status and metrics
show (grpolab.monitor.silent).

    log_failure(run, status) -> Failure | None        the log's cause (None: the log shows none)
    run_failure(run, status, view, thresholds) -> Failure | None
"""

from __future__ import annotations

import contextlib

from grpolab.jobs import lineage
from grpolab.jobs.runs import Run
from grpolab.monitor.diagnose import Failure, Scan, diagnose_files, diagnose_text
from grpolab.monitor.logread import NotALog
from grpolab.monitor.silent import silent_failure
from grpolab.recipe.files import is_regular


def log_failure(run: Run, status: dict) -> Failure | None:
    """The cause its log shows: logs/job.log whole (or the tail launch kept in status.json when there is no log),
    then the status message."""
    message = status.get("message") or ""
    if run.job_log.exists() and is_regular(run.job_log):
        offset = _last_attempt(run)
        try:
            if offset:  # a run its driver restarted: the last attempt's part of the log (the earlier ones were healed)
                scan = Scan()
                with contextlib.suppress(OSError), open(run.job_log, "rb") as handle:
                    handle.seek(offset)
                    scan.feed_file(run.job_log, None, handle)
                scan.feed_text(message, "<status>", counted=False)
                return scan.result()
            return diagnose_files([(run.job_log, None)], extra=message)
        except NotALog:  # a log that is not text (binary, zstd): what the status says
            return diagnose_text(message)
    tail = "\n".join(status.get("log_tail") or [])
    return diagnose_text(tail + "\n" + message)


def _last_attempt(run: Run) -> int:
    """Where the last attempt's part of the log starts (grpolab.jobs.lineage; 0: the whole log)."""
    attempts = lineage.read(run.path).get("attempts") or [{}]
    offset = attempts[-1].get("log_offset")
    return offset if isinstance(offset, int) and not isinstance(offset, bool) and len(attempts) > 1 else 0


def run_failure(run: Run, status: dict, view, thresholds=None) -> Failure | None:
    found = log_failure(run, status)
    if found is not None:
        return found
    view.refresh()
    return silent_failure(status, view, thresholds, run)
