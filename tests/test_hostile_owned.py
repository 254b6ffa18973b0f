"""Hostile round four: nothing a user owns is replaced or deleted, and the import's isolation reaches nothing of the
machine. Inputs are built in code; each case is a test and asserts what the user sees: the exit status, the
message, and the user's files on disk afterwards.

- every folder GRPO Lab deletes (a failed export's staging folder, an earlier export that --force replaces, a staging
  folder an export left when it died, checkpoints retention prunes, a run folder whose creation failed, a run folder
  the job recreated after it was deleted, the import's scratch, the tiny model's build folder) gets a symbolic link
  and a bind mount of a folder of user files planted in it (bind mounts where this machine allows them: root), and
  the user's files survive;
- what GRPO Lab replaces (curves.png, the secrets file, a card, lab's settings file) never reaches through a link,
  and lab never replaces a settings file that does not read;
- export: --out an existing file is exit 2; a file put into OUT during the export stays; a second export into the
  same folder is refused while the first runs; weights whose config.json is ill-typed are one line, no internal error;
- monitor reads a file as what it holds (metrics JSON lines named x.log) and a file with no step is exit 2;
- plan refuses a model with more experts per token than experts;
- the import's isolation: open_by_handle_at through the shared scratch mount, a unix socket and a FIFO in a folder
  with a mount point below it, a device node outside /dev: none reaches the machine.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shlex
import shutil
import socket
import stat
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from grpolab.cli import main
from grpolab.importer import sandbox
from grpolab.jobs import export as export_mod
from grpolab.jobs import retention, runs, secrets
from grpolab.recipe.loader import load_recipe, to_yaml

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
from userfiles import UserFiles, can_bind_mount  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
GLM_SETS = ["trainer.total_steps=100", "trainer.save_freq=10", "data.train_batch_size=16"]
ISOLATION = sandbox.available()
needs_isolation = pytest.mark.skipif(ISOLATION is not None, reason=f"this machine cannot isolate: {ISOLATION}")


def call(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def user(tmp_path):
    """A folder of user files; every bind mount a test planted is undone at the end."""
    files = UserFiles(tmp_path)
    yield files
    files.unmount_all()


@pytest.fixture(scope="module")
def mounting(tmp_path_factory) -> bool:
    return can_bind_mount(tmp_path_factory.mktemp("mount-probe"))


def _safetensors(path: Path, shapes: dict[str, list[int]]) -> None:
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * shape[0] * shape[1]
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    blob = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(blob)) + blob + b"\0" * offset)


def _finished(root: Path, recipe_name: str, sets: list[str], run_id: str = "parent") -> runs.Run:
    recipe = load_recipe(recipe_name, sets)
    run = runs.create_run(recipe.name, run_id=run_id, root=root)
    run.recipe_file.write_text(to_yaml(recipe))
    run.launch_file.write_text(json.dumps({"recipe": recipe.name}))
    run.write_status(state="STOPPED", finalized=True, recipe=recipe.name)
    return run


@pytest.fixture
def hf_run(_isolated_runs):
    """A finished glm5_2 run whose checkpoint holds mbridge's Hugging Face weights (export copies them)."""
    run = _finished(_isolated_runs, "glm5_2", GLM_SETS)
    actor = run.path / "checkpoint" / "global_step_10" / "actor"
    hf = actor / "model" / "huggingface"
    hf.mkdir(parents=True)
    (hf / "config.json").write_text("{}")
    _safetensors(hf / "model.safetensors", {"model.embed_tokens.weight": [4, 2]})
    manifest = {"contents": {"model": {"path": "model/huggingface", "format": "huggingface"}}}
    (actor / "ckpt_contents.json").write_text(json.dumps(manifest))
    (actor.parent / "data.pt").write_bytes(b"d")
    return run


# ------------------------------------------------------------------ every folder GRPO Lab deletes, planted


def test_a_failed_export_removes_its_staging_folder_but_never_what_is_planted_in_it(
    hf_run, tmp_path, capsys, monkeypatch, user
):
    out = tmp_path / "weights"

    def planting_check(folder, card):
        user.plant(Path(folder))
        raise ValueError("a truncated weights file")

    monkeypatch.setattr(export_mod, "check", planting_check)
    code, _, err = call(capsys, "export", "parent", "--out", str(out))
    assert code == 1 and "cannot be read" in err, err
    assert user.intact()
    assert not out.exists()


