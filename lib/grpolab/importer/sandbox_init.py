"""Runs as the first process of fresh namespaces (grpolab.importer.sandbox starts it with util-linux `unshare`): builds
a root where every file outside one scratch folder is copy-on-write, then runs the command in it.

Every mount of the machine is covered by an overlay whose upper layer is a tmpfs that vanishes with the namespace
(a mount an overlay cannot cover is bound read-only instead), so the command may write anywhere and nothing outside
the scratch folder changes. /dev is a tmpfs with null, zero, full, random, urandom and tty only; /proc is the new
pid namespace's, read-only; /sys is read-only. The old root is detached (pivot_root), every capability is dropped
(bounding set, effective, permitted, inheritable, ambient) and no_new_privs is set, so nothing run inside can undo
this. Pure standard library: it runs before anything else, with `python -I`.

Nothing of the machine is reachable but its files, read as they are: no capability is kept, not even the file ones
(CAP_DAC_READ_SEARCH is open_by_handle_at(2): a handle through the shared scratch mount opened the real root file
system, outside every overlay); every mount is nosuid and nodev (a device node elsewhere than /dev, a disk's, opens
nothing); and where a folder has a mount below it and is rebuilt entry by entry, only its regular files are bound
in: a socket (a listener outside: think /run/docker.sock), a FIFO or a device node is left out. (Through an overlay
a socket or FIFO is the overlay's own inode: nothing outside listens on it.)

The overlays' upper layers share one tmpfs capped at `cow_mb` MiB (a script that writes more gets "No space left on
device", and the caller says so), so an import never takes more of the machine's memory than that. Optional:
`keep` (a folder of the machine shown, as it is, at /.grpolab-keep: the interpreter the recorder runs on), `hide`
([source, target] pairs: each target file is covered by the source, read-only: the recorder over every
interpreter, however the command reaches it), and `read_only` (folders of the scratch folder the command may read
but not change: the recorder itself).

argv: CONFIG.json with `scratch` (the folder that stays shared and writable), `argv`, `env`, `cwd` (and the optional
keys above). Exit 125 with a message on stderr when the root cannot be built.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import sys
from contextlib import suppress

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2
PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41, "loongarch64": 41, "ppc64le": 203, "s390x": 217}
KEEP_CAPS: set[int] = set()  # none: a file capability reaches the host too (dac_read_search: open_by_handle_at)
SAFE = MS_NOSUID | MS_NODEV  # on every mount of the new root but /dev's own
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")
SPECIAL = ("/proc", "/sys", "/dev")  # rebuilt, never covered
KEEP = "/.grpolab-keep"
COW_MB = 256  # default cap of everything the command writes outside the scratch folder

libc = ctypes.CDLL(None, use_errno=True)


def _call(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = [None if x is None else x.encode() for x in (source, target, fstype, data)]
    _call(libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]), f"mount {target}")


def _unescape(text: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), text)


def mount_points(scratch: str) -> list[str]:
    """Every mount point to cover (not /proc, /sys, /dev, which are rebuilt, nor the scratch folder's own)."""
    seen: dict[str, None] = {}
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            point = _unescape(line.split()[4])
            if not any(point == p or point.startswith(p.rstrip("/") + "/") for p in (*SPECIAL, scratch)):
                seen[point] = None
    return list(seen)


def _locked_flags(path: str) -> int:
    """nosuid/nodev/noexec of a mount: a read-only remount inside a user namespace must keep them."""
    st = os.statvfs(path)
    return (
        (st.f_flag & os.ST_NOSUID and MS_NOSUID)
        | (st.f_flag & os.ST_NODEV and MS_NODEV)
        | (st.f_flag & os.ST_NOEXEC and MS_NOEXEC)
    )


def bind_read_only(source: str, target: str) -> None:
    mount(source, target, None, MS_BIND)
    mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | SAFE | _locked_flags(source))


def _escape(path: str) -> str:
    return path.replace("\\", "\\\\").replace(",", "\\,").replace(":", "\\:")


class Root:
    """The new root: a tmpfs on which each directory of the machine is an overlay (writes land in `cow`)."""

    def __init__(self, root: str, cow: str, points: list[str]) -> None:
        self.root, self.cow, self.points, self.count = root, cow, points, 0

    def _below(self, path: str) -> bool:
        prefix = path.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in self.points)

    def overlay(self, source: str, target: str) -> None:
        """Copy-on-write over one directory with no mount below it (an overlay may not hide mounts)."""
        self.count += 1
        upper, work = f"{self.cow}/u{self.count}", f"{self.cow}/w{self.count}"
        os.mkdir(upper)
        os.mkdir(work)
        options = f"lowerdir={_escape(source)},upperdir={upper},workdir={work}"
        for extra in ("", ",userxattr"):  # inside a user namespace overlay keeps its marks in user.* xattrs
            try:
                mount("overlay", target, "overlay", SAFE, options + extra)
                return
            except OSError:
                continue
        bind_read_only(source, target)  # a file system overlay cannot cover: read-only, still untouched

    def cover(self, source: str, target: str) -> None:
        """Make `target` show `source`, every change to it landing in the cow tmpfs."""
        if not self._below(source):
            self.overlay(source, target)
            return
        for name in sorted(os.listdir(source)):  # mounts below: rebuild this level on the tmpfs, cover each entry
            src, dst = os.path.join(source, name), os.path.join(target, name)
            if src in SPECIAL:
                os.mkdir(dst)
            elif os.path.islink(src):
                os.symlink(os.readlink(src), dst)
            elif os.path.isdir(src):
                os.mkdir(dst)
                os.chmod(dst, os.stat(src).st_mode & 0o7777)
                self.cover(src, dst)
            elif os.path.isfile(src):  # a regular file only: a socket, a FIFO or a device node is left out
                open(dst, "w").close()
                with suppress(OSError):  # a file we may not bind: an empty one in its place
                    bind_read_only(src, dst)
        os.chmod(target, os.stat(source).st_mode & 0o7777)


