"""grpolab.monitor.dashboard: the ipywidgets live view (built and refreshed without a browser)."""

from __future__ import annotations

import pytest

from grpolab.jobs.runs import create_run
from grpolab.monitor import synthetic

pytest.importorskip("ipywidgets")
pytest.importorskip("IPython")


def test_dashboard_refreshes_until_the_job_ends_and_stops_it(runs_root, monkeypatch):
    from grpolab.monitor.dashboard import Dashboard, live

    run = create_run("tiny", run_id="dash")
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(20))
    run.write_status(state="RUNNING", job_id="raysubmit_9", total_steps=40)
    stopped = []

    def stop_run(r):
        stopped.append(r.run_id)
        return r.write_status(state="STOPPED")

    # no Ray job behind this run: the launch module's Ray calls are replaced, the dashboard's code is not
    from grpolab.jobs import control, state

    monkeypatch.setattr(control, "stop_run", stop_run)
    monkeypatch.setattr(state, "refresh", lambda r: r.status())

    dash = live("dash", interval=0.01, display=False, background=False, max_updates=1)
    assert isinstance(dash, Dashboard)
    assert "RUNNING" in dash.state_html and "step 20" in dash.state_text
    assert dash.picture.startswith(b"\x89PNG")
    assert "critic/score/mean" in dash.summary_text and "<pre style='font-family:monospace" in dash.summary_html
    assert not dash.stop_button.disabled

    # more steps arrive: the next refresh reads only them, and shows how far the run is
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(25)[20:], append=True)
    offset_before = dash.monitor.view._tail.offset
    dash.refresh()
    assert "step 25" in dash.state_text and dash.monitor.view._tail.offset > offset_before
    assert "step 25/40" in dash.state_text and "width:62.5%" in dash.state_html  # the bar: plain HTML, no widget

    dash.stop_button.click()  # the first click only asks
    assert stopped == [] and dash.confirm_row.layout.display is None and "Stop run <b>dash</b>?" in dash.question.value
    dash.cancel_button.click()
    assert stopped == [] and dash.confirm_row.layout.display == "none" and not dash.stop_button.disabled
    dash.stop_button.click()
    dash.confirm_button.click()  # the confirm button calls grpolab.jobs.control.stop_run, then refreshes
    assert stopped == ["dash"]
    assert "STOPPED" in dash.state_text and dash.stop_button.disabled and dash.finished
    assert "stopped on request" in dash.state_text and "#7f7f7f" in dash.state_html  # grey, not an error's red
    dash.start(background=False)  # a finished run: one refresh, then the loop ends by itself


def test_stop_that_cannot_reach_ray_says_why(runs_root):
    from grpolab.monitor.dashboard import Dashboard

    run = create_run("tiny", run_id="noray")
    run.write_status(state="RUNNING", job_id="noray", ray_address="http://127.0.0.1:9", embedded=False)
    dash = Dashboard("noray", interval=1)
    dash.refresh()
    dash.stop_button.click()
    dash.confirm_button.click()
    # Ray never answers for this run: the run ends LOST from its own record, and the stop says there was nothing
    assert "stop failed: run noray is LOST: nothing to stop" in dash.state_text and "LOST" in dash.state_html


def test_background_thread_stops_on_request(runs_root):
    from grpolab.monitor.dashboard import Dashboard

    run = create_run("tiny", run_id="bg")
    run.write_status(state="RUNNING")
    dash = Dashboard("bg", interval=0.05).start()
    dash.stop()
    dash._thread.join(timeout=20)
    assert not dash._thread.is_alive()


