"""04_monitor in a real browser: JupyterLab (started as `grpolab lab` starts it) driven in Debian's Chromium by
playwright (tests/browser/drive_lab.py, in its own venv .venv-browser; `scripts/setup.sh --tools` installs both).

A run that a trainer is writing (its record RUNNING, metrics.jsonl growing; no Ray: the views read the run's files)
is opened with JupyterLab's own Run All. The comparison chart and the dashboard's state line follow the new steps
within a refresh; the page says "live" while the kernel refreshes it. Saved mid-run, its kernel shut down and the
page reloaded, the notebook says "as of" and how to reconnect, and claims nothing is refreshing it. Then 01_setup's
Run All with model 'tinyy' after a good run in the same kernel shows nothing of the earlier recipe below the check
cell. The run was restarted once by its driver and two nodes sampled it, one a straggler: the page says so.
JupyterLab and Chromium are stopped at the end, and no process of theirs is left. About a minute.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from grpolab.cli.lab import WORKSPACES_DIR, prepare
from grpolab.jobs.runs import create_run
from grpolab.monitor import synthetic

ROOT = Path(__file__).resolve().parents[1]
BROWSER_PYTHON = ROOT / ".venv-browser" / "bin" / "python"
PORT = 18800 + int(os.environ.get("GRPOLAB_TEST_PORT_OFFSET", "0") or 0) % 1000
TOKEN = "grpolab-browser-test"

pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None or not BROWSER_PYTHON.exists(),
    reason="needs Debian's chromium and playwright in .venv-browser: bash scripts/setup.sh --tools",
)


def _ours(marker: str) -> list[str]:
    """Processes whose command line or environment names `marker` (this test's folder or port; a kernel carries
    the folder in GRPOLAB_RUNS): none may be left."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout.splitlines()[1:]
    found = []
    for line in out:
        pid = line.split(None, 1)[0]
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
        except OSError:
            environ = ""
        if (marker in line or marker in environ) and "ps -eo" not in line and int(pid) != os.getpid():
            found.append(line)
    return found


def _listing(folder: Path) -> dict[str, int]:
    """The files of a folder with their modification times (nothing if it does not exist)."""
    return {p.name: p.stat().st_mtime_ns for p in folder.glob("*")} if folder.is_dir() else {}


def _wait_for_lab(proc) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"JupyterLab exited with {proc.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/api/status?token={TOKEN}", timeout=2).read()
            return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("JupyterLab did not answer within 60 s")


def _plant_a_healed_run_with_a_straggler(run_dir: Path) -> None:
    """The run's driver restarted it once (its lineage), and its telemetry shows two nodes, one far less busy."""
    from grpolab.jobs import lineage

    now = time.time()
    lineage.write(
        run_dir,
        {
            "attempts": [
                {"number": 1, "decision": "restart", "cause": "worker-died", "node": "10.0.0.7", "step": 12,
                 "restart": 1, "of": 3, "ended": now - 60},
                {"number": 2, "decision": "running", "resumed_from": {"step": 10}, "excluded": [], "started": now - 55},
            ]
        },
    )  # fmt: skip
    (run_dir / "telemetry").mkdir()
    for node, util in (("aaaaaaaaaaaa", 92), ("bbbbbbbbbbbb", 15)):
        with open(run_dir / "telemetry" / f"{node}.jsonl", "w") as fh:
            for i in range(30):
                sample = {"t": now - 300 + 10 * i, "node_id": node * 4, "address": f"10.0.0.{7 if node[0] == 'a' else 8}",
                          "host_mem_used_gb": 200, "host_mem_total_gb": 1000, "cpu_pct": 40, "device_tool": "npu-smi",
                          "devices": [{"device": "0.0", "util_pct": util, "mem_used_mb": 30000, "mem_total_mb": 65536}]}  # fmt: skip
                fh.write(json.dumps(sample) + "\n")


