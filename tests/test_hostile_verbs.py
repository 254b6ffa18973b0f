"""Hostile round three: the verbs added last round (export, resume, card, lab, import --name) against what users
and files really do. Each case asserts what the user sees: the exit status, the message, the files on disk after.

- data loss: `export --out` never writes into a folder it did not make (a user's files, a checkpoint, a system
  folder), replaces an earlier export only with --force, and writes atomically; two resumes into one shared
  trainer.ckpt_dir are refused while the first is live; retention prunes only what its own run wrote;
- writes outside the named paths: names are names (import --name); lab never writes through a symlink;
- secrets: resume's records and dry runs hide a secret --set; redaction by what is secret, not by words (PWD);
- internal errors: card on odd config.json, resume on ill-typed launch records, export of a truncated
  safetensors, lab on symlink loops and bad ports: one line naming file, field and fix;
- hangs and bytes: FIFOs refused, a bad byte is a skipped line, names printed with control characters escaped.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from grpolab.cli import main
from grpolab.jobs import checkpoints as ck
from grpolab.jobs import retention, runs, state
from grpolab.recipe.loader import load_recipe, to_yaml

GLM_SETS = [
    "trainer.total_steps=100",
    "trainer.save_freq=10",
    "data.train_batch_size=16",
    "algorithm.ppo_mini_batch_size=16",
]


def call(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def finished_run(root: Path, recipe_name: str, sets: list[str], run_id: str = "parent"):
    recipe = load_recipe(recipe_name, sets)
    run = runs.create_run(recipe.name, run_id=run_id, root=root)
    run.recipe_file.write_text(to_yaml(recipe))
    run.launch_file.write_text(json.dumps({"recipe": recipe.name}))
    run.write_status(state="STOPPED", finalized=True, recipe=recipe.name)
    return run, recipe


def safetensors(path: Path, shapes: dict[str, list[int]], cut: int = 0) -> None:
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * int(__import__("math").prod(shape))
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"\0" * (offset - cut))


@pytest.fixture
def hf_run(_isolated_runs):
    """A finished glm5_2 run whose checkpoint holds mbridge's Hugging Face weights (export copies them)."""
    run, _ = finished_run(_isolated_runs, "glm5_2", GLM_SETS)
    actor = run.path / "checkpoint" / "global_step_10" / "actor"
    hf = actor / "model" / "huggingface"
    hf.mkdir(parents=True)
    (hf / "config.json").write_text("{}")
    safetensors(hf / "model.safetensors", {"model.embed_tokens.weight": [4, 2]})
    manifest = {"contents": {"model": {"path": "model/huggingface", "format": "huggingface"}}}
    (actor / "ckpt_contents.json").write_text(json.dumps(manifest))
    (actor.parent / "data.pt").write_bytes(b"d")
    return run, hf


# ------------------------------------------------------------------------------------------------ data loss


def test_export_never_writes_into_a_users_folder_a_checkpoint_or_a_system_folder(hf_run, tmp_path, capsys):
    run, hf = hf_run
    users = tmp_path / "mine"
    users.mkdir()
    (users / "config.json").write_text("the user's own\n")
    for out, why in [
        (users, "is not empty (config.json) and is not an export of grpolab's"),
        ("/", "is a system folder"),
        (str(Path.home()), "is a system folder"),
        (hf.parent.parent.parent / "export", "a checkpoint or run folder"),  # inside global_step_10
        (run.path / "checkpoint" / "new", "a checkpoint or run folder"),
    ]:
        code, out_text, err = call(capsys, "export", "parent", "--out", str(out))
        assert code == 1 and why in err and err.count("\n") == 1, err
    assert (users / "config.json").read_text() == "the user's own\n" and sorted(os.listdir(users)) == ["config.json"]
    assert sorted(os.listdir(hf)) == ["config.json", "model.safetensors"]


def test_export_replaces_only_its_own_export_and_only_with_force(hf_run, tmp_path, capsys):
    run, _ = hf_run
    out = tmp_path / "weights"
    code, _, err = call(capsys, "export", "parent", "--out", str(out))
    assert (out / "grpolab_export.json").is_file() and not any(p.name.startswith(".") for p in tmp_path.iterdir())
    code, _, err = call(capsys, "export", "parent", "--out", str(out))
    assert code == 1 and "holds an earlier export" in err and "--force" in err
    code, text, err = call(capsys, "export", "parent", "--out", str(out), "--force")
    assert "replacing the earlier export" in text and "grpolab_export.json" in text
    assert json.loads((out / "grpolab_export.json").read_text())["replaced"]