def test_export_force_replaces_the_earlier_export_not_what_is_planted_in_it(hf_run, tmp_path, capsys, user):
    out = tmp_path / "weights"
    assert call(capsys, "export", "parent", "--out", str(out))[0] in (0, 1)
    user.plant(out)
    code, text, err = call(capsys, "export", "parent", "--out", str(out), "--force")
    assert "replacing the earlier export" in text, err
    assert user.intact()
    assert (out / "grpolab_export.json").is_file()


def test_a_staging_folder_left_by_a_dead_export_is_removed_without_what_is_planted(hf_run, tmp_path, capsys, user):
    out = tmp_path / "weights"
    stale = tmp_path / ".weights.grpolab-export"
    stale.mkdir()
    (stale / ".grpolab-owned").write_text("made by GRPO Lab (pid 1)\n")  # nobody holds its lock: it died
    (stale / "model.safetensors").write_bytes(b"half")
    mounted = len(user.plant(stale)) > 2
    code, _, err = call(capsys, "export", "parent", "--out", str(out))
    assert user.intact()
    if not mounted:  # a mount point in it keeps the folder (and the export names it as in the way)
        assert code in (0, 1) and (out / "grpolab_export.json").is_file(), err
    else:
        assert code == 1 and "in the way" in err, err


def _tiny_checkpoints(run: runs.Run, steps: list[int]) -> Path:
    root = run.path / "checkpoint"
    for step in steps:
        folder = root / f"global_step_{step}"
        folder.mkdir(parents=True)
        for name in ("config.json", "model.safetensors", "optimizer.pt", "scheduler.pt", "rng_state.pth"):
            (folder / name).write_bytes(b"x")
        (folder / "trainer_state.json").write_text("{}")
        (folder / "grpolab_checkpoint.json").write_text(json.dumps({"step": step}))
    (root / "latest_checkpointed_iteration.txt").write_text(str(steps[-1]))
    return root


def test_retention_prunes_checkpoints_never_what_is_planted_in_them(_isolated_runs, user):
    run = _finished(_isolated_runs, "tiny", ["trainer.keep_ckpts=1"])
    root = _tiny_checkpoints(run, [1, 2, 3])
    mounted = len(user.plant(root / "global_step_1")) > 2
    user.plant(root / "global_step_2", mounts=False)
    gone = retention.prune(run.path)
    assert user.intact(), (user.before, user.tree())
    assert [c.step for c in gone] == ([2] if mounted else [1, 2])
    assert (root / "global_step_3").is_dir() and not (root / "global_step_2").exists()


def test_a_run_folder_whose_creation_failed_is_removed_without_what_is_planted(_isolated_runs, monkeypatch, user):
    def full_disk(path, text):
        user.plant(Path(path).parent)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(runs, "atomic_write", full_disk)
    with pytest.raises(OSError, match="No space"):
        runs.create_run("tiny", run_id="doomed", root=_isolated_runs)
    assert user.intact()


def test_a_run_folder_the_job_recreated_is_removed_without_what_is_planted(_isolated_runs, user):
    from grpolab.jobs.job_entry import _Watch

    run_dir = _isolated_runs / "gone"
    run_dir.mkdir()
    proc = subprocess.Popen(["true"])
    proc.wait()
    watch = _Watch(run_dir, proc)
    run_dir.rmdir()  # the user deleted the run folder mid-run; the job wrote into a new one at its path
    (run_dir / "logs").mkdir(parents=True)
    (run_dir / "logs" / "job.log").write_text("step 1\n")
    user.plant(run_dir)
    assert watch.clean_up() is True
    assert user.intact()


@needs_isolation
def test_the_imports_scratch_is_removed_without_what_is_planted_in_it(tmp_path, capsys, monkeypatch, user):
    real, seen = sandbox.run, []

    def planting_run(argv, env, scratch, cwd, timeout, *args, **kwargs):
        if not seen:
            seen.append(Path(scratch))
            user.plant(Path(scratch))
        return real(argv, env, scratch, cwd, timeout, *args, **kwargs)

    monkeypatch.setattr(sandbox, "run", planting_run)
    script = tmp_path / "run.sh"
    script.write_text(
        f"#!/bin/bash\nln -s {user.home} here\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.n=4\n"
    )
    code, out, err = call(capsys, "import", str(script), "--out", "-")
    assert code in (0, 1) and "n: 4" in out, err
    assert user.intact()
    user.unmount_all()  # (the scratch's planted mounts too: none outlives the suite)
    assert str(user.home.resolve()) not in Path("/proc/self/mountinfo").read_text()
    shutil.rmtree(seen[0], ignore_errors=True)  # what the mount points kept (nothing of the user's after unmount)
    assert not seen[0].exists()


