"""02_preflight, 03_launch and 04_monitor: preflight, launch and follow a run, the embedded head, and the monitor's views of a run."""

from __future__ import annotations

import base64
import html
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from IPython.display import display

from grpolab.jobs import cluster
from grpolab.jobs.resume import ResumeRefused, plan_resume
from grpolab.jobs.runs import TERMINAL_STATES, RunNotFound, list_runs, resolve_run
from grpolab.jobs.state import refresh
from grpolab.notebook.display import (
    FOLLOW_EVERY_S,
    ROW_COLOURS,
    UNREACHABLE_CHUNKS,
    NotebookStop,
    hand_over,
    in_jupyterlab,
    say,
    show_html,
    show_image,
    show_problems,
    show_text,
    table_html,
)
from grpolab.notebook.setup import redacted_launch
from grpolab.paths import runs_dir
from grpolab.preflight import run_preflight

# ------------------------------------------------------------------------------------------------ preflight

DRY_RUN_FAILED = "dry_run_failed_checks"  # the stage result (grpolab.notebook.display.hand_over) run.ipynb reads


def preflight(recipe, address: str | None = None, timeout_s: float | None = None):
    """Run preflight against the cluster (None: RAY_ADDRESS, else the embedded local head) and show the
    table, failures first. Returns the report."""
    report = run_preflight(recipe, address=address, progress=print, timeout_s=timeout_s)
    rows = sorted(report.rows, key=lambda r: ("fail", "warn", "ok", "skip").index(r.status))
    table = table_html(
        ["status", "check", "node", "detail", "fix"],
        [[r.status.upper(), r.check, r.node, r.detail, r.fix if r.status in ("fail", "warn") else ""] for r in rows],
        [ROW_COLOURS.get(r.status) for r in rows],
        widths=[6, 12, 14, 38, 30],
    )
    show_html(f"<b>{html.escape(report.summary())}</b>{table}", report.table())
    return report


def failed_summary(failed) -> str:
    """Which checks failed, each once with on how many nodes: `devices on 2 nodes, cann on 2 nodes, env`."""
    count = Counter(r.check for r in failed)
    return ", ".join(f"{check} on {n} nodes" if n > 1 else check for check, n in count.items())


def preflight_verdict(report, dry_run: bool = False) -> None:
    """NotebookStop when a check fails, with the failed rows; a dry run only reports them."""
    if not report.failed:
        warned = len([r for r in report.rows if r.status == "warn"])
        print(f"no check fails: nothing blocks the launch ({warned} warning(s))")
        return
    failed = [r for r in report.rows if r.status == "fail"]
    if dry_run:  # the table above lists them with their fixes: say what they mean and which, not the list again
        print(
            f"dry run: {len(failed)} preflight check(s) fail ({failed_summary(failed)}): listed in the table above "
            "with their fixes; nothing will be launched, so they do not stop this dry run"
        )
        hand_over(DRY_RUN_FAILED, {"count": len(failed), "checks": failed_summary(failed)})  # run.ipynb's table
        return
    lines = [f"{r.check} ({r.node}): {r.detail}" + (f"\n    fix: {r.fix}" if r.fix else "") for r in failed]
    raise NotebookStop(f"{report.summary()}\nwhat is missing:\n" + "\n".join(lines))


# ------------------------------------------------------------------------------------------------ launch


def resume_plan(resume: str, overrides: list[str]):
    """`grpolab resume`'s plan for the run `resume` names (grpolab.jobs.resume): its recipe with the overrides, from
    its latest complete checkpoint; NotebookStop with the reason and what to do when it would be wrong."""
    try:
        plan = plan_resume(resolve_run(resume), None, overrides)
    except (RunNotFound, ResumeRefused) as exc:
        raise NotebookStop(f"resume {resume}: {exc}; nothing was submitted") from None
    print(
        f"resuming run {plan.parent.run_id} from its checkpoint at step {plan.checkpoint.step} ({plan.checkpoint.path})"
    )
    for note in plan.notes:
        print(f"note: {note}")
    return plan


