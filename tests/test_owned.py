"""grpolab.owned: every deletion and replacement GRPO Lab makes, and what it refuses.

A folder of a user's files reached by a symbolic link, a bind mount of that folder, a file bind-mounted over a
name, another file system mounted inside: all planted in a folder GRPO Lab removes, and the user's files are all
there afterwards. Bind mounts need root (this project's CI runs as root); elsewhere those cases are skipped.
"""

from __future__ import annotations

import ast
import os
import subprocess
from pathlib import Path

import pytest

from grpolab import owned


def _user_files(tmp_path: Path) -> Path:
    user = tmp_path / "user"
    (user / "sub").mkdir(parents=True)
    (user / "precious.txt").write_text("the user's\n")
    (user / "sub" / "deep.txt").write_text("the user's too\n")
    return user


def _same(user: Path) -> None:
    assert (user / "precious.txt").read_text() == "the user's\n"
    assert (user / "sub" / "deep.txt").read_text() == "the user's too\n"


def _mount(*argv: str) -> bool:
    """mount(8) with these arguments; False where this machine does not let us (not root, no mount(8))."""
    try:
        return subprocess.run(["mount", *argv], capture_output=True, timeout=30).returncode == 0
    except OSError:
        return False


@pytest.fixture
def mounts(tmp_path):
    """mount(argv...) -> bool; every mount below tmp_path is undone at the end, wherever a rename moved it."""
    yield _mount
    below = str(tmp_path.resolve()) + "/"
    points = [p for p in owned.mount_points() if p.startswith(below)]
    for target in sorted(points, key=len, reverse=True):
        subprocess.run(["umount", "-l", target], capture_output=True, timeout=30)


