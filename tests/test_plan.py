"""`grpolab plan`: the upstream scripts' layouts are among the valid ones it lists, what it lists passes
`grpolab check`, impossible asks name the smallest cluster that fits, `--write` writes a recipe that checks
clean (and never overwrites), the cheap pruning agrees with the rules, and layout errors in `grpolab check`
propose whole valid layouts that do pass."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grpolab.plan import planner
from grpolab.problems import errors
from grpolab.rules.gate import check
from grpolab.rules.validate import validate

ROOT = Path(__file__).resolve().parents[1]
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
GLM_LAYOUT = "Et*10|t*12|t*8|t*8|t*12|t*12|t*12|t*4L"  # verl PR 7788 (docs/facts.md section 1)


def grpolab(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([GRPOLAB, *args], capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)


def plan_json(*args: str, env: dict | None = None) -> tuple[int, dict]:
    proc = grpolab("plan", *args, "--json", env=env)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def glm_all():
    return plan_json("glm5_2", "--all")


def test_glm5_2_on_32x16_lists_the_upstream_layouts(glm_all):
    code, doc = glm_all
    assert code == 0
    trains = [lay["train"] for lay in doc["layouts"]]
    rollouts = [lay["rollout"] for lay in doc["layouts"]]
    upstream = {"tp": 8, "pp": 8, "cp": 1, "ep": 64, "etp": 1, "vpp": 1, "pp_layout": GLM_LAYOUT}
    assert any(all(t[k] == v for k, v in upstream.items()) for t in trains)
    assert {"tp": 8, "dp": 8, "ep": 64} in rollouts
    assert doc["cluster"]["world_size"] == 512
    # every figure is labelled an estimate; rejected counts are per rule id
    assert all(
        lay["memory_gb"]["kind"] == "estimate" and lay["est_step_s"]["kind"] == "estimate" for lay in doc["layouts"]
    )
    assert doc["rejected"] and all(isinstance(n, int) and n > 0 for n in doc["rejected"].values())
    # best first
    totals = [lay["est_step_s"]["total"] for lay in doc["layouts"] if lay["fits"]]
    assert totals == sorted(totals)


def test_glm5_2_layouts_keep_the_dsa_stage_rule(glm_all):
    """Every pipeline layout listed for GLM-5.2 starts its stages on layers the shared DSA indexer allows."""
    from grpolab.recipe import pplayout

    _, doc = glm_all
    layouts = {lay["train"]["pp_layout"] for lay in doc["layouts"] if lay["train"]["pp"] > 1}
    assert None not in layouts and len(layouts) > 1
    for layout in layouts:
        starts = pplayout.stage_starts(pplayout.parse(layout))
        assert all(s <= 3 or (s - 3) % 4 == 0 for s in starts), layout


def test_qwen3_5_on_4x16_lists_the_upstream_layouts():
    code, doc = plan_json("qwen3_5_122b_a10b_32k", "--all")
    assert code == 0
    upstream = {"tp": 2, "pp": 4, "cp": 4, "ep": 16, "etp": 1, "vpp": 1}
    assert any(all(lay["train"][k] == v for k, v in upstream.items()) for lay in doc["layouts"])
    assert {"tp": 16, "dp": 1, "ep": 16} in [lay["rollout"] for lay in doc["layouts"]]


def test_a_sample_of_listed_layouts_passes_grpolab_check():
    """The best, a middle and the last of the top layouts, passed back as --set, check clean (verl composed)."""
    code, doc = plan_json("qwen3_5_122b_a10b_32k", "--top", "6")
    assert code == 0 and len(doc["layouts"]) == 6
    for lay in (doc["layouts"][0], doc["layouts"][3], doc["layouts"][-1]):
        recipe, problems = check("qwen3_5_122b_a10b_32k", lay["overrides"])
        assert recipe is not None and not errors(problems), [p.format() for p in errors(problems)]
        assert recipe.train.tp == lay["train"]["tp"] and recipe.rollout.dp == lay["rollout"]["dp"]


def test_glm5_2_best_layout_passes_grpolab_check_from_the_command_line():
    _, doc = plan_json("glm5_2", "--top", "1")
    sets = [arg for o in doc["layouts"][0]["overrides"] for arg in ("--set", o)]
    proc = grpolab("check", "glm5_2", *sets)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_an_impossible_ask_exits_1_with_the_smallest_cluster_that_fits():
    proc = grpolab("plan", "glm5_2", "--nodes", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "smallest cluster that fits" in proc.stdout
    code, doc = plan_json("glm5_2", "--nodes", "1")
    smallest = doc["smallest_nodes"]
    assert code == 1 and doc["layouts"] == [] and smallest and smallest > 1
    assert f"--nodes {smallest}" in proc.stdout
    # it is the smallest: one node fewer has no fitting layout, the named size has one
    fewer = planner.plan(planner.load("glm5_2", smallest - 1))
    assert not (any(t.fits for t in fewer.train) and any(r.fits for r in fewer.rollout))
    assert planner.choices(planner.plan(planner.load("glm5_2", smallest)), 1)


def test_plan_for_a_bare_model_card_and_another_hardware():
    code, doc = plan_json("qwen3_235b_a22b", "--nodes", "4", "--hardware", "gpu-h200", "--top", "3")
    assert doc["cluster"] == {"nnodes": 4, "devices_per_node": 8, "hardware": "gpu-h200", "world_size": 32}
    assert code == 0 and len(doc["layouts"]) == 3


@pytest.mark.parametrize(
    "args",
    [
        ["no_such_recipe"],
        ["glm5_2", "--hardware", "tpu-v9"],
        ["glm5_2", "--nodes", "0"],
        ["glm5_2", "--set", "train.tpp=2"],
    ],
)
def test_bad_input_exits_2_or_names_the_key(args):
    proc = grpolab("plan", *args)
    if "train.tpp=2" in args:  # a schema problem: exit 1 naming the key and the closest valid one
        assert proc.returncode == 1 and "train.tp" in proc.stdout
    else:
        assert proc.returncode == 2 and proc.stderr.startswith("grpolab plan:"), proc.stderr


def test_write_makes_a_recipe_that_checks_clean_and_never_overwrites(tmp_path):
    params = tmp_path / "params"
    shutil.copytree(ROOT / "params", params)
    env = {**__import__("os").environ, "GRPOLAB_PARAMS": str(params)}
    proc = grpolab("plan", "qwen3_30b_a3b", "--top", "2", "--write", "q30_planned", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    written = params / "recipes" / "q30_planned.yaml"
    assert written.is_file() and "estimate" in written.read_text().splitlines()[0]
    assert grpolab("check", "q30_planned", env=env).returncode == 0
    before = written.read_text()
    again = grpolab("plan", "qwen3_30b_a3b", "--write", "q30_planned", env=env)
    assert again.returncode == 2 and "exists" in again.stderr and written.read_text() == before
    bad = grpolab("plan", "qwen3_30b_a3b", "--write", "../escape", env=env)
    assert bad.returncode == 2 and not (params / "escape.yaml").exists()


def test_cheap_pruning_agrees_with_the_rules():
    """Layouts skipped before the rules run (world not divisible) are rejected by those very rules."""
    recipe = planner.load("glm5_2", 3)  # 48 devices: many layouts do not divide
    facts = planner.model_facts(recipe)[0]
    skipped = [
        c
        for c in planner.train_space(recipe, facts)
        if recipe.world_size % (c.tp * c.pp * c.cp) or recipe.world_size % (c.ep * c.etp * c.pp)
    ]
    assert skipped
    for cand in skipped[:: max(len(skipped) // 25, 1)]:
        rules = {p.rule for p in validate(planner.apply(recipe, train=cand)) if p.severity == "error"}
        want = "world-divisible" if recipe.world_size % (cand.tp * cand.pp * cand.cp) else "expert-divisible"
        assert want in rules, (cand, rules)


def test_check_proposes_whole_valid_layouts_for_layout_errors():
    proc = grpolab("check", "glm5_2", "--set", "train.tp=3", "--set", "rollout.ep=32", "--no-verl", "--json")
    assert proc.returncode == 1
    problems = json.loads(proc.stdout)
    heads = next(p for p in problems if p["rule"] == "heads-tp")
    rollout = next(p for p in problems if p["rule"] == "rollout-ep")
    for problem in (heads, rollout):
        assert "grpolab plan" in problem["fix"], problem["fix"]
    # the first proposed layouts, applied, fix those errors
    import shlex

    def first_sets(fix: str) -> list[str]:
        words = shlex.split(fix.split("(grpolab plan): ", 1)[1].split(" | ")[0])
        return [w for w in words if w != "--set"]

    sets = ["train.tp=3", "rollout.ep=32"] + first_sets(heads["fix"]) + first_sets(rollout["fix"])
    _, after = check("glm5_2", sets, verl=False)
    assert not errors(after), [p.format() for p in errors(after)]


def test_the_cost_model_constants_come_from_the_hardware_profile():
    """Faster memory lowers the estimated rollout (decode is bandwidth-bound); a slower inter-node link raises the
    training estimate of a layout whose groups span nodes. The layouts stay the same: only estimates move."""
    _, base = plan_json("glm5_2", "--top", "1")
    _, fast_hbm = plan_json("glm5_2", "--top", "1", "--set", "cluster.hbm_gbps=6400")
    assert fast_hbm["layouts"][0]["est_step_s"]["rollout"] < base["layouts"][0]["est_step_s"]["rollout"]
    sets = [a for o in base["layouts"][0]["overrides"] for a in ("--set", o)]
    _, slow = plan_json("glm5_2", "--top", "1", *sets, "--set", "cluster.inter_node_gbps=1")
    own_slow = planner.own_choice(
        planner.plan(
            planner.load("glm5_2", None, None, [*base["layouts"][0]["overrides"], "cluster.inter_node_gbps=1"])
        )
    )
    own_base = planner.own_choice(planner.plan(planner.load("glm5_2", None, None, base["layouts"][0]["overrides"])))
    assert own_slow.train.cost["total"] > own_base.train.cost["total"]
    assert slow["rejected"] == plan_json("glm5_2", "--top", "1", *sets)[1]["rejected"]
