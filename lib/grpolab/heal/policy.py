"""Whether a failed attempt is restarted: the recipe's trainer.restarts, applied to the diagnosis, by cause id.

    decide(policy, failed, earlier, known) -> Decision

Only a cause that trainer.restarts.on_causes lists restarts the run (the list is explicit: a cause id the policy
does not name, one the diagnosis adds later, `unknown` and no cause at all stop it). A listed cause stops it too
when it recurs at the step where the attempt before failed with it (deterministic: an out-of-memory at one batch, a
bad sample), and when `max` restarts happened within the last `within_s` seconds. A restart waits `backoff_s`,
doubled for each restart before it, and leaves out the origin node when the cause is in `exclude_on`.
"""

from __future__ import annotations

from dataclasses import dataclass

from grpolab.jobs.lineage import RESTART


@dataclass(frozen=True)
class Failed:
    """What a failed attempt showed: the diagnosis's cause id (None: the log shows none), its origin node, the last
    step the run logged, and when it ended."""

    cause: str | None
    node: str | None
    step: int | None
    ended: float


@dataclass(frozen=True)
class Decision:
    restart: bool
    why: str
    number: int = 0  # the restart's number within the window (1 = the first)
    of: int = 0  # the policy's maximum
    wait_s: float = 0.0  # the back-off before it
    exclude: bool = False  # leave out the origin node


def decide(policy, failed: Failed, earlier: list[dict], known: set[str] | frozenset[str] = frozenset()) -> Decision:
    """`policy`: a recipe's trainer.restarts; `earlier`: the lineage's attempts before this one; `known`: the
    cause ids the diagnosis has (only to say so when the policy names one it does not)."""
    cause = failed.cause
    if cause is None:
        return Decision(
            False, "the log shows no cause of the failure: only a cause in trainer.restarts.on_causes restarts"
        )
    if cause not in policy.on_causes:
        what = "is not one of trainer.restarts.on_causes" if not known or cause in known else "is no cause id"
        return Decision(False, f"{cause} {what} (the transient causes a restart can cure)")
    if policy.max == 0:
        return Decision(False, "restarts are off (trainer.restarts.max 0)")
    failures = [a for a in earlier if a.get("decision") == RESTART]
    last = failures[-1] if failures else None
    if last and last.get("cause") == cause and failed.step is not None and last.get("step") == failed.step:
        return Decision(
            False,
            f"{cause} again at step {failed.step}, where attempt {last.get('number')} failed with it too: it is "
            "deterministic, a restart would fail the same way",
        )
    recent = [a for a in failures if (a.get("ended") or 0) >= failed.ended - policy.within_s]
    if len(recent) >= policy.max:
        return Decision(
            False,
            f"{len(recent)} restart(s) within {policy.within_s:g} s already: trainer.restarts.max is {policy.max}",
        )
    number = len(recent) + 1
    wait = policy.backoff_s * 2 ** len(failures)
    exclude = cause in policy.exclude_on and bool(failed.node)
    why = f"{cause} is transient (trainer.restarts.on_causes): restart {number} of {policy.max}"
    return Decision(True, why, number, policy.max, wait, exclude)
