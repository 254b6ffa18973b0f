"""`grpolab diagnose` on what held-out batches 41-49 taught (tests/data/failures/README.md), each rule beside the
neighbour it must leave alone: a check that names the dotted keys it wants, transformers refusing a folder that
holds no model, an empty data loader, torch_npu failing to create its communicator, torch.distributed's backend
error under a converter's frames, a raylet out of worker ports, a pytest frame's source line, Megatron's async
writer, pydantic refusing a key, a device index beyond those seen, a trainer's package missing its own file, an
override's dotted key, a traceback cut inside an import or a split into mini batches, IPython's traceback (a
notebook's), vLLM finding no device, a context not set, ms-swift's and LLaMA-Factory's own code; and of batches 48-49, Ray's
Jobs API refusing a submission, Ray giving the driver no device, a size that differs from what was saved, UCX not
reaching a peer, a traceback cut inside a save. The real logs are the
corpus's; the made-up lines are the other side of each rule."""

from __future__ import annotations

import pytest

from grpolab.monitor.diagnose import diagnose_text
from tests.test_diagnose import _log, _said


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ("verl-docs-epmcp-actor-micro-batch-unset", ("engine-config", "engine-config")),
        ("verl-docs-epmcp-rollout-logprob-micro-batch-unset", ("engine-config", "engine-config")),
        ("verl-docs-epmcp-critic-model-path-invalid", ("checkpoint-mismatch", "checkpoint-load")),
        ("verl-docs-epmcp-train-dataloader-empty", ("data-error", "data-error")),
        ("verl-docs-epmcp-critic-key-not-in-struct", ("config-key", "hydra-config")),
        ("verl-198", ("comm-init", "comm-init")),
        ("verl-3636", ("comm-init", "comm-init")),
        ("sglang-4096", ("comm-init", "weight-sync")),  # the same backend error on the weight channel: the sync's
        ("nemo-rl-951", ("port-in-use", "port-in-use")),
        ("slime-326", ("checkpoint-save", "checkpoint-save")),
        ("openrlhf-866", ("no-device", "device-visibility")),
        ("verl-154", ("unknown", "trainer-bug")),
        ("verl-3719", ("import-error", "version-mismatch")),
    ],
)
def test_the_batchs_real_logs(case, said):
    assert _said(_log(case)) == said


def test_a_check_asking_for_a_setting_names_dotted_keys_and_a_plain_please_is_no_config():
    assert _said("AssertionError: Please set at least one of 'actor.ppo_micro_batch_size' or 'x.y'\n") == (
        "engine-config",
        "engine-config",
    )
    assert _said("AssertionError: Please set at least one of the two\n") != ("engine-config", "engine-config")


def test_a_folder_without_a_model_is_the_checkpoints_and_a_missing_token_is_not():
    said = _said("OSError: Can't load tokenizer for '/data/none'. If you were trying to load it from the Hub\n")
    assert said == ("checkpoint-mismatch", "checkpoint-load")
    assert _said("OSError: You are trying to access a gated repo. Make sure to have access\n") != said


def test_an_empty_data_loader_is_the_datas_and_an_empty_queue_is_not():
    assert _said("AssertionError: Train dataloader is empty!\n") == ("data-error", "data-error")
    assert _said("AssertionError: the request queue is empty\n") != ("data-error", "data-error")


def test_a_raylet_out_of_ports_is_the_ports_and_one_that_cannot_register_is_its_reach():
    lead = "core_worker.cc:513: Failed to register worker to Raylet: Invalid: "
    assert _said(lead + "No available ports. Please specify a wider port range\n") == ("port-in-use", "port-in-use")
    assert _said(lead + "IOError: Connection refused\n")[1] == "ray-cluster-connect"


def test_a_pytest_frames_source_line_is_code_not_a_timeout():
    frame = (
        "vllm/entrypoints/llm.py:664: in collective_rpc\n    return self.engine.collective_rpc(method, timeout, args)\n"
    )
    assert _said(frame) is None or _said(frame)[0] != "comm-timeout"
    # the same words as a record of their own: still the collective's timeout
    assert _said("[E] collective_rpc timed out after 1800 s waiting for rank 3\n")[0] == "comm-timeout"


def test_megatrons_async_writer_failing_is_a_save_and_a_load_is_not():
    head = "ERROR: megatron.core.dist_checkpointing.strategies."
    said = _said(head + "filesystem_async: Local process 0 encountered an error: [Errno 5] Input/output error\n")
    assert said == ("checkpoint-save", "checkpoint-save")
    text = "megatron.core.dist_checkpointing.core.CheckpointingException: Invalid access pattern: 36 ShardedObject are"
    assert _said(text + " missing\n")[1] == "checkpoint-load"


def test_pydantic_refusing_a_key_is_a_config_key_and_a_bad_value_is_the_engines():
    extra = "pydantic_core._pydantic_core.ValidationError: 1 validation error for TrainerConfig\ndata.fake\n"
    assert _said(extra + "  Extra inputs are not permitted [type=extra_forbidden, input_value=1]\n") == (
        "config-key",
        "hydra-config",
    )
    value = "  Input should be greater than 0 [type=greater_than, input_value=-1]\n"
    assert _said(extra + value) != ("config-key", "hydra-config")


def test_a_device_index_beyond_those_seen_is_visibility():
    text = "torch.cuda.DeferredCudaCallError: CUDA call failed lazily at initialization with error: device >= 0 && "
    assert _said(text + "device < num_gpus INTERNAL ASSERT FAILED\n") == ("no-device", "device-visibility")


