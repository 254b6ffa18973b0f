"""Which of a run's checkpoints to keep (trainer.keep_ckpts, keep_best_metric), and the job wrapper's pruning.

verl keeps the newest N itself (the renderer gives it max_actor_ckpt_to_keep); keeping the best by a validation
metric is done here, by the job wrapper after each save (`Keeper`, started by grpolab.jobs.job_entry), as it is for
the local trainer (which has no rotation of its own). A checkpoint is scored by the metric logged at its own step
(verl validates after it saves). A checkpoint is removed only once a newer complete one exists, by renaming it out
of its global_step_N name first: a reader never sees half a checkpoint under that name. Only checkpoints the run
wrote itself are ever removed: the folders already there when its wrapper started (a resumed parent's, another
run's in a shared trainer.ckpt_dir) are kept, and nothing is pruned in a folder another run has claimed
(grpolab.jobs.checkpoints.claim).
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpolab import owned, run_folder
from grpolab.jobs.checkpoints import Checkpoint, latest_complete, layout_of, metric_by_step, owner, run_recipe, scan
from grpolab.local.checkpoint import SAVED, TRACKER
from grpolab.problems import InputError
from grpolab.recipe.dotted import get_dotted
from grpolab.recipe.engines import engine_of

TRASH_PREFIX = ".removing-"


@dataclass(frozen=True)
class Policy:
    keep_last: int | None  # the newest N complete checkpoints; None = all
    best_metric: str | None
    best_mode: str = "max"

    @property
    def active(self) -> bool:
        return self.keep_last is not None or self.best_metric is not None


def policy_of(recipe: Any) -> Policy:
    return Policy(
        get_dotted(recipe, "trainer.keep_ckpts"),
        get_dotted(recipe, "trainer.keep_best_metric"),
        get_dotted(recipe, "trainer.keep_best_mode") or "max",
    )


def wrapper_prunes(recipe: Any) -> bool:
    """True when the job wrapper, not verl, applies the retention: keep-best (verl has none), or the TRL trainer."""

    policy = policy_of(recipe)
    return policy.best_metric is not None or (not engine_of(recipe).verl and policy.active)


def best(checkpoints: list[Checkpoint], policy: Policy, step_scores: dict[int, float]) -> Checkpoint | None:
    """The complete checkpoint whose step scored best (scored at its own step: verl validates after it saves)."""
    scored = [c for c in checkpoints if c.complete and c.step in step_scores]
    if not scored or policy.best_metric is None:
        return None
    pick = max if policy.best_mode == "max" else min
    # ties go to the later checkpoint: it has trained longer for the same score
    return pick(scored, key=lambda c: (step_scores[c.step], c.step if policy.best_mode == "max" else -c.step))


def to_remove(checkpoints: list[Checkpoint], policy: Policy, step_scores: dict[int, float]) -> list[Checkpoint]:
    """The folders the policy lets go: complete ones outside the newest keep_last and the best; incomplete ones
    older than the newest complete one (a dead save, or the data.pt verl's rotation leaves). Never the newest
    complete checkpoint, nothing newer than it (a save in progress), nothing at all when the policy is off."""
    if not policy.active:
        return []
    newest = latest_complete(checkpoints)
    if newest is None:
        return []
    complete = [c for c in checkpoints if c.complete]
    keep = {c.step for c in (complete if policy.keep_last is None else complete[-policy.keep_last :])}
    keep.add(newest.step)
    top = best(checkpoints, policy, step_scores)
    if top is not None:
        keep.add(top.step)
    return [c for c in checkpoints if c.step < newest.step and c.step not in keep]


def remove(checkpoint: Checkpoint) -> bool:
    """Rename the folder out of its global_step_N name first, then delete it; False when it was kept (it holds no
    trainer's save, or a mount point: grpolab.owned)."""
    return not owned.remove_tree(checkpoint.path, proof=SAVED, aside=TRASH_PREFIX)


def prune(run_dir: Path, recipe: Any | None = None, keep: frozenset[str] | None = None) -> list[Checkpoint]:
    """Apply the run's retention policy once; returns what was removed. `keep`: folder names that are not the
    run's own (there before its wrapper started: never removed; the Keeper passes them)."""
    if recipe is None:
        recipe = run_recipe(run_dir)
    policy = policy_of(recipe)
    if not policy.active:
        return []
    layout = layout_of(recipe, run_dir)
    claimed = owner(layout.root).get("run_dir")
    if claimed and Path(claimed) != Path(run_dir):
        return []  # another run saves here now: its checkpoints are not ours to prune
    found = scan(layout, run_dir, sizes=False)
    step_scores = metric_by_step(run_dir, policy.best_metric) if policy.best_metric else {}
    gone = [c for c in to_remove(found, policy, step_scores) if c.path.name not in (keep or ())]
    return [checkpoint for checkpoint in gone if remove(checkpoint)]


def _step_folders(root: Path) -> list[str]:
    try:
        return [p.name for p in Path(root).iterdir() if p.name.startswith("global_step_")]
    except OSError:
        return []


class Keeper:
    """The job wrapper's retention: prunes the run's checkpoints after each save (the tracker changes) and at the end.

    A thread that polls the tracker's mtime every `interval` seconds: saves are minutes apart on a cluster, seconds
    apart for `tiny`, and a poll costs one stat."""

    def __init__(self, run_dir: Path, interval: float = 1.0, log=None) -> None:
        self.run_dir = Path(run_dir)
        self.recipe = run_recipe(self.run_dir)
        self.root = layout_of(self.recipe, self.run_dir).root
        self.foreign = frozenset(_step_folders(self.root))  # not this run's: never pruned
        self.interval = interval
        self.log = log or self._log
        self._stop = threading.Event()
        self._seen: float | None = None
        self._thread = threading.Thread(target=self._loop, name="grpolab-checkpoint-keeper", daemon=True)

    @classmethod
    def for_run(cls, run_dir: Path, **kwargs) -> Keeper | None:
        """A started Keeper when the run's recipe asks the wrapper to prune, else None (also for a run without a
        readable recipe: the wrapper must never fail a job for its own bookkeeping)."""

        try:
            keeper = cls(run_dir, **kwargs)
        except (OSError, ValueError, InputError):
            return None
        if not wrapper_prunes(keeper.recipe):
            return None
        keeper._thread.start()
        return keeper

    def _log(self, line: str) -> None:
        """One line to the job's output and to logs/job.log (appended in one write, beside the wrapper's own)."""
        print(line, flush=True)
        with contextlib.suppress(OSError), open(run_folder.job_log(self.run_dir), "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def poll(self) -> None:
        try:
            mtime = (self.root / TRACKER).stat().st_mtime
        except OSError:
            return
        if mtime == self._seen:
            return
        self._seen = mtime
        self.prune()

    def prune(self) -> None:
        try:
            for gone in prune(self.run_dir, self.recipe, self.foreign):
                self.log(f"grpolab: removed checkpoint {gone.path.name} (trainer.keep_ckpts / keep_best_metric)")
        except OSError as exc:  # a full or read-only disk: keep training, say why nothing was pruned
            self.log(f"grpolab: could not prune checkpoints: {exc}")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def stop(self) -> None:
        """Stop polling and prune once more: the last save's score is in metrics.jsonl by now."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._seen = None
        self.prune()
