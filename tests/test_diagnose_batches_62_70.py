"""`grpolab diagnose` on what held-out batches 62-67 taught (tests/data/failures/README.md), each rule beside the
neighbour it must leave alone: NCCL's trace of a failed call's return code (an error line, though NCCL prints it at
INFO; a channel's arrow is not one), a CUDA call that failed inside NCCL, HCCL's topology exchange at set-up, its task
timeout and its lost heartbeat, the kernel's hardware-error record, the Ascend task scheduler's AI Core record, the
Ascend driver's device memory, torch's desync report naming the rank that lagged, pdsh's host prefix, a weight a
loader has no parameter for (vLLM's, accelerate's), a parameter's name as the KeyError of a load, a folder with no
config format, a dtype a quantization method refuses, an older transformers refusing a newer RoPE, a command line its
parser refused in a converter, an import error behind a prefix, a function a loaded library lacks, SymPy refusing an
answer (the reward's), transformers' warnings without a level, and a flag's spelling as an engine's keyword; and of
batches 68-70, glog's records with the year in their date, spdlog's lowercase levels, a C++ check of HCCL's result, a
value no choice has said in a sentence, a file that is not text where transformers wanted a config, and the standard
library of an environment named after a library, and the error records that hold no word (a glog record's level
letter and time, CANN's code), found by the prefilter's patterns. The real logs are the corpus's; the made-up lines are the other
side of each rule."""

from __future__ import annotations

import pytest

from grpolab.monitor.diagnose import diagnose_text
from tests.test_diagnose import _failure_and_family, _log, _said


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("nccl-1016", ("comm-init", "comm-init")),
        ("nccl-1672", ("comm-init", "comm-init")),
        ("hiascend-hcclug-000036", ("comm-init", "comm-init")),
        ("hiascend-hcclug-000036-b", ("comm-init", "comm-init")),
        ("hiascend-hcclug-000025", ("comm-timeout", "comm-timeout")),
        ("hiascend-hcclug-000055", ("comm-timeout", "comm-timeout")),
        ("llamafactory-7396", ("comm-timeout", "comm-timeout")),
        ("hiascend-troubleshooting-0008-en", ("device-fault", "device-fault")),
        ("hiascend-troubleshooting-0010-en", ("device-fault", "device-fault")),
        ("hiascend-tfmigr-000089", ("device-oom", "device-oom")),
        ("hf-apertus-8b-instruct-2509-discussion-8", ("checkpoint-mismatch", "checkpoint-load")),
        ("hf-progenitor-v5-final-llama-70b-discussion-1", ("checkpoint-mismatch", "checkpoint-load")),
        ("hf-unsloth-meta-llama-3.1-8b-instruct-bnb-4bit-discussion-9", ("checkpoint-mismatch", "checkpoint-load")),
        ("hf-philosophymistral-7b-instruct-v0.3-discussion-1", ("checkpoint-mismatch", "checkpoint-load")),
        ("hf-airoboros-l2-13b-gpt4-m2.0-awq-discussion-1", ("engine-config", "engine-config")),
        ("hf-llama-3.1-8b-instruct-discussion-131", ("import-error", "version-mismatch")),
        ("slime-386", ("engine-config", "engine-config")),
        ("transformers-34582", ("import-error", "version-mismatch")),
        ("gitcode-blog-f8362a96", ("import-error", "version-mismatch")),
        ("gitcode-blog-f6229553-b", ("reward-error", "reward-error")),
        ("xllm-350", ("comm-init", "comm-init")),
        ("xllm-767", ("unknown", "unknown")),
        ("vllm-ascend-288", ("engine-config", "engine-config")),
        ("open-reasoner-zero-39", ("engine-config", "engine-config")),
        ("minimind-741", ("checkpoint-mismatch", "checkpoint-load")),
    ],
)
def test_the_batchs_real_logs(case, said):
    assert _said(_log(case)) == said


def test_nccls_trace_of_a_failed_call_is_an_error_and_a_channels_arrow_is_not():
    failed = (
        "gpu-node-3:4411:4502 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n"
        "gpu-node-3:4411:4502 [1] NCCL INFO misc/socket.cc:484 -> 2\n"
        "gpu-node-3:4411:4502 [1] NCCL INFO bootstrap.cc:77 -> 2\n"
    )
    failure = diagnose_text(failed)
    assert (failure.cause, failure.family) == ("comm-init", "comm-init")
    assert "socket.cc:484 -> 2" in failure.first_error and "Channel" not in failure.first_error
    assert "gpu-node-3" in failure.message  # its host, from NCCL's own prefix
    healthy = "gpu-node-3:4411:4502 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC\n" * 3
    assert diagnose_text(healthy) is None