def test_export_of_a_truncated_safetensors_is_one_line_and_leaves_nothing(hf_run, tmp_path, capsys):
    run, hf = hf_run
    safetensors(hf / "model.safetensors", {"model.embed_tokens.weight": [4, 2]}, cut=5)
    out = tmp_path / "weights"
    code, _, err = call(capsys, "export", "parent", "--out", str(out))
    assert code == 1 and "truncated" in err and "model.safetensors" in err and err.count("\n") == 1, err
    assert not out.exists() and list(tmp_path.glob(".weights*")) == []  # atomic: nothing half written


def test_a_second_resume_into_a_shared_ckpt_dir_is_refused_while_the_first_is_live(_isolated_runs, tmp_path, capsys):
    shared = tmp_path / "ckpts"
    sets = [*GLM_SETS, f"trainer.ckpt_dir={shared}", "cluster.device=cpu"]
    parent, recipe = finished_run(_isolated_runs, "qwen3_8b", [*sets[:4], f"trainer.ckpt_dir={shared}"])
    for step in (10, 20):
        folder = shared / f"global_step_{step}" / "actor"
        (folder / "huggingface").mkdir(parents=True)
        for rank in range(recipe.world_size):
            for prefix in ("model", "optim", "extra_state"):
                (folder / f"{prefix}_world_size_{recipe.world_size}_rank_{rank}.pt").write_bytes(b"x")
        (folder / "fsdp_config.json").write_text(json.dumps({"world_size": recipe.world_size}))
        (folder / "huggingface" / "config.json").write_text("{}")
        (folder.parent / "data.pt").write_bytes(b"d")
        (shared / "latest_checkpointed_iteration.txt").write_text(str(step))
    child = _isolated_runs / "child-a"
    with ck.claim(
        shared, child, "child-a", state.live_state
    ):  # the first resume, still being submitted (its submitter lives)
        runs.create_run("qwen3_8b", run_id="child-a", root=_isolated_runs, submitter=state.submitter())
    code, _, err = call(capsys, "resume", "parent", "--dry-run")
    assert code == 1 and "in use by run child-a (PENDING)" in err and "trainer.ckpt_dir" in err, err
    with pytest.raises(ck.CheckpointsBusy, match="in use by run child-a"):
        with ck.claim(shared, _isolated_runs / "child-b", "child-b", state.live_state):
            pass
    assert sorted(p.name for p in shared.glob("global_step_*")) == ["global_step_10", "global_step_20"]


def test_retention_prunes_only_checkpoints_its_own_run_wrote(_isolated_runs, tmp_path):
    from grpolab.local.checkpoint import TRACKER

    parent, recipe = finished_run(_isolated_runs, "tiny", ["trainer.keep_ckpts=1"])
    root = parent.path / "checkpoint"

    def save(step):
        folder = root / f"global_step_{step}"
        folder.mkdir(parents=True)
        (folder / "grpolab_checkpoint.json").write_text(json.dumps({"step": step}))
        (folder / "model.safetensors").write_bytes(b"x")
        for name in ("config.json", "optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json"):
            (folder / name).write_bytes(b"x")
        (root / TRACKER).write_text(str(step))

    save(10)
    save(20)  # the parent's (or another run's) checkpoints, there before this run's wrapper started
    keeper = retention.Keeper(parent.path)
    save(30)
    save(40)
    keeper.prune()
    left = sorted(p.name for p in root.glob("global_step_*"))
    assert "global_step_10" in left and "global_step_20" in left and "global_step_30" not in left, left


# ------------------------------------------------------------------------------ writes outside the named paths


@pytest.mark.parametrize("name", ["../escaped", "/tmp/abs-recipe", "a/b", ".hidden", ""])
def test_import_name_is_a_name_never_a_path(name, tmp_path, capsys, monkeypatch):
    import shutil

    from grpolab.paths import params_dir

    shutil.copytree(params_dir(), tmp_path / "params")  # whatever goes wrong, the project's params/ stay as they are
    monkeypatch.setenv("GRPOLAB_PARAMS", str(tmp_path / "params"))
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B\n")
    code, out, err = call(capsys, "import", str(script), "--name", name, "--trusted")
    assert code == 2 and "is not a name" in err and "--out" in err and out == ""
    assert not Path("/tmp/abs-recipe.yaml").exists() and sorted(os.listdir(tmp_path)) == ["params", "run.sh", "runs"]


