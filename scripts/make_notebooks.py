"""Write notebooks/01_setup, 02_preflight, 03_launch, 04_monitor, 05_plan, 06_compare and run.ipynb from one
description.

    .venv/bin/python scripts/make_notebooks.py            # (re)write the seven notebooks
    .venv/bin/python scripts/make_notebooks.py --check    # exit 1 if a notebook's cells differ from this script

`--check` compares what this script writes: the cells' types, sources, tags and ids, and the kernelspec. Outputs,
execution counts and the metadata Jupyter adds when a notebook is run and saved in place (timings, widget state,
trust, the kernel's language_info) are ignored: a user who ran the committed notebooks has not made them stale.
(`grpolab lab` opens copies under runs/lab/ anyway, so the committed notebooks stay templates.)

Every notebook: a markdown header (purpose, papermill command), an import cell, exactly one cell tagged
`parameters` (typed, commented defaults that `papermill --help-notebook` lists), then the cell that validates the
parameters (grpolab.notebook.check_parameters), then short cells that only call grpolab functions. Cells tagged
`report` are the ones run.ipynb shows again from the executed stage notebook. The notebooks are written without
outputs, with kernelspec python3 and stable cell ids (regenerating gives the same bytes).

Parameter help comments must not contain '=': papermill's parser skips an assignment line with two of them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "notebooks"
IMPORTS = "from typing import Optional\n\nfrom grpolab import notebook as nb"
PAPERMILL_HINT = '# papermill: -p NAME VALUE; a list with -y "overrides: [rollout.tp=16, trainer.total_steps=40]"'

# name -> (annotation, default as Python source, help). One place for the shared parameters' wording.
P = {
    "model": ("str", '"tiny"', "recipe name under params/recipes, or a path to a recipe YAML file"),
    "overrides": ("list[str]", "[]", "recipe overrides applied last: dotted keys with values, as a YAML list"),
    "ray_address": (
        "Optional[str]",
        "None",
        "Ray cluster (HOST:6379 or http://HOST:8265); None: RAY_ADDRESS, else the embedded local head",
    ),
    "dry_run": ("bool", "False", "True: validate, preflight and show the launch, but submit nothing"),
    "wait": ("bool", "True", "follow the run until it ends (a progress bar; headless a line every 30 s)"),
    "run_id": ("Optional[str]", "None", "name of the new run (letters, digits, . _ -); None: generated"),
    "resume": (
        "Optional[str]",
        "None",
        "a run to continue from its latest complete checkpoint (grpolab resume): its recipe with `overrides`; "
        "None: a new run of `model`",
    ),
}

MONITOR_PARAMS = {
    "run_id": ("Optional[str]", "None", "run id, run directory or metrics.jsonl; None: the latest run"),
    "wait": ("bool", "True", "headless: follow the run until it ends before showing it"),
    "live": (
        "Optional[bool]",
        "None",
        "live ipywidgets dashboard; None: live in JupyterLab, a static PNG under papermill or nbval",
    ),
    "interval": ("float", "5.0", "seconds between refreshes of the live dashboard"),
    "strict": ("bool", "True", "end with an error when the run FAILED or was STOPPED (papermill exits non-zero)"),
    "compare_with": ("list[str]", "[]", "other runs (ids) to overlay on this run's comparison chart"),
    "smoothing": ("float", "0.6", "TensorBoard-style smoothing of the comparison chart, 0 (none) to 0.95"),
}


def params_source(spec: dict) -> str:
    lines = [PAPERMILL_HINT]
    for name, (annotation, default, help_text) in spec.items():
        if "=" in help_text:
            raise ValueError(f"help of parameter {name!r} contains '=': papermill --help-notebook would skip it")
        lines.append(f"{name}: {annotation} = {default}  # {help_text}")
    return "\n".join(lines)


def pick(*names: str, **changed) -> dict:
    out = {n: P[n] for n in names}
    for name, (default, help_text) in changed.items():
        out[name] = (out[name][0], default, help_text)
    return out


# A notebook: (title and intro markdown, parameters, validation source, [(markdown or None, code, tags)]).
NOTEBOOKS = {
    "01_setup": (
        """# 01 · Setup: choose a recipe, apply overrides, validate

