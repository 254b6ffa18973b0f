"""Reading a file someone named, bounded: regular files only, and never more than a stated number of bytes;
a record's JSON object (`json_object`); and writing a file atomically (`atomic_write`).

A FIFO named as a file blocks the reader forever at open; /dev/zero never ends; a socket or a directory is
not data. `open_regular` opens without blocking (O_NONBLOCK: a FIFO with no writer opens at once) and refuses
anything but a regular file before a byte is read; `read_bytes` / `read_text` also refuse a file larger than
`limit`. Both raise OSError subclasses whose `strerror` says what was wrong and whose `filename` is the path,
so callers that already report an unreadable file (`except OSError`) report these the same way.

It sits in the recipe layer, under the one YAML reader (grpolab.recipe.yamlio reads through it), so that every
layer reads a path the same way: the monitor's metrics and logs, preflight's files on every node.
Standard library only: preflight's per-node task imports it on every node.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import BinaryIO

from grpolab import owned

_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


class NotARegularFile(OSError):
    """The path is a FIFO, a device, a socket or a directory: nothing is read from it."""


class FileTooBig(OSError):
    """The file is larger than the reader's limit: nothing is read from it."""


def kind(mode: int) -> str:
    """What a file of this st_mode is, in words ("a FIFO (named pipe)", "a regular file", ...)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def size_text(nbytes: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes / size:.3g} {unit}"
    return f"{nbytes} bytes"


def open_regular(path: str | os.PathLike) -> BinaryIO:
    """The file opened for reading in binary; NotARegularFile for a FIFO, device, socket or directory (checked
    on the open descriptor, so a file swapped after a check cannot slip through), other OSErrors as open raises
    them (FileNotFoundError, PermissionError)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotARegularFile(errno.EINVAL, f"{kind(mode)}, not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: str | os.PathLike, limit: int) -> bytes:
    """A regular file's bytes; FileTooBig when it holds more than `limit` bytes (read at most limit + 1)."""
    with open_regular(path) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise FileTooBig(errno.EFBIG, f"larger than {size_text(limit)}, the most read from such a file", str(path))
    return data


def read_text(path: str | os.PathLike, limit: int, errors: str = "strict") -> str:
    """A regular file's text (UTF-8), at most `limit` bytes (see read_bytes)."""
    return read_bytes(path, limit).decode("utf-8", errors)


def json_object(path: str | os.PathLike, limit: int = 16 << 20) -> dict:
    """The JSON object a record file holds, read bounded (see read_bytes); {} when the file is missing,
    unreadable, not JSON or not an object: for records a reader may find absent, torn or foreign."""
    try:
        data = json.loads(read_bytes(path, limit))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def atomic_write(path: Path, text: str) -> None:
    """Write a temp file beside path, then rename it over path: a reader sees the old or the new text, never a
    torn file. When the disk is full or read-only, the temp file is removed and the OSError goes on (path keeps
    its old content)."""
    tmp = owned.fresh_file(path.with_name(f".{path.name}.{os.getpid()}.tmp"))
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        owned.replace_file(tmp, path)
    except BaseException:
        owned.remove_file(tmp)
        raise


def is_regular(path: str | os.PathLike) -> bool:
    """True for an existing regular file (following links); never opens it."""
    try:
        return stat.S_ISREG(Path(path).stat().st_mode)
    except (OSError, ValueError):
        return False
