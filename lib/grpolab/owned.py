"""Every deletion and replacement GRPO Lab makes: a folder tree removed, a file removed, a file put over another, a
file or folder moved to a new name. Nothing a user owns is deleted or replaced through them.

How GRPO Lab knows what it created:
- a folder it makes in order to delete it later (a staging folder, the import's scratch, a build folder) is made by
  `make_folder`, `temp_folder` or `scratch`, which write MARKER into it; `remove_tree` removes a folder only when
  it holds MARKER, or the file its caller names as `proof` (a record only GRPO Lab or the trainer it launched
  writes there: a run folder's status.json, a checkpoint's data.pt), or nothing at all (an empty folder holds
  nothing of anyone's);
- inside such a folder everything is taken to be GRPO Lab's, except what lies behind a mount point (a bind mount
  of a user's folder, a file mounted over a name): never crossed, never removed, and reported as kept;
- a symbolic link is never followed: the link itself is removed (its target stays as it is), and a folder to
  remove that is itself a link is refused;
- a file is put over another only by `replace_file` (never over a folder or a mount point; a link is replaced
  itself, never the file it points at) and moved to a new name only by `move`, which never replaces what is there
  (the kernel's RENAME_NOREPLACE; an empty folder at a folder's new name is the one exception, as rename(2) allows).

tests/test_owned.py greps lib/ for rmtree, unlink, os.remove, os.replace, os.rename, Path.rename/replace,
shutil.move and TemporaryDirectory, and finds them here only (and in the two scripts that run inside the import's
isolation, on its own tmpfs, with the standard library only).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

MARKER = ".grpolab-owned"  # in a folder GRPO Lab made to delete later; its content says who made it
MAX_OPEN = 64  # folder descriptors held at once while a tree is removed (deeper folders are reopened by "..")


class Refused(OSError):
    """A deletion or replacement GRPO Lab will not make (not its own, a mount point, a link); the message says why."""


# ------------------------------------------------------------------------------------------------ making folders


def _mark(folder: Path) -> Path:
    fd = os.open(folder / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"made by GRPO Lab (pid {os.getpid()}); removed by it when it is done\n")
    return folder


def make_folder(path: str | os.PathLike, parents: bool = False) -> Path:
    """A new folder at `path` (FileExistsError when something is there), marked as GRPO Lab's."""
    path = Path(path)
    if parents:
        path.parent.mkdir(parents=True, exist_ok=True)
    path.mkdir()
    return _mark(path)


def temp_folder(prefix: str, dir: str | os.PathLike | None = None) -> Path:
    """A new, uniquely named folder (tempfile.mkdtemp: mode 0700), marked as GRPO Lab's."""
    return _mark(Path(tempfile.mkdtemp(prefix=prefix, dir=dir)))


@contextlib.contextmanager
def scratch(prefix: str, dir: str | os.PathLike | None = None) -> Iterator[str]:
    """tempfile.TemporaryDirectory's use (`with scratch("x-") as tmp:`), removed by `remove_tree` at the end."""
    folder = temp_folder(prefix, dir)
    try:
        yield str(folder)
    finally:
        remove_tree(folder)


# ------------------------------------------------------------------------------------------------ mount points


