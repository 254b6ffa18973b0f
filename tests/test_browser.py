"""04_monitor in a real browser: JupyterLab (started as `grpolab lab` starts it) driven in Debian's Chromium by
playwright (tests/browser/drive_lab.py, in its own venv .venv-browser; `scripts/setup.sh --tools` installs both).

A run that a trainer is writing (its record RUNNING, metrics.jsonl growing; no Ray: the views read the run's files)
is opened with JupyterLab's own Run All. The run is asynchronous (verl's off-policy metrics): its cell shows the
staleness and importance-ratio figures and their curves. The comparison chart and the dashboard's state line follow
the new steps within a refresh; the page says "live" while the kernel refreshes it. Saved mid-run, its kernel shut
down, the run ended meanwhile and the page reloaded, the notebook says "as of" and how to reconnect, claims nothing
is refreshing it, and its summary claims nothing current ("running for", "updated 1 s ago"). 04_monitor on a run
whose training collapsed (a real tiny run at lr 1000) shows it in red in its state and its alerts, and on a FAILED
run (a real failure log) the diagnosis with its fix. Then 01_setup's Run All with model 'tinyy' after a good run in
the same kernel shows nothing of the earlier recipe below the check cell, and a misspelled name typed into the
parameters cell (`overide = [...]`, `modle = "tiny"`) stops it there with "did you mean". The live run was
restarted once by its driver and two nodes sampled it, one a straggler: the page says so. JupyterLab and Chromium
are stopped at the end, and no process of theirs is left. About a minute and a half.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
import yaml

from grpolab.cli.lab import WORKSPACES_DIR, prepare
from grpolab.jobs.runs import create_run
from grpolab.monitor import synthetic
from grpolab.recipe.loader import load_recipe, to_yaml

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
    for record in records:  # an asynchronous run (issue 42): the off-policy metrics verl's V1 trainer logs
        step = record["step"]
        record["data"]["training/off_policy/trajectory_staleness/mean"] = 1.0 if step > 1 else 0.0
        record["data"]["training/off_policy/trajectory_staleness/max"] = 2.0 if step > 1 else 0.0
        record["data"]["rollout_corr/rollout_is_mean"] = 1.0 + 0.02 * ((step % 5) - 2)
    synthetic.write_jsonl(run.metrics_file, records[:30])
    run.write_status(state="RUNNING", total_steps=90)
    _plant_a_healed_run_with_a_straggler(run.path)
    pending = tmp_path / "pending.jsonl"
    pending.write_text("".join(json.dumps(r) + "\n" for r in records[30:]))
    # two ended runs, recorded as their jobs leave them: a real tiny run at lr 1000 (its training collapsed at step
    # 2) and a run whose job died of a real failure (verl issue 2828's log: CUDA out of memory)
    collapsed = create_run("tiny", run_id="browser-collapsed", root=runs, recipe="tiny")
    collapsed.recipe_file.write_text(to_yaml(load_recipe("tiny")))
    shutil.copyfile(ROOT / "tests" / "data" / "monitor" / "tiny_lr1000.jsonl", collapsed.metrics_file)
    collapsed.write_status(state="SUCCEEDED")
    failed = create_run("tiny", run_id="browser-failed", root=runs, recipe="tiny")
    failed.job_log.write_text(
        yaml.safe_load((ROOT / "tests" / "data" / "failures" / "verl-2828.yaml").read_text())["log"]
    )
    failed.write_status(state="FAILED", message="Job entrypoint command failed with exit code 1")
    lab = tmp_path / "lab"
    prepare(lab)  # grpolab lab's working copies and settings (widget state saved with the notebook)
    path = lab / "04_monitor.ipynb"
    book = nbformat.read(str(path), as_version=4)
    cell = next(c for c in book.cells if "parameters" in c.metadata.get("tags", []))
    cell.source = cell.source.replace("interval: float = 5.0", "interval: float = 1.0")  # a quicker refresh
    cell.source = cell.source.replace("run_id: Optional[str] = None", 'run_id: Optional[str] = "browser-live"')
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
    # the asynchronous run's cell: its off-policy figures and, inline, the staleness and importance-ratio curves
    assert "off-policy staleness" in seen["offpolicy"]["alt"] and "importance ratio" in seen["offpolicy"]["alt"]
    assert "off-policy staleness: 1 model versions now" in seen["offpolicy"]["text"]
    assert "importance ratio (rollout IS weight, mean):" in seen["offpolicy"]["text"]
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
    # the run ended while no kernel watched it: its saved summary claims nothing current (issue 44)
    assert "running for" not in reopened and not re.search(r"updated \d+ s ago", reopened), reopened
    # a ruined run is said so, in its state and its alerts; a failed one shows its diagnosis and the fix
    shown = "\n".join(seen["ended"]["collapsed"])
    assert "SUCCEEDED, but training collapsed at step 2" in shown and "ERROR grad-vanish" in " ".join(shown.split())
    shown = "\n".join(seen["ended"]["failed"])
    assert re.search(r"failure +device-oom: ", shown) and "fix: " in shown and "cause registry" not in shown
    # JupyterLab's own Run All after a bad model: the check cell stops, and no later cell shows the earlier run's
    # recipe ("recipe tiny: ready to launch")
    good, bad = seen["run_all"]["good"], seen["run_all"]["bad"]
    check = next(i for i, text in enumerate(bad) if "no recipe named 'tinyy'" in text)
    assert "ready to launch" in good[-1]
    assert all("ready to launch" not in text and "resolved recipe tiny" not in text for text in bad[check + 1 :]), bad
    # a misspelled name typed into the parameters cell (nothing injected in JupyterLab) stops at the check cell
    for name, near in (("overide", "overrides"), ("modle", "model")):
        cells = seen["misspelled"][name]
        check = next(i for i, text in enumerate(cells) if f"unknown parameter '{name}': did you mean '{near}'?" in text)
        assert all("ready to launch" not in text for text in cells[check + 1 :]), cells
    time.sleep(1)
    assert _ours(str(tmp_path)) == [] and _ours(f"port={PORT}") == []  # nothing left running
    # JupyterLab's layout was kept in the working folder (a lab folder reopens its own tabs), never in ~/.jupyter,
    # whose layout from another folder once opened 01_setup over the 04_monitor this test asked for
    assert list((lab / WORKSPACES_DIR).glob("*.jupyterlab-workspace")) and _listing(home_workspaces) == before