def test_alerts_grouped_by_rule_with_advice_once_and_collapsible(runs_root, monkeypatch):
    from grpolab.jobs import state
    from grpolab.monitor.alerts import ADVICE
    from grpolab.monitor.dashboard import Dashboard
    from grpolab.recipe.loader import load_recipe, to_yaml

    run = create_run("tiny", run_id="grouped")
    (run.path / "recipe.yaml").write_text(to_yaml(load_recipe("tiny")))  # as launch writes it
    records = synthetic.plant(synthetic.healthy(80), "length-clipped", 20)
    for record in records[29:55]:  # two episodes of the same rule
        record["data"]["response_length/clip_ratio"] = 0.01
    synthetic.write_jsonl(run.metrics_file, synthetic.plant(records, "nan", 70))
    run.write_status(state="SUCCEEDED", job_id="j")
    monkeypatch.setattr(state, "refresh", lambda r: r.status())
    dash = Dashboard("grouped", interval=1, thresholds=None)
    dash.refresh()
    page = dash.summary_html
    assert page.count("<details>") == 3  # nan, length-clipped, and the limits that applied (tiny's)
    assert page.index("<code>nan</code>") < page.index("<code>length-clipped</code>")  # errors first
    assert "length-clipped</code>: 2 episode(s), steps 20-80 (ongoing)" in page
    assert page.count("try:") == 2 and ADVICE["length-clipped"][:40] in page
    assert "limits applied: <code>" in page and "recipe.yaml (monitor:)" in page  # the run's own thresholds
    assert dash.summary_text.count("try: ") == 2


class _Handle:
    def __init__(self, shown):
        self.shown = shown

    def update(self, data, raw=False):
        self.shown.append(data)


def test_every_refresh_rewrites_static_outputs_and_a_finished_run_leaves_no_controls(runs_root, monkeypatch):
    """What a saved notebook keeps: the state line (HTML + text), the picture and the summary are ordinary outputs
    rewritten at each refresh; the controls' output (the only widget) becomes one line when the run ends."""
    from grpolab.jobs import state
    from grpolab.monitor.dashboard import WIDGET_VIEW, Dashboard

    run = create_run("tiny", run_id="ended")
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(30))
    run.write_status(state="RUNNING", job_id="j", total_steps=30)
    monkeypatch.setattr(state, "refresh", lambda r: r.status())
    dash = Dashboard("ended", interval=1)
    shown = {name: [] for name in ("controls", "state", "picture", "summary")}
    dash._handles = {name: _Handle(out) for name, out in shown.items()}  # what display(display_id=True) returns
    dash.refresh()
    assert shown["controls"] == [] and shown["picture"][-1]["image/png"].startswith(b"\x89PNG")
    state = shown["state"][-1]
    assert "RUNNING" in state["text/plain"] and "step 30/30" in state["text/plain"] and WIDGET_VIEW not in state
    assert "white-space:nowrap" in state["text/html"]  # the state never wraps mid-word ("SUCCE / EDED")
    dash.refresh()  # nothing new: no redraw, no new picture
    assert len(shown["picture"]) == 1
    run.write_status(state="SUCCEEDED")
    dash.refresh()
    final = shown["state"][-1]["text/plain"]
    assert final.startswith("run ended: SUCCEEDED as of ") and "step 30/30 (100 %)" in final
    assert "refreshing" not in final and "reconnect" not in final
    assert shown["controls"][-1]["text/plain"] == "run ended ended SUCCEEDED: nothing left to control"
    assert dash.stop_button.layout.display == "none" and "SUCCEEDED" in shown["summary"][-1]["text/plain"]


def test_controls_carry_a_text_twin_and_stopping_to_follow_says_so(runs_root, monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    from grpolab.jobs import state
    from grpolab.monitor.dashboard import WIDGET_VIEW, Dashboard

    run = create_run("tiny", run_id="shown")
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(5))
    run.write_status(state="RUNNING", job_id="j", total_steps=30)
    monkeypatch.setattr(state, "refresh", lambda r: r.status())
    published = []
    shell = InteractiveShell.instance()
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, *a, **k: published.append(data))
    dash = Dashboard("shown", interval=1).show()
    controls = published[0]
    assert controls[WIDGET_VIEW]["model_id"] == dash.widget.model_id and "Stop run" in controls["text/plain"]
    dash.refresh()
    dash.stop()
    assert any("stopped following run shown (it goes on)" in d.get("text/plain", "") for d in published)


