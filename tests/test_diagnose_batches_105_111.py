"""`grpolab diagnose` on what held-out batches 105-111 taught (tests/data/failures/README.md), each rule beside the
neighbour it must leave alone: litgpt's step line with a NaN loss, vLLM's Ray executor waiting for its placement
group, NCCL's network plugin without its interface, a KV-cache transfer engine that did not start, NCCL's error said
with a space before its colon, pip refusing two requirements together, a package's check of another's version,
kernels built for another Ascend chip and CANN's unreadable kernel config (the versions'), NeMo's importer without a
connector, a weight-sync call refusing a keyword (the engine's version), a package's loader not finding its compiled
library, a KeyError of a parameter at the engine's start-up load (the checkpoint's), a reshape by the GRPO group size
(the batch's split), torch's and cuDNN's errors posted without their type, Ray's note of an exception it could not
subclass, an Ascend C kernel's assertion and the AI Core's MTE address out of range (the device's), a traceback cut
inside a platform plugin's patch of its engine (the versions'), a launcher's echoed command line (no words of the
cause), a traceback's exception line read with the rank its header names, and a verdict's sentence that starts with a
capital. The real logs are the corpus's; the made-up lines are the other side of each rule."""

from __future__ import annotations

import pytest

from grpolab.monitor.diagnose import diagnose_text
from tests.test_diagnose import _log, _said


@pytest.mark.parametrize(
    "case, said",
    [
        ("litgpt-185", ("nan-loss", "nan-loss")),  # `iter 16 step 1: loss nan, train time: ...`
        ("gpustack-5509", ("no-device", "ray-resources")),  # `Waiting for creating a placement group of specs`
        ("vllm-26028", ("no-device", "ray-resources")),
        ("nemo-13996", ("comm-init", "comm-init")),  # `NCCL WARN Could not find NET with id 0`
        ("sglang-22840", ("comm-init", "comm-init")),  # `Ascend Transfer Engine initialization failed.`
        ("skyrl-789", ("comm-init", "comm-init")),  # `NCCL error : invalid argument`, the log's only line
        ("trinity-rft-598", ("import-error", "version-mismatch")),  # pip's `ERROR: Cannot install A and B`
        ("megatron-lm-3984", ("import-error", "version-mismatch")),  # `Supported flash-attn versions are ...`
        ("vllm-ascend-5599", ("import-error", "version-mismatch")),  # `the socversion ... of bin package`
        ("vllm-ascend-6676", ("import-error", "version-mismatch")),
        ("vllm-ascend-2725", ("import-error", "version-mismatch")),
        ("vllm-ascend-3046", ("import-error", "version-mismatch")),  # `Parse dynamic kernel config fail.` under it
        ("hiascend-forum-02127205553649790011", ("import-error", "version-mismatch")),
        ("nemo-11867", ("checkpoint-mismatch", "checkpoint-conversion")),  # `No connector found for extension`
        ("verl-7168", ("import-error", "version-mismatch")),  # `reload_weights() got an unexpected keyword`
        ("transformerengine-1541", ("import-error", "build-missing-extension")),  # StopIteration in `_load_library`
        ("vllm-ascend-3785", ("checkpoint-mismatch", "checkpoint-load")),  # KeyError under `load_model`
        ("video-r1-31", ("batch-divisible", "batch-divisible")),  # `.view(num_devices, self.num_generations)`
        ("ascend-sglang-74", ("device-fault", "device-fault")),  # `[ASSERT] .../op_impl/.../gather_v3_base.h:137`
        ("trl-5142", ("device-fault", "device-fault")),  # `The DDR address of the MTE instruction is out of range.`
        ("vllm-ascend-3851", ("import-error", "version-mismatch")),  # cut inside `pre_register_and_update`
    ],
)
def test_batch_105_111_rules_on_real_logs(case, said):
    assert _said(_log(case)) == said


@pytest.mark.parametrize(
    "case, shown",
    [
        ("sglang-26194", "The size of tensor a (64) must match the size of tensor b (2048)"),
        ("transformerengine-1407", "CUDNN_STATUS_EXECUTION_FAILED"),
        ("rex-thinker-14", "pydantic_core._pydantic_core.ValidationError"),
    ],
)
def test_an_error_posted_without_its_type_is_a_failure_with_that_first_error(case, shown):
    failure = diagnose_text(_log(case))
    assert failure is not None and shown in failure.first_error


