"""grpolab.monitor.classify_failure: causes classified from log text as verl, Ray, torch, HCCL and NCCL print it."""

from __future__ import annotations

import pytest

from grpolab.monitor import CAUSES, classify_failure

CUDA_OOM = """\
(TaskRunner pid=31207) Training Progress:   3%|▎         | 3/100 [02:11<1:10:43, 43.75s/it]
(WorkerDict pid=31962) [rank0]:   File "/usr/local/lib/python3.11/site-packages/verl/workers/actor/dp_actor.py", line 441, in update_policy
(WorkerDict pid=31962) [rank0]:     loss.backward()
(WorkerDict pid=31962) [rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.71 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.90 GiB memory in use. Of the allocated memory 71.32 GiB is allocated by PyTorch, and 5.10 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
(WorkerDict pid=31963) [rank1]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, NumelOut=68124672, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.
ray.exceptions.RayTaskError(OutOfMemoryError): ray::WorkerDict.actor_rollout_update_actor() (pid=31962, ip=10.0.0.5, actor_id=9f1c, repr=<verl.single_controller.ray.base.WorkerDict object at 0x7f2c>)
"""

NPU_OOM = """\
(NPURayWorkerWrapper pid=44419) [rank7]:[W609 06:57:47.819535026 compiler_depend.ts:877] Warning: The HCCL execution timeout was set to never timeout, so it is bigger than watchdog timeout 1800000ms which is set by init_process_group! The plog may not be recorded. You can disable watchdog by 'export HCCL_ASYNC_ERROR_HANDLING=0'. (function ProcessGroupHCCL) [repeated 26x across cluster]
(NPURayWorkerWrapper pid=45464) ERROR 06-09 06:57:48 worker_base.py:581]   File "/usr/local/python3.10.17/lib/python3.10/site-packages/torch/utils/_device.py", line 106, in __torch_function__ [repeated 6x across cluster]
(NPURayWorkerWrapper pid=45464) ERROR 06-09 06:57:48 worker_base.py:581] RuntimeError: NPU out of memory. Tried to allocate 30.00 MiB (NPU 3; 60.96 GiB total capacity; 60.34 GiB already allocated; 60.34 GiB current active; 14.24 MiB free; 60.60 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation. [repeated 6x across cluster]
[ERROR] 2025-06-09-06:57:54 (PID:92380, Device:0, RankID:-1) ERR99999 UNKNOWN applicaiton exception
"""

ACL_ALLOC = """\
(WorkerDict pid=5120) RuntimeError: InnerRun:torch_npu/csrc/framework/OpParamMaker.cpp:208 NPU function error: c10_npu::acl::AclrtMallocAlign32(&ptr, size, ACL_MEM_MALLOC_HUGE_FIRST), error code is 207001
(WorkerDict pid=5120) [ERROR] 2026-05-11-10:02:41 (PID:5120, Device:3, RankID:3) ERR00100 PTA call acl api failed
(WorkerDict pid=5120) EL0004: [PID: 5120] 2026-05-11-10:02:41.512.330 Failed to allocate memory.
"""

VLLM_KV = """\
(WorkerDict pid=6001) ERROR 09-09 11:20:31 [core.py:700] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
"""

HCCL_EI0006 = """\
[rank1]:   File "/data/miniconda3/envs/env-3.10.14/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", line 2501, in all_reduce
[rank1]:     work = group.allreduce([tensor], opts)
[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: HcclAllreduce, error code is 6
[rank1]: [ERROR] 2025-04-08-18:07:20 (PID:1292363, Device:1, RankID:1) ERR01100 OPS call acl api failed.
[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not send the data in time. Please check the reason for the rank being stuck
[rank1]:         Solution: 1. Check the rank service processes with other errors or no errors in the cluster.
"""

HCCL_EI0002 = """\
[ERROR] 2025-10-11-15:09:34 (PID:2969, Device:0, RankID:101) ERR00100 PTA call acl api failed.
EI0002: [PID: 2969] 2025-10-11-15:09:34.713.335 The wait execution of the Notify register times out. Reason: The Notify register has not received the Notify record from remote rank: [24]. base information: [streamID:[109], taskID[38], taskType[Notify Wait], tag[AllReduce_group_name_1654NHRAllReduceComm_device], AlgType(level 0-1-2):[ring-NHR-NHR].]
        Possible Cause: 1. An exception occurs during the execution on some NPUs in the cluster. As a result, collective communication operation failed.2. The execution speed on some NPU in the cluster is too slow to complete a communication operation within the timeout interval. (default 1800s, You can set the interval by using HCCL_EXEC_TIMEOUT.)
"""

