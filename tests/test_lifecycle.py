"""A run's life after launch, without a cluster: resume decisions and refusals, verl's checkpoint layout, retention,
checkpoint space, the merger commands, the weights check, provenance. The real `tiny` resume and export through Ray
are in tests/test_lifecycle_run.py; the local trainer's exact resume is in tests/test_local_train.py.

Parent runs here are real run directories (grpolab.jobs.runs.create_run, the resolved recipe.yaml, a launch record
with the fingerprints `submit` records) holding checkpoint folders laid out as verl 0.9.1 writes them
(verl/utils/checkpoint/fsdp_checkpoint_manager.py, megatron_checkpoint_manager.py, trainer/ppo/v1/trainer_base.py).
"""

from __future__ import annotations

import json
import shlex
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from grpolab.jobs import checkpoints as ck
from grpolab.jobs import provenance, retention, runs
from grpolab.jobs.resume import ResumeRefused, plan_resume
from grpolab.recipe.loader import load_recipe, recipe_dict, to_yaml

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------------ parent runs


def write_parquet(path: Path, rows: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"prompt": [f"q{i}" for i in range(rows)], "data_source": ["x"] * rows}), path)
    return path


def parent_run(root: Path, recipe_name: str, sets: list[str], run_id: str = "parent", state: str = "STOPPED"):
    """A finished run as `grpolab run` leaves it: recipe.yaml, launch.json with provenance, a final status."""
    recipe = load_recipe(recipe_name, sets)
    run = runs.create_run(recipe.name, run_id=run_id, root=root)
    run.recipe_file.write_text(to_yaml(recipe))
    record = {
        "recipe": recipe.name,
        "versions": provenance.packages(recipe),
        "provenance": provenance.record(recipe, recipe_dict(recipe)),
    }
    run.launch_file.write_text(json.dumps(record))
    run.write_status(state=state, finalized=True, recipe=recipe.name)
    return run, recipe


def fsdp_checkpoint(root: Path, step: int, world: int, skip_rank: int | None = None, tracker: bool = True) -> Path:
    """global_step_<step> as verl's FSDP checkpoint manager writes it for `world` ranks."""
    folder = root / f"global_step_{step}"
    actor = folder / "actor"
    (actor / "huggingface").mkdir(parents=True)
    for rank in range(world):
        if rank == skip_rank:
            continue
        for prefix in ("model", "optim", "extra_state"):
            (actor / f"{prefix}_world_size_{world}_rank_{rank}.pt").write_bytes(b"x" * 64)
    (actor / "fsdp_config.json").write_text(json.dumps({"FSDP_version": 2, "world_size": world}))
    (actor / "huggingface" / "config.json").write_text("{}")
    (folder / "data.pt").write_bytes(b"d")
    if tracker:
        (root / "latest_checkpointed_iteration.txt").write_text(str(step))
    return folder


# 16 prompts a step over 1600 rows: 100 steps an epoch, so trainer.total_steps bounds the run
FSDP_SETS = [
    "trainer.total_steps=100",
    "trainer.save_freq=10",
    "data.train_batch_size=16",
    "algorithm.ppo_mini_batch_size=16",
]


@pytest.fixture
def fsdp_parent(tmp_path, _isolated_runs):
    data = write_parquet(tmp_path / "train.parquet", 1600)
    val = write_parquet(tmp_path / "val.parquet", 8)
    sets = [*FSDP_SETS, f"data.train_files={data}", f"data.val_files={val}"]
    run, recipe = parent_run(_isolated_runs, "qwen3_8b", sets)
    root = run.path / "checkpoint"
    for step in (10, 20, 30):
        fsdp_checkpoint(root, step, recipe.world_size)
    return run, recipe, data


# ---------------------------------------------------------------------------------------------------- resume


