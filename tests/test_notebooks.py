"""The notebooks: generated and committed clean, parameters typed and checked, nbval on every notebook, a papermill
dry run of run.ipynb per kind of recipe, glm5_2 stopping in preflight, bad parameters stopping in the validation cell,
and `tiny` trained end to end through run.ipynb. No mocks: papermill and nbval run the real notebooks in real
kernels against the embedded Ray head on the test ports (the `ray_head` fixture).

Cost (2 shared cores): one short `tiny` training in nbval (03_launch with a 4-step budget), one 40-step training
through run.ipynb, and three dry runs (~20 s each); everything else stops in its first cells.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grpolab import notebook as nb
from grpolab.problems import InputError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
NAMES = ("01_setup", "02_preflight", "03_launch", "04_monitor", "05_plan", "06_compare", "run")
PAPERMILL = Path(sys.executable).with_name("papermill")
# a dry run through run.ipynb per kind of recipe: verl FSDP on GPUs here (with a secret in its env), verl Megatron on
# NPUs as the README writes it; trl on the CPU is nbval's run.ipynb (tiny, dry_run True) in test_nbval_every_notebook.
# Every recipe is loaded, checked and rendered by tests/test_params.py and tests/test_fidelity.py, without a kernel.
README_DRY_RUN = ".venv/bin/papermill notebooks/run.ipynb out.ipynb -p model glm5_2 -p dry_run True"
DRY_RUN_RECIPES = ["qwen3_8b", "glm5_2"]
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


def papermill_streamed(name: str, out: Path, *args: str, timeout: float = 540) -> tuple[int, list[tuple[float, str]]]:
    """`papermill notebooks/<name>.ipynb out ARGS`, its stderr read line by line as it comes: (exit status,
    [(seconds before papermill ended, line)])."""
    import threading
    import time

    proc = subprocess.Popen(
        [str(PAPERMILL), str(NOTEBOOKS / f"{name}.ipynb"), str(out), "--no-progress-bar", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=_env(),
    )
    stamped: list[tuple[float, str]] = []
    reader = threading.Thread(target=lambda: stamped.extend((time.monotonic(), line) for line in proc.stderr))
    reader.start()
    try:
        proc.wait(timeout=timeout)
    finally:
        proc.kill()
        reader.join(timeout=10)
    end = time.monotonic()
    return proc.returncode, [(end - t, line.rstrip("\n")) for t, line in stamped]


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


def committed(name: str) -> nbformat.NotebookNode:
    """The notebook as committed (git HEAD), else as on disk (a copy of the project without git)."""
    rel = f"notebooks/{name}.ipynb"
    shown = subprocess.run(["git", "show", f"HEAD:{rel}"], capture_output=True, text=True, cwd=ROOT)
    if shown.returncode == 0 and shown.stdout.strip():
        return nbformat.reads(shown.stdout, as_version=4)
    return nbformat.read(str(ROOT / rel), as_version=4)


def check_structure(path: Path) -> None:
    """What a notebook's cells must be, outputs or not: one typed parameters cell that papermill lists, the
    validation cell after it, short cells that call grpolab only."""
    import papermill as pm

    book = nbformat.read(str(path), as_version=4)
    name = path.stem
    nbformat.validate(book)
    assert book.metadata.kernelspec.name == "python3"
    code = [c for c in book.cells if c.cell_type == "code"]
    tagged = [i for i, c in enumerate(book.cells) if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    params = book.cells[tagged[0]].source
    following = next(c for c in book.cells[tagged[0] + 1 :] if c.cell_type == "code")
    assert following.source.startswith("params = nb.check_parameters(globals())")
    assert book.cells.index(following) == VALIDATION_CELL
    # papermill --help-notebook lists every declared parameter with its type, default and help
    declared = [line.split(":")[0] for line in params.splitlines() if line and not line.startswith("#")]
    inferred = pm.inspect_notebook(str(path))
    assert list(inferred) == declared
    assert all(p["inferred_type_name"] != "None" and p["help"] for p in inferred.values()), inferred
    if name == "05_plan":  # planning the CPU recipe would show one trivial layout: the default is a real model
        assert inferred["model"]["default"] == '"glm5_2"' and inferred["overrides"]["default"] == "[]"
    elif "model" in inferred:
        assert inferred["model"]["default"] == '"tiny"' and inferred["overrides"]["default"] == "[]"
    # cells stay short and call grpolab only
    for cell in code:
        # the parameters cell is one line per parameter (run.ipynb has 8 and the papermill hint)
        assert len(cell.source.splitlines()) <= (10 if cell is book.cells[tagged[0]] else 8), cell.source
        assert "import" not in cell.source or cell.source.startswith("from typing import Optional"), cell.source


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_committed_clean_with_one_typed_parameters_cell(name):
    check_structure(NOTEBOOKS / f"{name}.ipynb")
    # committed without outputs (what is on disk may hold a user's outputs: that does not make the commit dirty)
    code = [c for c in committed(name).cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "commit notebooks without outputs"


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


def test_a_misspelled_name_typed_into_the_parameters_cell_stops_the_notebook():
    """In JupyterLab nothing is injected: the user edits the parameters cell itself, and a plain assignment there
    is a parameter given (the cell's text promises a misspelled name stops the notebook)."""

    def edited(cell: str, **values) -> dict:
        ns = namespace(**values)
        ns["In"] = ns["In"][:2] + [cell, ns["In"][-1]]
        return ns

    typo = PARAMS_CELL + '\noveride = ["rollout.tp=3"]'
    with pytest.raises(nb.NotebookStop, match=r"unknown parameter 'overide': did you mean 'overrides'\?"):
        nb.check_parameters(edited(typo, overide=["rollout.tp=3"]))
    # `model: str = "tiny"` retyped as `modle = "glm5_2"`: model keeps an earlier run's value, which is said too
    cell = PARAMS_CELL.replace('model: str = "tiny"', 'modle = "glm5_2"')
    with pytest.raises(nb.NotebookStop) as stop:
        nb.check_parameters(edited(cell, modle="glm5_2"))
    assert "unknown parameter 'modle': did you mean 'model'?" in str(stop.value)
    assert "parameter 'model' is missing from the parameters cell: it still holds 'tiny'" in str(stop.value)
    # a plain assignment of a declared name is fine, and a private helper name is not a parameter
    nb.check_parameters(edited(PARAMS_CELL + '\nmodel = "tiny"\n_scratch = 1'))


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


def test_a_launch_with_errors_is_marked_not_launchable_and_its_script_names_the_overrides(capsys):
    """Issue 44: 01_setup rendered glm5_2 with `rollout.tp=3` (four errors) as if it could run, and its script's
    header named `grpolab render glm5_2 --format sh`, which renders another recipe (no override) and would refuse
    this one anyway. Now the title and the script say NOT LAUNCHABLE, and the header names the overrides."""
    recipe, problems = nb.check_recipe("glm5_2", ["rollout.tp=3"])
    nb.show_launch(recipe, problems)
    out = capsys.readouterr().out
    assert "rendered launch for glm5_2 (megatron): NOT LAUNCHABLE (errors above)" in out
    script = out[out.index("#!/usr/bin/env bash") :]
    assert script.splitlines()[1].startswith("# NOT LAUNCHABLE: recipe glm5_2 has 4 error(s) (rollout.tp: ")
    assert "generated by `grpolab render glm5_2 --set rollout.tp=3 --format sh`" in script
    recipe, problems = nb.check_recipe("tiny", ["trainer.total_steps=40"])
    nb.show_launch(recipe, problems)
    out = capsys.readouterr().out
    assert "NOT LAUNCHABLE" not in out and "`grpolab render tiny --set trainer.total_steps=40 --format sh`" in out


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
    # papermill's terminal: our message last, two lines before it at most, no traceback of papermill's frames
    said = result.stderr.rstrip()
    assert said.endswith(
        "papermill: the notebook stopped in cell In [4] (the full output: " + f"{out})\n{error.evalue.rstrip()}"
    )
    assert "Traceback" not in said, said


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
    # which checks, by name (what the stage table repeats); their details and fixes stay in the table
    assert said.startswith("dry run: 2 preflight check(s) fail (torch_npu, cann): listed in the table above")
    assert "not installed" not in said and "install CANN" not in said
    with pytest.raises(nb.NotebookStop, match="what is missing:(.|\n)*torch_npu(.|\n)*fix: install CANN"):
        nb.preflight_verdict(report)


@pytest.mark.parametrize("recipe", DRY_RUN_RECIPES)
def test_dry_run_of_each_kind_of_recipe(ray_head, tmp_path, recipe, readme_command):
    """run.ipynb -p dry_run True: validates, reports preflight (failures do not stop it), shows the rendered launch,
    submits nothing, exits 0; a secret in the recipe's env reaches no output. glm5_2's is the README's command as
    written (tests/test_readme.py leaves it to this test)."""
    out = tmp_path / "out.ipynb"
    dry = ["-p", "model", recipe, "-p", "dry_run", "True"]
    if recipe == "glm5_2":
        argv = readme_command(README_DRY_RUN)
        assert argv[1:3] == ["notebooks/run.ipynb", "out.ipynb"] and argv[3:] == dry
        result = papermill("run", out, *argv[3:])
    else:
        result = papermill("run", out, *dry, "-y", f"overrides: [env.GRPOLAB_TEST_TOKEN={SECRET}]")
    assert result.returncode == 0, result.stderr[-3000:]
    said = result.stdout + result.stderr
    assert "Traceback" not in said, said[max(0, said.find("Traceback") - 2000) :][:6000]
    text = text_of(out)
    assert f"preflight {recipe}:" in text  # the preflight table's summary line
    assert "#!/usr/bin/env bash" in text  # the rendered launch
    if recipe != "glm5_2":
        assert "GRPOLAB_TEST_TOKEN" in text  # the recipe's env is in the rendered launch
    assert "dry run: nothing was submitted" in text and "04_monitor: skipped" in text
    failing = [line for line in text.splitlines() if line.startswith("FAIL ")]
    if failing:  # each failed check is listed once (the table), and the stage table does not call it a plain ok
        assert len(failing) == len(set(failing)) and "what is missing:" not in text
        assert re.search(r"checks fail \(dry run: [^)]+\)", text), text[-3000:]
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
    # a warning that lasts to the end (an error alert that does would be a training collapse: the verdict fails it)
    synthetic.write_jsonl(run.metrics_file, synthetic.plant(recorded, "length-clipped", 900))
    run.write_status(state="SUCCEEDED", recipe="tiny", total_steps=1200)
    out = tmp_path / "out.ipynb"
    result = papermill("04_monitor", out, "-p", "run_id", "tiny-done", GRPOLAB_RUNS=str(runs))
    assert result.returncode == 0, result.stderr[-3000:]
    shown = [o for _, o in outputs(out)]
    assert any("image/png" in o.get("data", {}) for o in shown)
    page = "".join(o.get("data", {}).get("text/html", "") for o in shown)
    assert page.count("<code>length-clipped</code>: 1 episode(s), steps 900-1200 (ongoing)") == 1
    assert page.count("<i>try:</i>") == 1 and "limits applied: <code>" in page and "font-family:monospace" in page
    assert "recipe.yaml (monitor:)" in page  # tiny's own thresholds, from the run's recipe


@pytest.mark.slow(45)
def test_tiny_end_to_end_through_run_ipynb(ray_head, tmp_path, readme_command):
    """The README's `papermill notebooks/run.ipynb out.ipynb -p model tiny -y "overrides: [...40 steps]"` as
    written: every stage, progress as it goes, the stage notebooks kept in the run, the final figures."""
    out = tmp_path / "out.ipynb"
    argv = readme_command(".venv/bin/papermill notebooks/run.ipynb out.ipynb -p model tiny -y")
    assert argv[1:3] == ["notebooks/run.ipynb", "out.ipynb"] and "overrides: [trainer.total_steps=40]" in argv
    code, stamped = papermill_streamed("run", out, *argv[3:])
    said = "\n".join(line for _, line in stamped)
    assert code == 0, said[-3000:]
    # papermill's terminal showed the stages and the training's progress as they went, not only at the end
    assert "01_setup: running ..." in said and "04_monitor: running ..." in said
    progress = [(before, line) for before, line in stamped if re.match(r"step \d+/40 \(\d+ %\)", line)]
    assert progress and progress[0][0] > 2.0, said[-3000:]  # the first one came while the run still went on
    (run_dir,) = Path(os.environ["GRPOLAB_RUNS"]).glob("tiny-*")  # the run, under its generated id
    run_id = run_dir.name
    assert re.search(rf"run {run_id}: step \d+/40 .*SUCCEEDED", said), said[-3000:]
    # the terminal ends with a summary: the stages, the run folder, the figures at the end, the pictures' paths
    summary = said[said.index("run.ipynb summary:") :]
    assert "04_monitor    ok" in summary and f"run folder: {run_dir}" in summary, summary
    assert re.search(r"at the end: reward \d\.\d{3} \(step 40\), val_acc \d\.\d{3} \(step 40\)", summary), summary
    assert f"figures: {run_dir / 'curves.png'}, {run_dir / 'val_accuracy.png'}" in summary
    assert out.stat().st_size < 1_000_000
    assert json.loads((run_dir / "status.json").read_text())["state"] == "SUCCEEDED"
    stages = sorted(p.name for p in (run_dir / "notebooks").glob("*.ipynb"))
    assert stages == ["01_setup.ipynb", "02_preflight.ipynb", "03_launch.ipynb", "04_monitor.ipynb"]
    # stages run before the run existed say where their executed copy ends up (it is moved there)
    said = re.search(r"01_setup: ok in [\d.]+ s; executed notebook: \S+ \(moves to (\S+) if", text_of(out))
    assert said and Path(said.group(1)) == run_dir / "notebooks", text_of(out)[:3000]
    book = nbformat.read(str(out), as_version=4)
    last = len(book.cells) - 1
    assert book.cells[last].source == "stages.finish()"
    finish = [o for i, o in outputs(out) if i == last]
    assert any("image/png" in o.get("data", {}) for o in finish)  # the validation-accuracy curve
    finish_text = "\n".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in finish)
    assert f"final figures of {run_id} (last step 40)" in finish_text and "val_acc" in finish_text
    assert (run_dir / "val_accuracy.png").is_file() and (run_dir / "curves.png").is_file()
    # the saved 04_monitor, reopened without a kernel (nbformat), shows the curves: an image output
    assert any("image/png" in o.get("data", {}) for _, o in outputs(run_dir / "notebooks" / "04_monitor.ipynb"))
    # sparse progress: following the run printed lines rate-limited by time (one per nb.FOLLOW_EVERY_S at most,
    # plus the first and the last), whatever the number of steps or of alerts the run raised
    book = nbformat.read(str(run_dir / "notebooks" / "04_monitor.ipynb"), as_version=4)
    watch = next(c for c in book.cells if c.cell_type == "code" and "nb.watch(" in c.source)
    lines = "".join(o.get("text", "") for o in watch.outputs if o.output_type == "stream").splitlines()
    progress = [line for line in lines if re.match(r"step \d+/\d+", line)]
    assert len(progress) <= watch.metadata["papermill"]["duration"] / nb.FOLLOW_EVERY_S + 2


