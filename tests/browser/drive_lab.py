"""Drives JupyterLab in Chromium (playwright, in its own venv: scripts/setup.sh --tools) for tests/test_browser.py.

    .venv-browser/bin/python tests/browser/drive_lab.py URL METRICS PENDING OUT_DIR

Opens 04_monitor.ipynb at URL, runs all its cells (JupyterLab's own Run All), reads the asynchronous-training
cell (its figures and the alt text of its off-policy curves), then appends the lines of PENDING to
METRICS (the run's metrics.jsonl, as a trainer would) in chunks and reads, after each, the last step of the
comparison chart in the page (its picture's alt text) and of the dashboard's state line. Then it saves
the notebook, shuts its kernel down, ends the run (its job's own end record, job.json, as the job writes it),
reloads the page and reads the state line and the summary again. Then 04_monitor on two ended runs, run_id changed
in its parameters cell: one whose training collapsed and one that FAILED, and what each shows. Last, in 01_setup,
Run All with the default model, then with model 'tinyy' in the same kernel, then with a misspelled parameter typed
into the parameters cell (`overide = [...]`, then `modle = "tiny"` for the model line), and what each cell shows
then. Prints one JSON document; screenshots go to OUT_DIR. Imports nothing from grpolab: this venv has only
playwright.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

# a wait ends as soon as the page shows what it waits for: the limit only matters on a machine under load, where
# a cold kernel's first Run All (imports, the first figure) took over 60 s in CI beside the rest of the suite
TIMEOUT_MS = 180_000


def chart_last_step(page) -> float | None:
    """The last step the comparison chart shows: its picture's alt text names each run with its last step (None:
    no chart)."""
    return page.evaluate(
        """() => {
        const charts = Array.from(document.querySelectorAll("img[alt*=' steps)']"));
        let best = null;
        for (const img of charts) for (const m of img.alt.matchAll(/\\((\\d+) steps\\)/g))
            if (best === null || Number(m[1]) > best) best = Number(m[1]);
        return best;
    }"""
    )


def state_text(page) -> str:
    """The text of every output that holds a run's state line (the dashboard's, 03's)."""
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('.jp-OutputArea-output'))
            .map(o => o.innerText).filter(t => /as of|RUNNING|SUCCEEDED|step \\d+/.test(t)).join('\\n---\\n')"""
    )


def state_step(text: str) -> int | None:
    found = re.findall(r"step (\d+)/", text)
    return int(found[0]) if found else None


def command(page, name: str) -> None:
    """Run one of JupyterLab's own commands (what its menus call), with the app the page exposes
    (`--LabApp.expose_app_in_browser`)."""
    page.evaluate(f"() => {{ window.jupyterapp.commands.execute({name!r}); return null; }}")


def run_all(page) -> None:
    command(page, "notebook:run-all-cells")  # Run > Run All Cells


def save(page) -> None:
    command(page, "docmanager:save")
    time.sleep(1.5)


def shut_down_kernel(page) -> None:
    page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.shutdown()")
    time.sleep(2)


def cell_outputs(page) -> list[str]:
    """The text of each code cell's outputs in the current notebook, in order."""
    return page.evaluate(
        """() => Array.from(window.jupyterapp.shell.currentWidget.content.node.querySelectorAll('.jp-CodeCell'))
            .map(c => { const o = c.querySelector('.jp-OutputArea'); return o ? o.innerText : ''; })"""
    )


def wait_for_kernel(page) -> None:
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget; const c = w && w.sessionContext; "
        "return c && c.session && c.session.kernel && c.session.kernel.status === 'idle'; }",
        timeout=TIMEOUT_MS,
    )


def open_notebook(page, path: str) -> None:
    """Open `path` (or bring its tab to the front) and wait until it is the current notebook with an idle kernel:
    Run All acts on the current one, whatever else JupyterLab restored."""
    # the command's promise resolves to the notebook widget, which playwright cannot hand back: return nothing
    page.evaluate(
        f"() => {{ window.jupyterapp.commands.execute('docmanager:open', {{path: {path!r}}}); return null; }}"
    )
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget; return w && w.context && "
        f"w.context.path === {path!r}; }}",
        timeout=TIMEOUT_MS,
    )
    wait_for_kernel(page)


def set_parameters(page, replace: list[tuple[str, str]], append: str = "") -> None:
    """Edit the cell tagged parameters as a user types into it: each (old, new) replaced, `append` added below."""
    page.evaluate(
        """(arg) => { const cells = window.jupyterapp.shell.currentWidget.content.widgets;
            const p = cells.find(c => (c.model.getMetadata('tags') || []).includes('parameters'));
            let src = p.model.sharedModel.getSource();
            for (const [a, b] of arg.replace) src = src.replace(a, b);
            p.model.sharedModel.setSource(src + (arg.append ? '\\n' + arg.append : '')); }""",
        {"replace": replace, "append": append},
    )


def run_all_until(page, pattern: str, out: Path, shot: str) -> list[str]:
    """Run All, wait until the page shows `pattern` and the kernel is idle; the cells' outputs then."""
    run_all(page)
    page.wait_for_function(f"() => new RegExp({pattern!r}).test(document.body.innerText)", timeout=TIMEOUT_MS)
    time.sleep(2)  # whatever Run All would still run after a stop has had its time
    wait_for_kernel(page)
    page.screenshot(path=str(out / shot), full_page=True)
    return cell_outputs(page)