def test_a_cuda_failure_inside_nccl_is_the_communicators_and_its_out_of_memory_the_devices():
    invalid = "node-a:77:90 [2] transport/nvls.cc:201 NCCL WARN Cuda failure 1 'invalid argument'\n"
    assert _said(invalid) == ("comm-init", "comm-init")
    oom = "node-a:77:90 [2] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
    assert _said(oom)[0] == "device-oom"


def test_torchs_desync_report_names_the_rank_that_lagged_not_the_one_that_reports():
    log = (
        "[rank2]:[E301 10:00:00.1 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=90, OpType=ALLGATHER, NumelIn=8, NumelOut=32, Timeout(ms)=600000) ran for 600010 "
        "milliseconds before timing out.\n"
        "[rank2]:[E301 10:00:00.2 ProcessGroupNCCL.cpp:1937] Rank 2\n"
        "         - [0] Timeout at collective: ALLGATHER, #90\n"
        "         - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
        "             [5] joined but didn't finish collective #90 (count from 1)\n"
    )
    failure = diagnose_text(log)
    assert failure.cause == "comm-timeout" and failure.rank == 5
    without = log.split("[rank2]:[E301 10:00:00.2")[0]  # the watchdog's line alone: its own rank
    assert diagnose_text(without).rank == 2


def test_pdshs_host_prefix_names_the_node_and_a_messages_label_does_not():
    log = (
        'worker-7:   File "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", line 3665, in '
        "barrier\n"
        "worker-7: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1197, unhandled system "
        "error\n"
    )
    assert diagnose_text(log).node == "worker-7"
    plain = (
        "Step1: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1197, unhandled system error\n"
    )
    assert diagnose_text(plain).node is None


def test_a_parameters_name_as_a_loads_keyerror_is_the_checkpoints_and_without_the_load_is_not():
    loading = (
        "KeyError: 'model.layers.3.self_attn.o_proj.weight'\nLoading safetensors checkpoint shards:   0% Completed\n"
    )
    assert _said(loading) == ("checkpoint-mismatch", "checkpoint-load")
    other = "KeyError: 'model.layers.3.self_attn.o_proj.weight'\n"
    assert _said(other) != ("checkpoint-mismatch", "checkpoint-load")


def test_a_refused_command_line_is_its_arguments_and_its_unknown_arguments_are_keys():
    refused = "convert_hf_to_mcore.py: error: argument --target-tp: invalid int value: 'two'\n"
    assert _said(refused) == ("engine-config", "engine-config")
    unknown = "convert_hf_to_mcore.py: error: unrecognized arguments: --target-tensor-parallel 2\n"
    assert _said(unknown)[0] == "config-key"


def test_an_import_error_behind_a_prefix_is_versions_or_a_missing_package():
    assert _said("load failed: ModuleNotFoundError: No module named 'vllm.lora.models'\n") == (
        "import-error",
        "version-mismatch",
    )
    assert _said("load failed: ModuleNotFoundError: No module named 'flash_attn'\n") == (
        "import-error",
        "missing-dependency",
    )


def test_sympy_refusing_an_answer_is_the_rewards():
    assert _said("TypeError: Can only compare inequalities with Expr\n") == ("reward-error", "reward-error")
    assert _said("TypeError: '<' not supported between instances of 'dict' and 'int'\n") != (
        "reward-error",
        "reward-error",
    )


@pytest.mark.parametrize(
    "warning",
    [
        "Some weights of Qwen2ForCausalLM were not initialized from the model checkpoint at /m and are newly "
        "initialized: ['score.weight']",
        "Some weights of the model checkpoint at /m were not used when initializing Qwen2Model: ['lm_head.weight']",
        "No chat template is defined for this tokenizer - using the default template for the Qwen2TokenizerFast class.",
    ],
)
def test_transformers_warnings_without_a_level_are_warnings_and_a_step_makes_the_run_healthy(warning):
    assert _failure_and_family(warning + "\n") == (None, "warning-only")
    assert _failure_and_family(warning + "\nstep:1 - actor/pg_loss:0.1 - critic/score/mean:0.2\n") == (
        None,
        "healthy-run",
    )


