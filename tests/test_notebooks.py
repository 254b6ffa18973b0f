"""The notebooks: generated and committed clean, parameters typed and checked, nbval on every notebook, a papermill
dry run of run.ipynb for every recipe, glm5_2 stopping in preflight, bad parameters stopping in the validation cell,
and `tiny` trained end to end through run.ipynb. No mocks: papermill and nbval run the real notebooks in real
kernels against the embedded Ray head on the test ports (the `ray_head` fixture).

Cost (2 shared cores): one short `tiny` training in nbval (03_launch with a 4-step budget), one 40-step training
through run.ipynb, and a dry run per recipe (~20 s each); everything else stops in its first cells.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grpolab import notebook as nb
from grpolab.problems import InputError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NAMES = ("01_setup", "02_preflight", "03_launch", "04_monitor", "05_plan", "run")
PAPERMILL = Path(sys.executable).with_name("papermill")
RECIPES = sorted(p.stem for p in (ROOT / "params" / "recipes").glob("*.yaml"))
SMALL = ["trainer.total_steps=4", "trainer.test_freq=2", "local.warmup_steps=5", "local.val_size=10"]
SECRET = "nb-sekrit-7f3a9c"
VALIDATION_CELL = 4  # markdown, imports, parameters, markdown, validation (before papermill injects its cell)


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env.pop("JPY_SESSION_NAME", None)  # a JupyterLab kernel's marker: these runs are headless
    return env


def papermill(name: str, out: Path, *args: str, timeout: float = 540, **env: str) -> subprocess.CompletedProcess:
    """`papermill notebooks/<name>.ipynb out ARGS` as a user types it."""
    return subprocess.run(
        [str(PAPERMILL), str(NOTEBOOKS / f"{name}.ipynb"), str(out), "--no-progress-bar", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=_env(**env),
    )


def outputs(path: Path) -> list[tuple[int, dict]]:
    """(cell index, output) for every output of every code cell."""
    book = nbformat.read(str(path), as_version=4)
    return [(i, out) for i, cell in enumerate(book.cells) if cell.cell_type == "code" for out in cell.outputs]


def text_of(path: Path) -> str:
    """Everything the outputs of a notebook show as text (streams, plain text, HTML, errors)."""
    parts = []
    for _, out in outputs(path):
        if out.output_type == "stream":
            parts.append(out.text)
        elif out.output_type == "error":
            parts += [out.ename, out.evalue, *out.traceback]
        else:
            parts += [v for k, v in out.get("data", {}).items() if k.startswith("text/")]
    return "\n".join(parts)


def error_cell(path: Path) -> tuple[int, str, dict] | None:
    """(cell index, its source, the error output) of the first cell that raised."""
    book = nbformat.read(str(path), as_version=4)
    for i, out in outputs(path):
        if out.output_type == "error":
            return i, book.cells[i].source, out
    return None


# ---------------------------------------------------------------------------------------------- the files


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_committed_clean_with_one_typed_parameters_cell(name):
    import papermill as pm

    book = nbformat.read(str(NOTEBOOKS / f"{name}.ipynb"), as_version=4)
    nbformat.validate(book)
    assert book.metadata.kernelspec.name == "python3"
    code = [c for c in book.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "commit notebooks without outputs"
    tagged = [i for i, c in enumerate(book.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    params = book.cells[tagged[0]].source
    following = next(c for c in book.cells[tagged[0] + 1 :] if c.cell_type == "code")
    assert following.source.startswith("params = nb.check_parameters(globals())")
    assert book.cells.index(following) == VALIDATION_CELL
    # papermill --help-notebook lists every declared parameter with its type, default and help
    declared = [line.split(":")[0] for line in params.splitlines() if line and not line.startswith("#")]
    inferred = pm.inspect_notebook(str(NOTEBOOKS / f"{name}.ipynb"))
    assert list(inferred) == declared
    assert all(p["inferred_type_name"] != "None" and p["help"] for p in inferred.values()), inferred
    if name == "05_plan":  # planning the CPU recipe would show one trivial layout: the default is a real model
        assert inferred["model"]["default"] == '"glm5_2"' and inferred["overrides"]["default"] == "[]"
    elif name != "04_monitor":
        assert inferred["model"]["default"] == '"tiny"' and inferred["overrides"]["default"] == "[]"
    # cells stay short and call grpolab only
    for cell in code:
        # the parameters cell is one line per parameter (run.ipynb has 8 and the papermill hint)
        assert len(cell.source.splitlines()) <= (10 if cell is book.cells[tagged[0]] else 8), cell.source
        assert "import" not in cell.source or cell.source.startswith("from typing import Optional"), cell.source


def test_generator_is_in_step_with_the_committed_notebooks():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_notebooks.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


# ---------------------------------------------------------------------------------------------- the helpers


PARAMS_CELL = (
    'model: str = "tiny"  # recipe\noverrides: list[str] = []  # overrides\nrun_id: Optional[str] = None  # id'
)


def namespace(injected: str | None = None, **values) -> dict:
    """A kernel namespace as papermill leaves it: In holds each executed cell's source, the last one running."""
    from typing import Optional

    ns = {
        "__annotations__": {"model": str, "overrides": list[str], "run_id": Optional[str]},
        "model": "tiny",
        "overrides": [],
        "run_id": None,
    }
    history = ["", "from grpolab import notebook as nb", PARAMS_CELL]
    if injected is not None:
        history.append(injected)
        exec(injected, {}, values_from := {})  # what the injected cell assigns
        ns.update(values_from)
    history.append("params = nb.check_parameters(globals())")
    ns.update(values, In=history)
    return ns


