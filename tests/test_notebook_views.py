"""The notebooks' views without a kernel: the run-record differ, the overlaid chart and its PNG twin, single-point
charts, `grpolab lab`'s working copies, progress lines on papermill's terminal, papermill's stop report, list
parameters given with -p, tables with no rows. Fast: no Ray, no kernel."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from grpolab import notebook as nb
from grpolab.jobs.runs import Run, create_run
from grpolab.monitor import synthetic
from grpolab.monitor.metrics import MetricsView

ROOT = Path(__file__).resolve().parents[1]


def _run(root: Path, run_id: str, steps: int, seed: int, launch: dict, recipe: str = "") -> Run:
    run = create_run("tiny", run_id=run_id, root=root)
    run.launch_file.write_text(json.dumps({"run_id": run_id, "created": seed, "entrypoint": f"x {run_id}", **launch}))
    run.recipe_file.write_text(recipe or "train: {tp: 1}\ntrainer: {total_steps: 40}\n")
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(steps, seed=seed))
    return run


def test_differences_come_from_the_records_and_take_fields_the_differ_never_heard_of(tmp_path):
    from grpolab.monitor.rundiff import ABSENT, differences

    a = _run(tmp_path, "a", 5, 1, {"versions": {"verl": "0.9.1", "torch": "2.13.0"}, "git_commit": "abc"})
    b = _run(
        tmp_path,
        "b",
        5,
        2,
        # a later record format: a seed and a data fingerprint this module has no code for
        {"versions": {"verl": "0.9.2", "torch": "2.13.0"}, "git_commit": "abc", "seed": 7, "data": {"train": "f00"}},
        recipe="train: {tp: 2}\ntrainer: {total_steps: 40}\n",
    )
    found = {d.key: d.values for d in differences([a, b])}
    assert found == {
        "recipe.train.tp": (1, 2),
        "stack.verl": ("0.9.1", "0.9.2"),
        "launch.seed": (ABSENT, 7),
        "launch.data.train": (ABSENT, "f00"),
    }  # run ids, creation times and entrypoints differ by construction: never listed
    assert list(found)[0].startswith("recipe.") and differences([a]) == []


def test_overlay_draws_every_run_on_the_chosen_x_axis_and_keeps_the_smoothing(tmp_path):
    from grpolab.monitor.overlay import Overlay, wall_clock

    a = MetricsView.for_run(_run(tmp_path, "a", 30, 1, {}))
    b = MetricsView.for_run(_run(tmp_path, "b", 20, 2, {}))
    a.refresh(), b.refresh()
    clock = wall_clock(a)
    steps, times = a.series("timing_s/step")
    assert clock[steps[2]] == pytest.approx(sum(times[:3]), abs=1e-3)  # summed step times, from the first step
    chart = Overlay({"a": a, "b": b}, smooth=0.6)
    assert chart.heading() == "2 runs, smoothing 0.6"
    assert [chart.legend_name(label) for label in chart.views] == ["a (30 steps)", "b (20 steps)"]
    bundle = chart.bundle()
    assert set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/html"].startswith("<img src='data:image/png;base64,iVBOR")
    assert "alt='2 runs, smoothing 0.6; x: step; a (30 steps); b (20 steps)'" in bundle["text/html"]
    assert "a (30 steps): reward" in bundle["text/plain"]
    assert len(json.dumps(bundle)) < 400_000  # two runs stay small enough to save in a notebook
    wall = Overlay({"a": a, "b": b}, x="wall").png()
    assert wall.startswith(b"\x89PNG") and wall != Overlay({"a": a, "b": b}).png()  # another x axis, drawn
    with pytest.raises(ValueError, match="smoothing"):
        Overlay({"a": a}, smooth=1.0)
    with pytest.raises(ValueError, match="x must be one of step, wall"):
        Overlay({"a": a}, x="time")


def test_a_single_point_chart_keeps_readable_y_labels(tmp_path):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from grpolab.monitor.plots import single_point_limits

    fig = Figure()
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.plot([1], [0.48734], marker="o")
    single_point_limits(ax)
    low, high = ax.get_ylim()
    assert low < 0.48734 < high and high - low > 0.05  # a range of its own, not 0.48734 +- 1e-6
    assert ax.get_xlim() == (0, 2)
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all(len(t) <= 6 for t in labels), labels  # no offset notation cut at the margin


def test_grpolab_lab_works_on_copies_and_keeps_the_users(tmp_path, capsys):
    from grpolab.cli import main
    from grpolab.cli.lab import command, prepare
    from grpolab.paths import runs_dir

    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "03_launch.ipynb").write_text("{}")  # the user's own copy
    # --dry-run starts nothing and writes nothing (issue 44: it used to copy the notebooks): it says what it would do
    assert main(["lab", "--dir", str(folder), "--dry-run", "--port", "9999", "--", "--ServerApp.X=1"]) == 0
    said = capsys.readouterr().out
    assert os.listdir(folder) == ["03_launch.ipynb"] and "would copy 01_setup.ipynb" in said
    assert "kept your copies of 03_launch.ipynb" in said and "nothing is written or started" in said
    command_line = said.strip().splitlines()[-1]
    assert "--ServerApp.ip=127.0.0.1" in command_line and "--port=9999" in command_line
    assert command_line.endswith("--ServerApp.X=1") and "token" not in command_line  # Jupyter's own token stays on
    assert f"--ServerApp.root_dir={folder}" in command_line
    assert f"--LabApp.workspaces_dir={folder / '.lab-workspaces'}" in command_line  # its tabs are the folder's
    assert main(["lab", "--dry-run", "--port", "9999"]) == 0 and not (runs_dir() / "lab").exists()  # nor runs/lab
    # what `grpolab lab` does before it starts JupyterLab: the copies, the user's kept, the settings file
    assert prepare(folder) == (sorted(set(TEMPLATES) - {"03_launch.ipynb"}), ["03_launch.ipynb"])
    assert sorted(p.name for p in folder.glob("*.ipynb")) == TEMPLATES
    assert (folder / "03_launch.ipynb").read_text() == "{}"
    settings = json.loads((folder / ".lab-settings" / "overrides.json").read_text())
    assert settings == {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}
    assert command(folder, 9999, True) == command_line.split()[:-1]


TEMPLATES = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def test_progress_lines_reach_the_kernels_own_stderr(monkeypatch):
    """In a kernel, ipykernel keeps the process's real stderr as `_original_stdstream_copy`: papermill's terminal."""
    read, write = os.pipe()

    class KernelStderr:
        _original_stdstream_copy = write

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delenv(nb.display.STAGE_KERNEL_VAR, raising=False)
    monkeypatch.setattr(sys, "stderr", KernelStderr())
    nb.to_terminal("step 3/40 (8 %)")
    monkeypatch.setenv(nb.display.STAGE_KERNEL_VAR, str(os.getpid() + 1))  # a stage kernel of run.ipynb: silent
    nb.to_terminal("not shown")
    monkeypatch.setenv(nb.display.STAGE_KERNEL_VAR, str(os.getpid()))  # run.ipynb's own kernel: shown
    nb.to_terminal("04_monitor: running ...")
    monkeypatch.setenv("JPY_SESSION_NAME", "x.ipynb")  # JupyterLab: no terminal to write to
    nb.to_terminal("not shown either")
    os.close(write)
    assert os.read(read, 4096).decode() == "step 3/40 (8 %)\n04_monitor: running ...\n"
    os.close(read)
    monkeypatch.setattr(sys, "stderr", sys.__stderr__)  # plain Python: print reached the terminal, nothing more
    monkeypatch.delenv("JPY_SESSION_NAME")
    written = []
    monkeypatch.setattr(os, "write", lambda fd, data: written.append(fd))
    nb.to_terminal("plain")
    assert written == []


def test_papermill_reports_a_notebook_stop_in_two_lines(monkeypatch):
    from papermill.exceptions import PapermillExecutionError

    from grpolab.notebook.papermill_hook import report

    monkeypatch.setattr(sys, "argv", ["papermill", "in.ipynb", "out.ipynb"])
    stop = PapermillExecutionError(4, 4, "src", "NotebookStop", "no recipe named 'tinny'", ["NotebookStop: x"])
    assert report(stop) == "papermill: the notebook stopped in cell In [4] (the full output: out.ipynb)\n" + (
        "no recipe named 'tinny'"
    )
    assert report(PapermillExecutionError(1, 1, "s", "ValueError", "v", [])) is None  # papermill's own report
    assert report(ValueError("x")) is None


def test_list_parameters_given_with_p_are_read_as_yaml_lists():
    ns = {"__annotations__": {"runs": list[str]}, "runs": "[tiny-a, tiny-b]", "In": ["x"]}
    assert nb.check_parameters(ns) == {"runs": ["tiny-a", "tiny-b"]} and ns["runs"] == ["tiny-a", "tiny-b"]
    ns = {"__annotations__": {"runs": list[str]}, "runs": "tiny-a", "In": ["x"]}
    with pytest.raises(nb.NotebookStop, match=r'-y "runs: \[tiny-a\]"'):
        nb.check_parameters(ns)


def test_a_table_with_no_rows_says_none():
    assert nb.table_html(["a", "b"], [], []) == "<p><i>(none)</i></p>"
    assert "<th" in nb.table_html(["a"], [["1"]], [None])


def test_setup_makes_a_plain_jupyter_lab_save_widget_state_keeping_the_users_overrides(tmp_path):
    """scripts/setup.sh runs `python -m grpolab.cli.lab .venv/share/jupyter/lab/settings`: a plain `jupyter lab`
    from the environment then saves widget state (a saved notebook shows its bars, not "model not found"), and a
    user's own overrides stay."""
    import subprocess

    settings = tmp_path / "settings"
    settings.mkdir()
    (settings / "overrides.json").write_text(json.dumps({"@jupyterlab/apputils-extension:themes": {"theme": "dark"}}))
    for _ in range(2):  # a second setup changes nothing
        out = subprocess.run([sys.executable, "-m", "grpolab.cli.lab", str(settings)], capture_output=True, text=True)
        assert out.returncode == 0 and "saves widget state" in out.stdout, out.stderr
    written = json.loads((settings / "overrides.json").read_text())
    assert written["@jupyter-widgets/jupyterlab-manager:plugin"] == {"saveState": True}
    assert written["@jupyterlab/apputils-extension:themes"] == {"theme": "dark"}
    assert (
        "grpolab.cli.lab .venv/share/jupyter/lab/settings"
        in (Path(__file__).parents[1] / "scripts/setup.sh").read_text()
    )