def _unescape(text: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def mount_points() -> frozenset[str]:
    """Every mount point of this process's mount namespace (/proc/self/mountinfo; empty where there is none): a
    bind mount of a folder of the same file system shows nowhere else (st_dev is the same)."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            return frozenset(_unescape(line.split()[4]) for line in fh if len(line.split()) > 4)
    except OSError:
        return frozenset()


def mount_id(fd: int) -> int | None:
    """The id of the mount an open descriptor is on (/proc/self/fdinfo's mnt_id; None where there is none): a
    folder on another mount than its parent's is a mount point, whatever its path or st_dev say (a bind mount of
    the same file system, a folder renamed since mountinfo was read)."""
    try:
        with open(f"/proc/self/fdinfo/{fd}", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("mnt_id:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def is_mount_point(path: str | os.PathLike, points: frozenset[str] | None = None) -> bool:
    """True when `path` (not followed when it is a link) is where something is mounted."""
    path = Path(path)
    with contextlib.suppress(OSError):
        if path.is_symlink():
            return False
        real = os.path.realpath(path)
        if real in (mount_points() if points is None else points):
            return True
        return os.lstat(path).st_dev != os.lstat(path.parent).st_dev
    return False


# ------------------------------------------------------------------------------------------------ removing a tree


@dataclass
class _Frame:
    path: str  # as this process sees it (for mount points and for what is reported)
    dev: int
    ino: int
    names: list[str]
    fd: int | None = None
    name: str = ""  # its name in the folder above


@dataclass
class _Walk:
    top_dev: int
    points: frozenset[str]
    top_mount: int | None
    kept: list[str] = field(default_factory=list)

    def keep(self, path: str, why: str) -> None:
        self.kept.append(f"{path} ({why})")


def _open_dir(name: str, dir_fd: int | None) -> int:
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)


def _parent(frame: _Frame, parent: _Frame) -> int:
    fd = os.open("..", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=frame.fd)
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (parent.dev, parent.ino):
        os.close(fd)
        raise Refused(errno.ESTALE, f"{parent.path} was moved while it was being removed: stopped there")
    return fd


def _close_far(stack: list[_Frame]) -> None:
    """Hold at most MAX_OPEN descriptors: close those of the frames furthest from both ends."""
    open_frames = [f for f in stack[1:-1] if f.fd is not None]
    for frame in open_frames[: max(0, len(open_frames) + 2 - MAX_OPEN)]:
        os.close(frame.fd)
        frame.fd = None


def _remove_entries(walk: _Walk, top: _Frame) -> None:
    """Depth first, one folder's names listed at a time, without recursion (a tree 10,000 folders deep is fine)."""
    stack = [top]
    try:
        while stack:
            frame = stack[-1]  # the top frame's descriptor is always open
            if frame.names:
                child = _remove_entry(walk, frame, frame.names.pop())
                if child is not None:
                    stack.append(child)
                    _close_far(stack)
                continue
            # the folder's names are done: remove it from the folder above (unless something in it was kept)
            stack.pop()
            if not stack:
                break
            parent = stack[-1]
            if parent.fd is None:  # closed on the way down: reopened by "..", checked to be the same folder
                parent.fd = _parent(frame, parent)
            os.close(frame.fd)
            frame.fd = None
            try:
                os.rmdir(frame.name, dir_fd=parent.fd)
            except FileNotFoundError:
                pass
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):  # not empty: what was kept in it said so
                    walk.keep(frame.path, exc.strerror or str(exc))
    finally:
        for frame in (top, *stack):
            if frame.fd is not None:
                os.close(frame.fd)
                frame.fd = None


