"""`grpolab resume RUN`: a new run, linked to RUN, that continues from one of RUN's complete checkpoints.

`plan_resume` decides everything before anything is submitted, and refuses (ResumeRefused: a message that says why
and what to do; the CLI exits 1) when the resume would be silently wrong:
- RUN has no complete checkpoint (verl's latest_checkpointed_iteration.txt against the global_step_N folders, a
  folder missing a rank's files: grpolab.jobs.checkpoints), or --from names one that is not complete;
- nothing is left to train: the checkpoint's step is at or past trainer.total_steps, or at the end of the last
  epoch (verl then exits 0 having trained nothing: verl #7401, PR #5725);
- a data file changed since RUN was launched (the saved data position would index other samples: NeMo-RL #2519),
  from the fingerprints RUN's launch record holds (grpolab.jobs.provenance);
- the resumed recipe changes what the checkpoint cannot take: another model, another engine, another FSDP world
  size (verl loads FSDP shards only at the world size that saved them), another Megatron model-parallel layout
  (verl saves the distributed optimizer `dp_reshardable`), another batch geometry (the data position counts
  batches);
- RUN still runs.
The child's recipe is RUN's resolved recipe.yaml, then the --set overrides, then trainer.resume_mode=resume_path and
trainer.resume_path=<the checkpoint folder>: verl gets them as its own resume keys (grpolab.verl.fieldmap),
the local trainer restores model, optimizer, scheduler, RNG and data position from it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from grpolab.jobs import checkpoints as ck
from grpolab.jobs import provenance
from grpolab.jobs.runs import TERMINAL_STATES, Run
from grpolab.jobs.state import live_state, refresh
from grpolab.problems import InputError
from grpolab.recipe.dotted import get_dotted
from grpolab.recipe.schema import Recipe
from grpolab.recipe.secrets import REDACTED, redact_override

# keys whose change the checkpoint cannot take, per engine, and why
MODEL_KEYS = {"model.path": "a different model", "model.card": "a different model card", "train.engine": "engine"}
MEGATRON_LAYOUT = ("train.tp", "train.pp", "train.cp", "train.ep", "train.etp", "train.vpp", "train.pp_layout")
RESHARDABLE = "actor_rollout_ref.actor.megatron.dist_ckpt_optim_fully_reshardable"


class ResumeRefused(Exception):
    """The resume would be wrong or pointless; nothing was submitted. The message says why and what to do."""


@dataclass
class ResumePlan:
    parent: Run
    recipe: Recipe  # the child's: the parent's recipe, the overrides, the resume keys
    checkpoint: ck.Checkpoint
    overrides: list[str]
    total_steps: int | None
    notes: list[str] = field(default_factory=list)  # what could not be checked, said once

    def record(self) -> dict:
        """The child's link to its parent (launch.json and status.json `resumed_from`)."""
        return {
            "run_id": self.parent.run_id,
            "run_dir": str(self.parent.path),
            "step": self.checkpoint.step,
            "checkpoint": str(self.checkpoint.path),
            "overrides": [redact_override(o, self.recipe.secrets) for o in self.overrides],
        }


def _parent_files(run: Run) -> tuple[dict, dict]:
    if not run.recipe_file.is_file():
        raise ResumeRefused(
            f"run {run.run_id} has no recipe.yaml (it was never submitted): there is nothing to resume; "
            f"start a new run with `grpolab run RECIPE`"
        )
    data = ck.run_recipe(run.path)
    try:
        launch = ck.read_json(run.launch_file)
    except (OSError, ValueError, RecursionError):
        launch = {}
    return data, _checked_launch(run, launch)


class _Fingerprint(BaseModel):
    model_config = ConfigDict(extra="allow")
    key: str = ""
    sha256: str | None = None
    error: str | None = None


class _Provenance(BaseModel):
    model_config = ConfigDict(extra="allow")
    data: dict[str, _Fingerprint] | None = None


class _LaunchRecord(BaseModel):
    """The fields of launch.json that resume reads, typed (the rest is kept as it is)."""

    model_config = ConfigDict(extra="allow")
    recipe: str | None = None
    provenance: _Provenance | None = None