def test_a_failed_tiny_model_build_is_removed_without_what_is_planted(tmp_path, monkeypatch, user):
    from grpolab.local import tiny

    class Planting:
        def save_pretrained(self, folder):
            user.plant(Path(folder))
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tiny, "build_model", lambda spec: Planting())
    with pytest.raises(OSError, match="No space"):
        tiny.ensure_tiny(root=tmp_path / "cache")
    assert user.intact()


# ------------------------------------------------------------------ what GRPO Lab replaces, through a link


def test_monitor_curves_never_reach_through_a_link_or_a_mounted_file(finished_run, capsys, user):
    from grpolab.monitor import synthetic

    run = finished_run("curved", synthetic.healthy(5))
    (run.path / "curves.png").symlink_to(user.home / "precious.txt")
    code, _, err = call(capsys, "monitor", "curved")
    assert code == 0, err
    assert user.intact() and not (run.path / "curves.png").is_symlink()
    (run.path / "curves.png").unlink()
    (run.path / "curves.png").write_text("")
    if user.mount(user.home / "precious.txt", run.path / "curves.png"):
        code, text, err = call(capsys, "monitor", "curved")
        assert code == 0 and "could not write the curves" in text, text + err
    assert user.intact()


def test_the_secrets_file_as_a_link_is_removed_never_its_target(_isolated_runs, user):
    run = runs.create_run("tiny", run_id="s", root=_isolated_runs)
    (run.path / secrets.SECRETS_FILE).symlink_to(user.home / "precious.txt")
    assert secrets.discard(run.path) is True
    assert user.intact() and not os.path.lexists(run.path / secrets.SECRETS_FILE)


def test_card_force_replaces_a_link_never_the_file_it_points_at(tmp_path, capsys, user):
    out = tmp_path / "card.yaml"
    out.symlink_to(user.home / "precious.txt")
    code, _, err = call(capsys, "card", "qwen3_8b", "--out", str(out), "--force")
    assert code == 0, err
    assert user.intact() and not out.is_symlink()


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "run"])
def test_lab_never_replaces_a_settings_file_that_does_not_read(tmp_path, dry_run):
    folder = tmp_path / "lab"
    settings = folder / ".lab-settings" / "overrides.json"
    settings.parent.mkdir(parents=True)
    typo = '{"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"},}\n'
    settings.write_text(typo)
    argv = [GRPOLAB, "lab", "--dir", str(folder), "--no-browser", "--port", "1"] + (["--dry-run"] if dry_run else [])
    try:  # without --dry-run a settings file that reads would start JupyterLab: the timeout stops it
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail("grpolab lab started JupyterLab over a settings file that does not read")
    assert proc.returncode == 2 and "not JSON" in proc.stderr and "line 1" in proc.stderr, proc.stderr
    assert "overrides.json" in proc.stderr and settings.read_text() == typo


@pytest.fixture
def lab_started(monkeypatch):
    """`grpolab lab` up to the moment it would become JupyterLab: the command it would exec is recorded instead."""
    import grpolab.cli.lab as lab_cli

    started: list[list[str]] = []
    monkeypatch.setattr(lab_cli.os, "execv", lambda exe, cmd: started.append(cmd))
    monkeypatch.setattr(lab_cli.os, "execvp", lambda exe, cmd: started.append(cmd))
    return started


def test_lab_keeps_what_a_settings_file_held_before_it_adds_its_setting(tmp_path, capsys, lab_started):
    folder = tmp_path / "lab"
    settings = folder / ".lab-settings" / "overrides.json"
    settings.parent.mkdir(parents=True)
    mine = '{"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}'
    settings.write_text(mine)
    assert call(capsys, "lab", "--dir", str(folder), "--no-browser", "--dry-run")[0] == 0
    assert settings.read_text() == mine and not lab_started  # a dry run writes and starts nothing
    assert call(capsys, "lab", "--dir", str(folder), "--no-browser")[0] == 0 and len(lab_started) == 1
    written = json.loads(settings.read_text())
    assert written["@jupyterlab/apputils-extension:themes"] == {"theme": "JupyterLab Dark"}
    assert written["@jupyter-widgets/jupyterlab-manager:plugin"] == {"saveState": True}
    assert (settings.parent / "overrides.json.bak").read_text() == mine


