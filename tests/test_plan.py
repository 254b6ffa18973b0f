"""`grpolab plan`: the upstream scripts' layouts are among the valid ones it lists, what it lists passes
`grpolab check`, impossible asks name the smallest cluster that fits, `--write` writes a recipe that checks
clean (never overwrites, never writes a secret, validates what it writes), the cheap pruning and the verdict
agree with the rules, layout errors in `grpolab check` propose whole valid layouts that do pass, `--json`
carries the recipe's own layout, and rows that differ only in the pipeline layout are one row that says what
the layout means. The cost model itself: tests/test_cost.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grpolab.plan import io, search
from grpolab.problems import errors
from grpolab.recipe.layout import with_layout
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
    fewer = search.plan(io.load("glm5_2", smallest - 1))
    assert not (any(t.fits for t in fewer.train) and any(r.fits for r in fewer.rollout))
    assert search.choices(search.plan(io.load("glm5_2", smallest)), 1)
    # nothing fits: no table is drawn, not even its header
    assert "train layout" not in proc.stdout and "est. step s" not in proc.stdout


def test_plan_for_a_bare_model_card_and_another_hardware():
    code, doc = plan_json("qwen3_235b_a22b", "--nodes", "4", "--hardware", "gpu-h200", "--top", "3")
    assert doc["cluster"] == {"nnodes": 4, "devices_per_node": 8, "hardware": "gpu-h200", "world_size": 32}
    assert code == 0 and len(doc["layouts"]) == 3


def test_plan_takes_any_model_the_resolver_knows_on_the_base_recipe(tmp_path):
    """A hub id of the family table, and a card file `grpolab card --out` wrote, plan on params/base.yaml and say
    so; an unknown model exits 2 naming what was tried."""
    code, doc = plan_json("deepseek-ai/DeepSeek-V3", "--hardware", "gpu-h100", "--nodes", "32", "--top", "2")
    assert code == 0 and len(doc["layouts"]) == 2
    assert doc["model"] == {
        "name": "DeepSeek-V3",
        "found": "family table",
        "where": "params/model_configs.yaml: DeepSeek-V3",
        "base": "params/base.yaml",
    }
    assert doc["cluster"]["world_size"] == 256
    card = tmp_path / "k2.yaml"
    assert grpolab("card", "Kimi-K2", "--out", str(card)).returncode == 0
    proc = grpolab("plan", str(card), "--hardware", "gpu-h200", "--nodes", "16", "--top", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"model Kimi-K2 (card file: {card}) on the base recipe params/base.yaml" in proc.stdout
    # check takes the same file as model.card
    for ref, known in ((card, True), (tmp_path / "none.yaml", False)):
        checked = grpolab("check", "qwen3_8b", "--set", f"model.card={ref}", "--set", "model.path=", "--json")
        rules = {p["rule"] for p in json.loads(checked.stdout)}
        assert ("schema" not in rules) is known, rules
    unknown = grpolab("plan", "acme/unheard-of-9b")
    assert unknown.returncode == 2 and "no model 'acme/unheard-of-9b'" in unknown.stderr
    assert "params/recipes/" in unknown.stderr and "model_configs.yaml" in unknown.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["no_such_recipe"],
        ["glm5_2", "--hardware", "tpu-v9"],
        ["glm5_2", "--nodes", "0"],
        ["glm5_2", "--set", "train.tpp=2"],
        ["qwen3_8b", "--nodes", str(10**14)],  # beyond the one divisor helper's guard: no layouts to enumerate
    ],
)
def test_bad_input_exits_2_or_names_the_key(args):
    proc = grpolab("plan", *args)
    if "train.tpp=2" in args:  # a schema problem: exit 1 naming the key and the closest valid one
        assert proc.returncode == 1 and "train.tp" in proc.stdout
    else:
        assert proc.returncode == 2 and proc.stderr.startswith("grpolab plan:"), proc.stderr
    if str(10**14) in args:  # says so, naming the key, rather than "no layout fits" or an internal error
        assert "cluster.nnodes" in proc.stderr and "internal error" not in proc.stderr


def test_the_plan_notebook_stops_on_a_cluster_beyond_the_guard_with_the_planners_message():
    """05_plan (notebook.plan_layouts) with `nodes = 10**14`: a NotebookStop naming the key, as `grpolab plan`
    says it (exit 2 above), never the planner's InputError as a traceback."""
    from grpolab.notebook import NotebookStop, plan_layouts

    with pytest.raises(NotebookStop) as stopped:
        plan_layouts("qwen3_8b", 10**14)
    assert str(stopped.value).startswith("cluster.nnodes: 100000000000000 nodes x 8 devices")
    assert "--nodes" in str(stopped.value)


