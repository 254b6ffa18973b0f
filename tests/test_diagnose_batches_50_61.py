"""`grpolab diagnose` on what held-out batches 50-52 taught (tests/data/failures/README.md), each rule beside the
neighbour it must leave alone: a model path that is not there (huggingface_hub then refuses it as a repo id), a dtype
the device cannot compute in, an argument's value a relation refuses, CUDA refusing an operation while a stream is
captured, an engine loading its weights from files (not a weight sync, though both pass the per-layer loaders), a
compiled module of custom operators, and C++'s terminate printing its exception's message (the process's own error,
not a death without a cause); and of batches 53-55, a CRITICAL record, a C++ source's tag before a verdict, a part that
says it did not start, the dynamic loader's refusal and an OpenAI-compatible server's (each an error line), docker's
note before a pull (none), a multimodal item longer than the encoder cache, an extension said not found, a parallelism
the architecture lacks, an extension missing a symbol (versions), CUDA's result 2 and SGLang's memory fraction; and of
batches 56-58, the driver's device manager (dcmi) failing to start, torch_npu's compiled module missing, CANN's AI Core
kernel failing, a module's missing attribute said without its type, a weight channel given a tensor on another
device, an engine's argument class refusing its caller's keyword, and a prompt's media placeholders missing; and of
batches 59-61, placement groups Ray could not allocate, Open MPI's failed set-up, Megatron's sharding check of a save,
and a converter script named for its two formats. The real logs are the corpus's; the made-up lines are the other
side of each rule."""

from __future__ import annotations

import pytest

from grpolab.monitor.diagnose import diagnose_text
from tests.test_diagnose import _log, _said


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("juejin-7705716341148155919-a", ("checkpoint-mismatch", "checkpoint-load")),
        ("ttrl-25", ("checkpoint-mismatch", "checkpoint-load")),
        ("mynw-819281-verl-p40-bf16", ("engine-config", "engine-config")),
        ("vllm-2847", ("engine-config", "engine-config")),
        ("sglang-7918", ("unknown", "cuda-graph-capture")),
        ("vllm-ascend-11368", ("checkpoint-mismatch", "checkpoint-load")),
        ("vllm-ascend-4449", ("import-error", "build-missing-extension")),
        ("sglang-docs-ascend-faq-gloo-pd", ("unknown", "unknown")),
        ("vllm-1465", ("startup-timeout", "ray-cluster-connect")),
        ("vllm-20409", ("data-error", "data-error")),
        ("vllm-9015", ("layout-mismatch", "layout-mismatch")),
        ("vllm-5501", ("import-error", "version-mismatch")),
        ("sglang-36533", ("import-error", "build-missing-extension")),
        ("ms-swift-docs-faq-gradient-accumulation-fusion", ("import-error", "build-missing-extension")),
        ("ms-swift-docs-faq-vllm-encoder-cache", ("data-error", "data-error")),
        ("cann-container-image-46", ("no-device", "device-query")),
        ("vllm-ascend-2698", ("no-device", "device-query")),
        ("pytorch-24", ("import-error", "build-missing-extension")),
        ("hiascend-docs-aicore-args-error", ("device-fault", "device-fault")),
        ("vllm-ascend-218", ("import-error", "version-mismatch")),
        ("ms-swift-7036", ("weight-sync", "weight-sync")),
        ("verl-2812", ("import-error", "version-mismatch")),
        ("verl-841", ("data-error", "data-error")),
        ("kuberay-4366", ("no-device", "ray-resources")),
        ("megatron-bridge-650", ("comm-init", "comm-init")),
        ("megatron-lm-1234", ("checkpoint-save", "checkpoint-save")),
        ("nemo-speech-10480", ("checkpoint-mismatch", "checkpoint-conversion")),
    ],
)
def test_the_batchs_real_logs(case, said):
    assert _said(_log(case)) == said


def test_a_model_path_that_is_not_there_says_which_key_and_a_gated_repo_is_not_one():
    failure = diagnose_text(
        "huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
        "'namespace/repo_name': '~/models/qwen'. Use `repo_type` argument if needed.\n"
    )
    assert (failure.cause, failure.family) == ("checkpoint-mismatch", "checkpoint-load")
    assert "model.path" in failure.fix and "`~`" in failure.fix
    assert _said("OSError: You are trying to access a gated repo. Make sure to have access\n") != (
        "checkpoint-mismatch",
        "checkpoint-load",
    )