@pytest.mark.slow(65)
def test_nbval_every_notebook(ray_head, tmp_path, short_tiny):
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
        changed = {"03_launch": {"overrides": short_tiny}, "run": {"dry_run": True}}.get(name)
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


# ---------------------------------------------------------------------------------------------- 06_compare, in place


def finished_runs(root: Path, specs) -> list[str]:
    """Finished runs built from the monitor's synthetic metrics (no training): (run id, steps, seed, overrides)."""
    from grpolab.jobs.runs import create_run
    from grpolab.monitor import synthetic
    from grpolab.recipe.loader import load_recipe, to_yaml

    for run_id, steps, seed, sets in specs:
        run = create_run("tiny", run_id=run_id, root=root)
        (run.path / "recipe.yaml").write_text(to_yaml(load_recipe("tiny", sets)))
        versions = {"verl": "0.9.1", "ray": "2.60.0", "torch": f"2.13.{seed}"}
        (run.path / "launch.json").write_text(json.dumps({"run_id": run_id, "recipe": "tiny", "versions": versions}))
        synthetic.write_jsonl(run.metrics_file, synthetic.healthy(steps, seed=seed))
        run.job_log.write_text(f"training {run_id}\nlast line of {run_id}\n")
        run.write_status(state="SUCCEEDED", recipe="tiny", total_steps=steps)
    return [spec[0] for spec in specs]