def launch(recipe, address: str | None = None, run_id: str | None = None, dry_run: bool = False, resume=None):
    """Submit the recipe as a Ray job and return the Run; with dry_run, show what would be submitted and
    return None. Errors in the recipe, an unreachable cluster or a taken run id stop the notebook. `resume`: the
    resume_plan the recipe comes from (the new run is linked to its parent)."""
    # lazy: yaml (the launcher loads when 03_launch launches, not with `import grpolab.notebook`)
    from grpolab.jobs import launch as launcher
    from grpolab.verl.render import to_sh

    try:
        if dry_run:
            plan = launcher.prepare(recipe, address=address)
            show_text(
                json.dumps(plan.describe(), indent=2),
                title=f"dry run: what would be submitted to the {plan.endpoint.label}",
            )
            launch_ = redacted_launch(recipe)
            show_text(
                "\n".join(launch_.overrides) or "(none: the local trainer reads the recipe itself)",
                title="verl overrides",
            )
            show_text(to_sh(launch_, recipe), title="bash script (grpolab render --format sh)")
            print("dry run: nothing was submitted")
            return None
        resumed_from = resume.record() if resume is not None else None
        run = launcher.submit(recipe, address=address, run_id=run_id, progress=print, resumed_from=resumed_from)
    except launcher.LaunchBlocked as exc:
        show_problems(exc.problems, title=f"recipe {recipe.name}")
        keys = ", ".join(f"{p.key} ({p.rule})" for p in exc.problems if p.severity == "error")
        raise NotebookStop(
            f"recipe {recipe.name} has errors: {keys}; nothing was submitted. The table above says why and how to "
            "fix each."
        ) from None
    except (cluster.ClusterError, ValueError, FileExistsError) as exc:
        raise NotebookStop(str(exc)) from None
    print(f"follow it here (the next cell), in 04_monitor.ipynb, or with `grpolab monitor {run.run_id}`")
    print(token_hint(run))
    return run


def token_hint(run) -> str:
    """Where Ray's dashboard is and, for the embedded head, where its token is: the dashboard asks for it."""
    ep = cluster.Endpoint.from_record(run.status())  # where the run's record says its Ray is
    address = (ep.dashboard or ep.gcs or "") if ep is not None else ""
    if ep is None or not ep.embedded:
        return f"Ray's dashboard: {address} (it may ask for the cluster's token: `ray get-auth-token` on its head)"
    return (
        f"Ray's dashboard: {address}; it asks for the embedded head's token, which is in {cluster.token_file()} "
        "(readable by you only; paste its content once)"
    )


class _LiveLine:
    """03_launch's progress in JupyterLab: one HTML output (a bar made of <div>s and the progress line, with a
    plain-text twin) rewritten in place at every poll. No widget: a notebook saved mid-run, reopened without a
    kernel or shown by nbviewer or GitHub, shows the last figures, never "model not found"."""

    def __init__(self, run_id: str):
        self.run_id = run_id
        self.handle = display({"text/plain": f"following run {run_id} ..."}, raw=True, display_id=True)

    def show(self, tracker, state: str, note: str = "") -> None:
        """The state as of now; while the run goes on, how to follow it again once nothing updates this line (the
        saved notebook keeps it: it never says it is refreshing)."""
        # lazy: orjson, yaml (the monitor loads when a run is followed or shown, not with `import grpolab.notebook`)
        from grpolab.monitor.clock import as_of
        from grpolab.monitor.dashboard import state_html

        line = tracker.line().removesuffix(f"  {state}")  # the badge says the state already
        stamp = as_of()
        if state not in TERMINAL_STATES and not note:
            note = (
                "updated while this cell runs; if this time is old, nothing updates it: follow the run in "
                f"04_monitor or with `grpolab monitor {self.run_id}`"
            )
        extra = html.escape(stamp) + (f" &nbsp; <i>{html.escape(note)}</i>" if note else "")
        self.handle.update(
            {
                "text/html": state_html(self.run_id, state, line, tracker.step, tracker.total, extra),
                "text/plain": f"run {self.run_id}: {state} {stamp}  {line}" + (f"  {note}" if note else ""),
            },
            raw=True,
        )