def test_a_dtype_the_device_lacks_is_the_engines_setting_and_a_feature_it_lacks_on_a_model_is_not():
    line = "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your GPU has 6.1.\n"
    assert _said(line) == ("engine-config", "engine-config")
    assert _said("ValueError: Bfloat16 weights were found in the file, cannot cast\n") != (
        "engine-config",
        "engine-config",
    )


def test_a_relation_to_an_arguments_value_is_the_engines_setting_and_a_value_alone_is_not():
    assert _said("ValueError: LoRA rank 64 is greater than max_lora_rank 16.\n") == ("engine-config", "engine-config")
    assert _said("ValueError: invalid literal for int() with base 10: 'max_lora_rank 16'\n") != (
        "engine-config",
        "engine-config",
    )


def test_an_operation_refused_while_a_stream_is_captured_is_the_graph_capture_and_an_illegal_access_is_not():
    assert _said("RuntimeError: CUDA error: operation not permitted when stream is capturing\n") == (
        "unknown",
        "cuda-graph-capture",
    )
    assert _said("RuntimeError: CUDA error: an illegal memory access was encountered\n")[1] == "device-fault"


_LOADER = """Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/vllm/model_executor/model_loader/__init__.py", line 138, in get_model
    return loader.load_model(
  File "/usr/lib/python3.11/site-packages/vllm/model_executor/model_loader/base_loader.py", line 62, in load_model
    self.load_weights(model, model_config)
  File "/usr/lib/python3.11/site-packages/vllm/model_executor/model_loader/default_loader.py", line 381, in load_weights
    loaded_weights = model.load_weights(self.get_all_weights(model_config, model))
{sync}  File "/usr/lib/python3.11/site-packages/vllm/model_executor/models/qwen2.py", line 500, in load_weights
    param = params_dict[name]
KeyError: 'layers.0.mlp.gate_up_proj.weight_scale'
"""
_SYNC = """  File "/usr/lib/python3.11/site-packages/verl/workers/rollout/vllm_rollout/utils.py", line 90, in update_weights
    model.load_weights(weights)
"""
_BUILD = """Traceback (most recent call last):
  File "/usr/lib/python3.11/site-packages/vllm/model_executor/model_loader/__init__.py", line 138, in get_model
    return loader.load_model(
  File "/usr/lib/python3.11/site-packages/vllm/model_executor/model_loader/base_loader.py", line 50, in load_model
    model = initialize_model(vllm_config=vllm_config, model_config=model_config)
  File "/usr/lib/python3.11/site-packages/vllm/attention/layer.py", line 160, in __init__
    raise ValueError(f"Duplicate layer name: {prefix}")
ValueError: Duplicate layer name: model.layers.0.self_attn.attn
"""


def test_an_engine_loading_its_files_is_a_checkpoints_load_a_sync_through_the_same_loader_is_the_syncs():
    assert _said(_LOADER.format(sync="")) == ("checkpoint-mismatch", "checkpoint-load")
    assert _said(_LOADER.format(sync=_SYNC)) == ("weight-sync", "weight-sync")
    assert _said(_BUILD) != ("checkpoint-mismatch", "checkpoint-load")  # the model built, before any weight read


def test_a_missing_module_of_custom_operators_is_a_build_and_a_missing_package_is_not():
    assert _said("ModuleNotFoundError: No module named 'custom_ops'\n") == ("import-error", "build-missing-extension")
    assert _said("ModuleNotFoundError: No module named 'custom_tools'\n") == ("import-error", "missing-dependency")


def test_cpp_terminate_says_its_exception_as_the_first_error():
    log = (
        "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
        "  what():  [enforce fail at gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 4 vs 3\n"
        "Fatal Python error: Aborted\n"
    )
    failure = diagnose_text(log)
    assert failure.first_error.startswith("what():  [enforce fail at gloo/transport/tcp/pair.cc:456]")
    assert failure.cause != "worker-died"  # its own error: not a death without a cause
    # a record that only mentions what() is no error line
    assert diagnose_text("INFO the what(): method of the class returns its message\n") is None


