"""The import's recorder on scripts that are big, odd or careless (issues 46 and 47): it takes time linear in the
script's size and variables, never waits on what a script leaves in its scratch folder, cleans up whatever the
script nested there, refuses an emptied PATH as unusable input (exit 2), and when a script removes its own folders
(an `rm -rf ${ROOT}/${NAME}` whose variables are unset) it says what happened instead of "no launch line" with a
buried traceback. Every input is built here; each case runs the real command line (or the one recorder function).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

from grpolab import owned
from grpolab.importer import record as recorder
from grpolab.importer import sandbox

TRUSTED = sandbox.available() is not None  # a machine that cannot isolate runs these trusted
FLAGS = ("--trusted",) if TRUSTED else ()
# trusted, `rm` does nothing at all: what a script removes is recorded where it really runs, isolated
needs_isolation = pytest.mark.skipif(TRUSTED, reason=f"this machine cannot isolate: {sandbox.available()}")
LAUNCH = "python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen3-8B trainer.nnodes=2\n"


def _import(cli, tmp_path: Path, body: str, *more: str, timeout: float = 200, env: dict | None = None):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\n" + body)
    return cli("import", str(script), *FLAGS, "--out", "-", *more, timeout=timeout, env=env)


@pytest.mark.slow(15)
def test_a_script_with_400000_variables_is_recorded(cli, tmp_path):
    """bash's own listing of its variables (compgen -v, set, declare -p) takes quadratic time in their number: the
    recorder tests only the names the script reads, once, at its launch."""
    body = (
        'for i in $(seq 400000); do printf -v "v$i" x; done\n'
        "for j in 1 2 3; do python3 -c 'print(1)' >/dev/null; done\n"
        'echo "$v7 $UNSET_ONE" >/dev/null\n' + LAUNCH
    )
    proc = _import(cli, tmp_path, body)
    assert proc.returncode in (0, 1), proc.stderr
    assert "nnodes: 2" in proc.stdout and "unset in your environment: $UNSET_ONE" in proc.stderr
    assert "$v7" not in proc.stderr  # set by the script before its launch


@pytest.mark.slow(20)
def test_a_20_mb_one_line_script_does_not_hang(cli, tmp_path):
    body = "X=" + "a" * 20_000_000 + " ; " + LAUNCH
    proc = _import(cli, tmp_path, body, timeout=250)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    assert "nnodes: 2" in proc.stdout


@pytest.mark.parametrize("path", ["", "/nonexistent:/also-not"])
def test_an_emptied_path_is_unusable_input(cli, tmp_path, path):
    body = "N=$(nproc)\nD=$(dirname /a/b)\n" + LAUNCH.replace("nnodes=2", "nnodes=$N")
    proc = _import(cli, tmp_path, body, env={"PATH": path})
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert "PATH" in proc.stderr and "import again" in proc.stderr and "internal error" not in proc.stderr


def test_a_path_without_system_folders_names_the_commands_not_found(cli, tmp_path):
    body = "N=$(nproc)\n" + LAUNCH.replace("nnodes=2", "nnodes=$N")
    proc = _import(cli, tmp_path, body, env={"PATH": str(tmp_path)})
    assert proc.returncode == 2 and "nproc: command not found" in proc.stderr, proc.stderr


def test_fifos_left_in_the_recorders_folder_are_not_waited_on(cli, tmp_path):
    body = (
        'C="$GRPOLAB_IMPORT_ROOT/calls"\n'
        'mkfifo "$C/0-0.json" "$C/vars-1-1" "$C/rm.log" "$C/zz.json" 2>/dev/null\n'
        'ln -s /dev/zero "$C/00-link.json" 2>/dev/null\n'
        'printf "[1, 2]" > "$C/01-0.json"\n' + LAUNCH
    )
    proc = _import(cli, tmp_path, body, timeout=100)  # the import's own limit is 60 s
    assert proc.returncode in (0, 1) and "nnodes: 2" in proc.stdout, proc.stderr


def test_1500_nested_folders_in_the_scratch_are_cleaned_up(tmp_path, monkeypatch):
    """No RecursionError, no folder left behind: the scratch folder is removed without recursion."""
    scratch_parent = tmp_path / "tmp"
    scratch_parent.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch_parent))
    script = tmp_path / "run.sh"
    script.write_text(
        # one mkdir of d/d/.../d (3,000 characters, under PATH_MAX), not 1500 of them: each process the script starts
        # costs the isolation's exec boundary, and the tree left is the same
        '#!/bin/bash\ncd "$GRPOLAB_IMPORT_ROOT/calls" && deep=$(printf \'d/%.0s\' {1..1500}) && mkdir -p "$deep"\n'
        'builtin cd "$deep" && ln -s / loop\nbuiltin cd /\n' + LAUNCH
    )
    found = recorder.record(script, trusted=TRUSTED)
    assert "trainer.nnodes=2" in found.argv
    assert list(scratch_parent.iterdir()) == []


@needs_isolation
def test_a_script_that_removes_the_scratch_still_imports_and_says_so(cli, tmp_path):
    body = 'ROOT=${ROOT:-}\nNAME=${NAME:-}\nrm -rf "${ROOT}${GRPOLAB_IMPORT_ROOT}/${NAME}"\n' + LAUNCH
    proc = _import(cli, tmp_path, body)
    assert proc.returncode in (0, 1), proc.stderr
    assert "nnodes: 2" in proc.stdout
    assert "the script removed its own folders" in proc.stderr and "removed the import's scratch folder" in proc.stderr
    assert "Traceback" not in proc.stderr and "grpolab-import-" not in proc.stderr


@needs_isolation
def test_a_script_that_stops_after_removing_its_folders_says_what_it_removed(cli, tmp_path):
    work = tmp_path / "work"
    (work / "outputs").mkdir(parents=True)
    script = work / "run.sh"
    script.write_text('#!/bin/bash\nset -e\ncd "$(dirname "$0")"\nrm -rf "$PWD/${OUT_DIR:-}"\nfalse\n' + LAUNCH)
    proc = cli("import", str(script), "--out", "-", "--json")
    error = json.loads(proc.stdout)["error"]
    assert proc.returncode == 2 and "exited with status 1 before launching verl" in error, error
    assert "the script removed its own folders" in error and f"`rm -rf {work}/`" in error, error
    assert "no launch line" not in error and "Traceback" not in error
    assert (work / "outputs").is_dir()  # isolated: nothing outside the scratch folder changed


def test_a_folder_nested_1500_deep_elsewhere_on_the_machine_does_not_break_the_import(cli, tmp_path):
    """The search for interpreters to cover walks the machine's folders without recursion."""
    deep = owned.make_folder(tmp_path / "elsewhere")  # removed at the end by owned.remove_tree
    fd = os.open(deep, os.O_RDONLY)
    for _ in range(1500):  # made relative to the folder above: no path of 3,000 characters is ever spelled
        os.mkdir("d", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    try:
        proc = _import(cli, tmp_path, LAUNCH)
    finally:
        assert (
            owned.remove_tree(deep) == []
        )  # pytest's own clean-up of old temporary folders recurses, and would fail on it
    assert proc.returncode in (0, 1) and "nnodes: 2" in proc.stdout, proc.stderr[-2000:]
