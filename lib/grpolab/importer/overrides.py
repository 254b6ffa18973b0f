"""A launch's arguments as Hydra and verl read them: a flag's value, the overrides parsed with Hydra's own parser,
and an empty value (`max_model_len=`, what `key=$UNSET` leaves) read as null. grpolab.importer.script's helpers."""

from __future__ import annotations

import typing
from typing import Any

from grpolab.importer.launch_line import ImportFailed
from grpolab.recipe.loader import field_type
from grpolab.verl import config as verl_schema
from grpolab.verl import fieldmap


def flag(argv: list[str], name: str) -> str | None:
    """The value of `--name=V` or `--name V` in a launch's arguments."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def parsed(overrides: list[str]) -> dict[str, Any]:
    """{bare key: value} of the launch's overrides; ImportFailed naming one Hydra cannot parse."""
    values = {}
    for text in overrides:
        try:
            values.update(verl_schema.parse_overrides([text]))
        except Exception as exc:  # Hydra's grammar errors: the script's own override is malformed
            message = str(exc).strip().splitlines()[0]
            raise ImportFailed(f"the launch's override {text!r} is not a Hydra override: {message}") from None
    return values


def empty_values(overrides: list[str]) -> tuple[list[str], list[str]]:
    """An empty value (`max_model_len=`, what `key=$UNSET` leaves) means null, unset: Hydra reads it as '', which
    verl's workers take as no value (`if config.max_model_len`), but a recipe field of a number, a flag or a list
    cannot hold ''. Such a field's override is composed as `key=null`, and said; a text field keeps its ''."""
    out, notes = [], []
    for text in overrides:
        key = text.split("=", 1)[0].lstrip("+")
        field = fieldmap.field_of(key) if text.endswith("=") and not text.startswith("-") else None
        if field is not None and not _holds_text(field_type(field)):
            out.append(text + "null")
            notes.append(
                f"{text}: an empty value (a variable the script left empty); Hydra reads it as '', which verl takes "
                f"as unset: the recipe holds it as null ({field})"
            )
        else:
            out.append(text)
    return out, notes


def _holds_text(annotation: Any) -> bool:
    """A text field (`str`, `str | None`): it can hold the '' Hydra reads, so the launch keeps exactly that."""
    return annotation is str or str in typing.get_args(annotation)
