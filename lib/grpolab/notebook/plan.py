"""05_plan: the layout planner's table, chart and JupyterLab explorer."""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path

from IPython.display import display

from grpolab.notebook.display import (
    ROW_COLOURS,
    NotebookStop,
    captured,
    in_jupyterlab,
    problems_text,
    show_figure,
    show_html,
    show_image,
    table_html,
)
from grpolab.problems import InputError, RecipeError
from grpolab.recipe.modes import describe

ROWS_PER_LAYOUT = 8  # layouts asked of the planner per row shown: rollout variants with the same estimates share one

# ------------------------------------------------------------------------------------------------ plan (05_plan)


def plan_layouts(model: str, nodes: int | None = None, hardware: str | None = None, overrides: Iterable[str] = ()):
    """grpolab.plan's plan for a recipe or a model card on `nodes` nodes of `hardware`; bad input stops."""
    # lazy: yaml (the planner loads when 05_plan plans, not with `import grpolab.notebook`)
    from grpolab.plan import io, search

    if nodes is not None and nodes < 1:
        raise NotebookStop(f"nodes must be a positive number of nodes, got {nodes}")
    try:
        recipe = io.load(model, nodes, hardware, list(overrides))
        p = search.plan(recipe)  # InputError for a cluster beyond what the planner enumerates
    except InputError as exc:
        raise NotebookStop(str(exc)) from None
    except RecipeError as exc:
        raise NotebookStop(problems_text(exc.problems)) from None
    p.inputs = (model, hardware, list(overrides))
    return p


def show_plan(plan, top: int = 10) -> list:
    """The ranked layouts as a table (every figure an estimate; layouts that differ only in their pipeline layout
    share a row, and a legend says what each layout string means), the recipe's own layout and the rejected
    counts; returns the layouts listed. With no valid layout: a sentence, no empty table."""
    # lazy: yaml (the planner loads when 05_plan plans, not with `import grpolab.notebook`)
    from grpolab.plan import search, table

    if top < 1:
        raise NotebookStop(f"top must be at least 1, got {top}")
    # `top` distinct rows: rollout variants with the same estimates share their training layout's row
    groups, letters = table.rows(search.choices(plan, top * ROWS_PER_LAYOUT))
    groups = groups[:top]
    listed = sorted((m for row in groups for m in row.members), key=lambda m: (not m.fits, m.total))
    best = listed[0] if listed else None
    c, recipe = plan.recipe.cluster, plan.recipe
    head = (
        f"{recipe.name} on {c.nnodes} x {c.devices_per_node} {c.hardware}: {len(plan.train)} training and "
        f"{len(plan.rollout)} rollout layouts pass every rule; memory and times are ESTIMATES"
    )
    rejected = ", ".join(f"{rule} {n}" for rule, n in sorted(plan.rejected.items(), key=lambda kv: -kv[1]))
    notes = [f"rejected by rule: {rejected or 'none'}"]
    own = own_layout(plan)
    if own is not None:
        notes.insert(0, table.own_text(own))
    elif not given_recipe(plan):
        notes.insert(
            0,
            f"{plan.inputs[0]} is a model, not a recipe: planned on params/base.yaml, whose own layout is no "
            "choice of yours (nothing to compare with)",
        )
    if not listed:
        text = f"{head}\nno layout passes every rule and fits on this cluster"
        show_html(
            f"<b>{html.escape(head)}</b><p>no layout passes every rule and fits on this cluster</p>"
            + "".join(f"<p>{html.escape(n)}</p>" for n in notes),
            "\n".join([text, *notes]),
        )
    else:
        groups, letters = table.rows(listed)  # ranked again over the layouts kept
        headers = list(table.HEADERS)
        rows = [[row.rank_text(), row.train_text(), row.rollout_text(), *row.cells(best)] for row in groups]
        low = [f"#{row.rank_text()}: {'; '.join(table.low_memory(row.members[0]))}" for row in groups if row.warn()]
        notes = table.legend(letters) + notes
        if low:
            notes.insert(0, "warning, little memory left (estimate): " + " | ".join(low))
        html_table = table_html(headers, rows, [ROW_COLOURS["warning"] if row.warn() else None for row in groups])
        plain = "\n".join([head, "  ".join(headers), *("  ".join(r) for r in rows), *notes])
        show_html(f"<b>{html.escape(head)}</b>{html_table}" + "".join(f"<p>{html.escape(n)}</p>" for n in notes), plain)
    for q in plan.recipe_errors:
        print(f"recipe error no layout fixes: {q.format()}")
    return listed


def given_recipe(plan) -> bool:
    """Whether 05_plan was given a recipe (its layout is the user's) rather than a model planned on base.yaml."""
    # lazy: yaml (the planner loads when 05_plan plans, not with `import grpolab.notebook`)
    from grpolab.plan import io

    return not plan.inputs or io.model_target(plan.inputs[0]) is None


