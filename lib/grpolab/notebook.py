"""What the notebooks call: each cell of notebooks/*.ipynb is one or two calls into this module.

    check_parameters(globals())   the cell after `parameters`: every declared parameter has its declared type, and
                                  a name that papermill injected but the notebook does not declare (`-p modle
                                  tiny`: papermill only warns) stops the notebook, naming the closest parameter
    load(model, overrides)        the recipe, or a stop that names the closest recipe or the bad override
    from_script / check_recipe / show_recipe / show_launch / stop_on_errors     01_setup
    preflight / preflight_verdict                                       02_preflight
    launch / follow / verdict                                           03_launch
    find_run / watch / show_run / verdict                               04_monitor
    Stages                                                              run.ipynb: runs 01..04 with papermill

A wrong input raises `NotebookStop`: Jupyter, papermill and nbval show its message, without a traceback, and
papermill exits non-zero. Output is meant to stay small: progress is printed sparsely (a line every 30 s while a
run is followed), tables are HTML with a plain-text twin, pictures are PNG files (headless runs never need
widgets; only `watch(..., live=True)` in JupyterLab imports ipywidgets). Secrets never reach an output: the
recipe's env is shown through grpolab.launch.redact.

How a misspelled parameter is caught: papermill writes the parameters it is given as plain assignments in a
cell of their own (first line `# Parameters`, tagged `injected-parameters`) right after the `parameters` cell,
and IPython keeps the source of every executed cell in `In`. `check_parameters` reads the most recent injected
cell executed after the parameters cell, parses it with `ast`, and compares the names it assigns with the
names the parameters cell declares (its annotations, `__annotations__`). This needs no marker in the notebook,
is exact (a variable the user defines in a later cell is never mistaken for a parameter) and also works when
an executed notebook is re-run in JupyterLab.
"""

from __future__ import annotations

import ast
import html
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import types
import typing
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from grpolab.paths import PROJECT_ROOT, runs_dir
from grpolab.problems import InputError, Problem, RecipeError, closest

NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
KERNEL = "python3"
KERNEL_ARGS = ["--log-level=ERROR"]  # stage kernels: no start-up warnings in run.ipynb's output
STAGES = ("01_setup", "02_preflight", "03_launch", "04_monitor")
NEEDS_RUN = ("04_monitor",)  # stages that only make sense once a run was submitted
REPORT_TAG = "report"  # cells of the stage notebooks whose outputs run.ipynb shows again
PAPERMILL_NAMES = ("PAPERMILL_INPUT_PATH", "PAPERMILL_OUTPUT_PATH")  # papermill --inject-paths
DRY_RUN_FAILS = "dry run: {n} preflight check(s) fail"  # run.ipynb's stage table reads this line back
FOLLOW_EVERY_S = 30.0  # one progress line per this many seconds while a run is followed
UNREACHABLE_CHUNKS = 4  # stop following after this many periods in a row without an answer from Ray
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class NotebookStop(Exception):
    """Stops a notebook with a message for a person: Jupyter and papermill show the message, not a traceback."""

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead of the traceback
        return [f"NotebookStop: {line}" if i == 0 else line for i, line in enumerate(str(self).splitlines())]


# ------------------------------------------------------------------------------------------------ display