# ------------------------------------------------------------------ export


def test_export_out_an_existing_file_is_an_unusable_input(hf_run, tmp_path, capsys):
    target = tmp_path / "weights.safetensors"
    target.write_text("the user's")
    code, _, err = call(capsys, "export", "parent", "--out", str(target))
    assert code == 2 and "exists and is not a folder" in err and err.count("\n") == 1, err
    assert target.read_text() == "the user's"
    code, out, _ = call(capsys, "export", "parent", "--out", str(target), "--json")
    assert code == 2 and json.loads(out)["exit"] == 2


@pytest.mark.parametrize("made", [False, True], ids=["out-new", "out-empty"])
def test_a_file_put_into_out_during_the_export_is_never_deleted(hf_run, tmp_path, capsys, monkeypatch, made):
    out = tmp_path / "weights"
    if made:
        out.mkdir()
    real = export_mod.check

    def user_meanwhile(folder, card):
        out.mkdir(exist_ok=True)
        (out / "notes.txt").write_text("the user's, written during the export")
        return real(folder, card)

    monkeypatch.setattr(export_mod, "check", user_meanwhile)
    code, _, err = call(capsys, "export", "parent", "--out", str(out))
    assert code == 1 and "changed during the export" in err and "notes.txt" in err, err
    assert (out / "notes.txt").read_text() == "the user's, written during the export"
    assert sorted(os.listdir(out)) == ["notes.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".weights")]  # no staging folder left


def test_a_second_export_into_the_same_folder_is_refused_while_the_first_runs(hf_run, tmp_path, capsys, monkeypatch):
    out = tmp_path / "weights"
    real, started, release = export_mod.check, threading.Event(), threading.Event()

    def slow(folder, card):
        started.set()
        assert release.wait(120)
        return real(folder, card)

    monkeypatch.setattr(export_mod, "check", slow)
    result: dict = {}

    def first():
        try:
            result["report"] = export_mod.export(export_mod.plan_export(hf_run, out=out), progress=lambda line: None)
        except Exception as exc:  # shown by the assertion below
            result["error"] = exc

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert started.wait(60)
        second = subprocess.run(
            [GRPOLAB, "export", "parent", "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ},
        )
    finally:
        release.set()
        thread.join(120)
    assert second.returncode == 1 and "another export is writing into" in second.stderr, second.stderr
    assert "error" not in result, result
    assert json.loads((out / "grpolab_export.json").read_text())["run"] == "parent"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from grpolab.local.tiny import ensure_tiny

    return ensure_tiny(root=tmp_path_factory.mktemp("cache"))


@pytest.mark.parametrize(
    "config",
    [{"num_hidden_layers": "x"}, [], {"vocab_size": -5}, {"model_type": 7}],
    ids=["string-size", "a-list", "negative", "model-type-number"],
)
def test_an_ill_typed_config_json_in_an_export_is_one_line_not_an_internal_error(
    _isolated_runs, tmp_path, capsys, tiny_model, config
):
    run = _finished(_isolated_runs, "tiny", [])
    step = run.path / "checkpoint" / "global_step_5"
    shutil.copytree(tiny_model, step)
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (step / name).write_bytes(b"x")
    (step / "trainer_state.json").write_text("{}")
    (step / "grpolab_checkpoint.json").write_text(json.dumps({"step": 5}))
    (step.parent / "latest_checkpointed_iteration.txt").write_text("5")
    data = json.loads((step / "config.json").read_text())
    (step / "config.json").write_text(json.dumps({**data, **config} if isinstance(config, dict) else config))
    code, _, err = call(capsys, "export", "parent", "--out", str(tmp_path / "w"))
    assert code == 1 and "internal error" not in err and "config.json" in err and err.count("\n") == 1, err
    assert not (tmp_path / "w").exists()


def test_export_out_through_dotdot_into_the_runs_own_folder_is_refused(hf_run, capsys):
    before = sorted(str(p.relative_to(hf_run.path)) for p in hf_run.path.rglob("*"))
    code, _, err = call(capsys, "export", "parent", "--out", str(hf_run.path / "logs" / ".."))
    assert code == 1 and "run's own folder" in err, err
    code, _, err = call(capsys, "export", "parent", "--out", str(hf_run.path / "logs" / ".." / "checkpoint" / "x"))
    assert code == 1 and "a checkpoint or run folder" in err, err
    assert sorted(str(p.relative_to(hf_run.path)) for p in hf_run.path.rglob("*")) == before


# ------------------------------------------------------------------ monitor: a file read as what it holds

METRICS = "".join(
    json.dumps({"step": s, "data": {"critic/score/mean": 0.1 * s, "response_length/mean": 100}}) + "\n"
    for s in (1, 2, 3)
)
LOG = 'Traceback (most recent call last):\n  File "main_ppo.py", line 1\nRuntimeError: CUDA out of memory\n'


@pytest.mark.parametrize(
    "name, text, code, shown",
    [
        ("train.log", METRICS, 0, "3 logged"),
        ("x.txt", METRICS, 0, "3 logged"),
        ("metrics.jsonl", LOG, 2, "no training step in it"),
        ("job.log", LOG, 2, "no training step in it"),
        ("other.jsonl", '{"loss": 1}\n{"loss": 2}\n', 2, "no training step in it"),
        ("console.jsonl", "step:1 - critic/score/mean:0.5 - response_length/mean:10\n", 0, "1 logged"),
    ],
)
def test_monitor_reads_a_file_as_what_it_holds(tmp_path, capsys, monkeypatch, name, text, code, shown):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text)
    got, out, err = call(capsys, "monitor", name, "--no-png")
    assert got == code and shown in out + err, out + err
    got, out, _ = call(capsys, "monitor", name, "--no-png", "--json")
    assert got == code and json.loads(out)


# ------------------------------------------------------------------ plan: a model that cannot be


def test_plan_refuses_more_experts_per_token_than_experts(tmp_path, capsys):
    model = tmp_path / "moe"
    model.mkdir()
    config = {
        "architectures": ["Qwen3MoeForCausalLM"],
        "model_type": "qwen3_moe",
        "hidden_size": 2048,
        "num_hidden_layers": 48,
        "num_attention_heads": 32,
        "num_key_value_heads": 4,
        "vocab_size": 151936,
        "moe_intermediate_size": 768,
        "num_experts": 8,
        "num_experts_per_tok": 16,
        "max_position_embeddings": 40960,
    }
    (model / "config.json").write_text(json.dumps(config))
    code, _, err = call(capsys, "plan", str(model), "--nodes", "1")
    assert code == 2 and "num_experts_per_tok = 16" in err and "num_experts = 8" in err and "fix" in err, err
    card = (ROOT / "params" / "models" / "qwen3_30b_a3b.yaml").read_text()
    bad = tmp_path / "card.yaml"
    bad.write_text(card.replace("active_experts: 8", "active_experts: 300"))
    code, out, err = call(capsys, "plan", str(bad), "--nodes", "1")
    assert code in (1, 2) and "active_experts" in out + err and "more experts per token" in out + err, out + err


# ------------------------------------------------------------------ the import's isolation reaches nothing


def _isolated(argv: list[str], scratch: Path, user_namespace: bool):
    if not user_namespace and os.geteuid() != 0:
        pytest.skip("a plain mount namespace needs root")
    try:
        return sandbox.run(argv, {"PATH": "/usr/bin:/bin"}, scratch, "/", 60, user_namespace)
    except RuntimeError as exc:
        pytest.skip(f"not allowed here: {exc}")


BY_HANDLE = """
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
scratch, handle = sys.argv[1], bytes.fromhex(sys.argv[2])
mount_fd = os.open(scratch, os.O_RDONLY)
fd = libc.open_by_handle_at(mount_fd, ctypes.create_string_buffer(handle), os.O_WRONLY | os.O_TRUNC)
if fd < 0:
    print("refused", os.strerror(ctypes.get_errno()))
else:
    os.write(fd, b"escaped\\n")
    print("ESCAPED")
"""


def _handle(path: Path) -> bytes | None:
    """name_to_handle_at(2) of `path`: struct file_handle as bytes (None where the file system has none)."""
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(struct.pack("<Ii", 128, 0) + b"\0" * 128)
    mount_id = ctypes.c_int()
    if libc.name_to_handle_at(-100, os.fsencode(path), buf, ctypes.byref(mount_id), 0) != 0:
        return None
    size, kind = struct.unpack("<Ii", buf.raw[:8])
    return buf.raw[: 8 + size]


@needs_isolation
@pytest.mark.parametrize("user_namespace", [False, True], ids=["mount-namespace", "user-namespace"])
def test_open_by_handle_at_through_the_scratch_mount_reaches_nothing(tmp_path, user_namespace):
    outside = tmp_path / "outside.txt"
    outside.write_text("the machine's\n")
    handle = _handle(outside)
    if handle is None:
        pytest.skip("this file system gives no file handles")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = _isolated([sys.executable, "-c", BY_HANDLE, str(scratch), handle.hex()], scratch, user_namespace)
    assert "ESCAPED" not in proc.stdout and "refused" in proc.stdout, proc.stdout + proc.stderr
    assert outside.read_text() == "the machine's\n"


@pytest.fixture
def listener(tmp_path):
    """A unix socket and a FIFO of the machine in a folder that has a mount point below it (a tmpfs), so that the
    isolation rebuilds that folder entry by entry; what reached them."""
    if os.geteuid() != 0 or not can_bind_mount(tmp_path):
        pytest.skip("needs root to mount a file system below the folder")
    folder = tmp_path / "run"
    (folder / "mnt").mkdir(parents=True)
    assert subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "none", str(folder / "mnt")]).returncode == 0
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "docker.sock"))
    server.listen(5)
    server.settimeout(0.2)
    os.mkfifo(folder / "pipe")
    fifo = os.open(folder / "pipe", os.O_RDONLY | os.O_NONBLOCK)
    subprocess.run(["mknod", str(folder / "null"), "c", "1", "3"], check=True)
    heard: list[bytes] = []
    done = threading.Event()

    def serve():
        while not done.is_set():
            with contextlib.suppress(OSError):
                conn, _ = server.accept()
                heard.append(conn.recv(100))
                conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield folder, heard, fifo
    done.set()
    thread.join(5)
    server.close()
    with contextlib.suppress(OSError):
        heard.append(os.read(fifo, 100))
    os.close(fifo)
    subprocess.run(["umount", "-l", str(folder / "mnt")])


