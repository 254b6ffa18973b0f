"""Display helpers and shared constants of the notebook front end: HTML tables with plain-text twins, problem lists, the stage table, and NotebookStop (a message instead of a traceback)."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import html
import io
import json
import os
import re
import shlex
import sys
from collections.abc import Iterable
from pathlib import Path

from IPython import get_ipython
from IPython.display import Image, display
from IPython.utils.capture import capture_output

from grpolab import owned
from grpolab.paths import PROJECT_ROOT
from grpolab.problems import Problem, counts, ordered, report

NOTEBOOKS_DIR = PROJECT_ROOT / "notebooks"
KERNEL = "python3"
KERNEL_ARGS = ["--log-level=ERROR"]  # stage kernels: no start-up warnings in run.ipynb's output
# a kernel whose stderr is the user's terminal (`papermill notebooks/01_setup.ipynb ...`): ipykernel's own log off.
# jupyter_client interrupts every kernel it shuts down, and one still inside a message handler logs "KeyboardInterrupt
# caught in kernel." at ERROR (a race under load, after the notebook ended well); cell errors reach papermill anyway.
# zmq's stream logs its own side of that race through tornado's logger ("Uncaught exception in ZMQStream callback",
# `ZMQError: Socket operation on non-socket` from a flush on a closed socket), which ipykernel's level does not reach:
# set off too, before any cell (exec_lines run outside the notebook's history and namespace)
_TORNADO_OFF = "import logging as _l; _l.getLogger('tornado').setLevel(_l.CRITICAL); del _l"
TERMINAL_KERNEL_ARGS = ["--log-level=CRITICAL", f"--IPKernelApp.exec_lines={_TORNADO_OFF}"]
STAGES = ("01_setup", "02_preflight", "03_launch", "04_monitor")
NEEDS_RUN = ("04_monitor",)  # stages that only make sense once a run was submitted
REPORT_TAG = "report"  # cells of the stage notebooks whose outputs run.ipynb shows again
PAPERMILL_NAMES = ("PAPERMILL_INPUT_PATH", "PAPERMILL_OUTPUT_PATH")  # papermill --inject-paths
FOLLOW_EVERY_S = 30.0  # one progress line per this many seconds while a run is followed
UNREACHABLE_CHUNKS = 4  # stop following after this many periods in a row without an answer from Ray
# run.ipynb's process id, in its stage kernels' environment: run.ipynb itself reports their progress on the terminal
STAGE_KERNEL_VAR = "GRPOLAB_STAGE_KERNEL"
# in a stage kernel's environment: {"file": grpolab.run_folder.stage_results(...), "stage": its name}, where the
# stage hands its results to run.ipynb (hand_over)
STAGE_RESULTS_VAR = "GRPOLAB_STAGE_RESULTS"


class NotebookStop(Exception):
    """Stops a notebook with a message for a person: Jupyter and papermill show the message, not a traceback."""

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead of the traceback
        return [f"NotebookStop: {line}" if i == 0 else line for i, line in enumerate(str(self).splitlines())]


# ------------------------------------------------------------------------------------------------ stage results


def stage_results(path: str | Path) -> dict:
    """The results stage kernels handed to run.ipynb in `path` (grpolab.run_folder.stage_results); {} when none."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def hand_over(name: str, value) -> None:
    """In a stage kernel of run.ipynb: keep `value` (JSON) under the stage's name and `name` in the stage results
    file, for run.ipynb to read once the stage ended (STAGE_RESULTS_VAR says which file and which stage). Nothing
    when the notebook runs on its own."""
    where = json.loads(os.environ.get(STAGE_RESULTS_VAR) or "{}")
    if not where:
        return
    path = Path(where["file"])
    results = stage_results(path)
    results[where["stage"]] = {**(results.get(where["stage"]) or {}), name: value}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = owned.fresh_file(path.with_name(f".{path.name}.tmp"))
    tmp.write_text(json.dumps(results, indent=1) + "\n")
    owned.replace_file(tmp, path)  # run.ipynb never reads half a file


# ------------------------------------------------------------------------------------------------ display