def test_06_compare_under_papermill_overlays_runs_with_their_differences(tmp_path):
    """`-p runs '[a, b]'` as the issue types it: the differences (recipe, stack) above one chart (a PNG that
    JupyterLab and GitHub show alike), the logs below; a run that does not exist stops the notebook."""
    runs = tmp_path / "runs"
    a, b = finished_runs(runs, [("cmp-a", 40, 1, []), ("cmp-b", 30, 2, ["algorithm.lr=0.002"])])
    out = tmp_path / "out.ipynb"
    result = papermill("06_compare", out, "-p", "runs", f"[{a}, {b}]", "-p", "x", "wall", GRPOLAB_RUNS=str(runs))
    assert result.returncode == 0, result.stderr[-3000:]
    shown = [o for _, o in outputs(out)]
    table = next(o for o in shown if "recipe and stack differences" in o.get("data", {}).get("text/plain", ""))
    plain = table["data"]["text/plain"]
    assert "recipe.algorithm.lr" in plain and "0.001  |  0.002" in plain and "stack.torch" in plain
    assert "recipe.trainer.total_steps" not in plain  # both runs kept tiny's own total_steps
    chart = next(o for o in shown if "<img src='data:image/png" in o.get("data", {}).get("text/html", ""))["data"]
    assert chart["text/html"].startswith("<img src='data:image/png;base64,iVBOR")  # JupyterLab, GitHub, nbviewer
    # the default smoothing, kept with the output; -p x wall; every run with its steps
    alt = f"alt='2 runs, smoothing 0.6; x: wall-clock (s, summed timing_s/step); {a} (40 steps); {b} (30 steps)'"
    assert alt in chart["text/html"]
    assert f"{a} (40 steps): reward" in chart["text/plain"]
    assert f"last line of {a}" in text_of(out) and f"last line of {b}" in text_of(out)  # the logs
    missing = papermill("06_compare", tmp_path / "bad.ipynb", "-y", "runs: [cmp-a, nope]", GRPOLAB_RUNS=str(runs))
    assert missing.returncode != 0 and "no run 'nope'" in missing.stderr.rstrip().splitlines()[-1]


