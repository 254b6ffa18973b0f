"""`grpolab diagnose` on what held-out batches 112-118 taught (tests/data/failures/README.md), each rule beside the
neighbour it must leave alone: the driver's management library that could not start (NVML: the devices cannot be
queried, not two packages' versions), torch's accelerator API with no device, CUDA's `system not yet initialized` and
docker without the NVIDIA runtime (no device), LLaMA-Factory's data set without a valid row (the data's), a compiler
not found in a build that failed (an extension not built, where a launch script's missing nvcc stays a package
missing), NCCL's kernels that this CUDA cannot load and an argument a newer engine removed (the versions' and the
interface's), Mooncake's memory registration (the communicator's), an engine's warm-up and an orchestrator that ran
out of memory at start, vLLM's KV cache left below zero by the weights, safetensors' unreadable header (the
checkpoint's), the converters named by their folder or their formats, a traceback cut inside a check of versions, and
the error lines that had read as no failure: torchelastic's aligned `exitcode : 1`, docker's `Error response from
daemon`, dash's `sh: 1: nvcc: not found`, a launcher's `Server process terminated unexpectedly`, glog's error letter
behind a colour that lost its escape. The real logs are the corpus's; the made-up lines are the other side of each
rule."""

from __future__ import annotations

import pytest

from grpolab.monitor.diagnose import diagnose_text
from tests.test_diagnose import _log, _said


@pytest.mark.parametrize(
    "case, said",
    [
        ("mxnet-21114", ("no-device", "device-query")),  # `nvml error: driver/library version mismatch`
        ("translations-1167", ("no-device", "device-query")),  # `Failed to initialize NVML: Driver/library ...`
        ("nvidia-container-toolkit-1227", ("no-device", "device-query")),  # `Failed to initialize NVML: Unknown Error`
        ("deepspeed-blog-deepnvme-cpu-pin-memory", ("no-device", "no-device")),  # `Cannot access accelerator device`
        ("nccl-tests-264", ("no-device", "no-device")),  # `Test CUDA failure ... 'system not yet initialized'`
        ("xagent-273", ("no-device", "no-device")),  # docker's `could not select device driver "" ... [[gpu]]`
        ("llamafactory-2577", ("data-error", "data-error")),  # `Cannot find valid samples`
        ("llamafactory-9493", ("data-error", "data-error")),
        ("llamafactory-8320", ("data-error", "data-error")),  # (the raise's source line, the log cut under it)
        ("skypilot-8733-b", ("import-error", "build-missing-extension")),  # nvcc not found, `Ninja build failed.`
        ("nccl-1372", ("import-error", "version-mismatch")),  # `NCCL WARN Cuda failure 'named symbol not found'`
        ("miles-diffusion-99", ("import-error", "api-mismatch")),  # `Removed server argument(s): warmup -> ...`
        ("mooncake-281", ("comm-init", "comm-init")),  # `Mooncake memory registration failed.`
        ("text-generation-inference-1067", ("device-oom", "rollout-startup-oom")),  # `Not enough memory to handle`
        ("vllm-omni-7555", ("device-oom", "rollout-startup-oom")),  # `Orchestrator initialization failed: CUDA ...`
        ("vllm-ascend-9372", ("device-oom", "kv-cache-too-small")),  # `Available KV cache memory: -0.87 GiB`
        ("llamafactory-327", ("checkpoint-mismatch", "checkpoint-load")),  # `SafetensorError: ... HeaderTooLarge`
        ("pai-megatron-patch-544", ("checkpoint-mismatch", "checkpoint-conversion")),  # `hf2mcore_deepseek_v3_moe.py`
        ("megatron-llama-70", ("checkpoint-mismatch", "checkpoint-conversion")),  # `tools/checkpoint_conversion/`
        ("llamafactory-7827", ("import-error", "version-mismatch")),  # cut inside `check_dependencies`
    ],
)
def test_batch_112_118_rules_on_real_logs(case, said):
    assert _said(_log(case)) == said


@pytest.mark.parametrize(
    "case, shown",
    [
        ("chatglm-efficient-tuning-75", "exitcode  : 1"),  # torchelastic's summary, its colon aligned
        ("miles-572", "Server process terminated unexpectedly"),
        ("skypilot-8733-b", "/bin/sh: 1: /usr/local/cuda/bin/nvcc: not found"),
    ],
)
def test_an_error_line_of_these_shapes_is_a_failure_with_that_first_error(case, shown):
    failure = diagnose_text(_log(case))
    assert failure is not None and shown in failure.first_error


def test_glogs_error_letter_behind_a_colour_that_lost_its_escape_is_an_error_line():
    # xllm-748 as a page shows it (`[36m` before every line): glog's `E20260118 12:10:31` holds no other word
    coloured = "".join("[36m" + line for line in _log("xllm-748").splitlines(True))
    failure = diagnose_text(coloured)
    assert failure is not None and "node.operation is null" in failure.first_error
    assert diagnose_text("[36mI20260118 12:10:18.826395  1219 hf_model_loader.cpp:65] Loading model weights\n") is None


def test_batch_112_118_rules_leave_their_neighbours_alone():
    # NVML's version said, a KV cache with room, no failure
    assert _said("NVML library version: 550.54.15\n") is None
    assert _said("INFO 07-28 01:27:15 [gpu_worker.py:298] Available KV cache memory: 12.50 GiB\n") is None
    # a launch script's nvcc not found, no build under way: a package missing (verl-notes-docs-rl-factory-rag-...)
    assert _said(_log("verl-notes-docs-rl-factory-rag-nvcc-missing")) == ("import-error", "missing-dependency")
    # NCCL's Cuda failure other than a symbol not found stays the communicator's
    other = "gcn75:2336636:2336906 [0] enqueue.cc:58 NCCL WARN Cuda failure 'invalid argument'\n"
    assert _said(other) == ("comm-init", "comm-init")
    # docker's refusal of something else is a failure, but no device's
    conflict = "docker: Error response from daemon: Conflict. The container name is already in use.\n"
    assert _said(conflict) is not None and _said(conflict)[0] != "no-device"
    # an argument that is only deprecated, a version check that passed, valid samples found: no failure
    assert _said("WARNING: server argument --warmup is deprecated, use --warmup-mode\n") is None
    assert _said("Checking dependencies: transformers 4.57.1 is supported\n") is None
    assert _said("Found 1024 valid samples in data/train.json\n") is None
    # a process that exited expectedly, torchelastic's exit code 0: no failure
    assert _said("Server process terminated normally.\n") is None
    assert _said("  exitcode  : 0 (pid: 39887)\n") is None