@pytest.mark.slow(60)
def test_live_chart_follows_a_run_in_jupyterlab_and_a_reopened_notebook_says_as_of(tmp_path):
    runs = tmp_path / "runs"
    run = create_run("tiny", run_id="browser-live", root=runs)
    records = synthetic.healthy(90)
    synthetic.write_jsonl(run.metrics_file, records[:30])
    run.write_status(state="RUNNING", total_steps=90)
    _plant_a_healed_run_with_a_straggler(run.path)
    pending = tmp_path / "pending.jsonl"
    pending.write_text("".join(json.dumps(r) + "\n" for r in records[30:]))
    lab = tmp_path / "lab"
    prepare(lab)  # grpolab lab's working copies and settings (widget state saved with the notebook)
    path = lab / "04_monitor.ipynb"
    book = nbformat.read(str(path), as_version=4)
    cell = next(c for c in book.cells if "parameters" in c.metadata.get("tags", []))
    cell.source = cell.source.replace("interval: float = 5.0", "interval: float = 1.0")  # a quicker refresh
    nbformat.write(book, str(path))

    home_workspaces = Path.home() / ".jupyter" / "lab" / "workspaces"
    before = _listing(home_workspaces)
    env = {**os.environ, "GRPOLAB_RUNS": str(runs)}
    grpolab = Path(sys.executable).with_name("grpolab")
    cmd = [str(grpolab), "lab", "--dir", str(lab), "--port", str(PORT), "--no-browser", "--"]
    cmd += [f"--IdentityProvider.token={TOKEN}", "--LabApp.expose_app_in_browser=True"]
    server = subprocess.Popen(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=open(tmp_path / "lab.log", "w"), start_new_session=True
    )
    try:
        _wait_for_lab(server)
        url = f"http://127.0.0.1:{PORT}/lab/tree/04_monitor.ipynb?token={TOKEN}"
        drive = subprocess.run(
            [str(BROWSER_PYTHON), str(ROOT / "tests" / "browser" / "drive_lab.py")]
            + [url, str(run.metrics_file), str(pending), str(tmp_path / "shots")],
            capture_output=True,
            text=True,
            timeout=540,
        )
        lab_log = (tmp_path / "lab.log").read_text(errors="replace")[-2000:]
        assert drive.returncode == 0, drive.stderr[-3000:] + "\n--- JupyterLab's log ---\n" + lab_log
        seen = json.loads(drive.stdout)
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # JupyterLab and the kernels it started
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
    assert seen["first_chart"] == 30
    for point in seen["follow"]:  # each chunk of new steps: the chart and the state line caught up, live
        assert point["chart"] == point["wanted"] and point["state"] == point["wanted"], seen["follow"]
        assert point["live"]
    assert "as of" in seen["live_text"] and "live: refreshing every 1 s" in seen["live_text"]
    # the run's restarts and its nodes (issue 43): the restart on the state line and in the summary, every attempt,
    # the nodes sampled and the straggler named
    live = seen["live_text"]
    assert live.count("restart 1 of 3 after worker-died on node 10.0.0.7 at step 12") >= 2, live[-3000:]
    assert "attempt 2 (from step 10): running since" in live
    assert "nodes     2 sampled (npu-smi)" in live and "node 10.0.0.8 (bbbbbbbb) is a straggler" in live
    reopened = seen["reopened_text"]
    assert "as of" in reopened and "run this cell again to reconnect" in reopened
    assert "refreshing" not in reopened and "Stop run cannot act" in reopened
    # JupyterLab's own Run All after a bad model: the check cell stops, and no later cell shows the earlier run's
    # recipe ("recipe tiny: ready to launch")
    good, bad = seen["run_all"]["good"], seen["run_all"]["bad"]
    check = next(i for i, text in enumerate(bad) if "no recipe named 'tinyy'" in text)
    assert "ready to launch" in good[-1]
    assert all("ready to launch" not in text and "resolved recipe tiny" not in text for text in bad[check + 1 :]), bad
    time.sleep(1)
    assert _ours(str(tmp_path)) == [] and _ours(f"port={PORT}") == []  # nothing left running
    # JupyterLab's layout was kept in the working folder (a lab folder reopens its own tabs), never in ~/.jupyter,
    # whose layout from another folder once opened 01_setup over the 04_monitor this test asked for
    assert list((lab / WORKSPACES_DIR).glob("*.jupyterlab-workspace")) and _listing(home_workspaces) == before
