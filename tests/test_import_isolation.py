"""`grpolab import` never touches the user's files: the script runs isolated by the operating system.

A hostile-but-realistic script truncates a log by redirection, deletes, moves, copies over, tees and dd's files at
absolute paths and in $HOME, and tries the network; after the import every file outside the importer's scratch
folder is byte for byte and time for time what it was, the launch line behind the redirection is still recorded,
and `--out -` writes nothing. Where the machine cannot isolate (no util-linux `unshare`, no namespaces allowed),
import refuses with a clear message unless --trusted says the script is trusted. Both ways of isolating (a mount
namespace as root, a user namespace otherwise) are exercised where this machine allows them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grpolab.importer import sandbox

ROOT = Path(__file__).resolve().parents[1]
ISOLATION = sandbox.available()
needs_isolation = pytest.mark.skipif(ISOLATION is not None, reason=f"this machine cannot isolate: {ISOLATION}")


def _tree(folder: Path) -> dict[str, tuple]:
    """Every file and folder under `folder`: content (files), mode and modification time."""
    found = {}
    for path in sorted(folder.rglob("*")):
        st = path.lstat()
        found[str(path.relative_to(folder))] = (
            path.read_bytes() if path.is_file() else None,
            st.st_mode,
            st.st_mtime_ns,
        )
    return found


def _victims(tmp_path: Path) -> tuple[Path, Path, Path]:
    abs_dir, home, cwd = tmp_path / "abs", tmp_path / "home", tmp_path / "cwd"
    for folder in (abs_dir, home, cwd):
        folder.mkdir()
    for folder in (abs_dir, home):
        for name in ("keep.txt", "train.log", "mv.txt", "cp.txt", "tee.txt", "dd.txt"):
            (folder / name).write_text(f"{name} as it was\n")
    (home / ".bashrc").write_text("# the user's\n")
    return abs_dir, home, cwd


HOSTILE = """#!/bin/bash
set -euo pipefail
for D in {abs} "$HOME"; do
  echo overwritten > "$D/keep.txt"
  /bin/rm -f "$D/keep.txt"
  rm -rf "$D/mv.txt.bak"
  /bin/mv "$D/mv.txt" "$D/moved.txt"
  /bin/cp /etc/hostname "$D/cp.txt"
  echo teed | /usr/bin/tee "$D/tee.txt" >/dev/null
  echo teed | tee -a "$D/tee.txt" >/dev/null
  /bin/dd if=/dev/zero of="$D/dd.txt" bs=1k count=4 2>/dev/null
  dd if=/dev/zero of="$D/dd_new.txt" bs=1 count=3 2>/dev/null
  touch "$D/new.txt"