def test_resume_takes_the_latest_complete_checkpoint_and_renders_as_verl_expects(fsdp_parent):
    from grpolab.verl.render import render

    run, _, _ = fsdp_parent
    fsdp_checkpoint(run.path / "checkpoint", 40, 8, skip_rank=5, tracker=False)  # a save that never finished
    plan = plan_resume(run, overrides=["algorithm.lr=2e-6"])
    assert plan.checkpoint.step == 30
    folder = str((run.path / "checkpoint" / "global_step_30").resolve())
    assert plan.recipe.algorithm.lr == 2e-6  # the overrides apply to the parent's recipe
    assert plan.record() == {
        "run_id": "parent",
        "run_dir": str(run.path),
        "step": 30,
        "checkpoint": folder,
        "overrides": ["algorithm.lr=2e-6"],
    }
    overrides = render(plan.recipe, "/runs/child").overrides
    assert "trainer.resume_mode=resume_path" in overrides
    assert f"trainer.resume_from_path={folder}" in overrides
    assert "trainer.default_local_dir=/runs/child/checkpoint" in overrides  # the child saves in its own folder


def test_resume_from_a_named_step_and_one_missing_a_rank(fsdp_parent):
    run, _, _ = fsdp_parent
    assert plan_resume(run, from_step=20).checkpoint.step == 20
    fsdp_checkpoint(run.path / "checkpoint", 35, 8, skip_rank=3, tracker=False)
    (run.path / "checkpoint" / "latest_checkpointed_iteration.txt").write_text("35")
    with pytest.raises(ResumeRefused, match=r"step 35 is not complete .*rank\(s\) 3 \(of 8\)") as exc:
        plan_resume(run, from_step=35)
    assert "complete checkpoints: 10, 20, 30" in str(exc.value)
    with pytest.raises(ResumeRefused, match="step 99 does not exist"):
        plan_resume(run, from_step=99)


@pytest.mark.parametrize(
    "sets, why",
    [
        (["cluster.nnodes=2"], "FSDP world size 8 -> 16"),
        (["model.path=/data/models/Qwen3-4B", "model.card=qwen3_4b"], "a different model"),
        (["data.train_batch_size=32", "algorithm.ppo_mini_batch_size=32"], "the saved data position counts batches"),
    ],
)
def test_changes_the_checkpoint_cannot_take_are_refused_by_name(fsdp_parent, sets, why):
    run, _, _ = fsdp_parent
    with pytest.raises(ResumeRefused, match="cannot take") as exc:
        plan_resume(run, overrides=sets)
    assert why in str(exc.value) and "grpolab run" in str(exc.value)


def test_a_changed_dataset_is_refused(fsdp_parent):
    run, _, data = fsdp_parent
    write_parquet(data, 1601)  # one row more: the saved data position would index other samples
    with pytest.raises(ResumeRefused, match="changed since it was launched") as exc:
        plan_resume(run)
    assert str(data) in str(exc.value) and "Restore the original files" in str(exc.value)


def test_nothing_left_to_train_is_refused_with_the_budget(fsdp_parent):
    run, _, _ = fsdp_parent
    fsdp_checkpoint(run.path / "checkpoint", 100, 8)
    with pytest.raises(ResumeRefused, match="nothing left to train.*step 100.*trains 100 steps.*verl #7401") as exc:
        plan_resume(run)
    assert "--set trainer.total_steps=" in str(exc.value)
    assert plan_resume(run, overrides=["trainer.total_steps=150"]).checkpoint.step == 100


def test_the_epoch_boundary_counts_as_the_end(tmp_path, _isolated_runs):
    # 64 rows // 16 prompts = 4 steps per epoch; 2 epochs end at step 8 (verl's loop then trains nothing, exit 0)
    data = write_parquet(tmp_path / "train.parquet", 64)
    sets = [
        "trainer.save_freq=4",
        "trainer.total_epochs=2",
        "data.train_batch_size=16",
        "algorithm.ppo_mini_batch_size=16",
        f"data.train_files={data}",
        f"data.val_files={data}",
    ]
    run, recipe = parent_run(_isolated_runs, "qwen3_8b", sets)
    fsdp_checkpoint(run.path / "checkpoint", 8, recipe.world_size)
    with pytest.raises(ResumeRefused, match=r"total_epochs 2 x 4 steps per epoch.*64 rows") as exc:
        plan_resume(run)
    assert "trainer.total_epochs=N" in str(exc.value)
    assert plan_resume(run, overrides=["trainer.total_epochs=3"]).total_steps == 12


