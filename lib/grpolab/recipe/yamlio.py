"""The one YAML reader: every YAML file GRPO Lab reads (recipes, cards, params tables, thresholds, run records) goes
through it, so every one is bounded and strict the same way.

A regular file of at most 4 MB (FIFOs, devices and directories are refused before anything is opened), UTF-8
text, no binary; PyYAML's safe loader with the C parser, a key given twice in one mapping refused, YAML 1.2 floats
(`1e-6`) read as floats, and aliases bounded (a "billion laughs" file stops at 1,000,000 values in well under 1 s).
Errors are InputError (exit 2) naming file:line:column.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from grpolab.paths import params_dir
from grpolab.problems import InputError
from grpolab.recipe.files import FileTooBig, NotARegularFile, read_bytes


def rel_path(path: Path) -> str:
    """A path as users know it: relative to the project (params/...) when it is inside."""
    try:
        return str(path.resolve().relative_to(params_dir().resolve().parent))
    except (ValueError, OSError):
        return str(path)


MAX_BYTES = 4 << 20  # a recipe is a few KB; 4 MB leaves room for generated ones and stops a runaway file
MAX_NODES = 1_000_000  # values after expanding YAML aliases: a "billion laughs" file stops here, in well under 1 s


# the C parser (libyaml) is ten times faster: a 1 MB recipe checks in well under 2 s
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeLoader):
    """PyYAML's safe loader, except that a key given twice in one mapping is an error naming both lines (PyYAML
    keeps the last one silently: a second `trainer:` section would drop the first), and YAML 1.2 floats without a
    dot (`1e-6`) are floats (PyYAML reads those as strings)."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = (
                    self.construct_scalar(key_node)
                    if key_node.tag == "tag:yaml.org,2002:str"
                    else self.construct_object(key_node)
                )
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r}: set at line {seen[key]} and again at line {line}; "
                        "YAML would keep only the last one: merge them into one",
                        key_node.start_mark,
                    )
                seen[key] = line
        return super().construct_mapping(node, deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
)


def _expanded_size(data: Any) -> int | None:
    """How many values data holds once YAML aliases are written out (None: an alias refers to itself).

    Aliases share one Python object, so the size of each container is computed once (memoised by identity):
    linear in the file, however deep the aliases nest."""
    sizes: dict[int, int] = {}
    visiting: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        node, done = stack.pop()
        children = (
            [c for c in (node.values() if isinstance(node, dict) else node) if isinstance(c, (dict, list))]
            if isinstance(node, (dict, list))
            else []
        )
        if done:
            n = len(node) - len(children)
            sizes[id(node)] = 1 + n + sum(sizes[id(c)] for c in children)
            visiting.discard(id(node))
            continue
        if not isinstance(node, (dict, list)) or id(node) in sizes:
            continue
        if id(node) in visiting:
            return None
        visiting.add(id(node))
        stack.append((node, True))
        for c in children:
            if id(c) in visiting:
                return None
            stack.append((c, False))
    return sizes.get(id(data), 1)


def parse_yaml(text: str, where: str = "<text>") -> Any:
    """YAML text -> Python data with the loader's rules (duplicate keys refused, aliases bounded: data that expands
    to more than MAX_NODES values is refused before anything walks it)."""
    data = yaml.load(text, Loader=_Loader)
    size = _expanded_size(data)
    if size is None:
        raise InputError(f"{where}: a YAML alias refers to the mapping or list that contains it; write the values out")
    if size > MAX_NODES:
        raise InputError(
            f"{where}: the YAML expands to more than {MAX_NODES:,} values (aliases `*name` "
            "repeated inside each other?); a recipe needs no such size: write the values out"
        )
    return data


def read_text(path: Path, what: str = "recipe") -> str:
    """A YAML file's text: InputError (exit 2) for a missing, unreadable, special (FIFO, device, directory), huge,
    binary or non-UTF-8 file. Nothing is read before it is known to be a regular file, and never more than
    MAX_BYTES + 1 bytes (grpolab.recipe.files)."""
    path = Path(path)
    try:
        raw = read_bytes(path, MAX_BYTES)  # grpolab.recipe.files: checked on the open descriptor, read bounded
    except NotARegularFile as exc:
        raise InputError(f"{rel_path(path)}: {exc.strerror}; give a YAML file") from None
    except FileTooBig:
        raise InputError(
            f"{rel_path(path)}: more than {MAX_BYTES:,} bytes is too big for a {what}; is it the right file?"
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    if b"\x00" in raw[:8192]:
        raise InputError(f"{rel_path(path)}: a binary file, not a YAML {what}; pass a .yaml text file")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{rel_path(path)}:{line}: not UTF-8 text (byte {raw[exc.start]:#04x}); save the {what} as UTF-8"
        ) from None


def load_yaml(path: Path, what: str = "YAML file") -> Any:
    """Any YAML data from a file, read by the one hardened reader (size cap, special files refused, duplicate keys
    and alias bombs refused); syntax errors name file:line:column (InputError, exit 2)."""
    text = read_text(path, what)
    try:
        return parse_yaml(text, rel_path(path))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{rel_path(path)}:{mark.line + 1}:{mark.column + 1}" if mark else rel_path(path)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        if isinstance(exc, yaml.constructor.ConstructorError):
            raise InputError(f"{where}: YAML error: {problem}; fix the file at that line") from None
        raise InputError(
            f"{where}: YAML syntax error, not valid YAML{at}: {problem}; fix the file at that line"
        ) from None
    except RecursionError:
        raise InputError(f"{rel_path(path)}: the YAML nests too deep (or an alias refers to itself)") from None


def read_yaml(path: Path, what: str = "recipe") -> dict:
    """A YAML mapping of named sections from a file (a recipe, a card, a params table); InputError otherwise."""
    data = load_yaml(path, what)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(f"{rel_path(path)}: a {what} must be a YAML mapping of sections, not {type(data).__name__}")
    bad = [k for k in data if not isinstance(k, str)]
    if bad:
        raise InputError(f"{rel_path(path)}: section names must be words, not {bad[0]!r}")
    return data