def _checked_launch(run: Run, launch: object) -> dict:
    """launch.json as resume reads it; ResumeRefused naming the file, the field and the fix when ill-typed."""
    fix = (
        f"the record is damaged: restore it, or delete {run.launch_file} to resume without checking the data "
        "(the resume then says it was not checked)"
    )
    if not isinstance(launch, dict):
        raise ResumeRefused(f"{run.launch_file}: not a JSON object ({type(launch).__name__}); {fix}")
    try:
        checked = _LaunchRecord.model_validate(launch)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(map(str, error["loc"]))
        raise ResumeRefused(
            f"{run.launch_file}: {field} = {json.dumps(error.get('input'), default=str)[:60]}: {error['msg']}; {fix}"
        ) from None
    return checked.model_dump(exclude_none=True) | {
        k: v for k, v in launch.items() if k not in ("recipe", "provenance")
    }


def _child_recipe(run: Run, data: dict, launch: dict, overrides: Sequence[str]) -> Recipe:
    """The parent's resolved recipe with the overrides. A secret the record redacted becomes the reference
    `${NAME}`: read from the launching shell at submission (or, missing there, from each node), as a recipe's own
    references are."""
    # lazy: yaml (only planning a resume loads the recipe)
    from grpolab.recipe.loader import load_recipe

    set_keys = {o.split("=", 1)[0].strip() for o in overrides}
    restored = [
        f"env.{name}=${{{name}}}"
        for name, value in (data.get("env") or {}).items()
        if value == REDACTED and f"env.{name}" not in set_keys
    ]
    recipe = load_recipe(run.recipe_file, [*restored, *overrides])
    name = launch.get("recipe") or run.status().get("recipe") or recipe.name
    return recipe.set_origin(name, recipe.files)


def _refuse_running(run: Run) -> None:
    state = refresh(run).get("state")
    if state not in TERMINAL_STATES and state is not None:
        raise ResumeRefused(
            f"run {run.run_id} is {state}: two runs would train from the same checkpoints; stop it first "
            f"(grpolab stop {run.run_id}), then resume it"
        )


def _pick(found: list[ck.Checkpoint], layout: ck.Layout, run: Run, from_step: int | None) -> ck.Checkpoint:
    complete = [c for c in found if c.complete]
    if from_step is not None:
        chosen = next((c for c in found if c.step == from_step), None)
        if chosen is not None and chosen.complete:
            return chosen
        have = ", ".join(str(c.step) for c in complete) or "none"
        why = f"is not complete (lacks {'; '.join(chosen.missing)})" if chosen else "does not exist"
        raise ResumeRefused(
            f"run {run.run_id}: checkpoint step {from_step} {why} in {layout.root}; complete checkpoints: {have}"
            + (
                f"; resume from one of them with --from STEP, or leave --from out for the latest ({complete[-1].step})"
                if complete
                else ""
            )
        )
    if complete:
        return complete[-1]
    if not found:
        saved = get_dotted(_plain_recipe(run), "trainer.save_freq")
        why = (
            f"trainer.save_freq is {saved}: the run never saved one"
            if isinstance(saved, int) and saved <= 0
            else "it stopped before its first save"
        )
        raise ResumeRefused(
            f"run {run.run_id} has no checkpoint in {layout.root} ({why}): there is nothing to resume from; "
            "start it again with `grpolab run RECIPE` (set trainer.save_freq > 0 to be able to resume)"
        )
    details = "; ".join(f"step {c.step}: lacks {', '.join(c.missing[:2])}" for c in found[-3:])
    raise ResumeRefused(
        f"run {run.run_id} has no complete checkpoint in {layout.root} ({details}): a partial save would load "
        "some ranks' state and not others; start it again with `grpolab run RECIPE`"
    )


def _plain_recipe(run: Run) -> dict:
    try:
        return ck.run_recipe(run.path)
    except (OSError, InputError):
        return {}