@pytest.mark.parametrize(
    ("line", "failed"),
    [
        ("CRITICAL 02-25 11:11:34 launcher.py:101] MQLLMEngine is already dead, terminating server process", True),
        ("INFO 02-25 11:11:34 launcher.py:101] the critical path took 3 s", False),
        ("gcs_rpc_client.h:552: Failed to connect to GCS within 60 seconds. GCS may have been killed.", True),
        ("notes.md:552: Failed to connect is a heading of this page", False),
        ("Engine core initialization failed. Failed core proc(s): {}", True),
        ("Unable to find image 'vllm/vllm-openai:latest' locally", False),
        ("Unable to open the checkpoint file /data/ckpt/model.safetensors", True),
        ("python: error while loading shared libraries: libcudart.so.13: cannot open shared object file", True),
        ("Error Occurs: \"Error code: 400 - {'object': 'error', 'message': 'bad request'}\"", True),
        ("INFO 11-18 18:07:28 the server answers with an error code of its own when asked", False),
    ],
)
def test_what_reads_as_an_error_line_and_what_does_not(line, failed):
    assert (diagnose_text(line + "\n") is not None) is failed


def test_the_loaders_refusal_comes_before_the_death_it_causes():
    failure = diagnose_text(
        "python: error while loading shared libraries: libcudart.so.13: cannot open shared object file\n"
        "RuntimeError: Rank 0 scheduler died during initialization (exit code: 127).\n"
    )
    assert (failure.cause, failure.family) == ("import-error", "build-missing-extension")
    assert failure.first_error.startswith("python: error while loading shared libraries")
    alone = diagnose_text("RuntimeError: Rank 0 scheduler died during initialization (exit code: 127).\n")
    assert alone.first_error.startswith("RuntimeError: Rank 0 scheduler died")  # its own line, when nothing is above


def test_a_server_refusing_a_prompt_longer_than_the_model_is_the_datas_and_another_refusal_is_not():
    said = "Error code: 400 - {'message': \"This model's maximum context length is 16384 tokens. However, you requested"
    assert _said(said + ' 19591 tokens (9591 in the messages, 10000 in the completion)."}\n') == (
        "data-error",
        "data-error",
    )
    assert _said("Error code: 401 - {'message': 'invalid api key'}\n") != ("data-error", "data-error")


def test_an_encoder_cache_item_too_long_is_the_datas_and_a_cache_too_small_for_the_model_is_memory():
    line = "ValueError: the decoder prompt contains a(n) video item with length 16758, which exceeds the pre-allocated"
    assert _said(line + " encoder cache size 16384.\n") == ("data-error", "data-error")
    assert _said("ValueError: No available memory for the cache blocks.\n")[0] == "device-oom"


def test_an_extension_said_not_found_is_a_build_and_one_missing_a_symbol_is_the_versions():
    line = "RuntimeError: ColumnParallelLinear was called with gradient_accumulation_fusion set to True but the custom"
    assert _said(line + " CUDA extension fused_weight_gradient_mlp_cuda module is not found.\n") == (
        "import-error",
        "build-missing-extension",
    )
    symbol = "ImportError: /site-packages/vllm/_C.abi3.so: undefined symbol: _ZN5torch7LibraryC1E\n"
    assert _said(symbol) == ("import-error", "version-mismatch")


def test_a_parallelism_the_architecture_lacks_is_the_layouts_and_a_feature_it_lacks_is_not():
    line = "NotImplementedError: Pipeline parallelism is only supported for the following architectures: ['X']\n"
    assert _said(line) == ("layout-mismatch", "layout-mismatch")
    assert _said("NotImplementedError: LoRA is only supported for the following architectures: ['X']\n") != (
        "layout-mismatch",
        "layout-mismatch",
    )


def test_cudas_result_2_is_memory_however_it_is_spaced_and_result_1_is_not():
    line = "[torch_memory_saver.cpp] CUresult error  result={} file=csrc/torch_memory_saver.cpp func=cu_mem_create\n"
    assert _said(line.format(2))[0] == "device-oom"
    assert _said(line.format(1))[0] != "device-oom"


def test_sglangs_memory_fraction_too_small_is_memory_at_start_up():
    line = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n"
    assert _said(line) == ("device-oom", "rollout-startup-oom")
    assert _said("RuntimeError: Not enough arguments for the call\n")[0] != "device-oom"