def test_a_flags_spelling_as_an_engines_keyword_is_its_setting_and_a_real_keyword_is_the_versions():
    flag = "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'enable-prefix-caching'\n"
    assert _said(flag) == ("config-key", "engine-config")
    keyword = "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'enable_prefix_caching'\n"
    assert _said(keyword)[1] == "version-mismatch"


def test_glogs_records_with_the_year_and_spdlogs_lowercase_levels_are_levels():
    fatal = (
        "F20251111 12:28:58.504206 214989 collective_service.cpp:37] Check failed: status == HCCL_SUCCESS (1 vs. 0) "
        "HCCL get root info failed.\n"
    )
    failure = diagnose_text(fatal)
    assert (failure.cause, failure.family) == ("comm-init", "comm-init") and "Check failed" in failure.first_error
    assert (
        diagnose_text("I20251111 12:28:58.504206 214989 server.cpp:1203] Check out http://h-1:36575 in web browser.\n")
        is None
    )
    error = "[2026-01-29 12:08:30.614896] [error] [439962] [tensor_check.cpp:28] tensor dimNum 0 is invalid\n"
    assert "dimNum 0 is invalid" in diagnose_text(error).first_error
    assert diagnose_text(error.replace("[error]", "[info]")) is None


def test_glogs_warning_letter_is_a_warning():
    warned = "W20260609 17:30:47.271301 777229 model_config.cpp:123] use_cpp_chat_template off\n"
    assert _failure_and_family(warned) == (None, "warning-only")


def test_a_value_no_choice_has_is_the_engines_setting_whatever_the_setting_names():
    listed = (
        "ValueError: Unrecognized distributed executor backend tp. Supported values are 'ray', 'mp' 'uni', "
        "'external_launcher' or custom ExecutorBase subclass.\n"
    )
    assert _said(listed) == ("engine-config", "engine-config")
    assert _said("RuntimeError: Unsupported block size: 256\n") == ("engine-config", "engine-config")
    assert _said("ValueError: Unrecognized distributed executor backend tp.\n") == ("unknown", "unknown")


_UNDECODED = """Traceback (most recent call last):
  File "/opt/envs/vllm/lib/python3.11/site-packages/transformers/configuration_utils.py", line 866, in _dict_from_json_file
    text = reader.read()
  File "/opt/envs/vllm/lib/python3.11/codecs.py", line 322, in decode
    (result, consumed) = self._buffer_decode(data, self.errors, final)
UnicodeDecodeError: 'utf-8' codec can't decode byte 0x80 in position 64: invalid start byte
"""


def test_a_file_that_is_not_text_where_transformers_wanted_a_config_is_the_model_path():
    failure = diagnose_text(_UNDECODED)
    assert (failure.cause, failure.family) == ("checkpoint-mismatch", "checkpoint-load")
    assert "model.path" in failure.fix
    reward = _UNDECODED.replace("transformers/configuration_utils.py", "my_rm/score.py")
    assert _said(reward.replace("_dict_from_json_file", "read_rows")) == ("reward-error", "reward-error")


def test_the_standard_library_of_an_environment_named_after_a_library_is_the_standard_librarys():
    from grpolab.monitor.libraries import STDLIB, library_of

    assert library_of("/home/u/anaconda3/envs/sglang/lib/python3.10/codecs.py") == STDLIB
    assert library_of("/home/u/anaconda3/envs/sglang/lib/python3.10/site-packages/transformers/x.py") == "transformers"
    assert library_of("/workspace/sglang/python/sglang/srt/server.py") == "sglang"


@pytest.mark.parametrize(
    ("record", "first"),
    [
        (
            "E20260118 12:10:31.473901  1219 decoder_layer_impl.cpp:832] node.operation is null",
            "node.operation is null",
        ),
        ("[E1206 18:44:12.700 ProcessGroupNCCL.cpp:1] rank 3 is gone", "rank 3 is gone"),
        ("E30008: AI CPU operator execution time out.", "E30008: AI CPU operator"),
    ],
)
def test_an_error_record_that_holds_no_word_is_found_by_its_level_letter_or_code(record, first):
    failure = diagnose_text(f"I20260118 12:10:30.000001  1219 server.cpp:1] started\n{record}\n")
    assert failure is not None and first in failure.first_error
    assert (
        diagnose_text(record.replace("E2026", "I2026").replace("[E1206", "[I1206").replace("E30008: ", "E30008 "))
        is None
    )
