"""One look at a run: state, last step, latest key metrics, alerts, failure cause, wandb location, curves.

    summary(ref, thresholds=None, png=None, refresh=True) -> dict   # what `grpolab monitor --json` prints
    format_summary(data) -> str                                      # what `grpolab monitor` prints
    RunMonitor(ref).update() -> dict                                 # the same, refreshed incrementally

`RunMonitor` keeps its MetricsView between updates, so a live dashboard reads only new bytes each time;
`summary` is a one-shot RunMonitor.

The job's state comes from grpolab.jobs.state.refresh(run), the one run-state function (the run's record, its
job's own end record and Ray); when Ray cannot be asked, from status.json as it is. The record is the jobs layer's,
checked by its schema (grpolab.jobs.runs.StatusRecord): an ill-typed one is a BadRecord naming its bad fields, as
in every view; the run's times are its record's (grpolab.jobs.state.run_times).
JSON output writes NaN/inf as the strings "nan"/"inf"/"-inf" (they are not JSON numbers).
"""

from __future__ import annotations

import html as _html
import os
import textwrap
import time
from pathlib import Path

from grpolab.jobs import lineage as run_lineage
from grpolab.jobs import state as run_state
from grpolab.jobs.checkpoints import describe as describe_checkpoints
from grpolab.jobs.checkpoints import listing as checkpoint_listing
from grpolab.jobs.runs import TERMINAL_STATES, BadRecord, Run
from grpolab.monitor.alerts import Alert, alerts, group, json_number
from grpolab.monitor.clock import as_of, clock_text
from grpolab.monitor.collapse import collapse_of, state_text
from grpolab.monitor.diagnose import Failure
from grpolab.monitor.diagnosis import log_failure
from grpolab.monitor.figures import KEY_METRICS
from grpolab.monitor.metrics import MetricsView, open_run
from grpolab.monitor.nodes import node_lines, nodes_summary
from grpolab.monitor.plots import Curves
from grpolab.monitor.thresholds import Thresholds, load_thresholds, thresholds_for
from grpolab.monitor.yardstick import Yardstick, summary_lines
from grpolab.recipe.files import open_regular

_WIDTH = 110  # text output wraps long messages here; evidence lines are printed as they are
NODES_PNG = "nodes.png"  # the per-node small multiples, beside curves.png
_LOG_TAIL_BYTES = 2 << 20  # failure causes sit at the end of a log; a big run's log can be gigabytes


def _record(run: Run) -> dict:
    """The run's checked record ({} for a metrics file outside any run); BadRecord when it is ill-typed."""
    return run.record() if run.is_run else {}


def _refresh_status(run: Run) -> tuple[dict, str | None]:
    """The one run-state function (grpolab.jobs.state); status.json as it is when Ray cannot be asked. A bad
    record is a BadRecord here as everywhere."""
    try:
        return run_state.refresh(run), None
    except BadRecord:
        raise
    except Exception as exc:  # Ray down or unreachable: the files on disk are still worth showing
        return _record(run), f"could not ask Ray for the job's state ({type(exc).__name__}: {exc}); showing status.json"


def _log_tail(run: Run) -> str:
    """The last _LOG_TAIL_BYTES of logs/job.log, from its first whole line."""
    try:
        with open_regular(run.job_log) as handle:  # a FIFO in the log's place is refused, never waited on
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - _LOG_TAIL_BYTES))
            data = handle.read()
    except OSError:
        return ""
    if size > _LOG_TAIL_BYTES:
        data = data[data.find(b"\n") + 1 :]  # start on a whole line
    return data.decode("utf-8", "replace")


