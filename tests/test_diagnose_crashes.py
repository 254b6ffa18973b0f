"""`grpolab diagnose` on what the third held-out batch (corpus batch 11) taught: a crash, a traceback's frames alone
or a bare statement of a missing state is a failure (exit 1, a first error said), never "no failure"; a segfault
in a checkpoint's writer is the save's; the record that introduced an exception is said with it; the words of a
frame's source line are code, not a report. The logs are the corpus's real ones (tests/data/failures)."""

from __future__ import annotations

import io
import json
import sys

import pytest

from grpolab.monitor.diagnose import diagnose_text
from tests.test_diagnose import _log


@pytest.fixture
def cli(monkeypatch):
    import grpolab.cli

    monkeypatch.setattr(grpolab.cli, "VERBS", {"diagnose": "diagnose"})
    return grpolab.cli.main


def _stdin(cli, monkeypatch, capsys, case: str) -> tuple[int, dict]:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_log(case).encode())))
    code = cli(["diagnose", "-", "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    "case",
    ["areal-644", "rl-3168", "rl-522", "skyrl-284", "megatron-bridge-2355", "ms-swift-8306"],
)
def test_a_failed_log_without_a_python_error_line_is_never_healthy(cli, monkeypatch, capsys, case):
    # the six logs that answered "no failure", exit 0, before batch 11: a traceback's frames alone, a bare `... is
    # not set.`, NeMo RL's `Error in X: ...`, torch's `!!!!!!! Segfault encountered !!!!!!!`
    code, out = _stdin(cli, monkeypatch, capsys, case)
    assert code == 1 and out["failure"]["first_error"].strip(), out


def test_a_segfault_in_a_checkpoints_writer_is_the_save_and_names_its_rank_and_node():
    # the native backtrace under torch's banner runs through torch.save's zip writer; srun's `93: ` label is the rank
    failure = diagnose_text(_log("megatron-bridge-2355"))
    assert (failure.cause, failure.family, failure.rank) == ("checkpoint-save", "checkpoint-save", 93)
    assert failure.first_error.startswith(
        "!!!!!!! Segfault encountered"
    )  # its rank said apart, as Ray's and torchrun's
    # UCX's `[host:pid:0:tid] Caught signal 11`, between NeMo's records of the save: the host, and the save
    failure = diagnose_text(_log("nemo-speech-14906"))
    assert (failure.cause, failure.family, failure.node) == ("checkpoint-save", "checkpoint-save", "c608-061")
    # a segfault with no save around it stays a dead worker
    assert diagnose_text(_log("nemo-rl-834")).cause == "worker-died"


def test_a_log_cut_inside_a_traceback_says_its_innermost_frame_not_the_header():
    failure = diagnose_text(_log("prime-rl-947"))
    assert "Traceback (most recent" not in failure.first_error and "orchestrator.py" in failure.first_error
    failure = diagnose_text(_log("easyr1-641"))  # a tqdm bar printed without a newline before `Traceback`
    assert "Traceback" not in failure.first_error and "it/s]" not in failure.first_error
    failure = diagnose_text(_log("areal-644"))  # the frames through update_weights: the weight sync
    assert failure.family == "weight-sync" and "full_tensor" in failure.first_error


def test_the_record_that_introduced_an_exception_is_said_with_it():
    failure = diagnose_text(_log("ms-swift-6935"))  # a bare NotImplementedError under swift's record of the call
    assert failure.first_error.startswith("[ERROR:swift] Method execution failed: collective_rpc\nNotImplementedError")
    assert (failure.cause, failure.family) == ("import-error", "version-mismatch")  # vLLM lacks what swift calls
    failure = diagnose_text(_log("rl-3774"))
    assert failure.first_error.startswith("Error in VllmInternalWorkerExtension.update_weights_from_collective:\n")
    assert failure.family == "weight-sync"


def test_a_frames_source_line_is_code_not_a_collective_timeout():
    # `collective_rpc(method, timeout, ...)` under its frame named comm-timeout before batch 11
    assert diagnose_text(_log("ms-swift-6935")).cause != "comm-timeout"
    assert diagnose_text(_log("openrlhf-1193")).cause != "comm-timeout"


def test_rays_list_of_what_may_have_killed_an_actor_is_advice_not_a_kill():
    # a post that wraps Ray's message mid-word: `oot causes. (1) The process is killed by SIGKILL by OOM killer ...`
    failure = diagnose_text(_log("simplerl-reason-38"))
    assert failure.cause == "worker-died" and failure.first_error.startswith("The actor is dead")


def test_families_from_the_message_and_the_stack():
    assert diagnose_text(_log("verl-600")).family == "data-error"  # pandas: None of [Index([...])] in the columns
    assert diagnose_text(_log("agent-lightning-57")).family == "chat-template"  # transformers' default template
    assert diagnose_text(_log("trl-3633")).family == "trainer-bug"  # a None where an object was due
    assert diagnose_text(_log("verl-5008")).family == "trainer-bug"  # no running event loop: the code's order
    assert diagnose_text(_log("verl-5558")).cause == "reward-missing"  # NotImplementedError in the reward's frames
    assert diagnose_text(_log("vllm-ascend-3255")).cause == "weight-sync"  # init_communicator's worker failed
    text = (  # TRL's check (open-r1 issue 236's title: its posted log is cut to `ValueError: T`)
        "ValueError: The global train batch size (3 x 1) must be evenly divisible by the number of generations per "
        "prompt (8). Given the current train batch size, the valid values for the number of generations are: [3].\n"
    )
    assert diagnose_text(text).cause == "batch-divisible"
    text = "ValueError: Image features and image tokens do not match: tokens: 7536, features 9092\n"  # EasyR1-641
    assert diagnose_text(text).cause == "data-error"


def test_a_cann_error_code_names_the_rank_that_reported_it_first():
    failure = diagnose_text(_log("vllm-ascend-5661"))  # `[rank9]:... Warning: EZ9999: Inner Error!` over its detail
    assert (failure.cause, failure.rank) == ("device-fault", 9) and "EZ9999: Inner Error!" in failure.first_error


def test_a_python_fatal_error_with_faulthandlers_dump_in_a_save_is_the_save():
    # faulthandler writes `File "...", line N in f` (no comma), innermost call first
    text = (
        "INFO 12-01 10:00:00 saving checkpoint to /ckpt/global_step_10\n"
        "Fatal Python error: Segmentation fault\n\n"
        "Thread 0x00007f0000000000 (most recent call first):\n"
        '  File "/usr/lib/python3.10/site-packages/torch/serialization.py", line 652 in _save\n'
        '  File "/usr/lib/python3.10/site-packages/torch/serialization.py", line 441 in save\n'
    )
    failure = diagnose_text(text)
    assert (failure.cause, failure.family) == ("checkpoint-save", "checkpoint-save")
    assert failure.first_error == "Fatal Python error: Segmentation fault"
    # the same crash with no save around it is still a failure, never "no failure"
    assert diagnose_text(text.replace("saving checkpoint to", "generating for").replace("_save", "_run")) is not None


def test_a_components_note_is_not_a_failure():
    # torch's cpuinfo note and an environment variable left at its default name no call and no state a run needs
    assert diagnose_text("Error in cpuinfo: prctl(PR_SET_NO_NEW_PRIVS) failed\n") is None
    assert diagnose_text("Environment variable HF_TOKEN is not set.\n") is None
    assert diagnose_text("Current vLLM config is not set.\n") is not None
