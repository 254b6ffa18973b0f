"""A run's lineage: every attempt of the run, how it ended and what was decided, in RUN/lineage.json.

The job's own driver (grpolab.heal.supervise) writes it as the run goes: an attempt when it starts, its end (exit
code, the diagnosis: cause, node, rank, step) and the decision (restart, with the number of the restart and the
policy's maximum, or stop, and why). Every view reads it here: `grpolab runs` and `status` (one line: `restart 2
of 3 after comm-timeout on node 10.0.0.7 at step 1210`), `grpolab monitor` and 04_monitor (one line per attempt),
and the monitor takes the last failed attempt's diagnosis as the run's final word.

    read(run_dir) -> dict                     {} for a run without one (launched before, or not by the driver)
    write(run_dir, lineage)                   atomically (a view never reads half a file)
    headline(lineage) -> str | None           the last restart, or the stop after one, in one line
    attempt_lines(lineage) -> list[str]       one line per attempt
    final_failure(lineage) -> dict | None     the diagnosis the run stopped on (the last attempt's), if any
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from grpolab import run_folder
from grpolab.recipe.files import atomic_write, json_object

RESTART, STOP, SUCCEEDED, STOPPED, RUNNING = "restart", "stop", "succeeded", "stopped", "running"


def read(run_dir: str | Path) -> dict:
    """The run's lineage ({} when it has none or it is unreadable: a view then shows what it showed before)."""
    data = json_object(run_folder.lineage_file(run_dir))
    return data if isinstance(data.get("attempts"), list) else {}


def write(run_dir: str | Path, lineage: dict) -> None:
    atomic_write(run_folder.lineage_file(run_dir), json.dumps(lineage, indent=2, default=str) + "\n")


def _where(attempt: dict) -> str:
    """` on node X at step N` (what the diagnosis named and the metrics showed)."""
    text = ""
    if attempt.get("node"):
        text += f" on node {attempt['node']}"
    if attempt.get("rank") is not None:
        text += f" (rank {attempt['rank']})"
    if attempt.get("step") is not None:
        text += f" at step {attempt['step']}"
    return text


def _cause(attempt: dict) -> str:
    return attempt.get("cause") or f"exit code {attempt.get('exit_code')}"


def headline(lineage: dict) -> str | None:
    """`restart 2 of 3 after comm-timeout on node 10.0.0.7 at step 1210` (the last restart), followed by how the
    run stopped after it when it did; for a run that stopped at its first failure, why it was not restarted. None
    for a run that never failed."""
    attempts = lineage.get("attempts") or []
    restarts = [a for a in attempts if a.get("decision") == RESTART]
    last = attempts[-1] if attempts else {}
    parts = []
    if restarts:
        r = restarts[-1]
        parts.append(f"restart {r.get('restart')} of {r.get('of')} after {_cause(r)}{_where(r)}")
    if last.get("decision") == STOP:
        parts.append(f"stopped after attempt {last.get('number')}: {last.get('why')}")
    return "; ".join(parts) or None


def attempt_lines(lineage: dict) -> list[str]:
    """`attempt 1: worker-died on node 10.0.0.7 at step 37 -> restart 1 of 3 (from the checkpoint of step 30)`, one
    per attempt; a running attempt says since when, an excluded node is named."""
    lines = []
    for a in lineage.get("attempts") or []:
        head = f"attempt {a.get('number')}"
        if a.get("resumed_from"):
            head += f" (from step {a['resumed_from'].get('step')})"
        excluded = a.get("excluded") or []
        if excluded:
            head += " without node " + ", ".join(e.get("node") or e.get("node_id", "?")[:12] for e in excluded)
        decision = a.get("decision")
        if decision == RUNNING:
            since = time.strftime("%H:%M:%S", time.localtime(a["started"])) if a.get("started") else "?"
            lines.append(f"{head}: running since {since}")
        elif decision == SUCCEEDED:
            lines.append(f"{head}: succeeded")
        elif decision == STOPPED:
            lines.append(f"{head}: stopped (grpolab stop)")
        elif decision == RESTART:
            lines.append(f"{head}: {_cause(a)}{_where(a)} -> restart {a.get('restart')} of {a.get('of')}")
        else:
            lines.append(f"{head}: {_cause(a)}{_where(a)} -> stop: {a.get('why')}")
    return lines


def final_failure(lineage: dict) -> dict | None:
    """The diagnosis of the attempt the run stopped on ({cause, message, fix, node, rank, step, ...}), or None when
    the run did not stop on a failure (it runs, succeeded, was stopped) or has no lineage."""
    attempts = lineage.get("attempts") or []
    if not attempts or attempts[-1].get("decision") != STOP:
        return None
    return attempts[-1]
