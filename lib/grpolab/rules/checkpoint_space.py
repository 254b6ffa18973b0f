"""Rules `checkpoint-space` (do the checkpoints a recipe keeps fit where they go?) and `checkpoint-keep` (can
keep-best score them?).

Size: grpolab.recipe.checkpoint_size (one checkpoint from the layout, times the most kept at once). Where they go:
trainer.ckpt_dir, else checkpoint/ inside the run directory. `check` compares with the free space of that place
when it is on this machine: a recipe that runs here (cluster.device cpu), or a trainer.ckpt_dir that exists here
(a shared file system the launcher mounts). A cluster's own disks are checked by preflight on every node
(grpolab.preflight), with the same estimate. On several nodes each holds about 1/nnodes of a checkpoint when
the disks are local, the whole when they are shared: less than the share is an error, less than the whole a
warning.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from grpolab.paths import runs_dir
from grpolab.problems import Problem
from grpolab.recipe.checkpoint_size import CheckpointEstimate, estimate, human_bytes
from grpolab.recipe.schema import Recipe


def target(recipe: Recipe) -> Path | None:
    """Where the checkpoints go, when that place is on this machine; None when only the cluster's nodes know."""
    if recipe.trainer.ckpt_dir:
        return Path(os.path.expanduser(recipe.trainer.ckpt_dir))
    if recipe.cluster.device == "cpu":
        return runs_dir()
    return None


def free_space(path: Path) -> tuple[Path, int] | None:
    """(the nearest existing folder on the way to path, its free bytes), or None when nothing on the way exists."""
    anchor = path
    while not anchor.exists() and anchor != anchor.parent:
        anchor = anchor.parent
    if not anchor.is_dir():
        return None
    return anchor, shutil.disk_usage(anchor).free


def space_problems(recipe: Recipe, est: CheckpointEstimate) -> list[Problem]:
    key = "trainer.keep_ckpts"
    if est.saves == 0:
        return []
    if est.kept is None:
        return [
            Problem(
                "checkpoint-space",
                "warning",
                key,
                None,
                f"{recipe.origin(key)}: every checkpoint stays and the run's number of saves is unknown (the budget is "
                f"trainer.total_epochs); one checkpoint is about {human_bytes(est.one_bytes)} ({est.how})",
                "set trainer.keep_ckpts to the number of checkpoints to keep",
            )
        ]
    path = target(recipe)
    found = free_space(path) if path is not None else None
    if found is None:
        return []
    anchor, free = found
    total = est.total_bytes or 0
    nodes = recipe.cluster.nnodes
    share = total / nodes
    where = f"{path}" + (f" (on the disk of {anchor})" if anchor != path else "")
    need = f"{est.kept} checkpoint(s) of about {human_bytes(est.one_bytes)} = {human_bytes(total)}"
    fix = (
        "lower trainer.keep_ckpts (or trainer.save_freq's number of saves), free space there, or point "
        "trainer.ckpt_dir at a larger disk"
    )
    if free < share:
        part = f" (each of {nodes} nodes holds about {human_bytes(share)})" if nodes > 1 else ""
        return [
            Problem(
                "checkpoint-space",
                "error",
                key,
                recipe.trainer.keep_ckpts,
                f"the kept checkpoints need {need}{part}, and {where} has {human_bytes(free)} free ({est.how})",
                fix,
            )
        ]
    if free < total:
        return [
            Problem(
                "checkpoint-space",
                "warning",
                key,
                recipe.trainer.keep_ckpts,
                f"the kept checkpoints need {need}, and {where} has {human_bytes(free)} free: enough for this node's "
                f"1/{nodes} share on local disks, not for all of them on shared storage ({est.how})",
                fix,
            )
        ]
    return []


def keep_problems(recipe: Recipe) -> list[Problem]:
    """Keep-best needs a validation at every checkpoint's step; retention needs saves."""
    tr, out = recipe.trainer, []
    if (tr.keep_ckpts is not None or tr.keep_best_metric) and tr.save_freq <= 0:
        out.append(
            Problem(
                "checkpoint-keep",
                "warning",
                "trainer.save_freq",
                tr.save_freq,
                f"{recipe.origin('trainer.save_freq')}: trainer.save_freq {tr.save_freq} saves no checkpoint, so "
                "trainer.keep_ckpts / keep_best_metric keep nothing",
                "set trainer.save_freq > 0, or drop keep_ckpts / keep_best_metric",
            )
        )
        return out
    metric = tr.keep_best_metric
    if not metric:
        return out
    if not metric.startswith("val-"):
        out.append(
            Problem(
                "checkpoint-keep",
                "warning",
                "trainer.keep_best_metric",
                metric,
                f"{recipe.origin('trainer.keep_best_metric')}: {metric!r} is not a validation metric (verl names "
                "them val-core/<data source>/<reward>/mean@N, val-aux/...): a training metric says little about "
                "which checkpoint is best",
                "name a val-core/... metric of the run's metrics.jsonl",
            )
        )
    if tr.test_freq <= 0:
        out.append(
            Problem(
                "checkpoint-keep",
                "error",
                "trainer.test_freq",
                tr.test_freq,
                f"trainer.keep_best_metric {metric!r} needs validations, and trainer.test_freq {tr.test_freq} runs "
                "none: no checkpoint would ever be scored",
                "set trainer.test_freq to save_freq or a divisor of it",
            )
        )
    elif tr.save_freq % tr.test_freq:
        out.append(
            Problem(
                "checkpoint-keep",
                "warning",
                "trainer.save_freq",
                tr.save_freq,
                f"checkpoints every {tr.save_freq} steps, validations every {tr.test_freq}: a checkpoint is scored "
                "by the validation of its own step, so the ones between validations are never the best",
                f"make trainer.save_freq a multiple of trainer.test_freq ({tr.test_freq})",
            )
        )
    return out


def problems(recipe: Recipe) -> list[Problem]:
    """Both rules for a recipe (nothing when the model's facts are unknown: the card rules say so)."""
    from grpolab.recipe.cards import model_facts

    out = keep_problems(recipe)
    facts, found = model_facts(recipe)
    if facts is None or found:
        return out
    return out + space_problems(recipe, estimate(recipe, facts))