def test_check_parameters_catches_a_misspelled_name_and_wrong_types():
    assert nb.check_parameters(namespace()) == {"model": "tiny", "overrides": [], "run_id": None}
    assert nb.check_parameters(namespace('# Parameters\nmodel = "glm5_2"\n'))["model"] == "glm5_2"
    with pytest.raises(nb.NotebookStop, match=r"unknown parameter 'modle': did you mean 'model'\?"):
        nb.check_parameters(namespace('# Parameters\nmodle = "glm5_2"\n'))
    with pytest.raises(nb.NotebookStop, match=r"unknown parameter 'xyz'\n"):
        nb.check_parameters(namespace("# Parameters\nxyz = 1\n"))
    with pytest.raises(nb.NotebookStop, match=r'overrides must be a list of strings.*-y "overrides: \[a=1\]"'):
        nb.check_parameters(namespace('# Parameters\noverrides = "a=1"\n'))
    with pytest.raises(nb.NotebookStop, match=r"run_id must be None or a string, got 3 \(int\)"):
        nb.check_parameters(namespace(run_id=3))
    # papermill --inject-paths names are papermill's own, not misspellings
    nb.check_parameters(namespace('# Parameters\nPAPERMILL_INPUT_PATH = "a.ipynb"\n'))
    # the parameters cell run again after an injected cell (JupyterLab): the old injection no longer counts
    ns = namespace('# Parameters\nmodle = "x"\n')
    ns["In"] = ns["In"][:-1] + [PARAMS_CELL, ns["In"][-1]]
    nb.check_parameters(ns)
    # a variable from a later cell is not a parameter
    nb.check_parameters(namespace(recipe=object(), report=1))


def test_bool_and_float_parameters_are_strict():
    ns = {"__annotations__": {"dry_run": bool, "interval": float}, "dry_run": "true", "interval": 2, "In": ["x"]}
    with pytest.raises(nb.NotebookStop, match=r"dry_run must be True or False, got 'true'.*-p dry_run True"):
        nb.check_parameters(ns)
    ns["dry_run"] = True
    assert nb.check_parameters(ns)["interval"] == 2
    ns["interval"] = True
    with pytest.raises(nb.NotebookStop, match="interval must be a number"):
        nb.check_parameters(ns)


def test_notebook_stop_shows_its_message_without_a_traceback():
    stop = nb.NotebookStop("first line\nsecond line")
    assert stop._render_traceback_() == ["NotebookStop: first line", "second line"]


