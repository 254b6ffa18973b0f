"""A failed check stops the rest of the notebook in the kernel itself, whatever the front end does.

When a cell stops with NotebookStop (a bad parameter, an unknown recipe, a recipe with errors), the cells after it
must not run with the state an earlier run left behind (`recipe` of the previous model, its "ready to launch").
Front ends differ in how Run All reacts to an error: JupyterLab asks the kernel to abort the queued cells
(`stop_on_error`), which works only for the requests already queued when the error happens; others send the next
cell anyway. So the kernel keeps a flag: once a cell stops with NotebookStop, every later cell that does more than
import and set parameters is replaced by a one-line CellSkipped error that says which cell stopped the notebook and
how to go on, until the cell that checks the parameters (it calls `check_parameters`) runs through again.

Armed by `check_parameters` (its first step, once, only in an IPython kernel): every notebook calls it in the cell
after `parameters`, before anything else can stop; importing this module, or `grpolab.notebook`, installs nothing.
"""

from __future__ import annotations

import ast

from IPython import get_ipython

from grpolab.notebook.display import NotebookStop

CHECK_CALL = "check_parameters("  # the cell after `parameters` calls it: it re-validates everything


class CellSkipped(NotebookStop):
    """A cell not run because a check above stopped the notebook."""


def _harmless(source: str) -> bool:
    """A cell that only imports or assigns literal values (the import cell, the parameters cell, papermill's
    injected one) or that re-runs the check: it may run after a stop."""
    if CHECK_CALL in source:
        return True
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        value = getattr(node, "value", None) if isinstance(node, (ast.Assign, ast.AnnAssign)) else False
        if value is None and isinstance(node, ast.AnnAssign):  # a bare annotation
            continue
        try:
            ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            return False
    return True


class Guard:
    """The kernel's record of the NotebookStop that stopped the notebook (None: nothing stopped it)."""

    stopped: str | None = None

    def transform(self, lines: list[str]) -> list[str]:
        """IPython input transformer: a cell after a stop becomes a CellSkipped error, unless harmless."""
        if self.stopped is None or _harmless("".join(lines)):
            return lines
        message = (
            f"not run: {self.stopped} stopped this notebook. Fix what it says (the cell tagged parameters), then "
            "run from there (Run All, or the parameters cell and the cells after it)"
        )
        return [f"raise __import__('grpolab.notebook.runall', fromlist=['_']).CellSkipped({message!r})\n"]

    def after(self, result) -> None:
        """IPython post_run_cell: remember a stop; forget it once the check cell has run through."""
        error = getattr(result, "error_in_exec", None) or getattr(result, "error_before_exec", None)
        source = getattr(getattr(result, "info", None), "raw_cell", "") or ""
        if isinstance(error, CellSkipped):
            return
        if isinstance(error, NotebookStop):
            first = (str(error).splitlines() or [""])[0]
            count = getattr(result, "execution_count", None)
            where = f"cell In [{count}]" if count is not None else "a cell above"
            self.stopped = f"{where} ({first[:160]})"
        elif error is None and CHECK_CALL in source:
            self.stopped = None


def install() -> None:
    """Install the guard in the running IPython kernel, once; nothing outside IPython."""
    shell = get_ipython()
    if shell is None or getattr(shell, "_grpolab_guard", None) is not None:
        return
    guard = Guard()
    shell._grpolab_guard = guard
    shell.input_transformers_post.append(guard.transform)
    shell.events.register("post_run_cell", guard.after)
