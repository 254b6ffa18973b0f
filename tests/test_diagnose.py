"""`grpolab diagnose LOG|RUN|-` and the diagnosis behind it: the origin rank and node of a multi-rank failure, the
key and values to change, a folder of per-rank logs, stdin, a run (the same answer as its log given as a file),
silent failures from a run's metrics, and the exit status."""

from __future__ import annotations

import io
import json
import sys

import pytest
import yaml

from grpolab.monitor import synthetic
from grpolab.monitor.diagnose import Scan, diagnose_text
from tests.test_diagnose_corpus import CORPUS


@pytest.fixture
def cli(monkeypatch):
    import grpolab.cli

    monkeypatch.setattr(grpolab.cli, "VERBS", {"diagnose": "diagnose"})
    return grpolab.cli.main


def _log(case: str) -> str:
    return yaml.safe_load((CORPUS / f"{case}.yaml").read_text())["log"]


def _failure_and_family(text: str) -> tuple[object, str]:
    """(the failure, the family) of a log's text: a log without a failure says healthy-run or warning-only."""
    (scan := Scan()).feed_text(text, "<text>")
    return scan.result(), scan.family()


def _said(text: str) -> tuple[str, str] | None:
    """(cause, family) of a log's text, or None for a log without a failure: what the rule tests compare."""
    failure = diagnose_text(text)
    return (failure.cause, failure.family) if failure else None


# Interleaved Ray workers on two nodes: rank 3 runs out of memory on 10.0.0.6; the others time out waiting for it,
# then Ray reports the dead actor. (Lines in the formats of the corpus' cases: Ray prefixes, torchrun's [rankN]:,
# NCCL's watchdog, torch's OOM message.)
MULTI_NODE = """\
(WorkerDict pid=5101, ip=10.0.0.5) [rank0]:[E1206 18:54:12.7 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=5, NumelOut=5, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.
(WorkerDict pid=5230, ip=10.0.0.6) [rank3]:[W1206 18:44:10.1 logging.py:12] step 412 starts
(WorkerDict pid=5230, ip=10.0.0.6) [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.71 GiB. GPU 3 has a total capacity of 79.11 GiB
(WorkerDict pid=5102, ip=10.0.0.5) [rank1]:[E1206 18:54:12.8 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=5, NumelOut=5, Timeout(ms)=600000) ran for 600062 milliseconds before timing out.
(raylet, ip=10.0.0.6) A worker died or was killed while executing a task by an unexpected system error.
"""


def test_the_origin_is_named_first_and_its_consequences_after():
    failure = diagnose_text(MULTI_NODE)
    assert failure.cause == "device-oom"
    assert failure.rank == 3 and failure.node == "10.0.0.6"
    assert "rank 3 on node 10.0.0.6" in failure.message and "comm-timeout" in failure.message
    assert "CUDA out of memory" in failure.lines[0]
    assert any("Watchdog" in line for line in failure.lines[1:]) and failure.then[0] == "comm-timeout"


def test_a_timeout_names_the_rank_furthest_behind_across_ranks():
    # rank 2 waits in an earlier collective (SeqNum 41) than ranks 0 and 1 (42): rank 2 is the one behind
    lines = [
        f"[rank{r}]:[E804 23:05:5{r}.8 ProcessGroupNCCL.cpp:689] [Rank {r}] Watchdog caught collective operation "
        f"timeout: WorkNCCL(SeqNum={seq}, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
        "600093 milliseconds before timing out."
        for r, seq in ((0, 42), (1, 42), (2, 41))
    ]
    failure = diagnose_text("\n".join(lines))
    assert failure.cause == "comm-timeout" and failure.rank == 2 and failure.collective == "BROADCAST"
    assert "rank 2" in failure.message and "ranks 0, 1" in failure.message
    assert "SeqNum=41" in failure.lines[0]


def test_a_folder_of_per_rank_logs_attributes_lines_to_their_files_rank(tmp_path, cli, capsys):
    # no rank in the lines themselves: the file names say it; the earliest time across the files is the origin
    (tmp_path / "rank0.log").write_text(
        "INFO 12-02 10:00:01 start\nERROR 12-02 10:20:05 [pynccl.py:1] NCCL watchdog: collective timed out\n"
    )
    (tmp_path / "rank1.log").write_text(
        "INFO 12-02 10:00:01 start\nERROR 12-02 10:10:00 [worker.py:1] NCCL error: collective timed out\n"
    )
    assert cli(["diagnose", str(tmp_path), "--json"]) == 1
    failure = json.loads(capsys.readouterr().out)["failure"]
    assert failure["cause"] == "comm-timeout" and failure["rank"] == 1
    assert failure["files"][0].endswith("rank1.log") and failure["line_numbers"][0] == 2