def _display(html_text: str, text: str) -> None:
    """Show HTML in Jupyter with a plain-text twin (what papermill logs, nbconvert --to markdown, terminals)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:  # plain Python (a script importing these helpers)
        print(text)
        return
    if get_ipython() is None:
        print(text)
        return
    display({"text/html": html_text, "text/plain": text}, raw=True)


def show_text(text: str, title: str | None = None) -> None:
    """Preformatted text (YAML, a bash script, a table) with an optional bold title."""
    head = f"<b>{html.escape(title)}</b>" if title else ""
    _display(
        f"{head}<pre style='font-family:monospace;font-size:85%'>{html.escape(text)}</pre>",
        (f"{title}\n" if title else "") + text,
    )


def show_image(path: str | Path) -> None:
    """A PNG as an image output (embedded in the notebook, so papermill's output file shows it)."""
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:
        print(f"picture: {path}")
        return
    if get_ipython() is None:
        print(f"picture: {path}")
        return
    display(Image(filename=str(path)))


def _table_html(headers: list[str], rows: list[list[str]], colours: list[str | None]) -> str:
    head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in headers)
    body = []
    for row, colour in zip(rows, colours):
        style = f" style='background:{colour}'" if colour else ""
        cells = "".join(f"<td style='text-align:left;vertical-align:top'>{html.escape(str(c))}</td>" for c in row)
        body.append(f"<tr{style}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


_COLOURS = {"error": "#fde0e0", "fail": "#fde0e0", "warning": "#fff4d6", "warn": "#fff4d6", "skip": "#f2f2f2"}


def _message(problem: Problem) -> str:
    """A problem's message as notebook users know it: an override is an override, not `--set`."""
    from grpolab.recipe import CLI

    return problem.message.replace(f"{CLI} ", "override ")


def problems_text(problems: Iterable[Problem]) -> str:
    """Errors first, one block per problem (what `grpolab check` prints), then the counts."""
    problems = sorted(problems, key=lambda p: (p.severity != "error", p.rule))
    lines = []
    for p in problems:
        value = p.value if isinstance(p.value, str) else repr(p.value)
        lines += [
            f"{p.severity.upper():7} [{p.rule}] {p.key} = {value}",
            f"        {_message(p)}",
            f"        fix: {p.fix}",
        ]
    n_err = sum(p.severity == "error" for p in problems)
    lines.append(f"{n_err} error(s), {len(problems) - n_err} warning(s)")
    return "\n".join(lines)


def show_problems(problems: Iterable[Problem], title: str = "problems") -> None:
    """The problems as a table, errors first; "no problems" when there are none."""
    problems = sorted(problems, key=lambda p: (p.severity != "error", p.rule))
    n_err = sum(p.severity == "error" for p in problems)
    head = f"{title}: {n_err} error(s), {len(problems) - n_err} warning(s)"
    if not problems:
        _display(f"<b>{html.escape(title)}</b>: no errors, no warnings", f"{title}: no errors, no warnings")
        return
    rows = [
        [p.severity, p.rule, p.key, p.value if isinstance(p.value, str) else repr(p.value), _message(p), p.fix]
        for p in problems
    ]
    table = _table_html(
        ["severity", "rule", "key", "value", "problem", "fix"], rows, [_COLOURS.get(p.severity) for p in problems]
    )
    _display(f"<b>{html.escape(head)}</b>{table}", f"{head}\n{problems_text(problems)}")


def show_stages(stages: list[dict]) -> None:
    """The stage table of run.ipynb: stage, result, seconds, executed copy."""
    rows = [[s["stage"], s["result"], f"{s['seconds']:.1f}", s.get("notebook") or ""] for s in stages]
    colours = [
        _COLOURS["fail"]
        if s["result"] == "failed"
        else _COLOURS["skip"]
        if s["result"] == "skipped"
        else _COLOURS["warn"]
        if "fail" in s["result"]
        else None
        for s in stages
    ]
    text = "\n".join(f"{r[0]:14} {r[1]:8} {r[2]:>7} s  {r[3]}" for r in rows)
    _display(_table_html(["stage", "result", "seconds", "executed notebook"], rows, colours), text)


# ------------------------------------------------------------------------------------------------ parameters


def _injected_names(history: list[str], declared: set[str]) -> set[str]:
    """Names assigned by the last papermill-injected cell executed after the parameters cell (empty: none)."""
    for source in reversed(history[:-1]):  # the last entry is the cell running now
        if not isinstance(source, str) or not source.strip():
            continue
        first = source.lstrip().splitlines()[0].strip()
        try:
            tree = ast.parse(source)
        except SyntaxError:  # IPython magics, shell escapes: not a parameters cell
            continue
        if first == "# Parameters":  # papermill's comment on the cell it injects
            names: set[str] = set()
            for node in tree.body:
                targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
                names |= {t.id for t in targets if isinstance(t, ast.Name)}
            return names
        annotated = {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        if declared and declared <= annotated:  # the parameters cell itself: nothing was injected after it
            return set()
    return set()


def _conforms(value: Any, annotation: Any) -> bool:
    if annotation is Any or annotation is typing.Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return any(_conforms(value, a) for a in typing.get_args(annotation))
    if annotation is None or annotation is type(None):
        return value is None
    if origin in (list, tuple):
        args = typing.get_args(annotation)
        return isinstance(value, origin) and (not args or all(_conforms(v, args[0]) for v in value))
    if origin is dict:
        return isinstance(value, dict)
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return True  # an annotation this checker does not know: accept


def _describe(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        parts = [_describe(a) for a in typing.get_args(annotation)]
        return " or ".join(sorted(parts, key=lambda p: p != "None"))
    if annotation is None or annotation is type(None):
        return "None"
    if origin is list:
        args = typing.get_args(annotation)
        return "a list" + (f" of {_describe(args[0]).removeprefix('a ')}s" if args else "")
    return {bool: "True or False", int: "an integer", float: "a number", str: "a string"}.get(
        annotation, getattr(annotation, "__name__", str(annotation))
    )


def _hint(name: str, annotation: Any, value: Any) -> str:
    wants_list = typing.get_origin(annotation) is list
    if wants_list and isinstance(value, str):
        return f'; pass a list with papermill -y "{name}: [{value}]"'
    if annotation is bool and isinstance(value, str):
        return f"; pass -p {name} True or -p {name} False (capitalised)"
    return ""


def _signature(name: str, annotation: Any) -> str:
    text = getattr(annotation, "__name__", None) if isinstance(annotation, type) else None
    return f"{name}: {text or str(annotation).replace('typing.', '')}"


def check_parameters(ns: dict) -> dict:
    """Validate the parameters of a notebook: call it as `check_parameters(globals())` in the cell after the
    `parameters` cell. Returns {name: value} of the declared parameters; raises NotebookStop listing every
    unknown parameter name (with the closest declared one) and every value of the wrong type."""
    declared: dict[str, Any] = dict(ns.get("__annotations__") or {})
    if not declared:
        raise NotebookStop("this notebook has no typed parameters: run the cell tagged `parameters` first")
    history = ns.get("In") or ns.get("_ih") or []
    injected = _injected_names(list(history), set(declared))
    problems = []
    for name in sorted(injected - set(declared) - set(PAPERMILL_NAMES)):
        near = closest(name, declared)
        problems.append(f"unknown parameter {name!r}" + (f": did you mean {near!r}?" if near else ""))
    for name, annotation in declared.items():
        if name not in ns:
            problems.append(f"parameter {name!r} is declared but not set: run the parameters cell")
            continue
        value = ns[name]
        if not _conforms(value, annotation):
            problems.append(
                f"parameter {name} must be {_describe(annotation)}, got {value!r} "
                f"({type(value).__name__}){_hint(name, annotation, value)}"
            )
    if problems:
        known = ", ".join(_signature(n, a) for n, a in declared.items())
        raise NotebookStop(
            "\n".join(problems) + f"\nthis notebook's parameters: {known}\n"
            'pass them with papermill -p NAME VALUE (lists: -y "overrides: [rollout.tp=16]")'
        )
    return {name: ns[name] for name in declared}


# ------------------------------------------------------------------------------------------------ recipes


# Secret overrides given to run.ipynb (`-y "overrides: [env.HF_TOKEN=...]"`) reach its stage notebooks without being
# written into them: papermill writes the parameters it injects into the executed notebook, so Stages.run passes
# `env.HF_TOKEN=***redacted***` there and the real override in this variable of the stage kernel's environment
# (readable by the user alone, gone with the kernel); load() and check_recipe() put the real value back.
STAGE_SECRETS_VAR = "GRPOLAB_STAGE_SECRET_OVERRIDES"


def _mask_one(text: str, marked: Iterable[str] = ()) -> str:
    from grpolab.secrets import redact_override

    return redact_override(str(text), marked)


def mask_overrides(overrides: Iterable[str], marked: Iterable[str] = ()) -> tuple[list[str], dict[str, str]]:
    """(overrides with secret values masked, {masked text: real text}) for the secret ones (by name or marked)."""
    from grpolab.secrets import is_secret_override

    marked = list(marked)
    masked, real = [], {}
    for text in overrides:
        text = str(text)
        if is_secret_override(text, marked):
            shown = _mask_one(text, marked)
            real[shown] = text
            text = shown
        masked.append(text)
    return masked, real


def unmask_overrides(overrides: Iterable[str]) -> list[str]:
    """The overrides with the masked secret ones of run.ipynb replaced by their real text (see STAGE_SECRETS_VAR)."""
    import json

    try:
        real = json.loads(os.environ.get(STAGE_SECRETS_VAR) or "{}")
    except json.JSONDecodeError:
        real = {}
    return [real.get(str(text), text) if isinstance(real, dict) else text for text in overrides]


def load(model: str, overrides: Iterable[str] = ()):
    """The validated recipe `model` with `overrides` applied; NotebookStop for an unknown recipe, a malformed
    override or a recipe the schema rejects (its problems are shown as a table first)."""
    from grpolab.recipe import load_recipe, parse_override

    shown = list(overrides)  # what messages quote: secret overrides from run.ipynb stay masked there
    overrides = unmask_overrides(shown)
    for text in overrides:
        try:
            parse_override(text)
        except InputError as exc:
            raise NotebookStop(
                f"bad override {_mask_one(text)!r}: {exc}\n"
                "overrides are a list of dotted key=value strings: "
                'papermill -y "overrides: [rollout.tp=16, trainer.total_steps=40]"'
            ) from None
    try:
        return load_recipe(model, overrides)
    except InputError as exc:
        raise NotebookStop(str(exc)) from None
    except RecipeError as exc:
        show_problems(exc.problems, title=f"recipe {model}")
        origin = f" with overrides {shown}" if shown else ""
        raise NotebookStop(
            f"recipe {model!r}{origin} does not fit the schema:\n" + problems_text(exc.problems)
        ) from None


def check_recipe(model: str, overrides: Iterable[str] = ()):
    """(recipe, every problem): the schema, every rule, and the launch composed against the installed verl."""
    from grpolab.gate import gate

    recipe = load(model, overrides)  # unknown recipe, bad override, schema: stop here with the reason
    return recipe, gate(recipe)


def from_script(script: str | None, model: str) -> str:
    """01_setup's `script`: import a verl launch script (grpolab.importer) and show the recipe and what it could not
    reproduce. Returns the imported recipe's path (a scratch file: copy it into params/recipes/ to keep it), or
    `model` when no script is given. NotebookStop for a file that is not a launch script."""
    if not script:
        return model
    from grpolab.importer import import_script as run_import
    from grpolab.importer import recipe_yaml

    try:
        imported = run_import(script)
    except InputError as exc:
        raise NotebookStop(str(exc)) from None
    text = recipe_yaml(imported, script)
    path = Path(tempfile.mkdtemp(prefix="grpolab-import-")) / f"{imported.name}.yaml"
    path.write_text(text)
    show_text(
        text, title=f"recipe imported from {script} ({path}; `grpolab import {script}` saves it in params/recipes/)"
    )
    rows = [[u["key"], repr(u["value"]), u["why"]] for u in imported.unmapped]
    plain = "\n".join(f"{k} = {v}: {why}" for k, v, why in rows) or "none: every setting of the script is reproduced"
    _display(
        "<b>not reproduced</b>"
        + (
            _table_html(["key", "script value", "why"], rows, [None] * len(rows))
            if rows
            else ": none, every setting of the script is reproduced"
        ),
        f"not reproduced:\n{plain}",
    )
    return str(path)


def check_address(ray_address: str | None) -> None:
    """A malformed Ray address stops the notebook in its validation cell, not minutes later."""
    if ray_address:
        from grpolab import cluster

        try:
            cluster.parse_address(ray_address)
        except cluster.ClusterError as exc:
            raise NotebookStop(str(exc)) from None


def check_new_run_id(run_id: str | None) -> None:
    """A run id the user chose must be a plain folder name that is not taken yet (None: generated later)."""
    if run_id is None:
        return
    from grpolab import runs

    try:
        runs.check_run_id(run_id)
    except ValueError as exc:
        raise NotebookStop(str(exc)) from None
    if (runs_dir() / run_id).exists():
        raise NotebookStop(f"run {run_id!r} already exists in {runs_dir()}; pick another run_id (or None)")


def show_recipe(recipe) -> None:
    """The fully resolved recipe as YAML, secrets redacted, with the files it was layered from."""
    from grpolab.launch import redact
    from grpolab.recipe import to_yaml

    show_text(to_yaml(recipe, env=redact(recipe.env, recipe.secrets)), title=f"resolved recipe {recipe.name}")


def _redacted_launch(recipe):
    import dataclasses

    from grpolab.launch import redact
    from grpolab.render import render

    launch = render(recipe)
    return dataclasses.replace(launch, env=redact(launch.env, recipe.secrets))


def show_launch(recipe) -> None:
    """The rendered launch: entrypoint and overrides, the env (secrets redacted) and the bash script."""
    from grpolab.render import to_sh

    launch = _redacted_launch(recipe)
    lines = [f"entrypoint: {launch.command()}", "", "overrides:"]
    lines += [f"  {o}" for o in launch.overrides] or ["  (none: the local trainer reads the recipe itself)"]
    env = [f"  {k}={v}" for k, v in launch.env.items()]
    lines += ["", "env (exported on every node):", *env] if env else ["", "env: none (the recipe sets no variables)"]
    show_text("\n".join(lines), title=f"rendered launch for {recipe.name} ({launch.engine})")
    if launch.notes:
        show_problems(launch.notes, title="rendering notes")
    show_text(to_sh(launch, recipe), title="bash script (grpolab render --format sh)")


def stop_on_errors(problems: list[Problem], recipe) -> None:
    """NotebookStop when any problem is an error (warnings pass)."""
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise NotebookStop(
            f"recipe {recipe.name} has {len(errors)} error(s); nothing can be launched:\n" + problems_text(errors)
        )
    print(f"recipe {recipe.name}: ready to launch ({len(problems)} warning(s))")


# ------------------------------------------------------------------------------------------------ preflight


def preflight(recipe, address: str | None = None, timeout_s: float | None = None):
    """Run preflight against the cluster (None: RAY_ADDRESS, else the embedded local head) and show the
    table, failures first. Returns the report."""
    from grpolab.preflight import run_preflight

    report = run_preflight(recipe, address=address, progress=print, timeout_s=timeout_s)
    rows = sorted(report.rows, key=lambda r: ("fail", "warn", "ok", "skip").index(r.status))
    table = _table_html(
        ["status", "check", "node", "detail", "fix"],
        [[r.status.upper(), r.check, r.node, r.detail, r.fix if r.status in ("fail", "warn") else ""] for r in rows],
        [_COLOURS.get(r.status) for r in rows],
    )
    _display(f"<b>{html.escape(report.summary())}</b>{table}", report.table())
    return report


def preflight_verdict(report, dry_run: bool = False) -> None:
    """NotebookStop when a check fails, with the failed rows; a dry run only reports them."""
    if not report.failed:
        warned = len([r for r in report.rows if r.status == "warn"])
        print(f"no check fails: nothing blocks the launch ({warned} warning(s))")
        return
    failed = [r for r in report.rows if r.status == "fail"]
    if dry_run:  # the table above lists them with their fixes: say what they mean, not the list again
        print(
            f"{DRY_RUN_FAILS.format(n=len(failed))}: listed in the table above with their fixes; "
            "nothing will be launched, so they do not stop this dry run"
        )
        return
    lines = [f"{r.check} ({r.node}): {r.detail}" + (f"\n    fix: {r.fix}" if r.fix else "") for r in failed]
    raise NotebookStop(f"{report.summary()}\nwhat is missing:\n" + "\n".join(lines))


# ------------------------------------------------------------------------------------------------ launch


def launch(recipe, address: str | None = None, run_id: str | None = None, dry_run: bool = False):
    """Submit the recipe as a Ray job and return the Run; with dry_run, show what would be submitted and
    return None. Errors in the recipe, an unreachable cluster or a taken run id stop the notebook."""
    import json

    from grpolab import cluster
    from grpolab import launch as launcher
    from grpolab.render import to_sh

    try:
        if dry_run:
            plan = launcher.plan(recipe, address=address)
            show_text(
                json.dumps(plan.describe(), indent=2), title=f"dry run: what would be submitted to the {plan.endpoint}"
            )
            launch_ = _redacted_launch(recipe)
            show_text(
                "\n".join(launch_.overrides) or "(none: the local trainer reads the recipe itself)",
                title="verl overrides",
            )
            show_text(to_sh(launch_, recipe), title="bash script (grpolab render --format sh)")
            print("dry run: nothing was submitted")
            return None
        run = launcher.submit(recipe, address=address, run_id=run_id, progress=print)
    except launcher.LaunchBlocked as exc:
        show_problems(exc.problems, title=f"recipe {recipe.name}")
        raise NotebookStop(
            f"recipe {recipe.name} has errors; nothing was submitted:\n" + problems_text(exc.problems)
        ) from None
    except cluster.ClusterError as exc:
        raise NotebookStop(str(exc)) from None
    except (ValueError, FileExistsError) as exc:
        raise NotebookStop(str(exc)) from None
    print(f"follow it here (the next cell), in 04_monitor.ipynb, or with `grpolab monitor {run.run_id}`")
    return run


def follow(run, every_s: float = FOLLOW_EVERY_S, progress: Callable[[str], None] = print) -> dict | None:
    """Follow a run until it ends: a progress bar in JupyterLab, else at most one progress line per `every_s`
    seconds (step / total, elapsed, remaining, reward, validation accuracy; grpolab.monitor.progress), then the
    final state. Stops following (the run goes on) when Ray stops answering."""
    from grpolab.monitor import load as load_metrics
    from grpolab.monitor.progress import Progress, wait
    from grpolab.runs import TERMINAL_STATES

    if run is None:  # a dry run: nothing was submitted
        return None
    bar = in_jupyterlab()  # a progress bar in JupyterLab; plain lines under papermill, nbval and in scripts
    if not bar:
        progress(f"following run {run.run_id}: a line every {every_s:g} s")
    tracker, view = Progress(run.run_id, bar=bar, every_s=every_s, out=progress), None
    silent = 0
    try:
        while True:
            status = wait(run, progress=lambda _line: None, timeout=every_s / 6 if bar else every_s)
            if run.metrics_file.exists():
                view = view or load_metrics(run.metrics_file)
                view.refresh()
            tracker.update(view, status)
            if status.get("state") in TERMINAL_STATES:
                tracker.close(status)
                return status
            note = str(status.get("note") or "")
            silent = silent + 1 if ("unreachable" in note or "does not know" in note) else 0
            if silent >= UNREACHABLE_CHUNKS * (6 if bar else 1):
                tracker.close({"state": f"stopped following: {note}"})
                return status
    except KeyboardInterrupt:  # Jupyter's Interrupt: the run is a Ray job of its own and goes on
        progress(f"stopped following; the run goes on (grpolab status {run.run_id} / grpolab stop {run.run_id})")
        return None


def show_head(address: str | None = None) -> None:
    """Whether the embedded local Ray head runs and how to stop it (nothing to say for a remote cluster)."""
    from grpolab import cluster

    if cluster.resolve(address) is not None:
        print(f"Ray: {cluster.resolve(address).label} (not the embedded head)")
        return
    print(cluster.describe_head())


def verdict(run, status: dict | None = None, strict: bool = True) -> None:
    """The run's outcome in a few lines (state, reward and accuracy first -> last, cause of a failure);
    NotebookStop when the run FAILED or was STOPPED and `strict`. Nothing for no run (a dry run)."""
    from grpolab.outcome import describe_outcome

    if run is None:
        return
    status = status or run.status()
    text = describe_outcome(run, status)
    if strict and status.get("state") in ("FAILED", "STOPPED", "LOST"):
        raise NotebookStop(text)
    print(text)


# ------------------------------------------------------------------------------------------------ monitor


def in_jupyterlab() -> bool:
    """True in a kernel that Jupyter Server started for a notebook (JupyterLab sets JPY_SESSION_NAME);
    False under papermill and nbval (and in stage notebooks run by run.ipynb, which pass live=False)."""
    return bool(os.environ.get("JPY_SESSION_NAME"))


def find_run(run_id: str | None = None):
    """The run named by `run_id` (run id, run directory or metrics file); None: the latest run."""
    from grpolab.runs import RunNotFound, list_runs, resolve_run

    if run_id is None:
        found = list_runs()
        if not found:
            raise NotebookStop(
                f"no runs under {runs_dir()} yet: launch one with 03_launch.ipynb, run.ipynb or "
                "`grpolab run tiny`, or pass run_id"
            )
        run = found[-1]
        print(f"the latest run: {run.run_id}")
        return run
    try:
        return resolve_run(run_id)
    except RunNotFound as exc:
        raise NotebookStop(str(exc)) from None


def watch(run, wait: bool = True, live: bool | None = None, interval: float = 5.0):
    """In JupyterLab (live None or True): show the live dashboard and return it (it refreshes itself).
    Headless: follow the run until it ends when `wait` (sparse lines), and return None."""
    from grpolab.runs import TERMINAL_STATES

    if interval <= 0:
        raise NotebookStop(f"interval must be a positive number of seconds, got {interval}")
    if in_jupyterlab() if live is None else live:
        from grpolab.monitor.dashboard import live as dashboard

        return dashboard(run, interval=interval)
    if wait and run.status().get("state") not in TERMINAL_STATES:
        follow(run)
    return None


def _curves_path(run) -> Path:
    path = run.path / "curves.png"
    if run.is_run and os.access(run.path, os.W_OK):  # never beside a metrics file outside a run
        return path
    return Path(tempfile.mkdtemp(prefix="grpolab-curves-")) / "curves.png"  # someone else's read-only run


def show_run(run, picture: bool = True, dashboard=None) -> dict:
    """The monitor's view of a run: state, latest metrics, alerts grouped by rule (collapsible), failure cause,
    the thresholds that applied, and the curves (PNG). With a live `dashboard` above, one line only: the
    dashboard keeps its own picture and summary up to date (a snapshot here would go stale at once)."""
    from grpolab.monitor import format_summary
    from grpolab.monitor.summary import RunMonitor, format_html

    if dashboard is not None:
        print(
            f"run {run.run_id}: the dashboard above follows it live; its picture and summary stay in this "
            "notebook when the run ends"
        )
        return dashboard.data or {}
    monitor = RunMonitor(run)
    data = monitor.update(png=_curves_path(run) if picture else None)
    title = f"run {data['run_id']}: {data['state']}"
    _display(f"<b>{html.escape(title)}</b>" + format_html(data), f"{title}\n{format_summary(data)}")
    if picture and data.get("curves"):
        show_image(data["curves"])
    return data


def plot_val_accuracy(run, path: str | Path | None = None) -> Path | None:
    """The validation-accuracy curve(s) alone, as a small PNG (None when the run logged none)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from grpolab.monitor import load

    if not run.metrics_file.exists():
        return None
    view = load(run.metrics_file)
    names = view.first_present(["val-core/"])
    if not names:
        return None
    fig = Figure(figsize=(6.0, 3.4))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for name in names:
        steps, values = view.series(name)
        ax.plot(steps, values, marker="o", markersize=3, linewidth=1.4, label=name.removeprefix("val-core/"))
    ax.set_title(f"{run.run_id}: validation accuracy", fontsize=10)
    ax.set_xlabel("step")
    ax.set_ylabel("accuracy")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.15, top=0.89)
    path = Path(path) if path else _curves_path(run).with_name("val_accuracy.png")
    fig.savefig(path, dpi=80, format="png")
    return path


def show_figures(run) -> None:
    """The final figures of a run: first and last reward and validation accuracy, the last step."""
    from grpolab.outcome import figures

    fig = figures(run)
    rows = []
    for label in ("reward", "val_acc"):
        if label in fig:
            f = fig[label]
            rows.append([label, f"{f['first']:.3f}", str(f["first_step"]), f"{f['last']:.3f}", str(f["last_step"])])
    if not rows:
        print(f"run {run.run_id} logged no metrics")
        return
    text = "\n".join(f"{r[0]:8} {r[1]} (step {r[2]}) -> {r[3]} (step {r[4]})" for r in rows)
    _display(
        f"<b>final figures of {html.escape(run.run_id)}</b> (last step {fig.get('last_step')})"
        + _table_html(["metric", "first", "at step", "last", "at step"], rows, [None] * len(rows)),
        f"final figures of {run.run_id} (last step {fig.get('last_step')})\n{text}",
    )


# ------------------------------------------------------------------------------------------------ run.ipynb


def _error_of(nb_path: Path) -> str | None:
    """The message of the first error output in an executed notebook."""
    import nbformat

    try:
        nb = nbformat.read(str(nb_path), as_version=4)
    except Exception:  # a half-written notebook: papermill's own error is all there is
        return None
    for cell in nb.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                if out.get("ename") == "NotebookStop":
                    return str(out.get("evalue"))
                tail = [_ANSI.sub("", line) for line in out.get("traceback", [])][-3:]
                return f"{out.get('ename')}: {out.get('evalue')}\n" + "\n".join(tail)
    return None


def _dry_run_failures(nb_path: Path) -> str | None:
    """`ok, N checks fail (dry run)` when a dry-run stage reported failed checks (so the stage table does not
    say a plain "ok" under a list of failures); None otherwise."""
    import nbformat

    pattern = re.compile(re.escape(DRY_RUN_FAILS).replace(r"\{n\}", r"(\d+)"))
    try:
        book = nbformat.read(str(nb_path), as_version=4)
    except Exception:
        return None
    for cell in book.cells:
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            found = pattern.search(out.get("text", "") if out.get("output_type") == "stream" else "")
            if found:
                return f"ok, {found.group(1)} checks fail (dry run)"
    return None


def _replay(nb_path: Path) -> None:
    """Show again the outputs of the cells tagged `report` of an executed stage notebook."""
    import nbformat

    try:
        from IPython.display import publish_display_data
    except ImportError:  # pragma: no cover
        return
    try:
        nb = nbformat.read(str(nb_path), as_version=4)
    except Exception:
        return
    for cell in nb.cells:
        if cell.cell_type != "code" or REPORT_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "stream":
                (sys.stderr if out.get("name") == "stderr" else sys.stdout).write(out.get("text", ""))
            elif kind in ("display_data", "execute_result"):
                sys.stdout.flush()
                publish_display_data(dict(out.get("data", {})), dict(out.get("metadata", {})))


class Stages:
    """run.ipynb's driver: runs the stage notebooks in order with papermill, one fresh kernel each.

    The executed copies go to `runs/<run_id>/notebooks/` once the run directory exists; stages that run
    before it (setup, preflight) are written to a temporary folder first and moved there when 03_launch has
    created it. A dry run creates no run directory: the copies stay in the temporary folder, and `finish()`
    says where. A failing stage stops run.ipynb (NotebookStop, so papermill exits non-zero) with its reason.
    """

    def __init__(self, params: dict, notebooks: str | Path | None = None):
        from grpolab import runs

        self.params = params
        self.dry_run = bool(params.get("dry_run"))
        self.recipe = load(params["model"], params.get("overrides") or [])
        check_address(params.get("ray_address"))
        self.notebooks = Path(notebooks) if notebooks else NOTEBOOKS_DIR
        missing = [s for s in STAGES if not (self.notebooks / f"{s}.ipynb").is_file()]
        if missing:
            raise NotebookStop(f"no stage notebook(s) {', '.join(missing)} in {self.notebooks}")
        if self.dry_run:
            self.run_id = None
        else:
            check_new_run_id(params.get("run_id"))
            self.run_id = params.get("run_id") or runs.new_run_id(self.recipe.name)
        label = self.run_id or f"{self.recipe.name}-dry-run"
        self.scratch = Path(tempfile.mkdtemp(prefix=f"grpolab-{label}-"))
        self.stages: list[dict] = []
        where = (
            f"{runs_dir() / self.run_id / 'notebooks'} (once 03_launch created the run)"
            if self.run_id
            else f"{self.scratch} (a dry run has no run directory)"
        )
        print(
            f"recipe {self.recipe.name}"
            + (f", run {self.run_id}" if self.run_id else ", dry run")
            + f"\nexecuted stage notebooks: {where}"
        )

    @property
    def run_dir(self) -> Path | None:
        return runs_dir() / self.run_id if self.run_id else None

    def _target(self) -> Path:
        run_dir = self.run_dir
        if run_dir is not None and run_dir.is_dir():
            target = run_dir / "notebooks"
            target.mkdir(exist_ok=True)
            return target
        return self.scratch

    def _collect(self) -> None:
        """Move the copies written before the run directory existed into it."""
        target = self._target()
        if target == self.scratch:
            return
        for stage in self.stages:
            path = Path(stage["notebook"])
            if path.parent == self.scratch and path.exists():
                moved = target / path.name
                shutil.move(str(path), moved)
                stage["notebook"] = str(moved)
        try:
            self.scratch.rmdir()
        except OSError:
            pass

    def run(self, stage: str, **parameters) -> None:
        """Execute one stage notebook with these parameters; show its report; stop run.ipynb if it fails."""
        import papermill
        from papermill.exceptions import PapermillExecutionError

        if self.dry_run and stage in NEEDS_RUN:
            print(f"{stage}: skipped (dry run: nothing was submitted, so there is no run to monitor)")
            self.stages.append({"stage": stage, "result": "skipped", "seconds": 0.0, "notebook": None})
            return
        source = self.notebooks / f"{stage}.ipynb"
        output = self._target() / f"{stage}.ipynb"
        entry = {"stage": stage, "result": "running", "seconds": 0.0, "notebook": str(output)}
        self.stages.append(entry)
        print(f"{stage}: running ...", flush=True)
        if stage in NEEDS_RUN:
            print(
                f"  meanwhile, watch it with `grpolab monitor {self.run_id}` or in 04_monitor.ipynb "
                f"(run_id {self.run_id!r})",
                flush=True,
            )
        start = time.perf_counter()
        error = None
        real: dict[str, str] = {}
        if parameters.get("overrides"):  # secrets stay out of the stage notebook's injected-parameters cell
            masked, real = mask_overrides(parameters["overrides"], self.recipe.secrets)
            parameters = {**parameters, "overrides": masked}

        def execute() -> None:
            nonlocal error
            try:
                papermill.execute_notebook(
                    str(source),
                    str(output),
                    parameters=parameters,
                    kernel_name=KERNEL,
                    progress_bar=False,
                    log_output=False,
                    cwd=str(self.notebooks),
                    extra_arguments=KERNEL_ARGS,
                )
            except PapermillExecutionError as exc:
                error = _error_of(output) or f"{exc.ename}: {exc.evalue}"
            except Exception as exc:  # the kernel died, papermill could not start it, ...
                error = f"{type(exc).__name__}: {exc}"

        before = os.environ.get(STAGE_SECRETS_VAR)
        try:
            if real:  # the stage kernel inherits this process's environment
                import json

                os.environ[STAGE_SECRETS_VAR] = json.dumps(real)
            run_dir = self.run_dir
            if stage in NEEDS_RUN and run_dir is not None and run_dir.exists():
                # the stage's own kernel follows the run; this one shows how far it is meanwhile (a bar in
                # JupyterLab, a line every FOLLOW_EVERY_S s headless) instead of "running ..." for minutes
                from grpolab.monitor.progress import follow_while
                from grpolab.runs import Run

                worker = threading.Thread(target=execute, daemon=True, name=f"grpolab-stage-{stage}")
                worker.start()
                follow_while(Run(run_dir), worker.is_alive, bar=in_jupyterlab(), every_s=FOLLOW_EVERY_S)
                worker.join()
            else:
                execute()
        finally:
            if real:
                if before is None:
                    os.environ.pop(STAGE_SECRETS_VAR, None)
                else:
                    os.environ[STAGE_SECRETS_VAR] = before
        entry["seconds"] = time.perf_counter() - start
        entry["result"] = "failed" if error else (_dry_run_failures(output) or "ok")
        self._collect()
        print(f"{stage}: {entry['result']} in {entry['seconds']:.1f} s; executed notebook: {entry['notebook']}")
        _replay(Path(entry["notebook"]))
        if error:
            show_stages(self.stages)
            raise NotebookStop(
                f"stage {stage} failed, so run.ipynb stopped there:\n{error}\nexecuted notebook: {entry['notebook']}"
            )

    def finish(self) -> None:
        """The stage table, where the executed copies are, and for a real run the validation-accuracy curve
        and the final figures."""
        from grpolab.runs import Run

        self._collect()
        show_stages(self.stages)
        if self.dry_run:
            print(f"dry run: nothing was submitted; the executed stage notebooks are in {self.scratch}")
            return
        if self.run_dir is None or not self.run_dir.is_dir():
            print(
                f"no run directory {self.run_dir}: was 03_launch run? the executed stage notebooks are in "
                f"{self.scratch}"
            )
            return
        run = Run(self.run_dir)
        print(f"run directory: {run.path}\nexecuted stage notebooks: {run.path / 'notebooks'}")
        png = plot_val_accuracy(run)
        if png is not None:
            show_image(png)
        show_figures(run)


# ------------------------------------------------------------------------------------------------ plan (05_plan)


def plan_layouts(model: str, nodes: int | None = None, hardware: str | None = None, overrides: Iterable[str] = ()):
    """grpolab.planner's plan for a recipe or a model card on `nodes` nodes of `hardware`; bad input stops."""
    from grpolab import planner

    if nodes is not None and nodes < 1:
        raise NotebookStop(f"nodes must be a positive number of nodes, got {nodes}")
    try:
        recipe = planner.load(model, nodes, hardware, list(overrides))
    except InputError as exc:
        raise NotebookStop(str(exc)) from None
    except RecipeError as exc:
        raise NotebookStop(problems_text(exc.problems)) from None
    p = planner.plan(recipe)
    p.inputs = (model, hardware, list(overrides))
    return p


def show_plan(plan, top: int = 10) -> list:
    """The ranked layouts as a table (every figure an estimate) and the rejected counts; returns them."""
    from grpolab import planner

    if top < 1:
        raise NotebookStop(f"top must be at least 1, got {top}")
    listed = planner.choices(plan, top)
    best = listed[0] if listed else None
    c, recipe = plan.recipe.cluster, plan.recipe
    head = (
        f"{recipe.name} on {c.nnodes} x {c.devices_per_node} {c.hardware}: {len(plan.train)} training and "
        f"{len(plan.rollout)} rollout layouts pass every rule; memory and times are ESTIMATES"
    )
    headers = [
        "#",
        "train",
        "pp_layout",
        "rollout",
        "train GB free (est.)",
        "rollout GB free (est.)",
        "rollout s (est.)",
        "train s (est.)",
        "step s (est.)",
        "why",
    ]
    rows = [
        [
            str(i),
            ch.train.layout.short(),
            ch.train.layout.pp_layout or "even",
            ch.rollout.layout.short(),
            f"{ch.train.memory_gb['headroom']:.1f}",
            f"{ch.rollout.memory_gb['headroom']:.1f}",
            f"{ch.rollout.cost['total']:.0f}",
            f"{ch.train.cost['total']:.0f}",
            f"{ch.total:.0f}",
            planner.why(ch, best),
        ]
        for i, ch in enumerate(listed, 1)
    ]
    rejected = ", ".join(f"{rule} {n}" for rule, n in sorted(plan.rejected.items(), key=lambda kv: -kv[1]))
    foot = f"rejected by rule: {rejected or 'none'}"
    table = _table_html(headers, rows, [None if ch.fits else _COLOURS["warning"] for ch in listed])
    plain = "\n".join([head, "  ".join(headers), *("  ".join(r) for r in rows), foot])
    _display(f"<b>{html.escape(head)}</b>{table}<p>{html.escape(foot)}</p>", plain)
    for q in plan.recipe_errors:
        print(f"recipe error no layout fixes: {q.format()}")
    return listed


def plot_plan(plan, path: str | Path | None = None) -> Path | None:
    """A PNG of estimated per-device training memory against estimated step time, one point per valid
    training layout (with the best rollout layout); the best and the recipe's own layout are marked. Shown in
    the notebook; written to `path` only when one is given."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from grpolab import planner

    every = planner.choices(plan, None)
    if not every:
        return None
    fig = Figure(figsize=(6.4, 3.8))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for fits, colour, label in ((True, "#3b7dd8", "fits (estimate)"), (False, "#d8893b", "over budget (estimate)")):
        pts = [(ch.total, ch.train.memory_gb["total"]) for ch in every if ch.fits == fits]
        if pts:
            ax.scatter(*zip(*pts), s=10, alpha=0.6, color=colour, label=label)
    ax.scatter(
        [every[0].total], [every[0].train.memory_gb["total"]], s=80, marker="*", color="#1a9e3a", label="best", zorder=3
    )
    own = planner.own_choice(plan)
    if own is not None:
        ax.scatter(
            [own.total],
            [own.train.memory_gb["total"]],
            s=60,
            marker="D",
            facecolors="none",
            edgecolors="black",
            label="the recipe's layout",
            zorder=3,
        )
    ax.axhline(plan.recipe.cluster.device_memory_gb, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel("estimated step time, s (rollout + training)")
    ax.set_ylabel("estimated training GB per device")
    ax.set_title(f"{plan.recipe.name} on {plan.recipe.world_size} devices: estimates", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.14, top=0.9)
    if path:
        fig.savefig(Path(path), dpi=90)
        show_image(path)
        return Path(path)
    import io

    buffer = io.BytesIO()  # no file: the chart lives in the notebook's output only
    fig.savefig(buffer, format="png", dpi=90)
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:
        return None
    if get_ipython() is not None:
        display(Image(data=buffer.getvalue()))
    return None


def plan_explorer(model: str, hardware: str | None = None, overrides: Iterable[str] = (), top: int = 10):
    """In JupyterLab: widgets to change the node count and the lengths and re-plan (table and chart).
    Headless it returns None and shows nothing: the static cells above are the output."""
    if not in_jupyterlab():
        return None
    import ipywidgets as widgets
    from IPython.display import display

    from grpolab import planner

    recipe = planner.load(model, None, hardware, list(overrides))
    nodes = widgets.BoundedIntText(value=recipe.cluster.nnodes, min=1, max=4096, description="nodes")
    prompt = widgets.BoundedIntText(value=recipe.data.max_prompt_length, min=1, max=10_000_000, description="prompt")
    response = widgets.BoundedIntText(
        value=recipe.data.max_response_length, min=1, max=10_000_000, description="response"
    )
    button = widgets.Button(description="plan")
    out = widgets.Output()

    def replan(_=None) -> None:
        out.clear_output()
        with out:
            sets = [
                *overrides,
                f"data.max_prompt_length={prompt.value}",
                f"data.max_response_length={response.value}",
                f"rollout.max_model_len={prompt.value + response.value}",
            ]
            try:
                p = plan_layouts(model, nodes.value, hardware, sets)
            except NotebookStop as exc:
                print(exc)
                return
            show_plan(p, top)
            plot_plan(p)
            plan_verdict(p, strict=False)

    button.on_click(replan)
    box = widgets.VBox([widgets.HBox([nodes, prompt, response, button]), out])
    display(box)
    return box


def plan_verdict(plan, strict: bool = True) -> list[str]:
    """The best layout as overrides (a YAML list for papermill -y); with no valid layout, the smallest cluster
    that fits and a NotebookStop when `strict`."""
    from grpolab import planner

    listed = planner.choices(plan, 1)
    if listed and not plan.recipe_errors:
        sets = listed[0].overrides()
        print("best layout (an estimate ranked it first), as overrides:\n  overrides: [" + ", ".join(sets) + "]")
        return sets
    if plan.recipe_errors:
        message = f"{plan.recipe.name} has errors that no layout fixes:\n{problems_text(plan.recipe_errors)}"
    else:
        c = plan.recipe.cluster
        smallest = planner.smallest_cluster(*plan.inputs) if plan.inputs else None
        message = f"no layout fits {c.nnodes} x {c.devices_per_node} {c.hardware}; " + (
            f"the smallest cluster that fits is {smallest} nodes (nodes = {smallest})"
            if smallest
            else f"none fits up to {planner.SEARCH_NODES[-1]} nodes"
        )
    if strict:
        raise NotebookStop(message)
    print(message)
    return []


def plan_overrides(model: str, overrides: Iterable[str] = ()) -> list[str]:
    """run.ipynb with `plan`: the overrides with the top layout of the plan added last (it then wins)."""
    sets = plan_verdict(plan_layouts(model, None, None, overrides))
    return [*overrides, *sets]