def failure_of(run: Run, status: dict) -> Failure | None:
    """The cause of a FAILED or LOST run (the one place a failure is classified); None for any other state.
    `status`: the run's checked record (grpolab.jobs.runs.Run.record)."""
    if status.get("state") == "LOST":
        return Failure(
            "lost",
            status.get("lost") or "the run's Ray head went away and the job left no end record",
            f"start the run again; `grpolab logs {run.run_id}` shows how far it got and `grpolab head "
            "status` whether the embedded head runs",
            list(status.get("log_tail") or [])[-5:],
            [],
        )
    if status.get("state") != "FAILED":
        return None
    final = run_lineage.final_failure(run_lineage.read(run.path)) if run.is_run else None
    if final is not None and final.get("cause"):  # the run's own driver diagnosed the attempt it stopped on
        return Failure(
            final["cause"],
            f"{final.get('message') or ''} Not restarted: {final.get('why')}.".strip(),
            final.get("fix") or "",
            list(final.get("lines") or []),
            [],
            rank=final.get("rank"),
            node=final.get("node"),
        )
    found = log_failure(run, status)  # the whole log, streamed: the same answer as `grpolab diagnose LOG`
    if found is not None:
        return found
    message = status.get("message") or ""
    last = [line for line in _log_tail(run).splitlines() if line.strip()][-5:]
    return Failure(
        "unknown",
        "the job failed, but its log shows no error",
        f"read the whole log (`grpolab logs {run.run_id}`) and Ray's own logs (/tmp/ray/session_latest/logs)",
        last or ([message] if message else []),
        [],
    )


def _latest(view: MetricsView) -> list[dict]:
    out = []
    for label, candidates in KEY_METRICS:
        for name in view.first_present(candidates):
            found = view.latest(name)
            if found is not None:
                step, value = found
                shown = label if not name.startswith("val-core/") else f"{label} {name.split('/', 2)[1]}"
                out.append({"label": shown, "metric": name, "step": step, "value": json_number(value)})
    return out


class RunMonitor:
    """A run being watched: `update()` refreshes the status and reads only the metrics appended since.

    `view`: a MetricsView already following this run (what it read is kept; nothing is read twice)."""

    def __init__(
        self,
        ref,
        thresholds: Thresholds | str | None = None,
        root: Path | None = None,
        view: MetricsView | None = None,
    ):
        self.run, self.view = open_run(ref, root)
        self.view = view if view is not None else self.view
        if thresholds is None:  # the run's own recipe's `monitor:` section (tiny's are wider than a cluster's)
            thresholds = thresholds_for(self.run)
        self.thresholds = thresholds if isinstance(thresholds, Thresholds) else load_thresholds(thresholds)
        self.alerts: list[Alert] = []
        self.failure: Failure | None = None  # the cause, when the last update found the run FAILED or LOST
        self._classified: tuple | None = None  # the record the failure was classified from
        self.curves = None  # grpolab.monitor.plots.Curves, made on the first drawing update
        self.yardstick = Yardstick(self.run)  # measured speed against the cost model's estimate
        self.nodes: dict | None = None  # per-node telemetry and its alerts, read with the alerts (`analyse`)

    def update(self, refresh: bool = True, png: str | Path | None = None, analyse: bool = True) -> dict:
        """The summary dict; `png`: also draw the curves there (only if something changed since the last draw).
        `refresh`: ask Ray (if the job is not over). `analyse` False: keep the alerts of the last update (a
        dashboard's quick refresh between two analyses)."""
        status = _record(self.run)
        notes = []
        if refresh and self.run.is_run and status.get("state") not in TERMINAL_STATES:
            status, note = _refresh_status(self.run)
            if note:
                notes.append(note)
        if status.get("note"):  # launch records why it could not ask Ray ("Ray is unreachable ...")
            notes.append(status["note"])
        self.view.refresh()
        if analyse:
            self.alerts = alerts(self.view, self.thresholds)
        if (analyse or png is not None) and self.run.is_run:  # every node's samples: read with the analysis
            nodes_png = Path(png).with_name(NODES_PNG) if png is not None else None
            self.nodes = nodes_summary(self.run, self.thresholds.nodes, nodes_png)
        state = status.get("state") or "UNKNOWN"
        record = (state, status.get("updated"), status.get("message"))
        if record != self._classified:  # a failure is classified once per record, however often it is shown
            self.failure, self._classified = failure_of(self.run, status), record
        notes += _view_notes(self.view, state)
        curves = None
        if png is not None:
            if self.curves is None:
                self.curves = Curves(title=self.run.run_id)
            self.curves.draw(self.view, self.alerts, png)
            curves = str(png)
        started, ended = run_state.run_times(status, run_state.job_record(self.run))
        return {
            "run_id": status.get("run_id") or self.run.run_id,
            "path": str(self.run.path),
            "state": state,
            "message": status.get("message") or "",
            "job_id": status.get("job_id"),
            "created": status.get("created"),
            "updated": status.get("updated"),
            "started": started,
            "ended": ended,
            "elapsed_s": run_state.elapsed_s({"started": started, "ended": ended}),
            "source": {
                "file": str(self.view.path),
                "kind": self.view.kind,
                "exists": self.view.path.exists(),
                "bad_lines": self.view.bad_lines,
                "huge_values": self.view.huge_values,
            },
            "steps": len(self.view.steps),
            "last_step": self.view.last_step,
            "total_steps": status.get("total_steps"),
            "latest": _latest(self.view),
            "alerts": [a.to_dict() for a in self.alerts],
            "alert_groups": group(self.alerts),
            "collapse": (found.to_dict() if (found := collapse_of(self.alerts)) else None),
            "yardstick": self.yardstick.measure(self.view),
            "failure": self.failure.to_dict() if self.failure else None,
            "wandb": status.get("wandb") or None,
            "curves": curves,
            "thresholds": self.thresholds.source,
            "threshold_lines": self.thresholds.describe(),
            "notes": notes,
            "checkpoints": checkpoint_listing(self.run.path) if self.run.is_run else [],
            "restarts": restarts(self.run),
            # per-node telemetry and its alerts; the small multiples beside the curves when they are drawn
            "nodes": self.nodes,
        }


