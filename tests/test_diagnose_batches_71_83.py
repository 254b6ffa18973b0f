"""`grpolab diagnose` on what held-out batches 71-83 taught (tests/data/failures/README.md), each rule beside the
neighbour it must leave alone: a runtime's chat template that does not render or parse (said as an unlevelled record
or mid-sentence), requests' refusal said without its type, a tokenizer class a newer transformers has, a distributed
checkpoint's file missing on a rank, a KeyError of a weight in a server launched on its own, the weight channel given
one device twice, a kernel a setting asks for that the device cannot run, CANN's operator package without the op's
kernel, NaN said of the model's outputs, two ranks on one device, Ray's block of a dead actor without its
indentation, Ray's node marked dead, Ray's node that did not start in time, absl's failure handler and gloo's
transport, SGLang's scheduler that hit an exception, vLLM's client after its engine shut down as asked, a traceback
cut at an import, a subcommand the installed CLI lacks, a name only its case tells from another's, and a version check
that could not read a version; and of batches 81-83, a block-quantized weight's shard its blocks do not divide (the
layout's), a tokenizer's apply_chat_template that refuses a keyword, SGLang's `Error in request:` record,
transformers' image-token check spelled `donot`, and a kernel built for other GPUs (the versions', not the device's). The real logs are the corpus's; the made-up lines are the other side of each rule."""

from __future__ import annotations

import pytest

from grpolab.monitor.diagnose import diagnose_text
from tests.test_diagnose import _failure_and_family, _log, _said


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("hf-bartowski-qwen-qwq-32b-gguf-discussion-5", ("chat-template", "chat-template")),
        ("hf-huihui-llama-3.3-70b-instruct-abliterated-discussion-3", ("chat-template", "chat-template")),
        ("hf-unsloth-gemma-2-27b-it-bnb-4bit-discussion-5", ("checkpoint-mismatch", "checkpoint-load")),
        ("slime-docs-qa-get-model-info", ("port-in-use", "port-in-use")),
        ("vllm-ascend-docs-glm5-tokenizers-backend", ("import-error", "version-mismatch")),
        ("verl-docs-npu-faq-nonshared-ckpt", ("checkpoint-mismatch", "checkpoint-load")),
        ("trl-docs-vllm-same-device", ("weight-sync", "weight-sync")),
        ("nemo-rl-docs-fp8-blockwise-cuda", ("engine-config", "engine-config")),
        ("nemo-rl-docs-prefix-caching-nan", ("nan-loss", "nan-loss")),
        ("ascend-pytorch-docs-operator-called-error", ("import-error", "build-missing-extension")),
        ("cluetax-vllm-bug-high-gpu-kv", ("data-error", "data-error")),
        ("openillumi-fix-peft-merge-size-mismatch-llama3", ("checkpoint-mismatch", "checkpoint-load")),
        ("thomaskalnik-deepseek-v3-part-4", ("comm-init", "comm-init")),
        ("ray-50474", ("startup-timeout", "startup-timeout")),
        ("ray-49252", ("comm-init", "comm-init")),
        ("nemo-rl-1583", ("import-error", "version-mismatch")),
        ("nemo-rl-1770", ("checkpoint-mismatch", "checkpoint-load")),
        ("trl-3139", ("import-error", "version-mismatch")),
        ("unsloth-3786", ("import-error", "version-mismatch")),
        ("unsloth-3852", ("import-error", "version-mismatch")),
    ],
)
def test_the_batchs_real_logs(case, said):
    assert _said(_log(case)) == said


def test_a_runtimes_template_error_is_an_error_line_and_a_tool_call_it_could_not_parse_is_not():
    rendering = "Error rendering prompt with jinja template: Error: Parser Error: Expected closing statement token.\n"
    assert _said(rendering) == ("chat-template", "chat-template")
    midway = "I keep getting a Error: Failed to parse chat template: 12:21: error: Unexpected token: 'none'\n"
    assert _said(midway) == ("chat-template", "chat-template")
    generated = "Error parsing tool call: Expecting ',' delimiter: line 1 column 40\n"
    assert diagnose_text(generated) is None  # a sample's own output, which the run goes on past
    retried = "the client got a Error: Failed to reach the server, will retry in 5 s\n"
    assert diagnose_text(retried) is None


def test_requests_refusal_said_without_its_type_is_an_error_and_sglangs_model_info_the_ports():
    assert _said("Max retries exceeded with url: /get_model_info (Caused by NewConnectionError)\n") == (
        "port-in-use",
        "port-in-use",
    )
    other = "Max retries exceeded with url: /v1/completions (Caused by NewConnectionError)\n"
    failure = diagnose_text(other)
    assert failure is not None and failure.cause != "port-in-use" and "Max retries" in failure.first_error