def test_load_names_the_closest_recipe_and_the_bad_override():
    assert nb.load("tiny", ["trainer.total_steps=3"]).trainer.total_steps == 3
    with pytest.raises(nb.NotebookStop, match=r"no recipe named 'tinny': did you mean 'tiny'\?"):
        nb.load("tinny")
    with pytest.raises(nb.NotebookStop, match=r"(?s)bad override 'rollout\.tp'.*-y \"overrides: "):
        nb.load("tiny", ["rollout.tp"])
    with pytest.raises(nb.NotebookStop, match=r"(?s)does not fit the schema.*rollout\.tp = x.*override rollout\.tp=x"):
        nb.load("tiny", ["rollout.tp=x"])
    with pytest.raises(InputError):  # the library's own error is untouched
        from grpolab.recipe.loader import load_recipe

        load_recipe("tinny")


def test_jupyterlab_is_detected_by_its_session_variable(monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert not nb.in_jupyterlab()
    monkeypatch.setenv("JPY_SESSION_NAME", "/work/main/notebooks/04_monitor.ipynb")
    assert nb.in_jupyterlab()


def test_show_helpers_redact_secrets(capsys):
    recipe = nb.load("tiny", [f"env.MY_API_KEY={SECRET}", "env.PLAIN=visible"])
    nb.show_recipe(recipe)
    nb.show_launch(recipe)
    out = capsys.readouterr().out
    assert SECRET not in out and "MY_API_KEY" in out and "visible" in out and "#!/usr/bin/env bash" in out


# ---------------------------------------------------------------------------------------------- papermill


@pytest.mark.parametrize(
    "args, message",
    [
        (["-p", "model", "tinny"], "no recipe named 'tinny': did you mean 'tiny'?"),
        (["-p", "model", "nope"], "no recipe named 'nope'"),
        (["-y", "overrides: [rollout.tp=x]"], "override rollout.tp=x: Input should be a valid integer"),
        (["-y", "overrides: [rollout.tp]"], "bad override 'rollout.tp'"),
        (["-p", "modle", "tiny"], "unknown parameter 'modle': did you mean 'model'?"),
        (["-p", "dry_run", "true"], "dry_run must be True or False"),
    ],
    ids=["unknown-recipe", "no-near-recipe", "override-type", "override-malformed", "misspelled-name", "bool-type"],
)
def test_bad_parameters_stop_run_ipynb_in_the_validation_cell(tmp_path, args, message):
    out = tmp_path / "out.ipynb"
    result = papermill("run", out, *args, timeout=180)
    assert result.returncode != 0
    index, source, error = error_cell(out)
    assert source.startswith("params = nb.check_parameters(globals())"), source
    assert error.ename == "NotebookStop" and message in error.evalue, error.evalue
    assert len(error.traceback) <= 8, error.traceback  # the message, not a traceback
    assert message in result.stderr  # papermill's own report shows it too


def test_a_stage_notebook_stops_on_a_misspelled_parameter(tmp_path):
    out = tmp_path / "out.ipynb"
    result = papermill("04_monitor", out, "-p", "runid", "x", "-p", "stirct", "False", timeout=180)
    assert result.returncode != 0
    _, source, error = error_cell(out)
    assert source.startswith("params = nb.check_parameters(globals())")
    assert "unknown parameter 'runid': did you mean 'run_id'?" in error.evalue
    assert "unknown parameter 'stirct': did you mean 'strict'?" in error.evalue


def test_a_dry_run_preflight_verdict_does_not_list_the_failures_again(tmp_path, capsys):
    from grpolab.preflight.report import PreflightReport, Row

    report = PreflightReport(
        "glm5_2",
        rows=[
            Row("torch_npu", "node1", "fail", "not installed", "pip install"),
            Row("cann", "node1", "fail", "missing", "install CANN"),
        ],
    )
    nb.preflight_verdict(report, dry_run=True)
    said = capsys.readouterr().out
    assert said.startswith("dry run: 2 preflight check(s) fail: listed in the table above") and "torch_npu" not in said
    with pytest.raises(nb.NotebookStop, match="what is missing:(.|\n)*torch_npu(.|\n)*fix: install CANN"):
        nb.preflight_verdict(report)
    book = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("stream", name="stdout", text=said)])]
    )
    nbformat.write(book, str(tmp_path / "02_preflight.ipynb"))
    assert nb.dry_run_failures(tmp_path / "02_preflight.ipynb") == "ok, 2 checks fail (dry run)"


