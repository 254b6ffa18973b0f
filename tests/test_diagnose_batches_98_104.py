"""`grpolab diagnose` on what held-out batches 98-104 taught (tests/data/failures/README.md), each rule beside the
neighbour it must leave alone: CANN failing to import its own Python modules, CANN's operators without a kernel
binary (not installed, or installed for another toolkit), CANN's device or stream synchronize that timed out (a wait,
not a fault, and glog's warning of it no error line), torch.distributed's set-up refused (the launcher's variables
unset, a backend not built in), the Ascend tool for rank tables not there, a compiler a package runs on the fly that
failed (ninja; ptxas too old for the device), pip without a version of a requirement, torch.save into a folder that
is not there, transformers' continued final message the template rewrote, an optional function torch_npu warns it
could not find, CANN's error record read with the rank its header line names, and CANN's code behind a colour
that lost its escape character. The real logs are the corpus's; the made-up lines are the other side of each rule."""

from __future__ import annotations

import pytest

from grpolab.monitor.diagnose import diagnose_text
from tests.test_diagnose import _log, _said


@pytest.mark.parametrize(
    "case, said",
    [
        (
            "ascend-pytorch-29",
            ("import-error", "missing-dependency"),
        ),  # TUNE's `"ModuleNotFoundError: ... 'tbe.common'`
        ("llamafactory-5638", ("import-error", "missing-dependency")),  # `EC0010: Failed to import Python module [...]`
        ("llamafactory-3779", ("import-error", "missing-dependency")),  # `Op Cast does not has any binary`
        ("llamafactory-3796", ("import-error", "missing-dependency")),
        ("llamafactory-4610", ("import-error", "version-mismatch")),  # `Parse dynamic kernel config fail` before it
        ("llamafactory-3796-b", ("import-error", "version-mismatch")),  # `Cannot parse json for config file`
        ("ascend-pytorch-48", ("comm-timeout", "comm-timeout")),  # `EE1002 ... Stream synchronize timeout`
        ("llamafactory-5347", ("comm-timeout", "comm-timeout")),  # `reason=[task timeout]`, 107020
        ("pytorch-72", ("comm-timeout", "comm-timeout")),  # `AclrtSynchronizeDeviceWithTimeout, error code is 107020`
        ("prime-rl-3146", ("comm-init", "comm-init")),  # `environment variable RANK expected, but not set`
        ("deepspeed-7312", ("comm-init", "comm-init")),  # `Distributed package doesn't have NCCL built in`
        ("mindspore-252", ("comm-init", "comm-init")),  # `hccn_tool: not found`
        ("slime-1314", ("import-error", "build-missing-extension")),  # FlashInfer's ninja, CalledProcessError
        ("sglang-9707", ("import-error", "version-mismatch")),  # Triton's ptxas for sm_120a
        ("easyr1-136", ("import-error", "version-mismatch")),  # pip: `Could not find a version that satisfies`
        ("verl-1625", ("checkpoint-save", "checkpoint-save")),  # `Parent directory ... does not exist`
        ("verifiers-179", ("chat-template", "chat-template")),  # continue_final_message after the template
        (
            "ms-swift-1243",
            ("device-fault", "device-fault"),
        ),  # an aivector error after `[W ...] Failed to find function`
    ],
)
def test_batch_98_104_rules_on_real_logs(case, said):
    assert _said(_log(case)) == said


def test_batch_98_104_rules_leave_their_neighbours_alone():
    # Python's own ModuleNotFoundError quoted in a sentence is no CANN record: the versions' reading of a submodule
    quoted = "for sglang it occurs that \"ModuleNotFoundError: No module named 'sglang.srt.weight_sync'\"\n"
    assert _said(quoted) != ("import-error", "missing-dependency")
    # an op that has its binary, and a device error code other than the synchronize timeout's, stay as they were
    assert _said("Op Cast has a binary for Ascend910B\n") is None
    assert _said("RuntimeError: NPU function error: c10_npu::acl::AclrtSynchronizeDevice, error code is 507015\n") == (
        "device-fault",
        "device-fault",
    )
    # torch_npu's warning level of the same wait is no error line
    assert _said("[W NPUStream.cpp:409] Warning: NPU warning, error code is 507046[Error]:\n") is None
    # torch.distributed's variables set and read, a backend named as built in: no failure
    assert _said("RANK=0 WORLD_SIZE=8 MASTER_ADDR=10.0.0.1 (environment variables set by torchrun)\n") is None
    assert _said("NCCL built in: True\n") is None
    # a compiler that ran and a subprocess that is no compiler's: not a build that failed
    assert _said("[1/2] ninja -v -C /cache/flashinfer/cached_ops\n") is None
    other = "subprocess.CalledProcessError: Command '['git', 'rev-parse', 'HEAD']' returned non-zero exit status 128.\n"
    assert _said(other) != ("import-error", "build-missing-extension")
    # a ninja build that failed is a build's, not the device's version (only ptxas' target names a device)
    ninja = "subprocess.CalledProcessError: Command '['ninja', '-v', '-C', '/cache/ops']' returned non-zero exit status 1.\n"
    assert _said(ninja) == ("import-error", "build-missing-extension")
    # pip that found its version: no failure; a parent directory that exists: no failure
    assert _said("Requirement already satisfied: xgrammar==0.1.11 in ./lib/python3.10/site-packages\n") is None
    assert _said("Parent directory /ckpts exists, writing global_step_20\n") is None
    # torch_npu's glog warning of an optional function alone is no failure
    assert _said("[W AclInterface.cpp:181] Warning: 0Failed to find function aclrtCreateEventExWithFlag\n") is None


def test_cann_record_under_its_header_takes_the_headers_rank():
    header = "[ERROR] 2024-08-28-16:15:00 (PID:15597, Device:2, RankID:{}) ERR00100 PTA call acl api failed\n"
    record = "EL0004: 2024-08-28-16:15:00.358.141 Failed to allocate memory.\n"
    failure = diagnose_text(header.format(2) + record)
    assert failure is not None and failure.cause == "device-oom" and failure.rank == 2
    assert "rank 2" in failure.message
    # RankID:-1 is CANN's "no rank" (a single process): no rank said
    alone = diagnose_text(header.format(-1) + record)
    assert alone is not None and alone.rank is None
    # the rank of a real log's record (llamafactory-3839, -5322, -5638)
    assert diagnose_text(_log("llamafactory-5322")).rank == 2


def test_a_cann_code_behind_a_colour_that_lost_its_escape_is_an_error_line():
    # a page's copy of a coloured console (`[36m` without ESC before CANN's code: hiascend-troubleshooting-0145)
    failure = diagnose_text("Error Message is :\n[36mE30008: AI CPU operator execution time out.\n")
    assert failure is not None and "E30008: AI CPU operator execution time out." in failure.first_error
    # the same words in a sentence, no code: no error line
    assert diagnose_text("[36mthe AI CPU operator finished in time\n") is None