def test_a_checkpoints_own_file_missing_is_the_checkpoints_and_another_file_is_not():
    failure = diagnose_text("FileNotFoundError: /ckpt/global_step_40/actor/dist_ckpt/.metadata\n")
    assert (failure.cause, failure.family) == ("checkpoint-mismatch", "checkpoint-load")
    assert "trainer.ckpt_dir" in failure.fix
    megatron = "FileNotFoundError: run config not found at /cache/iter_0000000/run_config.yaml on rank=8.\n"
    failure = diagnose_text(megatron)
    assert failure.family == "checkpoint-load" and failure.rank == 8
    assert _said("FileNotFoundError: /data/train.parquet\n") != ("checkpoint-mismatch", "checkpoint-load")


def test_a_weights_keyerror_in_a_server_launched_alone_is_its_load_and_in_a_trainer_the_sync():
    launched = (
        "KeyError: 'model.layers.0.mlp.down_proj.weight'\n"
        "$ python -m sglang.launch_server --model-path org/model-bnb-4bit --port 6002\n"
    )
    assert _said(launched) == ("checkpoint-mismatch", "checkpoint-load")
    assert _said("KeyError: 'model.layers.0.mlp.down_proj.weight'\n") == ("weight-sync", "weight-sync")


def test_a_setting_the_device_cannot_run_is_the_engines_and_nan_of_the_outputs_is_nan():
    assert _said("AssertionError: FP8 block scaled GEMM requires Hopper and CUDA >= 12.9.\n") == (
        "engine-config",
        "engine-config",
    )
    assert _said("AssertionError: 2047/2048 logprobs are NaN on iteration 2\n") == ("nan-loss", "nan-loss")
    assert _said("AssertionError: logprobs differ between the engine and the trainer\n") != ("nan-loss", "nan-loss")


def test_two_ranks_on_one_device_and_glooss_transport_are_the_communicators():
    assert _said("Error: rank 27 and rank 19 both on CUDA device 53000 (PCI 53:00.0)\n") == ("comm-init", "comm-init")
    gloo = (
        "(RayTrainWorker pid=7315) [/src/third_party/gloo/gloo/transport/uv/libuv.h:596] uv_accept: invalid argument\n"
        "(RayTrainWorker pid=7315) *** SIGABRT received at time=1734086759 ***\n"
    )
    failure = diagnose_text(gloo)
    assert (failure.cause, failure.family) == ("comm-init", "comm-init") and "uv_accept" in failure.first_error
    timed_out = (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 1800000ms for "
        "recv operation to complete\n"
    )
    assert _said(timed_out) == ("comm-timeout", "comm-timeout")  # gloo's wait for a peer: a collective's
    abort = "(pid=9) *** SIGSEGV received at time=1734086759 on cpu 3 ***\n"
    assert diagnose_text(abort) is not None  # absl's failure handler: a crash, whatever printed it


def test_rays_dead_actor_block_names_its_node_without_indentation_and_a_dead_node_by_its_address():
    block = (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "class_name: WorkerDict\nactor_id: 17f730ef04a3a7406b421ea101000000\npid: 16424\nip: 11.11.12.211\n"
    )
    assert diagnose_text(block).node == "11.11.12.211"
    dead = (
        "The node with node id: 5d0da9d7 and address: 192.168.10.175 and node name: 192.168.10.175 has been marked "
        "dead because the detector has missed too many heartbeats from it.\n"
    )
    assert diagnose_text(dead).node == "192.168.10.175"


def test_sglangs_scheduler_that_hit_an_exception_is_first_and_its_launchers_note_follows():
    log = (
        "[2026-03-03 03:53:36] Received sigquit from a child process. It usually means the child failed.\n"
        "[2026-03-03 03:53:36 TP3] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/sglang/srt/managers/scheduler.py", line 3130, in run_scheduler_process\n'
    )
    failure = diagnose_text(log)
    assert "Scheduler hit an exception" in failure.first_error and failure.rank == 3
    assert diagnose_text(log.split("\n")[0] + "\n") is not None  # the launcher's note alone is still a failure