def test_check_recipe_reports_every_problem_once(capsys):
    """A schema error in one override does not hide the rule errors of another; the verdict names them, once."""
    recipe, problems = nb.check_recipe("tiny", ["rollout.tpp=2", "train.tp=3"])
    keys = [(p.key, p.rule) for p in problems if p.severity == "error"]
    assert ("rollout.tpp", "schema") in keys and any(k == "train.tp" for k, _ in keys), keys
    assert len(keys) == len(set(keys))
    assert recipe is not None and recipe.train.tp == 3  # checked without the override the schema rejected
    with pytest.raises(nb.NotebookStop) as stop:
        nb.stop_on_errors(problems, recipe, "tiny")
    said = str(stop.value)
    assert "rollout.tpp (schema)" in said and "train.tp (" in said and "The Problems table above" in said
    assert all(p.message not in said for p in problems)  # the table says why; the stop does not say it again


def test_every_notebook_run_in_place_and_saved_leaves_the_checks_green(tmp_path):
    """A user who ignores `grpolab lab`, opens the committed notebooks, runs them and saves them (outputs and the
    metadata Jupyter adds written into the files): the staleness check and the notebook checks still pass. Run in
    place in a copy of the project's notebooks/ and scripts/ (the suite's other tests read the real ones at the
    same time), which the test removes."""
    from concurrent.futures import ThreadPoolExecutor

    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    project = tmp_path / "project"
    shutil.copytree(NOTEBOOKS, project / "notebooks")
    (project / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "make_notebooks.py", project / "scripts")
    runs = tmp_path / "runs"
    finished_runs(runs, [("inplace-a", 20, 1, []), ("inplace-b", 20, 2, [])])
    # cheap on purpose: no Ray address works (02 and 03 stop at their first Ray call, as Run All does at an error),
    # run.ipynb stops before its first stage, 05 plans with its defaults, 04 and 06 show the finished runs above
    env = _env(GRPOLAB_RUNS=str(runs), RAY_ADDRESS="not-a-ray-address")
    blocked = tmp_path / "a-file-not-a-folder"  # run.ipynb cannot make its scratch folder there: it stops at once
    blocked.write_text("")

    def run_and_save(name: str) -> None:
        path = project / "notebooks" / f"{name}.ipynb"
        book = nbformat.read(str(path), as_version=4)
        client = NotebookClient(
            book, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
        )
        try:  # run.ipynb: no stage kernels
            client.execute(env={**env, "GRPOLAB_RUNS": str(blocked)} if name == "run" else env)
        except CellExecutionError:
            pass  # Run All stops at an error; the outputs so far are saved
        book.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
        nbformat.write(book, str(path))  # saved in place, as JupyterLab does
        assert any(c.get("outputs") for c in book.cells if c.cell_type == "code"), name

    with ThreadPoolExecutor(max_workers=2) as pool:  # two kernels at a time: most of a kernel's start is waiting
        list(pool.map(run_and_save, NAMES))
    check = subprocess.run(
        [sys.executable, str(project / "scripts" / "make_notebooks.py"), "--check"], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stderr
    for name in NAMES:
        check_structure(project / "notebooks" / f"{name}.ipynb")
    # and the check still catches a real change: an edited source is out of date
    path = project / "notebooks" / "01_setup.ipynb"
    book = nbformat.read(str(path), as_version=4)
    book.cells[2].source += "\nextra: int = 1  # an extra parameter"
    nbformat.write(book, str(path))
    check = subprocess.run(
        [sys.executable, str(project / "scripts" / "make_notebooks.py"), "--check"], capture_output=True, text=True
    )
    assert check.returncode == 1 and "notebooks/01_setup.ipynb" in check.stderr
    shutil.rmtree(project)


def test_no_notebook_promises_interaction_its_pictures_do_not_have():
    """Issue 44: 04_monitor's text promised hover, zoom and axis buttons on a chart that is a static PNG (every chart
    is: grpolab.monitor.overlay, plots). The notebooks' words describe the pictures they draw."""
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        book = nbformat.read(str(path), as_version=4)
        words = " ".join(c.source.lower() for c in book.cells if c.cell_type == "markdown")
        assert not re.search(r"\bhover\b|\bzoom\b|double-click|buttons? for", words), path.name
