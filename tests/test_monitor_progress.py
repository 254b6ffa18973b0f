"""grpolab.monitor.progress: how far a followed run is, in lines rate-limited by time (not by steps or alerts),
with elapsed and remaining time and the latest reward and validation accuracy; and notebook.follow using it."""

from __future__ import annotations

import re

from grpolab.monitor import load_metrics, synthetic
from grpolab.monitor.progress import Progress
from grpolab.notebook.display import UNREACHABLE_CHUNKS


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _grow(path, view, first, count):
    synthetic.write_jsonl(path, synthetic.healthy(first + count - 1)[first - 1 :], append=True)
    view.refresh()


def test_lines_are_rate_limited_by_time_whatever_the_number_of_steps(tmp_path):
    path, clock, lines, times = tmp_path / "metrics.jsonl", Clock(), [], []
    path.write_text("")
    view = load_metrics(path)
    progress = Progress(
        "r1", total=400, every_s=30, out=lambda text: (lines.append(text), times.append(clock.now)), clock=clock
    )
    step = 1
    for _ in range(120):  # 120 polls 2 s apart (240 s), 1-3 new steps each
        clock.now += 2
        _grow(path, view, step, 1 + step % 3)
        step = view.last_step + 1
        progress.update(view, {"total_steps": 400})
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert times[0] == 1002 and lines[0].startswith("step ")  # the first step is shown at once
    assert gaps and all(30 <= gap < 32 for gap in gaps)  # then one line per 30 s (polls are 2 s apart)
    progress.close({"state": "SUCCEEDED"}, view)
    assert lines[-1].startswith(f"run r1: step {view.last_step}/400") and lines[-1].endswith("SUCCEEDED")


def _strip_step_times(records):
    for record in records:
        record["data"].pop("timing_s/step")
    return records


def test_a_line_says_the_runs_elapsed_time_remaining_reward_and_validation_accuracy(tmp_path):
    """Elapsed is the run's own time (its record's start), not the time since this view opened."""
    path, clock, lines = tmp_path / "metrics.jsonl", Clock(), []
    synthetic.write_jsonl(path, _strip_step_times(synthetic.healthy(10)))
    view = load_metrics(path)
    progress = Progress("r2", total=100, every_s=10, out=lines.append, clock=clock)
    started = clock.now - 300  # the run started 5 minutes before anyone looked
    progress.update(view, {"started": started})
    assert lines[-1].startswith("step 10/100 (10 %)  elapsed 5:00  remaining ~45:00  reward=")  # at once: 30 s/step
    clock.now += 60
    synthetic.write_jsonl(path, _strip_step_times(synthetic.healthy(30))[10:], append=True)
    view.refresh()
    progress.update(view, {"started": started})  # 20 steps in the 60 s seen: 70 left take 210 s
    assert lines[-1].startswith("step 30/100 (30 %)  elapsed 6:00  remaining ~3:30  reward=")
    assert "val_acc=" in lines[-1]  # synthetic runs validate every 10 steps
    assert progress.remaining_s() == 210
    progress.close({"state": "SUCCEEDED", "started": started, "ended": started + 400})
    assert lines[-1] == f"run r2: {progress.line()}" and "elapsed 6:40" in lines[-1] and "remaining" not in lines[-1]


def test_remaining_time_from_the_logged_step_times_at_the_first_refresh(tmp_path):
    """A view opened at 25 % of a run that logs timing_s/step knows the time left at once."""
    path, clock, lines = tmp_path / "metrics.jsonl", Clock(), []
    records = synthetic.healthy(25)
    for record in records:
        record["data"]["timing_s/step"] = 4.0
    synthetic.write_jsonl(path, records)
    progress = Progress("r4", every_s=10, out=lines.append, clock=clock)
    progress.update(load_metrics(path), {"total_steps": 100, "started": clock.now - 100})
    assert lines == ["step 25/100 (25 %)  elapsed 1:40  remaining ~5:00  " + lines[0].split("~5:00  ")[1]]
    assert progress.remaining_s() == 300