NCCL_WATCHDOG = """\
(WorkerDict pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=158046, OpType=GATHER, NumelIn=2867200, NumelOut=0, Timeout(ms)=600000) ran for 600027 milliseconds before timing out.
(WorkerDict pid=4009) [rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 1 Rank 1] Timeout at NCCL work: 158046, last enqueued NCCL work: 158046, last completed NCCL work: 158045.
(WorkerDict pid=4010) [rank2]:[E ProcessGroupNCCL.cpp:563] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=158046, OpType=GATHER, NumelIn=2867200, NumelOut=0, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.
"""

NCCL_STORE = """\
torch.distributed.DistBackendError: [4] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout
"""

MODULE_MISSING = """\
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "<frozen runpy>", line 88, in _run_code
  File "/usr/local/lib/python3.11/site-packages/verl/trainer/main_ppo.py", line 24, in <module>
    from verl.workers.rollout.vllm_rollout import vLLMRollout
ModuleNotFoundError: No module named 'vllm'
"""

VERSION_CONFLICT = """\
(TaskRunner pid=9911) ray.exceptions.RayTaskError(ImportError): ray::TaskRunner.run() (pid=9911, ip=10.0.0.2, actor_id=ec8f76f7, repr=<main_ppo.TaskRunner object at 0x7f5fe7f51f00>)
(TaskRunner pid=9911) ImportError: cannot import name 'AutoModelForVision2Seq' from 'transformers' (/usr/local/lib/python3.11/site-packages/transformers/__init__.py)
ERROR: pip's dependency resolver does not currently take into account all the packages that are installed.
verl 0.9.1 requires transformers<5.11,>=5.5.3, but you have transformers 4.57.1 which is incompatible.
"""

NAN_MEGATRON = """\
(WorkerDict pid=1201) [rank11]: AssertionError: Rank 11: found NaN in local grad norm in backward pass before data-parallel communication collective. Device: 3, node: node-3
"""

NAN_CONSOLE = """\
(TaskRunner pid=2817) step:36 - actor/pg_loss:np.float64(0.0121) - actor/grad_norm:np.float64(0.41) - critic/score/mean:np.float64(0.34)
(TaskRunner pid=2817) step:37 - actor/pg_loss:np.float64(nan) - actor/grad_norm:np.float64(nan) - critic/score/mean:np.float64(0.0)
(TaskRunner pid=2817) WARN: rank 0 grad_norm is not finite: nan
"""

NO_CUDA = """\
(WorkerDict pid=808) RuntimeError: No CUDA GPUs are available
"""

NO_TORCH_NPU = """\
Traceback (most recent call last):
  File "/opt/verl/verl/utils/device.py", line 20, in <module>
    import torch_npu  # noqa: F401
ModuleNotFoundError: No module named 'torch_npu'
"""

RAY_RESOURCES = """\
(autoscaler +12s) Warning: The following resource request cannot be scheduled right now: {'NPU': 1.0, 'CPU': 1.0}. This is likely due to all cluster resources being claimed by actors. Consider creating fewer actors or adding more nodes to this Ray cluster.
"""

VERL_TOO_FEW = """\
ray.exceptions.RayTaskError(ValueError): ray::TaskRunner.run() (pid=8051, ip=33.212.68.130, actor_id=ec8f76f75a5f17928c4bd33a02000000)
ValueError: Total available GPUs 8.0 is less than total desired GPUs 16
"""

RAY_HOST_OOM = """\
(raylet) [2026-03-12 09:57:19,206 E 393463 393463] (raylet) node_manager.cc:3277: 2 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 8289f87b78d161ae21bf723c7c57838345a56248dd48a2c3f0d5ac73, IP: 172.24.0.226) over the last time period.
(raylet) Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more memory on this node or reducing task parallelism by requesting more CPUs per task.
ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.
Memory on the node (IP: 172.24.0.226, ID: 8289f87b) where the task (actor ID: f9cc340f, name=WorkerDict.__init__, pid=4331, memory used=52.22GB) was running was 59.49GB / 62.58GB (0.950744), which exceeds the memory usage threshold of 0.95.
"""

