"""Every launch means the same on verl 0.7.1, 0.8.0, 0.9.0, 0.9.1 and main, or check says why not (issue 33).

Each version is checked from its own wheel (tests/conftest.py `verl_at`: GRPOLAB_VERL_ROOT at the unpacked wheel,
nothing installed): the key its workers read (the version table, lib/grpolab/data/verl_versions.json, derived by
scripts/verl_versions.py from each version's source), how it selects Megatron, the values it accepts, the keys it
reads nothing for. The version matrix composes every seed recipe with each version's own config.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grpolab.problems import errors
from grpolab.recipe.loader import load_recipe
from grpolab.rules.gate import check, gate
from grpolab.verl import config as verl_schema
from grpolab.verl import fieldmap, versions
from grpolab.verl.render import render, to_sh

ROOT = Path(__file__).resolve().parents[1]
VERL_RELEASES = ("0.7.1", "0.8.0", "0.9.0", "0.9.1")  # conftest's, the wheels the matrix reads
VERSIONS = (*VERL_RELEASES, "main")
SEEDS = ("glm5_2", "qwen3_5_122b_a10b_32k", "qwen3_30b_a3b", "qwen3_8b")
ULYSSES = fieldmap.VERSIONED["ulysses"]
# glm5_2's settings that 0.7.1, 0.8.0 or main have no key for, set to what they do without one (0.9.1's defaults)
OLDER_LACK = (
    "train.precision_aware_optimizer=false",
    "train.router_replay=disabled",
    "trainer.load_strict=true",
    "train.pad_bshd_to_minibatch_max=true",
)


def _keys(recipe_name: str, overrides: list[str] = ()) -> dict[str, str]:
    launch = render(load_recipe(recipe_name, list(overrides)))
    return dict(o.split("=", 1) for o in launch.overrides if "=" in o and not o.startswith("--"))


def test_the_committed_table_is_what_the_wheels_say(verl_packages):
    for release in VERL_RELEASES:
        verl_packages(release)  # fails naming how to get a missing wheel
    proc = subprocess.run(
        [sys.executable, "scripts/verl_versions.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = versions.table()
    assert set(VERL_RELEASES) <= set(table) and any("main" in f for f in table.values())
    for facts in table.values():  # every fact says where it comes from
        assert facts["source"] and facts["megatron"]["source"] and facts["loss_agg_modes"]["source"]
        assert all(entry["source"] for entry in facts["reads"].values())


@pytest.mark.parametrize("version", VERSIONS)
def test_ulysses_sp_reaches_the_key_the_version_reads(verl_at, version):
    """0.7.1's (and main's) default FSDP worker builds its mesh from actor.ulysses_sequence_parallel_size; 0.8.0+ from
    fsdp_config: SP 2 renders to the one that version reads, and check passes it. That its composed config carries 2
    there is checked on the one composition of this launch (Hydra, ~1 s of CPU a version), in
    test_matrix_every_first_class_value_reaches_the_key_the_version_reads."""
    verl_at(version)
    legacy = version in ("0.7.1", "main")
    read = _ulysses_read(version)
    keys = _keys("qwen3_8b", ["train.ulysses_sp=2"])
    assert keys[read] == "2"
    assert (ULYSSES[0] in keys) is not legacy  # the key that version does not read is not written
    _, problems = check("qwen3_8b", ["train.ulysses_sp=2"])
    assert not errors(problems), [p.format() for p in errors(problems)]


def _ulysses_read(version: str) -> str:
    """The SP key that version's FSDP worker reads (0.7.1 and main: the actor's own; 0.8.0+: fsdp_config's)."""
    return ULYSSES[1] if version in ("0.7.1", "main") else ULYSSES[0]


