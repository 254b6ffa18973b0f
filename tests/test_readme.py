"""Every command in the README's code blocks is run here, as a user would run it (the quick start's `make test`
is what CI runs: tests/test_project.py checks that .ci/run calls exactly it). The quick start's `make run`
trains `tiny` end to end through Ray: the greedy validation accuracy must end at 0.4 or more, at least 0.25
above where GRPO started, and the training reward must rise."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOT_RUN_HERE = {"make test"}  # CI's own command (.ci/run); running it inside the suite would recurse
# commands another test runs as written, with more checks than an exit status (tiny through every stage of run.ipynb,
# glm5_2's dry run, 01_setup importing the README's script)
RUN_ELSEWHERE = {
    '.venv/bin/papermill notebooks/run.ipynb out.ipynb -p model tiny -y "overrides: [trainer.total_steps=40]"': (
        "tests/test_notebooks.py::test_tiny_end_to_end_through_run_ipynb"
    ),
    ".venv/bin/papermill notebooks/run.ipynb out.ipynb -p model glm5_2 -p dry_run True": (
        "tests/test_notebooks.py::test_dry_run_of_each_kind_of_recipe"
    ),
    ".venv/bin/papermill notebooks/01_setup.ipynb out.ipynb -p script tests/data/import/run_qwen3_8b_grpo_npu.sh": (
        "tests/test_import.py::test_01_setup_imports_a_script"
    ),
}
# commands that stay up until stopped: run them with a time limit and look for what they print when ready
SERVERS = {".venv/bin/grpolab lab": "is running at"}
EXPECTED_EXIT = {
    ".venv/bin/grpolab check glm5_2 --set rollout.ep=32 --set train.tp=6": 1,
    ".venv/bin/grpolab plan glm5_2 --nodes 1": 1,
}


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    commands = []
    for lang, block in re.findall(r"```(\w*)\n(.*?)```", text, flags=re.S):
        if lang != "bash":
            continue
        for line in block.splitlines():
            command = line.split("  #")[0].strip()
            if command and not command.startswith("#"):
                commands.append(command)
    return commands


COMMANDS = [c for c in readme_commands() if c not in NOT_RUN_HERE | set(RUN_ELSEWHERE) and c != "make run"]


def test_readme_has_the_two_quick_start_commands():
    assert readme_commands()[:2] == ["make run", "make test"]


def test_commands_run_elsewhere_are_in_the_readme_and_their_test_runs_them_as_written():
    for command, test in RUN_ELSEWHERE.items():
        assert command in readme_commands(), command
        path, name = test.split("::")
        assert f"def {name}(" in (ROOT / path).read_text() and "readme_command(" in (ROOT / path).read_text()


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(command, no_head, tmp_path):
    """Each command as a user types it, on a machine with no Ray head running (`no_head`)."""
    if command in SERVERS:
        extra = " --no-browser --port=0 -- --IdentityProvider.token=test"  # `grpolab lab` adds --allow-root for root
        # a session of its own, so that the whole group (the shell and the server it started) is stopped after
        proc = subprocess.Popen(
            f"{command}{extra}",
            shell=True,
            cwd=ROOT,
            env=no_head,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            seen = ""
            for line in proc.stdout:
                seen += line
                if SERVERS[command] in line:
                    break
            assert SERVERS[command] in seen, seen
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        return
    if " out.ipynb" in command:  # write the executed copy into a temp folder, not the checkout
        command = command.replace(" out.ipynb", f" {tmp_path}/out.ipynb")
    proc = subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=900, env=no_head)
    assert proc.returncode == EXPECTED_EXIT.get(command, 0), proc.stdout[-3000:] + proc.stderr[-3000:]
    said = proc.stdout + proc.stderr
    assert "Traceback" not in said, said[max(0, said.find("Traceback") - 2000) :][:6000]


@pytest.mark.slow(90)
def test_quick_start_run_trains_tiny_end_to_end(no_head, _isolated_runs):
    proc = subprocess.run(["make", "run"], cwd=ROOT, capture_output=True, text=True, timeout=900, env=no_head)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    out = proc.stdout
    # before training: the data summary of the files tiny's recipe names and the dry run of its reward
    assert "data.train_files params/data/tiny/train.parquet: parquet, 70 rows read of 70" in out, out[:3000]
    # every row of tiny's 70 + 30 (grpolab data samples the start, the end and across each file, up to 400 rows)
    assert re.search(r"reward dry run: \S+/params/rewards/arith.py:compute_score on 100 rows, \d+ calls", out)
    assert "right answer: mean 0.5" in out and "wrong answer: mean 0," in out
    assert out.index("reward dry run") < re.search(r"\bstep \d+/\d+", out).start()  # checked, then trained
    run_dir = Path(re.search(r"run directory: (\S+)", out).group(1))
    assert run_dir.parent == _isolated_runs and (run_dir / "curves.png").exists()
    assert re.search(r"reward\s+[\d.]+ \(step \d+\) -> [\d.]+", out) and "val_acc" in out
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    acc = [
        (line["step"], line["data"]["val-core/arith/acc/mean@1"])
        for line in lines
        if "val-core/arith/acc/mean@1" in line["data"]
    ]
    reward = [line["data"]["critic/score/mean"] for line in lines if "critic/score/mean" in line["data"]]
    start, end = acc[0][1], acc[-1][1]
    assert end >= 0.4 and end - start >= 0.25, acc
    k = max(1, len(reward) // 5)
    assert sum(reward[-k:]) / k > sum(reward[:k]) / k, "the training reward rises"
    assert "grpolab head stop" in out  # the quick start ends by saying how to stop the embedded head
    # a healthy run raises no training-collapse alert (issue 44: the same tiny at lr 1000 does, in every view)
    from grpolab.jobs.runs import Run
    from grpolab.monitor.collapse import run_collapse

    assert "training collapsed" not in out and run_collapse(Run(run_dir)) is None
