"""Secrets: which env values are secret, and the one place that redacts them from records, logs and notebooks.

A value is secret when its env NAME looks like one (a name part such as KEY, TOKEN, PASS, PW, SECRET, AUTH,
ACCESS, ...: `HF_TOKEN`, `MY_PW`, `DBPASS`, `HF_HUB_ACCESS`) or when the recipe lists the name under
`secrets:`. Redaction works by name (the env shown or recorded keeps the name, the value becomes REDACTED) and
by value (`redact_text` replaces every secret value wherever it appears in free text: a log line, a command,
an override echoed back).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

REDACTED = "***redacted***"
# Words that make a name secret, matched as whole name parts (split at _ - . and case changes) or, for the
# longer words, anywhere in the name (DBPASS, APIKEY). Short words (PW, PAT, DSN) only as whole parts, so that
# e.g. `PATH` or `NPW_LAYERS` stay plain. Erring on the side of secret is fine: a redacted plain value costs little.
_WORDS = (
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "PASS",
    "SECRET",
    "TOKEN",
    "CREDENTIAL",
    "CREDENTIALS",
    "AUTH",
    "ACCESS",
    "PRIVATE",
    "COOKIE",
    "SESSION",
    "APIKEY",
    "KEY",
    "CERT",
    "SIGNATURE",
    "SALT",
)
_PARTS = ("PW", "PWD", "PAT", "DSN", "JWT")
SECRET = re.compile("|".join(_WORDS), re.IGNORECASE)  # kept for callers of grpolab.jobs.launch.SECRET
_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])")
# names that contain a word above but are known not to hold secrets (a path, a mode, a switch)
_PLAIN = {
    "WANDB_MODE",
    "WANDB_BASE_URL",
    "WANDB_ENTITY",
    "WANDB_DIR",
    "WANDB_PROJECT",
    "PASSTHROUGH",
    "KEYBOARD",
    "MONKEY",
    "TURKEY",
}
MIN_VALUE_LEN = 4  # shorter values are not replaced in free text: "1" or "on" would blank out half a log


def is_secret(name: str, marked: Iterable[str] = ()) -> bool:
    """True when the env name looks like it holds a secret, or the recipe marks it under `secrets:`."""
    if name in set(marked):
        return True
    upper = name.upper()
    if upper in _PLAIN:
        return False
    parts = [p.upper() for p in _SPLIT.split(name) if p]
    if any(p in _PARTS for p in parts):
        return True
    return bool(SECRET.search(upper))


def secret_names(env: Mapping[str, str], marked: Iterable[str] = ()) -> list[str]:
    marked = list(marked)
    return [k for k in env if is_secret(k, marked)]


def secret_values(env: Mapping[str, str], marked: Iterable[str] = ()) -> list[str]:
    """The values of the secret entries of env (the ones long enough to be found in free text)."""
    return [str(env[k]) for k in secret_names(env, marked) if len(str(env[k])) >= MIN_VALUE_LEN]


def redact_env(env: Mapping[str, str], marked: Iterable[str] = ()) -> dict[str, str]:
    """The env with every secret value replaced by REDACTED (names kept, so a reader sees it was set)."""
    marked = list(marked)
    return {k: (REDACTED if is_secret(k, marked) else v) for k, v in env.items()}


def redact_text(text: str, values: Iterable[str]) -> str:
    """text with every occurrence of a secret value replaced by REDACTED (longest first)."""
    for value in sorted({v for v in values if v and len(v) >= MIN_VALUE_LEN}, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


def recipe_secrets(recipe) -> tuple[list[str], list[str]]:
    """(marked names, secret values) of a recipe: what every writer of records, logs and notebooks redacts."""
    marked = list(getattr(recipe, "secrets", None) or [])
    return marked, secret_values(recipe.env, marked)


def redact_override(text: str, marked: Iterable[str] = ()) -> str:
    """`env.NAME=value` with the value redacted when NAME is secret; anything else unchanged."""
    key, sep, _ = text.partition("=")
    if sep and key.strip().startswith("env.") and is_secret(key.strip()[4:], marked):
        return f"{key}={REDACTED}"
    return text


def is_secret_override(text: str, marked: Iterable[str] = ()) -> bool:
    key, sep, _ = str(text).partition("=")
    key = key.strip()
    return bool(sep) and key.startswith("env.") and is_secret(key[4:], marked)