def follow(run, every_s: float = FOLLOW_EVERY_S, progress: Callable[[str], None] = say) -> dict | None:
    """Follow a run until it ends (grpolab.monitor.progress.follow): in JupyterLab a progress bar and line
    rewritten in place (an HTML output that a saved notebook keeps), else at most one progress line per `every_s`
    seconds (step / total, elapsed, remaining, reward, validation accuracy), printed and, headless, also written to
    the terminal that runs papermill; then the final state. Stops following (the run goes on) once Ray has not
    answered for UNREACHABLE_CHUNKS x `every_s` seconds in a row."""
    # lazy: orjson, yaml (the monitor loads when a run is followed or shown, not with `import grpolab.notebook`)
    from grpolab.monitor.progress import POLL_S, Progress
    from grpolab.monitor.progress import follow as monitor_follow

    if run is None:  # a dry run: nothing was submitted
        return None
    live = _LiveLine(run.run_id) if in_jupyterlab() else None
    if live is None:
        progress(f"following run {run.run_id}: a line every {every_s:g} s")
    tracker = Progress(run.run_id, every_s=every_s, out=(lambda _line: None) if live is not None else progress)
    silent_since: float | None = None  # since when Ray has not answered
    why, state = "", "RUNNING"

    def report(view, status: dict) -> bool:
        nonlocal silent_since, why, state
        tracker.update(view, status)
        state, note = str(status.get("state") or "PENDING"), str(status.get("note") or "")
        if "unreachable" in note or "does not know" in note:
            silent_since = time.monotonic() if silent_since is None else silent_since
            if time.monotonic() - silent_since >= UNREACHABLE_CHUNKS * every_s:
                why = f"stopped following: {note}"
        else:
            silent_since = None
        if state in TERMINAL_STATES:
            tracker.state = state
        if live is not None:
            live.show(tracker, state, why)
        return bool(why)

    try:  # one view: each poll reads only what was appended
        status = monitor_follow(run, report, poll_s=min(POLL_S, every_s))
    except KeyboardInterrupt:  # Jupyter's Interrupt: the run is a Ray job of its own and goes on
        why = f"stopped following; the run goes on (grpolab status {run.run_id} / grpolab stop {run.run_id})"
        if live is not None:
            live.show(tracker, state, why)
        progress(why)
        return None
    if live is None:
        tracker.close(status if not why else {"state": why})
    return status


def show_head(address: str | None = None) -> None:
    """Whether the embedded local Ray head runs and how to stop it (nothing to say for a remote cluster)."""
    if cluster.resolve(address) is not None:
        print(f"Ray: {cluster.resolve(address).label} (not the embedded head)")
        return
    print(cluster.describe_head())


def verdict(run, status: dict | None = None, strict: bool = True) -> None:
    """The run's outcome in a few lines (state, reward and accuracy first -> last, cause of a failure);
    NotebookStop when the run FAILED or was LOST, or its training collapsed (SUCCEEDED with a ruined policy:
    grpolab.monitor.collapse), and `strict`. A run STOPPED on request (Stop run, `grpolab stop`) was stopped on
    purpose: in JupyterLab it is said plainly, not as an error; headless (papermill) it still ends the notebook with
    an error when `strict`, so that a pipeline notices the run did not finish. One whose head went away (nobody asked:
    grpolab.jobs.state says so) is an error everywhere. Nothing for no run (a dry run)."""
    # lazy: orjson, yaml (the monitor loads when a run is followed or shown, not with `import grpolab.notebook`)
    from grpolab.monitor.collapse import run_collapse
    from grpolab.monitor.outcome import describe_outcome

    if run is None:
        return
    status = status or refresh(run)
    collapse = run_collapse(run)
    text = describe_outcome(run, status, collapse=collapse)
    state = status.get("state")
    asked = bool(status.get("stop_requested"))  # a stop nobody asked for (its head went away) is no choice of yours
    stopped = state == "STOPPED" and (not in_jupyterlab() or not asked)
    if strict and (state in ("FAILED", "LOST") or collapse is not None or stopped):
        raise NotebookStop(text)
    if state == "STOPPED":
        on_request = " on request (Stop run, `grpolab stop`)" if asked else ""
        text += f"\nthe run was stopped{on_request}: the steps it finished are kept"
    print(text)


# ------------------------------------------------------------------------------------------------ monitor