def test_no_checkpoint_says_why(tmp_path, _isolated_runs):
    run, _ = parent_run(_isolated_runs, "qwen3_8b", ["trainer.save_freq=-1"])
    with pytest.raises(ResumeRefused, match="no checkpoint .*trainer.save_freq is -1: the run never saved one"):
        plan_resume(run)


def test_a_running_run_is_not_resumed_and_a_lost_one_is(tmp_path, _isolated_runs):
    import os
    import socket
    import time

    run, _ = parent_run(_isolated_runs, "qwen3_8b", FSDP_SETS, state="RUNNING")
    run.write_status(
        finalized=False, job_id="parent", endpoint={"dashboard": "http://127.0.0.1:9", "gcs": None, "embedded": True}
    )
    fsdp_checkpoint(run.path / "checkpoint", 10, 8)
    # its head is gone but its job goes on here (this process stands in for it): still RUNNING
    (run.path / "job.json").write_text(
        json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()})
    )
    with pytest.raises(ResumeRefused, match="is RUNNING: .*grpolab stop parent"):
        plan_resume(run)
    # the job left no end record and runs nowhere: the run is LOST, and may be resumed
    (run.path / "job.json").write_text(json.dumps({"pid": 1, "host": "elsewhere", "started": 0}))
    assert plan_resume(run).checkpoint.step == 10


def dist_checkpoint(folder: Path) -> None:
    """A torch distributed checkpoint (Megatron's dist_checkpointing writes these): .metadata and the rank files."""
    import torch
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "assuming the intent is to save in a single process": it is
        dcp.save({"w": torch.zeros(4)}, checkpoint_id=str(folder), no_dist=True)


def test_megatron_resume_golden_and_layout_change(tmp_path, _isolated_runs):
    from grpolab.verl.render import render

    for name in ("glm5_2", "qwen3_30b_a3b"):
        run, recipe = parent_run(_isolated_runs, name, FSDP_SETS, run_id=f"p-{name}")
        actor = run.path / "checkpoint" / "global_step_20" / "actor"
        hf = actor / "model" / "huggingface"
        hf.mkdir(parents=True)
        (hf / "config.json").write_text("{}")
        (hf / "model.safetensors").write_bytes(b"x")
        for part in ("optimizer", "extra"):
            dist_checkpoint(actor / part / "dist_ckpt")
        manifest = {
            "contents": {
                "model": {"path": "model/huggingface", "format": "huggingface"},
                "optimizer": {"path": "optimizer/dist_ckpt", "format": "megatron_dist_checkpoint"},
                "rng_state": {"path": "extra/dist_ckpt", "format": "megatron_dist_checkpoint"},
            }
        }
        (actor / "ckpt_contents.json").write_text(json.dumps(manifest))
        (actor.parent / "data.pt").write_bytes(b"d")
        (run.path / "checkpoint" / "latest_checkpointed_iteration.txt").write_text("20")
        plan = plan_resume(run)
        folder = actor.parent.resolve()
        got = [o for o in render(plan.recipe, "/runs/child").overrides if o.startswith("trainer.resume")]
        assert got == ["trainer.resume_mode=resume_path", f"trainer.resume_from_path={folder}"], name
        with pytest.raises(ResumeRefused, match=r"Megatron layout train.tp \d+ -> 2.*dp_reshardable"):
            plan_resume(run, overrides=["train.tp=2"])
        for rank_file in (actor / "optimizer" / "dist_ckpt").glob("*.distcp"):
            rank_file.unlink()  # a rank's shard of the optimizer state is gone: the .metadata still names it
        with pytest.raises(ResumeRefused, match=r"no complete checkpoint.*optimizer/dist_ckpt/__0_0.distcp"):
            plan_resume(run)