def _saved_world(checkpoint: ck.Checkpoint) -> int | None:
    try:
        return int(ck.read_json(checkpoint.path / "actor" / "fsdp_config.json")["world_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def incompatible(parent: dict, child: Recipe, checkpoint: ck.Checkpoint) -> list[str]:
    """Sentences naming each change of the resumed recipe that the checkpoint cannot take."""
    out = []
    for key, what in MODEL_KEYS.items():
        before, now = get_dotted(parent, key), get_dotted(child, key)
        if before != now:
            out.append(f"{key}: {before!r} -> {now!r} ({what}: the checkpoint holds the weights of {before!r})")
    if get_dotted(parent, "train.engine") != child.train.engine:
        return out
    engine = child.engine
    if engine.shards_over_world:
        saved = _saved_world(checkpoint) or int(get_dotted(parent, "cluster.nnodes")) * int(
            get_dotted(parent, "cluster.devices_per_node")
        )
        if saved != child.world_size:
            out.append(
                f"FSDP world size {saved} -> {child.world_size} (cluster.nnodes x cluster.devices_per_node): the "
                f"checkpoint holds model_world_size_{saved}_rank_*.pt shards and verl 0.9.1 loads them only at the "
                "world size that saved them"
            )
    if engine.dist_checkpoint and "optimizer" in (get_dotted(parent, "trainer.save_contents") or []):
        reshardable = get_dotted(parent, "verl_overrides", {}).get(RESHARDABLE) is True
        changed = [k for k in MEGATRON_LAYOUT if get_dotted(parent, k) != get_dotted(child, k)]
        if changed and not reshardable:
            out.append(
                "Megatron layout "
                + ", ".join(f"{k} {get_dotted(parent, k)} -> {get_dotted(child, k)}" for k in changed)
                + ": verl saves the distributed optimizer dp_reshardable (only the data-parallel size may change); "
                f"set verl_overrides {RESHARDABLE}: true on the run that saves"
            )
    for key in engine.resume_keys:
        before, now = get_dotted(parent, key), get_dotted(child, key)
        if before != now:
            why = "a different tiny model" if key.startswith("local.") else "the saved data position counts batches"
            out.append(f"{key}: {before!r} -> {now!r} ({why})")
    return out


def dataset_rows(path: str) -> int | None:
    """Rows of one data file when it is readable here (parquet footer, JSON lines), else None."""
    full = Path(os.path.expanduser(path))
    try:
        if full.suffix == ".parquet":
            # lazy: pyarrow (only reading a parquet data file's row count needs it)
            import pyarrow.parquet as pq

            return int(pq.ParquetFile(full).metadata.num_rows)
        if full.suffix in (".jsonl", ".json"):
            text = full.read_text(encoding="utf-8")
            stripped = text.lstrip()
            if stripped.startswith("["):
                return len(json.loads(text))
            return sum(1 for line in text.splitlines() if line.strip())
    except (OSError, ValueError, ImportError):
        return None
    except Exception:  # noqa: BLE001 - pyarrow's own errors: an unreadable file is "unknown", not a crash
        return None
    return None


def training_budget(recipe: Recipe) -> tuple[int | None, str]:
    """(the last step the resumed run would train, how it follows), as verl's loop bounds it: trainer.total_steps,
    and for verl engines also total_epochs x (rows // train_batch_size) (its dataloader drops the last partial
    batch). None when neither can be known here."""
    total, how = recipe.trainer.total_steps, "trainer.total_steps"
    if not recipe.engine.verl:
        return total, how
    files = recipe.data.train_files
    counts = [dataset_rows(path) for path in ([files] if isinstance(files, str) else files)]
    own_batch = recipe.data.train_batch_size == 0  # an entry point that takes its own batch counts its own steps
    if counts and all(c is not None for c in counts) and not own_batch:
        per_epoch = sum(counts) // recipe.data.train_batch_size
        bound = per_epoch * recipe.trainer.total_epochs
        if total is None or bound < total:
            filtered = (
                " at most (data.filter_overlong_prompts drops some)" if recipe.data.filter_overlong_prompts else ""
            )
            how = (
                f"trainer.total_epochs {recipe.trainer.total_epochs} x {per_epoch} steps per epoch{filtered} "
                f"({sum(counts)} rows // data.train_batch_size {recipe.data.train_batch_size})"
            )
            return bound, how
    return total, how


def plan_resume(run: Run, from_step: int | None = None, overrides: Sequence[str] = ()) -> ResumePlan:
    """Everything `grpolab resume` submits, checked first; ResumeRefused when the resume would be wrong."""
    parent, launch = _parent_files(run)
    _refuse_running(run)
    return _plan(run, parent, launch, from_step, overrides)


def plan_restart(run: Run) -> ResumePlan:
    """The same plan for a run that restarts itself (grpolab.heal, after a failed attempt): from its latest complete
    checkpoint, with the same checks and refusals as `grpolab resume` (no checkpoint, changed data, nothing left
    to train), except that the run still runs (it is its own job) and a shared trainer.ckpt_dir is its own."""
    parent, launch = _parent_files(run)
    return _plan(run, parent, launch, None, ())


def _plan(run: Run, parent: dict, launch: dict, from_step: int | None, overrides: Sequence[str]) -> ResumePlan:
    layout = ck.layout_of(parent, run.path)
    checkpoint = _pick(ck.scan(layout, run.path), layout, run, from_step)
    child = _child_recipe(run, parent, launch, overrides)
    notes: list[str] = []

    problems = incompatible(parent, child, checkpoint)
    if problems:
        raise ResumeRefused(
            f"the resumed recipe changes what run {run.run_id}'s checkpoint (step {checkpoint.step}) cannot take: "
            + "; ".join(problems)
            + ". Drop those --set overrides, or start a new run with `grpolab run RECIPE`"
        )

    recorded = (launch.get("provenance") or {}).get("data")
    if recorded is None:
        notes.append(f"run {run.run_id} recorded no data fingerprints: whether its data changed was not checked")
    else:
        now = provenance.fingerprints(child)
        changed = provenance.changed_data(recorded, now)
        if changed:
            raise ResumeRefused(
                f"the data of run {run.run_id} changed since it was launched: "
                + "; ".join(changed)
                + ". Its checkpoint's data position counts samples of the old data: resuming would skip or repeat "
                "samples silently. Restore the original files to resume, or start a new run on the new data with "
                "`grpolab run RECIPE`"
            )
        unreadable = [p for p, fp in recorded.items() if "error" in fp]
        if unreadable:
            notes.append(f"not checked (not readable where the run was launched): {', '.join(unreadable)}")

    total, how = training_budget(child)
    if total is not None and checkpoint.step >= total:
        raise ResumeRefused(
            f"nothing left to train: run {run.run_id}'s checkpoint is at step {checkpoint.step} and the recipe trains "
            f"{total} steps ({how}); verl would start, train nothing and exit 0 (verl #7401). To train on, raise the "
            f"budget, e.g. `grpolab resume {run.run_id} --set "
            + ("trainer.total_epochs=N`" if "total_epochs" in how else f"trainer.total_steps={checkpoint.step * 2}`")
        )
    if total is None:
        notes.append("the step budget is not known here (trainer.total_steps null, data not readable here)")

    if child.trainer.ckpt_dir:  # a shared folder: refused while another live run saves there (checkpoints.claim)
        shared = Path(os.path.expanduser(child.trainer.ckpt_dir))
        held = ck.owner(shared)

        state = live_state(str(held.get("run_dir") or "")) if held.get("run_id") != run.run_id else None
        if state is not None:
            raise ResumeRefused(
                f"trainer.ckpt_dir {shared} is in use by run {held.get('run_id')} ({state}), which already resumed "
                f"or runs there: a second run saving there would overwrite and prune its checkpoints; wait for it to "
                f"end, or resume with --set trainer.ckpt_dir=A_NEW_FOLDER"
            )
    child.trainer.resume_mode = "resume_path"
    child.trainer.resume_path = str(checkpoint.path.resolve())
    return ResumePlan(run, child, checkpoint, list(overrides), total, notes)