SIGKILL = """\
(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffffffffffffffff Worker ID: 0f76 Node ID: 8c5a Worker IP address: 10.0.0.3 Worker port: 10003 Worker PID: 777 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called.
"""

DISK_FULL = """\
(TaskRunner pid=9120) Saving actor checkpoint to /ckpt/global_step_200/actor
(WorkerDict pid=9342) RuntimeError: [enforce fail at inline_container.cc:626] . unexpected pos 1664 vs 1560
(WorkerDict pid=9342) RuntimeError: [enforce fail at inline_container.cc:783] . PytorchStreamWriter failed writing file data/12: file write failed
OSError: [Errno 28] No space left on device: '/ckpt/global_step_200/actor/model_world_size_8_rank_3.pt'
"""

WANDB_NO_KEY = """\
(TaskRunner pid=2211) wandb: ERROR api_key not configured (no-tty). call wandb.login(key=[your_api_key])
(TaskRunner pid=2211) wandb.errors.errors.UsageError: api_key not configured (no-tty). call wandb.login(key=[your_api_key])
"""

WANDB_BAD_KEY = """\
(TaskRunner pid=2211) wandb: ERROR Error while calling W&B API: user is not logged in (<Response [401]>)
(TaskRunner pid=2211) wandb.errors.errors.AuthenticationError: The API key you provided is either invalid or missing.
"""

SHELL_KILLED = """\
+ python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo
Killed
Job entrypoint command failed with exit code 137, last available logs (truncated to 20,000 chars):
"""


