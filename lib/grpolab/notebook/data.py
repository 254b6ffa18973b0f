"""01_setup's data and reward view: `grpolab data`'s report (grpolab.rules.data.report) in a notebook, with the
prompt-length histogram against data.max_prompt_length as a PNG. It returns the problems the report found that
check had not (the prompt lengths, the chat template, the reward's dry run), for the setup verdict."""

from __future__ import annotations

from grpolab.notebook.display import show_figure, show_problems, show_text
from grpolab.problems import Problem


def show_data(recipe, problems: list[Problem]) -> list[Problem]:
    """The data sample, the prompt lengths and the reward's dry run; the problems new to this view."""
    # lazy: yaml (the data checks load when 01_setup shows the data, not with `import grpolab.notebook`)
    from grpolab.rules.data import histogram, lines, report

    if recipe is None:
        print("no data to look at: the recipe does not fit the schema (the problems above)")
        return []
    rep = report(recipe)
    show_text("\n".join(lines(rep)), title=f"data and reward of {recipe.name}")
    seen = {(p.rule, p.key, p.message) for p in problems}
    new = [p for p in rep.problems if (p.rule, p.key, p.message) not in seen]
    if new:
        show_problems(new, title="data and reward problems")
    if rep.lengths is not None and rep.lengths.lengths:
        _histogram(rep.lengths.lengths, rep.max_prompt_length, histogram, recipe.name)
    return new


def _histogram(lengths: list[int], limit: int, bins, name: str) -> None:
    # lazy: matplotlib (only drawing the histogram needs it)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 3.0))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    edges = bins(lengths, limit, 20)
    ax.bar(
        [lo for lo, _, _ in edges],
        [c for _, _, c in edges],
        width=edges[0][1] - edges[0][0],
        align="edge",
        color="#3b7dd8",
    )
    ax.axvline(limit, color="#c0392b", linestyle="--", label=f"data.max_prompt_length {limit}")
    over = sum(n > limit for n in lengths)
    ax.set_title(f"{name}: prompt tokens of {len(lengths)} sample rows ({over} over the limit)", fontsize=10)
    ax.set_xlabel("prompt tokens (chat template applied)")
    ax.set_ylabel("rows")
    ax.legend(fontsize=8)
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.16, top=0.88)
    show_figure(fig)