@pytest.mark.parametrize("recipe", RECIPES)
def test_dry_run_of_every_recipe(ray_head, tmp_path, recipe):
    """run.ipynb -p dry_run True: validates, reports preflight (failures do not stop it), shows the rendered launch,
    submits nothing, exits 0; a secret in the recipe's env reaches no output."""
    out = tmp_path / "out.ipynb"
    result = papermill(
        "run",
        out,
        "-p",
        "model",
        recipe,
        "-p",
        "dry_run",
        "True",
        "-y",
        f"overrides: [env.GRPOLAB_TEST_TOKEN={SECRET}]",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    text = text_of(out)
    assert f"preflight {recipe}:" in text  # the preflight table's summary line
    assert "#!/usr/bin/env bash" in text and "GRPOLAB_TEST_TOKEN" in text  # the rendered launch, env included
    assert "dry run: nothing was submitted" in text and "04_monitor: skipped" in text
    failing = [line for line in text.splitlines() if line.startswith("FAIL ")]
    if failing:  # each failed check is listed once (the table), and the stage table does not call it a plain ok
        assert len(failing) == len(set(failing)) and "what is missing:" not in text
        assert "checks fail (dry run)" in text
    summaries = re.findall(rf"preflight {recipe}: \w+: \d+ fail", text)
    assert 1 <= len(summaries) <= 2  # the summary once: the table's line, and its HTML heading
    scratch = Path(text.split("the executed stage notebooks are in ")[1].split()[0])
    assert scratch.parent == Path(os.environ["GRPOLAB_RUNS"]) / ".scratch"  # in runs/, like all we write
    copies = sorted(p.name for p in scratch.glob("*.ipynb"))
    assert copies == ["01_setup.ipynb", "02_preflight.ipynb", "03_launch.ipynb"]
    for path in [out, *(scratch / c for c in copies)]:
        assert SECRET not in text_of(path), path
    assert not [p for p in Path(os.environ["GRPOLAB_RUNS"]).glob(f"{recipe}-*") if (p / "status.json").exists()]


def test_glm5_2_stops_in_preflight_without_npus(ray_head, tmp_path):
    out = tmp_path / "out.ipynb"
    result = papermill("run", out, "-p", "model", "glm5_2")
    assert result.returncode != 0
    _, source, error = error_cell(out)
    assert source.startswith('stages.run("02_preflight"')
    assert "stage 02_preflight failed" in error.evalue and "what is missing:" in error.evalue
    assert "torch_npu" in error.evalue and "fix:" in error.evalue
    text = text_of(out)
    table = text[text.index("STATUS  CHECK") :].splitlines()[2:]  # the whole preflight table, failures first
    statuses = [line.split()[0] for line in table if line[:1].isalpha()]
    assert statuses[0] == "FAIL" and statuses.index("OK") > statuses.index("FAIL")
    assert "02_preflight   failed" in text  # the stage table
    assert not list(Path(os.environ["GRPOLAB_RUNS"]).glob("glm5_2-*"))  # nothing was launched
    scratch = Path(error.evalue.split("executed notebook: ")[1].split()[0]).parent
    assert sorted(p.name for p in scratch.glob("*.ipynb")) == ["01_setup.ipynb", "02_preflight.ipynb"]


def test_saved_04_monitor_of_a_finished_run_shows_grouped_alerts_and_the_curves(tmp_path):
    """No Ray: a finished run is shown from its files. Reopened with nbformat (no kernel), the saved notebook holds
    the curves as an image, the alerts grouped by rule in <details> once, and the thresholds that applied."""
    from grpolab.jobs.runs import create_run
    from grpolab.monitor import synthetic
    from grpolab.recipe.loader import load_recipe, to_yaml

    runs = tmp_path / "runs"
    run = create_run("tiny", run_id="tiny-done", root=runs)
    (run.path / "recipe.yaml").write_text(to_yaml(load_recipe("tiny")))
    recorded = [json.loads(line) for line in (ROOT / "tests/data/monitor/tiny_seed1.jsonl").read_text().splitlines()]
    synthetic.write_jsonl(run.metrics_file, synthetic.plant(recorded, "entropy-collapse", 900))
    run.write_status(state="SUCCEEDED", recipe="tiny", total_steps=1200)
    out = tmp_path / "out.ipynb"
    result = papermill("04_monitor", out, "-p", "run_id", "tiny-done", GRPOLAB_RUNS=str(runs))
    assert result.returncode == 0, result.stderr[-3000:]
    shown = [o for _, o in outputs(out)]
    assert any("image/png" in o.get("data", {}) for o in shown)
    page = "".join(o.get("data", {}).get("text/html", "") for o in shown)
    assert page.count("<code>entropy-collapse</code>: 1 episode(s), steps 900-1200 (ongoing)") == 1
    assert page.count("<i>try:</i>") == 1 and "limits applied: <code>" in page and "font-family:monospace" in page
    assert "recipe.yaml (monitor:)" in page  # tiny's own thresholds, from the run's recipe


def test_tiny_end_to_end_through_run_ipynb(ray_head, tmp_path):
    out = tmp_path / "out.ipynb"
    result = papermill(
        "run",
        out,
        "-p",
        "model",
        "tiny",
        "-p",
        "run_id",
        "nb-tiny-e2e",
        "-y",
        f"overrides: [trainer.total_steps=40, env.MY_API_KEY={SECRET}]",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert out.stat().st_size < 1_000_000
    run_dir = Path(os.environ["GRPOLAB_RUNS"]) / "nb-tiny-e2e"
    assert json.loads((run_dir / "status.json").read_text())["state"] == "SUCCEEDED"
    stages = sorted(p.name for p in (run_dir / "notebooks").glob("*.ipynb"))
    assert stages == ["01_setup.ipynb", "02_preflight.ipynb", "03_launch.ipynb", "04_monitor.ipynb"]
    # stages run before the run existed say where their executed copy ends up (it is moved there)
    said = re.search(r"01_setup: ok in [\d.]+ s; executed notebook: \S+ \(moves to (\S+) once", text_of(out))
    assert said and Path(said.group(1)) == run_dir / "notebooks", text_of(out)[:3000]
    book = nbformat.read(str(out), as_version=4)
    last = len(book.cells) - 1
    assert book.cells[last].source == "stages.finish()"
    finish = [o for i, o in outputs(out) if i == last]
    assert any("image/png" in o.get("data", {}) for o in finish)  # the validation-accuracy curve
    finish_text = "\n".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in finish)
    assert "final figures of nb-tiny-e2e (last step 40)" in finish_text and "val_acc" in finish_text
    assert (run_dir / "val_accuracy.png").is_file() and (run_dir / "curves.png").is_file()
    for path in [out, *(run_dir / "notebooks").glob("*.ipynb")]:
        assert SECRET not in text_of(path), path
    # the saved 04_monitor, reopened without a kernel (nbformat), shows the curves: an image output
    assert any("image/png" in o.get("data", {}) for _, o in outputs(run_dir / "notebooks" / "04_monitor.ipynb"))
    # sparse progress: following the run printed lines rate-limited by time (one per nb.FOLLOW_EVERY_S at most,
    # plus the first and the last), whatever the number of steps or of alerts the run raised
    book = nbformat.read(str(run_dir / "notebooks" / "04_monitor.ipynb"), as_version=4)
    watch = next(c for c in book.cells if c.cell_type == "code" and "nb.watch(" in c.source)
    lines = "".join(o.get("text", "") for o in watch.outputs if o.output_type == "stream").splitlines()
    progress = [line for line in lines if re.match(r"step \d+/\d+", line)]
    assert len(progress) <= watch.metadata["papermill"]["duration"] / nb.FOLLOW_EVERY_S + 2


def test_nbval_every_notebook(ray_head, tmp_path):
    """nbval (lax) runs every notebook top to bottom in one session, in this order, on a fresh runs/ directory.

    01, 02 and 04 run with their defaults. 03_launch runs with its defaults but a 4-step budget for tiny (injected
    as papermill -y would: its defaults would train tiny's full 600 steps, once more than the suite affords), and
    04_monitor's default (the latest run) then shows that run. run.ipynb runs with dry_run True: its real path is
    the end-to-end test above.
    """
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    copies = tmp_path / "nb"
    copies.mkdir()
    paths = []
    for name in NAMES:
        book = load_notebook_node(str(NOTEBOOKS / f"{name}.ipynb"))  # as papermill reads it (tags on every cell)
        changed = {"03_launch": {"overrides": SMALL}, "run": {"dry_run": True}}.get(name)
        if changed:
            book = parameterize_notebook(book, changed)
            book.metadata.pop("papermill", None)
        path = copies / f"{name}.ipynb"
        nbformat.write(book, str(path))
        paths.append(str(path))
    runs = tmp_path / "runs"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--nbval-lax",
            "--nbval-current-env",
            "-p",
            "no:cacheprovider",
            "-q",
            "-o",
            "addopts=",
            "--rootdir",
            str(copies),
            *paths,
        ],
        capture_output=True,
        text=True,
        timeout=540,
        cwd=copies,
        env=_env(GRPOLAB_RUNS=str(runs)),  # run.ipynb's dry run leaves its stage copies in runs/.scratch/
    )
    assert result.returncode == 0, result.stdout[-5000:]
    assert (
        f"{sum(len([c for c in nbformat.read(p, 4).cells if c.cell_type == 'code']) for p in paths)} passed"
        in result.stdout
    )
    trained = [p for p in runs.iterdir() if (p / "status.json").exists()]
    assert len(trained) == 1 and json.loads((trained[0] / "status.json").read_text())["state"] == "SUCCEEDED"