def test_a_config_key_names_the_nearest_key_of_the_installed_verl():
    from grpolab.verl.config import config_dir

    if config_dir() is None:  # verl's config files, read as data (verl itself is not imported)
        pytest.skip("verl is not installed")
    failure = diagnose_text(_log("verl-1080"))
    assert failure.key == "actor_rollout_ref.actor.fsdp_config.grad_offload"
    assert "actor_rollout_ref.actor.fsdp_config.param_offload" in failure.message  # from verl's own config
    assert failure.rule == "verl-schema" and "grpolab check" in failure.message


def test_a_batch_failure_names_the_recipe_key_and_the_nearest_valid_values():
    text = (
        "python3 -m verl.trainer.main_ppo data.train_batch_size=30 actor_rollout_ref.rollout.n=5\n"
        "AssertionError: only support equal chunk. Got size of DataProto 150 and chunk 8.\n"
    )
    failure = diagnose_text(text)
    assert failure.cause == "batch-divisible" and failure.key == "data.train_batch_size"
    assert "30 x rollout.n (the group size) 5" in failure.message
    # 30 x 5 must be a multiple of 8: train_batch_size a multiple of 8 (rules.maths' nearest multiples)
    assert "24, 32, 40" in failure.fix and failure.rule == "dispatch-chunk"


def test_a_layout_failure_names_the_key_and_its_valid_values():
    failure = diagnose_text(_log("vllm-52435"))
    assert failure.cause == "layout-mismatch" and failure.key == "rollout.tp"
    assert "1, 2, 4" in failure.fix and failure.rule == "rollout-heads"


def test_the_same_answer_on_a_runs_own_log_as_on_the_log_given_as_a_file(finished_run, cli, capsys, tmp_path):
    log = _log("vllm-ascend-3413")
    run = finished_run("diag-run", synthetic.healthy(3), state="FAILED", message="Job entrypoint command failed")
    run.job_log.parent.mkdir(parents=True, exist_ok=True)
    run.job_log.write_text(log)
    file = tmp_path / "console.log"
    file.write_text(log)
    assert cli(["diagnose", "diag-run", "--json", "--no-refresh"]) == 1
    from_run = json.loads(capsys.readouterr().out)["failure"]
    assert cli(["diagnose", str(file), "--json"]) == 1
    from_file = json.loads(capsys.readouterr().out)["failure"]
    assert from_run == from_file and from_run["rank"] == 24
    # and the monitor (grpolab monitor, status, 04_monitor) shows that diagnosis for the failed run
    from grpolab.monitor.summary import summary

    assert summary(run.path, refresh=False)["failure"] == from_file
    # 04_monitor's "The run" cell (grpolab.notebook.show_run) prints it: the cause, the stalled rank, the fix
    from grpolab import notebook

    capsys.readouterr()
    notebook.show_run(run, picture=False)
    shown = capsys.readouterr().out
    assert "comm-timeout" in shown and "The rank that stalled: rank 24" in shown


def test_stdin_and_the_exit_status(cli, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_log("verl-7430").encode())))
    assert cli(["diagnose", "-"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("stdin: config-key") and "actor_rollout_ref.rollout.limit_images" in out
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"step:1 - actor/pg_loss:0.1\n")))
    assert cli(["diagnose", "-"]) == 0 and "no failure found" in capsys.readouterr().out
    assert cli(["diagnose", "no-such-log-or-run"]) == 2


def test_a_run_that_succeeded_without_a_training_step(finished_run, cli, capsys):
    finished_run("zero-steps", [], state="SUCCEEDED")
    assert cli(["diagnose", "zero-steps", "--json", "--no-refresh"]) == 1
    failure = json.loads(capsys.readouterr().out)["failure"]
    assert failure["cause"] == "no-training-step" and "7401" in failure["message"]