def test_nothing_logged_yet_prints_nothing_until_the_end(tmp_path):
    lines = []
    progress = Progress("r3", total=None, every_s=1, out=lines.append, clock=Clock())
    progress.update(None, {"state": "PENDING"})
    assert lines == []
    progress.close({"state": "FAILED", "started": 900.0, "ended": 930.0})
    assert lines == ["run r3: step -  elapsed 0:30  FAILED"]
    progress = Progress("r5", every_s=1, out=lines.append, clock=Clock())
    # a run that ended before its job started has no time of its own (an ill-typed record never gets here: it is a
    # BadRecord in every view, tests/test_monitor_hostile.py)
    progress.close({"state": "FAILED", "submitted": 900.0})
    assert lines[-1] == "run r5: step -  FAILED"


def test_follow_prints_progress_lines_then_the_state(tmp_path, monkeypatch):
    """notebook.follow headless: only Ray's answer is replaced (10 more steps per poll, then the job ends)."""
    from grpolab import notebook as nb
    from grpolab.jobs import state
    from grpolab.jobs.runs import create_run

    run = create_run("tiny", run_id="run-a", root=tmp_path)
    run.write_status(state="RUNNING", job_id="run-a", total_steps=30)
    polls = []

    def refresh_status(r):
        polls.append(1)
        _grow(r.metrics_file, _Empty(), 10 * len(polls) - 9, 10)
        return r.write_status(state="SUCCEEDED") if len(polls) == 3 else r.record()

    monkeypatch.setattr(state, "refresh", refresh_status)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    lines = []
    status = nb.follow(run, every_s=0.0, progress=lines.append)
    assert status["state"] == "SUCCEEDED" and len(polls) == 3
    assert lines[0] == "following run run-a: a line every 0 s"
    assert lines[1].startswith("step 10/30") and lines[2].startswith("step 20/30")
    assert lines[-1].startswith("run run-a: step 30/30 (100 %)") and lines[-1].endswith("SUCCEEDED")


def test_follow_stops_once_ray_has_not_answered_for_a_while(tmp_path, monkeypatch):
    """notebook.follow: a run whose Ray stopped answering is left to go on, with why, after UNREACHABLE_CHUNKS x
    every_s seconds in a row without an answer (an answer in between starts the count again)."""
    import time

    from grpolab import notebook as nb
    from grpolab.jobs import state
    from grpolab.jobs.runs import create_run

    run = create_run("tiny", run_id="run-u", root=tmp_path)
    run.write_status(state="RUNNING", job_id="run-u", total_steps=30)
    polls, clock = [], {"now": 0.0}
    monkeypatch.setattr(time, "monotonic", lambda: clock["now"])  # the polls' sleeps pass at once
    monkeypatch.setattr(time, "sleep", lambda s: clock.update(now=round(clock["now"] + s, 6)))

    def refresh_status(r):
        polls.append(1)
        note = "" if len(polls) == 3 else "Ray is unreachable at 127.0.0.1:6379"
        return {**r.record(), "note": note}

    monkeypatch.setattr(state, "refresh", refresh_status)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    lines = []
    status = nb.follow(run, every_s=1.0, progress=lines.append)
    assert status["state"] == "RUNNING"
    assert len(polls) == 3 + UNREACHABLE_CHUNKS + 1  # the count started again after the answer at poll 3
    assert lines[-1] == "run run-u: step -/30  stopped following: Ray is unreachable at 127.0.0.1:6379"


class _Empty:
    def refresh(self):
        return 0