def test_the_device_managers_failed_start_is_a_device_query_and_another_part_that_did_not_start_is_not():
    assert _said("dcmi module initialize failed. ret is -8005\n") == ("no-device", "device-query")
    said = _said("tokenizer initialization failed: the vocabulary file is empty\n")
    assert said is not None and said[1] != "device-query"


def test_torch_npus_compiled_module_missing_is_a_build_and_torch_npu_missing_is_no_device():
    assert _said("ModuleNotFoundError: No module named 'torch_npu._C'\n") == ("import-error", "build-missing-extension")
    assert _said("ModuleNotFoundError: No module named 'torch_npu'\n")[0] == "no-device"


def test_an_ai_core_kernel_that_failed_is_the_devices():
    line = "[ERROR] RUNTIME(85483,python):2024-04-19-18:13:17 PrintErrorInfoForDavinciTask:Aicore kernel execute failed"
    assert _said(line + ", device_id=0, stream_id=2\n") == ("device-fault", "device-fault")


def test_a_modules_missing_attribute_without_its_type_is_versions_and_an_objects_is_not():
    line = "ERROR 03-02 22:42:58 [engine.py:409] module 'torch_npu' has no attribute '_npu_rotary_embedding'\n"
    assert _said(line) == ("import-error", "version-mismatch")
    assert _said("ERROR 03-02 22:42:58 [engine.py:409] 'NoneType' object has no attribute 'shape'\n") != (
        "import-error",
        "version-mismatch",
    )


def test_a_weight_channel_given_a_tensor_on_another_device_is_the_syncs():
    line = "AssertionError: this nccl communicator is created to work on cuda:0, but the input tensor is on cpu\n"
    assert _said(line) == ("weight-sync", "weight-sync")
    assert _said("AssertionError: the input tensor is on cpu\n") != ("weight-sync", "weight-sync")


def test_an_engines_argument_class_refusing_a_keyword_is_versions_and_a_trainers_config_class_is_a_key():
    engine = "TypeError: ServerArgs.__init__() got an unexpected keyword argument 'mm_attention_backend'\n"
    assert _said(engine) == ("import-error", "version-mismatch")
    trainer = "TypeError: GRPOConfig.__init__() got an unexpected keyword argument 'top_p'\n"
    assert _said(trainer)[0] == "config-key"


def test_a_prompt_without_its_media_placeholders_is_the_datas():
    line = "RuntimeError: Expected there to be 1 prompt updates corresponding to 1 image items, but instead found 0"
    assert _said(line + " prompt updates!\n") == ("data-error", "data-error")


def test_placement_groups_ray_could_not_allocate_are_its_resources_and_another_allocation_is_not():
    line = "ValueError: Not enough resources to allocate 2 placement groups, only created 1 placement groups.\n"
    assert _said(line) == ("no-device", "ray-resources")
    assert _said("ValueError: Not enough resources to allocate the output buffer\n") != ("no-device", "ray-resources")


def test_open_mpis_failed_set_up_is_the_communicators():
    banner = "*** An error occurred in MPI_Init_thread\n*** on a NULL communicator\n*** MPI_ERRORS_ARE_FATAL\n"
    assert _said(banner) == ("comm-init", "comm-init")
    assert _said("*** note: MPI_Init_thread took 3 s\n") is None


def test_megatrons_sharding_check_is_a_saves_and_a_missing_key_is_a_loads():
    line = "[ERROR | megatron.core.dist_checkpointing.validation]: Invalid access pattern for ShardedTensor(key='x')\n"
    assert _said(line) == ("checkpoint-save", "checkpoint-save")
    missing = "RuntimeError: Missing key in checkpoint state_dict: model.decoder.layers.0.weight\n"
    assert _said(missing) != ("checkpoint-save", "checkpoint-save")


def test_a_converter_script_named_for_its_formats_is_a_conversion():
    log = (
        "Traceback (most recent call last):\n"
        '  File "/workspace/scripts/megatron_lm_ckpt_to_nemo.py", line 315, in load_from_checkpoint\n'
        "    state = ckpt['model']\n"
        "KeyError: 'model'\n"
    )
    assert _said(log) == ("checkpoint-mismatch", "checkpoint-conversion")
    assert _said(log.replace("megatron_lm_ckpt_to_nemo.py", "train_to_the_end.py"))[1] != "checkpoint-conversion"