REACH = """
import os, socket, sys
folder = sys.argv[1]
try:
    s = socket.socket(socket.AF_UNIX); s.connect(folder + "/docker.sock"); s.send(b"secret"); print("SOCKET")
except OSError as exc:
    print("socket refused", exc)
try:
    fd = os.open(folder + "/pipe", os.O_WRONLY | os.O_NONBLOCK); os.write(fd, b"secret"); print("FIFO")
except OSError as exc:
    print("fifo refused", exc)
try:
    fd = os.open(folder + "/null", os.O_WRONLY); os.write(fd, b"x"); print("DEVICE")
except OSError as exc:
    print("device refused", exc)
"""


@needs_isolation
@pytest.mark.parametrize("user_namespace", [False, True], ids=["mount-namespace", "user-namespace"])
def test_no_socket_fifo_or_device_of_the_machine_is_reachable(tmp_path, listener, user_namespace):
    folder, heard, _ = listener
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    proc = _isolated([sys.executable, "-c", REACH, str(folder)], scratch, user_namespace)
    assert proc.returncode == 0, proc.stderr
    for what in ("SOCKET", "FIFO", "DEVICE"):
        assert what not in proc.stdout, proc.stdout
    assert heard == [], heard


def test_export_into_a_mount_point_is_refused_with_a_folder_inside_it(hf_run, tmp_path, capsys, mounting):
    if not mounting:
        pytest.skip("needs root to mount")
    out = tmp_path / "volume"
    out.mkdir()
    assert subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "none", str(out)]).returncode == 0
    try:
        code, _, err = call(capsys, "export", "parent", "--out", str(out))
        assert code == 1 and "is a mount point" in err and str(out / "weights") in err, err
        assert os.listdir(out) == []
    finally:
        subprocess.run(["umount", "-l", str(out)])


