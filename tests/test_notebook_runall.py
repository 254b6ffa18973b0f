"""Run All after a failed check runs nothing below it, in a kernel as JupyterLab drives one: 01_setup's cells sent
one execute request each, into one kernel that keeps its state between two Run Alls (a good model, then a bad one).
The kernel itself refuses the later cells, so it holds whether or not the front end aborts its queue. One kernel,
a few seconds."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def kernel(tmp_path):
    from jupyter_client.manager import start_new_kernel

    env = {**os.environ, "GRPOLAB_RUNS": str(tmp_path / "runs")}
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(tmp_path), env=env)
    try:
        yield kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _settled(kc) -> None:
    """Wait until the kernel has left the aborting state an error with stop_on_error puts it in (ipykernel aborts
    what arrives meanwhile), as a person is slower than that: a trivial request that is answered, not aborted,
    says so (after a stop the kernel's guard answers it with CellSkipped, which is an answer). Sent without
    stop_on_error: with it (jupyter_client's default) that CellSkipped put the kernel back into the aborting state,
    and the next Run All's first cell was aborted whenever ipykernel's end-of-abort message came late (under load)."""
    for _ in range(200):
        reply = kc.execute("pass", reply=True, store_history=False, stop_on_error=False, timeout=60)
        if reply["content"]["status"] != "aborted":
            return
    raise AssertionError("the kernel kept aborting requests")


def _run_all(kc, cells: list[str], abort_on_error: bool) -> list[tuple[str, str]]:
    """(status, text shown) per cell, as a front end's Run All: every request sent at once with stop_on_error
    (JupyterLab), or one after the other without it (a front end that goes on)."""
    _settled(kc)
    if abort_on_error:
        ids = [kc.execute(src, stop_on_error=True) for src in cells]
    else:
        ids = []
    results = []
    for i, src in enumerate(cells):
        msg_id = ids[i] if abort_on_error else kc.execute(src, stop_on_error=False)
        texts, status = [], None
        while status is None:
            msg = kc.get_iopub_msg(timeout=120)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                texts.append(content["text"])
            elif kind in ("display_data", "execute_result"):
                texts.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                texts.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "status" and content["execution_state"] == "idle":
                status = "done"
        reply = kc.get_shell_msg(timeout=120)
        results.append((reply["content"]["status"], "".join(texts)))
    return results


def test_run_all_after_a_bad_model_runs_nothing_with_the_previous_recipe(kernel):
    book = nbformat.read(str(ROOT / "notebooks" / "01_setup.ipynb"), as_version=4)
    cells = [c.source for c in book.cells if c.cell_type == "code"]
    code = [c for c in book.cells if c.cell_type == "code"]
    index = next(i for i, c in enumerate(code) if "parameters" in c.metadata.get("tags", []))
    good = _run_all(kernel, cells, abort_on_error=False)
    assert all(status == "ok" for status, _ in good), good
    assert "recipe tiny: ready to launch" in good[-1][1]

    bad_cells = list(cells)
    bad_cells[index] = cells[index].replace('model: str = "tiny"', 'model: str = "tinyy"')
    assert bad_cells[index] != cells[index]
    for abort in (False, True):  # a front end that goes on after an error, and JupyterLab's aborted queue
        bad = _run_all(kernel, bad_cells, abort_on_error=abort)
        check = index + 1
        assert bad[check][0] == "error" and "no recipe named 'tinyy'" in bad[check][1], (abort, bad)
        for status, text in bad[check + 1 :]:
            assert status in ("error", "aborted"), (status, text)
            assert "ready to launch" not in text and "resolved recipe tiny" not in text
        said = [text for status, text in bad[check + 1 :] if status == "error"]
        assert abort or all("not run: cell In [" in t and "tinyy" in t for t in said), said

    again = _run_all(kernel, cells, abort_on_error=False)  # fixed: Run All works again in the same kernel
    assert all(status == "ok" for status, _ in again) and "ready to launch" in again[-1][1], again
