"""A folder of a user's files and the ways a careless or hostile user plants it inside a folder GRPO Lab deletes or
replaces: a symbolic link to the folder and to one of its files, a bind mount of the folder and of the file (root
only: mount(8)). tests/test_owned.py and tests/test_hostile_owned.py put this folder on sys.path."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


class UserFiles:
    """`root/user` with two files in two folders; `plant(folder)` puts links (and, where this machine lets us, bind
    mounts) to them into `folder`; `intact()` says whether every file is as it was (content and mtime)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "user"
        (self.home / "sub").mkdir(parents=True, exist_ok=True)
        (self.home / "precious.txt").write_text("the user's\n")
        (self.home / "sub" / "deep.txt").write_text("the user's too\n")
        self.before = self.tree()
        self.mounted: list[str] = []

    def tree(self) -> dict[str, tuple]:
        found = {}
        for path in sorted(self.home.rglob("*")):
            st = path.lstat()
            found[str(path.relative_to(self.home))] = (path.read_bytes() if path.is_file() else None, st.st_mtime_ns)
        return found

    def intact(self) -> bool:
        return self.tree() == self.before

    def plant(self, folder: Path, mounts: bool = True) -> list[str]:
        """Links and bind mounts to the user's files inside `folder`; the names planted."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "user-folder-link").symlink_to(self.home)
        (folder / "user-file-link").symlink_to(self.home / "precious.txt")
        names = ["user-folder-link", "user-file-link"]
        if mounts:
            (folder / "user-bound").mkdir()
            (folder / "user-file-bound").write_text("")
            if self.mount(self.home, folder / "user-bound"):
                self.mount(self.home / "precious.txt", folder / "user-file-bound")
                names += ["user-bound", "user-file-bound"]
        return names

    def mount(self, source: Path, target: Path) -> bool:
        try:
            done = subprocess.run(["mount", "--bind", str(source), str(target)], capture_output=True, timeout=30)
        except OSError:
            return False
        if done.returncode == 0:
            self.mounted.append(str(target))
        return done.returncode == 0

    def unmount_all(self) -> None:
        """Every mount below `root` and every mount of the user's files wherever it was planted (a product's scratch
        folder in /tmp too) or a rename moved it, deepest first: none outlives the test."""
        below, home = str(self.root.resolve()) + "/", str(self.home.resolve())
        with open("/proc/self/mountinfo") as fh:
            rows = [line.split() for line in fh]
        points = {
            target
            for row in rows
            if (target := row[4].replace("\\040", " ")).startswith(below)
            or target in self.mounted
            or row[3].replace("\\040", " ").removesuffix("//deleted").startswith(home)
        }
        for target in sorted(points, key=len, reverse=True):
            subprocess.run(["umount", "-l", target], capture_output=True, timeout=30)
        self.mounted.clear()


def can_bind_mount(tmp: Path) -> bool:
    """True where this process may bind-mount (root, mount(8) present, a mount namespace that allows it)."""
    if os.geteuid() != 0:
        return False
    probe = UserFiles(tmp / "probe")
    target = tmp / "probe" / "target"
    target.mkdir()
    ok = probe.mount(probe.home, target)
    probe.unmount_all()
    return ok