def test_state_line_says_as_of_and_only_the_refreshing_widget_says_live(runs_root, monkeypatch):
    """What is saved with the notebook (the state line) says when it was read and how to reconnect, never that it
    is refreshing; "live" is said by a widget only while the refresh thread runs, with the style that hides it and
    greys Stop run out once ipywidgets marks the widget disconnected (a reopened notebook, no kernel)."""
    import re
    import threading

    from grpolab.jobs import state
    from grpolab.monitor.dashboard import DISCONNECTED, Dashboard

    run = create_run("tiny", run_id="asof")
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(5))
    run.write_status(state="RUNNING", job_id="j", total_steps=30)
    monkeypatch.setattr(state, "refresh", lambda r: r.status())
    dash = Dashboard("asof", interval=0.05)
    dash.refresh()  # not from the refresh thread: nothing keeps it live
    assert re.search(r"RUNNING as of \d\d:\d\d:\d\d", dash.state_text) and "reconnect" in dash.state_text
    assert "refreshing" not in dash.state_text + dash.state_html and dash.live_label.value == ""
    seen = threading.Event()
    labels = []

    def watch(change):
        labels.append(change["new"])
        seen.set()

    dash.live_label.observe(watch, names="value")
    dash.start()
    assert seen.wait(20)
    live = next(v for v in labels if v)
    assert "live</span>: refreshing every 0.05 s" in live and f".{DISCONNECTED} .grpolab-live{{display:none}}" in live
    assert "Stop run cannot act" in live and "grpolab-stop" in dash.stop_button._dom_classes
    assert "refreshing" not in dash.state_html  # the saved outputs never claim it
    dash.stop()
    dash._thread.join(timeout=20)
    assert dash.live_label.value == ""  # nothing refreshes it any more


def test_03_launchs_line_says_as_of_and_a_stopped_run_is_not_running(runs_root, monkeypatch):
    """03_launch's progress line (an ordinary output a saved notebook keeps): the state as of a time, how to follow
    the run again, no claim that it refreshes; once the run was stopped it says STOPPED, not RUNNING."""
    import re

    from IPython.core.interactiveshell import InteractiveShell

    from grpolab.monitor.progress import Progress
    from grpolab.notebook.stages import _LiveLine

    shell = InteractiveShell.instance()
    published = []
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, *a, **k: published.append(data))
    line = _LiveLine("launched")
    tracker = Progress("launched", total=40, out=lambda _l: None)
    line.show(tracker, "RUNNING")
    running = published[-1]["text/plain"]
    assert re.search(r"RUNNING as of \d\d:\d\d:\d\d", running) and "grpolab monitor launched" in running
    assert "refreshing" not in running + published[-1]["text/html"]
    line.show(tracker, "STOPPED")
    stopped = published[-1]["text/plain"]
    assert re.search(r"STOPPED as of \d\d:\d\d:\d\d", stopped) and "RUNNING" not in stopped


def test_the_dashboard_refreshes_through_the_one_follow_loop(runs_root, monkeypatch):
    """The live view polls with grpolab.monitor.progress.follow (the loop `grpolab run --wait` and the notebooks
    follow with): each poll is one refresh, and it stops after `max_updates` or once the run ended."""
    from grpolab.jobs import state
    from grpolab.monitor import dashboard, progress

    run = create_run("tiny", run_id="loop")
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(5))
    run.write_status(state="RUNNING", total_steps=10)
    monkeypatch.setattr(state, "refresh", lambda r: r.status())
    polls, refreshes = [], []
    monkeypatch.setattr(dashboard, "follow", lambda *a, **k: polls.append(k["poll_s"]) or progress.follow(*a, **k))
    dash = dashboard.Dashboard("loop", interval=0.01)
    real = dash.refresh
    monkeypatch.setattr(dash, "refresh", lambda **k: refreshes.append(1) or real(**k))
    dash.start(background=False, max_updates=3)
    assert polls == [0.01] and len(refreshes) == 3 and "step 5/10" in dash.state_text
    run.write_status(state="SUCCEEDED")
    dash.start(background=False)  # an ended run: one more poll, then the loop ends by itself
    assert len(polls) == 2 and len(refreshes) == 4 and dash.finished
