"""`grpolab diagnose` on what held-out batches 119-123 taught (tests/data/failures/README.md), each rule beside the
neighbour it must leave alone: torch refusing tensors that do not fit together (shapes, sizes, devices) where no
setting, sync or load is named (the framework's own computation: a trainer bug), Slurm's job cancelled at its time
limit (a kill), an undefined symbol posted without its colon and ptxas refusing a GPU architecture it does not know
(the versions'), and an Ascend MoE kernel's HCCL buffer too small for its dispatch (a setting). The real logs are the
corpus's; the made-up lines are the other side of each rule."""

from __future__ import annotations

import pytest

from tests.test_diagnose import _log, _said


@pytest.mark.parametrize(
    "case, said",
    [
        ("verl-4962", ("unknown", "trainer-bug")),  # `Expected all tensors to be on the same device`
        ("verl-6089", ("unknown", "trainer-bug")),  # `The expanded size of the tensor (17804) must match ...`
        ("vllm-ascend-6404", ("unknown", "trainer-bug")),  # `shape '[14, -1]' is invalid for input of size 7`
        ("verl-4986", ("unknown", "trainer-bug")),  # `Split sizes doesn't match total dim 0 size`
        ("art-656", ("unknown", "trainer-bug")),  # (an earlier batch's case, `BEYOND` before)
        ("nemo-rl-tv5-nerr12-slurm-time-limit", ("killed", "killed")),  # `CANCELLED DUE TO TIME LIMIT`
        ("slime-1835-b", ("import-error", "version-mismatch")),  # `undefined symbol _ZN3c104cuda...`
        ("slime-1835-c", ("import-error", "version-mismatch")),  # `ptxas fatal: Value 'sm_121a' is not defined`
        ("vllm-ascend-7426-b", ("engine-config", "engine-config")),  # `HCCL_BUFFSIZE is too SMALL`
        ("vllm-ascend-5287", ("engine-config", "engine-config")),
    ],
)
def test_batch_119_123_rules_on_real_logs(case, said):
    assert _said(_log(case)) == said


def test_batch_119_123_rules_leave_their_neighbours_alone():
    # the same refusal on a weight update's stack stays the sync's; a view by the GRPO group size stays the batch's
    sync = (
        "Traceback (most recent call last):\n"
        '  File "/x/verl/workers/rollout/vllm_rollout/utils.py", line 80, in update_weights\n'
        "RuntimeError: The expanded size of the tensor (1024) must match the existing size (32) at non-singleton "
        "dimension 0\n"
    )
    assert _said(sync) == ("weight-sync", "weight-sync")
    assert _said(_log("video-r1-31")) == ("batch-divisible", "batch-divisible")
    # a RuntimeError of another kind is no trainer bug for these words
    assert _said("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1691, unhandled system error\n") != (
        "unknown",
        "trainer-bug",
    )
    # Slurm's time limit set, a symbol check that found none, ptxas' register report, HCCL's buffer set: no failure
    assert _said("TimeLimit=02:00:00 TimeMin=N/A\n") is None
    assert _said("checked: no undefined symbols in libfoo.so\n") is None
    assert _said("ptxas info    : Used 32 registers, 384 bytes cmem[0]\n") is None
    assert _said("HCCL_BUFFSIZE=200MB set from the environment\n") is None
