"""papermill's terminal report of a notebook that stopped with GRPO Lab's message: the message, not a traceback.

papermill's command lets the PapermillExecutionError of a failed cell escape, so Python prints some 25 lines of
papermill's and click's own frames before the cell's message. papermill imports the `papermill.engine` entry
points when it starts (papermill.engines.register_entry_points); GRPO Lab registers this module there (pyproject),
so in the `papermill` command only, importing it installs an excepthook that prints a NotebookStop in two lines,
where the notebook stopped and then the message (the last line), and exits 1 as before. Any other error keeps
papermill's full report. The `grpolab` engine it registers is papermill's own nbclient engine, unchanged.
"""

from __future__ import annotations

import os
import sys

from papermill.engines import NBClientEngine


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


def install() -> None:
    if not getattr(sys.excepthook, "_grpolab", False):
        hook = _hook(sys.excepthook)
        hook._grpolab = True
        sys.excepthook = hook


if os.path.basename(sys.argv[0] if sys.argv else "") == "papermill":  # papermill's command, nothing else
    install()
