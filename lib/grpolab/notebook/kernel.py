"""The kernel manager of run.ipynb's stage kernels: a stage kernel's own stderr goes to a log file beside the
stage's executed notebook, not to papermill's terminal.

What a stage prints is in its notebook (ipykernel sends it there); the kernel process's own stderr carries only
ipykernel's log. Under load that log can hold a traceback of ipykernel's shutdown race (the control thread
flushing stdout while the IOPub socket closes: "ZMQError: Socket operation on non-socket", ipython/ipykernel
#1518), after the stage has ended well, which papermill's terminal would show as if the run had failed. The log
is kept when it says something (named in the stage's error when the stage fails) and removed when empty.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from grpolab import owned
from grpolab.notebook.display import KERNEL, KERNEL_ARGS


def kernel_log(notebook: Path) -> Path:
    """Where the stage kernel that executed `notebook` writes its own stderr: beside it, `<stage>.kernel.log`."""
    return Path(notebook).with_suffix(".kernel.log")


def execute_stage(source: Path, output: Path, parameters: dict | None = None, cwd: Path | None = None) -> None:
    """papermill's execute_notebook as run.ipynb runs a stage: our kernel and its arguments, no progress bar and no
    echo of the outputs, the kernel's own stderr to kernel_log(output). papermill's errors pass through."""
    # lazy: papermill (only run.ipynb's stage runner executes notebooks)
    import papermill

    papermill.execute_notebook(
        str(source),
        str(output),
        parameters=parameters or {},
        kernel_name=KERNEL,
        progress_bar=False,
        log_output=False,
        cwd=None if cwd is None else str(cwd),
        extra_arguments=KERNEL_ARGS,
        kernel_manager_class=kernel_manager_for(kernel_log(output)),
    )


def kernel_manager_for(log: Path):
    """A jupyter_client kernel manager class (papermill's `kernel_manager_class`) whose kernels write their
    stderr to `log` (appended)."""
    # lazy: jupyter_client (only run.ipynb's stage runner starts kernels)
    from jupyter_client.manager import AsyncKernelManager

    class StageKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw):
            log.parent.mkdir(parents=True, exist_ok=True)
            with open(log, "ab") as stderr:  # the kernel process keeps its own copy of the descriptor
                await super().start_kernel(stderr=stderr, **kw)

    return StageKernelManager


def kept_log(log: Path) -> Path | None:
    """The log when it says something; an empty one is removed."""
    with contextlib.suppress(OSError):
        if log.stat().st_size:
            return log
        owned.remove_file(log)
    return None