def test_batch_105_111_rules_leave_their_neighbours_alone():
    # a finite loss on litgpt's step line; a placement group created: no failure
    assert _said("iter 16 step 1: loss 2.0308, train time: 1405.01ms\n") is None
    assert _said("INFO 06-07 18:13:55 [ray_utils.py:300] Created a placement group of specs=[{'GPU': 1.0}]\n") is None
    # vLLM still waiting for its group while another failure is said: that failure's
    wait = "INFO 06-07 18:13:55 [ray_utils.py:464] Waiting for creating a placement group of specs for 150 seconds.\n"
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert _said(wait + oom)[0] == "device-oom"
    # a transfer engine that started, NCCL's error that is a timeout: not the communicator's set-up
    assert _said("INFO Ascend Transfer Engine initialized on 10.0.0.2:12345\n") is None
    assert _said("NCCL error : timed out after 600 s\n") != ("comm-init", "comm-init")
    # pip that installed both, a version check that passed: no failure
    assert _said("Successfully installed mistral-common-1.11.5 trinity-rft-0.3.0\n") is None
    assert _said("INFO: flash-attn 2.7.4.post1 found, supported versions are >= 2.1.1\n") is None
    # a keyword refused by a call that is no weight sync's stays the interface's, not the versions' reading of the sync
    other = "TypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'\n"
    assert _said(other) != ("weight-sync", "weight-sync")
    # a StopIteration raised elsewhere is no compiled library's
    stop = (
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/verl/utils/dataset.py", line 52, in __next__\n'
        "    return next(self.it)\n"
        "StopIteration\n"
    )
    assert _said(stop) != ("import-error", "build-missing-extension")
    # the same parameter's KeyError under a weight update is the sync's
    sync = (
        "Traceback (most recent call last):\n"
        '  File "/x/site-packages/vllm/model_executor/model_loader/base_loader.py", line 45, in load_model\n'
        '  File "/x/site-packages/verl/workers/rollout/vllm_rollout/utils.py", line 80, in update_weights\n'
        "KeyError: 'model.layers.1.mlp.experts.weight'\n"
    )
    assert _said(sync) == ("weight-sync", "weight-sync")
    # a reshape that is not by the group size is not the batch's split
    view = (
        "Traceback (most recent call last):\n"
        '  File "/x/model.py", line 87, in forward\n'
        "    x = x.view(batch, seq_len)\n"
        "RuntimeError: shape '[2, 8]' is invalid for input of size 17\n"
    )
    assert _said(view) != ("batch-divisible", "batch-divisible")
    # cuDNN's API log at its info level, a tensor size said in a sentence, a kernel's assert that passed: no failure
    assert _said("I! CuDNN (v90100 70) function cudnnCreate() called:\n") is None
    assert _said("the size of tensor a is 64 here\n") is None
    assert _said("[ASSERT] checks enabled for op_impl kernels\n") is None
    # a traceback cut in a function that patches nothing says no plugin's versions
    cut = (
        "Traceback (most recent call last):\n"
        '  File "/x/vllm_ascend/platform.py", line 69, in check_and_update_config\n'
        '  File "/x/vllm_ascend/utils.py", line 12, in register_ops\n'
    )
    assert _said(cut) != ("import-error", "version-mismatch")


def test_a_launchers_echoed_command_line_says_nothing_of_the_cause():
    # DeepSpeed's launcher echoing the argv of a rank that exited (`'--load_checkpoint'` is a flag, no load that failed)
    failure = diagnose_text(_log("openrlhf-519"))
    assert failure is not None and failure.family != "checkpoint-load"
    assert "sigkill_handler" in failure.first_error


def test_a_tracebacks_exception_line_takes_the_rank_its_header_names():
    # SGLang's scheduler: the rank in the header (`[... TP1] Scheduler hit an exception: Traceback ...`) only
    failure = diagnose_text(_log("sglang-9707"))
    assert failure is not None and failure.rank == 1 and "rank 1" in failure.message
    header = "[2025-08-27 19:30:46 TP{}] Scheduler hit an exception: Traceback (most recent call last):\n"
    body = (
        '  File "/x/sglang/srt/managers/scheduler.py", line 2610, in run_scheduler_process\n'
        "    scheduler = Scheduler(server_args)\n"
        "ValueError: bad value\n"
    )
    assert diagnose_text(header.format(3) + body).rank == 3
    # a traceback whose header names no rank: none said
    assert diagnose_text("Traceback (most recent call last):\n" + body).rank is None


def test_a_verdicts_sentence_after_the_rank_starts_with_a_capital():
    message = diagnose_text(_log("llamafactory-5638")).message
    assert "First on rank 1. The package is not installed where the job runs." in message
    assert ". a package" not in message