def test_setting_the_key_0_7_1_reads_through_verl_overrides_names_the_field(verl_at):
    verl_at("0.7.1")
    _, problems = check("qwen3_8b", [f"verl_overrides.{ULYSSES[1]}=2"])
    shadow = [p for p in problems if p.rule == "override-shadows"]
    assert shadow and "train.ulysses_sp" in shadow[0].fix


@pytest.mark.parametrize("version", VERSIONS)
def test_megatron_is_selected_the_way_the_version_selects_it(verl_at, version):
    verl_at(version)
    fixes = list(OLDER_LACK)  # what 0.7.1 / main lack
    recipe, problems = check("glm5_2", fixes)
    assert not errors(problems), [p.format() for p in errors(problems)]  # composed with that version's config
    launch = render(recipe)
    by_name = version in ("0.7.1", "main")
    assert ("--config-name=ppo_megatron_trainer" in launch.argv()) is by_name
    assert ("model_engine=megatron" in launch.overrides) is not by_name
    assert launch.to_dict()["config_name"] == ("ppo_megatron_trainer" if by_name else "ppo_trainer")


@pytest.mark.parametrize("version", VERSIONS)
def test_gradient_offload_never_lowers_the_memory_estimate(verl_at, version):
    """No version offloads gradients (0.9.1 lacks the key; the others assign it to an attribute nothing reads): the
    memory rule's figure is the same with and without train.grad_offload, and the field is said to do nothing."""
    verl_at(version)
    base = ["train.tp=1", "train.ep=1", "train.etp=1", "train.optimizer_offload=false", "train.param_offload=false"]

    def memory(extra: list[str]) -> list[str]:
        return [p.message for p in check("qwen3_30b_a3b", base + extra)[1] if p.rule == "memory"]

    off, on = memory(["train.grad_offload=false"]), memory(["train.grad_offload=true"])
    assert off and on == off
    _, problems = check("qwen3_30b_a3b", base + ["train.grad_offload=true"])
    said = [p for p in problems if p.rule == "verl-version" and p.key == "train.grad_offload"]
    assert said and f"verl {verl_schema.verl_version()}" in said[0].message
    assert fieldmap.verl_key("train.grad_offload") not in _keys("qwen3_30b_a3b", ["train.grad_offload=true"])


@pytest.mark.parametrize("version", VERSIONS)
def test_the_collective_timeout_is_rendered_only_where_it_is_read(verl_at, version):
    verl_at(version)
    key = fieldmap.verl_key("trainer.timeout_s")
    _, problems = check("qwen3_8b", ["trainer.timeout_s=1800"])
    said = [p for p in errors(problems) if p.key == "trainer.timeout_s"]
    if version in ("0.7.1", "main"):  # the legacy workers pass nccl_timeout to init_process_group
        assert not said and _keys("qwen3_8b", ["trainer.timeout_s=1800"])[key] == "1800"
    else:
        assert said and f"verl {verl_schema.verl_version()}" in said[0].message and "HCCL_EXEC_TIMEOUT" in said[0].fix
        assert key not in _keys("qwen3_8b", ["trainer.timeout_s=1800"])
        # and the startup-timeout rule does not offer a fix that does nothing there
        big = check("qwen3_5_122b_a10b_32k")[1]
        assert not [p for p in big if p.rule == "startup-timeout" and p.key == "trainer.timeout_s"]


@pytest.mark.parametrize("version", VERSIONS)
def test_loss_agg_mode_token_sum_only_where_verl_has_it(verl_at, version):
    verl_at(version)
    _, problems = check("qwen3_8b", ["algorithm.loss_agg_mode=token-sum"])
    said = [p for p in errors(problems) if p.key == "algorithm.loss_agg_mode"]
    if version in ("0.9.0", "0.9.1"):
        assert not said
    else:
        assert said and f"verl {verl_schema.verl_version()}" in said[0].message and "token-mean" in said[0].fix


