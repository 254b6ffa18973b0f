"""Secrets: which env values are secret, and the one redaction every message, table, JSON document and written
file goes through.

A value is secret when its env NAME says it holds one (a name part such as KEY, TOKEN, PASS, PW, SECRET, AUTH,
ACCESS, ...: `HF_TOKEN`, `MY_PW`, `DBPASS`, `HF_HUB_ACCESS`; WORDS and PARTS below are the one list, each with why,
and PLAIN the names that contain such a word and hold none: PWD, JPY_SESSION_NAME) or when the recipe lists the name
under `secrets:`. `why_secret(NAME)` says why. However a secret arrived (a recipe file, `--set env.NAME=...` or `--set env={...}`, the node's
environment passed through to a job), it is hidden the same three ways:
- by name: an env mapping keeps the name and shows REDACTED as the value (`redact_env`);
- by override: a `--set` text that sets a secret shows `env.NAME=***redacted***` (`redact_override`; a whole
  `env=...` override is hidden whole, since its values cannot be told apart before it is parsed);
- by value: free text (a log line, a command, a message) has every secret value of 4 characters or more
  replaced (`redact_text`).
`Redaction` bundles the three for one recipe (or one env) and applies them to text, env mappings, problems,
JSON documents and a rendered launch; `redaction(recipe)` makes it.

The recipe layer holds it (the loader's own messages need it); the job's secret-file hand-off is in
grpolab.jobs.secrets.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any

from grpolab.problems import Problem

REDACTED = "***redacted***"
# The one list of what is secret, and why: words that make a name secret, matched as whole name parts (split at
# _ - . and case changes) or, for the longer words, anywhere in the name (DBPASS, APIKEY). Short words (PW, PWD,
# PAT, DSN, JWT) only as whole parts, so that e.g. `PATH` or `NPW_LAYERS` stay plain. A name is secret because of
# what its value is (a token, a key, a password), never because it merely contains a word: a session's *name* or
# the shell's working directory is not a secret. Erring on the side of secret is fine: a redacted plain value
# costs little.
WORDS = {
    "PASSWORD": "a password",
    "PASSWD": "a password",
    "PASSPHRASE": "a key's passphrase",
    "PASS": "a password (DBPASS, SMTP_PASS)",
    "SECRET": "a secret (AWS_SECRET_ACCESS_KEY, CLIENT_SECRET)",
    "TOKEN": "an access token (HF_TOKEN, GITHUB_TOKEN, AWS_SESSION_TOKEN)",
    "CREDENTIAL": "a credential",
    "CREDENTIALS": "a credential",
    "AUTH": "an authentication value (RAY_AUTH_TOKEN, BASIC_AUTH)",
    "ACCESS": "an access key (HF_HUB_ACCESS, AWS_ACCESS_KEY_ID)",
    "PRIVATE": "a private key",
    "COOKIE": "a session cookie's value",
    "APIKEY": "an API key",
    "KEY": "a key (WANDB_API_KEY, OPENAI_API_KEY)",
    "CERT": "a certificate or its key",
    "SIGNATURE": "a signing secret",
    "SALT": "a hashing salt",
}
PARTS = {
    "PW": "a password (MY_PW)",
    "PWD": "a password (DB_PWD, MYSQL_PWD); the shell's own PWD and OLDPWD are plain",
    "PAT": "a personal access token (GITLAB_PAT)",
    "DSN": "a connection string that holds a password (SENTRY_DSN, DATABASE_DSN)",
    "JWT": "a signed token",
}
SECRET = re.compile("|".join(WORDS), re.IGNORECASE)
_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])")
# names that contain a word above but are known not to hold secrets (a path, a mode, a switch, a name)
PLAIN = {
    "PWD": "the shell's working directory",
    "OLDPWD": "the shell's previous working directory",
    "WANDB_MODE": "a mode (online, offline)",
    "WANDB_BASE_URL": "a server address",
    "WANDB_ENTITY": "a team name",
    "WANDB_DIR": "a folder",
    "WANDB_PROJECT": "a project name",
    "PASSTHROUGH": "a switch",
    "KEYBOARD": "a keyboard layout",
    "MONKEY": "not a key",
    "TURKEY": "not a key",
    "JPY_SESSION_NAME": "the notebook's file name, set by Jupyter",
    "KEY_LAYOUT": "a keyboard layout",
}
MIN_VALUE_LEN = 4  # shorter values are not replaced in free text: "1" or "on" would blank out half a log


def why_secret(name: str, marked: Iterable[str] = ()) -> str | None:
    """Why the env name holds a secret (the WORDS / PARTS entry, or the recipe's `secrets:`), None when it does not."""
    if name in set(marked):
        return "listed under the recipe's secrets:"
    upper = str(name).upper()
    if upper in PLAIN:
        return None
    parts = [p.upper() for p in _SPLIT.split(str(name)) if p]
    part = next((p for p in parts if p in PARTS), None)
    if part is not None:
        return f"{part}: {PARTS[part]}"
    found = SECRET.search(upper)
    return f"{found.group(0)}: {WORDS[found.group(0)]}" if found else None


def is_secret(name: str, marked: Iterable[str] = ()) -> bool:
    """True when the env name holds a secret (why_secret: the one list above), or the recipe marks it."""
    return why_secret(name, marked) is not None


def secret_values(env: Mapping[str, str], marked: Iterable[str] = ()) -> list[str]:
    """The values of the secret entries of env (the ones long enough to be found in free text)."""
    marked = list(marked)
    return [str(v) for k, v in env.items() if is_secret(str(k), marked) and len(str(v)) >= MIN_VALUE_LEN]


def redact_env(env: Mapping[str, str], marked: Iterable[str] = ()) -> dict[str, str]:
    """The env with every secret value replaced by REDACTED (names kept, so a reader sees it was set)."""
    marked = list(marked)
    return {k: (REDACTED if is_secret(str(k), marked) else v) for k, v in env.items()}


def redact_text(text: str, values: Iterable[str]) -> str:
    """text with every occurrence of a secret value replaced by REDACTED (longest first)."""
    for value in sorted({v for v in values if v and len(v) >= MIN_VALUE_LEN}, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


def references(doc: Any, env: Mapping[str, str], marked: Iterable[str] = ()) -> Any:
    """A JSON-able document with every secret value of `env` (the caller's shell: by its name) replaced by the
    reference `${NAME}`, wherever it appears and whatever key holds it: what an imported recipe is written with."""
    values = sorted(
        ((str(v), k) for k, v in env.items() if is_secret(str(k), marked) and len(str(v)) >= MIN_VALUE_LEN),
        key=lambda item: len(item[0]),
        reverse=True,
    )
    if not values:
        return doc

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            for value, name in values:
                node = node.replace(value, "${" + name + "}")
            return node
        if isinstance(node, Mapping):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            return type(node)(walk(v) for v in node)
        return node

    return walk(doc)


def _override_key(text: str) -> tuple[str, bool]:
    key, sep, _ = str(text).partition("=")
    return key.strip(), bool(sep)


def is_secret_override(text: str, marked: Iterable[str] = ()) -> bool:
    """True for a `--set` that sets a secret: `env.NAME=...` with NAME secret, or a whole `env=...`."""
    key, has_value = _override_key(text)
    return has_value and (key == "env" or (key.startswith("env.") and is_secret(key[4:], marked)))


def redact_override(text: str, marked: Iterable[str] = ()) -> str:
    """`env.NAME=value` with the value redacted when NAME is secret; `env=...` redacted whole; else unchanged."""
    if is_secret_override(text, marked):
        return f"{str(text).partition('=')[0]}={REDACTED}"
    return str(text)


def redact_value(key: str, value: Any, marked: Iterable[str] = ()) -> Any:
    """The value at a dotted recipe key as it may be shown: `env.NAME` (NAME secret) and a non-mapping `env`
    hidden, an `env` mapping redacted by name."""
    if key == "env":
        return redact_env(value, marked) if isinstance(value, Mapping) else (None if value is None else REDACTED)
    if key.startswith("env.") and is_secret(key[4:], marked) and value is not None:
        return REDACTED
    return value


@dataclasses.dataclass(frozen=True)
class Redaction:
    """What to hide for one recipe (or env): the names it marks secret, the secret values, the secret `--set`
    texts. Apply it to whatever is about to be shown or written."""

    marked: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    overrides: tuple[str, ...] = ()

    def text(self, text: str) -> str:
        """Free text with secret `--set` texts shown redacted and secret values replaced."""
        text = str(text)
        for override in sorted(self.overrides, key=len, reverse=True):
            text = text.replace(override, redact_override(override, self.marked))
        return redact_text(text, self.values)

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        """An env mapping: secret names keep their name with REDACTED as the value; other values have secret
        values replaced (a plain variable that copies a token)."""
        return {k: (v if v == REDACTED else self.text(v)) for k, v in redact_env(env, self.marked).items()}

    def problem(self, problem: Problem) -> Problem:
        """A problem as it may be shown: its value by its key, its message and fix as text."""
        value = redact_value(problem.key, problem.value, self.marked)
        if isinstance(value, str):
            value = self.text(value)
        return dataclasses.replace(
            problem, value=self.data(value), message=self.text(problem.message), fix=self.text(problem.fix)
        )

    def problems(self, problems: Iterable[Problem]) -> list[Problem]:
        return [self.problem(p) for p in problems]

    def data(self, doc: Any) -> Any:
        """A JSON-able document: strings as text, mapping entries whose key is a secret env name hidden."""
        if isinstance(doc, str):
            return self.text(doc)
        if isinstance(doc, Mapping):
            return {
                k: (
                    REDACTED
                    if isinstance(k, str) and is_secret(k, self.marked) and isinstance(v, str)
                    else self.data(v)
                )
                for k, v in doc.items()
            }
        if isinstance(doc, (list, tuple)):
            return [self.data(v) for v in doc]
        return doc

    def launch(self, launch):
        """A rendered launch (grpolab.verl.render.Launch) with its env and overrides redacted: what `render`,
        `run --dry-run`, the launch record and the notebooks show (a value read from the launching shell shows
        as its reference `${NAME}`)."""
        env = launch.shown_env() if hasattr(launch, "shown_env") else launch.env
        return dataclasses.replace(
            launch,
            env=self.env(env),
            overrides=[self.text(o) for o in launch.overrides],
            notes=self.problems(launch.notes),
        )


def redaction(recipe=None, env: Mapping[str, str] | None = None, overrides: Iterable[str] = (), marked=()) -> Redaction:
    """The redaction for a recipe (its `secrets:` and env) and/or an env (a job's, with values from the node's
    environment), plus the `--set` texts that were given (secret ones are hidden even when too short to find by
    value, or when the recipe did not load)."""
    names = list(marked) + list(getattr(recipe, "secrets", None) or [])
    values = secret_values(recipe.env, names) if recipe is not None else []
    if env is not None:
        values += secret_values(env, names)
    texts = [str(o) for o in overrides if is_secret_override(str(o), names)]
    values += [t.partition("=")[2] for t in texts if len(t.partition("=")[2]) >= MIN_VALUE_LEN]
    return Redaction(tuple(dict.fromkeys(names)), tuple(dict.fromkeys(values)), tuple(dict.fromkeys(texts)))


# Free text that was never in an env (a log line a program printed): values shaped like secrets, found by the name
# they are given (`WANDB_API_KEY=...`, `"hf_token": "..."`, `--api-key ...`, a URL's password) or by a shape of their
# own (a private key, a Hugging Face / OpenAI / GitHub / Slack / AWS token, a JWT, a bearer token). Numbers, booleans
# and references (${NAME}) are left: `max_num_batched_tokens=8192` says no secret.
_ASSIGNED = re.compile(
    r"(?<![\w.])(--)?([A-Za-z_][\w.\-]{0,60}?)(['\"]?\s{0,3}[=:]\s{0,3}['\"]?|['\"]?\s{1,3}(?=['\"]?\S{8}))"
    r"(?!--)([^\s'\",;)\]}]{4,400})"
)
_SHAPED = re.compile(
    r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----[^\n]*?(?:-----END [A-Z ]{0,40}PRIVATE KEY-----|$)"
    r"|\b(?:hf_[A-Za-z0-9]{20,}|sk-(?:proj-)?[A-Za-z0-9_\-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_\w{20,}"
    r"|xox[abprs]-[\w\-]{10,}|AKIA[0-9A-Z]{16}|eyJ[\w\-]{8,}\.[\w\-]{8,}\.[\w\-]{8,})"
    r"|(?<=://)[^\s/:@]{1,80}:[^\s/@]{1,200}(?=@)"
    r"|\b(?:Bearer|Basic|token) [A-Za-z0-9._~+/=\-]{16,}",
    re.MULTILINE,
)
# a name whose every value is a secret (a password); under the other secret names (KEY, TOKEN: also words of prose,
# `KeyError`, "the rejected key") a value is taken for a secret only when it looks opaque (long, letters and digits,
# no path or dotted name)
_STRONG = re.compile(r"pass(?:word|wd|phrase)?(?![a-z])|secret|credential|(?:^|[_\-])pwd?(?:$|[_\-])", re.IGNORECASE)
_OPAQUE = re.compile(r"(?=[^\s]*\d)(?=[^\s]*[A-Za-z])[A-Za-z0-9+=_\-]{16,400}")
_PLAIN_VALUE = re.compile(r"[\d.eE+\-]+|true|false|none|null|yes|no|on|off|\$\{\w+\}|\*+\w*\*+", re.IGNORECASE)


def redact_free_text(text: str) -> str:
    """`text` (a log line, an error's message) with every secret-looking value replaced by REDACTED: values given a
    secret name (the names of WORDS / PARTS, as for env names) and values with a secret's own shape."""
    text = _SHAPED.sub(REDACTED, str(text))

    def hide(m: re.Match) -> str:
        flag, name, sep, value = m.group(1) or "", m.group(2), m.group(3), m.group(4)
        if _PLAIN_VALUE.fullmatch(value) or value == REDACTED or not is_secret(name.replace("-", "_")):
            return m.group(0)
        if not _STRONG.search(name) and not _OPAQUE.fullmatch(value):
            return m.group(0)  # "the rejected key: a.b.c", "KeyError: 'reward_model'": prose, not a secret
        if not sep.strip(" '\"") and not flag:  # `NAME value` without `=` or `:` only for a --flag
            return m.group(0)
        return f"{flag}{name}{sep}{REDACTED}"

    return _ASSIGNED.sub(hide, text)