def test_a_reward_that_is_the_same_for_every_sample(finished_run, cli, capsys):
    records = synthetic.healthy(12)
    for record in records:
        for name in ("critic/score/mean", "critic/score/max", "critic/score/min", "critic/rewards/mean"):
            record["data"][name] = 0.0
    finished_run("zero-reward", records)
    assert cli(["diagnose", "zero-reward", "--json", "--no-refresh"]) == 1
    failure = json.loads(capsys.readouterr().out)["failure"]
    assert failure["cause"] == "reward-constant" and "reward is 0 for every sample from step 1" in failure["message"]
    finished_run("healthy", synthetic.healthy(12))
    assert cli(["diagnose", "healthy", "--no-refresh"]) == 0


def test_a_throughput_collapse_while_the_run_still_logs(finished_run, cli, capsys):
    records = synthetic.plant(synthetic.healthy(60), "throughput-drop", 52)
    finished_run("slow", records, state="RUNNING")
    assert cli(["diagnose", "slow", "--json", "--no-refresh"]) == 1
    failure = json.loads(capsys.readouterr().out)["failure"]
    assert failure["cause"] == "throughput-collapse" and "step 5" in failure["message"]


# Message formats as verl, Megatron, vLLM, SGLang, torch and OmegaConf print them (each family one pattern, not
# one log): a line each, the cause it must give.
FAMILIES = [
    (
        "AssertionError: real_train_batch_size (512) must be divisible by minimal possible batch size (48)",
        "batch-divisible",
    ),
    ("AssertionError: train_batch_size (64) must be >= ppo_mini_batch_size (128)", "batch-divisible"),
    ("ValueError: ppo_mini_batch_size 10 should be divisible by ppo_micro_batch_size_per_gpu 4", "batch-divisible"),
    (
        "AssertionError: num_attention_heads (40) must be a multiple of tensor_model_parallel_size (3)",
        "layout-mismatch",
    ),
    (
        "AssertionError: world size (8) is not divisible by tensor_model_parallel_size (3) times pipeline_model_parallel_size (1)",
        "layout-mismatch",
    ),
    ("AssertionError: num_layers (61) should be divisible by pipeline_model_parallel_size (8)", "layout-mismatch"),
    (
        "ValueError: Total number of hidden layers (28) must be divisible by pipeline parallel size (3).",
        "layout-mismatch",
    ),
    ("AssertionError: num_moe_experts (60) must be divisible by expert_model_parallel_size (7)", "layout-mismatch"),
    ("hydra.errors.OverrideParseException: mismatched input '=' expecting <EOF>", "config-key"),
    ("omegaconf.errors.ConfigKeyError: Key 'foo' not in 'RolloutConfig'", "config-key"),
    (
        "ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group.",
        "no-device",
    ),
    (
        "[rank3]:[E ProcessGroupNCCL.cpp:1400] [PG 0 Rank 3] ProcessGroupNCCL's watchdog got stuck for 480 seconds",
        "comm-timeout",
    ),
    (
        "ValueError: Free memory on device (10.1/79.1 GiB) on startup is less than desired GPU memory utilization (0.9, 71.2 GiB).",
        "engine-config",  # a setting to lower (rollout.gpu_memory_utilization), not memory that ran out
    ),
    (
        "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error",
        "comm-init",
    ),
    ("RuntimeError: Error(s) in loading state_dict for Qwen2ForCausalLM:", "checkpoint-mismatch"),
    ("ray.exceptions.ActorDiedError: The actor died because its node has died. Node Id: 1234", "worker-died"),
    ("ValueError: Tensor parallel size (8) cannot be larger than the number of available GPUs (4).", "layout-mismatch"),
    ("RuntimeError: The number of devices (8) is less than tp * pp (16)", "layout-mismatch"),
    (
        "[rank5]:[E ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0(default_pg) Rank 5] Exception (either an error or timeout) "
        "detected by watchdog at work: 1234, last enqueued NCCL work: 1234, last completed NCCL work: 1233.",
        "comm-timeout",
    ),
    (
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.",
        "comm-init",
    ),
]


@pytest.mark.parametrize("line, cause", FAMILIES)
def test_message_families(line, cause):
    failure = diagnose_text(line)
    assert failure is not None and failure.cause == cause, failure


def test_a_mini_batch_larger_than_the_train_batch_names_both_keys():
    failure = diagnose_text(FAMILIES[1][0])
    assert failure.key == "algorithm.ppo_mini_batch_size" and "16, 32, 64" in failure.fix
    assert "data.train_batch_size" in failure.fix and failure.rule == "mini-batch"