@pytest.mark.parametrize(
    "png, why",
    [("notes.txt", "exists and is not a PNG"), ("/etc/curves.png", "system folder")],
)
def test_monitor_png_never_replaces_a_users_file_or_writes_in_a_system_folder(finished_run, tmp_path, capsys, png, why):
    from grpolab.monitor import synthetic

    finished_run("drawn", synthetic.healthy(5))
    (tmp_path / "notes.txt").write_text("the user's notes\n")
    (tmp_path / "folder").mkdir()
    target = png if png.startswith("/") else str(tmp_path / png)
    code, _, err = call(capsys, "monitor", "drawn", "--png", target)
    assert code == 2 and why in err, err
    assert (tmp_path / "notes.txt").read_text() == "the user's notes\n" and os.listdir(tmp_path / "folder") == []
    assert not os.path.exists("/etc/curves.png")


def test_a_link_planted_at_a_temporary_name_is_never_written_through(
    _isolated_runs, tmp_path, capsys, user, lab_started
):
    """Every file GRPO Lab replaces is written under a temporary name beside it first (a PID in it): a link put
    there in advance is removed, never followed."""
    from grpolab.monitor import synthetic

    pid = os.getpid()
    run = runs.create_run("tiny", run_id="tmpnames", root=_isolated_runs)
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(5))
    lab = tmp_path / "lab"
    lab.mkdir()
    card = tmp_path / "card.yaml"
    planted = [
        run.path / f".status.json.{pid}.tmp",
        run.path / ".curves.png.tmp.png",
        lab / f".01_setup.ipynb.{pid}.tmp",
        lab / ".lab-settings" / f".overrides.json.{pid}.tmp",
        tmp_path / f".card.yaml.{pid}.tmp",
    ]
    for link in planted:
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(user.home / "precious.txt")
    run.write_status(state="SUCCEEDED")
    assert call(capsys, "monitor", "tmpnames")[0] == 0
    assert call(capsys, "lab", "--dir", str(lab), "--no-browser")[0] == 0 and lab_started
    assert call(capsys, "card", "qwen3_8b", "--out", str(card))[0] == 0
    assert user.intact()
    assert not [p for p in planted if os.path.lexists(p)]


