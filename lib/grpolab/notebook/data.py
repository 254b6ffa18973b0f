"""01_setup's data and reward view: `grpolab data`'s report (grpolab.rules.data.report) in a notebook, a sample row,
the prompt-length histogram against data.max_prompt_length as a PNG, and what the reward's dry run scores mean. It
returns the problems the report found that check had not (the prompt lengths, the chat template, the reward's dry
run), for the setup verdict."""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

from grpolab.notebook.display import show_figure, show_html, show_problems, show_text, table_html
from grpolab.problems import Problem
from grpolab.verl.dataset import samples

_CELL = 160  # characters of a sample row's value shown


def show_data(recipe, problems: list[Problem]) -> list[Problem]:
    """The data sample, a sample row, the prompt lengths and the reward's dry run; the problems new to this view."""
    # lazy: yaml (the data checks load when 01_setup shows the data, not with `import grpolab.notebook`)
    from grpolab.rules.data import histogram, lines, report

    if recipe is None:
        print("no data to look at: the recipe does not fit the schema (the problems above)")
        return []
    rep = report(recipe)
    show_text("\n".join(lines(rep)), title=f"data and reward of {recipe.name}")
    _sample_row(recipe, rep)
    if note := right_answer_note(rep):
        print(note)
    seen = {(p.rule, p.key, p.message) for p in problems}
    new = [p for p in rep.problems if (p.rule, p.key, p.message) not in seen]
    if new:
        show_problems(new, title="data and reward problems")
    if rep.lengths is not None and rep.lengths.lengths:
        _histogram(rep.lengths, rep.max_prompt_length, histogram, recipe.name)
    return new


def _sample_row(recipe, rep) -> None:
    """The first row of the train file as verl reads it: each column and its value (long values cut)."""
    here = [f for f in rep.files if f.here and not f.error]
    if not here:
        return  # the data summary above says where the files are not
    key, file = here[0].key, here[0].file
    # read again (one row, cached by the file's mtime): the dry run's rows are what it judged, not the file's row
    found = next((s for s in samples(recipe, 1) if s.key == key and s.rows), None)
    rows = found.rows if found else []
    if not rows:
        return
    cells = [[column, _short(value)] for column, value in rows[0].items()]
    title = f"a sample row: row 0 of {key} ({file})"
    show_html(
        f"<b>{html.escape(title)}</b>" + table_html(["column", "value"], cells, [None] * len(cells), widths=[18, 82]),
        title + "\n" + "\n".join(f"  {c}: {v}" for c, v in cells),
    )


def _short(value) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= _CELL else text[: _CELL - 3] + "..."


def right_answer_note(rep) -> str | None:
    """Why right answers scored less than 1 in the dry run, when they did: the dry run answers with the ground truth
    alone, and a reward that gives full marks only to more than the bare answer gives it less. The reward's own
    words on its scores follow, when its docstring has them (tiny's: "... the right digits without EOS 0.5")."""
    run = rep.dry_run
    right = list(run.by_row("right").values()) if run is not None else []
    if not right or max(right) >= 1:
        return None
    mean = sum(right) / len(right)
    truth = next(iter(_truths(run.rows)), None)
    example = f" (row 0: {truth!r})" if truth is not None else ""
    said = _score_sentence(run.function)
    return (
        f"about the dry run: a right answer scored {mean:.3g} here, not 1. The dry run answers with the ground "
        f"truth alone{example}, bare and in the usual answer formats, with nothing around it; a reward that gives "
        "full marks only to more than the bare answer (an answer format, an end-of-sequence token, a reasoning "
        "trace) gives it less. That is the reward's design, not a fault: what matters is that right scores above "
        "wrong and empty." + (f' {run.function.rsplit(":", 1)[0]} says: "{said}"' if said else "")
    )


def _truths(rows: list[dict]) -> list:
    return [r["reward_model"].get("ground_truth") for r in rows if isinstance(r.get("reward_model"), dict)]


def _score_sentence(function: str) -> str | None:
    """The first sentence of the reward file's docstrings (module, then the function) that speaks of its scores;
    read with ast (the reward is never imported here)."""
    path, _, name = function.rpartition(":")
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    docs = [ast.get_docstring(tree) or ""]
    docs += [ast.get_docstring(n) or "" for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    for doc in docs:
        for sentence in re.split(r"(?<=[.;])\s+", " ".join(doc.split())):
            if re.search(r"\bscores?\b", sentence) and re.search(r"\d", sentence):
                return sentence
    return None


def _histogram(lengths, limit: int, bins, name: str) -> None:
    # lazy: matplotlib (only drawing the histogram needs it)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    counts = lengths.lengths
    fig = Figure(figsize=(6.4, 3.0))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    edges = bins(counts, limit, 20)
    ax.bar(
        [lo for lo, _, _ in edges],
        [c for _, _, c in edges],
        width=edges[0][1] - edges[0][0],
        align="edge",
        color="#3b7dd8",
    )
    ax.axvline(limit, color="#c0392b", linestyle="--", label=f"data.max_prompt_length {limit}")
    over = sum(n > limit for n in counts)
    ax.set_title(f"{name}: prompt tokens of {len(counts)} sample rows ({over} over the limit)", fontsize=10)
    ax.set_xlabel("prompt tokens (" + ("chat template applied" if lengths.template else lengths.tokenizer) + ")")
    ax.set_ylabel("rows")
    ax.legend(fontsize=8)
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.16, top=0.88)
    show_figure(fig)