Loads a recipe (a name under `params/recipes/` or a path to a YAML file), applies `overrides` last, and checks it
without touching a cluster: the schema, every rule (parallel layout, batches, lengths, env, stack, memory) and the
rendered launch composed against the installed verl. It shows the problems (errors first, each with its fix), the
fully resolved recipe, the rendered launch (verl overrides, env, bash script) and the data and reward (a sample of
the data, a prompt-length histogram, the reward's dry run: `grpolab data`); it ends with an error when the recipe
or its data and reward have errors.

With `script` (a verl launch script, `.sh`) it first imports the script as a recipe (as `grpolab import` does,
nothing is launched) and shows the imported recipe and what it could not reproduce; `model` is then ignored.

```bash
.venv/bin/papermill notebooks/01_setup.ipynb out.ipynb -p model glm5_2 -y "overrides: [rollout.tp=16]"
.venv/bin/papermill notebooks/01_setup.ipynb out.ipynb -p script tests/data/import/run_qwen3_8b_grpo_npu.sh
```""",
        {
            **pick("model", "overrides"),
            "script": ("Optional[str]", "None", "a verl launch script (.sh) to turn into the recipe; None: use model"),
        },
        "params = nb.check_parameters(globals())\nmodel = nb.from_script(script, model)\n"
        "recipe, problems = nb.check_recipe(model, overrides)\nnb.stop_on_dropped(problems, recipe, overrides)",
        [
            (
                "## Problems\nErrors first; a warning does not block the launch.",
                'nb.show_problems(problems, title=f"recipe {model}")',
                ["report"],
            ),
            (
                "## The resolved recipe\nEvery key, after the layers in `defaults:` and the overrides (secrets redacted).",
                "nb.show_recipe(recipe)",
                [],
            ),
            (
                "## The rendered launch\nWhat would run on the cluster: entrypoint, verl overrides, env, and the same "
                "as a standalone bash script (marked NOT LAUNCHABLE while the recipe has errors).",
                "nb.show_launch(recipe, problems)",
                [],
            ),
            (
                "## Data and reward\nThe first rows of each data file (columns, prompts, data sources), the prompt "
                "lengths against `data.max_prompt_length` with the model's tokenizer when it is on disk, and the "
                "reward's dry run on those rows (as `grpolab data`).",
                "data_problems = nb.show_data(recipe, problems)",
                ["report"],
            ),
            ("## Verdict", "nb.stop_on_errors(problems + data_problems, recipe, model)", ["report"]),
        ],
    ),
    "02_preflight": (
        """# 02 · Preflight: check the cluster and every node before launching

Connects to the Ray cluster (`ray_address`, else `RAY_ADDRESS`, else the embedded local head, started when it
does not run) and checks every alive node in parallel: devices, torch_npu / CUDA, CANN, stack pins, the env as
the job will see it, model weights, data files, checkpoint space, HCCL ports, open-file limit. The table lists
failures first, each with its fix. A failed check ends the notebook with an error, unless `dry_run` is True.

```bash
.venv/bin/papermill notebooks/02_preflight.ipynb out.ipynb -p model glm5_2 -p ray_address HEAD:6379
```""",
        {
            **pick("model", "overrides", "ray_address"),
            "dry_run": (
                "bool",
                "False",
                "True: nothing will be launched, so failed checks are reported but do not stop",
            ),
            "timeout_s": ("Optional[float]", "None", "seconds to wait for the per-node checks; None: the default"),
        },
        "params = nb.check_parameters(globals())\nnb.check_address(ray_address)\nrecipe = nb.load(model, overrides)",
        [
            (
                "## The checks\nFailures first, then warnings, passes, and checks that do not apply here (with why).",
                "report = nb.preflight(recipe, address=ray_address, timeout_s=timeout_s)",
                ["report"],
            ),
            (
                "## The embedded Ray head\nWhether it runs, and how to stop it when you are done "
                "(`grpolab head stop`).",
                "nb.show_head(ray_address)",
                [],
            ),
            ("## Verdict", "nb.preflight_verdict(report, dry_run=dry_run)", ["report"]),
        ],
    ),
    "03_launch": (
        """# 03 · Launch: submit the run as a Ray job, or show what would be submitted

Validates the recipe again (errors stop the launch before anything is created), creates `runs/<run_id>/` and
submits the job to the Ray cluster with the recipe's env in its runtime_env. With `dry_run` it shows what would
be submitted (entrypoint, env with secrets redacted, verl overrides, bash script) and submits nothing. With
`wait` it follows the run until it ends and ends with an error when the run failed, naming the cause.

```bash
.venv/bin/papermill notebooks/03_launch.ipynb out.ipynb -p model tiny -y "overrides: [trainer.total_steps=40]"
.venv/bin/papermill notebooks/03_launch.ipynb out.ipynb -p model glm5_2 -p dry_run True
```

With `resume` it continues that run instead (`grpolab resume RUN`): its recipe and `overrides`, from its latest
complete checkpoint, as a new run linked to it; a resume that would be wrong (no complete checkpoint, nothing left
to train, data changed, a change the checkpoint cannot take) stops the notebook before anything is submitted.""",
        pick(
            "model",
            "overrides",
            "ray_address",
            "dry_run",
            "wait",
            "run_id",
            "resume",
            dry_run=("False", "True: show what would be submitted (entrypoint, env, overrides, script) only"),
            wait=(
                "True",
                "follow the run until it ends (a progress bar; headless a line every 30 s); error if it failed",
            ),
        ),
        "params = nb.check_parameters(globals())\nnb.check_address(ray_address)\nnb.check_new_run_id(run_id)\n"
        "resumed = nb.resume_plan(resume, overrides) if resume else None\n"
        "recipe = resumed.recipe if resumed else nb.load(model, overrides)",
        [
            (
                "## Submit (or show what would be submitted)",
                "run = nb.launch(recipe, address=ray_address, run_id=run_id, dry_run=dry_run, resume=resumed)",
                ["report"],
            ),
            (
                "## Follow the run\nA progress bar in JupyterLab, a line every 30 s headless (step / total, elapsed, "
                "remaining, reward, validation accuracy); the curves live in `04_monitor.ipynb`.",
                "status = nb.follow(run) if wait else None",
                [],
            ),
            ("## Outcome", "nb.verdict(run, status)", ["report"]),
        ],
    ),
    "04_monitor": (
        """# 04 · Monitor: status, curves, alerts and the cause of a failure

Shows a run (by default the latest one under `runs/`): its state, the latest key metrics, GRPO health alerts,
the diagnosis of a failure read from its whole log (the cause, the first rank and node that failed or stalled,
the fix: the same as `grpolab diagnose RUN`), the restarts its driver made on the cluster (`restart 2 of 3 after
comm-timeout on node X at step 1210`, one line per attempt), every node it ran on (utilisation and memory, with
alerts that name a straggler node, device memory creeping up, a host near its RAM limit), and the curves. In
JupyterLab (`live` None or True) a dashboard refreshes itself every `interval` seconds and has a stop button; headless (papermill, nbval) the notebook
follows the run until it ends (`wait`) and draws the curves as a PNG.

```bash
.venv/bin/papermill notebooks/04_monitor.ipynb out.ipynb -p run_id tiny-20260101-120000-abc123
```""",
        MONITOR_PARAMS,
        "params = nb.check_parameters(globals())\nrun = nb.find_run(run_id)",
        [
            (
                "## Watch\nLive in JupyterLab; headless, follow the run until it ends (when `wait`).",
                "dashboard = nb.watch(run, wait=wait, live=live, interval=interval)",
                [],
            ),
            (
                "## The run\nState, restarts, latest metrics, alerts grouped by rule (click one to open it), the nodes "
                "and their alerts, failure cause, the thresholds that applied, curves (PNG in "
                "`runs/<run_id>/curves.png`) and one small panel per node (`runs/<run_id>/nodes.png`).",
                "data = nb.show_run(run, picture=dashboard is None, dashboard=dashboard)",
                ["report"],
            ),
            (
                "## Comparison chart\nThe run's curves (and those of `compare_with`) in one picture (a PNG, kept with the "
                "notebook): a panel per curve, a colour per run, smoothed by `smoothing`; the recipe and stack "
                "differences above it, the logs below. Drawn anew at each refresh of the live dashboard, while its "
                "kernel runs. For a wall-clock x axis or other runs, use 06_compare.",
                "comparison = nb.compare_runs([run, *compare_with], smoothing=smoothing, dashboard=dashboard)",
                [],
            ),
            (
                "## Asynchronous training\nFor a run in an asynchronous mode (`schedule.mode` colocate_async or "
                "separate_async): how old the trained samples were, the ones dropped as stale, the importance ratio "
                "and mismatch KL between the training and the rollout policy, the trainer's wait, their alerts and "
                "curves (docs/async.md).",
                "offpolicy = nb.show_offpolicy(run)",
                ["report"],
            ),
            (
                "## The embedded Ray head\nWhether it runs, and how to stop it when you are done "
                "(`grpolab head stop`).",
                "nb.show_head()",
                [],
            ),
            ("## Verdict", "nb.verdict(run, strict=strict) if dashboard is None else None", ["report"]),
        ],
    ),
    "05_plan": (
        """# 05 · Plan: every valid parallel layout of a model on a cluster, ranked

Enumerates the training layouts (tp, pp, cp, ep, etp, vpp, a pipeline layout where the model needs one) and the
rollout layouts (tp, dp, ep) of a recipe's model (or of any model `grpolab card` knows, on `params/base.yaml`) on
`nodes` nodes of `hardware`, keeps those that pass every rule of `grpolab check`, and ranks them by an ESTIMATED
step time, and compares verl's trainer modes (sync and asynchronous) on the same nodes. The cost model is
simple, held within 2x of 34 published runs (12 asynchronous): see the README section on
`grpolab plan` for its calibration table and what it leaves out. In
JupyterLab, widgets below re-plan for other node counts and lengths; headless the output is static.

```bash
.venv/bin/papermill notebooks/05_plan.ipynb out.ipynb -p model glm5_2 -p nodes 16
```""",
        {
            "model": (
                "str",
                '"glm5_2"',
                "recipe name under params/recipes, a path to a recipe, or a model (card, card file, hub id, family name)",
            ),
            "nodes": ("Optional[int]", "None", "nodes to plan for; None: the recipe's cluster.nnodes"),
            "hardware": ("Optional[str]", "None", "profile in params/hardware (e.g. ascend-a3); None: the recipe's"),
            "overrides": P["overrides"],
            "top": ("int", "10", "how many layouts the table lists, best first"),
        },
        "params = nb.check_parameters(globals())\nplan = nb.plan_layouts(model, nodes, hardware, overrides)",
        [
            (
                "## Ranked layouts\nBest first; every figure is an estimate. `why`: the largest estimated costs, and "
                "what a layout adds over the best.",
                "listed = nb.show_plan(plan, top=top)",
                ["report"],
            ),
            (
                "## Memory against estimated step time\nOne point per valid training layout that fits the estimated "
                "memory (with its best rollout); the dashed line is the device memory.",
                "chart = nb.plot_plan(plan)",
                [],
            ),
            (
                "## Modes: sync or asynchronous\nverl's trainer modes (sync, colocate_async, separate_async on each "
                "split of the nodes into trainer and rollout-only nodes, with and without step switching), each at its "
                "best layout; estimates, and whether asynchronous training pays off here (docs/async.md).",
                "ranked = nb.show_modes(plan)",
                ["report"],
            ),
            (
                "## Explore (JupyterLab only)\nChange the node count and the lengths, then press *plan*.",
                "explorer = nb.plan_explorer(model, hardware, overrides, top=top, nodes=nodes)",
                [],
            ),
            (
                "## Verdict\nThe best layout as overrides, or the smallest cluster that fits.",
                "best = nb.plan_verdict(plan)",
                ["report"],
            ),
        ],
    ),
    "06_compare": (
        """# 06 · Compare: several runs overlaid, with what differs between them

Overlays the curves of `runs` (by default the two latest runs) in one chart: a panel per curve, a colour per run,
the x axis the step or wall-clock time (`x`). Above it: the keys whose values differ between the runs' records
(the resolved recipe, the versions of the stack, the launch); below it: the tail of each run's log.

```bash
.venv/bin/papermill notebooks/06_compare.ipynb out.ipynb -p runs '[tiny-a, tiny-b]'
.venv/bin/papermill notebooks/06_compare.ipynb out.ipynb -y "runs: [tiny-a, tiny-b]" -p x wall -p smoothing 0.9
```""",
        {
            "runs": ("list[str]", "[]", "run ids or run directories to overlay; empty: the two latest runs"),
            "x": ("str", '"step"', "the x axis: step, or wall (seconds of summed step time)"),
            "smoothing": ("float", "0.6", "TensorBoard-style smoothing, 0 (none) to 0.95; kept with the output"),
            "log_lines": ("int", "40", "how many of the last lines of each run's log to show"),
        },
        "params = nb.check_parameters(globals())\nruns = nb.latest_runs(runs)",
        [
            (
                "## Differences, curves and logs\nThe recipe and stack differences first, then the chart, then the "
                "logs.",
                "comparison = nb.compare_runs(runs, x=x, smoothing=smoothing, log_lines=log_lines)",
                ["report"],
            ),
        ],
    ),
    "run": (
        """# GRPO Lab: one run, from recipe to curves

Runs the four stage notebooks in order with papermill, each in a fresh kernel: **01_setup** (validate),
**02_preflight** (check the cluster), **03_launch** (submit), **04_monitor** (follow the run, curves, alerts).
It stops at the first stage that fails and says why (papermill then exits non-zero). The executed stage
notebooks are kept in `runs/<run_id>/notebooks/`. With `dry_run` it validates, reports preflight (failed checks
do not stop it), shows the rendered launch and submits nothing. With `plan` it first adds the parallel layout that
`grpolab plan` ranks first (an estimate) to the overrides. With `resume` the launch continues that run from its
latest complete checkpoint (03_launch's `resume`: its recipe with `overrides`; setup and preflight check `model`).

```bash
.venv/bin/papermill notebooks/run.ipynb out.ipynb -p model tiny
.venv/bin/papermill notebooks/run.ipynb out.ipynb -p model glm5_2 -p dry_run True
.venv/bin/papermill notebooks/run.ipynb out.ipynb -p model qwen3_30b_a3b -p plan True -p dry_run True
.venv/bin/papermill notebooks/run.ipynb out.ipynb -p model glm5_2 -p ray_address HEAD:6379
```""",
        {
            **pick("model", "overrides", "ray_address", "dry_run", "wait", "run_id", "resume"),
            "plan": ("bool", "False", "True: add the top layout of grpolab plan (05_plan) to the overrides first"),
        },
        "params = nb.check_parameters(globals())\nstages = nb.Stages(params)",
        [
            (
                "## 0 · Plan\nWith `plan`, the layout the planner ranks first is added to the overrides (an estimate "
                "ranked it).",
                "overrides = nb.plan_overrides(model, overrides) if plan else overrides",
                [],
            ),
            ("## 1 · Setup", 'stages.run("01_setup", model=model, overrides=overrides)', []),
            (
                "## 2 · Preflight",
                'stages.run("02_preflight", model=model, overrides=overrides, ray_address=ray_address, dry_run=dry_run)',
                [],
            ),
            (
                "## 3 · Launch",
                'stages.run("03_launch", model=model, overrides=overrides, ray_address=ray_address, dry_run=dry_run,\n'
                "           wait=False, run_id=stages.run_id, resume=resume)",
                [],
            ),
            (
                "## 4 · Monitor\nFollows the run until it ends (skipped in a dry run).",
                'stages.run("04_monitor", run_id=stages.run_id, wait=wait, live=False, strict=True)',
                [],
            ),
            ("## Results\nThe stages, the validation-accuracy curve and the final figures.", "stages.finish()", []),
        ],
    ),
}


def build(stem: str) -> nbformat.NotebookNode:
    intro, params, validation, body = NOTEBOOKS[stem]
    cells = [
        nbformat.v4.new_markdown_cell(intro),
        nbformat.v4.new_code_cell(IMPORTS),
        nbformat.v4.new_code_cell(params_source(params), metadata={"tags": ["parameters"]}),
        nbformat.v4.new_markdown_cell(
            "Check the parameters: a misspelled name, a wrong type, an unknown recipe or "
            "a bad override stops the notebook here."
        ),
        nbformat.v4.new_code_cell(validation),
    ]
    for markdown, code, tags in body:
        if markdown:
            cells.append(nbformat.v4.new_markdown_cell(markdown))
        cells.append(nbformat.v4.new_code_cell(code, metadata={"tags": tags} if tags else {}))
    for index, cell in enumerate(cells):
        cell["id"] = f"{stem.replace('_', '-')}-{index:02d}"
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
        "language_info": {"name": "python"},
    }
    nbformat.validate(nb)
    return nb


def text(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def cells_of(nb: nbformat.NotebookNode) -> list[tuple]:
    """What this script decides about a notebook: each cell's type, id, source and tags, and the kernelspec."""
    kernel = dict(nb.metadata.get("kernelspec", {}))
    return [("kernelspec", kernel.get("name"))] + [
        (c.cell_type, c.get("id"), c.source, tuple(c.get("metadata", {}).get("tags", []))) for c in nb.cells
    ]


def differs(path: Path, wanted: nbformat.NotebookNode) -> bool:
    """True when the notebook at `path` is missing, unreadable, or its cells are not what this script writes."""
    try:
        found = nbformat.read(str(path), as_version=4)
    except Exception:
        return True
    return cells_of(found) != cells_of(wanted)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed notebooks; write nothing")
    args = parser.parse_args(argv)
    stale = []
    for stem in NOTEBOOKS:
        path = OUT / f"{stem}.ipynb"
        book = build(stem)
        if args.check:
            if differs(path, book):
                stale.append(str(path.relative_to(ROOT)))
        else:
            OUT.mkdir(exist_ok=True)
            path.write_text(text(book))
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print(f"out of date (run scripts/make_notebooks.py): {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