def test_omegaconfs_full_key_gives_the_nearest_verl_key():
    from grpolab.verl.config import config_dir

    if config_dir() is None:
        pytest.skip("verl is not installed")
    failure = diagnose_text(
        "omegaconf.errors.ConfigAttributeError: Key 'grad_offload' is not in struct\n"
        "    full_key: actor_rollout_ref.actor.fsdp_config.grad_offload\n    object_type=dict\n"
    )
    # the key as a person writes it in a launch (the dotted full key), not OmegaConf's last part
    assert failure.key == "actor_rollout_ref.actor.fsdp_config.grad_offload"
    assert "The rejected key: actor_rollout_ref.actor.fsdp_config.grad_offload" in failure.message
    assert "actor_rollout_ref.actor.fsdp_config.param_offload" in failure.message


def test_a_warning_names_its_cause_only_when_nothing_else_does():
    # Ray's autoscaler warns while a placement group waits; the run then fails on its own cause
    warning = (
        "(autoscaler +12s) Warning: The following resource request cannot be scheduled right now: "
        "{'GPU': 1.0, 'CPU': 1.0}. This is likely due to all cluster resources being claimed by actors.\n"
    )
    assert diagnose_text(warning).cause == "no-device"
    oom = "(WorkerDict pid=7) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    assert diagnose_text(warning + oom).cause == "device-oom"


def test_a_line_of_megabytes_is_matched_around_its_words(tmp_path):
    # a tensor dump of millions of characters on one line must not make the patterns crawl through all of it
    log = tmp_path / "dump.log"
    log.write_text("x" * 3_000_000 + " RuntimeError: CUDA out of memory. Tried to allocate 1 GiB " + "y" * 3_000_000)
    from grpolab.monitor.diagnose import diagnose_files

    failure = diagnose_files([(log, None)])
    assert failure.cause == "device-oom" and len(failure.lines[0]) <= 406


def test_a_running_run_whose_files_stopped_growing_is_stalled(finished_run, cli, capsys):
    import os
    import time

    from grpolab.monitor.diagnosis import run_failure
    from grpolab.monitor.metrics import MetricsView

    run = finished_run("hung", synthetic.healthy(20), state="RUNNING")
    status = run.record()
    assert run_failure(run, status, MetricsView.for_run(run)) is None  # it just wrote
    quiet = time.time() - 3600  # an hour without a byte, for steps of about 10 s
    os.utime(run.metrics_file, (quiet, quiet))
    failure = run_failure(run, status, MetricsView.for_run(run))
    assert failure.cause == "stalled" and "since step 20" in failure.message


def test_a_divisor_named_first_and_a_product_are_read_as_the_maths_says():
    failure = diagnose_text(
        "AssertionError: Tensor model parallel size (3) must divide the number of attention heads (32)"
    )
    assert failure.key == "train.tp" and "1, 2, 4" in failure.fix
    trl = diagnose_text(
        "ValueError: The global train batch size (3 x 8) must be evenly divisible by the number of generations per "
        "prompt (16)."
    )
    assert trl.cause == "batch-divisible" and "= 24 is not a multiple of" in trl.message


def test_the_one_rank_that_did_not_time_out_is_the_one_that_stalled():
    # seven of eight ranks report the timeout of the same collective: rank 1 never reached it
    lines = [
        f"[rank{r}]:[E321 02:07:08.4{r}8 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, Timeout(ms)=600000) ran for "
        "600060 milliseconds before timing out."
        for r in (0, 2, 3, 4, 5, 6, 7)
    ]
    failure = diagnose_text("\n".join(lines))
    assert failure.rank == 1 and "The rank that stalled: rank 1" in failure.message
    assert "First to time out: rank 0 in ALLREDUCE" in failure.message


