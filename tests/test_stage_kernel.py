"""run.ipynb's stage kernels write their own stderr (ipykernel's log, its shutdown race's traceback) to a log beside
the stage's executed notebook, never to papermill's terminal: a stage that ended well shows no traceback there."""

from __future__ import annotations

import nbformat

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