def _inside(fig) -> bool:
    """Every tick label and title of a figure lies inside it (none cut at the picture's edge)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    width, height = fig.canvas.get_width_height()
    texts = [t for ax in fig.axes if ax.get_visible() for t in (*ax.get_yticklabels(), ax.title, ax.yaxis.label)]
    boxes = [t.get_window_extent(renderer) for t in texts if t.get_text()]
    return bool(boxes) and all(b.x0 >= 0 and b.x1 <= width and b.y1 <= height for b in boxes)


def test_a_runs_first_refresh_draws_whole_labels_and_every_chart_counts_its_steps_alike(tmp_path):
    """Issue 44, 04_monitor's first refreshes: a real run's first line is the validation before training (step 0);
    the dashboard drew that one panel with its y labels cut ("0.110" read "110") and said "1 steps" where the
    comparison chart said "0 steps"; two steps were ticked 1.0, 1.2 ... 2.0."""
    from grpolab.monitor.overlay import Overlay
    from grpolab.monitor.plots import curves_figure

    lines = (ROOT / "tests" / "data" / "monitor" / "tiny_seed1.jsonl").read_text().splitlines(keepends=True)
    path = tmp_path / "metrics.jsonl"
    for count, said in ((1, "0 steps"), (3, "2 steps")):
        path.write_text("".join(lines[:count]))
        view = MetricsView(path)
        view.refresh()
        picture = curves_figure(view, title="live")
        assert picture._suptitle.get_text() == f"live: {said}" and _inside(picture)
        chart = Overlay({"live": view})
        assert chart.legend_name("live") == f"live ({said})" and _inside(chart.figure())
        for ax in (ax for ax in picture.axes if ax.get_visible()):
            ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
            assert all(float(t).is_integer() for t in ticks), ticks  # whole steps only
            assert not ax.yaxis.get_major_formatter().get_offset()  # no "1e-7+1e-3"


def test_the_dashboards_summary_never_lags_its_state_line_and_a_saved_one_claims_nothing_current(tmp_path):
    """Issue 44: the summary was rewritten only when the alerts were analysed ("1 logged" under a state line at step
    80), and the notebook kept "updated 1 s ago", "running for 0:48" for a run that had ended long since."""
    from grpolab.monitor.dashboard import Dashboard

    run = _run(tmp_path, "live-summary", 1, 1, {})
    run.write_status(state="RUNNING", total_steps=200)
    records = synthetic.healthy(80, seed=1)
    dash = Dashboard(run.path, interval=1.0, redraw_s=3600.0)  # no analysis due after the first
    dash.refresh()
    synthetic.write_jsonl(run.metrics_file, records[1:80], append=True)
    dash.refresh()
    assert "step 80/" in dash.state_text and "80 logged, last step 80" in dash.summary_text
    saved = dash.summary_text + dash.summary_html
    assert "running for" not in saved and " s ago" not in saved and "as of " in saved
    dash.stop()