def test_defaults_that_changed_are_named_on_the_versions_that_differ(verl_at):
    verl_at("0.7.1")
    problems = gate(load_recipe("qwen3_8b"))
    named = {p.key for p in problems if p.rule == "verl-version" and p.severity == "warning"}
    assert {"rollout.max_num_seqs", "rollout.calculate_log_probs"} <= named  # 1024 and false in 0.7.1
    problems = gate(load_recipe("qwen3_8b", ["rollout.max_num_seqs=1024", "rollout.calculate_log_probs=false"]))
    assert not {p.key for p in problems if p.rule == "verl-version"} & named  # said by the recipe: nothing to name


def test_the_cudagraph_alias_counts_only_where_vllm_gets_it_under_that_name(verl_at):
    alias = fieldmap.VERSIONED["cudagraph_alias"][0]
    for version, counts in (("0.8.0", False), ("0.9.1", True)):
        verl_at(version)
        found = fieldmap.match(alias, "fsdp", "vllm")
        assert (found is not None and found.alias is not None) is counts, version


def test_the_sh_header_and_the_launch_record_carry_the_verl_version(verl_at):
    verl_at("0.8.0")
    recipe = load_recipe("qwen3_8b")
    launch = render(recipe)
    assert launch.verl_version == "0.8.0" and launch.to_dict()["verl_version"] == "0.8.0"
    assert "# Rendered for verl 0.8.0" in to_sh(launch, recipe)


def test_a_verl_outside_the_supported_range_is_warned_about_once(verl_at, tmp_path, monkeypatch):
    package = verl_at("0.9.1")
    fake = tmp_path / "verl"
    fake.mkdir()
    for child in package.iterdir():
        if child.name != "version":
            (fake / child.name).symlink_to(child)
    (fake / "version").mkdir()
    (fake / "version" / "version").write_text("0.6.0\n")
    monkeypatch.setenv("GRPOLAB_VERL_ROOT", str(fake))
    problems = [p for p in gate(load_recipe("qwen3_8b")) if p.rule == "verl-version" and p.key == "stack.verl"]
    assert len(problems) == 1 and "0.6.0" in problems[0].message and problems[0].severity == "warning"
    assert versions.supported("0.10.0.dev0") and not versions.supported("0.10.0") and versions.supported("0.7.1")


# ---------------------------------------------------------------------------------------------------- the matrix


@pytest.mark.parametrize("version", VERSIONS)
def test_matrix_every_seed_checks_and_composes_or_names_the_version(verl_at, version):
    """Each seed recipe, under each version's own config: check passes and its render composes (the gate composes
    it with Hydra), or every error names that version and what it lacks. Every first-class key rendered is one the
    version's config has (or a free-form one) and none is a key its workers read nothing for."""
    verl_at(version)
    name = verl_schema.verl_version()
    for seed in SEEDS:
        recipe = load_recipe(seed)
        verdict = gate(recipe)
        said = {p.key for p in verdict}
        problems = errors(verdict)
        for p in problems:
            assert p.rule in ("verl-schema", "verl-version") and f"verl {name}" in p.message, (seed, p.format())
        found = fieldmap.checked_facts()
        unread = {k for k, e in found["reads"].items() if e["key"] is None}
        config = verl_schema.base_config(recipe.train.engine)
        flat = {k for k, _ in _flat(config)}
        for key in fieldmap.render_keys(recipe, "/RUN"):
            assert key not in unread, (seed, key)
            bare = key.lstrip("+")
            known = bare in flat or verl_schema.in_free_form(config, bare)
            assert known or fieldmap.field_of(key) in said, (seed, key)


def _flat(config: dict, prefix: str = ""):
    for k, v in config.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        yield key, v
        if isinstance(v, dict):
            yield from _flat(v, key)