TTY = """
import os, sys
from pathlib import Path
from grpolab.importer import sandbox
code = "import os\\ntry:\\n    os.close(os.open('/dev/tty', os.O_RDWR))\\n    print('TTY')\\nexcept OSError as exc:\\n    print('no tty', exc)"
proc = sandbox.run([sys.executable, "-c", code], {"PATH": "/usr/bin:/bin"}, Path(sys.argv[1]), "/", 60, sys.argv[2] == "1")
print(proc.stdout.strip())
"""


@needs_isolation
@pytest.mark.parametrize("user_namespace", [False, True], ids=["mount-namespace", "user-namespace"])
def test_the_isolated_command_has_no_terminal_to_type_into(tmp_path, user_namespace):
    """Run from a terminal (util-linux `script` gives the caller one), the command inside cannot open /dev/tty: no
    TIOCSTI keystrokes pushed into the user's shell, no escape sequences written past the captured output."""
    if shutil.which("script") is None:
        pytest.skip("util-linux `script` is not installed")
    if not user_namespace and os.geteuid() != 0:
        pytest.skip("a plain mount namespace needs root")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    inner = f"{sys.executable} -c {shlex.quote(TTY)} {scratch} {int(user_namespace)}"
    proc = subprocess.run(["script", "-qec", inner, "/dev/null"], capture_output=True, text=True, timeout=120)
    assert "no tty" in proc.stdout and "TTY" not in proc.stdout, proc.stdout + proc.stderr


def test_export_out_through_a_link_into_the_machines_folders_or_empty_is_refused(hf_run, tmp_path, capsys):
    link = tmp_path / "weights"
    link.symlink_to("/usr/share/grpolab-hostile-empty")  # a new folder there would be made through the link
    code, _, err = call(capsys, "export", "parent", "--out", str(link))
    assert code == 1 and "is a system folder" in err, err
    assert not os.path.exists("/usr/share/grpolab-hostile-empty")
    code, _, err = call(capsys, "export", "parent", "--out", "")
    assert code == 2 and "an empty path" in err, err
    code, _, err = call(capsys, "monitor", "parent", "--png", str(link / "curves.png"))
    assert code == 2 and "system folder" in err, err


def test_an_export_folder_gets_the_mode_a_new_folder_gets(hf_run, tmp_path, capsys):
    out = tmp_path / "weights"
    call(capsys, "export", "parent", "--out", str(out))
    (tmp_path / "plain").mkdir()
    assert stat.S_IMODE(out.stat().st_mode) == stat.S_IMODE((tmp_path / "plain").stat().st_mode)  # not 0700