def test_cli_refusals_exit_1_and_submit_nothing(cli, tmp_path, _isolated_runs, no_head):
    import socket

    run, _ = parent_run(_isolated_runs, "qwen3_8b", ["trainer.save_freq=-1"])
    before = sorted(p.name for p in _isolated_runs.iterdir())
    out = cli("resume", run.run_id, env=no_head)  # a user with no head running
    assert out.returncode == 1, out.stderr
    assert "no checkpoint" in out.stderr and "nothing was submitted" in out.stderr and "grpolab run" in out.stderr
    assert sorted(p.name for p in _isolated_runs.iterdir()) == before
    with socket.socket() as sock:  # nothing was started either: that user's head is still not listening
        sock.settimeout(0.5)
        assert sock.connect_ex(("127.0.0.1", int(no_head["GRPOLAB_DASHBOARD_PORT"]))) != 0
    assert cli("resume", "no-such-run", env=no_head).returncode == 2


# -------------------------------------------------------------------------------------- checkpoints, retention


def test_scan_reads_verl_layouts_and_says_what_is_missing(tmp_path):
    layout = ck.Layout(tmp_path, "fsdp", 4, ("model", "optimizer", "extra"))
    fsdp_checkpoint(tmp_path, 5, 4)
    fsdp_checkpoint(tmp_path, 10, 4, skip_rank=2)
    leftover = tmp_path / "global_step_1"  # verl's rotation removed actor/ and left data.pt
    leftover.mkdir()
    (leftover / "data.pt").write_bytes(b"d")
    found = {c.step: c for c in ck.scan(layout)}
    assert found[5].complete and found[5].bytes > 0
    assert not found[10].complete and "rank(s) 2 (of 4)" in found[10].missing[0]
    assert not found[1].complete and "actor/" in found[1].missing[0]
    assert ck.latest_complete(list(found.values())).step == 5
    only_model = ck.Layout(tmp_path, "fsdp", 4, ("model",))
    (tmp_path / "global_step_10" / "actor" / "model_world_size_4_rank_2.pt").write_bytes(b"x")
    assert {c.step for c in ck.scan(only_model) if c.complete} == {5, 10}


def _checkpoints(steps):
    return [ck.Checkpoint(step=s, path=Path(f"/x/global_step_{s}"), complete=True) for s in steps]


def test_retention_keeps_the_newest_and_the_best_and_never_the_unfinished():
    found = _checkpoints([10, 20, 30, 40]) + [ck.Checkpoint(50, Path("/x/global_step_50"), False, ["in progress"])]
    scores = {10: 0.2, 20: 0.9, 30: 0.4, 40: 0.5}
    gone = retention.to_remove(found, retention.Policy(keep_last=1, best_metric="val-core/a/acc/mean@1"), scores)
    assert [c.step for c in gone] == [10, 30]  # 20 is the best, 40 the newest complete, 50 still being written
    assert [c.step for c in retention.to_remove(found, retention.Policy(2, None), {})] == [10, 20]
    assert [c.step for c in retention.to_remove(found, retention.Policy(1, "loss", "min"), scores)] == [20, 30]
    assert retention.to_remove(found, retention.Policy(None, None), scores) == []
    assert retention.to_remove(found[-1:], retention.Policy(1, None), {}) == []  # no complete checkpoint: nothing goes


def test_prune_renames_before_it_deletes_and_keeps_the_best(tmp_path, _isolated_runs):
    run, recipe = parent_run(
        _isolated_runs,
        "qwen3_8b",
        [*FSDP_SETS, "trainer.keep_ckpts=1", "trainer.keep_best_metric=val-core/a/acc/mean@1"],
    )
    for step in (10, 20, 30):
        fsdp_checkpoint(run.path / "checkpoint", step, recipe.world_size)
    rows = [{"step": s, "data": {"val-core/a/acc/mean@1": v}} for s, v in ((10, 0.7), (20, 0.3), (30, 0.5))]
    run.metrics_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert [c.step for c in retention.prune(run.path)] == [20]
    assert sorted(p.name for p in (run.path / "checkpoint").iterdir()) == [
        "global_step_10",
        "global_step_30",
        "latest_checkpointed_iteration.txt",
    ]
    listed = ck.listing(run.path)
    assert [r["step"] for r in listed] == [10, 30] and all(r["complete"] for r in listed)
    assert "step      10" in ck.describe(listed)


