"""Rules `checkpoint-space` (do the checkpoints a recipe keeps fit where they go?) and `checkpoint-keep` (can
keep-best score them?).

Size: grpolab.recipe.checkpoint_size (one checkpoint from the layout, times the most kept at once). Where they go:
trainer.ckpt_dir, else checkpoint/ inside the run directory. `check` compares with the free space of that place
when it is on this machine: a recipe that runs here (cluster.device cpu), or a trainer.ckpt_dir that exists here
or whose parent folder does (a shared file system the launcher mounts; a path whose parents are missing here is
on the cluster's nodes only). A cluster's own disks are checked by preflight on every node
(grpolab.preflight), with the same estimate. On several nodes each holds about 1/nnodes of a checkpoint when
the disks are local, the whole when they are shared: less than the share is an error, less than the whole a
warning.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from grpolab.paths import runs_dir
from grpolab.recipe.checkpoint_size import CheckpointEstimate, estimate, human_bytes
from grpolab.recipe.schema import Recipe
from grpolab.rules.checks import Checks


def target(recipe: Recipe) -> Path | None:
    """Where the checkpoints go, when that place is on this machine; None when only the cluster's nodes know."""
    if recipe.trainer.ckpt_dir:
        path = Path(os.path.expanduser(recipe.trainer.ckpt_dir))
        # it, or the folder it would be made in, is here; a path whose parents are missing is a cluster's own
        return path if path.exists() or path.parent.is_dir() else None
    return runs_dir() if recipe.cluster.device == "cpu" else None


def free_space(path: Path) -> tuple[Path, int] | None:
    """(the nearest existing folder on the way to path, its free bytes), or None when nothing on the way exists."""
    anchor = path
    while not anchor.exists() and anchor != anchor.parent:
        anchor = anchor.parent
    return (anchor, shutil.disk_usage(anchor).free) if anchor.is_dir() else None


def space(c: Checks, est: CheckpointEstimate) -> None:
    """Rule checkpoint-space for one estimate."""
    r, key = c.r, "trainer.keep_ckpts"
    if est.saves == 0:
        return
    if est.kept is None:
        c.add(
            "checkpoint-space",
            key,
            None,
            "every checkpoint stays and the run's number of saves is unknown (the budget is trainer.total_epochs); "
            f"one checkpoint is about {human_bytes(est.one_bytes)} ({est.how})",
            "set trainer.keep_ckpts to the number of checkpoints to keep",
            severity="warning",
        )
        return
    path = target(r)
    found = free_space(path) if path is not None else None
    if found is None:
        return
    anchor, free = found
    total = est.total_bytes or 0
    nodes = r.cluster.nnodes
    share = total / nodes
    where = f"{path}" + (f" (on the disk of {anchor})" if anchor != path else "")
    need = f"{est.kept} checkpoint(s) of about {human_bytes(est.one_bytes)} = {human_bytes(total)}"
    fix = (
        "lower trainer.keep_ckpts (or the number of saves: trainer.save_freq), free space there, or point "
        "trainer.ckpt_dir at a larger disk"
    )
    if free < share:
        part = f" (each of {nodes} nodes holds about {human_bytes(share)})" if nodes > 1 else ""
        c.add(
            "checkpoint-space",
            key,
            r.trainer.keep_ckpts,
            f"the kept checkpoints need {need}{part}, and {where} has {human_bytes(free)} free ({est.how})",
            fix,
        )
    elif free < total:
        c.add(
            "checkpoint-space",
            key,
            r.trainer.keep_ckpts,
            f"the kept checkpoints need {need}, and {where} has {human_bytes(free)} free: enough for this node's "
            f"1/{nodes} share on local disks, not for all of them on shared storage ({est.how})",
            fix,
            severity="warning",
        )


def keep(c: Checks) -> None:
    """Rule checkpoint-keep: keep-best needs a validation at every checkpoint's step; retention needs saves."""
    tr = c.r.trainer
    if (tr.keep_ckpts is not None or tr.keep_best_metric) and tr.save_freq <= 0:
        c.add(
            "checkpoint-keep",
            "trainer.save_freq",
            tr.save_freq,
            f"trainer.save_freq {tr.save_freq} saves no checkpoint, so trainer.keep_ckpts / keep_best_metric keep "
            "nothing",
            "set trainer.save_freq > 0, or drop keep_ckpts / keep_best_metric",
            severity="warning",
        )
        return
    metric = tr.keep_best_metric
    if not metric:
        return
    if not metric.startswith("val-"):
        c.add(
            "checkpoint-keep",
            "trainer.keep_best_metric",
            metric,
            f"{metric!r} is not a validation metric (verl names them val-core/<data source>/<reward>/mean@N, "
            "val-aux/...): a training metric says little about which checkpoint is best",
            "name a val-core/... metric of the run's metrics.jsonl",
            severity="warning",
        )
    if tr.test_freq <= 0:
        c.add(
            "checkpoint-keep",
            "trainer.test_freq",
            tr.test_freq,
            f"trainer.keep_best_metric {metric!r} needs validations, and trainer.test_freq {tr.test_freq} runs none: "
            "no checkpoint would ever be scored",
            "set trainer.test_freq to save_freq or a divisor of it",
        )
    elif tr.save_freq % tr.test_freq:
        c.add(
            "checkpoint-keep",
            "trainer.save_freq",
            tr.save_freq,
            f"checkpoints every {tr.save_freq} steps, validations every {tr.test_freq}: a checkpoint is scored by "
            "the validation of its own step, so the ones between validations are never the best",
            f"make trainer.save_freq a multiple of trainer.test_freq ({tr.test_freq})",
            severity="warning",
        )


def checkpoints(c: Checks) -> None:
    """Both rules (checkpoint-space only with the model's facts: the size is counted from them)."""
    keep(c)
    if c.f is not None:
        space(c, estimate(c.r, c.f))
