"""`grpolab diagnose` on what held-out batches 12-20 taught (tests/data/failures/README.md): a log cut inside its
traceback still says where it broke (a frame whose line the post cut, the call its innermost frame's source line was
making, the deepest frame below a re-raise), and a family follows from the stack's structure (a converter's loader is
no weight sync, W&B's login, a batch's split, a wait for placement groups, NCCL's errors first reported by a
watchdog, NCCL's own advice `run with NCCL_DEBUG=WARN`, an error record while weights were being updated, a reward class
that did not import); a fallback notice is no failure, and a NaN in a trainer's table or dict is. The logs are the corpus's real
ones; the made-up lines are the other side of each rule (what it must not catch)."""

from __future__ import annotations

import io
import json
import sys

import pytest

from grpolab.monitor.diagnose import diagnose_text
from tests.test_diagnose import _log, _said


def test_a_frame_whose_start_the_post_cut_is_a_failure_and_verls_batch_split_says_the_batch(monkeypatch, capsys):
    import grpolab.cli

    # TinyZero-47's whole post: `/verl/protocol.py", line 491, in chunk` (the title: `only support equal chunk`)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_log("tinyzero-47").encode())))
    assert grpolab.cli.main(["diagnose", "-", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert (out["failure"]["cause"], out["family"]) == ("batch-divisible", "batch-divisible")
    assert out["failure"]["frame"] == "/verl/protocol.py:491 in chunk"
    # a quoted path (simple_GRPO-13's `"python3.10/.../math_verify/utils.py", line 43, in handler`): the reward's
    assert _said(_log("simple-grpo-13")) == ("reward-error", "reward-error")
    # a frame cut elsewhere in verl is a failure with no family of the split
    assert _said('/verl/trainer/ppo/ray_trainer.py", line 900, in fit\n') == ("unknown", "unknown")


def test_the_call_on_the_innermost_frames_source_line_names_what_broke():
    # slime-903: cut under `initialize_model_and_optimizer` whose line calls load_checkpoint(: the checkpoint's load
    failure = diagnose_text(_log("slime-903"))
    assert (failure.cause, failure.family) == ("checkpoint-mismatch", "checkpoint-load")
    assert failure.frame.endswith("model.py:700 in load_checkpoint"), failure.frame
    # the same frame calling something else says nothing of a checkpoint
    other = _log("slime-903").replace("load_checkpoint(", "build_optimizer(")
    assert _said(other) == ("unknown", "unknown")


def test_a_frame_below_a_re_raise_is_the_innermost_shown_and_w_and_bs_login_is_the_key():
    failure = diagnose_text(_log("sftvsrl-1"))  # wandb's sentry re-raises, then login -> configure_api_key
    assert (failure.cause, failure.family) == ("wandb-auth", "wandb-auth")
    assert "wandb_login.py" in failure.first_error and "raise exc" not in failure.first_error


def test_a_converters_own_loader_at_start_up_is_the_conversion_and_a_sync_that_converts_stays_the_sync():
    assert _said(_log("verl-3286")) == ("checkpoint-mismatch", "checkpoint-conversion")  # mbridge's load_weights
    sync = (
        "Traceback (most recent call last):\n"
        '  File "/slime/backends/megatron_utils/update_weight_utils.py", line 210, in update_weights\n'
        "    for name, param in convert_to_hf(args, model_name, name, param):\n"
        '  File "/slime/backends/megatron_utils/megatron_to_hf/__init__.py", line 40, in convert_to_hf\n'
        '    raise ValueError(f"Unknown parameter name: {name}")\n'
        "ValueError: Unknown parameter name: decoder.layers.0.mlp.router.expert_bias\n"
    )
    assert _said(sync) == ("weight-sync", "weight-sync")


def test_nccl_errors_first_reported_by_a_watchdog_are_a_running_collectives_and_at_set_up_the_communicators():
    failure = diagnose_text(_log("areal-3"))
    assert (failure.cause, failure.family) == ("comm-timeout", "comm-timeout")
    # NCCL names the peer it lost under the error (`Got completion from peer 10.10.11.9<51354>`): that node, not the
    # survivor reporting it
    assert failure.node == "10.10.11.9" and "The node it lost: 10.10.11.9" in failure.message
    at_init = "\n".join(
        line for line in _log("areal-3").splitlines() if "watchdog" not in line
    )  # the same NCCL error without the watchdog's report: the communicator
    assert _said(at_init)[0] == "comm-init"


def test_a_traceback_cut_while_it_waited_for_placement_groups_is_a_start_up_that_did_not_come_up():
    # skypilot-7257 also prints NeMo RL's "No chat template provided, using tokenizer's default": a notice, not a cause
    assert _said(_log("skypilot-7257")) == ("startup-timeout", "startup-timeout")
    assert _said("No chat template provided, using tokenizer's default\nstep:1 - loss:0.5\n") is None
    assert _said("ValueError: Cannot use chat template functions because tokenizer.chat_template is not set\n")[0] == (
        "chat-template"
    )


def test_a_zero_division_over_batch_sizes_is_the_batch_and_elsewhere_it_is_not():
    assert _said(_log("prime-31")) == ("batch-divisible", "batch-divisible")
    other = '  File "/x/metrics.py", line 3, in mean\n    return total / count\nZeroDivisionError: division by zero\n'
    assert _said(other)[0] != "batch-divisible"


@pytest.mark.parametrize(
    "log",
    [
        "{'loss': 0.0123, 'grad_norm': nan, 'learning_rate': 1e-06, 'epoch': 0.01}\n",
        "Step | Training Loss | reward | kl\n-- | -- | -- | --\n1 | -0.2836 | 13.43 | nan\n",
    ],
    ids=["trl-dict", "notebook-table"],
)
def test_a_nan_in_a_trainers_log_dict_or_table_is_the_loss(log):
    assert _said(log) == ("nan-loss", "nan-loss")
    assert _said(log.replace("nan", "0.01")) is None


def test_rays_autoscaler_that_no_node_type_fits_is_the_resources_asked():
    assert _said(_log("rllm-35")) == ("no-device", "ray-resources")


def test_nccls_advice_to_run_with_nccl_debug_warn_is_no_warning():
    assert _said(_log("trl-3158")) == ("comm-init", "comm-init")  # `Duplicate GPU detected`, then NCCL's error
    assert _said("WARNING: NCCL error: invalid usage, will retry\n") is None


def test_a_server_that_did_not_come_online_within_its_time_is_a_start_up():
    assert _said(_log("skyrl-1495")) == ("startup-timeout", "startup-timeout")


def test_an_error_record_while_the_weights_were_being_updated_is_the_weight_sync():
    log = _log("prime-rl-1119")  # prime-rl's `Updating weights to weight checkpoint 1`, then loguru's error record
    assert _said(log) == ("weight-sync", "weight-sync")
    assert _said(log.replace("Updating weights to", "Evaluating"))[1] != "weight-sync"


def test_a_reward_worker_class_that_did_not_import_is_the_reward_missing():
    log = _log("roll-201")
    assert _said(log) == ("reward-missing", "reward-missing")
    assert _said(log.replace("Reward", "Actor").replace("reward", "actor"))[0] != "reward-missing"


def test_a_traceback_cut_inside_an_import_or_a_load_of_weights_says_which():
    # vllm-ascend-1093: the innermost frames are importlib's (the module that did not import is below them)
    assert _said(_log("vllm-ascend-1093")) == ("import-error", "version-mismatch")
    # LlamaFactory-1910: cut in peft's from_pretrained (the title: safetensors could not read the adapter's header)
    assert _said(_log("llamafactory-1910")) == ("checkpoint-mismatch", "checkpoint-load")
    # a frame cut elsewhere (a training step) is neither
    assert _said('  File "/x/verl/trainer/ppo/ray_trainer.py", line 9, in fit\n')[1] == "unknown"


def test_a_model_the_installed_version_does_not_know_is_a_version_mismatch_and_a_converters_refusal_the_conversion():
    assert _said(_log("search-r1-173")) == ("import-error", "version-mismatch")  # verl's RMPad list without qwen3
    refused = "ValueError: Model architecture Qwen3NextForCausalLM not supported by AutoBridge\n"
    assert _said(refused)[1] == "checkpoint-conversion"


def test_a_segfault_in_the_middle_of_a_weight_update_is_the_weight_sync():
    log = _log("vllm-57853")  # `POST /update_weights (CUDA IPC payload) -> never returns`, then the segfault
    assert _said(log) == ("weight-sync", "weight-sync")
    assert _said(log.replace("update_weights", "generate").replace("weight_update", "generate"))[1] != "weight-sync"


def test_a_traceback_cut_in_a_process_groups_store_or_a_parallel_groups_getter_says_so_and_that_it_is_inferred():
    failure = diagnose_text(
        _log("skyrl-284")
    )  # vLLM's engine cut in torch's _create_c10d_store (the thread: EADDRINUSE)
    assert (failure.cause, failure.family) == ("port-in-use", "port-in-use")
    assert "stops inside the process group's store" in failure.message and "before its error line" in failure.message
    # ROLL's strategy cut in Megatron's get_pipeline_model_parallel_group (a group used before it was set up)
    assert _said(_log("roll-330")) == ("unknown", "trainer-bug")


def test_rays_failed_check_a_bare_exception_and_a_relayed_out_of_memory_are_errors_of_their_own():
    # Ray's C++ record at level C (`[2025-07-06 07:14:27,052 C 2915798 2915798] task_receiver.cc:219: Check failed`)
    # is an error line: it had answered "no failure", exit 0
    failure = diagnose_text(_log("verl-2380"))
    assert failure is not None and "Check failed: objects_valid" in failure.first_error
    # Python's bare `Exception: ...` under its `raise Exception(` is the first error, not the raise
    assert diagnose_text(_log("sglang-4205")).first_error.startswith("Exception: Capture cuda graph failed")
    # RayTaskError(OutOfMemoryError): the remote task's own type is the device's memory
    assert _said(_log("rex-omni-110")) == ("device-oom", "device-oom")


def test_a_config_dumped_above_an_out_of_memory_does_not_make_it_the_engines_start_up():
    log = _log("rex-omni-124")  # the run's config (`gpu_memory_utilization: 0.6`), then torch's out of memory
    assert _said(log) == ("device-oom", "device-oom")
    advised = log + "Try lowering `gpu_memory_utilization` when initializing the engine.\n"  # an engine's own words
    assert _said(advised) == ("device-oom", "rollout-startup-oom")


# what a page adds to a log it shows: every line quoted, HTML's entities, colour codes that lost their escape character
# (`[33m(raylet) ...`, as a post keeps them)
POSTED = {
    "quoted": lambda log: "".join("> " + line for line in log.splitlines(True)),
    "html": lambda log: log.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;"),
    "colours": lambda log: "".join("[36m" + line for line in log.splitlines(True)),
}


@pytest.mark.parametrize("how", sorted(POSTED))
def test_a_log_as_a_page_shows_it_gets_the_answer_of_the_log_itself(how):
    import yaml

    from tests.test_diagnose_corpus import CASES

    changed = []
    for path in CASES[::8]:  # a sample across the corpus (every family's cases are spread over its names)
        log = yaml.safe_load(path.read_text())["log"]
        if all(line.startswith("> ") for line in log.splitlines() if line.strip()):
            continue  # a page's quote already (vllm-1465): read once as a page's, not twice, nor behind colours
        if _said(POSTED[how](log)) != _said(log):
            changed.append(path.stem)
    assert changed == []