@pytest.mark.parametrize(
    "text, cause, proof",
    [
        (CUDA_OOM, "device-oom", "CUDA out of memory"),
        (NPU_OOM, "device-oom", "NPU out of memory"),
        (ACL_ALLOC, "device-oom", "207001"),
        (VLLM_KV, "device-oom", "No available memory for the cache blocks"),
        (HCCL_EI0006, "comm-timeout", "EI0006"),
        (HCCL_EI0002, "comm-timeout", "EI0002"),
        (NCCL_WATCHDOG, "comm-timeout", "Watchdog caught collective operation timeout"),
        (NCCL_STORE, "comm-init", "Socket Timeout"),  # at set-up: the communicator never formed
        (MODULE_MISSING, "import-error", "No module named 'vllm'"),
        (VERSION_CONFLICT, "import-error", "ImportError"),
        (NAN_MEGATRON, "nan-loss", "found NaN in local grad norm"),
        (NAN_CONSOLE, "nan-loss", "step:37"),
        (NO_CUDA, "no-device", "No CUDA GPUs are available"),
        (NO_TORCH_NPU, "no-device", "torch_npu"),
        (RAY_RESOURCES, "no-device", "cannot be scheduled right now"),
        (VERL_TOO_FEW, "no-device", "Total available GPUs 8.0 is less than total desired GPUs 16"),
        (RAY_HOST_OOM, "host-oom", "running low on memory"),
        (SIGKILL, "worker-died", "Worker IP address: 10.0.0.3"),  # Ray lists SIGKILL as a guess, not a cause
        (SHELL_KILLED, "killed", "Killed"),
        (DISK_FULL, "disk-full", "No space left on device"),
        (WANDB_NO_KEY, "wandb-auth", "api_key not configured"),
        (WANDB_BAD_KEY, "wandb-auth", "AuthenticationError"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None,
)
def test_cause_and_proof(text, cause, proof):
    failure = classify_failure(text)
    assert failure is not None and failure.cause == cause, failure
    assert any(proof in line for line in failure.lines), failure.lines
    assert failure.message and failure.fix
    lines = text.splitlines()
    for number, line in zip(failure.line_numbers, failure.lines):
        # the line numbers point at the evidence (a very long line is cut around the match, marked "...")
        assert line.strip(".") in lines[number - 1]
        assert len(line) <= 406
    assert all("\x1b" not in line for line in failure.lines)


def test_origin_wins_over_its_consequences():
    # An out-of-memory rank makes the others time out, then Ray reports dead workers: the origin is OOM.
    text = SIGKILL + NCCL_WATCHDOG + CUDA_OOM
    assert classify_failure(text).cause == "device-oom"
    # a missing module kills the actor; Ray's "actor died" line is the consequence
    assert classify_failure(MODULE_MISSING + SIGKILL).cause == "import-error"


def test_evidence_is_short_and_deduplicated_across_ranks():
    ranks = "".join(
        f"(WorkerDict pid={1000 + r}) [rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective "
        f"operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 6000{r}3 milliseconds "
        "before timing out.\n"
        for r in range(64)
    )
    failure = classify_failure(ranks)
    assert failure.cause == "comm-timeout" and len(failure.lines) == 1


def test_ansi_colours_are_removed():
    failure = classify_failure("\x1b[36m(WorkerDict pid=1)\x1b[0m RuntimeError: No CUDA GPUs are available\n")
    assert failure.cause == "no-device" and failure.lines == [
        "(WorkerDict pid=1) RuntimeError: No CUDA GPUs are available"
    ]


def test_unknown_error_says_its_first_error_and_shows_the_chain():
    text = (
        'INFO starting\nTraceback (most recent call last):\n  File "x.py", line 1, in <module>\n'
        "KeyError: 'colour'\nDuring handling...\nValueError: no palette for this plot\n"
    )
    failure = classify_failure(text)
    assert failure.cause == "unknown" and failure.first_error == "KeyError: 'colour'"
    assert "The first error: KeyError: 'colour'" in failure.message
    assert failure.lines[-1] == "ValueError: no palette for this plot"
    # the same chain over a data set's column is the data's failure (a row without the column the code reads)
    data = classify_failure(text.replace("'colour'", "'prompt'"))
    assert data.cause == "data-error" and "grpolab data" in data.fix


def test_no_failure_in_a_healthy_log():
    text = (
        "(TaskRunner pid=1) step:1 - critic/score/mean:np.float64(0.2) - actor/pg_loss:np.float64(0.01)\n"
        "(WorkerDict pid=2) [W compiler_depend.ts:877] Warning: The HCCL execution timeout was set to never "
        "timeout, so it is bigger than watchdog timeout 1800000ms\n"
        "INFO: Ray job raysubmit_abc succeeded\n"
    )
    assert classify_failure(text) is None
    assert classify_failure("") is None


def test_cause_ids_are_the_corpus_vocabulary():
    # tests/data/failures/README.md is the vocabulary the corpus is written in: every id there is a cause here
    import re
    from pathlib import Path

    readme = (Path(__file__).parent / "data" / "failures" / "README.md").read_text()
    ids = re.findall(r"^\| `([a-z\-]+)` \|", readme, re.MULTILINE)
    assert set(ids) == {c.id for c in CAUSES} | {"unknown", "none"}
    assert len({c.id for c in CAUSES}) == len(CAUSES)


def test_docs_causes_md_cites_every_causes_reports():
    """Every cause stands in docs/causes.md with its reports (tests/test_project.py checks the file is current)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "causes.md").read_text()
    for cause in CAUSES:
        assert f"| `{cause.id}` |" in text and cause.sources and all(s in text for s in cause.sources)


def test_every_cause_the_corpus_holds_cites_one_of_its_reports():
    from pathlib import Path

    import yaml

    cited = {c.id: set(c.sources) for c in CAUSES}
    for path in sorted((Path(__file__).parent / "data" / "failures").glob("*.yaml")):
        case = yaml.safe_load(path.read_text())
        cause = case["expect"]["cause"]
        if cause in cited:
            cited[cause].discard(f"{case['source']['repo']} {case['source']['thread']}")
    reported = {c.id for c in CAUSES if not c.sources[0].startswith("grpolab's seeded")}
    untouched = {c.id for c in CAUSES if cited[c.id] == set(c.sources)} & reported
    assert not untouched, f"causes citing none of their corpus cases: {untouched}"


def test_every_pattern_line_holds_one_of_its_causes_prefilter_words():
    # the prefilter drops lines without a cause's words before its patterns run: a corpus line that matches a
    # pattern must hold one of that cause's words, or the streamed diagnosis would miss it
    from pathlib import Path

    import yaml

    for path in sorted((Path(__file__).parent / "data" / "failures").glob("*.yaml")):
        for line in yaml.safe_load(path.read_text())["log"].splitlines():
            for cause in CAUSES:
                if cause.compiled().search(line):
                    assert any(w in line.lower() for w in cause.words), (path.name, cause.id, line)