def _deep(folder: Path, depth: int) -> None:
    """`depth` nested folders (by descriptors: a path that long is more than the kernel takes at once)."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            child = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
    finally:
        os.close(fd)


def test_a_marked_tree_goes_whole_links_removed_never_followed(tmp_path):
    user = _user_files(tmp_path)
    ours = owned.make_folder(tmp_path / "ours")
    (ours / "a" / "b").mkdir(parents=True)
    (ours / "a" / "b" / "f").write_text("x")
    (ours / "to-user").symlink_to(user)
    (ours / "a" / "to-file").symlink_to(user / "precious.txt")
    (ours / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(ours / "fifo")
    _deep(ours, 1500)  # shutil.rmtree recurses: RecursionError near 1,000
    assert owned.remove_tree(ours) == []
    assert not os.path.lexists(ours)
    _same(user)


def test_what_grpolab_did_not_make_is_kept_whole(tmp_path):
    user = _user_files(tmp_path)
    kept = owned.remove_tree(user)
    assert len(kept) == 1 and "not made by GRPO Lab" in kept[0]
    _same(user)
    # a record GRPO Lab writes there is proof enough (a run folder's status.json); a link named so is not
    (user / "status.json").symlink_to(user / "precious.txt")
    assert owned.remove_tree(user, proof="status.json")
    _same(user)
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "status.json").write_text("{}")
    assert owned.remove_tree(run, proof="status.json") == [] and not run.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert owned.remove_tree(empty) == [] and not empty.exists()  # an empty folder holds nothing of anyone's
    assert owned.remove_tree(tmp_path / "missing") == []


def test_a_link_or_a_file_is_never_removed_as_a_tree(tmp_path):
    user = _user_files(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(user)
    (user / owned.MARKER).write_text("planted")  # a marker behind a link is still not followed
    assert "symbolic link" in owned.remove_tree(link)[0]
    assert "not a folder" in owned.remove_tree(user / "precious.txt")[0]
    _same(user)


def test_bind_mounts_and_other_file_systems_inside_are_never_crossed(tmp_path, mounts):
    user = _user_files(tmp_path)
    ours = owned.make_folder(tmp_path / "ours")
    (ours / "bound").mkdir()
    (ours / "file").write_text("")
    (ours / "tmpfs").mkdir()
    if not mounts("--bind", str(user), str(ours / "bound")):
        pytest.skip("mount --bind is not allowed here (not root)")
    assert mounts("--bind", str(user / "precious.txt"), str(ours / "file"))
    assert mounts("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(ours / "tmpfs"))
    (ours / "tmpfs" / "on-tmpfs").write_text("kept")
    (ours / "mine").write_text("ours")
    kept = owned.remove_tree(ours)
    assert sorted(Path(k.split(" (")[0]).name for k in kept) == ["bound", "file", "tmpfs"], kept
    assert all("mount point" in k for k in kept)
    _same(user)
    assert (ours / "tmpfs" / "on-tmpfs").read_text() == "kept"
    assert not (ours / "mine").exists() and (ours / owned.MARKER).exists()  # still known as ours
    # the mount point itself is refused, as is a folder whose mount point is below a folder of it
    assert "mount point" in owned.remove_tree(ours / "bound")[0]
    _same(user)


def test_aside_moves_the_folder_out_of_its_name_first(tmp_path, mounts):
    user = _user_files(tmp_path)
    ours = owned.make_folder(tmp_path / "global_step_3")
    (ours / "data.pt").write_text("x")
    (ours / "bound").mkdir()
    mounted = mounts("--bind", str(user), str(ours / "bound"))  # found by its mount, not its path (moved)
    stale = owned.make_folder(tmp_path / ".removing-global_step_3")  # left by a removal that died
    (stale / "keep").write_text("x")
    kept = owned.remove_tree(ours, aside=".removing-")
    assert len(kept) == mounted and all("mount point" in k for k in kept)
    assert not ours.exists() and (stale / "keep").exists()
    _same(user)


def test_remove_file_removes_a_link_never_its_target(tmp_path, mounts):
    user = _user_files(tmp_path)
    link = tmp_path / "secrets.json"
    link.symlink_to(user / "precious.txt")
    assert owned.remove_file(link) and not os.path.lexists(link)
    assert owned.remove_file(link) is False
    with pytest.raises(FileNotFoundError):
        owned.remove_file(link, missing_ok=False)
    with pytest.raises(owned.Refused, match="folder"):
        owned.remove_file(user)
    over = tmp_path / "over"
    over.write_text("")
    if mounts("--bind", str(user / "precious.txt"), str(over)):
        with pytest.raises(owned.Refused, match="mount point"):
            owned.remove_file(over)
    _same(user)


def test_replace_file_replaces_a_link_itself_never_a_folder_or_mount(tmp_path, mounts):
    user = _user_files(tmp_path)
    target = tmp_path / "settings.json"
    target.symlink_to(user / "precious.txt")
    new = tmp_path / ".settings.json.tmp"
    new.write_text("new")
    owned.replace_file(new, target)
    assert target.read_text() == "new" and not target.is_symlink()
    _same(user)
    new.write_text("new")
    with pytest.raises(owned.Refused, match="folder"):
        owned.replace_file(new, user)
    over = tmp_path / "over"
    over.write_text("")
    if mounts("--bind", str(user / "precious.txt"), str(over)):
        with pytest.raises(owned.Refused, match="mount point"):
            owned.replace_file(new, over)
    link = tmp_path / "link-as-source"
    link.symlink_to(user / "precious.txt")
    with pytest.raises(owned.Refused):
        owned.replace_file(link, tmp_path / "anything")
    _same(user)


def test_fresh_file_removes_a_link_at_its_name_and_never_writes_through_it(tmp_path):
    user = _user_files(tmp_path)
    tmp = tmp_path / ".status.json.123.tmp"
    tmp.symlink_to(user / "precious.txt")
    assert owned.fresh_file(tmp) == tmp and not tmp.is_symlink() and tmp.read_bytes() == b""
    tmp.write_text("left by a writer that died")
    assert owned.fresh_file(tmp).read_bytes() == b""
    with pytest.raises(owned.Refused):
        owned.fresh_file(user)
    _same(user)


def test_move_never_replaces_what_is_there(tmp_path):
    user = _user_files(tmp_path)
    src = tmp_path / "src.txt"
    src.write_text("ours")
    with pytest.raises(FileExistsError):
        owned.move(src, user / "precious.txt")
    stage = owned.make_folder(tmp_path / "stage")
    with pytest.raises(FileExistsError):
        owned.move(stage, user)
    empty = tmp_path / "empty"
    empty.mkdir()
    owned.move(stage, empty)  # an empty folder is taken, as rename(2) does
    assert (empty / owned.MARKER).exists() and not stage.exists()
    owned.move(src, tmp_path / "new.txt")
    assert (tmp_path / "new.txt").read_text() == "ours"
    _same(user)


def test_scratch_is_removed_at_the_end_and_keeps_a_bind_mount(tmp_path, mounts):
    user = _user_files(tmp_path)
    with owned.scratch("grpolab-test-", dir=tmp_path) as folder:
        (Path(folder) / "made").mkdir()
        (Path(folder) / "made" / "link").symlink_to(user)
        bound = Path(folder) / "bound"
        bound.mkdir()
        mounted = mounts("--bind", str(user), str(bound))
    _same(user)
    assert os.path.exists(folder) == mounted


# ------------------------------------------------------------------------------------------------ one home

LIB = Path(__file__).resolve().parents[1] / "lib" / "grpolab"
# inside the import's isolation, on its own tmpfs, before anything else and with the standard library only
OUTSIDE_REACH = {"importer/sandbox_init.py": "builds the isolation's root on a tmpfs of its own namespace"}
MODULES = {"os": {"remove", "unlink", "replace", "rename", "renames", "removedirs"}, "shutil": {"rmtree", "move"}}


def deletions(source: str) -> list[tuple[int, str]]:
    """(line, call) of every deletion or replacement in `source`: os.remove/unlink/replace/rename, shutil.rmtree/move,
    tempfile.TemporaryDirectory (its end is an rmtree), and a path's .unlink(), .rmtree(), or .rename(X) /
    .replace(X) with one argument (str.replace takes two; dataclasses.replace and pandas' rename take keywords)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        owner = func.value.id if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) else ""
        if owner in MODULES and name in MODULES[owner] or name in ("rmtree", "TemporaryDirectory"):
            found.append((node.lineno, f"{owner + '.' if owner else ''}{name}"))
        elif owner not in (*MODULES, "owned") and isinstance(func, ast.Attribute):
            one_path = len(node.args) == 1 and not node.keywords
            if name == "unlink" or name in ("rename", "replace") and one_path:
                found.append((node.lineno, f".{name}"))
    return found


def test_every_deletion_and_replacement_in_lib_goes_through_owned():
    found = {
        f"{path.relative_to(LIB)}:{line}: {call}"
        for path in sorted(LIB.rglob("*.py"))
        if path.name != "owned.py" and str(path.relative_to(LIB)) not in OUTSIDE_REACH
        for line, call in deletions(path.read_text())
    }
    assert not found, "use grpolab.owned instead:\n" + "\n".join(sorted(found))


def test_the_scan_finds_what_it_forbids():
    planted = """
import os, shutil, tempfile
from pathlib import Path
os.remove("a"); os.unlink("a"); os.replace("a", "b"); os.rename("a", "b"); shutil.rmtree("a"); shutil.move("a", "b")
Path("a").unlink(missing_ok=True); Path("a").rename("b"); Path("a").replace("b")
with tempfile.TemporaryDirectory() as tmp: pass
"""
    harmless = """
import dataclasses
"a-b".replace("-", "_"); dataclasses.replace(object(), x=1); frame.rename(columns={"a": "b"}); owned.move("a", "b")
"""
    assert len(deletions(planted)) == 10 and deletions(harmless) == []