def _remove_entry(walk: _Walk, frame: _Frame, name: str) -> _Frame | None:
    """Remove one entry of the folder `frame`: a file, a link (never followed), a socket, a FIFO; a folder is
    opened (the frame to walk next). A mount point is kept."""
    path = os.path.join(frame.path, name)
    try:
        st = os.stat(name, dir_fd=frame.fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        walk.keep(path, exc.strerror or str(exc))
        return None
    if path in walk.points or st.st_dev != walk.top_dev:
        walk.keep(path, "a mount point: never crossed")
        return None
    try:
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(name, dir_fd=frame.fd)
            return None
        if st.st_uid == os.geteuid() and st.st_mode & 0o700 != 0o700:  # ours, made unlistable (a script's chmod 0)
            os.chmod(name, stat.S_IMODE(st.st_mode) | 0o700, dir_fd=frame.fd)
        fd = _open_dir(name, frame.fd)
        seen = os.fstat(fd)
        if (seen.st_dev, seen.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            walk.keep(path, "changed while it was being removed")
            return None
        if mount_id(fd) != walk.top_mount:  # a mount point by its mount, not its path (renamed since, bound)
            os.close(fd)
            walk.keep(path, "a mount point: never crossed")
            return None
        try:
            names = os.listdir(fd)
        except OSError:
            os.close(fd)
            raise
        return _Frame(path, st.st_dev, st.st_ino, names, fd, name)
    except FileNotFoundError:
        return None
    except OSError as exc:
        walk.keep(path, exc.strerror or str(exc))
        return None


def remove_tree(
    path: str | os.PathLike,
    proof: str | tuple[str, ...] = MARKER,
    aside: str | None = None,
) -> list[str]:
    """Remove the folder `path` and everything in it that is GRPO Lab's; returns what was kept and why (empty when
    all of it is gone; a missing `path` is nothing to do).

    Refused, and kept whole: `path` a link, not a folder, a mount point, or holding neither MARKER nor any of the
    names in `proof` (a record GRPO Lab writes there) while not empty. Inside it: links are removed, never
    followed; a mount point (another file system, or a bind mount of the same one) is never crossed and stays with
    its folders above. `aside`: a prefix; the folder is first renamed to `<aside><its name>` beside it, so a reader
    never sees half of it under its name."""
    path = Path(path)
    shown = str(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return []
    except OSError as exc:
        return [f"{shown} ({exc.strerror or exc})"]
    points = mount_points()
    if stat.S_ISLNK(st.st_mode):
        return [f"{shown} (a symbolic link: never followed; its target stays)"]
    if not stat.S_ISDIR(st.st_mode):
        return [f"{shown} (not a folder)"]
    if is_mount_point(path, points):
        return [f"{shown} (a mount point: never crossed)"]
    proofs = (proof,) if isinstance(proof, str) else tuple(proof)
    try:
        fd = _open_dir(str(path), None)
    except OSError as exc:
        return [f"{shown} ({exc.strerror or exc})"]
    try:
        seen = os.fstat(fd)
        if (seen.st_dev, seen.st_ino) != (st.st_dev, st.st_ino):
            return [f"{shown} (changed while it was being removed)"]
        if mount_id(fd) != _parent_mount(path):
            return [f"{shown} (a mount point: never crossed)"]
        names = os.listdir(fd)
        if names and not any(_holds(fd, name) for name in (MARKER, *proofs)):
            return [f"{shown} (not made by GRPO Lab: it holds no {' or '.join(dict.fromkeys((MARKER, *proofs)))})"]
        if aside:  # a name of its own beside it (another of that name left by a removal that died: kept)
            for moved in (path.with_name(f"{aside}{path.name}"), path.with_name(f"{aside}{path.name}.{os.getpid()}")):
                with contextlib.suppress(FileExistsError):
                    _rename_noreplace(path, moved)
                    path = moved
                    break
            else:
                return [f"{shown} (no free name beside it to move it out of its name)"]
        walk = _Walk(st.st_dev, mount_points(), mount_id(fd))  # read again: `aside` moved the folder
        real = os.path.realpath(path)
        # the marker goes last, once nothing else is left: a folder that kept something is still known as ours
        top = _Frame(real, st.st_dev, st.st_ino, [n for n in names if n != MARKER], os.dup(fd))
        try:
            _remove_entries(walk, top)
        except Refused as exc:
            walk.kept.append(exc.strerror or str(exc))
        if not walk.kept:
            try:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(MARKER, dir_fd=fd)
                os.rmdir(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                walk.keep(str(path), exc.strerror or str(exc))
        return [k.replace(real, str(path), 1) if k.startswith(real) else k for k in walk.kept]
    except OSError as exc:
        return [f"{shown} ({exc.strerror or exc})"]
    finally:
        if fd >= 0:
            os.close(fd)


def _parent_mount(path: Path) -> int | None:
    try:
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        return mount_id(fd)
    finally:
        os.close(fd)


def _holds(fd: int, name: str) -> bool:
    """True when the folder open at `fd` holds `name` as a file or folder of its own (not a link)."""
    try:
        return not stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


# ------------------------------------------------------------------------------------------------ files


def fresh_file(path: str | os.PathLike) -> Path:
    """A new, empty file of GRPO Lab's at `path` (the temporary name a file is written under before `replace_file`
    puts it in place): what was at that name (a link, a file a writer that died left) is removed first, itself and
    never what a link points at, and the file is created exclusively, never through a link."""
    path = Path(path)
    remove_file(path)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666))
    return path


def remove_file(path: str | os.PathLike, missing_ok: bool = True) -> bool:
    """Remove the file (or link: never its target) at `path`, one GRPO Lab names as its own; True when one was
    there. Refused for a folder or a mount point (a file mounted over the name)."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if missing_ok:
            return False
        raise
    if stat.S_ISDIR(st.st_mode):
        raise Refused(errno.EISDIR, f"{path} is a folder, not a file of GRPO Lab's: not removed")
    if not stat.S_ISLNK(st.st_mode) and is_mount_point(path):
        raise Refused(errno.EBUSY, f"{path} is a mount point: not removed")
    try:
        os.unlink(path)
    except FileNotFoundError:
        if missing_ok:
            return False
        raise
    return True


def replace_file(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Put the file `source` (one GRPO Lab just wrote beside `target`) over `target` in one step: a reader sees the
    old or the new file, never half. A link at `target` is replaced itself, never the file it points at. Refused
    over a folder or a mount point."""
    source, target = Path(source), Path(target)
    if stat.S_ISLNK(os.lstat(source).st_mode) or not source.is_file():
        raise Refused(errno.EINVAL, f"{source} is not a regular file GRPO Lab wrote: not moved over {target}")
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise Refused(errno.EISDIR, f"{target} is a folder: no file is put over it")
    if st is not None and not stat.S_ISLNK(st.st_mode) and is_mount_point(target):
        raise Refused(errno.EBUSY, f"{target} is a mount point: no file is put over it")
    os.replace(source, target)


_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def _rename_noreplace(source: Path, target: Path) -> None:
    """rename(2) that fails with FileExistsError rather than replace what is at `target` (renameat2's
    RENAME_NOREPLACE; where the C library or the file system lacks it: checked first, then renamed, and a folder's
    rename never replaces a non-empty folder anyway)."""
    renameat2 = getattr(_libc(), "renameat2", None)
    if renameat2 is not None:
        result = renameat2(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target), _RENAME_NOREPLACE)
        if result == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), str(source), None, str(target))
    if os.path.lexists(target) and not (source.is_dir() and target.is_dir() and not target.is_symlink()):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(target))
    os.rename(source, target)


_LIBC: list = []


def _libc():
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(None, use_errno=True))
        except OSError:  # pragma: no cover - a platform without a C library to load
            _LIBC.append(None)
    return _LIBC[0]


def move(source: str | os.PathLike, target: str | os.PathLike) -> None:
    """Move `source` (a file or folder GRPO Lab made) to the new name `target` on the same file system; never
    replaces anything at `target` (FileExistsError), except an empty folder when `source` is a folder. Refused
    for a mount point."""
    source, target = Path(source), Path(target)
    if is_mount_point(source):
        raise Refused(errno.EBUSY, f"{source} is a mount point: not moved")
    if target.is_dir() and not target.is_symlink() and source.is_dir() and not source.is_symlink():
        if is_mount_point(target):
            raise Refused(errno.EBUSY, f"{target} is a mount point: nothing is moved over it")
        if any(os.scandir(target)):
            raise FileExistsError(errno.ENOTEMPTY, f"{target} is not empty: nothing moved over it", str(target))
        try:
            os.rename(source, target)  # an empty folder only: the kernel refuses a non-empty one
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise FileExistsError(exc.errno, f"{target} is not empty: nothing moved over it", str(target)) from None
            raise
        return
    _rename_noreplace(source, target)