def test_plan_write_is_a_name(capsys):
    code, _, err = call(capsys, "plan", "qwen3_8b", "--write", "../../x")
    assert code == 2 and "--write '../../x' is not a name" in err


def test_lab_never_writes_through_a_link_that_leaves_its_folder(tmp_path, capsys):
    lab, outside = tmp_path / "lab", tmp_path / "outside"
    lab.mkdir()
    outside.mkdir()
    victim = outside / "precious.json"
    victim.write_text("mine\n")
    (lab / ".lab-settings").mkdir()
    (lab / ".lab-settings" / "overrides.json").symlink_to(victim)
    (lab / "run.ipynb").symlink_to(outside / "made-outside.ipynb")  # dangling
    code, _, err = call(capsys, "lab", "--dir", str(lab), "--dry-run")
    assert code == 2 and "leads out of" in err and err.count("\n") == 1, err
    assert victim.read_text() == "mine\n" and sorted(os.listdir(outside)) == ["precious.json"]


def test_lab_on_a_symlink_loop_and_bad_ports_is_one_line(tmp_path, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    code, _, err = call(capsys, "lab", "--dir", str(loop), "--dry-run")
    assert code == 2 and "symlink loop" in err and err.count("\n") == 1, err
    for port in ("-1", "99999", "65536", "http"):
        code, _, err = call(capsys, "lab", "--port", port, "--dry-run", "--dir", str(tmp_path / "l"))
        assert code == 2 and "1 to 65535" in err and err.count("\n") == 1, err
    assert not (tmp_path / "l").exists()
    code, _, err = call(capsys, "lab", "--dir", "/", "--dry-run")
    assert code == 2 and "system folder" in err and not Path("/run.ipynb").exists()


# ------------------------------------------------------------------------------------------------------ secrets

SECRET_VALUE = "hf_caller_secret_4k9z"


def test_redaction_is_by_what_is_secret_not_by_words_it_contains():
    from grpolab.recipe.secrets import is_secret, redaction, why_secret

    env = {"PWD": "/work/me", "OLDPWD": "/work", "JPY_SESSION_NAME": "/work/me/run.ipynb", "DB_PWD": "hunter22"}
    shown = redaction(env=env).text("cwd /work/me/runs in /work/me/run.ipynb, password hunter22")
    assert shown == "cwd /work/me/runs in /work/me/run.ipynb, password ***redacted***"
    assert not is_secret("PWD") and not is_secret("JPY_SESSION_NAME") and is_secret("AWS_SESSION_TOKEN")
    assert "password" in why_secret("MYSQL_PWD") and "token" in why_secret("HF_TOKEN")


def fsdp_parent(root: Path, ckpt_dir: Path | None = None):
    sets = [*GLM_SETS, *([f"trainer.ckpt_dir={ckpt_dir}"] if ckpt_dir else [])]
    parent, recipe = finished_run(root, "qwen3_8b", sets)
    folder = (ckpt_dir or parent.path / "checkpoint") / "global_step_10"
    actor = folder / "actor"
    (actor / "huggingface").mkdir(parents=True)
    for rank in range(recipe.world_size):
        for prefix in ("model", "optim", "extra_state"):
            (actor / f"{prefix}_world_size_{recipe.world_size}_rank_{rank}.pt").write_bytes(b"x")
    (actor / "fsdp_config.json").write_text(json.dumps({"world_size": recipe.world_size}))
    (actor / "huggingface" / "config.json").write_text("{}")
    (folder / "data.pt").write_bytes(b"d")
    (folder.parent / "latest_checkpointed_iteration.txt").write_text("10")
    return parent


def test_resume_dry_run_and_records_never_show_a_secret_set(_isolated_runs, capsys):
    from grpolab.jobs.resume import plan_resume

    parent = fsdp_parent(_isolated_runs)
    code, out, err = call(capsys, "resume", "parent", "--dry-run", "--set", f"env.HF_TOKEN={SECRET_VALUE}")
    assert code == 0, err
    assert SECRET_VALUE not in out + err and "env.HF_TOKEN=***redacted***" in out
    plan = plan_resume(parent, overrides=[f"env.HF_TOKEN={SECRET_VALUE}"])
    assert SECRET_VALUE not in json.dumps(plan.record())  # what the child's launch.json and status.json keep


def test_compare_of_a_child_and_its_parent_hides_the_recorded_secret_overrides(_isolated_runs, capsys):
    parent = fsdp_parent(_isolated_runs)
    child, _ = finished_run(_isolated_runs, "qwen3_8b", GLM_SETS, run_id="child")
    # a record written before resume redacted its overrides
    child.launch_file.write_text(
        json.dumps(
            {"recipe": "qwen3_8b", "resumed_from": {"run_id": "parent", "overrides": [f"env.HF_TOKEN={SECRET_VALUE}"]}}
        )
    )
    for run in (parent, child):
        (run.path / "metrics.jsonl").write_text('{"step": 1, "data": {"critic/score/mean": 0.5}}\n')
    code, out, err = call(capsys, "compare", "child", "--baseline", "parent")
    assert "resumed_from" in out and SECRET_VALUE not in out + err


def test_import_never_writes_or_prints_a_callers_secret_or_a_scripts_default_token(tmp_path, capsys, monkeypatch):
    import shutil

    from grpolab.paths import params_dir

    shutil.copytree(params_dir(), tmp_path / "params")
    monkeypatch.setenv("GRPOLAB_PARAMS", str(tmp_path / "params"))
    monkeypatch.setenv("HF_TOKEN", SECRET_VALUE)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\nKEY=${WANDB_API_KEY:-wandb_default_key_77x}\n"
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B "
        "trainer.experiment_name=run-$HF_TOKEN +trainer.note=$KEY\n"
    )
    code, out, err = call(capsys, "import", str(script), "--name", "leaky", "--trusted")
    written = (tmp_path / "params" / "recipes" / "leaky.yaml").read_text()
    assert code in (0, 1), err
    assert SECRET_VALUE not in out + err + written and "run-${HF_TOKEN}" in written
    assert "wandb_default_key_77x" not in out + err and "unset in your environment: $WANDB_API_KEY" in out


