"""grpolab.monitor.dashboard: the ipywidgets live view (built and refreshed without a browser)."""

from __future__ import annotations

import pytest

from grpolab.monitor import synthetic
from grpolab.runs import create_run

pytest.importorskip("ipywidgets")
pytest.importorskip("IPython")


@pytest.fixture
def runs_root(tmp_path, monkeypatch):
    root = tmp_path / "runs"
    monkeypatch.setenv("GRPOLAB_RUNS", str(root))
    return root


def test_dashboard_refreshes_until_the_job_ends_and_stops_it(runs_root, monkeypatch):
    from grpolab.monitor.dashboard import Dashboard, live

    run = create_run("tiny", run_id="dash")
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(20))
    run.write_status(state="RUNNING", job_id="raysubmit_9")
    stopped = []

    def stop_run(r):
        stopped.append(r.run_id)
        return r.write_status(state="STOPPED")

    # no Ray job behind this run: the launch module's Ray calls are replaced, the dashboard's code is not
    from grpolab import launch

    monkeypatch.setattr(launch, "stop_run", stop_run)
    monkeypatch.setattr(launch, "refresh_status", lambda r: r.status())

    dash = live("dash", interval=0.01, display=False, background=False, max_updates=1)
    assert isinstance(dash, Dashboard)
    assert "RUNNING" in dash.status.value and "step 20" in dash.status.value
    assert bytes(dash.image.value).startswith(b"\x89PNG")
    assert "critic/score/mean" in dash.output.outputs[0]["text"]
    assert not dash.stop_button.disabled

    # more steps arrive: the next refresh reads only them
    synthetic.write_jsonl(run.metrics_file, synthetic.healthy(25)[20:], append=True)
    offset_before = dash.monitor.view._tail.offset
    dash.refresh()
    assert "step 25" in dash.status.value and dash.monitor.view._tail.offset > offset_before

    dash.stop_button.click()  # the button calls grpolab.launch.stop_run, then refreshes
    assert stopped == ["dash"]
    assert "STOPPED" in dash.status.value and dash.stop_button.disabled and dash.finished
    dash.start(background=False)  # a finished run: one refresh, then the loop ends by itself


def test_stop_that_cannot_reach_ray_says_why(runs_root):
    from grpolab.monitor.dashboard import Dashboard

    run = create_run("tiny", run_id="noray")
    run.write_status(state="RUNNING", job_id="noray", ray_address="http://127.0.0.1:9", embedded=False)
    dash = Dashboard("noray", interval=1)
    dash.refresh()
    dash.stop_button.click()
    assert "stop failed" in dash.status.value and not dash.stop_button.disabled


def test_background_thread_stops_on_request(runs_root):
    from grpolab.monitor.dashboard import Dashboard

    run = create_run("tiny", run_id="bg")
    run.write_status(state="RUNNING")
    dash = Dashboard("bg", interval=0.05).start()
    dash.stop()
    dash._thread.join(timeout=20)
    assert not dash._thread.is_alive()