def test_verl_keeps_the_newest_n_itself_unless_keep_best_is_on():
    from grpolab.verl.render import render

    kept = render(load_recipe("qwen3_8b", ["trainer.keep_ckpts=3"])).overrides
    assert "trainer.max_actor_ckpt_to_keep=3" in kept and "trainer.max_critic_ckpt_to_keep=3" in kept
    best = render(load_recipe("qwen3_8b", ["trainer.keep_ckpts=3", "trainer.keep_best_metric=val-core/x/y"])).overrides
    assert not any("ckpt_to_keep" in o for o in best)  # verl's rotation would delete the best: the wrapper keeps them
    assert retention.wrapper_prunes(load_recipe("qwen3_8b", ["trainer.keep_best_metric=val-core/x/y"]))
    assert not retention.wrapper_prunes(load_recipe("qwen3_8b", ["trainer.keep_ckpts=3"]))


def test_one_seed_renders_to_every_seed_verl_has():
    from grpolab.verl.render import render

    for name, engine_seed in (("qwen3_8b", "fsdp_config.seed"), ("glm5_2", "megatron.seed")):
        overrides = render(load_recipe(name, ["trainer.seed=7"])).overrides
        for key in (
            "data.seed",
            "actor_rollout_ref.actor.data_loader_seed",
            "actor_rollout_ref.rollout.seed",
            f"actor_rollout_ref.actor.{engine_seed}",
        ):
            assert f"{key}=7" in overrides, (name, key)


# --------------------------------------------------------------------------------------------- checkpoint space


def test_check_errors_when_the_kept_checkpoints_do_not_fit_with_both_numbers(cli, tmp_path):
    import shutil

    free = shutil.disk_usage(tmp_path).free
    out = cli(
        "check",
        "qwen3_8b",
        "--set",
        f"trainer.ckpt_dir={tmp_path}",
        "--set",
        "trainer.total_steps=1000",
        "--set",
        "trainer.keep_ckpts=40",
        "--json",
    )
    assert out.returncode == 1, out.stdout + out.stderr
    found = [p for p in json.loads(out.stdout) if p["rule"] == "checkpoint-space"]
    assert found and found[0]["severity"] == "error"
    message = found[0]["message"]
    assert "40 checkpoint(s) of about 98.4 GB = 3.94 TB" in message  # 8.2 B params x (4 + 8) bytes, FSDP
    assert f"{free / 1e9:.3g} GB free" in message or f"{free / 1e12:.3g} TB free" in message
    fine = cli(
        "check",
        "qwen3_8b",
        "--set",
        f"trainer.ckpt_dir={tmp_path}",
        "--set",
        "trainer.total_steps=1000",
        "--set",
        "trainer.save_freq=-1",
        "--json",
    )
    assert not [p for p in json.loads(fine.stdout) if p["rule"] == "checkpoint-space"]


def test_kept_checkpoints_follow_verl_and_the_wrapper():
    from grpolab.recipe.checkpoint_size import estimate, kept_at_once
    from grpolab.recipe.loader import load_card

    def kept(*sets):
        return kept_at_once(load_recipe("qwen3_8b", ["trainer.total_steps=100", "trainer.save_freq=10", *sets]))[0]

    assert kept() == 10  # every save stays
    assert kept("trainer.keep_ckpts=3") == 3  # verl deletes down to N - 1 before it saves
    assert kept("trainer.keep_ckpts=1") == 2  # ... and with N = 1 keeps the old one until the new one is complete
    assert kept("trainer.keep_ckpts=3", "trainer.keep_best_metric=val-core/x/y") == 5  # wrapper: +best, +in flight
    assert kept("trainer.save_freq=-1") == 0
    assert kept_at_once(load_recipe("qwen3_8b"))[0] is None  # budget in epochs: unknown
    glm = estimate(load_recipe("glm5_2", ["trainer.save_freq=10"]), load_card("glm5_2"))
    assert glm.one_bytes == pytest.approx(744e9 * 14, rel=1e-3)  # mbridge bf16 weights + fp32 main params and Adam


