"""run.ipynb's stage kernels write their own stderr (ipykernel's log, its shutdown race's traceback) to a log beside
the stage's executed notebook, never to papermill's terminal: a stage that ended well shows no traceback there, and a
stage that failed names the log in run.ipynb's error."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from grpolab import notebook as nb
from grpolab.notebook.kernel import execute_stage, kept_log, kernel_log


def test_a_stage_kernels_stderr_goes_to_its_log_and_an_empty_log_is_removed(tmp_path, capfd):
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell("import os\nos.write(2, b'Traceback: the kernel process itself\\n')")]
    source, out = tmp_path / "stage.ipynb", tmp_path / "stage.out.ipynb"
    log = kernel_log(out)
    assert log == tmp_path / "stage.out.kernel.log"
    nbformat.write(book, str(source))
    execute_stage(source, out)
    assert "Traceback" not in capfd.readouterr().err  # the terminal papermill writes to
    assert kept_log(log) == log and "the kernel process itself" in log.read_text()

    empty = tmp_path / "quiet.kernel.log"
    empty.touch()
    assert kept_log(empty) is None and not empty.exists()


def test_a_failed_stage_names_its_kernels_log(tmp_path, stage_notebooks):
    """A stage that fails after its kernel process wrote to stderr: run.ipynb's error names the kept log, which
    holds what the kernel wrote (the stage's own traceback is in its notebook)."""
    code = "import os\nos.write(2, b'the kernel said this on its stderr\\n')\nraise RuntimeError('stage broke')"
    folder = stage_notebooks(tmp_path / "stages", code)
    stages = nb.Stages({"model": "tiny", "overrides": [], "dry_run": True, "ray_address": None}, notebooks=folder)
    with pytest.raises(nb.NotebookStop) as stop:
        stages.run("01_setup", model="tiny", overrides=[])
    message = str(stop.value)
    assert "stage 01_setup failed" in message and "RuntimeError" in message and "stage broke" in message
    named = message.split("the stage kernel's own log: ")[1].split(")")[0]
    assert Path(named) == kernel_log(Path(stages.stages[0]["notebook"]))
    assert "the kernel said this on its stderr" in Path(named).read_text()
