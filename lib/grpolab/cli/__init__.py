"""`grpolab`: a thin command line over the same functions the notebooks call.

One small module per verb (grpolab/cli/<verb>.py), each with `register(subparsers)` that adds its parser and
sets `func`, a function `(args) -> int` returning the exit status. Exit status: 0 clean (warnings allowed),
1 problems found (errors, failed checks, a failed run, a regression, an unreachable cluster), 2 unusable input
(bad arguments, no such recipe or run, an unreadable or unwritable file), 130 interrupted, 141 the reader of
stdout went away (`grpolab monitor RUN | head`: nothing more is printed).

`main` is the one error boundary, for every verb: every expected failure is one line on stderr (`grpolab VERB:
message`) and, with --json, one JSON document on stdout: {"error": message, "exit": status}. Verbs raise and
print nothing of their own errors: an unusable input is grpolab.problems.InputError whoever finds it (a bad
argument, no such recipe or run, an unreadable record or thresholds file), exit 2; an unreachable cluster exits 1.
An unexpected exception is one line too (`internal error`, exit 1); GRPOLAB_DEBUG=1 shows its traceback. Every
--json document goes through grpolab.cli.common.print_json (strict JSON).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys

from grpolab.jobs.reach import ClusterError
from grpolab.problems import InputError, RecipeError
from grpolab.recipe.secrets import Redaction, is_secret

# verb -> module under grpolab.cli, in --help's order: the verb's own name, but for the verbs runs.py registers
# beside `runs` (status, logs, stop) and `import` (a Python keyword)
_MODULES = {"status": "runs", "logs": "runs", "stop": "runs", "import": "import_"}
VERBS = {
    verb: _MODULES.get(verb, verb)
    for verb in (
        "ls show check data render preflight run runs status logs stop monitor compare diagnose head import plan card "
        "lab resume export"
    ).split()
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints usage + error and exits; here: one line, through main
        raise InputError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="grpolab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    for module in dict.fromkeys(VERBS.values()):
        importlib.import_module(f"grpolab.cli.{module}").register(sub)
    return parser


def _one_line(text: str) -> str:
    return "; ".join(line.strip() for line in str(text).splitlines() if line.strip()) or "(no message)"


def _fail(verb: str, message: str, status: int, as_json: bool) -> int:
    message = _one_line(message)
    with contextlib.suppress(OSError):  # BrokenPipeError too
        sys.stdout.flush()
        if as_json:
            print(json.dumps({"error": message, "exit": status}))
        print(f"grpolab{' ' + verb if verb else ''}: {message}", file=sys.stderr)
    return status


def _quiet_closed_stdout() -> None:
    """stdout's reader went away: send what is left to /dev/null so that Python's exit flush stays silent."""
    with contextlib.suppress(OSError, ValueError, AttributeError):  # pytest's captured stdout has no file descriptor
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# bytes from outside (a run folder's name, a log line, a recipe value) reach the terminal through every print: the
# C0 controls but tab, newline and carriage return, DEL and the C1 controls are shown escaped, so that no name can
# retitle, clear or reprogram the user's terminal
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0))}


def escape_controls(text: str) -> str:
    """text with terminal control characters shown as \\xNN (see _CONTROLS)."""
    return str(text).translate(_CONTROLS)


class _Escaped:
    """A text stream whose writes have control characters escaped and the caller's secret values hidden (the last
    line of the one redaction: whatever a verb prints, a secret of the shell it runs in never shows); everything
    else is the stream's own."""

    def __init__(self, stream, hide=None) -> None:
        self._stream, self._hide = stream, hide

    def write(self, text: str) -> int:
        shown = escape_controls(text)
        self._stream.write(self._hide.text(shown) if self._hide is not None else shown)
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _callers_secrets():
    """The redaction of the secret values of this shell's environment (by name: grpolab.recipe.secrets), long
    enough not to be ordinary words and not paths of this machine."""
    values = [
        v for k, v in os.environ.items() if is_secret(k) and len(v) >= 8 and not os.path.exists(v) and " " not in v
    ]
    return Redaction(values=tuple(values)) if values else None


def main(argv: list[str] | None = None) -> int:
    out, err = sys.stdout, sys.stderr
    shown = list(sys.argv[1:] if argv is None else argv)
    hide = None if "--show-secrets" in shown else _callers_secrets()
    sys.stdout, sys.stderr = _Escaped(out, hide), _Escaped(err, hide)
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = out, err


def _main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    verb = next((a for a in argv if a in VERBS), "")
    try:
        args = build_parser().parse_args(argv)
        verb = args.verb
        status = int(args.func(args) or 0)
        sys.stdout.flush()
        return status
    except SystemExit as exc:  # --help (0) and verbs that print their own problems (1)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except InputError as exc:
        return _fail(verb, str(exc), 2, as_json)
    except RecipeError as exc:
        return _fail(verb, exc.problems[0].message if exc.problems else str(exc), 1, as_json)
    except KeyboardInterrupt:
        return _fail(verb, "interrupted", 130, as_json)
    except BrokenPipeError:
        _quiet_closed_stdout()
        return 141
    except UnicodeError as exc:
        return _fail(verb, f"cannot decode the input: {exc}", 2, as_json)
    except OSError as exc:  # a read-only or full disk, a missing or unreadable file, a refused connection
        if isinstance(exc, ConnectionError) or type(exc).__module__.split(".")[0] in ("requests", "urllib3", "ray"):
            return _fail(verb, f"cannot reach the Ray cluster: {exc}", 1, as_json)
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return _fail(verb, f"{where}{exc.strerror or exc}", 2, as_json)
    except Exception as exc:  # an unreachable cluster (exit 1), else a bug: one line; GRPOLAB_DEBUG=1 shows where
        if isinstance(exc, ClusterError):
            return _fail(verb, str(exc), 1, as_json)
        if os.environ.get("GRPOLAB_DEBUG"):
            raise
        return _fail(
            verb, f"internal error: {type(exc).__name__}: {exc} (GRPOLAB_DEBUG=1 shows the traceback)", 1, as_json
        )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