def test_an_hccl_link_that_could_not_be_made_names_both_ends_and_the_code():
    # vllm-ascend issue 3162's EI0009 and issue 2712's init error code (formats as posted there)
    link = diagnose_text(
        "[rank1]: EI0009: [PID: 2225827] 2025-09-24-20:59:48.119.066 Transport init error. Reason: [Create][DestLink]"
        "Create Dest error! createLink para:rank[1]-localUserrank[1]-localIpAddr[172.16.0.114], dst_rank[0]-"
        "remoteUserrank[0]-remote_ip_addr[172.16.0.115]"
    )
    assert link.cause == "comm-init" and link.rank == 0 and link.node == "172.16.0.115"
    assert "Rank 1 could not reach rank 0 on node 172.16.0.115" in link.message
    code = diagnose_text(
        "(VllmWorker rank=1 pid=7226) ERROR 09-03 03:02:37 [multiproc_executor.py:522] RuntimeError: create_config:"
        "build/CMakeFiles/torch_npu.dir/compiler_depend.ts:148 HCCL function error: hcclCommInitRootInfoConfig("
        "numRanks, &rootInfo, rank, config, &(comm->hcclComm_)), error code is 1"
    )
    assert code.cause == "comm-init" and code.rank == 1 and "HCCL_E_PARA" in code.message


# ray-project/ray issue 22349 (2022-02-15), as posted: node 10.128.0.103 was shut down; the survivor on 10.128.0.32
# (BackendExecutor) reports the dead actor, whose own block names its node. The node that died must be named.
NODE_DIED = """\
(BaseWorkerMixin pid=5137, ip=10.128.0.103) loss: 2.019226  [ 6400/30000]
(BaseWorkerMixin pid=5172, ip=10.128.0.32) loss: 1.813242  [ 6400/30000]
2022-02-15 16:53:52,096\tWARNING worker.py:1462 -- The node with node id: 8f205b12643d25d8c1ce57c45527a6c912f3479765096718ad2bf0d3 and ip: 10.128.0.103 has been marked dead because the detector has missed too many heartbeats from it. This can happen when a raylet crashes unexpectedly or has lagging heartbeats.
(BackendExecutor pid=5126, ip=10.128.0.32) 2022-02-15 16:53:52,097\tERROR utils.py:42 -- The actor died unexpectedly before finishing this task.
(BackendExecutor pid=5126, ip=10.128.0.32) \tclass_name: BaseWorkerMixin
(BackendExecutor pid=5126, ip=10.128.0.32) \tactor_id: ad32ee6f9964d162b63e02c601000000
(BackendExecutor pid=5126, ip=10.128.0.32) \tpid: 5137
(BackendExecutor pid=5126, ip=10.128.0.32) \tnamespace: eab8b056-4b60-4176-8070-5f404f6de75c
(BackendExecutor pid=5126, ip=10.128.0.32) \tip: 10.128.0.103
"""


@pytest.mark.parametrize("order", ["as posted", "the actor's report alone"])
def test_a_dead_node_is_named_never_the_survivor_that_reports_it(order):
    text = NODE_DIED if order == "as posted" else "\n".join(x for x in NODE_DIED.splitlines() if "marked dead" not in x)
    failure = diagnose_text(text)
    assert failure.cause == "worker-died" and failure.node == "10.128.0.103", failure
    assert "10.128.0.103" in failure.message and "10.128.0.32" not in failure.message


@pytest.mark.parametrize(
    "line, secret",
    [
        (
            "wandb.errors.errors.AuthenticationError: WANDB_API_KEY=8f6b2a9c0d1e4f5a6b7c8d9e0f1a2b3c4d5e6f7a is invalid",
            "8f6b2a9c0d1e",
        ),
        ("RuntimeError: push failed for https://alice:s3cretPassw0rd@hub.example.com/repo", "s3cretPassw0rd"),
        ('ValueError: bad request {"hf_token": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123"}', "hf_AbCdEfGh"),
        ("OSError: cannot read key -----BEGIN OPENSSH PRIVATE KEY-----b3BlbnNzaC1rZXktdjEAAAAA", "b3BlbnNzaC1rZXkt"),
        ("Error: login refused: --password correct-horse-battery", "correct-horse-battery"),
    ],
)
def test_a_secret_in_a_log_line_is_never_echoed(line, secret, monkeypatch, cli, capsys):
    # not in the caller's environment: found by the name it is given or by its own shape (grpolab.recipe.secrets)
    for name in [n for n in __import__("os").environ if "KEY" in n or "TOKEN" in n]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((line + "\n").encode())))
    assert cli(["diagnose", "-", "--json"]) == 1
    out = capsys.readouterr().out
    assert secret not in out and "***redacted***" in out
    failure = diagnose_text(line)
    assert all(secret not in text for text in [failure.message, failure.first_error, failure.fix, *failure.lines])