def restarts(run: Run) -> dict | None:
    """The run's attempts (grpolab.jobs.lineage) when there is something to say: more than one attempt, or a
    failure its driver did not restart (why not). {"headline": ..., "attempts": [line, ...]}; None otherwise."""
    lineage = run_lineage.read(run.path) if run.is_run else {}
    attempts = lineage.get("attempts") or []
    if len(attempts) < 2 and not run_lineage.final_failure(lineage):
        return None
    return {"headline": run_lineage.headline(lineage), "attempts": run_lineage.attempt_lines(lineage)}


def _view_notes(view: MetricsView, state: str) -> list[str]:
    """What reading the metrics file found: a file that cannot be read, lines that are not records, bytes left
    out, nothing logged by a finished run, numbers beyond a float's range, values that are not numbers
    (dropped), steps logged twice (merged)."""
    notes = []
    if view.unreadable:
        notes.append(view.unreadable)
    if view.problems:
        notes.append(f"{view.bad_lines} unreadable line(s) in {view.path}, first: {view.problems[0]}")
    notes += view.skipped
    if state in TERMINAL_STATES and not view.steps:
        where = view.path if view.path.exists() else f"{view.path} (missing)"
        notes.append(
            f"the run is {state} but logged no metrics: {where}; check trainer.logger includes `file` "
            "and the job log for where the trainer stopped"
        )
    if view.huge_values:
        notes.append(
            f"{view.huge_values} value(s) beyond a float's range (such as 1e400) were read as inf "
            "(`huge_values` in the JSON); the alerts treat them as inf"
        )
    if dropped := view.dropped():
        names = ", ".join(f"{name} ({count})" for name, count in list(dropped.items())[:5])
        notes.append(f"values that are not numbers were dropped: {names}")
    if view.duplicate_steps:
        notes.append(f"{view.duplicate_steps} step(s) logged more than once; later values win")
    return notes


def summary(
    ref,
    thresholds: Thresholds | str | None = None,
    png: str | Path | None = None,
    refresh: bool = True,
    root: Path | None = None,
) -> dict:
    """The state of a run as a dict (what `grpolab monitor --json` prints). See RunMonitor.update."""
    return RunMonitor(ref, thresholds, root).update(refresh=refresh, png=png)


# --- text ----------------------------------------------------------------------------------------------------