def test_05_plan_under_papermill_is_static_and_labels_estimates(tmp_path):
    out = tmp_path / "out.ipynb"
    result = papermill("05_plan", out, "-p", "model", "qwen3_5_122b_a10b_32k", "-p", "top", "5", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    text = text_of(out)
    assert "ESTIMATES" in text and "rejected by rule:" in text and "best layout" in text
    assert "overrides: [train.tp=" in text
    assert any("image/png" in o.get("data", {}) for _, o in outputs(out))  # the chart, as a static PNG
    assert not any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for _, o in outputs(out))


def test_05_plan_stops_with_the_smallest_cluster_when_nothing_fits(tmp_path):
    out = tmp_path / "out.ipynb"
    result = papermill("05_plan", out, "-p", "nodes", "1", timeout=300)
    assert result.returncode != 0
    _, source, error = error_cell(out)
    assert source.startswith("best = nb.plan_verdict(plan)")
    assert error.ename == "NotebookStop" and "the smallest cluster that fits is" in error.evalue


def test_run_ipynb_with_plan_adds_the_top_layout(ray_head, tmp_path):
    out = tmp_path / "out.ipynb"
    result = papermill("run", out, "-p", "model", "qwen3_30b_a3b", "-p", "plan", "True", "-p", "dry_run", "True")
    assert result.returncode == 0, result.stderr[-3000:]
    text = text_of(out)
    chosen = text.split("overrides: [", 1)[1].split("]", 1)[0].split(", ")
    assert chosen[0].startswith("train.tp=")
    scratch = Path(text.split("the executed stage notebooks are in ")[1].split()[0])
    setup = nbformat.read(str(scratch / "01_setup.ipynb"), as_version=4)
    injected = next(c.source for c in setup.cells if "injected-parameters" in c.metadata.get("tags", []))
    problems = text_of(scratch / "01_setup.ipynb")
    assert all(o in injected for o in chosen), injected  # 01_setup validated the recipe with the planned layout
    assert "0 error(s)" in problems or "no errors" in problems