def test_the_notebooks_follow_keeps_one_view_and_reads_each_poll_once(tmp_path, monkeypatch):
    """03_launch / 04_monitor headless (notebook.follow): the real monitor wait is given the notebook's one view,
    so each poll opens metrics.jsonl once and reads only what was appended (issue 20); only Ray is replaced."""
    import time

    from grpolab import notebook as nb
    from grpolab.jobs import state
    from grpolab.jobs.runs import create_run
    from grpolab.monitor import metrics

    run = create_run("tiny", run_id="run-f", root=tmp_path)
    run.write_status(state="RUNNING", job_id="run-f", total_steps=30, started=time.time() - 60)
    records, polls = synthetic.healthy(30), []

    def refresh_status(r):  # Ray's answers: 10 more steps per poll, then the job ends
        polls.append(1)
        synthetic.write_jsonl(r.metrics_file, records[10 * (len(polls) - 1) : 10 * len(polls)], append=True)
        return r.write_status(state="SUCCEEDED", ended=time.time()) if len(polls) == 3 else r.record()

    counts, opened, real_open = {"bytes": 0}, [], metrics.open_regular

    def spy_open(path):
        opened.append(path)
        return _CountingHandle(real_open(path), counts)

    monkeypatch.setattr(state, "refresh", refresh_status)
    monkeypatch.setattr(metrics, "open_regular", spy_open)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    lines = []
    status = nb.follow(run, every_s=0.0, progress=lines.append)
    assert status["state"] == "SUCCEEDED" and len(polls) == 3
    assert [p.name for p in opened] == ["metrics.jsonl"] * len(polls)  # one view, one read per poll
    size = run.metrics_file.stat().st_size
    assert size <= counts["bytes"] <= size + 256 * len(polls)  # each byte once (plus the 256-byte head check)
    assert lines[1].startswith("step 10/30") and lines[-1].startswith("run run-f: step 30/30 (100 %)")


def test_follow_from_the_run_files_until_the_other_kernel_is_done(tmp_path):
    """run.ipynb's monitor stage: progress from status.json and metrics.jsonl while 04_monitor runs elsewhere."""
    from grpolab.jobs.runs import create_run
    from grpolab.monitor.progress import follow

    run = create_run("tiny", run_id="run-b", root=tmp_path)
    run.write_status(state="RUNNING", total_steps=20)
    polls, lines = [], []

    def busy() -> bool:
        polls.append(1)
        if len(polls) == 3:
            synthetic.write_jsonl(run.metrics_file, synthetic.healthy(20))
            run.write_status(state="SUCCEEDED")
        return len(polls) < 6

    progress = Progress("run-b", every_s=0.0, out=lines.append)
    status = follow(run, progress.update, ask_ray=False, busy=busy, poll_s=0.0)
    progress.close(status)
    assert status["state"] == "SUCCEEDED" and len(polls) < 6  # the run's end, read from its files
    assert lines[0].startswith("step 20/20 (100 %)") and lines[-1].startswith("run run-b: step 20/20")
    assert lines[-1].endswith("SUCCEEDED")
    other = create_run("tiny", run_id="run-c", root=tmp_path)
    other.write_status(state="RUNNING", total_steps=20)  # a kernel done before its run: following stops with it
    assert follow(other, progress.update, ask_ray=False, busy=lambda: False)["state"] == "RUNNING"


class _CountingHandle:
    """A file handle that counts the bytes read through it (the spy on metrics.jsonl)."""

    def __init__(self, handle, counts):
        self.handle, self.counts = handle, counts

    def read(self, size=-1):
        data = self.handle.read(size)
        self.counts["bytes"] += len(data)
        return data

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()


