"""`grpolab export RUN`: Hugging Face weights from one of a run's complete checkpoints, then checked against the card.

How the weights come out of the checkpoint (grpolab.jobs.checkpoints reads its layout):
    FSDP, Megatron shards   verl's own merger as a Ray job on the run's cluster: `python -m verl.model_merger merge
                            --backend fsdp|megatron --local_dir CKPT/global_step_N/actor --target_dir OUT` (flags
                            from verl 0.9.1's argparse, verl/model_merger/base_model_merger.py), with
                            --tie-word-embedding when the card ties the embedding (Megatron), --trust-remote-code
                            when the recipe trusts the model's code, --use_cpu_initialization when the model's bf16
                            weights do not fit one device
    Megatron through mbridge verl already saved Hugging Face weights (actor/model/huggingface, ckpt_contents.json
                            says so); its merger reads model/dist_ckpt and would find nothing: they are copied
    TRL (`tiny`)            the checkpoint is a transformers model: its weights, config and tokenizer are copied
Then the result is checked against the model's card (grpolab.jobs.weights_check), and where the engine names a
scorer (`tiny`: loaded back with transformers and scored on the validation split, grpolab.local.score) the value the
run logged at that step must come back exactly.
OUT defaults to RUN/export/global_step_N; OUT/grpolab_export.json holds the report.

Nothing a user owns is overwritten: OUT must be new or an empty folder, or (with --force, which names what it
replaces) an earlier export of grpolab's own (it holds grpolab_export.json); never a checkpoint folder, a run's
folder or a system folder (grpolab.paths). The weights are written into a staging folder beside OUT (`.OUT` +
STAGING, marked and locked by the export while it runs: a second export into OUT is refused meanwhile), checked,
and renamed to OUT at the end: an export that fails half way leaves OUT as it was, and a file a user put into OUT
during the export is never replaced or deleted (grpolab.owned makes every removal and rename).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pkgutil
import re
import secrets
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grpolab import owned, run_folder
from grpolab.jobs import checkpoints as ck
from grpolab.jobs import cluster
from grpolab.jobs.cluster import Endpoint
from grpolab.jobs.runs import Run
from grpolab.jobs.weights_check import check
from grpolab.local.checkpoint import SAVED
from grpolab.paths import in_system_tree, is_system_folder
from grpolab.problems import InputError, RecipeError
from grpolab.recipe.dotted import get_dotted
from grpolab.recipe.engines import FSDP, engine_of, named
from grpolab.recipe.secrets import is_secret

MERGER = ["-m", "verl.model_merger", "merge"]
HF_FILES = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)
WEIGHT_GLOBS = ("*.safetensors", "model.safetensors.index.json")
JOB_POLL_S = 2.0
REPORT = "grpolab_export.json"
STAGING = ".grpolab-export"  # `.OUT<this>` beside OUT: the one export writing into OUT now (its marker locked)


class ExportRefused(Exception):
    """Nothing to export (no complete checkpoint, no such step) or the weights cannot be checked; says what to do."""


@dataclass
class ExportPlan:
    run: Run
    recipe: dict  # the run's recipe.yaml, as data
    checkpoint: ck.Checkpoint
    out: Path
    mode: str  # "merge" (verl's model_merger) or "copy" (the checkpoint already holds Hugging Face weights)
    source: Path  # the merger's --local_dir, or the folder copied
    command: list[str] | None  # the merger's argv (python first) for mode "merge"
    staging: Path | None = None  # where the weights are written before they are renamed to `out`
    replaces: list[str] | None = None  # with --force: the files of an earlier export that OUT held

    def to_dict(self) -> dict:
        return {
            "run": self.run.run_id,
            "step": self.checkpoint.step,
            "checkpoint": str(self.checkpoint.path),
            "out": str(self.out),
            "mode": self.mode,
            "source": str(self.source),
            "command": shlex.join(self.command) if self.command else None,
        }


def card_of(recipe: Any):
    """The model's facts for a recipe (a Recipe or recipe.yaml's data): config.json at model.path, else its card."""
    # lazy: yaml (only an export reads the model's card)
    from grpolab.recipe.cards import config_json, facts_from_config, read_config, resolve_model

    card = None
    if name := get_dotted(recipe, "model.card"):
        with contextlib.suppress(InputError, RecipeError):
            card = resolve_model(name).card
    cfg = config_json(str(get_dotted(recipe, "model.path") or ""))
    if cfg is not None:
        with contextlib.suppress(OSError, ValueError, InputError):
            return facts_from_config(read_config(cfg), card, str(cfg))
    return card


def merger_command(recipe: Any, local_dir: str | Path, target_dir: str | Path, python: str = "python3") -> list[str]:
    """verl's merger for a recipe's checkpoint folder (CKPT/global_step_N/actor) into target_dir."""
    engine = engine_of(recipe)
    backend = engine.merger or FSDP.merger  # a trainer with no merger of its own: verl's default worker's
    argv = [python, *MERGER, "--backend", backend, "--local_dir", str(local_dir), "--target_dir", str(target_dir)]
    card = card_of(recipe)
    if engine.dist_checkpoint and card is not None and card.tie_word_embeddings:
        argv.append("--tie-word-embedding")
    if get_dotted(recipe, "model.trust_remote_code"):
        argv.append("--trust-remote-code")
    if engine.dist_checkpoint and card is not None:
        weights_gb = card.params_b * 2  # bf16
        if weights_gb > float(get_dotted(recipe, "cluster.device_memory_gb") or 0):
            argv.append("--use_cpu_initialization")  # the merger builds the whole model in one process
    return argv


def _pick(run: Run, layout: ck.Layout, step: int | None) -> ck.Checkpoint:
    found = ck.scan(layout, run.path)
    complete = [c for c in found if c.complete]
    if step is None:
        if complete:
            return complete[-1]
        raise ExportRefused(
            f"run {run.run_id} has no complete checkpoint in {layout.root}: nothing to export "
            "(set trainer.save_freq > 0 for the next run)"
        )
    chosen = next((c for c in complete if c.step == step), None)
    if chosen is None:
        have = ", ".join(str(c.step) for c in complete) or "none"
        raise ExportRefused(f"run {run.run_id} has no complete checkpoint at step {step}; complete ones: {have}")
    return chosen


_CHECKPOINT_PART = re.compile(rf"^{ck.STEP_PREFIX}\d+$")


def _target(run: Run, layout: ck.Layout, out: str | Path | None, default: Path, force: bool) -> tuple[Path, list]:
    """Where the export may go (see the module docstring), and what --force replaces there; ExportRefused else."""
    if out is not None and not str(out).strip():
        raise InputError("--out '': an empty path; name a new or empty folder, or leave --out out for the default")
    target = Path(os.path.realpath(Path(out).expanduser())) if out else default
    flag = f"--out {out}" if out else f"the default folder {target}"
    fix = "name a new or empty folder with --out"
    if is_system_folder(target) or in_system_tree(target):
        raise ExportRefused(f"{flag}: {target} is a system folder; nothing is exported into it; {fix}")
    roots = {Path(os.path.realpath(layout.root)), Path(os.path.realpath(run_folder.checkpoint_dir(run.path)))}
    for folder in (target, *target.parents):
        saved = _CHECKPOINT_PART.match(folder.name) and any(
            os.path.lexists(folder / name) for name in SAVED
        )  # a checkpoint by what it holds: a new folder merely named global_step_N is fine
        inside_ckpt = folder in roots or saved or (folder / ck.TRACKER).is_file()
        if inside_ckpt or run_folder.status_file(folder).is_file() and folder != run.path:
            raise ExportRefused(
                f"{flag}: {target} is inside {folder}, a checkpoint or run folder: writing there would change a "
                f"checkpoint or a run's record; {fix}"
            )
    if target == run.path or target in roots:
        raise ExportRefused(f"{flag}: {target} is the run's own folder; {fix}")
    if os.path.lexists(target) and not target.is_dir():  # an unusable input (exit 2): a folder was asked for
        raise InputError(f"{flag}: {target} exists and is not a folder; {fix}")
    if target.is_dir() and owned.is_mount_point(target):  # renamed into place: a mount point cannot be
        raise ExportRefused(f"{flag}: {target} is a mount point; name a new folder inside it ({target / 'weights'})")
    held = sorted(p.name for p in target.iterdir()) if target.is_dir() else []
    if not held:
        return target, []
    if not (target / REPORT).is_file():
        shown = ", ".join(held[:5]) + (" ..." if len(held) > 5 else "")
        raise ExportRefused(
            f"{flag}: {target} is not empty ({shown}) and is not an export of grpolab's: nothing in it is "
            f"overwritten; {fix}"
        )
    if not force:
        raise ExportRefused(
            f"{flag}: {target} holds an earlier export ({len(held)} files); pass --force to replace it, or {fix}"
        )
    return target, held


def plan_export(run: Run, step: int | None = None, out: str | Path | None = None, force: bool = False) -> ExportPlan:
    if not run.recipe_file.is_file():
        raise ExportRefused(f"run {run.run_id} has no recipe.yaml: it was never submitted, nothing to export")
    recipe = ck.run_recipe(run.path)
    layout = ck.layout_of(recipe, run.path)
    checkpoint = _pick(run, layout, step)
    target, replaces = _target(run, layout, out, run.path / "export" / checkpoint.path.name, force)
    staging = target.with_name(f".{target.name}{STAGING}")
    engine = named(layout.engine)
    if not engine.merger:
        return ExportPlan(run, recipe, checkpoint, target, "copy", checkpoint.path, None, staging, replaces)
    actor = checkpoint.path / "actor"
    if engine.dist_checkpoint:
        try:
            manifest = ck.read_json(actor / "ckpt_contents.json")
        except (OSError, ValueError):
            manifest = {}
        model = (manifest.get("contents") or {}).get("model") or {}
        if model.get("format") == "huggingface":  # mbridge saved Hugging Face weights itself
            return ExportPlan(run, recipe, checkpoint, target, "copy", actor / model["path"], None, staging, replaces)

    kept = Endpoint.from_record(run.status())
    python = sys.executable if kept is None or kept.embedded else "python3"  # a remote cluster has its own
    command = merger_command(recipe, actor, staging, python)
    return ExportPlan(run, recipe, checkpoint, target, "merge", actor, command, staging, replaces)


def copy_weights(source: Path, target: Path) -> None:
    """The Hugging Face files of `source` (weights, index, config, tokenizer) into `target`."""
    target.mkdir(parents=True, exist_ok=True)
    names = {p.name for pattern in WEIGHT_GLOBS for p in source.glob(pattern)} | {
        n for n in HF_FILES if (source / n).is_file()
    }
    for name in sorted(names):
        shutil.copy2(source / name, target / name)


def run_merge(plan: ExportPlan, progress=print) -> None:
    """verl's merger as a Ray job on the run's cluster; its log goes to RUN/logs/export-<step>.log."""
    ep = Endpoint.from_record(plan.run.status())  # the run's own cluster
    if ep is None:
        ep = cluster.endpoint(None, progress=progress)
    elif ep.embedded:
        ep = cluster.ensure_local_head(progress)
    client = cluster.job_client(ep)
    env = {k: str(v) for k, v in (plan.recipe.get("env") or {}).items() if not is_secret(k, plan.recipe.get("secrets"))}
    if ep.embedded:
        env.update({k: v for k, v in cluster.embedded_env().items() if k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN_PATH")})
    resources = {"npu": {"entrypoint_resources": {"NPU": 1}}, "cuda": {"entrypoint_num_gpus": 1}}
    device = get_dotted(plan.recipe, "cluster.device")
    job_id = f"{plan.run.run_id}-export-{plan.checkpoint.step}-{secrets.token_hex(3)}"
    client.submit_job(
        entrypoint=shlex.join(plan.command or []),
        submission_id=job_id,
        runtime_env={"env_vars": env},
        metadata={"grpolab_run_dir": str(plan.run.path), "grpolab_export": str(plan.out)},
        **resources.get(device, {}),
    )
    progress(f"merging with verl's model_merger as Ray job {job_id} on the {ep.label}")
    while (state := str(client.get_job_status(job_id).value)) not in ("SUCCEEDED", "FAILED", "STOPPED"):
        time.sleep(JOB_POLL_S)
    log = client.get_job_logs(job_id)
    plan.run.logs_dir.mkdir(exist_ok=True)
    (plan.run.logs_dir / f"export-{plan.checkpoint.step}.log").write_text(log)
    if state != "SUCCEEDED":
        tail = "\n".join(log.strip().splitlines()[-15:])
        raise ExportRefused(
            f"verl's model_merger {state} (log: {plan.run.logs_dir}/export-{plan.checkpoint.step}.log):\n{tail}"
        )


def export(plan: ExportPlan, progress=print) -> dict:
    """Make the Hugging Face weights, check them; the report (also written to OUT/grpolab_export.json)."""
    final = plan.out
    stage = plan.staging or final.with_name(f".{final.name}{STAGING}")
    stage.parent.mkdir(parents=True, exist_ok=True)
    with _staging(stage, final):
        try:
            if plan.mode == "copy":
                copy_weights(plan.source, stage)
            else:
                run_merge(plan, progress)
            if not any(name != owned.MARKER for name in os.listdir(stage)):
                raise ExportRefused(
                    f"the merged weights went to {stage} on the cluster, which this machine does not see: they were "
                    "not checked; pass --out a folder on storage this machine mounts"
                )
            report = _checked(plan, stage, check)
            if plan.replaces:
                report["replaced"] = plan.replaces
            (stage / REPORT).write_text(json.dumps(report, indent=2, default=str) + "\n")
            kept = _publish(stage, final, set(plan.replaces or ()))
        except BaseException:
            owned.remove_tree(stage)  # OUT stays as it was
            raise
    if kept:
        progress(f"kept {kept}: files put into {final} during the export, not replaced (move them back by hand)")
    return report


@contextlib.contextmanager
def _staging(stage: Path, final: Path):
    """The staging folder beside OUT, made and held (its marker locked) by this export for as long as it runs: a
    second export into the same OUT is refused while the first runs; one left by an export that died is removed."""
    for _ in range(2):
        made = owned.make_folder(stage.with_name(f"{stage.name}-{os.getpid()}-{secrets.token_hex(4)}"))  # umask's mode
        lock = os.open(made / owned.MARKER, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # locked before it takes the name other exports look at
            owned.move(made, stage)
        except BaseException as exc:
            os.close(lock)
            owned.remove_tree(made)
            if not isinstance(exc, FileExistsError):
                raise
            if _held(stage):
                raise ExportRefused(
                    f"another export is writing into {final} now (its folder {stage}): wait for it to end, or name "
                    "another --out"
                ) from None
            owned.remove_tree(stage)  # left by an export that died: ours by its marker, which nobody holds
            continue
        try:
            yield stage
        finally:
            os.close(lock)
        return
    raise ExportRefused(
        f"{stage} is in the way and is not an export's staging folder: remove it, or name another --out"
    )


def _held(stage: Path) -> bool:
    """True when a running export holds `stage` (its marker is locked), or it is not a staging folder at all."""
    try:
        fd = os.open(stage / owned.MARKER, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return True  # no marker: not ours to remove
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _publish(stage: Path, final: Path, replaces: set[str]) -> Path | None:
    """Rename the checked weights to OUT. OUT held nothing but `replaces` (an earlier export --force replaces) when
    the export was planned: if anything else is there now (a user's file, another export's weights), nothing is
    replaced. What appears in the last instant is moved back into OUT, or kept aside (returned), never deleted."""
    try:
        held = set(os.listdir(final))
    except FileNotFoundError:
        held = set()
    except NotADirectoryError:
        raise ExportRefused(f"{final} became a file during the export: nothing replaced; name a new --out") from None
    if held - replaces:
        shown = ", ".join(sorted(held - replaces)[:5])
        raise ExportRefused(
            f"{final} changed during the export ({shown} appeared): nothing in it was replaced and the weights "
            "were not kept; empty it or name a new --out, and export again"
        )
    old = final.with_name(f".{final.name}.grpolab-replaced-{os.getpid()}")
    if held:
        owned.move(final, old)  # the earlier export, out of the way in one step
    try:
        owned.move(stage, final)  # over nothing, or an empty folder: never over a file that appeared meanwhile
    except FileExistsError:
        if held:
            owned.move(old, final.with_name(f"{final.name}.before-export"))
        raise ExportRefused(f"{final} changed during the export: nothing in it was replaced") from None
    owned.remove_file(final / owned.MARKER)
    if not held:
        return None
    for name in sorted(set(os.listdir(old)) - replaces):  # put in during the last instant: back into OUT
        with contextlib.suppress(OSError):
            owned.move(old / name, final / name)
    if set(os.listdir(old)) - replaces:
        return old
    owned.remove_tree(old, proof=REPORT)
    return None


def _checked(plan: ExportPlan, folder: Path, check) -> dict:
    """The weights in `folder` checked against the card (and, for tiny, scored): the report."""
    report: dict[str, Any] = {**plan.to_dict(), "problems": []}
    card = card_of(plan.recipe)
    if card is None:
        report["problems"].append("no model card or config.json for the run's model: the weights were not checked")
    else:
        try:
            result = check(folder, card)
        except (OSError, ValueError) as exc:  # a truncated or foreign weights file: one line, no traceback
            raise ExportRefused(f"the exported weights cannot be read: {exc}") from None
        report["weights"] = result.to_dict()
        report["problems"] += result.problems
    scorer = engine_of(plan.recipe).export_score  # the engine's own scorer: the run's metric, computed again
    if scorer is not None:
        try:
            metric, accuracy = pkgutil.resolve_name(scorer)(plan.recipe, folder)
        except Exception as exc:  # transformers on a damaged config.json or weights: any of its errors, one line
            why = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
            raise ExportRefused(
                f"the exported weights do not load to be scored ({why}); the checkpoint's config.json "
                f"({plan.source / 'config.json'}) or weights are damaged: check them, or export another --step"
            ) from None
        logged = ck.metric_by_step(plan.run.path, metric).get(plan.checkpoint.step)
        report["validation"] = scored = {"metric": metric, "accuracy": accuracy, "logged": logged}
        scored["reproduced"] = logged == accuracy
        if scored["logged"] is None:
            report["problems"].append(f"the run logged no {scored['metric']} at step {plan.checkpoint.step} to compare")
        elif not scored["reproduced"]:
            report["problems"].append(
                f"the exported weights score {scored['accuracy']:.4f} on validation, the run logged "
                f"{scored['logged']:.4f} at step {plan.checkpoint.step}"
            )
    return report