def in_jupyterlab() -> bool:
    """True in a kernel that Jupyter Server started for a notebook (JupyterLab sets JPY_SESSION_NAME);
    False under papermill and nbval (and in stage notebooks run by run.ipynb, which pass live=False)."""
    return bool(os.environ.get("JPY_SESSION_NAME"))


def to_terminal(line: str) -> None:
    """Also write `line` to the terminal that started this kernel (papermill's stderr), so that a headless run
    shows its progress while it goes, not only in the output notebook at the end. ipykernel sends what a cell
    prints to the notebook and keeps a copy of the process's own stderr (`_original_stdstream_copy`): the line
    goes there. Nothing in JupyterLab (no terminal), outside a kernel (print reached the terminal already) or in
    run.ipynb's stage kernels (run.ipynb reports their progress itself)."""
    if in_jupyterlab() or os.environ.get(STAGE_KERNEL_VAR, str(os.getpid())) != str(os.getpid()):
        return
    fd = getattr(sys.stderr, "_original_stdstream_copy", None)
    if not isinstance(fd, int):
        if not type(sys.stderr).__module__.startswith("ipykernel"):
            return  # not in a kernel: print reached the terminal already
        fd = 2  # a kernel that left the process's stderr alone (ipykernel does under pytest): it is the terminal
    with contextlib.suppress(OSError):  # the terminal went away: the notebook keeps the line
        os.write(fd, (line.rstrip("\n") + "\n").encode("utf-8", "replace"))


def say(line: str) -> None:
    """A progress line: printed (the notebook keeps it) and, headless, on the terminal too (to_terminal)."""
    print(line, flush=True)
    to_terminal(line)


def show_html(html_text: str, text: str) -> None:
    """Show HTML in Jupyter with a plain-text twin (what papermill logs, nbconvert --to markdown, terminals)."""
    if get_ipython() is None:  # plain Python (a script importing these helpers)
        print(text)
        return
    display({"text/html": html_text, "text/plain": text}, raw=True)


def show_text(text: str, title: str | None = None) -> None:
    """Preformatted text (YAML, a bash script, a table) with an optional bold title."""
    head = f"<b>{html.escape(title)}</b>" if title else ""
    show_html(
        f"{head}<pre style='font-family:monospace;font-size:85%'>{html.escape(text)}</pre>",
        (f"{title}\n" if title else "") + text,
    )


def show_image(path: str | Path) -> None:
    """A PNG as an image output (embedded in the notebook, so papermill's output file shows it)."""
    if get_ipython() is None:
        print(f"picture: {path}")
        return
    display(Image(filename=str(path)))


def show_figure(fig) -> None:
    """A matplotlib figure as a PNG output, written to no file: the chart lives in the notebook's output only."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    if get_ipython() is not None:
        display(Image(data=buffer.getvalue()))


def captured(fn) -> dict:
    """Run `fn()` and return what it showed (printed text, HTML, pictures) as ONE display bundle: HTML (pictures
    inlined) with a plain-text twin. For the results of a widget's callback: written into an ordinary output
    through a display handle, they stay in a saved notebook, where an ipywidgets Output's would be lost."""
    with capture_output() as got:
        try:
            fn()
        except NotebookStop as exc:
            print(exc)
    pages, texts = [], []
    for out in got.outputs:
        data = out.data
        if "text/html" in data:
            pages.append(data["text/html"])
        elif "image/png" in data:
            png = data["image/png"]
            png = png if isinstance(png, str) else base64.b64encode(png).decode("ascii")
            pages.append(f"<img src='data:image/png;base64,{png}'/>")
        if "text/plain" in data and "image/png" not in data:
            texts.append(str(data["text/plain"]))
    if got.stdout:  # after the tables and pictures: what the callbacks print is their verdict (order is lost)
        pages.append(f"<pre style='font-family:monospace;font-size:85%'>{html.escape(got.stdout)}</pre>")
        texts.append(got.stdout.rstrip())
    return {"text/html": "\n".join(pages) or "<i>(nothing)</i>", "text/plain": "\n".join(texts) or "(nothing)"}