def test_run_wait_keeps_one_view_reads_each_refresh_once_and_classifies_a_failure_once(tmp_path, monkeypatch):
    """`grpolab run --wait` (progress.follow_run): only Ray's answer is replaced; the spies count what is read."""
    import importlib
    import time

    from grpolab.jobs import state
    from grpolab.jobs.runs import create_run
    from grpolab.monitor import metrics
    from grpolab.monitor.progress import follow_run

    summary = importlib.import_module("grpolab.monitor.summary")  # the module (the package exports a function)

    run = create_run("tiny", run_id="run-w", root=tmp_path)
    run.write_status(state="RUNNING", job_id="run-w", total_steps=30, started=time.time() - 90)
    records, polls = synthetic.healthy(30), []

    def refresh_status(r):  # Ray's answers: 10 more steps per poll, then the job fails with a device OOM
        polls.append(1)
        synthetic.write_jsonl(r.metrics_file, records[10 * (len(polls) - 1) : 10 * len(polls)], append=True)
        if len(polls) < 3:
            return r.status()
        r.job_log.write_text("step 30 done\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3 GiB\n")
        return r.write_status(state="FAILED", message="Job entrypoint command failed", ended=time.time())

    counts, opened, classified = {"bytes": 0}, [], []
    real_open, real_classify = metrics.open_regular, summary.log_failure

    def spy_open(path):
        opened.append(path)
        return _CountingHandle(real_open(path), counts)

    monkeypatch.setattr(state, "refresh", refresh_status)
    monkeypatch.setattr(metrics, "open_regular", spy_open)
    monkeypatch.setattr(summary, "log_failure", lambda r, s: classified.append(1) or real_classify(r, s))
    lines = []
    outcome = follow_run(run, progress=lines.append, poll_s=0.0, every_s=0.0)

    assert outcome.status["state"] == "FAILED" and len(polls) == 3
    refreshes = len(polls) + 1  # one per poll, and the last look before the curves and the outcome
    assert [p.name for p in opened] == ["metrics.jsonl"] * refreshes  # one view, one read per refresh
    size = run.metrics_file.stat().st_size
    assert size <= counts["bytes"] <= size + 256 * refreshes  # each byte once (plus the 256-byte head check)
    assert len(classified) == 1  # classified once, for the summary and the outcome text alike
    assert "cause: device-oom" in outcome.text and outcome.summary["failure"]["cause"] == "device-oom"
    assert (run.path / "curves.png").exists() and f"curves: {run.path / 'curves.png'}" in outcome.text
    assert "reward" in outcome.text
    # elapsed counts from the record's start, 90 s before the follow began; a loaded machine adds seconds
    first = re.match(r"step 10/30 \(33 %\)  elapsed (\d+):(\d\d)", lines[0])
    assert first and 90 <= 60 * int(first[1]) + int(first[2]) < 150, lines[0]


def test_remaining_time_moves_smoothly_when_steps_turn_slow(tmp_path):
    """The issue's jump (8:37 to 13:50 in 15 s): steps that triple move the estimate over a minute or so, never by
    more than a quarter of the gap in one 15 s refresh, and it ends at the new pace."""
    path, clock = tmp_path / "metrics.jsonl", Clock()
    records = synthetic.healthy(600)
    for record in records:
        record["data"]["timing_s/step"] = 1.0 if record["step"] <= 200 else 3.0
    synthetic.write_jsonl(path, records[:200])
    view = load_metrics(path)
    progress = Progress("slow", total=600, every_s=1e9, out=lambda _line: None, clock=clock)
    progress.update(view, {})
    assert progress.remaining_s() == 400  # 400 steps left at 1 s
    seen, step = [], 200
    while step < 300:  # a refresh every 15 s, 5 steps each (the slow steps take 3 s)
        clock.now += 15
        synthetic.write_jsonl(path, records[step : step + 5], append=True)
        step += 5
        view.refresh()
        progress.update(view, {})
        seen.append(progress.remaining_s())
    jumps = [abs(b - a) for a, b in zip([400.0, *seen], seen)]
    gap = (600 - 205) * 3.0 - (600 - 205) * 1.0  # what the unsmoothed estimate jumps by once the window is slow
    assert max(jumps) < 0.2 * gap, jumps
    assert abs(seen[-1] - (600 - 300) * 3.0) < 0.05 * (600 - 300) * 3.0  # after 5 minutes: the new pace
