"""One row of a node's report: a plain dict {check, status, detail, fix} (the driver adds the node name), with
the statuses of grpolab.preflight.report; and the secrets no row may show."""

from __future__ import annotations

from grpolab.preflight.report import FAIL, OK, SKIP, WARN
from grpolab.recipe.secrets import REDACTED, is_secret, redact_text, secret_values

__all__ = ["FAIL", "OK", "SKIP", "WARN", "row", "shown", "redact_rows"]


def row(check: str, status: str, detail: str, fix: str = "") -> dict[str, str]:
    return {"check": check, "status": status, "detail": detail, "fix": fix}


def shown(name: str, value: str, marked=()) -> str:
    """`NAME='value'` as a row may print it: a secret's value (its name looks secret, or the recipe lists it
    under `secrets:`) is never printed."""
    return f"{name}={REDACTED}" if is_secret(name, marked) else f"{name}={value!r}"


NODE_SECRET_MIN = 8  # a node's own secret-looking values shorter than this (XDG_SESSION_CLASS=user) stay


def redact_rows(rows: list[dict], recipe_env: dict[str, str], node_env: dict[str, str], marked=()) -> list[dict]:
    """Every row with secret values replaced wherever they appear (a message that echoed one, a path): the
    recipe's secrets, and the node's own secret-looking values (names such as *_TOKEN; short ones excepted, so
    that a node's `XDG_SESSION_CLASS=user` does not blank the word "user" out of every row)."""
    values = secret_values(recipe_env, marked) + [
        v for v in secret_values(node_env, marked) if len(v) >= NODE_SECRET_MIN
    ]
    if not values:
        return rows
    return [{k: redact_text(v, values) if isinstance(v, str) else v for k, v in r.items()} for r in rows]