done
: > "$HOME/.bashrc"
echo made-in-cwd > made.txt
if {python} -c 'import socket; socket.create_connection(("1.1.1.1", 53), 3)' 2>/dev/null; then NET=yes; else NET=no; fi
python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B +net=$NET > {abs}/train.log 2>&1
"""


@needs_isolation
def test_nothing_outside_scratch_changes(cli, tmp_path):
    abs_dir, home, cwd = _victims(tmp_path)
    script = tmp_path / "hostile.sh"
    script.write_text(HOSTILE.format(abs=abs_dir, python=sys.executable))
    recipes = sorted((ROOT / "params" / "recipes").iterdir())
    before = {d: _tree(d) for d in (abs_dir, home, cwd)}
    env = {"HOME": str(home), "GRPOLAB_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("grpolab")), "import", str(script), "--out", "-"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, **env},
    )
    assert proc.returncode in (0, 1), proc.stderr  # the launch behind `> train.log` was still recorded
    assert "path: Qwen/Qwen3-8B" in proc.stdout and "net: 'no'" in proc.stdout  # no network inside
    assert {d: _tree(d) for d in (abs_dir, home, cwd)} == before
    assert sorted((ROOT / "params" / "recipes").iterdir()) == recipes  # --out - writes nothing


@needs_isolation
@pytest.mark.parametrize("user_namespace", [False, True], ids=["mount-namespace", "user-namespace"])
def test_both_ways_of_isolating_keep_files_and_share_only_scratch(tmp_path, user_namespace):
    if not user_namespace and os.geteuid() != 0:
        pytest.skip("a plain mount namespace needs root")
    abs_dir, home, _ = _victims(tmp_path)
    before = _tree(abs_dir)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    command = (
        f"/bin/rm -f {abs_dir}/keep.txt; echo x > {abs_dir}/train.log; echo shared > {scratch}/out; "
        "cat /proc/self/status | grep CapBnd; mount -t tmpfs none /mnt 2>/dev/null && echo MOUNTED; ls /dev"
    )
    try:
        proc = sandbox.run(["/bin/bash", "-c", command], {"PATH": "/usr/bin:/bin"}, scratch, "/", 60, user_namespace)
    except RuntimeError as exc:
        pytest.skip(f"not allowed here: {exc}")
    assert proc.returncode == 0, proc.stderr
    assert _tree(abs_dir) == before and (scratch / "out").read_text() == "shared\n"
    assert "MOUNTED" not in proc.stdout and "CapBnd:\t0000000000000000" in proc.stdout  # no capability at all
    assert set(proc.stdout.split("\n", 1)[1].split()) <= {
        "fd",
        "full",
        "null",
        "pts",
        "random",
        "shm",
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
    }


def test_without_isolation_import_refuses_unless_trusted(cli, tmp_path):
    abs_dir, home, cwd = _victims(tmp_path)
    script = tmp_path / "run.sh"
    script.write_text(
        f"#!/bin/bash\nrm -f {abs_dir}/keep.txt\n"
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B\n"
    )
    before = _tree(abs_dir)
    no_unshare = {"GRPOLAB_UNSHARE": str(tmp_path / "no-unshare-here")}
    proc = cli("import", str(script), "--out", "-", env=no_unshare)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "refusing to run the script: this machine cannot isolate it" in proc.stderr and "--trusted" in proc.stderr
    proc = cli("import", str(script), "--out", "-", "--trusted", env=no_unshare)
    assert proc.returncode in (0, 1) and "path: Qwen/Qwen3-8B" in proc.stdout, proc.stderr
    assert _tree(abs_dir) == before  # trusted still turns rm, cp, mv, ... into no-ops


# ------------------------------------------------------------------ the recorder stands at the exec boundary

REAL = os.path.realpath(sys.executable)  # the interpreter file itself, not the venv's link to it
LAUNCH = "-m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B actor_rollout_ref.rollout.n=4"
TRICKS = {
    "path-prepended": f"export PATH={os.path.dirname(REAL)}:$PATH\nhash -r\npython3 {LAUNCH}",
    "path-reset": f"PATH={os.path.dirname(REAL)}:/usr/bin:/bin\n{os.path.basename(REAL)} {LAUNCH}",
    "absolute": f"{REAL} {LAUNCH}",
    "exec": f"exec {REAL} {LAUNCH}",
    "env-i": f"env -i PATH={os.path.dirname(REAL)} {os.path.basename(REAL)} {LAUNCH}",
    "venv-python": f'PY={sys.executable}\n"$PY" {LAUNCH}',
    "uv-run": f"PATH=/usr/bin:/bin\nuv run --with verl python {LAUNCH}",
    "conda-run": f"conda run -n verl --no-capture-output python {LAUNCH}",
    "srun": f"srun --nodes=2 --ntasks-per-node=1 python3 {LAUNCH}",
    "shebang": f"printf '#!/usr/bin/env {os.path.basename(REAL)}\\n' > t.py\nchmod +x t.py\n"
    f"PATH={os.path.dirname(REAL)}:/usr/bin:/bin ./t.py\n{REAL} {LAUNCH}",
}


@needs_isolation
@pytest.mark.parametrize("trick", list(TRICKS))
def test_every_way_of_reaching_an_interpreter_is_recorded_never_run(cli, tmp_path, trick):
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\nset -e\ncd {tmp_path}\n{TRICKS[trick]}\n")
    proc = cli("import", str(script), "--out", "-")
    assert proc.returncode in (0, 1), proc.stderr  # a real interpreter would have run verl and failed: exit 2
    assert "path: Qwen/Qwen3-8B" in proc.stdout and "n: 4  # actor_rollout_ref.rollout.n=4" in proc.stdout
    assert not (tmp_path / "t.py").exists()  # and the files it wrote stayed inside the isolation


@needs_isolation
def test_a_script_that_fills_the_scratch_layer_is_capped_and_told(cli, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\nhead -c 400M /dev/zero > /tmp/big 2>/dev/null || true\n"
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B\n"
    )
    proc = cli("import", str(script), "--out", "-")
    assert proc.returncode in (0, 1), proc.stderr
    assert "filled the import's 256 MiB scratch layer" in proc.stdout + proc.stderr


def test_a_crlf_script_is_refused_with_the_fix(cli, tmp_path):
    script = tmp_path / "run.sh"
    script.write_bytes(b"#!/bin/bash\r\npython3 -m verl.trainer.main_ppo \\\r\n  actor_rollout_ref.rollout.n=4\r\n")
    proc = cli("import", str(script), "--out", "-")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "CRLF" in proc.stderr and "dos2unix" in proc.stderr and "continuation" in proc.stderr


@needs_isolation
def test_a_huge_environment_says_so_not_no_launch_line(cli, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\nexport BIG=$(head -c 200000 /dev/zero | tr '\\0' x)\n"
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B\n"
    )
    proc = cli("import", str(script), "--out", "-")
    assert proc.returncode == 2 and "Argument list too long" in proc.stderr and "128 KiB" in proc.stderr


@needs_isolation
def test_the_recorder_covers_interpreters_in_a_user_namespace_too(tmp_path, monkeypatch):
    from grpolab.importer import record

    monkeypatch.setattr(sandbox, "_WORKS", [])
    monkeypatch.setattr(sandbox, "_modes", lambda: [sandbox.USER])
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\n{TRICKS['env-i']}\n{TRICKS['exec']}\n")
    try:
        found = record.record(script)
    except record.ImportFailed as exc:
        if "cannot isolate" in str(exc):
            pytest.skip(f"no user namespaces here: {exc}")
        raise
    assert found.module == "verl.trainer.main_ppo" and "actor_rollout_ref.rollout.n=4" in found.argv
    assert sandbox._WORKS == [sandbox.USER]


@needs_isolation
def test_a_fifo_as_a_runtime_env_file_is_not_waited_on(cli, tmp_path):
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\nmkfifo /tmp/renv.yaml\nray job submit --runtime-env /tmp/renv.yaml -- "
        "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B\n"
    )
    proc = cli("import", str(script), "--out", "-", timeout=50)  # the import's own limit is 60 s
    assert proc.returncode in (0, 1) and "path: Qwen/Qwen3-8B" in proc.stdout, proc.stderr
    assert "/tmp/renv.yaml" in proc.stderr and not os.path.exists("/tmp/renv.yaml")
