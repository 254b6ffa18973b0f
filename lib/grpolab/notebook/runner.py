"""run.ipynb: the stage notebooks run in order with papermill (Stages), their copies kept with the run, and the final figures."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from IPython.display import publish_display_data

from grpolab import owned, run_folder
from grpolab.jobs import runs
from grpolab.jobs.job_entry import ANSI
from grpolab.jobs.runs import Run
from grpolab.notebook.display import (
    FOLLOW_EVERY_S,
    NEEDS_RUN,
    NOTEBOOKS_DIR,
    REPORT_TAG,
    STAGE_KERNEL_VAR,
    STAGE_RESULTS_VAR,
    STAGES,
    NotebookStop,
    say,
    show_image,
    show_stages,
    stage_results,
    to_terminal,
)
from grpolab.notebook.kernel import execute_stage, kept_log, kernel_log
from grpolab.notebook.setup import STAGE_SECRETS_VAR, check_address, check_new_run_id, load, mask_overrides
from grpolab.notebook.stages import DRY_RUN_FAILED, plot_val_accuracy, show_figures
from grpolab.paths import runs_dir

# ------------------------------------------------------------------------------------------------ run.ipynb


def _cells(nb_path: Path) -> list:
    """The cells of an executed notebook; none when it cannot be read (half-written: papermill's own error is all
    there is)."""
    # lazy: nbformat (only run.ipynb's stage runner needs it, not every `import grpolab.notebook`)
    import nbformat

    try:
        return nbformat.read(str(nb_path), as_version=4).cells
    except Exception:
        return []


def _error_of(nb_path: Path) -> str | None:
    """The message of the first error output in an executed notebook."""
    for cell in _cells(nb_path):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                if out.get("ename") == "NotebookStop":
                    return str(out.get("evalue"))
                tail = [ANSI.sub("", line) for line in out.get("traceback", [])][-3:]
                return f"{out.get('ename')}: {out.get('evalue')}\n" + "\n".join(tail)
    return None


def dry_run_failures(results: dict) -> str | None:
    """`ok, N checks fail (dry run: which)` when a dry-run stage handed over failed checks (so the stage table does
    not say a plain "ok" under a list of failures); None otherwise. `results`: what the stage handed over."""
    failed = results.get(DRY_RUN_FAILED)
    if not isinstance(failed, dict) or not failed.get("count"):
        return None
    which = f": {failed['checks']}" if failed.get("checks") else ""
    return f"ok, {failed['count']} checks fail (dry run{which})"


def _replay(nb_path: Path) -> None:
    """Show again the outputs of the cells tagged `report` of an executed stage notebook."""
    for cell in _cells(nb_path):
        if cell.cell_type != "code" or REPORT_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "stream":
                (sys.stderr if out.get("name") == "stderr" else sys.stdout).write(out.get("text", ""))
            elif kind in ("display_data", "execute_result"):
                sys.stdout.flush()
                publish_display_data(dict(out.get("data", {})), dict(out.get("metadata", {})))


class Stages:
    """run.ipynb's driver: runs the stage notebooks in order with papermill, one fresh kernel each.

    The executed copies go to `runs/<run_id>/notebooks/` once the run directory exists; stages that run
    before it (setup, preflight) are written to a temporary folder first and moved there when 03_launch has
    created it. A dry run creates no run directory: the copies stay in the temporary folder, and `finish()`
    says where. A failing stage stops run.ipynb (NotebookStop, so papermill exits non-zero) with its reason.
    """

    def __init__(self, params: dict, notebooks: str | Path | None = None):
        self.params = params
        self.dry_run = bool(params.get("dry_run"))
        self.recipe = load(params["model"], params.get("overrides") or [])
        check_address(params.get("ray_address"))
        self.notebooks = Path(notebooks) if notebooks else NOTEBOOKS_DIR
        missing = [s for s in STAGES if not (self.notebooks / f"{s}.ipynb").is_file()]
        if missing:
            raise NotebookStop(f"no stage notebook(s) {', '.join(missing)} in {self.notebooks}")
        if self.dry_run:
            self.run_id = None
        else:
            check_new_run_id(params.get("run_id"))
            self.run_id = params.get("run_id") or runs.new_run_id(self.recipe.name)
        label = self.run_id or f"{self.recipe.name}-dry-run"
        # stage copies made before the run exists (a dry run's, all of them): in runs/ too, never in /tmp
        scratch_root = runs_dir() / ".scratch"
        scratch_root.mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{label}-", dir=scratch_root))
        self.stages: list[dict] = []
        where = (
            f"{self.scratch} until 03_launch creates the run's folder {self.run_dir}, then its notebooks/"
            if self.run_id
            else f"{self.scratch} (a dry run has no run directory)"
        )
        print(
            f"recipe {self.recipe.name}"
            + (f", run {self.run_id}" if self.run_id else ", dry run")
            + f"\nexecuted stage notebooks: {where}"
        )

    @property
    def run_dir(self) -> Path | None:
        return runs_dir() / self.run_id if self.run_id else None

    def _target(self) -> Path:
        run_dir = self.run_dir
        if run_dir is not None and run_dir.is_dir():
            target = run_folder.notebooks_dir(run_dir)
            target.mkdir(exist_ok=True)
            return target
        return self.scratch

    def _collect(self) -> None:
        """Move the copies written before the run directory existed into it."""
        target = self._target()
        if target == self.scratch:
            return
        for stage in self.stages:
            path = Path(stage["notebook"])
            if path.parent == self.scratch and path.exists():
                moved = target / path.name
                owned.move(path, moved)
                stage["notebook"] = str(moved)
                log = kernel_log(path)  # a stage kernel's own log, when it said something
                if log.exists():
                    owned.move(log, target / log.name)
        handed = run_folder.stage_results(self.scratch)
        if handed.exists():  # merged into what the stages after 03_launch hand over there
            kept = run_folder.stage_results(target)
            kept.write_text(json.dumps({**stage_results(handed), **stage_results(kept)}, indent=1) + "\n")
            owned.remove_file(handed)
        with contextlib.suppress(OSError):
            self.scratch.rmdir()

    def run(self, stage: str, **parameters) -> None:
        """Execute one stage notebook with these parameters; show its report; stop run.ipynb if it fails."""
        # lazy: papermill (only run.ipynb's stage runner needs it, not every `import grpolab.notebook`)
        from papermill.exceptions import PapermillExecutionError

        if self.dry_run and stage in NEEDS_RUN:
            print(f"{stage}: skipped (dry run: nothing was submitted, so there is no run to monitor)")
            self.stages.append({"stage": stage, "result": "skipped", "seconds": 0.0, "notebook": None})
            return
        source = self.notebooks / f"{stage}.ipynb"
        output = self._target() / f"{stage}.ipynb"
        entry = {"stage": stage, "result": "running", "seconds": 0.0, "notebook": str(output)}
        self.stages.append(entry)
        say(f"{stage}: running ...")
        if stage in NEEDS_RUN:
            print(
                f"  meanwhile, watch it with `grpolab monitor {self.run_id}` or in 04_monitor.ipynb "
                f"(run_id {self.run_id!r})",
                flush=True,
            )
        start = time.perf_counter()
        error = None
        real: dict[str, str] = {}
        if parameters.get("overrides"):  # secrets stay out of the stage notebook's injected-parameters cell
            masked, real = mask_overrides(parameters["overrides"], self.recipe.secrets)
            parameters = {**parameters, "overrides": masked}

        def execute() -> None:
            nonlocal error
            try:
                execute_stage(source, output, parameters, cwd=self.notebooks)
            except PapermillExecutionError as exc:
                error = _error_of(output) or f"{exc.ename}: {exc.evalue}"
            except Exception as exc:  # the kernel died, papermill could not start it, ...
                error = f"{type(exc).__name__}: {exc}"

        saved = {name: os.environ.get(name) for name in (STAGE_SECRETS_VAR, STAGE_KERNEL_VAR, STAGE_RESULTS_VAR)}
        # the stage kernel inherits it (this process's id: here it means nothing) and leaves the terminal to us
        os.environ[STAGE_KERNEL_VAR] = str(os.getpid())
        results = run_folder.stage_results(output.parent)
        os.environ[STAGE_RESULTS_VAR] = json.dumps({"file": str(results), "stage": stage})
        try:
            if real:  # the stage kernel inherits this process's environment
                os.environ[STAGE_SECRETS_VAR] = json.dumps(real)
            run_dir = self.run_dir
            if stage in NEEDS_RUN and run_dir is not None and run_dir.exists():
                # the stage's own kernel follows the run; this one shows how far it is meanwhile (a line every
                # FOLLOW_EVERY_S s, also on papermill's terminal) instead of "running ..." for minutes; plain lines
                # in JupyterLab too: a saved notebook keeps them (a widget bar would be "model not found"). From the
                # run's files alone, nothing asks Ray: the stage's kernel does, and stops on a bad record itself
                # lazy: orjson, yaml (the monitor loads only while a launch stage is followed)
                from grpolab.monitor.progress import Progress, follow

                worker = threading.Thread(target=execute, daemon=True, name=f"grpolab-stage-{stage}")
                worker.start()
                tracker = Progress(self.run_id, every_s=FOLLOW_EVERY_S, out=say)
                status = follow(Run(run_dir), tracker.update, ask_ray=False, busy=worker.is_alive)
                worker.join()
                tracker.close(status)
            else:
                execute()
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        entry["seconds"] = time.perf_counter() - start
        # an empty log is removed; _collect moves a kept one with the notebook
        kept = kept_log(kernel_log(output)) is not None
        entry["result"] = "failed" if error else (dry_run_failures(stage_results(results).get(stage) or {}) or "ok")
        self._collect()
        if error and kept:
            error += f" (the stage kernel's own log: {kernel_log(Path(entry['notebook']))})"
        later = ""
        if self.run_id and Path(entry["notebook"]).parent == self.scratch and not error:  # no run folder yet
            later = f" (moves to {run_folder.notebooks_dir(self.run_dir)} if 03_launch creates the run)"
        say(f"{stage}: {entry['result']} in {entry['seconds']:.1f} s; executed notebook: {entry['notebook']}{later}")
        _replay(Path(entry["notebook"]))
        if error:
            show_stages(self.stages)
            self._terminal_summary()
            raise NotebookStop(
                f"stage {stage} failed, so run.ipynb stopped there:\n{error}\nexecuted notebook: {entry['notebook']}"
            )

    def finish(self) -> None:
        """The stage table, where the executed copies are, and for a real run the validation-accuracy curve
        and the final figures."""
        self._collect()
        show_stages(self.stages)
        if self.dry_run:
            print(f"dry run: nothing was submitted; the executed stage notebooks are in {self.scratch}")
            self._terminal_summary()
            return
        if self.run_dir is None or not self.run_dir.is_dir():
            print(
                f"no run directory {self.run_dir}: was 03_launch run? the executed stage notebooks are in "
                f"{self.scratch}"
            )
            return
        run = Run(self.run_dir)
        print(f"run directory: {run.path}\nexecuted stage notebooks: {run_folder.notebooks_dir(run.path)}")
        png = plot_val_accuracy(run)
        if png is not None:
            show_image(png)
        show_figures(run)
        self._terminal_summary(run, [p for p in (run.path / "curves.png", png) if p is not None and p.exists()])

    def _terminal_summary(self, run=None, pictures: list | None = None) -> None:
        """The last lines on papermill's terminal: every stage with its verdict, where the run and the executed
        notebooks are (only what exists), the reward and validation accuracy at the end, the figures' paths. The
        notebook shows the same as tables above; a headless user reads this instead of opening out.ipynb."""
        lines = ["run.ipynb summary:"]
        lines += [f"  {s['stage']:13} {s['result']} ({s['seconds']:.1f} s)" for s in self.stages]
        if run is not None:
            lines.append(f"  run folder: {run.path}")
            # lazy: orjson, yaml (the monitor loads only for the last summary)
            from grpolab.monitor.outcome import figures

            fig = figures(run)
            ends = [
                f"{label} {fig[label]['last']:.3f} (step {fig[label]['last_step']})"
                for label in ("reward", "val_acc")
                if label in fig
            ]
            lines.append("  at the end: " + (", ".join(ends) if ends else "no metrics logged"))
            if pictures:
                lines.append("  figures: " + ", ".join(str(p) for p in pictures))
        else:
            made = self.run_dir is not None and self.run_dir.is_dir()
            lines.append(
                f"  run folder: {self.run_dir}"
                if made
                else "  no run folder: nothing was submitted"
                + (f"; the executed stage notebooks are in {self.scratch}" if self.scratch.is_dir() else "")
            )
        for line in lines:
            to_terminal(line)
