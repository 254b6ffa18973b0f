"""The causes that stop a job while it runs: ports, communicators, device and host memory, disks, NaN, device
faults and collective timeouts. Part of the cause registry (grpolab.monitor.causes), in the order of origin; the
causes that follow from these (start-up timeouts, kills, dead workers) are grpolab.monitor.causes_end."""

from __future__ import annotations

from grpolab.monitor.cause import Cause
from grpolab.monitor.signs import DIST_BACKEND, GLOG_WARNING, KERNEL_ASSERT

CAUSES: tuple[Cause, ...] = (
    Cause(
        "weight-sync",
        "the weights could not be sent from the trainer to the rollout engine: a shard sent without its gather, "
        "tensors on a device the engine does not expect, a layout the engine transformed after its first load, "
        "or the sync's own state",
        "check that the trainer and the rollout use layouts the weight sync supports (expert/tensor-parallel shards "
        "gathered before they are sent), and run the trainer and engine versions the sync was written for; "
        "rollout.update_weights_bucket_mb must hold the largest tensor (`grpolab check`, rule weight-sync-bucket)",
        (
            r"Failed to update (?:parameter|weights?) online",
            r"weight update is already active",
        ),
        # (not "update_weights": SGLang logs every weight update's request at INFO)
        ("update parameter online", "update weights online", "update weight online", "weight update is already"),
        ("THUDM/slime issue 2280", "sgl-project/sglang issue 26032", "NovaSky-AI/SkyRL issue 1605"),
        ignorecase=True,
    ),
    Cause(
        "port-in-use",
        "a port was already bound: another process (often a previous run's leftover worker) holds it",
        "stop the leftover process (`ss -ltnp | grep PORT`), or let the job pick free ports (unset MASTER_PORT, "
        "a different ray port, HCCL_IF_BASE_PORT on Ascend); `grpolab preflight` checks the HCCL ports",
        (
            r"Address already in use",
            r"\bEADDRINUSE\b",
            r"\[Errno 98\]",
            r"failed to (?:listen|bind) on any local network address",
            r"(?:port|socket)[^\n]{0,60}(?:is )?(?:already (?:in use|bound|used|occupied)|occupied)",
            r"\bEJ0003\b|Failed to bind the IP port|(?:been|is) bound already|(?:has|have) already been bound",
            r"bind(?:ing)? (?:to )?(?:port|address)[^\n]{0,60}failed|bind failed|failed to bind",
            r"listen on ip\[[^\]\n]*\][^\n]{0,40}port\[\d+\] fail|port[^\n]{0,40}(?:is )?been using by other process",
            # SGLang's own check of its ports (gpustack issue 5842): "metrics_port at 40290 is not available in 30 s"
            r"\w{0,40}port\b[^\n]{0,40}(?:is not available in|is used by (?:a|another) process|used by a process already)",
            # Ray's raylet out of worker ports (its range all taken: `No available ports. Please specify a wider port
            # range using --min-worker-port`): the ports, not the raylet's reach
            r"No available ports\b",
            # SGLang's router asking a server for its model that never answered: slime's FAQ names port conflicts
            # between several SGLang servers on one machine as its usual cause
            r"Max retries exceeded with url: /get_model_info\b",
        ),
        (
            "already in use",
            "eaddrinuse",
            "errno 98",
            "local network address",
            "already bound",
            "already used",
            "occupied",
            "ej0003",
            "bind",
            "listen on ip",
            "bound already",
            "already been bound",
            "other process",
            "used by a process",
            "is not available in",
            "no available ports",
            "get_model_info",
        ),
        (
            "volcengine/verl issue 6677",
            "NVIDIA-NeMo/RL issue 951",
            "vllm-project/vllm-ascend issue 1955",
            "vllm-project/vllm-ascend issue 405",
            "om-ai-lab/VLM-R1 issue 289",
            "gpustack/gpustack issue 5842",
            "THUDM/slime docs, FAQ (get_model_info)",
        ),
        ignorecase=True,
    ),
    Cause(
        "comm-init",
        "the communicator (HCCL/NCCL) could not be set up: a rank could not join (rank table, device id, "
        "network interface, CANN or driver version)",
        "check every node runs the same CANN / driver / NCCL, that HCCL_SOCKET_IFNAME / NCCL_SOCKET_IFNAME name "
        "an interface all nodes reach, that the rank table and device ids match the visible devices, and raise "
        "HCCL_CONNECT_TIMEOUT for large clusters; `grpolab preflight` checks the HCCL ports",
        (
            r"Hccl\w{0,40}(?:CommInit|GetRootInfo|InitCluster|RootInfo)\w{0,40}[^\n]{0,160}(?:error code|failed|error)",
            r"HCCL function error: Hccl\w{0,40}(?:CommInit|GetRootInfo|InitCluster|RootInfo)",  # torch_npu's create
            # a C++ check of HCCL's result, its call said in words (xLLM's `HCCL get root info failed.`)
            r"\bHCCL (?:get root info|comm init\w{0,20}|init\w{0,20}) failed",
            # torch.distributed's backend error as an exception line, relayed or not (a watchdog's: the timeout's; not
            # C++'s `terminate called after throwing an instance of 'c10::DistBackendError'`, whose `what()` says why)
            DIST_BACKEND.pattern + r"(?:\)|: )",
            r"\b(?:rdma|nic|rdev|hccp)\w{0,40}[^\n]{0,40}init\w{0,40}[^\n]{0,20}fail|\binit\w{0,40}[^\n]{0,20}(?:rdma|nic)\w{0,40} fail"
            r"|network port is down",
            r"(?:client|server) socket has timed out[^\n]{0,120}connect|\[c10d\][^\n]{0,120}(?:timed out|failed to"
            r" connect|refused)",
            r"\bEI000[13459]\b|\bEI9999\b|\bEJ000[12]\b|Transport init error",
            r"(?:rank ?table|ranktable)[^\n]{0,80}(?:invalid|error|failed|not found|mismatch)",
            r"ncclCommInit\w{0,40}[^\n]{0,40}failed",
            r"\bnccl(?:SystemError|InternalError|UnhandledCudaError|InvalidUsage|InvalidArgument|RemoteError)\b",
            r"NCCL error in: [^\n]+|NCCL error ?: [^\n]+",
            r"DistStoreError|waiting for clients\. \d+/\d+ clients joined|connectFullMesh failed",
            r"is setting up [NH]CCL communicator[^\n]+(?:error|Timeout)",
            r"(?:init_process_group|rendezvous|TCPStore)[^\n]{0,120}(?:failed|error|timed out|refused)",
            r"Connection refused[^\n]{0,80}(?:store|rendezvous|master)",
            r"\bHCCL\b[^\n]{0,80}\binit\w{0,40}[^\n]{0,40}(?:fail|error)",
            r"DistNetworkError: [^\n]+",
            # torch.distributed's own set-up refused: the launcher's variables unset (a trainer started without
            # torchrun: `environment variable RANK expected, but not set`), or a backend this torch was not built with
            r"Error initializing torch\.distributed using \S+ rendezvous|"
            r"environment variable \w+ expected, but not set",
            r"Distributed package doesn't have \w+ built in",
            # the Ascend tool that reads the devices' IPs for a rank table, not there (`hccn_tool: not found`)
            r"\bhccn_tool: (?:command )?not found",
            r"\bUCX\s+ERROR\b[^\n]{0,80}\bconnect\([^\n]{0,120}failed",  # UCX (NCCL's, MPI's transport) not reaching a peer
            r"DIST call hccl api failed",
            # NCCL's error level on a connection it could not make while it set up (its bootstrap, a peer's socket)
            r"NCCL WARN [^\n]{0,80}(?:[Cc]onnect|bootstrap|[Ss]ocket)[^\n]{0,200}(?:No route to host|Connection refused|"
            r"Network is unreachable|failed|timed out|Connection reset)",
            # the communication library itself does not load (a path, an ABI): no communicator can be made
            r"Failed to load (?:the )?(?:NCCL|HCCL|RCCL)\w{0,10} library",
            # Open MPI's banner when its own set-up failed (`*** An error occurred in MPI_Init_thread`)
            r"An error occurred in MPI_Init\w{0,10}",
            # HCCL's exchange of the cluster's topology at set-up (its server or agents not reached in time)
            r"TopoDetect ERROR|topo ?exchange \w{1,20} [^\n]{0,80}(?:timeout|fail|error)",
            # NCCL's trace of a call that failed (`NCCL INFO bootstrap.cc:270 -> 2`: its return code) at set-up, and a
            # CUDA call inside NCCL that failed (not memory: that is the device's)
            r"NCCL INFO (?:bootstrap|init|misc/socket|socket|transport/net\w{0,10})\.cc:\d+ -> [1-9]",
            r"NCCL WARN Cuda failure (?:\d+ )?'(?!out of memory|named symbol not found)",
            # NCCL's network plugin without the interface it was told to use (`NCCL WARN Could not find NET with id 0`)
            r"NCCL WARN Could not find NET with id\b",
            # the KV-cache transfer engine between prefill and decode servers could not start (`RuntimeError: Ascend
            # Transfer Engine initialization failed.`: the store it registers with, its address)
            r"\bTransfer Engine initiali[sz]ation failed|\bMooncake memory registration failed",
            # two ranks given one device (NCCL: `Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000`)
            r"\brank \d+ and rank \d+ both on (?:CUDA|NPU) device\b",
            # gloo's transport refusing a connection of the group it sets up (`[gloo/transport/uv/libuv.h:596]
            # uv_accept: invalid argument`; a pair that closed or a message that did not fit is a collective's)
            r"\bgloo/transport/[\w/.]{1,80}:\d+\] (?:uv_)?(?:accept|listen|bind|connect)\w{0,20}: ",
        ),
        (
            "mpi_init",
            "both on cuda device",
            "both on npu device",
            "gloo/transport",
            "topodetect",
            "topo exchange",
            "topoexchange",
            "hccl",
            "nccl",
            "ei000",
            "ei9999",
            "ej000",
            "ranktable",
            "rank table",
            "distbackenderror",
            "ucx",
            "init_process_group",
            "rendezvous",
            "expected, but not set",
            "built in",
            "hccn_tool",
            "tcpstore",
            "connection refused",
            "distnetworkerror",
            "dist call hccl",
            "transport init",
            "rdma",
            "rdev",
            "hccp",
            "nic",
            "network port",
            "socket has timed out",
            "c10d",
            "failed to load",
            "diststoreerror",
            "clients joined",
            "connectfullmesh",
            "transfer engine",
            "mooncake memory registration",
        ),
        (
            "EvolvingLMMs-Lab/open-r1-multimodal issue 7",
            "OpenRLHF/OpenRLHF issue 265",
            "volcengine/verl issue 3947",
            "vllm-project/vllm-ascend issue 1815",
            "vllm-project/vllm-ascend issue 672",
        ),
        # a warning; NCCL's error that is a timeout (comm-timeout); the server socket's failure (a port, port-in-use)
        unless=(
            # (NCCL's WARN is its error level, and `run with NCCL_DEBUG=WARN for details` its advice under an error)
            r"(?<!NCCL )(?<!NCCL_DEBUG=)\bwarn(?:ing)?\b",
            r"NCCL WARN[^\n]*\bretry",
            r"NCCL error ?: [^\n]*(?:timed out|timeout)",
            r"DistNetworkError: The server socket has failed",
        ),
        # torch_npu's wrapper line for any HCCL call that failed: set-up is the likely one, when nothing else says
        weak=(r"DIST call hccl api failed",),
        ignorecase=True,
    ),
    Cause(
        "device-oom",
        "the accelerator ran out of memory (device/HBM memory, not host RAM)",
        "lower rollout.gpu_memory_utilization (e.g. 0.4) or the batch (algorithm.micro_batch_size_per_device, "
        "data.max_response_length), turn on param/optimizer offload or recompute, or raise train.tp / train.pp "
        "so each device holds less; `grpolab check` estimates memory before launch",
        (
            r"\b(?:CUDA|NPU|XPU) out of memory",
            r"torch\.(?:cuda\.|npu\.)?OutOfMemoryError",
            r"ACL_ERROR_RT_MEMORY_ALLOCATION|error code is 207001\b",
            r"\bEL0004\b",
            r"\bHBM\b.{0,60}(?:out of memory|insufficient|not enough|alloc(?:ate|ation)? fail)",
            r"No available memory for the cache blocks",
            r"larger than the available KV cache memory",
            r"\binsufficient (?:GPU|NPU|device) memory\b",  # (TensorRT-LLM's `Executor creation failed due to ...`)
            r"CUBLAS_STATUS_ALLOC_FAILED",
            r"CUDA error: out of memory",
            r"RuntimeError: .{0,80}\bout of memory\b",
            r"KV cache[^\n]{0,80}(?:insufficient|not enough|exceeds)",
            r"larger than the maximum number of tokens that can be stored in KV cache",
            # the allocators of vLLM's and SGLang's sleep mode (their own words for a device out of memory)
            # (CUDA's driver result 2 is CUDA_ERROR_OUT_OF_MEMORY: `CUresult error result=2 ... func=cu_mem_create`)
            r"CUresult error(?::|\s+result=) ?2\b|error: out of memory at [^\n]{0,80}cumem_allocator",
            # SGLang's pool that the memory left cannot hold (`Not enough memory. Please try to increase
            # --mem-fraction-static.`)
            r"Not enough memory\.? Please try to increase --mem-fraction-static",
            # the Ascend driver's device memory manager (`[devmm] ... heap_alloc_managed out of memory`, `halMemAlloc
            # failed: device_id=7, size=...`)
            r"\bheap_alloc_\w{0,20} out of memory|\bhalMemAlloc failed",
            # an engine's warm-up that found too little memory for its batch (text-generation-inference: `Not enough
            # memory to handle 4096 prefill tokens`), and vLLM's KV cache left below zero by the weights
            # (`Available KV cache memory: -0.87 GiB`)
            r"Not enough memory to handle \d+ prefill tokens",
            r"Available KV cache memory: -\d",
        ),
        (
            "out of memory",
            "halmemalloc failed",
            "outofmemoryerror",
            "acl_error_rt_memory",
            "207001",
            "el0004",
            "hbm",
            "no available memory",
            "available kv cache",
            "stored in kv cache",
            "insufficient",
            "not enough",
            "cublas_status_alloc",
            "curesult error",
        ),
        ("RLinf/RLinf issue 272", "THUDM/slime issue 1951", "volcengine/verl issue 2828"),
        rule="memory",
        unless=(r"host memory", r"node running low on memory", r"memory usage threshold"),
        ignorecase=True,
    ),
    Cause(
        "host-oom",
        "the host's RAM ran out: Ray's memory monitor or the kernel's OOM killer killed a worker",
        "give the job more host RAM or fewer processes per node: lower data loader workers, offload less to CPU "
        "(train.param_offload / optimizer_offload), cap Ray's object store; RAY_memory_usage_threshold only "
        "moves the line",
        (
            r"Task was killed due to the node running low on memory",
            r"killed due to memory pressure",
            r"which exceeds the memory usage threshold",
            r"ray\.exceptions\.OutOfMemoryError",
            r"NODE_OUT_OF_MEMORY",
            r"Out of memory: Kill(?:ed)? process|\boom-kill(?:er)?\b|oom_reaper|invoked oom-killer",
            r"(?:ActorDiedError|actor died|worker died)[^\n]{0,200}memory",
            r"\bMemoryError\b|std::bad_alloc|Cannot allocate memory|\[Errno 12\]",
            r"\bOOMKilled\b",  # Kubernetes' record of a container its memory limit killed (`Reason: OOMKilled`)
            # Ray's advice printed only after its memory monitor killed a worker (also when the kill line is cut off)
            r"how to address the out of memory issue: \S*ray-oom-prevention|To adjust the kill threshold, set the "
            r"environment variable .?RAY_memory_usage_threshold",
        ),
        (  # words that name the host's memory (not "memory" alone: verl's step line and vLLM's INFO lines hold it)
            "low on memory",
            "memory pressure",
            "memory usage threshold",
            "outofmemoryerror",
            "out_of_memory",
            "out of memory",
            "oom-kill",
            "oom_reaper",
            "actordiederror",
            "actor died",
            "worker died",
            "memoryerror",
            "bad_alloc",
            "cannot allocate memory",
            "errno 12",
            "ray-oom-prevention",
            "kill threshold",
            "oomkilled",
        ),
        (
            "ray-project/ray issue 28778",
            "ray-project/ray issue 32730",
            "ray-project/kuberay issue 4287",
            "volcengine/verl issue 2950",
            "vllm-project/vllm issue 1160",
        ),
        ignorecase=True,
    ),
    Cause(
        "disk-full",
        "a disk filled up: a checkpoint, a log or the Ray object store could not be written",
        "free space (old checkpoints under trainer.ckpt_dir, /tmp/ray sessions) or point trainer.ckpt_dir at a "
        "bigger volume; `grpolab check` sizes the checkpoints against the free disk (rule checkpoint-space)",
        (
            r"No space left on device",
            r"\[Errno 28\]",
            r"PytorchStreamWriter failed writing file",
            r"ENOSPC",
            r"Disk quota exceeded|\[Errno 122\]",
            r"local disk(?: usage)? is (?:over|above) .{0,40}(?:capacity|threshold)|Object store is full",
            r"is over \d+% full|Object creation will fail if spilling",
        ),
        (
            "space",
            "errno 28",
            "pytorchstreamwriter",
            "enospc",
            "quota",
            "errno 122",
            "disk",
            "object store",
            "full",
            "spilling",
        ),
        ("PRIME-RL/TTRL issue 10",),
        rule="checkpoint-space",
        # the raylet warns at 95 % full while the job goes on; a failure that follows is its own cause
        weak=(r"is over \d+% full", r"Object creation will fail if spilling"),
    ),
    Cause(
        "nan-loss",
        "the loss or the gradients became NaN/inf",
        "lower the lr, check the reward function for NaN/inf, keep gradient clipping on, use bf16 rather than "
        "fp16, and resume from a checkpoint before the first NaN step (`grpolab monitor` shows the step)",
        (
            r"found NaN in local grad norm",
            r"grad_norm is not finite",
            r"\bloss (?:is|=|:) ?(?:nan|inf)\b",
            r"\bstep \d+: loss (?:nan|inf),",  # litgpt's step line (`iter 16 step 1: loss nan, train time: ...`)
            r"returned nan values in its \d+\w{0,40} output",
            r"is non-finite, so it cannot be clipped",
            r"Unexpected result nan",
            # verl's step line: any role's loss, KL, gradient norm or entropy (`actor/pg_loss:nan`,
            # `critic/vf_loss:nan`)
            r"\b[a-z_]+/\w{0,20}(?:loss|kl|grad_norm|entropy)\w{0,20}:(?:np\.float\d+\()?-?(?:nan|inf)\b",
            # a trainer's log dict (`{'loss': 0.1, 'grad_norm': nan}`, as JSON `"kl": NaN`) and its table in a
            # notebook (`3 | -0.11 | nan`)
            r"['\"][\w/]{0,40}(?:loss|kl|grad_norm|entropy)\w{0,20}['\"]: (?:np\.float\d+\()?-?(?:nan|inf)\b",
            r"^{P}\|?[ \t]*\d+[ \t]*\|(?:[^|\n]{0,40}\|){0,30}?[ \t]*-?(?:nan|inf)[ \t]*(?:\||$)",
            # a step line of fields between bars (DeepSpeed-Chat's `epoch: 0|step: 3198|act_loss: inf|cri_loss: inf`)
            r"(?:^|\|)[ \t]*\w{0,20}(?:loss|kl|grad_norm)\w{0,20}: ?-?(?:nan|inf)[ \t]*(?:\||$)",
            # a check of the model's outputs (NeMo RL's `2047/2048 logprobs are NaN on iteration 2`)
            r"\b(?:logprobs?|log_probs?|logits|advantages?) (?:are|is|contains?|became|has) (?:all )?(?:nan|inf)s?\b",
        ),
        (
            "nan",
            "finite",
            "loss is inf",
            "loss = inf",
            "loss: inf",
            "loss=inf",
            "loss:inf",
            "(inf",
            "(-inf",
            ":-inf",
            ":inf",
        ),
        ("huggingface/trl issue 2564", "volcengine/verl issue 870", "NVIDIA-NeMo/RL docs, prefix caching and NaN"),
        ignorecase=True,
    ),
    Cause(
        "device-fault",
        "the device itself failed: an Ascend AI Core / vector core / MTE error, a CUDA illegal memory access or "
        "device-side assert, an Xid or ECC error",
        "find the rank and device named above; rerun with ASCEND_LAUNCH_BLOCKING=1 / CUDA_LAUNCH_BLOCKING=1 to "
        "find the kernel; check the device with `npu-smi info` / `nvidia-smi -q` (ECC, Xid) and take a faulty "
        "node out; an operator error after a CANN or driver upgrade points at the version pins",
        (
            r"\baicore (?:error|exception|timeout)|\bAICORE_(?:EXCEPTION|TIMEOUT)|\bAIC(?:PU)? error|aivec error|"
            r"\bAicore kernel execute failed|\baivector error",  # CANN's runtime (PrintErrorInfoForDavinciTask)
            r"\bMTE error|\bmte (?:out of range|error)",
            # (CANN's AI Core record of it: `[AIC_INFO] The DDR address of the MTE instruction is out of range.`)
            r"\baddress of the MTE instruction is out of range",
            r"ACL_ERROR_RT_(?:AICORE|AIVEC|VECTOR_CORE|AICPU|DEVICE|FEATURE|HBM|MTE)\w{0,40}",
            # (not 507046, the stream's synchronize timed out: a wait, comm-timeout's)
            r"(?:error code(?: is|:)|runtime result =) ?5070(?!46)\d\d\b|error code(?: is|:) ?507899\b",
            r"illegal memory access|an illegal instruction was encountered|misaligned address",
            r"device-side assert(?:ion)? triggered",
            r"\bCUDBG_EXCEPTION_\w+",  # the CUDA core dump's record of a warp's fault (`Detected an exception of type`)
            # a CUDA kernel's own assertion, a line per thread that failed it (`IndexKernel.cu:93: operator(): block:
            # [0,0,0], thread: [0,0,0] Assertion `... && "index out of bounds"` failed.`): the device-side assert
            KERNEL_ASSERT.pattern,
            r"\bAcceleratorError\b",
            r"\bXid\b[^\n]{0,20}\d+",
            r"uncorrectable ECC|ECC error|HBM multi[- ]bit|multi-bit ECC",
            r"\[Hardware Error\][^\n]{0,80}(?:Hardware error|ECC)",  # the kernel's record (APEI) of the fault
            # the Ascend task scheduler's record of an AI Core fault (its ts.log: `TSCH(...) aicore.c:767 ...`)
            r"\bTSCH\([^)\n]{0,40}\)[^\n]{0,160}\baic(?:ore|pu)?\w{0,30}\.c:\d+",
            r"unspecified launch failure|CUDA error: (?:launch failure|unknown error)",
            r"device (?:task )?abort|DEVICE_TASK_ABORT|device (?:is )?lost|fell off the bus",
        ),
        (
            "aicore",
            "aic",
            "hardware error",
            "aivec",
            "mte",
            "acl_error_rt",
            "5070",
            "507899",
            "illegal",
            "misaligned",
            "device-side",
            "] assertion",  # (a kernel's: `thread: [0,0,0] Assertion`)
            "[assert] ",  # (an Ascend C kernel's)
            "acceleratorerror",
            "xid",
            "ecc",
            "hbm",
            "launch failure",
            "cuda error",
            "device abort",
            "device task abort",
            "device_task_abort",
            "device lost",
            "device is lost",
            "fell off",
        ),
        (
            "volcengine/verl issue 138",
            "vllm-project/vllm issue 5222",
            "vllm-project/vllm-ascend issue 2918",
            "vllm-project/vllm-ascend issue 3263",
        ),
        # a line that says the device call timed out ("the internal task times out") is a wait, not a fault
        unless=(r"times out|timed out",),
        ignorecase=True,
    ),
    Cause(
        "comm-timeout",
        "a collective (HCCL/NCCL) timed out: one rank stopped or was far slower, and the others waited for it",
        "look at the stalled rank named above first (its own log: an earlier error, out of memory, a hang in "
        "data loading or reward), check the network interfaces (HCCL_SOCKET_IFNAME / NCCL_SOCKET_IFNAME) and "
        "ports, and only then raise the timeout (e.g. trainer.timeout_s: 3600, env HCCL_EXEC_TIMEOUT=3600)",
        (
            r"Watchdog caught collective operation timeout",
            # gloo's pair waiting for a peer's data (`[gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting
            # 1800000ms for recv operation to complete`)
            r"Timed out waiting \d+ ?ms for (?:recv|send) operation",
            r"\bEI0002\b|The wait execution of the Notify register times out",
            r"\bEI0006\b|Getting socket times out",
            r"hccl \w{0,40} ?task timeout",
            r"HCCL watchdog thread terminated",
            r"dump signal due to a collective timeout",
            r"failure detected by watchdog at work sequence id",
            r"\b(?:NCCL|HCCL)\b[^\n]{0,80}\b(?:timed out|Socket Timeout|timeout)\b",
            r"DistBackendError.{0,200}(?:timed out|Timeout)",
            r"collective[^\n]{0,40}(?:timed out|timeout)",
            r"wait socket establish timeout|LinksEstablishCompleted\] is failed",
            r"watchdog (?:got stuck|thread terminated|timed out|timeout)|communicator was aborted|detected by watchdog",
            r"\|[ \t]*[\d.]+\(\d+\)[ \t]*\|[^\n]*\|[ \t]*time ?out[ \t]*\|",
            # HCCL's task that timed out on the device, and its heartbeat's report of a rank that stopped answering
            r"\[TaskExecStage\]\[Timeout\]|ExceptionType:\[Heartbeat Lost\b",
            r"\bTimeout at NCCL work: \d+",  # torch's watchdog, its record before it aborts the communicator
            # Ray's compiled graph (vLLM's Ray executor): a channel its peer did not write in time
            r"RayChannelTimeoutError",
            # CANN's synchronize of a device or stream that waited past its timeout (`rtDeviceSynchronize execute
            # failed, reason=[task timeout]`, `EE1002: Stream synchronize timeout`, errors 107020 and 507046): on a
            # job's devices, a collective that another rank never joined
            r"reason=\[(?:task|stream sync) timeout\]|Stream synchronize timeout|"
            r"(?:error code(?: is|:)|runtime result =) ?(?:107020|507046)\b",
        ),
        (
            "watchdog",
            "ei0002",
            "ei0006",
            "notify register",
            "times out",
            "timeout",
            "timed out",
            "hccl",
            "nccl",
            "dump signal",
            "communicator was aborted",
            "collective",
            "establish",
            "time out",
            "heartbeat lost",
            "raychanneltimeouterror",
            "107020",
            "507046",
        ),
        (
            "hiascend.com (CANN HCCL user guide) 建链超时(EI0006) (HCCL link-establishment timeout)",
            "PrimeIntellect-ai/prime-rl PR 3186",
            "volcengine/verl issue 1158",
            "vllm-project/vllm issue 4653",
            "vllm-project/vllm-ascend issue 3413",
            "ray-project/ray issue 53845",
        ),
        unless=(
            r"\bwarn(?:ing)?\b[^\n]*(?:never timeout|bigger than watchdog)",
            r"set to never timeout",
            # glog's warning level: torch_npu's `[W NPUStream.cpp:409] Warning: NPU warning, error code is 507046`
            # (CANN's own error record of the same wait follows it: that is the error)
            r"\b" + GLOG_WARNING + "NPU warning",
        ),
    ),
)