def test_tiny_saves_by_default_and_its_checkpoints_are_small():
    from grpolab.recipe.checkpoint_size import estimate
    from grpolab.recipe.loader import load_card

    recipe = load_recipe("tiny")
    assert recipe.trainer.save_freq > 0
    est = estimate(recipe, load_card("tiny"))
    assert est.one_bytes < 5e6 and est.kept == 4  # keep 2 + the best + the one being written


def test_keep_best_needs_validations_at_the_saves(cli):
    out = cli("check", "tiny", "--set", "trainer.test_freq=-1", "--json")
    found = {p["rule"]: p for p in json.loads(out.stdout)}
    assert out.returncode == 1 and found["checkpoint-keep"]["key"] == "trainer.test_freq"
    out = cli("check", "tiny", "--set", "trainer.test_freq=30", "--json")
    assert any(p["rule"] == "checkpoint-keep" and "multiple" in p["fix"] for p in json.loads(out.stdout))


# -------------------------------------------------------------------------------------------------- export


GOLDEN_MERGER = {
    # verl 0.9.1: verl/model_merger/base_model_merger.py parse_args; GLM-5.2's bf16 weights do not fit one device
    "glm5_2": "python3 -m verl.model_merger merge --backend megatron --local_dir /ck/global_step_20/actor "
    "--target_dir /out --use_cpu_initialization",
    "qwen3_30b_a3b": "python3 -m verl.model_merger merge --backend megatron --local_dir /ck/global_step_20/actor "
    "--target_dir /out",
}


def test_merger_commands_are_pinned_against_the_installed_verl(tmp_path):
    from grpolab.jobs.export import merger_command

    parsed = {}
    for name, golden in GOLDEN_MERGER.items():
        assert shlex.join(merger_command(load_recipe(name), "/ck/global_step_20/actor", "/out")) == golden
        parsed[name] = merger_command(load_recipe(name), "/ck/global_step_20/actor", tmp_path / name)[2:]
    # verl's own argparse reads them (one interpreter for both: importing the merger costs seconds)
    code = (
        "import sys; from verl.model_merger.base_model_merger import parse_args, generate_config_from_args\n"
        f"for argv in {list(parsed.values())!r}:\n"
        "    sys.argv = argv; c = generate_config_from_args(parse_args())\n"
        "    print(c.operation, c.backend, c.local_dir, c.hf_model_config_path, c.trust_remote_code, "
        "c.use_cpu_initialization)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    for (name, argv), line in zip(parsed.items(), out.stdout.strip().splitlines()[-2:]):
        op, backend, local, hf_config, trust, cpu = line.split()
        assert (op, backend, local) == ("merge", "megatron", "/ck/global_step_20/actor"), name
        assert hf_config == "/ck/global_step_20/actor/model/huggingface"  # verl's layout v2: where it reads the config
        assert (trust == "True") == ("--trust-remote-code" in argv)
        assert (cpu == "True") == ("--use_cpu_initialization" in argv)


def write_safetensors_header(path: Path, shapes: dict[str, list[int]]) -> None:
    """A safetensors file's header (what the check reads); the data bytes are a hole (a sparse file: no disk)."""
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(blob)) + blob)
        fh.truncate(8 + len(blob) + offset)


