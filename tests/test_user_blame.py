"""Errors blame what the user set: a problem that an override makes together with a key from the recipe's files is
said from the override, first, with valid values for it; an override the schema rejects stops 01_setup at its check
cell instead of leaving the recipe's own value in place. Fast: no Ray; one papermill run of 01_setup."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grpolab import notebook as nb
from grpolab.recipe.loader import load_recipe, recipe_names
from grpolab.rules.gate import gate
from grpolab.rules.validate import validate

ROOT = Path(__file__).resolve().parents[1]
BATCH_RULES = {"mini-batch", "batch-divisible", "dispatch-chunk"}


def _offered(fix: str, key: str) -> list[int]:
    found = re.search(rf"nearest valid {re.escape(key)}: ([0-9, ]+)", fix)
    assert found, fix
    return [int(v) for v in found.group(1).split(",")]


def test_a_train_batch_override_is_named_first_with_train_batches_that_fit():
    """The issue's case: `data.train_batch_size=7` on glm5_2 (mini batch 16 from the recipe): the error is the
    override's and offers train batches the mini batch and the trainer's DP divide, not mini batches of 7."""
    problems = validate(load_recipe("glm5_2", ["data.train_batch_size=7"]))
    error = next(p for p in problems if p.severity == "error" and p.rule in BATCH_RULES)
    assert error.key == "data.train_batch_size" and error.value == 7
    assert error.message.startswith("--set data.train_batch_size=7: ")
    assert "algorithm.ppo_mini_batch_size from params/recipes/glm5_2.yaml" in error.message
    offered = _offered(error.fix, "data.train_batch_size")
    for size in offered:  # each value offered makes the batch rules pass
        fixed = validate(load_recipe("glm5_2", [f"data.train_batch_size={size}"]))
        assert not [p for p in fixed if p.severity == "error" and p.rule in BATCH_RULES], (size, fixed)


@pytest.mark.parametrize("name", [n for n in recipe_names() if n != "tiny"])
def test_every_recipe_blames_a_bad_train_batch_override_and_its_fix_works(name):
    """Held on every shipped recipe (other mini batches, n, DP and agent workers than the case above)."""
    recipe = load_recipe(name)
    bad = recipe.algorithm.ppo_mini_batch_size + 1  # never a multiple of the mini batch (which is >= 1)
    if recipe.algorithm.ppo_mini_batch_size == 1:
        pytest.skip("every train batch is a multiple of a mini batch of 1")
    errors = [p for p in validate(load_recipe(name, [f"data.train_batch_size={bad}"])) if p.severity == "error"]
    batch = [p for p in errors if p.rule in BATCH_RULES]
    assert batch and batch[0].key == "data.train_batch_size", errors
    assert batch[0].message.startswith(f"--set data.train_batch_size={bad}: ")
    size = _offered(batch[0].fix, "data.train_batch_size")[0]
    fixed = validate(load_recipe(name, [f"data.train_batch_size={size}"]))
    assert not [p for p in fixed if p.severity == "error" and p.rule in BATCH_RULES], (size, fixed)


def test_an_override_that_breaks_a_rule_on_another_key_is_named_first():
    """A micro batch override makes the train batch from the recipe's files not split: the message starts with
    the override the user typed, then says where the reported key came from."""
    problems = gate(load_recipe("glm5_2", ["algorithm.micro_batch_size_per_device=3"]))
    error = next(p for p in problems if p.rule == "batch-divisible")
    assert error.message.startswith("--set algorithm.micro_batch_size_per_device=3 (with ")
    assert "from params/" in error.message.split(":", 1)[0]


def test_every_error_an_override_causes_is_blamed_on_the_override_and_the_notebook_shows_the_whole_fix(monkeypatch):
    """Issue 44: `rollout.tp=3` on glm5_2 made four errors; rollout-ep (ep 64 from the recipe, tp from the override)
    was blamed on params/recipes/glm5_2.yaml. And 01_setup's problems table ran past JupyterLab's right edge at
    1400 px, so its fix column read "2, 4" where the CLI says "1, 2, 4": the table now fits the notebook's width."""
    errors = [p for p in gate(load_recipe("glm5_2", ["rollout.tp=3"])) if p.severity == "error"]
    assert {p.rule for p in errors} >= {"rollout-ep", "rollout-heads", "rollout-world", "rollout-node"}
    assert all(p.message.startswith("--set rollout.tp=3") for p in errors), [p.message for p in errors]
    heads = next(p for p in errors if p.rule == "rollout-heads")
    assert "nearest valid rollout.tp: 1, 2, 4" in heads.fix
    html_out = []
    monkeypatch.setattr(nb.display, "show_html", lambda h, text: html_out.append((h, text)))
    nb.show_problems(errors, title="recipe glm5_2")
    ((table, text),) = html_out
    assert "table-layout:fixed" in table and "overflow-wrap:anywhere" in table  # wraps inside the output's width
    assert "nearest valid rollout.tp: 1, 2, 4" in table and "nearest valid rollout.tp: 1, 2, 4" in text