def own_layout(plan):
    """The recipe's own layout, scored (grpolab.plan.search.own_choice); None for a model given without a recipe:
    base.yaml's default layout is nobody's choice, and "the recipe's own layout breaks rules" would blame the user
    for it."""
    # lazy: yaml (the planner loads when 05_plan plans, not with `import grpolab.notebook`)
    from grpolab.plan import search

    return search.own_choice(plan) if given_recipe(plan) else None


def plan_points(plan) -> list:
    """What the chart plots: each valid training layout that fits the estimated memory once, with its best rollout
    (the planner's choices are best first), best first."""
    # lazy: yaml (the planner loads when 05_plan plans, not with `import grpolab.notebook`)
    from grpolab.plan import search

    every, seen = [], set()
    for ch in search.choices(plan, None):
        key = (ch.train.layout.parallel(), ch.train.layout.param_offload, ch.train.layout.optimizer_offload)
        if ch.fits and key not in seen:
            seen.add(key)
            every.append(ch)
    return every


def plan_figure(plan):
    """The chart of plot_plan as a matplotlib Figure (None when no layout fits). The axes span the valid layouts and
    the device memory: the recipe's own layout, when it lies far outside them (a layout that needs 2,500 GB a
    device), is drawn at the edge with its real figures written beside it, instead of squashing every valid layout
    into a line."""
    # lazy: matplotlib (only drawing the plan's chart needs it)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    every = plan_points(plan)
    if not every:
        return None
    fig = Figure(figsize=(6.4, 3.8))
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    pts = [(ch.total, ch.train.memory_gb["total"]) for ch in every]
    ax.scatter(*zip(*pts), s=10, alpha=0.6, color="#3b7dd8", label=f"{len(pts)} training layouts (estimate)")
    ax.scatter(
        [every[0].total], [every[0].train.memory_gb["total"]], s=80, marker="*", color="#1a9e3a", label="best", zorder=3
    )
    budget = plan.recipe.cluster.device_memory_gb
    xs, ys = [x for x, _ in pts], [y for _, y in pts] + [budget]
    x_lo, x_hi = _span(min(xs), max(xs))
    y_lo, y_hi = _span(min(ys), max(ys))
    own = own_layout(plan)
    if own is not None and own.train.cost is not None:
        x, y = own.total, own.train.memory_gb["total"]
        inside = x_lo <= x <= x_hi * OUTLIER and y_lo <= y <= y_hi * OUTLIER
        if inside:
            x_hi, y_hi = max(x_hi, x * 1.05), max(y_hi, y * 1.05)
        shown = (x, y) if inside else (min(x, x_hi), min(y, y_hi))
        ax.scatter(
            [shown[0]],
            [shown[1]],
            s=60,
            marker="D" if inside else "^",
            facecolors="none",
            edgecolors="black",
            label="the recipe's layout" + ("" if inside else f" (off the chart: {x:,.0f} s, {y:,.0f} GB)"),
            zorder=3,
            clip_on=False,
        )
    ax.axhline(budget, color="grey", linewidth=0.8, linestyle="--", label=f"device memory {budget:g} GB")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)
    ax.set_xlabel("estimated step time, s (rollout + training)")
    ax.set_ylabel("estimated training GB per device")
    ax.set_title(f"{plan.recipe.name} on {plan.recipe.world_size} devices: estimates", fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.subplots_adjust(left=0.12, right=0.97, bottom=0.14, top=0.9)
    return fig


OUTLIER = 1.5  # the recipe's own point farther than this past the valid layouts' span is drawn at the chart's edge


def _span(low: float, high: float) -> tuple[float, float]:
    """Axis limits around [low, high] with a margin (a single value gets a range of its own)."""
    pad = (high - low) * 0.08 or max(abs(high) * 0.1, 1.0)
    return max(0.0, low - pad), high + pad


def plot_plan(plan, path: str | Path | None = None) -> Path | None:
    """A PNG of estimated per-device training memory against estimated step time, one point per valid
    training layout that fits the estimated memory (with its best rollout layout); the best and the recipe's own
    layout are marked, the device memory is the labelled dashed line. Shown in the notebook; written to `path` only
    when one is given."""
    fig = plan_figure(plan)
    if fig is None:
        return None
    if path:
        fig.savefig(Path(path), dpi=90)
        show_image(path)
        return Path(path)
    show_figure(fig)
    return None


def plan_explorer(
    model: str, hardware: str | None = None, overrides: Iterable[str] = (), top: int = 10, nodes: int | None = None
):
    """In JupyterLab: widgets to change the node count and the lengths and re-plan (table and chart), starting from
    the notebook's own `nodes` (None: the recipe's). Headless it returns None and shows nothing: the static cells
    above are the output."""
    if not in_jupyterlab():
        return None
    # lazy: ipywidgets (only the explorer in JupyterLab needs the widgets)
    import ipywidgets as widgets

    # lazy: orjson, yaml (the planner loads when 05_plan plans, not with `import grpolab.notebook`)
    from grpolab.monitor.dashboard import WIDGET_VIEW, offline_note
    from grpolab.plan import io

    recipe = io.load(model, nodes, hardware, list(overrides))
    node_count = widgets.BoundedIntText(value=recipe.cluster.nnodes, min=1, max=4096, description="nodes")
    prompt = widgets.BoundedIntText(value=recipe.data.max_prompt_length, min=1, max=10_000_000, description="prompt")
    response = widgets.BoundedIntText(
        value=recipe.data.max_response_length, min=1, max=10_000_000, description="response"
    )
    button = widgets.Button(description="plan")
    offline = widgets.HTML(offline_note("no kernel: the explorer cannot plan; run this cell again to use it"))
    for control in (node_count, prompt, response, button):  # greyed out without a kernel (grpolab.monitor.dashboard)
        control.add_class("grpolab-needs-kernel")

    def replan(_=None) -> None:
        sets = [
            *overrides,
            f"data.max_prompt_length={prompt.value}",
            f"data.max_response_length={response.value}",
            f"rollout.max_model_len={prompt.value + response.value}",
        ]

        def shown() -> None:
            p = plan_layouts(model, node_count.value, hardware, sets)
            show_plan(p, top)
            plot_plan(p)
            plan_verdict(p, strict=False)

        out.update(captured(shown), raw=True)  # an ordinary output: the saved notebook keeps the last table

    button.on_click(replan)
    box = widgets.VBox([widgets.HBox([node_count, prompt, response, button]), offline])
    display(
        {
            WIDGET_VIEW: {"version_major": 2, "version_minor": 0, "model_id": box.model_id},
            "text/plain": "(the explorer's controls: JupyterLab only)",
        },
        raw=True,
    )
    out = display({"text/plain": "(change the inputs above, then press plan)"}, raw=True, display_id=True)
    return box


def plan_verdict(plan, strict: bool = True) -> list[str]:
    """The best layout as overrides (a YAML list for papermill -y); with no valid layout, the smallest cluster
    that fits and a NotebookStop when `strict`."""
    # lazy: yaml (the planner loads when 05_plan plans, not with `import grpolab.notebook`)
    from grpolab.plan import search

    listed = search.choices(plan, 1)
    if listed and not plan.recipe_errors:
        sets = listed[0].overrides()
        print("best layout (an estimate ranked it first), as overrides:\n  overrides: [" + ", ".join(sets) + "]")
        return sets
    if plan.recipe_errors:
        message = f"{plan.recipe.name} has errors that no layout fixes:\n{problems_text(plan.recipe_errors)}"
    else:
        c = plan.recipe.cluster
        smallest = search.smallest_cluster(*plan.inputs) if plan.inputs else None
        message = f"no layout fits {c.nnodes} x {c.devices_per_node} {c.hardware}; " + (
            f"the smallest cluster that fits is {smallest} nodes (nodes = {smallest})"
            if smallest
            else f"none fits up to {search.SEARCH_NODES[-1]} nodes"
        )
    if strict:
        raise NotebookStop(message)
    print(message)
    return []


def plan_overrides(model: str, overrides: Iterable[str] = ()) -> list[str]:
    """run.ipynb with `plan`: the overrides with the top layout of the plan added last (it then wins)."""
    sets = plan_verdict(plan_layouts(model, None, None, overrides))
    return [*overrides, *sets]


def show_modes(plan) -> list:
    """The schedule modes and node splits on the plan's nodes (grpolab.plan.modes, as `grpolab plan` prints them):
    the recipe's own schedule, the table best first, and whether asynchronous training pays off here."""
    # lazy: yaml (the planner loads when 05_plan plans, not with `import grpolab.notebook`)
    from grpolab.plan import modes, table

    if plan.facts is None or not plan.recipe.engine.priced:
        print(
            "no modes to compare: "
            + ("no model facts" if plan.facts is None else "the CPU trainer has no rollout engine")
        )
        return []
    ranked = modes.compare(plan.recipe, plan.facts)
    lines = [f"the recipe's schedule: {describe(plan.recipe)}", *table.modes_text(ranked)]
    show_html(
        f"<pre style='font-family:monospace;font-size:85%'>{html.escape(chr(10).join(lines))}</pre>", "\n".join(lines)
    )
    return ranked