@pytest.mark.parametrize("version", VERSIONS)
def test_matrix_the_corpus_settings_land_where_the_version_reads_them(verl_at, version):
    """Every override of the recorded public launches (tests/data/corpus) that lands on a first-class field, under
    each version: the field renders back to a key that version reads (so an imported launch keeps its meaning), or
    to none where the version reads nothing for it (and check names the field)."""
    import yaml

    verl_at(version)
    found = fieldmap.checked_facts()
    launches = sorted((ROOT / "tests" / "data" / "corpus" / "launches").glob("*.yaml"))
    assert len(launches) > 50
    keys: dict[str, str] = {}  # every key the launches set -> one launch that sets it
    for path in launches:
        for arg in yaml.safe_load(path.read_text())["args"]:
            key = arg.split("=", 1)[0].lstrip("+")
            if "=" in arg and not key.startswith("-"):
                keys.setdefault(key, path.name)
    seen = 0
    for key, where in keys.items():
        for engine in fieldmap.VERL:
            hit = fieldmap.match(key, engine, "vllm")
            if hit is None or hit.row is None or hit.row.kind != "value":
                continue
            seen += 1
            read = fieldmap.row_key(hit.row, "vllm", found)
            assert read == key or (read is None and fieldmap.key_name(hit.row, "vllm") == key), (where, key)
    assert seen > 100


def test_the_matrix_fails_naming_how_to_get_a_missing_wheel(tmp_path, monkeypatch, verl_packages):
    monkeypatch.setenv("GRPOLAB_VERL_WHEELS", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match="pip download --no-deps verl==0.8.0"):
        verl_packages("0.8.0")