def test_a_rejected_override_stops_at_the_check_cell_saying_what_the_recipe_would_keep():
    recipe, problems = nb.check_recipe("tiny", ["trainer.total_steps=abc"])
    with pytest.raises(nb.NotebookStop) as stop:
        nb.stop_on_dropped(problems, recipe, ["trainer.total_steps=abc"])
    said = str(stop.value)
    assert "override 'trainer.total_steps=abc' was not applied" in said
    assert f"trainer.total_steps = {recipe.trainer.total_steps}" in said  # the value it would silently keep
    assert "a whole number" in said and "papermill" not in said.splitlines()[0]
    recipe, problems = nb.check_recipe("tiny", ["trainer.total_steps=40"])
    nb.stop_on_dropped(problems, recipe, ["trainer.total_steps=40"])  # an applied override passes


def test_01_setup_stops_in_its_check_cell_on_an_ill_typed_override(tmp_path):
    out = tmp_path / "out.ipynb"
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "papermill"), str(ROOT / "notebooks" / "01_setup.ipynb"), str(out)]
        + ["-y", "overrides: [trainer.total_steps=abc]", "--cwd", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode != 0
    book = nbformat.read(str(out), as_version=4)
    failed = next(c for c in book.cells if c.cell_type == "code" and any(o.get("ename") for o in c.get("outputs", [])))
    assert "nb.check_recipe(" in failed.source  # the cell whose markdown says a bad override stops it
    error = next(o for o in failed.outputs if o.get("ename"))
    assert error.ename == "NotebookStop" and "was not applied" in error.evalue
    later = book.cells[book.cells.index(failed) + 1 :]
    assert not any(c.get("outputs") for c in later if c.cell_type == "code")  # no recipe shown with 1200 steps


def test_in_jupyterlab_a_string_for_the_overrides_list_is_told_how_to_write_the_cell(monkeypatch):
    """Inside JupyterLab the fix is for the parameters cell the user edits, not papermill's -y flag."""
    monkeypatch.setenv("JPY_SESSION_NAME", "01_setup.ipynb")
    ns = {"__annotations__": {"model": str, "overrides": list[str]}, "model": "tiny", "overrides": "rollout.tp=16"}
    with pytest.raises(nb.NotebookStop) as stop:
        nb.check_parameters(ns)
    said = str(stop.value)
    assert "in the parameters cell write a list: overrides = ['rollout.tp=16']" in said
    assert "papermill" not in said and "-y" not in said
    monkeypatch.delenv("JPY_SESSION_NAME")
    with pytest.raises(nb.NotebookStop, match=r'papermill -y "overrides: \[rollout.tp=16\]"'):
        nb.check_parameters(dict(ns, overrides="rollout.tp=16"))  # headless: papermill's flag
