"""What papermill's terminal shows for GRPO Lab's notebooks: no kernel noise (ipykernel's start-up warning), no
cell counter bar for the notebooks' own lines to run into, a summary
at the end, a failed stage that never announces a run folder that will not exist, and a dry run's failed checks
named. No Ray: the failing run stops in 01_setup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat

from grpolab import notebook as nb
from grpolab.preflight.report import PreflightReport, Row

ROOT = Path(__file__).resolve().parents[1]
PAPERMILL = Path(sys.executable).with_name("papermill")


def _papermill(name: str, out: Path, *args: str, runs: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GRPOLAB_RUNS": str(runs)}
    env.pop("JPY_SESSION_NAME", None)
    return subprocess.run(  # as a user types it: papermill's own progress bar left at its default
        [str(PAPERMILL), str(ROOT / "notebooks" / f"{name}.ipynb"), str(out), *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=out.parent,
        env=env,
    )


def test_a_stage_notebook_leaves_the_terminal_to_what_it_says(tmp_path):
    out = tmp_path / "out.ipynb"
    proc = _papermill("01_setup", out, "-p", "model", "tiny", runs=tmp_path / "runs")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "IPKernelApp" not in proc.stderr and "without encryption" not in proc.stderr  # ipykernel's own log
    assert "Executing:" not in proc.stderr and "\r" not in proc.stderr  # no bar for a line to run into
    assert list(tmp_path.glob("*.log")) == []  # nothing written beside the output notebook


def test_a_failed_stage_ends_with_a_summary_and_announces_no_run_folder(tmp_path):
    out = tmp_path / "out.ipynb"
    runs = tmp_path / "runs"
    args = ["-p", "model", "tiny", "-p", "run_id", "never-made", "-y", "overrides: [algorithm.ppo_mini_batch_size=7]"]
    proc = _papermill("run", out, *args, runs=runs)
    assert proc.returncode != 0
    said = proc.stderr
    assert "01_setup: failed" in said and "run.ipynb summary:" in said
    summary = said[said.index("run.ipynb summary:") :]
    assert "01_setup      failed" in summary and "no run folder: nothing was submitted" in summary
    assert str(runs / ".scratch") in summary  # where the executed notebook is
    assert not (runs / "never-made").exists()
    shown = said + "".join(
        o.get("text", "") + str(o.get("data", {}).get("text/plain", ""))
        for c in nbformat.read(str(out), as_version=4).cells
        for o in c.get("outputs", [])
    )
    assert "never-made/notebooks" not in shown.split("01_setup: failed")[1]  # nothing promised after the failure
    assert "moves to" not in shown.split("01_setup: failed")[1]


def test_a_dry_runs_failed_checks_are_named_in_the_stage_table(tmp_path, capsys, monkeypatch):
    """02_preflight hands its failed checks to run.ipynb in the stage results file (no printed text read back)."""
    from grpolab import run_folder
    from grpolab.notebook.display import STAGE_RESULTS_VAR, stage_results

    report = PreflightReport(
        "glm5_2",
        [
            Row("devices", "node-a", "fail", "no NPU", "install"),
            Row("devices", "node-b", "fail", "no NPU", "install"),
            Row("torch_npu", "node-a", "fail", "missing", "pip install"),
            Row("env", "node-a", "ok", "fine"),
        ],
    )
    results = run_folder.stage_results(tmp_path)
    nb.preflight_verdict(report, dry_run=True)  # on its own: nothing handed over
    assert not results.exists()
    # as run.ipynb runs the stage: its kernel's environment names the file and the stage
    monkeypatch.setenv(STAGE_RESULTS_VAR, json.dumps({"file": str(results), "stage": "02_preflight"}))
    nb.preflight_verdict(report, dry_run=True)
    printed = capsys.readouterr().out
    assert "3 preflight check(s) fail (devices on 2 nodes, torch_npu)" in printed
    handed = stage_results(results)
    assert list(handed) == ["02_preflight"]
    assert nb.dry_run_failures(handed["02_preflight"]) == "ok, 3 checks fail (dry run: devices on 2 nodes, torch_npu)"
    assert nb.dry_run_failures({}) is None  # a stage that handed nothing over: a plain "ok"