def qwen3_30b_a3b_shapes() -> dict[str, list[int]]:
    """Qwen3-30B-A3B's tensors as its published checkpoint names and shapes them (config.json: hidden 2048, 48
    layers, 32 heads / 4 KV heads of 128, 128 experts of moe_intermediate 768, vocab 151936, untied)."""
    shapes = {
        "model.embed_tokens.weight": [151936, 2048],
        "model.norm.weight": [2048],
        "lm_head.weight": [151936, 2048],
    }
    for i in range(48):
        p = f"model.layers.{i}."
        shapes |= {
            p + "input_layernorm.weight": [2048],
            p + "post_attention_layernorm.weight": [2048],
            p + "self_attn.q_proj.weight": [4096, 2048],
            p + "self_attn.k_proj.weight": [512, 2048],
            p + "self_attn.v_proj.weight": [512, 2048],
            p + "self_attn.o_proj.weight": [2048, 4096],
            p + "self_attn.q_norm.weight": [128],
            p + "self_attn.k_norm.weight": [128],
            p + "mlp.gate.weight": [128, 2048],
        }
        for e in range(128):
            shapes |= {
                f"{p}mlp.experts.{e}.gate_proj.weight": [768, 2048],
                f"{p}mlp.experts.{e}.up_proj.weight": [768, 2048],
                f"{p}mlp.experts.{e}.down_proj.weight": [2048, 768],
            }
    return shapes


def _write_shards(folder: Path, shapes: dict[str, list[int]], shards: int = 4) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    names = list(shapes)
    for i in range(shards):
        part = {n: shapes[n] for n in names[i::shards]}
        write_safetensors_header(folder / f"model-{i + 1:05d}-of-{shards:05d}.safetensors", part)


def test_weights_check_passes_the_real_layout_and_catches_each_merger_fault(tmp_path):
    from grpolab.jobs.weights_check import check
    from grpolab.recipe.loader import load_card

    card = load_card("qwen3_30b_a3b")
    good = qwen3_30b_a3b_shapes()
    _write_shards(tmp_path / "good", good)
    report = check(tmp_path / "good", card)
    assert report.ok, report.problems
    assert report.params == pytest.approx(30.53e9, rel=1e-3)

    stray = dict(good)
    stray["model.layers.3.mlp.experts.gate_proj.weight100"] = stray.pop(
        "model.layers.3.mlp.experts.100.gate_proj.weight"
    )
    _write_shards(tmp_path / "stray", stray)
    problems = " | ".join(check(tmp_path / "stray", card).problems)
    assert "stray suffix" in problems and "weight100" in problems and "layer 3 gate_proj: 127 experts" in problems

    half = {k: v for k, v in good.items() if ".experts." not in k or int(k.split(".experts.")[1].split(".")[0]) < 64}
    _write_shards(tmp_path / "half", half)
    problems = " | ".join(check(tmp_path / "half", card).problems)
    assert "64 experts" in problems and "more than 1% off" in problems  # verl #2319: a much smaller model

    _write_shards(tmp_path / "twice", good)
    write_safetensors_header(tmp_path / "twice" / "extra.safetensors", {"lm_head.weight": [151936, 2048]})
    assert any("more than once" in p for p in check(tmp_path / "twice", card).problems)

    no_layer = {k: v for k, v in good.items() if not k.startswith("model.layers.47.")}
    _write_shards(tmp_path / "short", {k: v for k, v in no_layer.items() if k != "lm_head.weight"})
    problems = " | ".join(check(tmp_path / "short", card).problems)
    assert "layers missing: 47" in problems and "no lm_head.weight" in problems


def test_mbridge_checkpoints_are_copied_not_merged(tmp_path, _isolated_runs):
    from grpolab.jobs.export import plan_export

    run, recipe = parent_run(_isolated_runs, "glm5_2", FSDP_SETS)
    actor = run.path / "checkpoint" / "global_step_10" / "actor"
    (actor / "model" / "huggingface").mkdir(parents=True)
    (actor / "model" / "huggingface" / "config.json").write_text("{}")
    (actor / "model" / "huggingface" / "model.safetensors").write_bytes(b"x")
    manifest = {"contents": {"model": {"path": "model/huggingface", "format": "huggingface"}}}
    (actor / "ckpt_contents.json").write_text(json.dumps(manifest))
    (actor.parent / "data.pt").write_bytes(b"d")
    plan = plan_export(run)
    assert (plan.mode, plan.source, plan.command) == ("copy", actor / "model" / "huggingface", None)
    assert plan.out == run.path / "export" / "global_step_10"