def test_vllms_client_after_its_engine_shut_down_is_the_exit_and_before_it_a_failure():
    shut = (
        "Prompt: 'Hello, my name is', Generated text: ' Lucy and I like to draw'\n"
        "(EngineCore pid=970) INFO 05-12 11:36:00 [core.py:1224] Shutdown complete\n"
        "ERROR 05-12 11:36:01 [core_client.py:704] Engine core proc EngineCore died unexpectedly, shutting down "
        "client.\n"
    )
    failure, family = _failure_and_family(shut)
    assert failure is None and family == "healthy-run"
    died = shut.replace("(EngineCore pid=970) INFO 05-12 11:36:00 [core.py:1224] Shutdown complete\n", "")
    assert diagnose_text(died) is not None


def test_a_collectors_frame_around_a_log_another_collector_framed_is_read_past_both():
    log = (
        'vllm-1  | ERROR 11-18 18:07:28 engine.py:366]     raise ValueError("No available memory for the cache blocks. "\n'
        "vllm-1  | ERROR 11-18 18:07:28 engine.py:366] ValueError: No available memory for the cache blocks.\n"
    )
    want = diagnose_text(log).first_error
    assert want.startswith("ERROR 11-18 18:07:28 engine.py:366] ValueError")
    kubectl = "".join("2026-03-01T08:15:42.123456789Z " + line for line in log.splitlines(True))
    assert diagnose_text(kubectl).first_error == want
    compose = "".join("trainer-1  | " + line for line in log.splitlines(True))
    assert diagnose_text(compose).first_error == want


def test_a_traceback_cut_at_an_import_is_the_import_and_cut_at_a_call_is_not():
    cut = (
        "Traceback (most recent call last):\n"
        '  File "/opt/nemo-rl/nemo_rl/models/policy/megatron_policy_worker.py", line 27, in <module>\n'
        "    from megatr\n"
    )
    assert _said(cut) == ("import-error", "version-mismatch")
    call = cut.replace("from megatr", "run_training(cfg)")
    assert _said(call) != ("import-error", "version-mismatch")


def test_a_subcommand_the_cli_lacks_is_its_version_and_a_bad_value_its_arguments():
    missing = "TRL CLI: error: argument command: invalid choice: 'vllm-serve' (choose from 'chat', 'dpo', 'grpo')\n"
    failure = diagnose_text(missing)
    assert (failure.cause, failure.family) == ("import-error", "version-mismatch") and "vllm-serve" in failure.message
    value = "TRL CLI: error: argument --port: invalid int value: 'x'\n"
    assert _said(value) == ("engine-config", "engine-config")


def test_a_name_only_its_case_tells_apart_is_a_rename_and_another_name_is_not():
    assert _said("NameError: name 'PreTrainedConfig' is not defined. Did you mean: 'PretrainedConfig'?\n") == (
        "import-error",
        "version-mismatch",
    )
    assert _said("NameError: name 'reward_fn' is not defined. Did you mean: 'reward_fns'?\n") != (
        "import-error",
        "version-mismatch",
    )
    assert _said("ValueError: Invalid version format: <module 'trl' from '/x/trl/__init__.py'>\n") == (
        "import-error",
        "version-mismatch",
    )


def test_a_quantized_shard_its_blocks_do_not_divide_is_the_layouts_and_another_check_the_engines():
    shard = "ValueError: Weight output_partition_size = 576 is not divisible by weight quantization block_n = 128.\n"
    assert _said(shard) == ("layout-mismatch", "layout-mismatch")
    other = "ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (4096).\n"
    assert _said(other) == ("engine-config", "engine-config")


def test_a_templates_refused_keyword_in_a_request_is_the_chat_templates_and_a_request_record_an_error():
    log = (
        '[2025-08-26 10:36:30] INFO:     127.0.0.1:55274 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
        "[2025-08-26 10:38:03] Error in request: TiktokenTokenizer.apply_chat_template() got an unexpected keyword "
        "argument 'reasoning_effort'\n"
    )
    failure = diagnose_text(log)
    assert (failure.cause, failure.family) == ("chat-template", "chat-template")
    assert "Error in request" in failure.first_error
    note = "Error in cpuinfo: prctl(PR_SVE_GET_VL) failed\n"  # a component's note names no call: no error line
    assert diagnose_text(note) is None
    typo = "ValueError: Image features and image tokens donot match: tokens: 4, features 655\n"
    assert _said(typo) == ("data-error", "data-error")


def test_a_kernel_built_for_other_gpus_is_the_versions_and_an_illegal_access_the_devices():
    built = "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device\n"
    assert _said(built) == ("import-error", "version-mismatch")
    fault = "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    assert _said(fault) == ("device-fault", "device-fault")
