"""The imported recipe as YAML: `recipe_yaml(imported, script)` writes each value with a comment naming the script's
setting behind it, and opens with what the import did with the reward's older keys (grpolab.importer.legacy).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from grpolab.importer import legacy
from grpolab.importer.launch_line import MAIN

_BARE = re.compile(r"[A-Za-z_][\w.\-]*")


def _flow(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, width=1 << 16).strip()
    return text[:-4].strip() if text.endswith("\n...") else text.removesuffix("...").strip()


def _comment(why: str) -> str:
    return "  # " + " ".join(why.split()) if why else ""


def recipe_yaml(imported: Any, script: str) -> str:
    """The recipe as YAML (`imported`: grpolab.importer.script.Imported), each value the script set with a comment
    saying which override set it."""
    module = imported.recorded.module if imported.recorded else MAIN
    lines = [
        f"# Imported from {' '.join(str(script).split())} by `grpolab import`; a comment names the script's setting "
        "behind a value.",
        *legacy.header([legacy.Legacy(**e) for e in imported.legacy], module),
        f"defaults: [{', '.join(imported.data['defaults'])}]",
        "",
    ]

    def emit(prefix: str, node: dict, indent: int) -> None:
        for key, value in node.items():
            dotted = f"{prefix}.{key}" if prefix else key
            pad = "  " * indent
            name = key if re.fullmatch(r"[A-Za-z_][\w\-]*", str(key)) else _flow(str(key))
            if dotted in ("env", "verl_overrides", "cluster.runtime_env"):
                lines.append(f"{pad}{name}:")
                for k, v in value.items():
                    label = k if _BARE.fullmatch(k) else _flow(str(k))
                    lines.append(f"{pad}  {label}: {_flow(v)}" + _comment(imported.sources.get(f"{dotted}.{k}", "")))
                continue
            if isinstance(value, dict) and value:
                lines.append(f"{pad}{name}:")
                emit(dotted, value, indent + 1)
                continue
            lines.append(f"{pad}{name}: {_flow(value)}" + _comment(imported.sources.get(dotted, "")))

    body = {k: v for k, v in imported.data.items() if k != "defaults"}
    for section, value in body.items():
        emit("", {section: value}, 0)
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