def test_numbers_named_like_a_secret_word_are_shown():
    # `max_num_batched_tokens` holds the word TOKEN: its value is a number, said as the engine gave it
    failure = diagnose_text("ValueError: max_num_batched_tokens (8192) is smaller than max_model_len (9216).")
    assert "8192" in failure.first_error and "9216" in failure.message


def _healthy(name: str) -> list[str]:
    path = CORPUS.parent / "healthy" / name
    return [line for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def test_no_prefilter_word_holds_a_real_healthy_line():
    # verl's step line (perf/max_memory_allocated_gb, response/aborted_ratio), vLLM's sleep/KV-cache/prefix-cache
    # lines, SGLang's batches, tqdm bars, as posted in public threads: none of them reaches the patterns, so a log of
    # healthy steps is read at disk speed (benchmarks/diagnose_speed.py)
    from grpolab.monitor.logread import WORDS, find_words

    for line in _healthy("console.txt"):
        assert not find_words(line.encode()), (sorted({WORDS[i] for i, _ in find_words(line.encode())}), line)
    assert diagnose_text("\n".join(_healthy("console.txt") + _healthy("startup.txt"))) is None


def test_a_failed_log_never_exits_0(cli, capsys, monkeypatch):
    # an error line, a traceback or a non-zero exit, and no mark of success: a failure, its first error said
    for text in (
        'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    main()\n',
        "INFO start\nERROR 06-09 17:58:55 [core.py:400] EngineCore failed to start.\n",
        "step:1 - actor/pg_loss:0.1\nProcess exited with code 3\n",
    ):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
        assert cli(["diagnose", "-", "--json"]) == 1, text
        failure = json.loads(capsys.readouterr().out)["failure"]
        assert failure["first_error"].strip(), text
    # the same error lines in a run that ended well (Ray's job status) are not its failure
    ended = "ERROR 06-09 17:58:55 [serving.py:1] request 12 aborted by the client\nJob 'raysubmit_x' succeeded\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(ended.encode())))
    assert cli(["diagnose", "-"]) == 0


@pytest.mark.parametrize("kind", ["gzip", "bz2", "lzma"])
def test_a_compressed_log_is_read(kind, tmp_path, cli, capsys):
    import importlib

    module = importlib.import_module(kind)
    log = tmp_path / "job.log.z"
    log.write_bytes(module.compress(_log("vllm-ascend-3413").encode()))
    assert cli(["diagnose", str(log), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["failure"]["cause"] == "comm-timeout"


def test_zstd_and_binary_input_are_not_logs(tmp_path, cli, capsys):
    zstd = tmp_path / "job.log.zst"
    zstd.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(range(256)) * 4)
    assert cli(["diagnose", str(zstd)]) == 2
    assert "zstd" in capsys.readouterr().err
    noise = tmp_path / "random.bin"
    noise.write_bytes(__import__("random").Random(46).randbytes(200_000))
    assert cli(["diagnose", str(noise)]) == 2  # not a device fault, nor any cause: not a log
    assert "not a text log" in capsys.readouterr().err


def test_the_first_error_names_the_raising_library_and_its_caller():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.11/site-packages/verl/workers/rollout/vllm_rollout/vllm_async_server.py", '
        "line 210, in launch_server\n"
        "    engine = AsyncLLM.from_vllm_config(vllm_config, disable_log_stats=True)\n"
        '  File "/opt/conda/lib/python3.11/site-packages/vllm/v1/engine/async_llm.py", line 180, in from_vllm_config\n'
        "    return cls(vllm_config=vllm_config, **kwargs)\n"
        "TypeError: AsyncLLM.__init__() got an unexpected keyword argument 'disable_log_stats'\n"
    )
    failure = diagnose_text(text)
    assert failure.cause == "import-error" and failure.family == "version-mismatch"
    assert failure.library == "vllm" and failure.frame.endswith("async_llm.py:180 in from_vllm_config")
    assert "vllm and verl" in failure.message and failure.first_error.startswith("TypeError: AsyncLLM.__init__()")


def test_an_engines_argument_check_names_the_recipe_field_and_its_values():
    # verl issue 259's line (vLLM's SchedulerConfig check): the arguments through the one field map
    failure = diagnose_text(_log("verl-259"))
    assert failure.cause == "engine-config" and failure.key == "rollout.max_num_batched_tokens"
    assert "max_num_batched_tokens = 8192" in failure.message and "max_model_len = 9216" in failure.message
    assert "rollout.max_model_len" in failure.message


def test_a_reward_that_raises_in_the_trainer_is_a_reward_error_with_the_dry_run():
    # the CPU trainer calls the recipe's reward.function through TRL (grpolab.local.task); a function that raises
    # on some rows shows its own file and line
    text = (
        "Traceback (most recent call last):\n"
        '  File "/work/.venv/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1121, in _calculate_rewards\n'
        "    output_reward_func = reward_func(prompts=prompts, completions=completions, **reward_kwargs)\n"
        '  File "/work/lib/grpolab/local/task.py", line 200, in __call__\n'
        "    self.function(data_source=source, solution_str=text, ground_truth=ans, extra_info=json.loads(info))\n"
        '  File "/home/me/project/rewards/my_reward.py", line 12, in compute_score\n'
        "    return float(solution_str.split()[3] == ground_truth)\n"
        "IndexError: list index out of range\n"
    )
    failure = diagnose_text(text)
    assert failure.cause == "reward-error" and failure.family == "reward-error"
    assert "compute_score" in failure.message and "my_reward.py:12" in failure.message
    assert "grpolab data" in failure.fix and "GRPO Lab" not in failure.fix and "registry" not in failure.fix


def test_a_reward_called_in_a_thread_with_a_signal_timeout():
    failure = diagnose_text(_log("math-verify-55"))
    assert failure.cause == "reward-error" and "parsing_timeout=None" in failure.fix


# ---------------------------------------------------------------------------------------------- batch 10's cut logs
def test_a_log_cut_before_its_error_line_still_says_what_it_shows(cli, monkeypatch, capsys):
    # cases the corpus marks BEYOND (their thread's cause is not in the log) still get an answer, never exit 0:
    # a creation task's traceback cut inside init_process_group names the dead worker's node
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_log("verl-3521").encode())))
    assert cli(["diagnose", "-", "--json"]) == 1
    failure = json.loads(capsys.readouterr().out)["failure"]
    assert failure["cause"] == "worker-died" and failure["node"] == "33.214.152.41"
    # a traceback cut at its last frame: the frame's `raise` line, not the bare `Traceback (most recent call last):`
    failure = diagnose_text(_log("verl-1785"))
    assert failure.first_error.strip() == "raise value.as_instanceof_cause()"
    # vLLM's record of a traceback cut before its error: the innermost call shown, not an outer frame's source line
    failure = diagnose_text(_log("verl-5889"))
    assert "init_worker_distributed_environment" in failure.first_error