def find_run(run_id: str | None = None):
    """The run named by `run_id` (run id, run directory or metrics file); None: the latest run."""
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
    if interval <= 0:
        raise NotebookStop(f"interval must be a positive number of seconds, got {interval}")
    if in_jupyterlab() if live is None else live:
        # lazy: orjson, yaml (the monitor loads when a run is followed or shown, not with `import grpolab.notebook`)
        from grpolab.monitor.dashboard import live as dashboard

        return dashboard(run, interval=interval)
    if wait and refresh(run).get("state") not in TERMINAL_STATES:
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
    # lazy: orjson, yaml (the monitor loads when a run is followed or shown, not with `import grpolab.notebook`)
    from grpolab.monitor import format_summary
    from grpolab.monitor.clock import as_of
    from grpolab.monitor.summary import RunMonitor, format_html

    if dashboard is not None:
        print(
            f"run {run.run_id}: the dashboard above shows it (its state line says as of when); its picture and "
            "summary stay in this notebook when the run ends"
        )
        return dashboard.data or {}
    monitor = RunMonitor(run)
    data = monitor.update(png=_curves_path(run) if picture else None)
    title = f"run {data['run_id']}: {data['state']} {as_of()}"
    if data["state"] not in TERMINAL_STATES:
        title += " (a snapshot: run this cell again for the state now)"
    show_html(f"<b>{html.escape(title)}</b>" + format_html(data), f"{title}\n{format_summary(data, saved=True)}")
    if picture and data.get("curves"):
        show_image(data["curves"])
    if picture and (data.get("nodes") or {}).get("picture"):  # every node of the run, from its telemetry
        show_image(data["nodes"]["picture"])
    return data


def plot_val_accuracy(run, path: str | Path | None = None) -> Path | None:
    """The validation-accuracy curve(s) alone, as a small PNG (None when the run logged none)."""
    # lazy: matplotlib (only drawing the accuracy PNG needs it)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # lazy: orjson, yaml (the monitor loads when a run is followed or shown, not with `import grpolab.notebook`)
    from grpolab.monitor import load_metrics

    if not run.metrics_file.exists():
        return None
    view = load_metrics(run.metrics_file)
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
    # lazy: orjson, yaml (the monitor loads when a run is followed or shown, not with `import grpolab.notebook`)
    from grpolab.monitor.outcome import figures

    fig = figures(run)
    rows = [
        [label, f"{f['first']:.3f}", str(f["first_step"]), f"{f['last']:.3f}", str(f["last_step"])]
        for label in ("reward", "val_acc")
        if (f := fig.get(label)) is not None
    ]
    if not rows:
        print(f"run {run.run_id} logged no metrics")
        return
    text = "\n".join(f"{r[0]:8} {r[1]} (step {r[2]}) -> {r[3]} (step {r[4]})" for r in rows)
    show_html(
        f"<b>final figures of {html.escape(run.run_id)}</b> (last step {fig.get('last_step')})"
        + table_html(["metric", "first", "at step", "last", "at step"], rows, [None] * len(rows)),
        f"final figures of {run.run_id} (last step {fig.get('last_step')})\n{text}",
    )


def show_offpolicy(run) -> dict | None:
    """04_monitor's view of an asynchronous run (issue 42): its off-policy figures (grpolab.monitor.offpolicy) as
    text and, inline, the curves of staleness, importance ratio, mismatch KL, dropped samples and the trainer's wait,
    alerts shaded (nothing to draw for a synchronous run); returns the figures (None when the run logs no
    staleness)."""
    # lazy: orjson, yaml (the monitor loads when a run is followed or shown, not with `import grpolab.notebook`)
    from grpolab.monitor import alerts, load_metrics
    from grpolab.monitor.offpolicy import PANELS, format_offpolicy, offpolicy
    from grpolab.monitor.plots import panels_for, plot_curves
    from grpolab.monitor.thresholds import thresholds_for

    if not run.metrics_file.exists():
        print(f"run {run.run_id} logged no metrics yet")
        return None
    view = load_metrics(run.metrics_file)
    summary = offpolicy(view)
    found = alerts(view, thresholds_for(run)) if summary and summary["asynchronous"] else []
    lines = format_offpolicy(summary, found)
    show_html(
        f"<b>{html.escape(run.run_id)}: asynchronous training</b><pre>{html.escape(chr(10).join(lines))}</pre>",
        f"{run.run_id}: asynchronous training\n" + "\n".join(lines),
    )
    if summary and summary["asynchronous"]:
        path = _curves_path(run).with_name("offpolicy.png")  # beside curves.png (a temp folder for a foreign run)
        plot_curves(view, found, path, title=f"{run.run_id}: off-policy", panels=PANELS)
        drawn = [title for title, _, _ in panels_for(view) if title in PANELS]
        # the picture inline with an alt text that names its curves (what a screen reader and a test read)
        png = base64.b64encode(path.read_bytes()).decode("ascii")
        alt = f"off-policy curves: {', '.join(drawn)}; steps {view.steps[0]}-{view.steps[-1]}"
        show_html(f"<img src='data:image/png;base64,{png}' alt='{html.escape(alt)}'/>", f"{alt} ({path})")
    return summary