# -------------------------------------------------------------------------------- one line, never a traceback

SIZES = {"hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8, "vocab_size": 1000}


@pytest.mark.parametrize(
    "config, want",
    [
        ('{"num_hidden_layers": "28", %s}', 'num_hidden_layers = "28" is not a size'),
        ('{"num_hidden_layers": -4, %s}', "num_hidden_layers = -4 is not a size"),
        ('{"num_hidden_layers": 10e400, %s}', "num_hidden_layers = Infinity is not a size"),
        ('{"num_hidden_layers": true, %s}', "num_hidden_layers = true is not a size"),
        ('{"model_type": "x", "text_config": "oops"}', "no num_layers (config.json's num_hidden_layers"),
        ("[" * 100000 + "]" * 100000, "nested too deeply"),
    ],
    ids=["string", "negative", "huge", "bool", "no-layers", "deep"],
)
def test_card_on_an_odd_config_json_is_one_line_naming_file_key_and_fix(config, want, tmp_path, capsys):
    model = tmp_path / "model"
    model.mkdir()
    sizes = json.dumps(SIZES)[1:-1]
    (model / "config.json").write_text(config % sizes if "%s" in config else config)
    code, out, err = call(capsys, "card", str(model), "--out", "-")
    assert code == 2 and out == "" and want in err and str(model / "config.json") in err, err
    assert err.count("\n") == 1 and "internal error" not in err and "grpolab card NAME" in err


def test_card_reads_a_gpt2_style_config_json(tmp_path, capsys):
    model = tmp_path / "gpt2"
    model.mkdir()
    (model / "config.json").write_text(
        json.dumps(
            {"model_type": "gpt2", "n_layer": 12, "n_head": 12, "n_embd": 768, "vocab_size": 50257, "n_positions": 1024}
        )
    )
    code, out, err = call(capsys, "card", str(model), "--out", "-")
    assert code == 0 and "num_layers: 12" in out and "hidden_size: 768" in out and "context_length: 1024" in out, err


@pytest.mark.parametrize(
    "launch, want",
    [
        ("[1, 2]", "not a JSON object (list)"),
        ('{"recipe": 5}', "recipe = 5: Input should be a valid string"),
        ('{"provenance": {"data": "oops"}}', 'provenance.data = "oops"'),
        ('{"provenance": {"data": {"f.parquet": "str"}}}', "provenance.data.f.parquet"),
    ],
)
def test_resume_on_an_ill_typed_launch_record_is_one_line(launch, want, _isolated_runs, capsys):
    parent = fsdp_parent(_isolated_runs)
    parent.launch_file.write_text(launch)
    code, out, err = call(capsys, "resume", "parent", "--dry-run")
    assert code == 1 and want in err and "launch.json" in err and "delete" in err and err.count("\n") == 1, err


def test_resume_and_export_on_an_ill_typed_recipe_record_are_one_line(_isolated_runs, capsys):
    parent = fsdp_parent(_isolated_runs)
    parent.recipe_file.write_text(parent.recipe_file.read_text().replace("nnodes: 1", "nnodes: many", 1))
    for verb in (["resume", "parent", "--dry-run"], ["export", "parent"]):
        code, out, err = call(capsys, *verb)
        assert code == 2 and "cluster.nnodes = 'many'" in err and err.count("\n") == 1, err


# ------------------------------------------------------------------------------------- hangs, memory, bytes


def test_a_fifo_as_the_checkpoint_tracker_is_refused_not_waited_on(_isolated_runs, capsys):
    parent = fsdp_parent(_isolated_runs)
    tracker = parent.path / "checkpoint" / "latest_checkpointed_iteration.txt"
    tracker.unlink()
    os.mkfifo(tracker)  # read, it would block forever
    code, out, err = call(capsys, "resume", "parent", "--dry-run")
    assert code == 1 and "no complete checkpoint" in err
    code, out, err = call(capsys, "monitor", "parent")
    assert code in (0, 1) and "Traceback" not in err


def test_checkpoint_listings_stream_metrics_and_skip_bad_bytes_and_huge_lines(tmp_path):
    import tracemalloc

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with open(run_dir / "metrics.jsonl", "wb") as fh:
        fh.write(b'{"step": 10, "data": {"timing_s/save_checkpoint": 1.5}}\n')
        fh.write(b'{"step": 20, "data": {"timing_s/save_checkpoint": 2.\xff}}\n')  # one bad byte: that line only
        fh.write(b'{"step": 25, "data": {"x": "' + b"y" * (8 << 20) + b'"}}\n')  # 8 MB in one line
        for step in range(30, 30000):
            fh.write(b'{"step": %d, "data": {"actor/kl_loss": 0.1}}\n' % step)
        fh.write(b'{"step": 30000, "data": {"timing_s/save_checkpoint": 3.0}}\n')
    tracemalloc.start()
    found = ck.metric_by_step(run_dir, "timing_s/save_checkpoint")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert found == {10: 1.5, 30000: 3.0}
    assert peak < 6 << 20, f"{peak:,} bytes held to read a 9 MB metrics file"


def test_names_from_outside_are_printed_with_control_characters_escaped(_isolated_runs, capsys):
    evil = "evil\x1b]0;pwned\x07\x1b[2J"
    runs.create_run("tiny", run_id="plain", root=_isolated_runs)
    folder = _isolated_runs / evil
    folder.mkdir()
    (folder / "status.json").write_text(
        (_isolated_runs / "plain" / "status.json").read_text().replace('"plain"', json.dumps(evil))
    )
    code, out, err = call(capsys, "runs")
    assert "\x1b" not in out + err and "\x07" not in out + err and "evil\\x1b]0;pwned\\x07" in out


def test_a_symlink_loop_as_the_runs_folder_is_a_clear_error(tmp_path, monkeypatch, capsys):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    monkeypatch.setenv("GRPOLAB_RUNS", str(loop))
    for verb in (["runs"], ["run", "tiny"]):  # refused before any head starts
        code, out, err = call(capsys, *verb)
        assert code == 2 and "symlink loop" in err and "GRPOLAB_RUNS" in err, (verb, out, err)


def test_a_secret_of_the_callers_shell_never_shows_whatever_key_carries_it(monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", SECRET_VALUE)
    for verb in ("show", "render"):
        code, out, err = call(capsys, verb, "tiny", "--set", f"trainer.experiment={SECRET_VALUE}")
        assert code == 0 and SECRET_VALUE not in out + err, err
        assert verb == "render" or "experiment: ***redacted***" in out
    code, out, err = call(capsys, "show", "tiny", "--set", f"trainer.experiment={SECRET_VALUE}", "--show-secrets")
    assert SECRET_VALUE in out  # asked for


def test_export_into_a_new_folder_named_like_a_step_is_fine(hf_run, tmp_path, capsys):
    out = tmp_path / "exports" / "global_step_10"
    code, text, err = call(capsys, "export", "parent", "--out", str(out))
    assert "is inside" not in err and (out / "grpolab_export.json").is_file(), err
