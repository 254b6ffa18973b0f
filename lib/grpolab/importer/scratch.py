"""The import's scratch folder: what the recorder leaves there read back safely, and the folder removed afterwards.

The script runs with the scratch folder shared and writable (grpolab.importer.record), so anything can be there when
it stops: a FIFO named like a record, a file of gigabytes, a link out, 1,500 nested folders. Reading takes regular
files only, opened without following links and without blocking, up to a size; removal walks the tree without
recursion and never follows a link out of it (grpolab.owned.remove_tree, by grpolab.importer.record).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

RECORD_MAX = 16 << 20  # a call's record (argv, env, a --runtime-env file of up to 1 MiB) is far smaller
NAMES_MAX = 64 << 20  # the variable names dumped at launch: at most the names the script's text holds


def read_text(path: Path, limit: int = RECORD_MAX) -> str | None:
    """A regular file's text (up to `limit` bytes), or None: not there, not a regular file, a link, unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # a FIFO, a socket or a device left by the script: never waited on
        chunks, size = [], 0
        while size < limit:
            chunk = os.read(fd, min(1 << 20, limit - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks).decode("utf-8", errors="replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def entries(folder: Path, prefix: str = "", suffix: str = "") -> list[Path]:
    """The names in `folder` that start with `prefix` and end with `suffix`, sorted; [] when it is gone."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return [folder / n for n in sorted(names) if n.startswith(prefix) and n.endswith(suffix)]


SENTINEL = ".grpolab-scratch"  # in each of the scratch's folders: its absence says the script removed the folder


def call_record(path: Path) -> dict | None:
    """One call the recorder wrote (a regular file of JSON with its fields), None for anything else the script left
    in the folder (a FIFO, a link, a file of another shape)."""
    text = read_text(path)
    try:
        rec = json.loads(text) if text else None
    except ValueError:
        return None
    ok = (
        isinstance(rec, dict)
        and isinstance(rec.get("tool"), str)
        and isinstance(rec.get("argv"), list)
        and all(isinstance(a, str) for a in rec["argv"])
        and isinstance(rec.get("env"), dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in rec["env"].items())
        and isinstance(rec.get("files", {}), dict)
        and isinstance(rec.get("t", 0), int)
    )
    return rec if ok else None


def removals(calls: Path, root: Path, cwd: str, caller: dict[str, str], script: Path) -> list[str]:
    """What the script removed of its own folders, as notes: each `rm` that reached the import's scratch folder (or
    a folder above it), the folder it was started in or was running in, its own folder or home, and a scratch folder
    found gone afterwards. Inside the isolation nothing outside the scratch folder really changes; a removal there
    only explains what followed."""
    home = caller.get("HOME") or os.path.expanduser("~")
    mine = {
        str(root): "the import's scratch folder",
        cwd: "the folder it was started in",
        str(script.resolve().parent): "its own folder",
        home: "its home folder",
    }
    seen: list[str] = []
    fields = (read_text(calls / "rm.log") or "").split("\0")
    i = 0
    while i + 1 < len(fields):
        where, count = fields[i], fields[i + 1]
        if not count.isdigit():
            break
        args = fields[i + 2 : i + 2 + int(count)]
        i += 2 + int(count)
        for target in (a for a in args if not a.startswith("-")):
            full = os.path.normpath(os.path.join(where, target))
            hit = next(
                (
                    what
                    for folder, what in {**mine, where: "the folder it was running in"}.items()
                    if full == folder or folder.startswith(full.rstrip("/") + "/")
                ),
                None,
            )
            if hit:
                shown = " ".join(["rm", *args]).replace(str(root), "<import scratch>")
                seen.append(f"`{shown}` (run in {where.replace(str(root), '<import scratch>')}) removed {hit}")
                break
    gone = [f.name for f in (calls, root / "home", root / "work") if not (f / SENTINEL).exists()]
    if gone and not any("scratch" in s for s in seen):
        seen.append(f"something the script ran removed the import's scratch folders ({', '.join(gone)})")
    if not seen:
        return []
    return [
        "the script removed its own folders: "
        + "; ".join(dict.fromkeys(seen[:5]))
        + (" (and more)" if len(seen) > 5 else "")
        + ". Isolated, nothing outside the import's scratch folder changed; an `rm -rf ${A}/${B}` whose variables "
        "are unset resolves to a folder above the one meant: set them (or import with the values the script expects)"
    ]