def test_render_json_says_which_verl_it_was_rendered_for():
    proc = subprocess.run(
        [sys.executable, "-m", "grpolab", "render", "qwen3_8b", "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["verl_version"] == verl_schema.verl_version()


def test_preflight_compares_each_nodes_verl_with_the_one_rendered_for(verl_at):
    from grpolab.preflight.node import packages
    from grpolab.preflight.report import FAIL, OK
    from grpolab.preflight.spec import node_spec

    installed = verl_schema.verl_version()  # this machine is the node: its verl is the shared venv's
    spec = node_spec(load_recipe("qwen3_8b"))
    assert spec["rendered_verl"] == installed
    assert {r["check"]: r for r in packages.check_stack(spec, {})}["verl-rendered"]["status"] == OK
    verl_at("0.8.0")  # rendered for another verl than the node runs
    spec = node_spec(load_recipe("qwen3_8b"))
    row = {r["check"]: r for r in packages.check_stack(spec, {})}["verl-rendered"]
    assert row["status"] == FAIL and "0.8.0" in row["detail"] and installed in row["detail"]
    assert "verl==0.8.0" in row["fix"]


def test_the_dry_run_says_which_verl_the_launch_is_rendered_for(verl_at):
    from grpolab.jobs import launch

    verl_at("0.7.1")
    described = launch.prepare(load_recipe("qwen3_8b")).describe()
    assert described["verl_version"] == "0.7.1"


@pytest.mark.parametrize(
    "version,override",
    [("0.7.1", f"{ULYSSES[0]}=2"), ("0.9.1", f"{fieldmap.verl_key('trainer.timeout_s')}=3600")],
)
def test_a_raw_override_of_a_key_the_version_does_not_read_is_an_error(verl_at, version, override):
    """Through verl_overrides too: 0.9.1's fsdp_config key on 0.7.1 (SP 1 there), nccl_timeout on 0.9.1 (unread)."""
    verl_at(version)
    _, problems = check("qwen3_8b", [f"verl_overrides.{override}"])
    said = [p for p in errors(problems) if p.rule == "verl-version" and p.key.startswith("verl_overrides.")]
    assert said and f"verl {version}" in said[0].message and "instead" in said[0].fix


@pytest.mark.parametrize("version", ["0.7.1", "0.9.1"])
def test_import_reads_both_ways_of_selecting_megatron(verl_at, version):
    """`model_engine=megatron` (0.8.0+) and `--config-name ppo_megatron_trainer` (0.7.1) both import as a Megatron
    recipe, under a version that has only one of them too."""
    from grpolab.importer.record import MAIN, Recorded
    from grpolab.importer.script import to_recipe

    verl_at(version)
    common = [
        "actor_rollout_ref.model.path=/m",
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2",
        "trainer.n_gpus_per_node=8",
    ]
    for selection in (["model_engine=megatron"], ["--config-name", "ppo_megatron_trainer"]):
        recorded = Recorded("python3", MAIN, ["-m", MAIN, *selection, *common], {})
        imported = to_recipe(recorded, "imported", device="cuda")
        assert imported.data["train"]["engine"] == "megatron" and imported.data["train"]["tp"] == 2, selection


@pytest.mark.parametrize("version", VERSIONS)
def test_matrix_every_first_class_value_reaches_the_key_the_version_reads(verl_at, version):
    """Composed with that version's own config (Hydra), each value a plain row renders is what the version's
    config holds at the key its workers read: FSDP (qwen3_8b, SP 2: 2 at the SP key that version reads) and
    Megatron (glm5_2)."""
    from grpolab.verl.config import same

    verl_at(version)
    found = fieldmap.checked_facts()
    megatron = list(OLDER_LACK)  # what 0.7.1 / main lack
    for seed, overrides in (("qwen3_8b", ["train.ulysses_sp=2"]), ("glm5_2", megatron)):
        recipe = load_recipe(seed, overrides)
        launch = render(recipe, "/RUN")
        composed = verl_schema.effective(launch.overrides, launch.config_name)
        if seed == "qwen3_8b":  # test_ulysses_sp_reaches_the_key_the_version_reads renders this launch too
            assert composed[_ulysses_read(version)] == 2
        checked = 0
        for row in fieldmap.KEYS:
            if row.kind != "value" or not fieldmap.applies(row, recipe.train.engine, recipe.rollout.engine):
                continue
            if row.needs and not fieldmap.value_of(recipe, row.needs):
                continue
            value = fieldmap.TRANSFORMS[row.transform][0](fieldmap.value_of(recipe, row.field), recipe, "/RUN")
            key = fieldmap.row_key(row, recipe.rollout.engine, found)
            if fieldmap.omitted(value, row.omit) or key is None or key not in composed:
                continue
            checked += 1
            assert same(composed[key], value), (seed, row.field, key, composed[key], value)
        assert checked > 60, seed


@pytest.mark.parametrize("version", VERSIONS)
def test_the_reward_reaches_the_keys_the_version_reads(verl_at, version, tmp_path):
    """The releases read the reward function and manager under `reward` (trainer/ppo/reward.py); main's older tree
    at the top level (custom_reward_function, reward_manager): a function and a manager render to the keys that
    version reads, and its own config composes with them."""
    verl_at(version)
    reward = tmp_path / "my_reward.py"
    reward.write_text("def score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.0\n")
    sets = [f"reward.function={reward}:score", "reward.manager=naive"]
    prefix = "" if version == "main" else "reward."
    keys = _keys("qwen3_8b", sets)
    assert keys[f"{prefix}custom_reward_function.name"] == "score"
    assert keys[f"{prefix}reward_manager.name"] == "naive"
    assert ("reward.custom_reward_function.name" in keys) is (version != "main")
    recipe, problems = check("qwen3_8b", sets)
    assert not errors(problems), [p.format() for p in errors(problems)]
    launch = render(recipe, "/RUN")
    composed = verl_schema.effective(launch.overrides, launch.config_name)
    assert composed[f"{prefix}custom_reward_function.path"] == str(reward)


# verl's V1 trainer modes (issue 42): each renders what the version reads, or check refuses it naming the version
RIS = "verl_overrides.algorithm.rollout_correction.rollout_is=token"
SEPARATE = ["schedule.mode=separate_async", "schedule.rollout_nnodes=1", "schedule.sync_backend=nccl", RIS]
MODES = {
    "sync": [],
    "colocate_async": ["schedule.mode=colocate_async", "schedule.warmup_batches=2", RIS],
    "separate_async": SEPARATE,
    "separate_async+switch": [*SEPARATE, "schedule.switch.enable=true", "schedule.switch.threshold_ratio=0.5"],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("version", VERSIONS)
def test_matrix_each_mode_reaches_the_keys_the_version_reads_or_is_refused_naming_it(verl_at, version, mode):
    """0.9.0+ (a V1 trainer) composes each mode with its settings at trainer.v1.*; 0.9.0 refuses step switching
    (0.9.1's); 0.7.1, 0.8.0 and main have no V1 trainer: sync composes with no trainer.v1 key, an async mode is
    refused naming the version and the nearest way."""
    verl_at(version)
    v1 = fieldmap.checked_facts()["v1"]
    recipe, problems = check("qwen3_8b", MODES[mode])
    keys = _keys("qwen3_8b", MODES[mode])
    refused = [p for p in errors(problems) if p.rule == "async-mode"]
    if not v1["modes"]:
        assert not any(k.startswith("trainer.v1.") for k in keys)
        if mode == "sync":
            assert not errors(problems), [p.format() for p in errors(problems)]
        else:
            named = f"verl {fieldmap.checked_facts()['version']} has no V1 trainer"
            assert [p.key for p in refused] == ["schedule.mode"] and named in refused[0].message
            assert "0.9.0" in refused[0].fix
        return
    if mode.endswith("+switch") and not v1["switch"]:  # 0.9.0
        assert [p.key for p in refused] == ["schedule.switch.enable"] and "0.9.1" in refused[0].fix
        assert not any("hybrid_rollout" in k for k in keys)  # its config has no such section
        return
    assert not errors(problems), [p.format() for p in errors(problems)]
    launch = render(recipe, "/RUN")
    composed = verl_schema.effective(launch.overrides, launch.config_name)
    assert composed["trainer.v1.trainer_mode"] == mode.split("+")[0] and composed["trainer.use_v1"] is True
    if mode == "colocate_async":
        assert composed["trainer.v1.colocate_async.num_warmup_batches"] == 2
    if mode.startswith("separate_async"):
        assert composed["trainer.v1.separate_async.parameter_sync_step"] == recipe.parameter_sync_step
        assert (
            composed[f"{fieldmap.ROLL}.nnodes"] == 1
            and composed[f"{fieldmap.ROLL}.checkpoint_engine.backend"] == "nccl"
        )
    if mode.endswith("+switch"):
        assert composed["trainer.v1.separate_async.hybrid_rollout.enable_switch"] is True
        assert composed["trainer.v1.separate_async.hybrid_rollout.switch_threshold_ratio"] == 0.5


@pytest.mark.parametrize("version", ["0.9.0", "0.9.1"])
def test_each_separate_async_assertion_cites_the_checked_versions_own_line(verl_at, version):
    """The messages quote the line of the checked verl's trainer_separate_async.py that asserts it (its version
    table), so a user sees where verl would have failed twenty minutes in."""
    verl_at(version)
    asserts = fieldmap.checked_facts()["v1"]["asserts"]
    broken = {
        "async-sync-step": "schedule.parameter_sync_step=3",
        "async-rollout-pool": "schedule.rollout_nnodes=0",
        "async-sync-backend": "schedule.sync_backend=naive",
    }
    fact = {"async-sync-step": "sync_step", "async-rollout-pool": "pool_nnodes", "async-sync-backend": "sync_backend"}
    for rule, override in broken.items():
        _, problems = check("qwen3_8b", [*SEPARATE, override])
        found = [p for p in errors(problems) if p.rule == rule]
        assert found and asserts[fact[rule]] in found[0].message, (rule, [p.format() for p in errors(problems)])