def test_an_error_type_of_an_errors_module_is_an_error(cli, monkeypatch, capsys):
    # OmegaConf's MissingMandatoryValue (its type ends in no `Error`): a config key left unset, named, exit 1
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(_log("verl-2905").encode())))
    assert cli(["diagnose", "-", "--json"]) == 1
    failure = json.loads(capsys.readouterr().out)["failure"]
    assert failure["cause"] == "config-key" and failure["key"] == "actor_rollout_ref.rollout.name"
    assert "set actor_rollout_ref.rollout.name" in failure["fix"]


def test_a_relayed_error_is_classified_by_the_remote_frames_under_it():
    # Ray prints the task's own traceback under `RayTaskError(KeyError): ray::main_task()`: a reward's frames there
    failure = diagnose_text(_log("reasoning-gym-417"))
    assert failure.cause == "reward-error" and "_score_output" in failure.message


def test_free_memory_below_the_utilization_asked_is_a_setting_to_lower():
    for case in ("pytorch-175666", "vllm-ascend-14628"):
        failure = diagnose_text(_log(case))
        assert (failure.cause, failure.key) == ("engine-config", "rollout.gpu_memory_utilization"), case


def test_a_length_relation_refused_by_the_rollout_names_the_lengths_to_change():
    failure = diagnose_text(_log("verl-1873"))
    assert failure.cause == "engine-config" and "data.max_prompt_length + data.max_response_length" in failure.fix


def test_the_rank_and_node_of_torchelastic_summary_and_ray_events():
    failure = diagnose_text(_log("cppo-6"))  # `Root Cause (first observed failure):` host / rank lines
    assert (failure.cause, failure.rank) == ("killed", 0) and failure.node.startswith("mlxlab115rp2n7682d40d9")
    failure = diagnose_text(_log("ray-54035"))  # Ray's JSON event: {"custom_fields":{"ip":"156.176.0.154",...}}
    assert failure.node == "156.176.0.154"