def test_a_trainers_package_missing_its_own_file_is_the_trainers_and_a_users_file_is_not():
    frame = '  File "/env/lib/python3.12/site-packages/verl/single_controller/__init__.py", line 19, in <module>\n'
    error = "FileNotFoundError: [Errno 2] No such file or directory: '/env/lib/python3.12/site-packages/verl/{}'\n"
    trace = "Traceback (most recent call last):\n" + frame + "    with open(path) as f:\n"
    assert _said(trace + error.format("single_controller/version/version")) == ("unknown", "trainer-bug")
    users = "FileNotFoundError: [Errno 2] No such file or directory: '/home/me/data/train.parquet'\n"
    assert _said(trace + users) != ("unknown", "trainer-bug")


def test_an_overrides_dotted_key_is_hydras_and_a_leaf_read_by_code_is_the_configs_version():
    assert _said("ConfigAttributeError: Key 'critic.micro_batch' is not in struct\n")[1] == "hydra-config"
    assert _said("ConfigAttributeError: Key 'micro_batch' is not in struct\n")[1] == "config-version-mismatch"


def test_a_traceback_cut_in_a_split_into_mini_batches_is_the_batchs_and_one_cut_in_a_forward_is_not():
    trace = (
        'Traceback (most recent call last):\nFile ".../skyrl/train/trainer.py", line 696, in convert\n    m = {}(x)\n'
    )
    assert _said(trace.format("compute_prompt_mini_batch_bou")) == ("batch-divisible", "batch-divisible")
    assert _said(trace.format("self.model.forward")) != ("batch-divisible", "batch-divisible")


IPYTHON = """---------------------------------------------------------------------------
ValueError                                Traceback (most recent call last)
Cell In[3], line 5
      3 import torch
----> 5 trainer.train()

File ~/env/lib/python3.10/site-packages/trl/trainer/grpo_trainer.py:120, in GRPOTrainer.train(self)
    119 def train(self):
--> 120     raise ValueError("the data set has no column 'prompt'")

ValueError: the data set has no column 'prompt'
"""


def test_ipythons_traceback_is_read_by_its_last_line_and_a_cut_one_by_its_header():
    failure = diagnose_text(IPYTHON)
    assert failure.first_error == "ValueError: the data set has no column 'prompt'"
    assert "Followed by" not in failure.message  # its header is no second error after it
    # unsloth-3542: a notebook's traceback cut after its header: the header is the one line naming the type
    assert _said(_log("unsloth-3542")) == ("device-oom", "rollout-startup-oom")
    assert _said(IPYTHON.split("Cell In")[0]) == ("unknown", "unknown")  # a type alone says no more than its name


def test_vllm_finding_no_device_is_no_device():
    assert _said("RuntimeError: No supported device detected.\n")[0] == "no-device"


def test_a_context_not_set_is_the_frameworks_order_and_a_setting_not_set_is_not():
    text = "AssertionError: Forward context is not set. Please use `set_forward_context` to set the forward context.\n"
    assert _said(text) == ("unknown", "trainer-bug")
    assert _said("AssertionError: HF_TOKEN is not set\n") != ("unknown", "trainer-bug")


def test_ms_swifts_own_lookup_is_its_bug_and_the_users_is_not():
    frame = '  File "/env/lib/python3.10/site-packages/swift/plugin/loss.py", line 869, in get_loss_func\n'
    trace = "Traceback (most recent call last):\n" + frame + "    return loss_mapping[loss_type]\nKeyError: 'grpo'\n"
    assert _said(trace) == ("unknown", "trainer-bug")
    assert _said(trace.replace("/env/lib/python3.10/site-packages/swift/plugin", "/home/me")) != (
        "unknown",
        "trainer-bug",
    )


def test_rays_jobs_api_refusing_a_submission_is_the_clusters_reach():
    text = "RuntimeError: Request failed with status code 500: Traceback (most recent call last):\n"
    frame = '  File "/usr/lib/python3.10/dist-packages/ray/dashboard/modules/job/job_head.py", line 287, in submit\n'
    assert _said(text + frame)[1] == "ray-cluster-connect"
    url = "requests.exceptions.HTTPError: 502 Server Error: Bad Gateway for url: http://127.0.0.1:6379/api/version\n"
    assert _said(url)[1] == "ray-cluster-connect"
    assert _said(url.replace(":6379", ":8000"))[1] != "ray-cluster-connect"  # another server's


def test_ray_giving_the_driver_no_gpu_is_the_placement():
    text = "ValueError: Ray does not allocate any GPUs on the driver node. Consider adjusting the placement group\n"
    assert _said(text) == ("no-device", "ray-resources")


def test_a_size_mismatch_with_what_was_saved_is_a_load_and_a_save_under_way_is_not():
    text = "ValueError: Size mismatch between saved torch.Size([6561, 512]) and current: torch.Size([5533, 512])\n"
    assert _said(text) == ("checkpoint-mismatch", "checkpoint-load")


def test_ucx_not_reaching_a_peer_is_the_communicators():
    text = "[1712] UCX  ERROR   connect(fd=168, dest_addr=169.254.4.6:52595) failed: Connection refused\n"
    assert _said(text)[0] == "comm-init"


def test_a_traceback_cut_inside_a_save_is_the_saves_and_one_cut_inside_a_step_is_not():
    head = 'Traceback (most recent call last):\n  File "/x/deepspeed/runtime/engine.py", line 1595, in {}\n    {}\n'
    cut = head.format("save_checkpoint", "self._save_zero_checkpoint(save_dir, tag)")
    assert _said(cut) == ("checkpoint-save", "checkpoint-save")
    assert _said(head.format("step", "self.optimizer.step()")) != ("checkpoint-save", "checkpoint-save")