def _age(timestamp) -> str:
    if not isinstance(timestamp, (int, float)):
        return ""
    seconds = max(0, time.time() - timestamp)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def _value(value) -> str:
    return value if isinstance(value, str) else f"{value:.5g}"


def wandb_text(info) -> str | None:
    """Where the wandb run is, in one line (None when the run does not log to wandb)."""
    if not isinstance(info, dict) or not info:
        return None
    mode, where, url = info.get("mode") or "online", info.get("dir"), info.get("url")
    if url:
        return f"{mode}: {url}" + (f"  (files: {where})" if where else "")
    if mode == "offline" and where:
        return f"offline: {where}  (upload later with: wandb sync {where})"
    return f"{mode}" + (f": {where}" if where else "")


def _range(g: dict) -> str:
    span = f"step {g['first']}" if g["first"] == g["last"] else f"steps {g['first']}-{g['last']}"
    return span + (" (ongoing)" if g.get("ongoing") else "")


def alert_lines(data: dict) -> list[str]:
    """The alerts grouped by rule: one head line per rule (severity, episodes, step range, worst value), each
    episode's message, the advice once per rule."""
    groups = data.get("alert_groups") or group(data.get("alerts") or [])
    if not groups:
        return ["alerts    none"]
    lines = [f"alerts    {sum(g['count'] for g in groups)} in {len(groups)} rule(s)"]
    for g in groups:
        worst = "" if g["worst"] is None else f", worst {_value(g['worst'])}"
        lines.append(f"  {g['severity'].upper():7} {g['rule']:17} {g['count']} episode(s), {_range(g)}{worst}")
        lines += [
            textwrap.fill(message, width=_WIDTH, initial_indent="      - ", subsequent_indent="        ")
            for message in g["messages"][:3]
        ]
        if len(g["messages"]) > 3:
            lines.append(f"      ... and {len(g['messages']) - 3} more")
        if g["advice"]:
            lines.append(
                textwrap.fill(g["advice"], width=_WIDTH, initial_indent="      try: ", subsequent_indent="           ")
            )
    return lines


def _clock(stamp) -> str:
    return time.strftime("%H:%M:%S", time.localtime(stamp)) if isinstance(stamp, (int, float)) else "?"


def format_summary(data: dict, saved: bool = False) -> str:
    """The summary dict as the text `grpolab monitor` prints. `saved`: for an output a notebook keeps, read long
    after it was written (a kernel restarted, the notebook reopened): clock times and "as of" instead of "running
    for 0:48" and "updated 1 s ago", which would claim to be current."""
    lines = [f"run       {data['run_id']}  ({data['path']})"]
    state = f"state     {state_text(data['state'], data.get('collapse'))}"
    if data.get("job_id"):
        state += f"  job {data['job_id']}"
    if data.get("elapsed_s") is not None:
        took = clock_text(data["elapsed_s"])
        if data.get("ended"):
            state += f"  ran {took}" + (f" ({_clock(data.get('started'))} -> {_clock(data['ended'])})" if saved else "")
        elif saved:
            state += f"  started {_clock(data.get('started'))}, {took} in"
        else:
            state += f"  running for {took}"
    if data.get("updated"):
        state += f"  record updated {_clock(data['updated'])}" if saved else f"  updated {_age(data['updated'])}"
    if saved:  # when this was read: the saved notebook keeps it, long after
        state += f"  ({as_of()})"
    lines.append(state)
    if data.get("message"):
        lines.append(f"message   {data['message']}")
    if again := data.get("restarts"):
        lines.append(f"restarts  {again['headline']}")
        lines += [f"  {line}" for line in again["attempts"]]
    source = data["source"]
    where = Path(source["file"]).name + ("" if source["kind"] == "jsonl" else ", console lines")
    if not source["exists"]:
        lines.append(f"steps     none yet ({source['file']} does not exist yet)")
    else:
        last = f", last step {data['last_step']}" if data["last_step"] is not None else ""
        if last and data.get("total_steps"):
            last += f" of {data['total_steps']}"
        logged = f"{data['steps']} logged" if data["steps"] else "none logged yet"
        lines.append(f"steps     {logged}{last}  ({where})")
    if wandb := wandb_text(data.get("wandb")):
        lines.append(f"wandb     {wandb}")
    if data["latest"]:
        lines += ["", "latest"]
        width = max(len(m["label"]) for m in data["latest"])
        metric_width = max(len(m["metric"]) for m in data["latest"])
        lines += [
            f"  {m['label'].ljust(width)}  {m['metric'].ljust(metric_width)}  {_value(m['value']):>10}  (step {m['step']})"
            for m in data["latest"]
        ]
    lines += summary_lines(data.get("yardstick"))
    lines.append("")
    lines += alert_lines(data)
    if nodes := node_lines(data.get("nodes")):
        lines += ["", *nodes]
    if failure := data.get("failure"):
        lines += [
            "",
            f"failure   {failure['cause']}: {failure['message']}",
            textwrap.fill(failure["fix"], width=_WIDTH, initial_indent="  fix: ", subsequent_indent="       "),
        ]
        if failure["lines"]:
            lines.append("  evidence:")
            numbers = failure.get("line_numbers") or [None] * len(failure["lines"])
            lines += [f"    {'L' + str(n) if n else '':>7} | {text}" for n, text in zip(numbers, failure["lines"])]
    if data.get("checkpoints"):  # step, size, seconds the save took (grpolab.jobs.checkpoints)
        lines += ["", "checkpoints"] + ["  " + line for line in describe_checkpoints(data["checkpoints"]).splitlines()]
    if data.get("curves"):
        lines += ["", f"curves    {data['curves']}"]
    if data.get("thresholds"):
        lines.append(f"limits    {data['thresholds']}")
    lines += [f"note      {note}" for note in data.get("notes", [])]
    return "\n".join(lines)