# ---------------------------------------------------------------------------------------------- provenance


def test_provenance_records_seed_hash_packages_and_data(tmp_path, _isolated_runs):
    data = write_parquet(tmp_path / "d.parquet", 10)
    recipe = load_recipe("qwen3_8b", [f"data.train_files={data}", "trainer.seed=5", "stack.megatron-core=0.16.1"])
    record = provenance.record(recipe, recipe_dict(recipe))
    assert record["seed"] == 5 and len(record["recipe_sha256"]) == 64
    fp = record["data"][str(data)]
    assert fp["key"] == "data.train_files" and fp["bytes"] == data.stat().st_size and len(fp["sha256"]) == 64
    assert "not readable here" in record["data"]["/data/datasets/gsm8k/test.parquet"]["error"]
    assert {"verl", "torch", "megatron-core"} <= set(provenance.packages(recipe))  # the stack and the recipe's pins
    write_parquet(data, 11)
    changed = provenance.changed_data(record["data"], provenance.fingerprints(recipe))
    assert len(changed) == 1 and str(data) in changed[0] and "changed since the run" in changed[0]
    # tiny's relative data paths are read where `grpolab data` reads them (from the project's root here)
    tiny = provenance.fingerprints(load_recipe("tiny"))["params/data/tiny/val.parquet"]
    assert tiny["key"] == "data.val_files" and tiny["bytes"] == (ROOT / "params/data/tiny/val.parquet").stat().st_size


def test_compare_prints_the_differences_before_the_gate(cli, tmp_path, _isolated_runs):
    data = write_parquet(tmp_path / "d.parquet", 10)
    a, _ = parent_run(_isolated_runs, "qwen3_8b", [f"data.train_files={data}"], run_id="a")
    write_parquet(data, 11)
    b, _ = parent_run(_isolated_runs, "qwen3_8b", [f"data.train_files={data}", "algorithm.lr=3e-6"], run_id="b")
    record = json.loads(b.launch_file.read_text())
    record["versions"]["verl"] = "0.9.2"
    record["resumed_from"] = {"run_id": "a", "step": 30}
    b.launch_file.write_text(json.dumps(record))
    for run in (a, b):
        rows = [{"step": s, "data": {"critic/score/mean": 0.5, "timing_s/step": 1.0}} for s in range(1, 16)]
        run.metrics_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = cli("compare", "b", "--baseline", "a")
    head = out.stdout.split("\n\n")[0]
    assert head.startswith("differences (b | a):"), out.stdout
    for line in ("recipe.algorithm.lr: 3e-06 | 1e-06", "stack.verl: 0.9.2 | 0.9.1", "launch.resumed_from.run_id: a |"):
        assert line in head, (line, head)
    assert f"launch.provenance.data.{data}.sha256" in head  # the data it trained on changed
    doc = json.loads(cli("compare", "b", "--baseline", "a", "--json").stdout)
    assert {"key": "recipe.algorithm.lr", "values": [3e-6, 1e-6]} in doc["differences"]


def test_preflight_sizes_the_kept_checkpoints_with_the_same_estimate():
    from grpolab.preflight.spec import node_spec
    from grpolab.recipe.checkpoint_size import estimate
    from grpolab.recipe.loader import load_card

    recipe = load_recipe("qwen3_8b", ["trainer.total_steps=100", "trainer.keep_ckpts=3"])
    spec = node_spec(recipe)["checkpoint"]
    assert spec["bytes"] == estimate(recipe, load_card("qwen3_8b")).one_bytes * 3
    assert "verl keeps trainer.keep_ckpts = 3" in spec["estimate"]