def test_without_a_model_card_plan_says_how_to_add_one():
    """A recipe whose model nobody has a card for: `grpolab plan` cannot screen or price a layout, and says what
    `grpolab check` says (the card is missing, how to add one), as an error no layout fixes: exit 1."""
    no_card = ["model.path=acme-research/Nocard-14B-Instruct", "model.card=null"]
    proc = grpolab("plan", "qwen3_8b", *[a for o in no_card for a in ("--set", o)])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[model-card] model.card" in proc.stdout and "grpolab card MODEL_DIR_OR_NAME" in proc.stdout
    assert "no layout fits" not in proc.stdout
    [error] = search.plan(io.load("qwen3_8b", None, None, no_card)).recipe_errors
    assert (error.rule, error.severity, error.key) == ("model-card", "error", "model.card")


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
    recipe = io.load("glm5_2", 3)  # 48 devices: many layouts do not divide
    facts = search.model_facts(recipe)[0]
    skipped = [
        c
        for c in search.train_space(recipe, facts)
        if recipe.world_size % (c.tp * c.pp * c.cp) or recipe.world_size % (c.ep * c.etp * c.pp)
    ]
    assert skipped
    for cand in skipped[:: max(len(skipped) // 25, 1)]:
        rules = {p.rule for p in validate(with_layout(recipe, train=cand)) if p.severity == "error"}
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
    own_slow = search.own_choice(
        search.plan(io.load("glm5_2", None, None, [*base["layouts"][0]["overrides"], "cluster.inter_node_gbps=1"]))
    )
    own_base = search.own_choice(search.plan(io.load("glm5_2", None, None, base["layouts"][0]["overrides"])))
    assert own_slow.train.cost["total"] > own_base.train.cost["total"]
    assert slow["rejected"] == plan_json("glm5_2", "--top", "1", *sets)[1]["rejected"]


def test_write_keeps_secrets_out_and_writes_what_the_loader_typed(tmp_path):
    """`--set env.HF_TOKEN=...` is written as a reference Ray expands where the job runs, never the value;
    `trainer.experiment=2024` stays the string the schema asks for; an unparseable value never crashes."""
    import os

    import yaml

    params = tmp_path / "params"
    shutil.copytree(ROOT / "params", params)
    env = {**os.environ, "GRPOLAB_PARAMS": str(params)}
    secret = "hf_notreal_7c9e4d2b1a"
    sets = ["--set", f"env.HF_TOKEN={secret}", "--set", "trainer.experiment=2024"]
    proc = grpolab("plan", "qwen3_30b_a3b", "--top", "1", *sets, "--write", "q30_secret", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = (params / "recipes" / "q30_secret.yaml").read_text()
    assert secret not in text and secret not in proc.stdout + proc.stderr
    data = yaml.safe_load(text)
    assert data["env"]["HF_TOKEN"] == "${HF_TOKEN}" and "a reference, not the value" in text
    assert data["trainer"]["experiment"] == "2024"
    check = grpolab("check", "q30_secret", "--no-verl", env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    unclosed = grpolab(
        "plan", "qwen3_30b_a3b", "--top", "1", "--set", "trainer.experiment=[unclosed", "--write", "q30_x", env=env
    )
    assert "internal error" not in unclosed.stderr and "Traceback" not in unclosed.stderr
    written = params / "recipes" / "q30_x.yaml"
    if unclosed.returncode == 0:  # the loader typed it as the string it is: check accepts what was written
        assert yaml.safe_load(written.read_text())["trainer"]["experiment"] == "[unclosed"
        assert grpolab("check", "q30_x", "--no-verl", env=env).returncode == 0
    else:  # refused cleanly: nothing written
        assert unclosed.returncode in (1, 2) and not written.exists()
    assert not [p for p in (params / "recipes").iterdir() if p.name.startswith(".")]  # no temporary file left


def test_write_from_the_library_takes_the_secret_test_from_the_recipe_layer(tmp_path, monkeypatch):
    """plan.io.write_recipe asks grpolab.recipe.secrets itself (no check handed in by a front end): a name that
    looks secret and a name the recipe lists under `secrets:` are both written as `${NAME}`, a plain one as its
    value; the CLI test above shows the same from `grpolab plan --write`."""
    params = tmp_path / "params"
    shutil.copytree(ROOT / "params", params)
    monkeypatch.setenv("GRPOLAB_PARAMS", str(params))
    sets = ["env.HF_TOKEN=hf_lib_secret_1234", "secrets=[MY_VAR]", "env.MY_VAR=marked_secret_5678", "env.PLAIN=on"]
    recipe = io.load("qwen3_30b_a3b", None, None, sets)
    best = search.choices(search.plan(recipe), 1)[0]
    path = io.write_recipe("q30_lib", "qwen3_30b_a3b", best.train.layout, best.rollout.layout, recipe, None, sets)
    text = path.read_text()
    assert "hf_lib_secret_1234" not in text and "marked_secret_5678" not in text
    env = yaml.safe_load(text)["env"]
    assert env["HF_TOKEN"] == "${HF_TOKEN}" and env["MY_VAR"] == "${MY_VAR}" and env["PLAIN"] == "on"


def test_json_has_the_recipe_own_layout_in_the_shape_of_a_layout_entry(glm_all):
    _, doc = glm_all
    own = doc["own"]
    assert set(own) == set(doc["layouts"][0])
    assert own["recipe_layout"] is True and own["passes_rules"] is True
    assert own["train"]["tp"] == 8 and own["train"]["pp_layout"] == GLM_LAYOUT
    assert own["rollout"] == {"tp": 8, "dp": 8, "ep": 64}
    est = own["est_step_s"]
    assert est["kind"] == "estimate" and abs(est["rollout"] + est["train"] - est["total"]) <= 0.2
    assert set(est["phases"]) == {"rollout", "old_log_prob", "reference", "update", "weight_sync"}
    for side in ("rollout", "train"):  # every figure keeps its parts, and they add up
        parts = est["parts"][side]
        phases = [v for v in parts.values() if isinstance(v, dict)]
        assert phases and abs(sum(v["total"] for v in phases) - parts["total"]) < 0.1
        for phase in phases:
            assert abs(sum(v for k, v in phase.items() if k != "total") - phase["total"]) < 0.1
    assert doc["workload"]["sequences"] == 64 * 8 and doc["workload"]["prompts"] == 64


def test_mean_response_lowers_the_estimate_and_can_come_from_a_run():
    _, full = plan_json("qwen3_30b_a3b", "--top", "1")
    _, short = plan_json("qwen3_30b_a3b", "--top", "1", "--mean-response", "2000")
    assert short["workload"]["response_mean"] == 2000 and full["workload"]["response_mean"] == 8192
    assert short["own"]["est_step_s"]["total"] < full["own"]["est_step_s"]["total"]
    metrics = ROOT / "tests" / "data" / "monitor" / "tiny_seed1.jsonl"  # a real run's response_length/mean
    _, from_run = plan_json("qwen3_30b_a3b", "--top", "1", "--mean-response", str(metrics))
    assert 1 <= from_run["workload"]["response_mean"] <= 5
    bad = grpolab("plan", "qwen3_30b_a3b", "--mean-response", "no_such_run")
    assert bad.returncode == 2 and "--mean-response" in bad.stderr


def test_rows_that_differ_only_in_the_pipeline_layout_are_one_row_saying_what_it_means():
    from grpolab.plan import table

    p = search.plan(io.load("glm5_2"))
    groups: dict = {}
    for s in p.train:
        if s.layout.pp == 8 and s.layout.vpp == 1:
            groups.setdefault(s.layout.parallel()[:6] + (s.layout.sp,), []).append(s)
    pair = next(v for v in groups.values() if len({s.layout.pp_layout for s in v}) == 2)
    listed = [search.Choice(s, p.rollout[0]) for s in pair]
    rows, letters = table.rows(listed)
    assert len(rows) == 1 and rows[0].rank_text() == "1-2" and rows[0].train_text().endswith("[A|B]")
    legend = "\n".join(table.legend(letters))
    assert (
        f"train.pp_layout {GLM_LAYOUT}: 8 pipeline stages of 10, 12, 8, 8, 12, 12, 12, 4 transformer layers" in legend
    )
    assert "the embedding on stage 1; the loss on stage 8" in legend
    text = grpolab("plan", "glm5_2", "--top", "10").stdout
    for letter in {m for m in __import__("re").findall(r"\[([A-Z])\]", text)}:
        assert f"[{letter}] train.pp_layout " in text and "pipeline stages of" in text


def test_the_verdict_with_the_card_read_once_agrees_with_every_rule(monkeypatch):
    """Listed layouts are confirmed without reading the model card again, and that verdict says what the full
    check says about every layout key, on valid and broken layouts alike."""
    from grpolab.recipe import cards

    recipe = io.load("glm5_2")
    p = search.plan(recipe)
    reads = []
    real = cards.load_card
    monkeypatch.setattr(cards, "load_card", lambda *a, **k: reads.append(a) or real(*a, **k))
    listed = search.choices(p, None)
    assert len(listed) > 100 and reads == []
    trains = list(search.train_space(recipe, p.facts))[::97]
    rollouts = list(search.rollout_space(recipe))[::7]
    cases = [(c.train.layout, c.rollout.layout) for c in listed[::40]] + list(zip(trains, rollouts * 50))
    broken = 0
    for t, r in cases:
        whole = with_layout(recipe, t, r)
        mine = {q.rule for q in search.verdict(whole, p.facts) if q.severity == "error" and search.depends_on_layout(q)}
        full = {q.rule for q in validate(whole) if q.severity == "error" and search.depends_on_layout(q)}
        assert mine == full, (t, r)
        broken += bool(full)
    assert broken > 5