def ended_runs(page, out: Path) -> dict:
    """04_monitor on a run whose training collapsed, then on a run that FAILED: what each shows."""
    set_parameters(page, [('"browser-live"', '"browser-collapsed"')])
    collapsed = run_all_until(page, "training collapsed at step", out, "collapsed.png")
    set_parameters(page, [('"browser-collapsed"', '"browser-failed"')])
    failed = run_all_until(page, "failure +device-oom", out, "failed.png")
    return {"collapsed": collapsed, "failed": failed}


def misspelled_parameters(page, out: Path) -> dict:
    """01_setup in JupyterLab (nothing injected): a misspelled name typed into the parameters cell itself."""
    set_parameters(page, [('"tinyy"', '"tiny"')], append='overide = ["rollout.tp=3"]')
    overide = run_all_until(page, "unknown parameter 'overide'", out, "overide.png")
    set_parameters(page, [('\noveride = ["rollout.tp=3"]', ""), ('model: str = "tiny"', 'modle = "tiny"')])
    modle = run_all_until(page, "unknown parameter 'modle'", out, "modle.png")
    return {"overide": overide, "modle": modle}


def run_all_after_a_bad_model(page, out: Path) -> dict:
    """01_setup: Run All with the default model (tiny), then the parameters cell changed to model 'tinyy' and Run
    All again in the same kernel: what each cell shows afterwards."""
    open_notebook(page, "01_setup.ipynb")
    run_all(page)
    page.wait_for_function("() => /ready to launch/.test(document.body.innerText)", timeout=TIMEOUT_MS)
    good = cell_outputs(page)
    page.evaluate(
        """() => { const cells = window.jupyterapp.shell.currentWidget.content.widgets;
            const p = cells.find(c => (c.model.getMetadata('tags') || []).includes('parameters'));
            p.model.sharedModel.setSource(p.model.sharedModel.getSource().replace('"tiny"', '"tinyy"')); }"""
    )
    run_all(page)
    page.wait_for_function("() => /no recipe named 'tinyy'/.test(document.body.innerText)", timeout=TIMEOUT_MS)
    time.sleep(4)  # whatever Run All would still run after the stop has had its time
    wait_for_kernel(page)
    page.screenshot(path=str(out / "run_all_bad_model.png"), full_page=True)
    return {"good": good, "bad": cell_outputs(page)}


def end_the_run(metrics: str) -> None:
    """The run's job ends, as its wrapper records it (grpolab.jobs.job_entry writes job.json beside metrics.jsonl)."""
    record = Path(metrics).with_name("job.json")
    now = time.time()
    record.write_text(json.dumps({"pid": 1, "host": "elsewhere", "started": now - 60, "exit_code": 0, "ended": now}))


def main(url: str, metrics: str, pending: str, out_dir: str) -> int:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = Path(pending).read_text().splitlines(keepends=True)
    result: dict = {"follow": []}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            page.set_default_timeout(TIMEOUT_MS)
            page.goto(url)
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=TIMEOUT_MS)
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget", timeout=TIMEOUT_MS
            )
            open_notebook(page, "04_monitor.ipynb")
            run_all(page)
            page.wait_for_selector("img[alt*=' steps)']", timeout=TIMEOUT_MS)
            page.wait_for_function("() => /step \\d+\\/\\d+/.test(document.body.innerText)", timeout=TIMEOUT_MS)
            result["first_chart"] = chart_last_step(page)
            # the asynchronous-training cell: its figures and its inline off-policy curves (their alt text)
            page.wait_for_selector("img[alt^='off-policy curves']", timeout=TIMEOUT_MS)
            result["offpolicy"] = page.evaluate(
                """() => ({alt: document.querySelector("img[alt^='off-policy curves']").alt,
                    text: Array.from(document.querySelectorAll('.jp-OutputArea-output')).map(o => o.innerText)
                        .filter(t => t.includes('off-policy staleness:')).join('\\n')})"""
            )
            chunk = max(1, len(lines) // 3)
            for start in range(0, len(lines), chunk):
                with open(metrics, "a") as f:
                    f.writelines(lines[start : start + chunk])
                wanted = json.loads(lines[min(start + chunk, len(lines)) - 1])["step"]
                deadline = time.time() + 90
                while time.time() < deadline:
                    if (chart_last_step(page) or 0) >= wanted and (state_step(state_text(page)) or 0) >= wanted:
                        break
                    time.sleep(0.5)
                text = state_text(page)
                result["follow"].append(
                    {
                        "wanted": wanted,
                        "chart": chart_last_step(page),
                        "state": state_step(text),
                        "live": "live" in text,
                    }
                )
            page.screenshot(path=str(out / "live.png"), full_page=True)
            result["live_text"] = page.evaluate("() => document.body.innerText")
            save(page)  # saved mid-run, as autosave does
            shut_down_kernel(page)
            end_the_run(metrics)  # the run ends while no kernel watches it
            page.reload()
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=TIMEOUT_MS)
            time.sleep(5)
            page.screenshot(path=str(out / "reopened.png"), full_page=True)
            result["reopened_text"] = page.evaluate("() => document.body.innerText")
            open_notebook(page, "04_monitor.ipynb")  # a new kernel for the reopened notebook
            result["ended"] = ended_runs(page, out)
            result["run_all"] = run_all_after_a_bad_model(page, out)
            result["misspelled"] = misspelled_parameters(page, out)
        finally:
            browser.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
