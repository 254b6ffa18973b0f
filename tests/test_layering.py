"""`defaults:` is a linearisation (issue 19, item 4): each file once, base.yaml first, a parent before what it
inherits from, later parents over earlier ones; no re-listing of base undoes a parent. And a `--set` problem is
blamed on the `--set` (issue 19, item 9)."""

from __future__ import annotations

import time

import pytest

from grpolab.paths import params_dir
from grpolab.problems import InputError, RecipeError
from grpolab.recipe.loader import load_recipe, merge_layers, recipe_names


def _write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return str(path)


def test_diamond_parents_keep_what_each_set(tmp_path):
    _write(tmp_path, "fast", "defaults: [base, hardware/gpu-h100]\nrollout: {n: 4}\n")
    _write(tmp_path, "warm", "defaults: [base]\nrollout: {temperature: 0.7}\n")
    recipe = load_recipe(_write(tmp_path, "both", "defaults: [fast, warm]\n"))
    assert (recipe.rollout.n, recipe.rollout.temperature, recipe.cluster.hardware) == (4, 0.7, "gpu-h100")
    assert recipe.origin("rollout.n").endswith("fast.yaml") and recipe.origin("rollout.temperature").endswith(
        "warm.yaml"
    )
    files = [f.rsplit("/", 1)[-1] for f in recipe.files]
    assert files == ["base.yaml", "gpu-h100.yaml", "fast.yaml", "warm.yaml", "both.yaml"]  # each file once


def test_an_extra_layer_on_base_keeps_all_of_the_recipe_before_it(tmp_path):
    _write(tmp_path, "extra", "defaults: [base]\ntrainer: {project: mine}\n")
    recipe = load_recipe(_write(tmp_path, "mine", "defaults: [recipes/qwen3_8b, extra]\n"))
    seed = load_recipe("qwen3_8b")
    assert recipe.trainer.project == "mine" and recipe.origin("trainer.project").endswith("extra.yaml")
    assert recipe.model_dump(exclude={"trainer"}) == seed.model_dump(exclude={"trainer"})
    assert recipe.model.path == "/data/models/Qwen3-8B" and recipe.cluster.device == "cuda"


def test_later_parents_win_and_base_listed_last_undoes_nothing(tmp_path):
    _write(tmp_path, "four", "defaults: [base]\nrollout: {n: 4}\n")
    _write(tmp_path, "six", "defaults: [base]\nrollout: {n: 6}\n")
    assert load_recipe(_write(tmp_path, "a", "defaults: [four, six]\n")).rollout.n == 6
    assert load_recipe(_write(tmp_path, "b", "defaults: [six, four]\n")).rollout.n == 4
    after = load_recipe(_write(tmp_path, "c", "defaults: [four, base]\n"))  # base is the first layer wherever listed
    assert after.rollout.n == 4 and [f.rsplit("/", 1)[-1] for f in after.files] == ["base.yaml", "four.yaml", "c.yaml"]


def test_a_parent_listed_twice_is_refused_naming_the_file(tmp_path):
    _write(tmp_path, "four", "defaults: [base]\nrollout: {n: 4}\n")
    with pytest.raises(InputError, match=r"twice.yaml: `defaults` lists 'four' twice"):
        load_recipe(_write(tmp_path, "twice", "defaults: [four, base, four]\n"))


def test_parents_that_order_two_files_both_ways_are_refused_naming_them(tmp_path):
    _write(tmp_path, "x", "rollout: {n: 4}\n")
    _write(tmp_path, "y", "rollout: {n: 6}\n")
    _write(tmp_path, "xy", "defaults: [base, x, y]\n")
    _write(tmp_path, "yx", "defaults: [base, y, x]\n")
    with pytest.raises(InputError) as err:
        load_recipe(_write(tmp_path, "both", "defaults: [xy, yx]\n"))
    assert "x.yaml" in str(err.value) and "y.yaml" in str(err.value) and "one order" in str(err.value)


def test_the_depth_contract_holds_and_a_50_level_chain_stops_at_once(tmp_path):
    _write(tmp_path, "level0", "rollout: {n: 4}\n")
    for i in range(1, 51):
        _write(tmp_path, f"level{i}", f"defaults: [level{i - 1}]\n")
    start = time.perf_counter()
    with pytest.raises(InputError, match="at most 2 levels"):
        load_recipe(str(tmp_path / "level50.yaml"))
    assert time.perf_counter() - start < 2
    assert load_recipe(str(tmp_path / "level2.yaml")).rollout.n == 4  # two levels are fine


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_says_which_file_set_each_key(name):
    merged, origins, files, _ = merge_layers(name)
    assert files[0] == "params/base.yaml" and files[-1] == f"params/recipes/{name}.yaml"
    assert len(files) == len(set(files))
    for key, origin in origins.items():
        assert origin.split(" (per_device")[0] in files, (key, origin)
    # a key the recipe file sets itself is blamed on it (not on base.yaml listed again somewhere)
    own = (params_dir() / "recipes" / f"{name}.yaml").read_text()
    if "\nrollout:" in own and "  n:" in own.split("\nrollout:")[1].split("\n\n")[0]:
        assert origins["rollout.n"].startswith(f"params/recipes/{name}.yaml")


def test_a_set_problem_is_blamed_on_the_set():
    with pytest.raises(RecipeError) as err:
        load_recipe("tiny", ["trainer.logger.0=wandb"])
    [problem] = err.value.problems
    assert problem.key == "trainer.logger" and problem.message.startswith("--set trainer.logger.0=wandb:")
    with pytest.raises(RecipeError) as err:
        load_recipe("tiny", ["rollout.val_kwargs=3"])
    assert err.value.problems[0].message.startswith("--set rollout.val_kwargs=3:")


def test_one_yaml_reader_reads_every_yaml_file_in_lib():
    """Issue 20.2: every YAML file lib/ reads goes through grpolab.recipe.yamlio (bounded, special files refused,
    duplicate keys and alias bombs refused); a bare PyYAML load anywhere else is a second reader."""
    import re

    lib = params_dir().parent / "lib" / "grpolab"
    allowed = {
        "recipe/yamlio.py",  # the reader itself
        "verl/config.py",  # the installed verl's own generated config (trusted, a loader for its ${...} values)
    }
    bare = re.compile(r"\byaml\.(safe_load|load|full_load|unsafe_load)\(")
    found = {str(p.relative_to(lib)) for p in lib.rglob("*.py") if bare.search(p.read_text())} - allowed
    assert not found, f"bare PyYAML loads in {sorted(found)}: use grpolab.recipe.yamlio.load_yaml / read_yaml"