def build_dev(root: str) -> None:
    dev = f"{root}/dev"
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755")
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            open(f"{dev}/{name}", "w").close()
            mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for name, to in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1")):
        os.symlink(to, f"{dev}/{name}")
    os.symlink("/proc/self/fd/2", f"{dev}/stderr")
    os.mkdir(f"{dev}/shm")
    mount("tmpfs", f"{dev}/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=64m")
    os.mkdir(f"{dev}/pts")


def drop_privileges() -> None:
    """No capability stays (none comes back on exec, root's included: the bounding set is empty); no new privileges
    ever. OSError (the sandbox refuses to run the command) when one cannot be dropped."""
    for cap in range(64):
        if cap not in KEEP_CAPS:
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP; EINVAL past the last cap is fine
    left = [cap for cap in range(64) if cap not in KEEP_CAPS and libc.prctl(23, cap, 0, 0, 0) == 1]  # _READ
    if left:
        raise OSError(f"capabilities {left} stay in the bounding set")

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _call(libc.capget(ctypes.byref(header), data), "capget")
    keep = sum(1 << c for c in KEEP_CAPS)  # all below 32: the first word
    for word in range(2):
        data[word].effective &= keep if word == 0 else 0
        data[word].permitted &= keep if word == 0 else 0
        data[word].inheritable = 0
    _call(libc.capset(ctypes.byref(header), data), "capset")
    libc.prctl(47, 4, 0, 0, 0)  # PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL
    _call(libc.prctl(38, 1, 0, 0, 0), "no_new_privs")  # PR_SET_NO_NEW_PRIVS


FULL = "grpolab sandbox: the scratch layer is full"  # said on stderr when the command filled the cap


def build(config: dict) -> list[int]:
    scratch = config["scratch"]
    root, cow = f"{scratch}/.root", f"{scratch}/.cow"
    points = mount_points(scratch)
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing done here propagates back to the machine
    for folder, size in ((root, 64), (cow, int(config.get("cow_mb") or COW_MB))):
        os.makedirs(folder, exist_ok=True)
        mount("tmpfs", folder, "tmpfs", 0, f"mode=0755,size={size}m")  # the new root and the overlays' upper layers
    layers = [os.open(folder, os.O_RDONLY) for folder in (root, cow)]  # kept past pivot_root: how full they got
    Root(root, cow, points).cover("/", root)
    with suppress(OSError):  # a container that masks parts of /proc: left empty
        mount("proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY)
    build_dev(root)
    with suppress(OSError):  # left empty: nothing a launch script needs
        bind_read_only("/sys", f"{root}/sys")
    os.makedirs(root + scratch, exist_ok=True)
    mount(scratch, root + scratch, None, MS_BIND)  # the shared scratch folder stays the real, writable one
    mount(None, root + scratch, None, MS_BIND | MS_REMOUNT | SAFE | _locked_flags(scratch))
    for folder in config.get("read_only") or []:
        bind_read_only(folder, root + folder)
    if config.get("keep"):  # before the covers below: this view of it keeps the real files
        os.mkdir(root + KEEP)
        mount(root + config["keep"], root + KEEP, None, MS_BIND | MS_REC)
    for source, target in config.get("hide") or []:
        if os.path.isfile(root + target) and not os.path.islink(root + target):
            # left uncovered rather than no import at all (a file the namespace may not mount over)
            with suppress(OSError):
                bind_read_only(source, root + target)
    old = f"{root}/.grpolab-old-root"
    os.mkdir(old)
    number = PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(f"pivot_root: unknown machine {platform.machine()}")
    _call(libc.syscall(number, root.encode(), old.encode()), "pivot_root")
    os.chdir("/")
    _call(libc.umount2(b"/.grpolab-old-root", MNT_DETACH), "detach the old root")
    os.rmdir("/.grpolab-old-root")
    drop_privileges()
    return layers


def main() -> None:
    with open(sys.argv[1]) as fh:
        config = json.load(fh)
    try:
        layers = build(config)
    except OSError as exc:
        print(f"grpolab sandbox: cannot isolate: {exc}", file=sys.stderr)
        sys.exit(125)
    child = os.fork()
    if child == 0:
        try:
            os.chdir(config["cwd"])
        except OSError:
            os.chdir("/")
        os.execve(config["argv"][0], config["argv"], config["env"])
    # this process is the namespace's first: once the command ends, everything it left running ends with it
    _, status = os.waitpid(child, 0)
    for fd in layers:
        st = os.fstatvfs(fd)
        if st.f_blocks and st.f_bavail * 20 < st.f_blocks:  # less than 5 % left: the cap was reached
            print(f"{FULL} (No space left on device)", file=sys.stderr)
            break
    sys.exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main()
