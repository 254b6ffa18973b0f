"""`grpolab monitor` (through grpolab.cli.main), summary(), the curves PNG, and import hygiene."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from grpolab.jobs.runs import create_run
from grpolab.monitor import plot_curves, summary, synthetic
from grpolab.monitor.alerts import Alert

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

CUDA_OOM_LOG = """\
(TaskRunner pid=31207) step:3 - critic/score/mean:np.float64(0.2) - actor/pg_loss:np.float64(0.01)
(WorkerDict pid=31962) [rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.71 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.20 GiB is free.
(WorkerDict pid=31963) [rank1]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.
"""


def test_monitor_text_and_png(runs_root, monitor_cli, capsys):
    run = create_run("tiny", run_id="demo")
    synthetic.write_jsonl(run.metrics_file, synthetic.plant(synthetic.healthy(60), "entropy-collapse", 40))
    run.write_status(
        state="SUCCEEDED",
        job_id="raysubmit_123",
        wandb={"mode": "offline", "dir": str(run.path / "wandb"), "url": None},
    )
    assert monitor_cli(["monitor", "demo"]) == 1  # its entropy collapsed for good: a ruined run, not a success
    out = capsys.readouterr().out
    assert "SUCCEEDED, but training collapsed at step 40" in out and "last step 60" in out
    assert "critic/score/mean" in out and "val-core/arith/acc/mean@1" in out
    assert "entropy-collapse" in out and "step 40" in out
    assert f"wandb sync {run.path / 'wandb'}" in out
    png = run.path / "curves.png"
    assert f"curves    {png}" in out
    data = png.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 30_000  # twelve drawn panels, not an empty canvas


def test_monitor_json_is_the_summary(runs_root, monitor_cli, capsys, tmp_path):
    run = create_run("tiny", run_id="j")
    records = synthetic.plant(synthetic.healthy(30), "nan", 20)
    synthetic.write_jsonl(run.metrics_file, records)
    run.write_status(state="RUNNING")
    png = tmp_path / "out" / "c.png"
    assert monitor_cli(["monitor", "j", "--json", "--png", str(png)]) == 1  # NaN from step 20 on: collapsed
    printed = capsys.readouterr().out

    def not_json(constant):
        raise AssertionError(f"{constant} is not JSON")

    data = json.loads(printed, parse_constant=not_json)  # strict JSON: NaN comes out as the string "nan"
    assert data["run_id"] == "j" and data["state"] == "RUNNING" and data["collapse"]["rules"] == ["nan"]
    assert data["steps"] == 30 and data["last_step"] == 30
    assert [(a["rule"], a["step"]) for a in data["alerts"]] == [("nan", 20)]
    assert data["curves"] == str(png) and png.read_bytes().startswith(PNG_MAGIC)
    latest = {m["metric"]: m for m in data["latest"]}
    assert latest["critic/score/mean"]["step"] == 30
    expected = summary("j", refresh=False)
    assert {k: v for k, v in expected.items() if k not in ("curves", "updated")} == {
        k: v for k, v in data.items() if k not in ("curves", "updated")
    }


def test_failed_run_shows_cause_and_exits_1(runs_root, monitor_cli, capsys):
    run = create_run("tiny", run_id="boom")
    run.job_log.write_text(CUDA_OOM_LOG)
    run.write_status(state="FAILED", message="Job entrypoint command failed with exit code 1")
    assert monitor_cli(["monitor", "boom", "--no-png"]) == 1
    out = capsys.readouterr().out
    assert "failure   device-oom" in out and "fix:" in out
    assert "L2 | (WorkerDict pid=31962) [rank0]: torch.OutOfMemoryError: CUDA out of memory" in out
    # no metrics.jsonl: the console line in the job log gave the steps
    assert "last step 3" in out and "console lines" in out
    assert not (run.path / "curves.png").exists()


def test_failed_run_without_known_cause(runs_root, monitor_cli, capsys):
    run = create_run("tiny", run_id="odd")
    run.job_log.write_text("starting\nall good so far\n")
    run.write_status(state="FAILED", message="Job was stopped by the node going away")
    assert monitor_cli(["monitor", "odd", "--json", "--no-png"]) == 1
    failure = json.loads(capsys.readouterr().out)["failure"]
    assert failure["cause"] == "unknown" and "all good so far" in failure["lines"]


def test_pending_run_without_metrics(runs_root, monitor_cli, capsys):
    create_run("tiny", run_id="fresh")
    assert monitor_cli(["monitor", "fresh"]) == 0
    out = capsys.readouterr().out
    assert "PENDING" in out and "none yet" in out and "alerts    none" in out


def test_metrics_file_as_run(tmp_path, monitor_cli, capsys):
    path = synthetic.write_jsonl(tmp_path / "somewhere" / "metrics.jsonl", synthetic.healthy(12))
    assert monitor_cli(["monitor", str(path), "--no-png"]) == 0
    out = capsys.readouterr().out
    assert "UNKNOWN" in out and "last step 12" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["monitor", "ghost"], "no run 'ghost'"),
        (["monitor", "demo", "--thresholds", "/nonexistent.yaml"], "no such thresholds file"),
        (["monitor", "demo", "--png", "x.png", "--no-png"], "contradict"),
    ],
)
def test_unusable_input_exits_2_without_traceback(runs_root, monitor_cli, capsys, argv, message):
    create_run("tiny", run_id="demo")
    assert monitor_cli(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_directory_that_is_not_a_run(tmp_path, monitor_cli, capsys):
    (tmp_path / "empty").mkdir()
    assert monitor_cli(["monitor", str(tmp_path / "empty")]) == 2
    assert "is not a run directory" in capsys.readouterr().err


def test_unwritable_png_is_a_note_not_a_crash(runs_root, monitor_cli, capsys, tmp_path):
    run = create_run("tiny", run_id="ro")
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(5))
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert monitor_cli(["monitor", "ro", "--png", str(blocker / "sub" / "c.png")]) == 0
    assert "could not write the curves" in capsys.readouterr().out


def test_refresh_uses_launch_when_present_and_survives_its_errors(runs_root, monkeypatch):
    from grpolab.jobs import state  # its Ray calls are replaced: there is no job behind this run

    run = create_run("tiny", run_id="live")
    run.write_status(state="RUNNING", job_id="raysubmit_1")
    calls = []

    def refresh_status(r):
        calls.append(r.run_id)
        return r.write_status(state="SUCCEEDED")

    monkeypatch.setattr(state, "refresh", refresh_status)
    assert summary("live")["state"] == "SUCCEEDED" and calls == ["live"]
    assert summary("live")["state"] == "SUCCEEDED" and calls == ["live"]  # terminal: Ray is not asked again

    run.write_status(state="RUNNING")

    def unreachable(r):
        raise ConnectionError("Ray at 127.0.0.1:8265 is not reachable")

    monkeypatch.setattr(state, "refresh", unreachable)
    data = summary("live")
    assert data["state"] == "RUNNING" and "not reachable" in data["notes"][0]


def test_plot_marks_alerts_and_says_no_data(tmp_path):
    path = synthetic.write_jsonl(
        tmp_path / "m.jsonl", [{"step": s, "data": {"critic/score/mean": s / 10}} for s in range(1, 6)]
    )
    alert = Alert("reward-flat", 2, "flat", ("critic/score/mean",), 0.2)
    out = plot_curves(path, [alert], tmp_path / "sparse.png")
    assert out.read_bytes().startswith(PNG_MAGIC) and out.stat().st_size > 10_000
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert plot_curves(empty, [], tmp_path / "empty.png").read_bytes().startswith(PNG_MAGIC)


def test_importing_the_monitor_stays_light():
    code = (
        "import sys, grpolab.monitor, grpolab.cli.monitor, grpolab.cli.compare; "
        "heavy = [m for m in ('matplotlib', 'ipywidgets', 'IPython', 'pandas', 'numpy', 'torch', 'ray') "
        "if m in sys.modules]; print(heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_notes_on_what_the_metrics_file_itself_says(runs_root):
    empty = create_run("tiny", run_id="finished-empty")
    empty.write_status(state="SUCCEEDED")
    notes = summary("finished-empty", refresh=False)["notes"]
    assert any("SUCCEEDED but logged no metrics" in n and "(missing)" in n for n in notes), notes

    odd = create_run("tiny", run_id="odd-values")
    records = synthetic.healthy(12)
    records[3]["data"]["critic/score/mean"] = "n/a"  # a string: dropped from the curves and the alerts
    records[4]["data"]["critic/score/mean"] = "n/a"
    synthetic.write_jsonl(odd.metrics_file, records + [records[5]])  # step 6 logged twice (a resumed run)
    odd.write_status(state="RUNNING")
    notes = summary("odd-values", refresh=False)["notes"]
    assert "values that are not numbers were dropped: critic/score/mean (2)" in notes
    assert "1 step(s) logged more than once; later values win" in notes


def test_the_summary_groups_alerts_and_names_the_thresholds(runs_root, monitor_cli, capsys):
    run = create_run("tiny", run_id="grouped-text")
    synthetic.write_jsonl(run.metrics_file, synthetic.plant(synthetic.healthy(60), "entropy-collapse", 30))
    run.write_status(state="SUCCEEDED")
    assert monitor_cli(["monitor", "grouped-text", "--no-png", "--no-refresh"]) == 1  # collapsed at step 30
    out = capsys.readouterr().out
    assert "alerts    1 in 1 rule(s)" in out and "ERROR   entropy-collapse  1 episode(s), steps 30-60" in out
    assert out.count("try: ") == 1 and "limits    " in out and "base.yaml (monitor:)" in out


def test_a_bare_metrics_file_with_a_recipes_thresholds(monitor_cli, capsys):
    from pathlib import Path

    healthy_tiny = Path(__file__).resolve().parent / "data" / "monitor" / "tiny_seed1.jsonl"
    assert monitor_cli(["monitor", str(healthy_tiny), "--no-png", "--thresholds", "tiny"]) == 0
    out = capsys.readouterr().out
    assert "alerts    none" in out and "limits    recipe tiny (monitor:)" in out