def table_html(
    headers: list[str], rows: list[list[str]], colours: list[str | None], widths: list[int] | None = None
) -> str:
    """An HTML table; with no rows, a line saying so (a header over nothing says less than "none"). `widths`: each
    column's share of the output's width in per cent: the table then fits the notebook, its long cells wrapped
    (anywhere, for a path or a run of overrides), instead of running past the right edge, where JupyterLab cuts
    it off (a fix column cut at 1400 px read "2, 4" for "1, 2, 4")."""
    if not rows:
        return "<p><i>(none)</i></p>"
    head = "".join(f"<th style='text-align:left'>{html.escape(h)}</th>" for h in headers)
    wrap = "overflow-wrap:anywhere;" if widths else ""
    body = []
    for row, colour in zip(rows, colours):
        style = f" style='background:{colour}'" if colour else ""
        cells = "".join(
            f"<td style='text-align:left;vertical-align:top;{wrap}'>{html.escape(str(c))}</td>" for c in row
        )
        body.append(f"<tr{style}>{cells}</tr>")
    layout, columns = "", ""
    if widths:
        layout = " style='width:100%;table-layout:fixed'"
        columns = "<colgroup>" + "".join(f"<col style='width:{w}%'>" for w in widths) + "</colgroup>"
    return f"<table{layout}>{columns}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


ROW_COLOURS = {"error": "#fde0e0", "fail": "#fde0e0", "warning": "#fff4d6", "warn": "#fff4d6", "skip": "#f2f2f2"}


# a run of `--set key=value` words in a fix (the planner's layout hints): a notebook passes them as overrides
_SET = r"--set (?:'[^']*=[^']*'|[^\s=']+=\S*)"  # one `--set key=value`, the pair quoted or not
_SET_RUN = re.compile(rf"{_SET}(?: {_SET})*")


def in_notebook_words(problem: Problem) -> Problem:
    """A problem in the words of a notebook user, who passes overrides, not `--set`: in the message `--set a=1` is
    `override a=1`; in the fix, `--set a=1 --set b=2` is `overrides ["a=1", "b=2"]` (what the parameter takes)."""
    # lazy: yaml (the loader loads only when a problem is reworded, not with `import grpolab.notebook`)
    from grpolab.recipe.loader import CLI

    fix = _SET_RUN.sub(lambda m: "overrides " + json.dumps(shlex.split(m.group(0))[1::2]), problem.fix)
    return dataclasses.replace(problem, message=problem.message.replace(f"{CLI} ", "override "), fix=fix)


def problems_text(problems: Iterable[Problem]) -> str:
    """Errors first, one block per problem (what `grpolab check` prints, in a notebook's words), then the counts."""
    return report([in_notebook_words(p) for p in problems])


def show_problems(problems: Iterable[Problem], title: str = "problems") -> None:
    """The problems as a table, errors first; "no problems" when there are none."""
    problems = ordered(problems)
    head = f"{title}: {counts(problems)}"
    if not problems:
        show_html(f"<b>{html.escape(title)}</b>: no errors, no warnings", f"{title}: no errors, no warnings")
        return
    rows = [
        [p.severity, p.rule, p.key, p.value if isinstance(p.value, str) else repr(p.value), p.message, p.fix]
        for p in map(in_notebook_words, problems)
    ]
    table = table_html(
        ["severity", "rule", "key", "value", "problem", "fix"],
        rows,
        [ROW_COLOURS.get(p.severity) for p in problems],
        widths=[7, 9, 13, 10, 33, 28],
    )
    show_html(f"<b>{html.escape(head)}</b>{table}", f"{head}\n{problems_text(problems)}")


def show_stages(stages: list[dict]) -> None:
    """The stage table of run.ipynb: stage, result, seconds, executed copy."""
    rows = [[s["stage"], s["result"], f"{s['seconds']:.1f}", s.get("notebook") or ""] for s in stages]
    # a result that says some checks fail (`ok, 2 checks fail (dry run...)`: runner.dry_run_failures) is a warning
    by_result = {"failed": ROW_COLOURS["fail"], "skipped": ROW_COLOURS["skip"]}
    colours = [by_result.get(s["result"]) or (ROW_COLOURS["warn"] if "fail" in s["result"] else None) for s in stages]
    text = "\n".join(f"{r[0]:14} {r[1]:8} {r[2]:>7} s  {r[3]}" for r in rows)
    show_html(table_html(["stage", "result", "seconds", "executed notebook"], rows, colours), text)
