"""papermill's terminal report of a notebook that stopped with GRPO Lab's message: the message, not a traceback.

papermill's command lets the PapermillExecutionError of a failed cell escape, so Python prints some 25 lines of
papermill's and click's own frames before the cell's message. papermill imports the `papermill.engine` entry
points when it starts (papermill.engines.register_entry_points); GRPO Lab registers this module there (pyproject),
so in the `papermill` command only, importing it installs an excepthook that prints a NotebookStop in two lines,
where the notebook stopped and then the message (the last line), and exits 1 as before. Any other error keeps
papermill's full report. The `grpolab` engine it registers is papermill's own nbclient engine, unchanged.

For GRPO Lab's notebooks (a cell imports grpolab) it also keeps the terminal to what the notebook says: the
kernel starts with ipykernel's own log off (its start-up warning on every run and its shutdown race are gone;
run.ipynb's stage kernels log errors and write their own stderr to a kernel log), and papermill's cell counter bar
is off unless `--progress-bar` is given, since the notebooks write their own stage and progress lines to the
terminal, which the bar's carriage returns would run into.
"""

from __future__ import annotations

import os
import sys

from papermill.engines import NBClientEngine

from grpolab.notebook.display import TERMINAL_KERNEL_ARGS


class Engine(NBClientEngine):
    """papermill's nbclient engine under GRPO Lab's name (registering an engine is how papermill loads this)."""


def report(exc: BaseException) -> str | None:
    """The two-line report of a cell that raised NotebookStop; None for anything else."""
    if type(exc).__name__ != "PapermillExecutionError" or getattr(exc, "ename", None) != "NotebookStop":
        return None
    where = f"cell In [{getattr(exc, 'exec_count', '?')}]"
    output = sys.argv[2] if len(sys.argv) > 2 and not sys.argv[2].startswith("-") else "the output notebook"
    return f"papermill: the notebook stopped in {where} (the full output: {output})\n{getattr(exc, 'evalue', exc)}"


def _hook(previous):
    def hook(kind, exc, tb):
        text = report(exc)
        if text is None:
            previous(kind, exc, tb)
            return
        sys.stderr.write(("\n" if text else "") + text.rstrip("\n") + "\n")

    return hook


def ours(nb) -> bool:
    """A GRPO Lab notebook: one of its code cells imports grpolab."""
    return any(
        cell.get("cell_type") == "code" and "grpolab" in str(cell.get("source", "")) for cell in nb.get("cells", [])
    )


def _quiet_engine() -> None:
    """papermill's engine, for GRPO Lab's notebooks: the kernel's start-up warnings off, no cell counter bar."""
    engine = NBClientEngine
    if getattr(engine, "_grpolab_quiet", False):
        return
    run_notebook = engine.execute_notebook.__func__

    def execute_notebook(cls, nb, kernel_name, output_path=None, progress_bar=True, **kwargs):
        if ours(nb):
            # ipykernel's own log stays unwritten (run.ipynb's stage kernels write theirs to a kernel log); this
            # kernel's stderr stays the terminal: the notebook's progress lines are written there
            kwargs.setdefault("extra_arguments", TERMINAL_KERNEL_ARGS)
            if "--progress-bar" not in sys.argv:
                progress_bar = False
        return run_notebook(cls, nb, kernel_name, output_path=output_path, progress_bar=progress_bar, **kwargs)

    engine.execute_notebook = classmethod(execute_notebook)
    engine._grpolab_quiet = True


def install() -> None:
    if not getattr(sys.excepthook, "_grpolab", False):
        hook = _hook(sys.excepthook)
        hook._grpolab = True
        sys.excepthook = hook
    _quiet_engine()


if os.path.basename(sys.argv[0] if sys.argv else "") == "papermill":  # papermill's command, nothing else
    install()