# --- HTML (notebooks) ----------------------------------------------------------------------------------------

_PRE = "<pre style='font-family:monospace;font-size:85%;margin:0'>"


def format_html(data: dict, open_alerts: bool = False) -> str:
    """The summary for notebooks: the same text in monospace (columns line up in JupyterLab and in nbconvert's
    HTML), the alerts grouped by rule in collapsible <details> (the advice once per rule), and the thresholds
    that applied in a collapsed <details> of their own."""

    text = format_summary({**data, "alerts": [], "alert_groups": [], "thresholds": None}, saved=True)
    head = text.split("\nalerts    none", 1)
    parts = [_PRE + _html.escape(head[0].rstrip()) + "</pre>"]
    if groups := data.get("alert_groups") or group(data.get("alerts") or []):
        total = sum(g["count"] for g in groups)
        parts.append(f"<p style='margin:6px 0 2px'><b>alerts</b>: {total} in {len(groups)} rule(s)</p>")
        for g in groups:
            colour = "#d62728" if g["severity"] == "error" else "#b35900"
            worst = "" if g["worst"] is None else f", worst {_value(g['worst'])}"
            summary_line = (
                f"<span style='color:{colour}'><b>{g['severity'].upper()}</b></span> "
                f"<code>{g['rule']}</code>: {g['count']} episode(s), {_range(g)}{worst}"
            )
            items = "".join(f"<li>{_html.escape(m)}</li>" for m in g["messages"])
            parts.append(
                f"<details{' open' if open_alerts else ''}><summary>{summary_line}</summary>"
                f"<ul style='margin:2px 0'>{items}</ul><p style='margin:2px 0 6px 18px'><i>try:</i> "
                f"{_html.escape(g['advice'])}</p></details>"
            )
    else:
        parts.append(_PRE + "alerts    none</pre>")
    tail = head[1].strip("\n") if len(head) > 1 else ""
    if tail:
        parts.append(_PRE + _html.escape(tail) + "</pre>")
    if data.get("thresholds"):
        limits = "\n".join(data.get("threshold_lines") or [])
        parts.append(
            f"<details><summary>limits applied: <code>{_html.escape(data['thresholds'])}</code></summary>"
            f"{_PRE}{_html.escape(limits)}</pre></details>"
        )
    return "\n".join(parts)
