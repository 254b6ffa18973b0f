"""Dotted keys (`rollout.engine_kwargs.vllm.x`) over nested mappings: the one get, set, flatten and walk.

Every module that reads or writes a dotted key (the loader's `--set`, the importer, the renderer, verl's config
read as data, the rules over `verl_overrides`, the CPU trainer's mapping) uses these, so that a key means the
same thing everywhere. `get_dotted` also walks attributes, so a validated Recipe reads like its plain dict.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

MISSING: Any = object()  # `get_dotted(data, key, MISSING) is MISSING`: the key is absent (None may be a value)


def get_dotted(node: Any, dotted: str, default: Any = None) -> Any:
    """The value at a dotted key of nested mappings (or objects with those attributes), else `default`."""
    for part in dotted.split("."):
        if isinstance(node, Mapping):
            if part not in node:
                return default
            node = node[part]
        elif node is not None and not isinstance(node, (str, bytes, int, float, list, tuple)):
            node = getattr(node, part, MISSING)
            if node is MISSING:
                return default
        else:
            return default
    return node


def has_dotted(node: Any, dotted: str) -> bool:
    return get_dotted(node, dotted, MISSING) is not MISSING


def set_dotted(data: dict, dotted: str, value: Any) -> None:
    """Set a dotted key, creating (or replacing with) sections on the way."""
    parts = dotted.split(".")
    for part in parts[:-1]:
        if not isinstance(data.get(part), dict):
            data[part] = {}
        data = data[part]
    data[parts[-1]] = value


def flatten(data: Mapping, prefix: str = "") -> dict[str, Any]:
    """{dotted key: leaf value}; an empty mapping is a leaf (it is a value someone set)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, dotted))
        else:
            out[dotted] = value
    return out


def dotted_keys(data: Mapping, prefix: str = "") -> Iterator[str]:
    """Every dotted key inside data, sections included (linear in its size)."""
    for key, value in data.items():
        dotted = f"{prefix}.{key}" if prefix else str(key)
        yield dotted
        if isinstance(value, Mapping):
            yield from dotted_keys(value, dotted)
