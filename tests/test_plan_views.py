"""05_plan's presentation: rollout variants with the same estimates share their training layout's row, a layout with
little memory left is flagged, the recipe's own broken layout names the rule it breaks, and the chart plots what its
text says (valid layouts that fit, one point each) with a labelled device-memory line. No kernel, no Ray."""

from __future__ import annotations

import pytest

from grpolab import notebook as nb
from grpolab.plan import table
from grpolab.rules.gate import gate


def _shown(capsys, plan, top):
    listed = nb.show_plan(plan, top=top)
    return listed, capsys.readouterr().out


def test_rollout_variants_with_the_same_estimates_share_one_row(capsys):
    """The issue's case: qwen3_5_122b_a10b_32k's ten best are two training layouts times five rollouts with the
    same figures. Each row is now a distinct training layout (with its rollout variants named in one cell), and
    `top` rows are distinct rows."""
    plan = nb.plan_layouts("qwen3_5_122b_a10b_32k")
    listed, out = _shown(capsys, plan, 4)
    body = [line for line in out.splitlines()[2:] if line.split("  ")[0][:1].isdigit()]
    assert len(body) == 4, out
    trains = [line.split("  ")[1] for line in body]
    assert len(set(trains)) == 4, trains  # no training layout twice
    figures = [tuple(line.split("  ")[3:8]) + (line.split("  ")[1],) for line in body]
    assert len(set(figures)) == len(figures)
    # the first row stands for its rollout variants with the same figures: its label spans as many ranks as it names
    label, variants = body[0].split("  ")[0], body[0].split("  ")[2]
    low, high = map(int, label.split("-"))
    assert "same estimates" in variants and high - low + 1 == variants.count(" dp") > 1, body[0]
    assert len(listed) > 4  # the rows stand for every layout grouped in them


@pytest.mark.parametrize("model", ["glm5_2", "qwen3_30b_a3b", "qwen3_8b"])
def test_no_two_rows_say_the_same(capsys, model):
    """Held on the other shipped recipes: rows differ in their training layout or their figures."""
    _, out = _shown(capsys, nb.plan_layouts(model), 10)
    body = [line.split("  ") for line in out.splitlines()[2:] if line.split("  ")[0][:1].isdigit()]
    keys = [(r[1], *r[3:8]) for r in body]
    assert keys and len(keys) == len(set(keys)), body


def test_a_layout_with_little_memory_left_is_flagged(capsys):
    """glm5_2 on 16 nodes: layouts leaving 0.6 of 64 GB free get a warning in their row and a note."""
    plan = nb.plan_layouts("glm5_2", nodes=16)
    listed, out = _shown(capsys, plan, 10)
    low = [ch for ch in listed if table.low_memory(ch)]
    assert low, "expected a layout under the margin on 16 nodes"
    assert "warning, little memory left (estimate)" in out
    assert f"under {table.MIN_FREE_SHARE:.0%}: little margin" in out
    assert all(ch.train.memory_gb["headroom"] < table.MIN_FREE_SHARE * 64 for ch in low)


def test_the_recipes_own_broken_layout_names_the_rule():
    recipe_overrides = ["train.tp=3"]
    plan = nb.plan_layouts("qwen3_8b", overrides=recipe_overrides)
    from grpolab.plan import search

    own = search.own_choice(plan)
    assert own is not None and not own.valid
    text = table.own_text(own)
    broken = {p.rule for p in gate(plan.recipe) if p.severity == "error"}
    assert "it breaks rule" in text and any(rule in text for rule in broken), (text, broken)
    assert "grpolab check says which" not in text


def test_the_chart_plots_valid_layouts_that_fit_once_each_with_a_labelled_budget_line():
    plan = nb.plan_layouts("qwen3_30b_a3b")
    points = nb.plan_points(plan)
    assert points and all(ch.fits for ch in points)
    keys = [
        (ch.train.layout.parallel(), ch.train.layout.param_offload, ch.train.layout.optimizer_offload) for ch in points
    ]
    assert len(keys) == len(set(keys))  # one point per training layout
    fig = nb.plan_figure(plan)
    ax = fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert "device memory 64 GB" in labels and f"{len(points)} training layouts (estimate)" in labels
    plotted = sum(len(c.get_offsets()) for c in ax.collections[:1])
    assert plotted == len(points)
    assert max(ch.train.memory_gb["total"] for ch in points) <= plan.recipe.cluster.device_memory_gb


def test_the_explorer_says_without_a_kernel_that_it_cannot_plan(monkeypatch):
    """Reopened without a kernel (ipywidgets marks its widgets disconnected) the explorer's inputs are greyed out
    and a note says why and how to use it again; with a kernel the note is hidden by the same style."""
    import ipywidgets as widgets

    from grpolab.monitor.dashboard import DISCONNECTED

    monkeypatch.setenv("JPY_SESSION_NAME", "05_plan.ipynb")  # as in JupyterLab
    box = nb.plan_explorer("glm5_2")
    controls, note = box.children
    assert all("grpolab-needs-kernel" in c._dom_classes for c in controls.children)
    assert isinstance(note, widgets.HTML) and "run this cell again" in note.value
    assert (
        f".{DISCONNECTED} .grpolab-offline{{display:inline}}" in note.value
        and ".grpolab-offline{display:none}" in note.value
    )
    box.close()


def test_a_model_without_a_recipe_has_no_own_layout_to_blame_and_the_explorer_keeps_the_nodes(capsys, monkeypatch):
    """Issue 44, 05_plan with a hub id: base.yaml's default layout (tp1 pp1: about 2,500 GB a device) was drawn as
    "the recipe's layout", squashing 262 valid layouts into a line, and the table said "the recipe's own layout
    breaks rules" when the user gave no recipe; the explorer planned for 1 node although the notebook said 32."""
    plan = nb.plan_layouts("deepseek-ai/DeepSeek-V3", 32, "gpu-h100")
    _, out = _shown(capsys, plan, 3)
    assert "the recipe's own layout" not in out and "is a model, not a recipe: planned on params/base.yaml" in out
    ax = nb.plan_figure(plan).axes[0]
    assert not [label for label in ax.get_legend_handles_labels()[1] if "recipe's layout" in label]
    top = max(ch.train.memory_gb["total"] for ch in nb.plan_points(plan))
    assert ax.get_ylim()[1] < 2 * max(top, plan.recipe.cluster.device_memory_gb)  # the valid layouts fill the chart
    monkeypatch.setenv("JPY_SESSION_NAME", "05_plan.ipynb")
    box = nb.plan_explorer("deepseek-ai/DeepSeek-V3", "gpu-h100", nodes=32)
    assert box.children[0].children[0].value == 32
    box.close()


def test_a_recipes_own_layout_far_off_the_valid_ones_is_drawn_at_the_edge_with_its_figures():
    whole = ["train.tp=1", "train.pp=1", "train.ep=1", "train.etp=1", "train.pp_layout=null", "train.vpp=1"]
    plan = nb.plan_layouts("glm5_2", overrides=whole)  # GLM-5.2 unsplit: about 1,400 GB a device
    own = nb.own_layout(plan)
    assert own is not None and own.train.memory_gb["total"] > 10 * plan.recipe.cluster.device_memory_gb
    ax = nb.plan_figure(plan).axes[0]
    (label,) = [label for label in ax.get_legend_handles_labels()[1] if "recipe's layout" in label]
    assert f"off the chart: {own.total:,.0f} s, {own.train.memory_gb['total']:,.0f} GB" in label
    assert ax.get_ylim()[1] < own.train.memory_gb["total"]
