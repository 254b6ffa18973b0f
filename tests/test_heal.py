"""Runs that heal themselves and show every node (issue 43), without Ray: the restart policy by cause id, the lineage
every view shows, the restart plan's refusals, the telemetry parsers on real device-tool output, and the node
alerts on planted telemetry. The real runs (a killed worker, a reward error, a closed terminal and kernel, a node
that vanishes) are in tests/test_heal_run.py and tests/test_heal_cluster.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from grpolab.heal.policy import Failed, decide
from grpolab.jobs import lineage
from grpolab.jobs.resume import ResumeRefused, plan_restart
from grpolab.jobs.telemetry import parse_npu_smi, parse_nvidia_smi
from grpolab.monitor.causes import BY_ID
from grpolab.monitor.nodes import node_alerts, nodes_summary, read_nodes
from grpolab.monitor.thresholds import load_thresholds
from grpolab.recipe.loader import load_recipe, to_yaml

DATA = Path(__file__).parent / "data" / "telemetry"
POLICY = load_recipe("tiny").trainer.restarts  # base.yaml's policy, as every recipe gets it
RULES = load_thresholds().nodes


# ------------------------------------------------------------------------------------------------ the policy


def test_every_cause_the_policy_names_is_one_the_diagnosis_knows():
    """A typo or a renamed cause in base.yaml would silently never restart: the lists name registry ids only."""
    assert set(POLICY.on_causes) <= set(BY_ID), set(POLICY.on_causes) - set(BY_ID)
    assert set(POLICY.exclude_on) <= set(POLICY.on_causes)
    for never in ("config-key", "reward-missing", "batch-divisible", "layout-mismatch", "nan-loss", "import-error"):
        assert never not in POLICY.on_causes


def test_a_transient_cause_restarts_with_its_number_and_a_doubling_back_off():
    now = time.time()
    first = decide(POLICY, Failed("comm-timeout", "10.0.0.7", 1210, now), [])
    assert first.restart and (first.number, first.of) == (1, POLICY.max) and first.wait_s == POLICY.backoff_s
    assert first.exclude  # comm-timeout is in exclude_on and the diagnosis named a node
    earlier = [{"number": 1, "decision": "restart", "cause": "comm-timeout", "step": 1210, "ended": now - 60}]
    second = decide(POLICY, Failed("worker-died", None, 1300, now), earlier)
    assert second.restart and second.number == 2 and second.wait_s == 2 * POLICY.backoff_s and not second.exclude


@pytest.mark.parametrize("cause", ["nan-loss", "config-key", "reward-missing", "unknown", "a-cause-added-later"])
def test_a_cause_the_policy_does_not_list_stops_the_run_at_once(cause):
    decision = decide(POLICY, Failed(cause, None, 5, time.time()), [], set(BY_ID) | {"unknown"})
    assert (
        not decision.restart and cause in decision.why and "on_causes" in decision.why or "no cause id" in decision.why
    )


def test_no_cause_stops():
    decision = decide(POLICY, Failed(None, None, 5, time.time()), [])
    assert not decision.restart and "no cause" in decision.why


def test_an_out_of_memory_that_recurs_at_the_same_step_is_deterministic():
    now = time.time()
    earlier = [{"number": 1, "decision": "restart", "cause": "device-oom", "step": 40, "ended": now - 100}]
    assert not decide(POLICY, Failed("device-oom", None, 40, now), earlier).restart
    assert decide(POLICY, Failed("device-oom", None, 41, now), earlier).restart  # another step: may be transient


def test_restarts_are_counted_within_the_window():
    now = time.time()
    old = [{"number": i, "decision": "restart", "cause": "worker-died", "step": i, "ended": now - 2 * POLICY.within_s}
           for i in range(1, 6)]  # fmt: skip
    assert decide(POLICY, Failed("worker-died", None, 99, now), old).restart  # all long ago
    recent = [{**a, "ended": now - 10} for a in old[: POLICY.max]]
    stopped = decide(POLICY, Failed("worker-died", None, 99, now), recent)
    assert not stopped.restart and f"trainer.restarts.max is {POLICY.max}" in stopped.why
    off = POLICY.model_copy(update={"max": 0})
    assert not decide(off, Failed("worker-died", None, 1, now), []).restart


# ------------------------------------------------------------------------------------------------ lineage and views


def _healed_lineage() -> dict:
    now = time.time()
    return {
        "attempts": [
            {"number": 1, "decision": "restart", "cause": "comm-timeout", "node": "10.0.0.7", "step": 1210,
             "restart": 1, "of": 3, "ended": now - 50},
            {"number": 2, "decision": "restart", "cause": "comm-timeout", "node": "10.0.0.9", "step": 1400,
             "restart": 2, "of": 3, "resumed_from": {"step": 1200}, "excluded": [{"node": "10.0.0.7 (ab12cd34)"}],
             "ended": now - 20},
            {"number": 3, "decision": "running", "resumed_from": {"step": 1400}, "started": now - 10},
        ]
    }  # fmt: skip


def test_the_lineage_reads_as_restart_n_of_m_after_the_cause_on_the_node_at_the_step():
    data = _healed_lineage()
    assert lineage.headline(data) == "restart 2 of 3 after comm-timeout on node 10.0.0.9 at step 1400"
    lines = lineage.attempt_lines(data)
    assert lines[0] == "attempt 1: comm-timeout on node 10.0.0.7 at step 1210 -> restart 1 of 3"
    assert "without node 10.0.0.7 (ab12cd34)" in lines[1] and lines[2].startswith("attempt 3 (from step 1400): running")
    assert lineage.final_failure(data) is None
    assert lineage.headline({"attempts": [{"number": 1, "decision": "succeeded"}]}) is None


def test_runs_status_and_monitor_show_the_restarts_and_the_final_diagnosis(finished_run, cli):
    from grpolab.monitor import synthetic

    healed = finished_run("healed", synthetic.healthy(20))
    lineage.write(healed.path, _healed_lineage() | {"attempts": _healed_lineage()["attempts"][:2]})
    data = _healed_lineage()
    data["attempts"][1] |= {"decision": "succeeded"}
    lineage.write(healed.path, {"attempts": data["attempts"][:2]})
    stopped = finished_run("stopped", synthetic.healthy(5), state="FAILED")
    why = "nan-loss is not one of trainer.restarts.on_causes (the transient causes a restart can cure)"
    lineage.write(
        stopped.path,
        {"attempts": [{"number": 1, "decision": "stop", "cause": "nan-loss", "step": 5, "why": why,
                       "message": "The loss became NaN at step 5.", "fix": "lower the lr", "lines": ["loss: nan"]}]},
    )  # fmt: skip
    out = cli("runs")
    row = next(line for line in out.stdout.splitlines() if line.startswith("healed"))
    assert "restart 1 of 3 after comm-timeout on node 10.0.0.7 at step 1210" in row, out.stdout
    assert "stopped after attempt 1: nan-loss is not one of" in next(
        line for line in out.stdout.splitlines() if line.startswith("stopped")
    )
    listed = {r["run_id"]: r for r in json.loads(cli("runs", "--json").stdout)}
    assert listed["healed"]["restarts"].startswith("restart 1 of 3")
    status = cli("status", "stopped")
    assert status.returncode == 1
    assert (
        "restarts: stopped after attempt 1" in status.stdout and "cause: nan-loss: The loss became NaN" in status.stdout
    )
    shown = json.loads(cli("status", "healed", "--json").stdout)
    assert [a["number"] for a in shown["attempts"]] == [1, 2] and shown["restarts"].startswith("restart 1 of 3")
    monitor = cli("monitor", "healed", "--no-png")
    assert "restarts  restart 1 of 3 after comm-timeout" in monitor.stdout
    assert "attempt 2 (from step 1200) without node 10.0.0.7 (ab12cd34): succeeded" in monitor.stdout


# ------------------------------------------------------------------------------------------------ the restart plan


def test_a_restart_is_refused_as_a_resume_is_when_there_is_nothing_to_resume_from(runs_root):
    from grpolab.jobs.runs import create_run

    run = create_run("tiny", run_id="no-ckpt")
    run.recipe_file.write_text(to_yaml(load_recipe("tiny", ["trainer.save_freq=-1"])))
    run.write_status(state="RUNNING")  # the run restarting itself still runs: that is no refusal here
    with pytest.raises(ResumeRefused, match="there is nothing to resume from"):
        plan_restart(run)


# ------------------------------------------------------------------------------------------------ telemetry


@pytest.mark.parametrize(
    "name, chips",
    [
        ("npu_smi_910b4.txt", ["0.0", "1.0"]),
        ("npu_smi_a3.txt", ["0.0", "0.1", "1.0"]),
        ("npu_smi_26rc2.txt", ["0.0", "0.1"]),
    ],
)
def test_npu_smi_tables_posted_in_public_threads_parse_to_their_chips(name, chips):
    devices = parse_npu_smi((DATA / name).read_text())
    assert [d["device"] for d in devices] == chips
    assert all(d["mem_total_mb"] == 65536 and 2800 < d["mem_used_mb"] < 3500 for d in devices)
    assert all(d["util_pct"] == 0 for d in devices)


def test_nvidia_smi_query_output_parses_and_a_field_not_reported_is_unknown():
    text = "0, 97, 71234, 81559\n1, [N/A], 1024, 81559\nnot a row\n"
    devices = parse_nvidia_smi(text)
    assert devices[0] == {"device": "0", "util_pct": 97.0, "mem_used_mb": 71234.0, "mem_total_mb": 81559.0}
    assert devices[1]["util_pct"] is None and len(devices) == 2


def _plant(run_dir: Path, node: str, samples: list[dict]) -> None:
    folder = run_dir / "telemetry"
    folder.mkdir(exist_ok=True)
    t0 = 1_700_000_000.0
    with open(folder / f"{node}.jsonl", "w") as fh:
        for i, s in enumerate(samples):
            row = {"t": t0 + 10 * i, "node_id": node * 4, "address": f"10.0.0.{node[-1]}", "host_mem_used_gb": 100,
                   "host_mem_total_gb": 1000, "cpu_pct": 30, "device_tool": "npu-smi"} | s  # fmt: skip
            fh.write(json.dumps(row) + "\n")


def _devices(util: float, used: float, n: int = 2) -> dict:
    return {
        "devices": [
            {"device": f"{i}.0", "util_pct": util, "mem_used_mb": used, "mem_total_mb": 65536} for i in range(n)
        ]
    }


def test_a_planted_straggler_and_a_memory_creep_raise_alerts_naming_their_nodes(finished_run):
    from grpolab.monitor import synthetic

    run = finished_run("nodes", synthetic.healthy(10))
    healthy = [_devices(90, 30000) for _ in range(30)]
    _plant(run.path, "node0001", healthy)
    _plant(run.path, "node0002", healthy)
    _plant(run.path, "node0003", [_devices(25, 30000) for _ in range(30)])  # a straggler
    creep = [_devices(90, 30000) | {"devices": [{"device": "0.0", "util_pct": 90, "mem_used_mb": 30000 + 700 * i,
             "mem_total_mb": 65536}, {"device": "1.0", "util_pct": 90, "mem_used_mb": 30000, "mem_total_mb": 65536}]}
             for i in range(30)]  # fmt: skip
    _plant(run.path, "node0004", creep)  # device 0.0 rises ~1 %/sample: 95 % within the hour
    found = node_alerts(read_nodes(run), RULES)
    by_rule = {a.rule: a for a in found}
    assert set(by_rule) == {"straggler", "device-memory-creep"}, found
    assert by_rule["straggler"].node.startswith("10.0.0.3") and "10.0.0.3" in by_rule["straggler"].message
    assert by_rule["device-memory-creep"].node.startswith("10.0.0.4")
    assert "device 0.0 of node 10.0.0.4" in by_rule["device-memory-creep"].message
    data = nodes_summary(run, RULES, run.path / "nodes.png")
    assert len(data["nodes"]) == 4 and Path(data["picture"]).stat().st_size > 1000


def test_a_host_near_its_ram_limit_and_a_full_device_are_named(finished_run):
    from grpolab.monitor import synthetic

    run = finished_run("full", synthetic.healthy(10))
    _plant(run.path, "node0001", [_devices(90, 30000) | {"host_mem_used_gb": 980} for _ in range(10)])
    _plant(run.path, "node0002", [_devices(90, 64000) for _ in range(10)])
    found = {(a.rule, a.node[:8]) for a in node_alerts(read_nodes(run), RULES)}
    assert found == {("host-ram", "10.0.0.1"), ("device-memory-full", "10.0.0.2")}


def test_a_healthy_cluster_raises_no_node_alert_and_one_noisy_sample_none_either(finished_run):
    from grpolab.monitor import synthetic

    run = finished_run("calm", synthetic.healthy(10))
    for node in ("node0001", "node0002", "node0003"):
        _plant(run.path, node, [_devices(85 + (i % 7), 30000 + 50 * (i % 3)) for i in range(30)])
    spike = [_devices(90, 30000) for _ in range(30)]
    spike[-1] = _devices(90, 65000) | {"host_mem_used_gb": 990}  # one sample at the limit: noise
    _plant(run.path, "node0004", spike)
    assert node_alerts(read_nodes(run), RULES) == []


def test_the_driver_run_by_hand_without_ray_runs_the_attempt_here_and_records_why_it_stopped(runs_root):
    """`python -m grpolab.heal.supervise RUN -- COMMAND` outside a Ray job (no RAY_ADDRESS: it never joins another
    cluster of this machine): the attempt runs on this node, its end and the decision go to lineage.json and
    job.json, and its log says why nothing was placed."""
    import os
    import subprocess
    import sys

    from grpolab.jobs.runs import create_run

    run = create_run("tiny", run_id="by-hand")
    run.recipe_file.write_text(to_yaml(load_recipe("tiny")))
    code = "print('ValueError: the data has no column answer', flush=True); raise SystemExit(3)"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run(
        [sys.executable, "-m", "grpolab.heal.supervise", str(run.path), "--", sys.executable, "-c", code],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (only,) = lineage.read(run.path)["attempts"]
    assert only["decision"] == "stop" and only["exit_code"] == 3 and only["cause"] == "unknown", only
    assert json.loads(run.job_file.read_text())["exit_code"] == 3
    log = run.job_log.read_text()
    assert "no Ray cluster to place attempts on" in log and "attempt 1 failed (unknown)" in log
