"""The causes that stop a job before it trains: config keys, modules, chat templates, rewards, logins, batches,
layouts, checkpoints, devices. Part of the cause registry (grpolab.monitor.causes), in the order of origin."""

from __future__ import annotations

from grpolab.monitor.cause import Cause
from grpolab.monitor.signs import (
    ARCH_COMPILE,
    BUILD_FAILED,
    BUNDLE_INVALID,
    CANN_IMPORT,
    CLUSTER_TOO_SMALL,
    GLOG_WARNING,
    LAZY_IMPORT,
    NO_BINARY,
    NVML_FAILED,
    PG_WAIT,
    REMOVED_ARGUMENT,
    REQUESTED_MORE,
)

CAUSES: tuple[Cause, ...] = (
    Cause(
        "config-key",
        "a config key or Hydra override was rejected (the installed verl or library has no such key), or a key "
        "without a default was left unset",
        "correct the key, or add it with `+` where verl's config is free-form (a new key); `grpolab check` composes "
        "the launch against the installed verl before it starts",
        (
            r"Could not override '[^'\n]+'",
            r"Key '[^'\n]+' is not in struct",
            r"ConfigAttributeError: Key '[^'\n]+'",
            r"Could not append to config\. An item is already at '[^'\n]+'",
            r"Error merging override [^\n]+",
            r"Could not delete from config\. '[^'\n]+'",
            r"ConfigKeyError: [^\n]+",
            r"MissingMandatoryValue: [^\n]+|Missing mandatory value: [\w.\-]+",  # a key the config leaves ??? (no default)
            r"(?:Config|Arguments|Args|Params)\w{0,40}\.__init__\(\) got an unexpected keyword argument '[^'\n]+'",
            r"\bunrecognized arguments: [^\n]+",
            r"\b(?:Unknown|Unrecognized|Unsupported|Invalid) (?:config(?:uration)? )?(?:key|option|field|argument)s?"
            r"[: ]+'?[\w.\-]+",
            r"Extra inputs are not permitted",
            r"OverrideParseException|LexerNoViableAltException|mismatched input '[^'\n]*' expecting",
            r"^[ \t]*full_key: [\w.\-]+",
        ),
        (
            "override",
            "lexernoviablealt",
            "full_key",
            "mismatched input",
            "not in struct",
            "configattributeerror",
            "could not append",
            "could not delete",
            "configkeyerror",
            "missing mandatory",
            "unexpected keyword",
            "unrecognized",
            "unknown",
            "unsupported",
            "invalid",
            "extra inputs",
        ),
        (
            "volcengine/verl issue 1080",
            "volcengine/verl issue 7430",
            "NVIDIA-NeMo/RL issue 3869",
            "unslothai/unsloth issue 2576",
        ),
        rule="verl-schema",
        unless=(r"is deprecated", r"\bwarn(?:ing)?\b.*unknown"),
    ),
    Cause(
        "config-missing",
        "Hydra found no config on its search path: a defaults entry, --config-name or a `+group=` names a config "
        "that is not in any folder Hydra searches",
        "give the config's folder with --config-path (or hydra.searchpath), or correct the name in `defaults:`; a "
        "recipe of GRPO Lab renders verl's own config and needs neither",
        (
            r"Could not load '[\w/.\-]+'\.?$",
            r"Cannot find primary config",
            r"MissingConfigException",
            r"Primary config (?:directory|module) not found",
        ),
        ("could not load", "cannot find primary config", "missingconfigexception", "primary config"),
        ("verl-project/verl issue 2735",),
        rule="verl-schema",
    ),
    Cause(
        "no-device",
        "no usable accelerator: the job found no CUDA/NPU device, or Ray could not place the GPU/NPU workers",
        "check the nodes have devices and drivers (`npu-smi info` / `nvidia-smi`), that torch_npu is installed on "
        "Ascend nodes, that Ray was started with the devices (`ray start --resources='{\"NPU\": 16}'` on Ascend) "
        "and that cluster.nnodes x cluster.devices_per_node matches `ray status`; `grpolab preflight` checks it",
        (
            r"No CUDA GPUs are available",
            r"Found no NVIDIA driver on your system",
            r"Torch not compiled with CUDA enabled",
            r"No module named '?torch_npu\b(?!\.)'?",  # (not its compiled `torch_npu._C`: a build's)
            r"\bNPU (?:is )?not available|\bno (?:available )?NPU (?:device|found)|\bhas no (?:NPU|GPU)s? available\b",
            r"Total available (?:GPUs|NPUs) [\d.]+ is less than total desired",
            r"resource request cannot be scheduled right now: \{[^}\n]*'(?:GPU|NPU)'",
            r"No available node types can fulfill resource request.*\b(?:GPU|NPU)\b",
            r"resources? (?:request )?cannot be satisfied",
            r"[Ii]nfeasible.*\b(?:GPU|NPU)\b",
            r"npu-smi: (?:command )?not found",
            r"CUDA driver version is insufficient",
            r"no CUDA-capable device is detected",
            r"does not allocate any (?:GPUs|NPUs)|no (?:GPUs|NPUs) (?:are |were )?(?:allocated|assigned)",
            r"exceeds the total number of available (?:GPUs|NPUs|devices)",
            # more devices asked of Ray than the cluster has (issue 41: NeMo RL issue 89, OpenRLHF PR 728, ROLL)
            REQUESTED_MORE,
            # a device the process was told to use that it does not have (TRL's vLLM on `cuda:1` of a one-GPU host)
            r"requested device\b[^\n]{0,40}\((?:cuda|npu):\d+\) is not available",
            # vLLM finding no platform it supports (no device the process sees: OpenRLHF issue 233)
            r"No supported device detected",
            # CANN refusing the device it was told to use (`Set visible device failed, invalid device=1, input visible
            # devices:1`; `set ASCEND_RT_VISIBLE_DEVICES:4 error`)
            r"Set visible device failed|\bset \w{0,40}VISIBLE_DEVICES\S{0,20} error",
            BUNDLE_INVALID,
            CLUSTER_TOO_SMALL,
            PG_WAIT,
            # NVML not usable (signs.NVML_FAILED), torch's accelerator API with none, CUDA's `system not yet
            # initialized` (a fabric manager not running), docker without the NVIDIA runtime
            NVML_FAILED,
            r"Cannot access accelerator device when none is available",
            r"'system not yet initialized'|\bcudaErrorSystemNotReady\b",
            r"could not select device driver \"[^\"\n]{0,40}\" with capabilities: \[\[gpu\]\]",
        ),
        (
            "waiting for creating a placement group",
            "nvml",
            "cannot access accelerator",
            "system not yet initialized",
            "cudaerrorsystemnotready",
            "could not select device driver",
            "no cuda gpus",
            "no supported device",
            "set visible device",
            "visible_devices",
            "nvidia driver",
            "not compiled with cuda",
            "torch_npu",
            "npu not available",
            "npu is not available",
            "no npu",
            "no available npu",
            "has no npu",
            "has no gpu",
            "total available",
            "cannot be scheduled",
            "no available node types",
            "cannot be satisfied",
            "infeasible",
            "npu-smi",
            "driver version is insufficient",
            "cuda-capable",
            "does not allocate any",
            "requested",
            "not enough gpus",
            "not enough npus",
            "not enough devices",
            "no gpus",
            "no npus",
            "number of available",
            "bundle index",
            "cannot meet",
            "cannot satisfy",
            "could not meet",
            "could not satisfy",
            "unable to meet",
            "unable to satisfy",
            "can't meet",
            "can't satisfy",
        ),
        (
            "vllm-project/vllm issue 6956",
            "NVIDIA-NeMo/RL issue 89",
            "OpenRLHF/OpenRLHF issue 233",
            "vllm-project/vllm-ascend issue 167",
        ),
        # Ray's autoscaler warns while a placement group waits, also in runs that start fine a minute later
        weak=(r"cannot be scheduled right now", PG_WAIT),
    ),
    Cause(
        "import-error",
        "a Python module is missing or the installed versions do not fit together",
        "run `grpolab preflight RECIPE` to compare the installed stack with the recipe's pins, install the "
        "missing package (or the version the other packages expect) on every node, and restart Ray so its "
        "workers pick it up",
        (
            r"^{P}(?:ModuleNotFoundError|ImportError):(?: |$)",
            r"RayTaskError\((?:ModuleNotFoundError|ImportError)\)",
            r"VersionConflict|ResolutionImpossible|No solution found when resolving dependencies",  # (pip's, uv's)
            r"\brequires [\w.\-\[\]]+ *[<>=!~].*, but you have ",
            r"undefined symbol:? [_A-Za-z]",  # (a post without its colon: `undefined symbol _ZN3c104cuda...`)
            ARCH_COMPILE.pattern,
            r"\bversions? (?:conflict|mismatch)\b",
            r"version `GLIBC(?:XX)?_[\d.]+' not found",
            r"(?:was|were) compiled (?:against|with) .{0,80}(?:but|while) ",
            r"cannot import name '[^'\n]+' from '[^'\n]+'",
            # transformers' (and diffusers') lazy import relays the real error on its next line, often without its
            # type (`Failed to import trl.trainer.grpo_trainer because of the following error` / `No module named`)
            LAZY_IMPORT.pattern,
            # kernels built for another chip (vllm-ascend's custom ops on a 310P: `the socversion Ascend910B1 of bin
            # package does not match the current device socverison Ascend310P3`)
            r"socversion \S+ of bin package does not match",
            # a function the caller looks up in a loaded library that this version of it lacks (torch_npu in CANN's
            # libhccl: `Failed to find function HcclCommInitRootInfoConfig`)
            r"Failed to find function \w+",
            # a kernel built for other GPUs than these (`no kernel image is available for execution on the device`,
            # `device kernel image is invalid`): the package's build does not fit the device or the CUDA installed
            r"no kernel image is available for execution|device kernel image\b",
            # a driver older than the CUDA the installed torch was built with (`The NVIDIA driver on your system is too
            # old (found version 11070)`): the driver and the wheel do not fit
            r"driver on your system is too old",
            # a package's native part that did not build or link (pip's `Failed building wheel for flash-attn`, the
            # linker's `undefined reference to` and `ld returned 1 exit status`, make's stop)
            BUILD_FAILED,
            # pip's resolver without a version of a requirement for this platform or Python (`Could not find a
            # version that satisfies the requirement xgrammar==0.1.11`, `No matching distribution found for`)
            r"Could not find a version that satisfies the requirement|No matching distribution found for",
            # pip's resolver refusing two requirements together (`ERROR: Cannot install mistral-common[image]==1.11.5
            # and trinity-rft`), and a package's check of another's version (Megatron's `Supported flash-attn versions
            # are >= 2.1.1, <= 2.7.4.post1. Found flash-attn 2.8.3.`)
            r"^{P}ERROR: Cannot install \S[^\n]{0,200} and \S",
            r"\bSupported [\w.\-]{1,40} versions are [^\n]{1,120}\bFound [\w.\-]{1,40} \d",
            # an argument a newer version removed (SGLang: `Removed server argument(s): warmup -> warmup_mode=...`);
            # NCCL's kernels not loadable by this CUDA (`NCCL WARN Cuda failure 'named symbol not found'`)
            REMOVED_ARGUMENT.pattern,
            r"NCCL WARN Cuda failure (?:\d+ )?'named symbol not found'",
            # CANN's own Python modules not importable, and its operators without a kernel binary (signs)
            CANN_IMPORT,
            NO_BINARY,
        ),
        (
            "modulenotfounderror",
            "failed to import python module",
            "does not has any binary",
            "does not have any binary",
            "satisfies the requirement",
            "no matching distribution",
            "calledprocesserror",
            "too old",
            "building wheel",
            "ninja build failed",
            "failed to build",
            "failed to download and build",
            "build wheels",
            "subprocess-exited-with-error",
            "undefined reference",
            "exit status",
            "*** [",
            "kernel image",
            "failed to import",
            "socversion",
            "importerror",
            "versionconflict",
            "resolutionimpossible",
            "no solution found",
            "but you have",
            "undefined symbol",
            "ptxas",
            "unsupported gpu architecture",
            "version conflict",
            "versions conflict",
            "version mismatch",
            "versions mismatch",
            "glibc",
            "compiled against",
            "compiled with",
            "cannot import name",
            "failed to find function",
            "cannot install",
            "versions are",
            "removed server argument",
            "named symbol not found",
        ),
        ("Ascend/pytorch issue 35", "huggingface/trl issue 3304", "vllm-project/vllm-ascend issue 117")
        + ("cnblogs.com/marsggbo 17966269",),
        rule="stack",
        # glog's warning level (torch_npu's `[W AclInterface.cpp:181] Warning: Failed to find function
        # aclrtCreateEventExWithFlag`: an optional function the CANN installed lacks, and the job goes on)
        unless=(r"\[" + GLOG_WARNING, NVML_FAILED),
    ),
    Cause(
        "chat-template",
        "the tokenizer has no chat template, or applying it failed",
        "use the model's instruct tokenizer or set one (`data.apply_chat_template_kwargs`, a tokenizer with a "
        "`chat_template`), or give prompts as plain text; a base model ships no template",
        (
            r"chat_template is not set",
            r"Cannot use (?:apply_)?chat[_ ]template",
            r"no chat template",
            r"does not have a chat template",
            r"jinja2\.exceptions\.\w+",
            r"apply_chat_template.{0,80}(?:Error|failed)",
            # a tokenizer whose apply_chat_template does not take what its caller passes (SGLang 0.5.1's
            # `reasoning_effort` into TiktokenTokenizer's)
            r"apply_chat_template\(\) got an unexpected keyword argument",
            r"TemplateError: ",
            r"default chat template is no longer allowed",  # transformers >= 4.44 with a tokenizer that has none
            # a runtime's own template engine refusing the model's template (LM Studio's `Error rendering prompt with
            # jinja template: ...`, llama.cpp-based runtimes' `Failed to parse chat template: 12:21: ...`)
            r"(?:render(?:ing)?|pars(?:e|ing)) (?:the )?(?:prompt with (?:the |a )?)?(?:jinja|chat) template\b",
            # verifiers / prime-rl: a turn's tokens are not a prefix of the next prompt's (the template re-renders
            # the history differently, e.g. drops a reasoning block)
            r"Token prefix mismatch",
            # transformers' check of a continued final message the model's template rewrote (`continue_final_message
            # is set but the final message does not appear in the chat after applying the chat template!`)
            r"does not appear in the chat after applying the chat template",
            # unsloth's check of a template for its generation prompt (`The tokenizer `...` does not have a
            # {% if add_generation_prompt %} for generation purposes`)
            r"does not have a \{% ?if add_generation_prompt",
            # an engine's registry of templates without the one named, or told to name one (lmdeploy's: `chat template
            # 'qwen3' is not registered`, `please specify chat template`, `using base template to handle chat task`)
            r"\bchat[ _]template '[^'\n]{1,60}' is not registered|please specify (?:a |the )?chat[ _-]?template|"
            r"using (?:the )?base template to handle chat",
        ),
        ("chat_template", "chat template", "jinja", "templateerror", "token prefix mismatch", "add_generation_prompt")
        + ("base template",),
        (
            "huggingface/open-r1 issue 85",
            "sgl-project/sglang issue 2431",
            "volcengine/verl issue 390",
            "microsoft/agent-lightning issue 57",
            "PrimeIntellect-ai/prime-rl issue 947",
            "unslothai/unsloth issue 1404",
        ),
        # a notice that it falls back to the tokenizer's own (NeMo RL's "No chat template provided, using
        # tokenizer's default"): the run goes on, nothing failed
        unless=(r"\busing (?:the )?(?:tokenizer'?s? )?default\b|\bfall(?:ing)? ?back\b",),
        ignorecase=True,
    ),
    Cause(
        "reward-missing",
        "there is no reward for the data: no reward function for its data_source, or the custom reward function "
        "cannot be loaded or called",
        "name a function that scores this data_source in the recipe's reward.function (`path.py:name`; verl's "
        "default_compute_score knows only its bundled data sets), or give the function the signature its trainer "
        "calls (verl: compute_score(data_source, solution_str, ground_truth, extra_info=None); TRL: prompts=, "
        "completions= and the data set's columns as keyword arguments, so end it with **kwargs); `grpolab data "
        "RECIPE` dry-runs the reward on the data before launch",
        (
            r"Reward function is not implemented",
            r"(?:reward|compute_score)\w{0,40} (?:function )?.{0,40}(?:not found|not implemented|is not defined)",
            r"custom_reward_function.{0,80}(?:Error|not found|does not exist)",
            r"Reward function '[^'\n]+' not found",
            r"compute_score\(\) (?:got an unexpected|missing \d+ required)",
            # a reward function Ray cannot send to its workers (defined in a module loaded twice, a lambda)
            r"Can't pickle <function \w{0,60}(?:reward|score)\w{0,60}",
        ),
        (
            "not implemented",
            "reward function",
            "custom_reward_function",
            "compute_score",
            "not found",
            "not defined",
            "can't pickle",
        ),
        ("areal-project/AReaL issue 105", "volcengine/verl issue 3450"),
        ignorecase=True,
    ),
    Cause(
        "wandb-auth",
        "Weights & Biases failed the job: it refused the login (no API key, or a wrong one, reached the job) or "
        "its own call failed (its run could not start in time, its server could not be reached)",
        "export WANDB_API_KEY in the environment GRPO Lab is started from (it is passed to the job without being "
        "written to the run record), or `wandb login` on the head node; or log offline (WANDB_MODE=offline) or "
        "drop `wandb` from trainer.logger",
        (
            r"wandb\.errors\.(?:errors\.)?AuthenticationError",
            r"api_key not configured",
            r"wandb: ERROR .{0,80}(?:not logged in|API key|api_key|401|Unauthorized)",
            r"401 Client Error: Unauthorized for url: https?://api\.wandb\.ai",
            r"(?:wandb|W&B).{0,80}(?:invalid|incorrect) API key|API key must be 40 characters",
        ),
        ("wandb", "api_key", "api key", "unauthorized"),
        ("unslothai/unsloth issue 1914",),
        ignorecase=True,
    ),
    Cause(
        "batch-divisible",
        "a batch does not split evenly: the train, mini or micro batch (times the group size n) over the "
        "data-parallel groups or the rollout's workers",
        "make train batch x rollout.n a multiple of the chunks it is split into (the nearest valid values are "
        "named above); `grpolab check` finds it before launch",
        (
            r"only support equal chunk",
            r"^(?=[^\n]*(?:batch|micro|mini))[^\n]*\b(?:must be|should be) (?:>=|<=|larger|greater|smaller|less|at "
            r"least|no (?:more|larger|greater))",
            # a batch word anywhere in the line, and a divisibility verdict: "X (249) is not a multiple of the
            # microbatch size (2)", "train_batch_size must be divisible by ...", "cannot be split evenly"
            r"^(?=[^\n]*(?:batch|chunk|n_samples|rollout\.n|micro|mini|samples))[^\n]*\b(?:is not|isn't|not|must be|"
            r"should be|has to be|needs to be|cannot be|can't be) (?:evenly )?(?:divisible|a multiple|multiple|split"
            r"|divided)",
            r"\b(?:batch|chunk)\w{0,40}[^\n]{0,60}%[^\n]{0,60}(?:== ?0|!= ?0)",
        ),
        ("chunk", "divisible", "multiple", "split", "divided", " % ", "must be", "should be"),
        ("NVIDIA-NeMo/RL issue 648", "volcengine/verl issue 473"),
        rule="batch-divisible",
        ignorecase=True,
    ),
    Cause(
        "layout-mismatch",
        "the parallel layout does not fit the model or the devices: world size vs TP x PP x CP, layers vs PP, "
        "heads or vocabulary vs TP, experts vs EP, or the local world size vs the visible devices",
        "choose a layout that divides the model and the world (`grpolab plan RECIPE` lists every valid one); "
        "`grpolab check` finds it before launch",
        (
            r"\b(?:attention heads|num_attention_heads|num_heads|num_key_value_heads|kv heads|query groups|"
            r"num_query_groups|vocab\w{0,40}|hidden_size|num_layers|num_hidden_layers|layers|experts?|num_experts|"
            r"num_moe_experts|world[_ ]size|intermediate_size)\b[^\n]{0,120}\b(?:must|should|has to|needs to)? ?"
            r"(?:be )?(?:not )?(?:evenly )?(?:divisible|a multiple|multiple of)",
            r"\b(?:tensor|pipeline|expert|context|data)[_ ](?:model[_ ])?parallel\w{0,40}[^\n]{0,120}(?:must|should|"
            r"is not|not|cannot|can't) (?:be )?(?:evenly )?(?:divisible|a multiple|divide|greater|larger|exceed|equal)",
            r"\b(?:devices|gpus|npus|world[_ ]size)\b[^\n]{0,40}(?:is |are )?(?:less than|smaller than|fewer than|not "
            r"enough for) [^\n]{0,40}(?:tp|pp|ep|tensor|pipeline|parallel)",
            r"\bworld[_ ]size\b[^\n]{0,80}(?:not divisible|mismatch|does not match|must be|is smaller|less than)",
            # a layout word anywhere (num_attention_heads, num_layers, experts, world size, *_parallel_size, tp/pp/ep)
            # and a divisibility verdict: "must be a multiple of", "is not divisible by", "must divide"
            r"^(?=[^\n]*(?:heads|layers|experts|vocab|world[_ ]size|parallel|\b(?:tp|pp|ep|cp|etp|dp)(?:_size)?\b))"
            r"[^\n]*\b(?:is not|isn't|not|must be|should be|has to be|needs to be|must|should|does not|cannot)"
            r" (?:evenly )?(?:divisible|a multiple|multiple|divided|divide)",
            # Megatron's and vLLM's ensure_divisibility / divide(): the split of heads, experts or vocab over ranks
            r"(?:AssertionError|ValueError): \d+ is not divisible by \d+\b",
            r"local[_ ]world[_ ]size[^\n]{0,120}(?:visible|device|exceed|greater|larger)",
            r"(?:ASCEND_RT|ASCEND|CUDA)_VISIBLE_DEVICES[^\n]{0,120}(?:less than|fewer|does not match|mismatch|exceed|"
            r"range)|Error setting \w{0,40}VISIBLE_DEVICES",
            r"\b(?:tp|pp|ep|cp|tp_size|pp_size|ep_size)\b ?\(?\d*\)? ?[^\n]{0,40}(?:must|should) (?:be )?"
            r"(?:divisible|a multiple|divide)",
            r"Invalid device (?:id|ordinal)|invalid device ordinal",
            # a parallelism the model's architecture does not support (vLLM: `Pipeline parallelism is only supported
            # for the following architectures: [...]`)
            r"\b(?:tensor|pipeline|expert|context|sequence)[ _]parallel(?:ism)? is (?:only|not|not yet) supported "
            r"(?:for|with|by|on)\b",
            # a tensor-parallel shard of a block-quantized weight that its blocks do not divide (SGLang's and vLLM's
            # `Weight output_partition_size = N is not divisible by weight quantization block_n = 128`): the TP size
            r"(?:partition_size|output_size\b[^=\n]{0,60}) ?= ?\d+ is not divisible by weight quantization "
            r"block_[nk]\b",
        ),
        (
            "parallelism is",
            "local_world_size",
            "local world size",
            "divisib",
            "multiple",
            "divide",
            "visible",
            "ordinal",
            "mismatch",
            "does not match",
            "exceed",
            "greater",
            "larger",
            "less than",
            "smaller than",
            "not enough for",
            "cannot be",
            "fewer",
            "must be",
            "should be",
            "invalid device",
        ),
        ("vllm-project/vllm issue 1705", "vllm-project/vllm issue 52435", "vllm-project/vllm-ascend issue 2879"),
        rule="world-divisible",
        unless=(r"batch", r"chunk"),
        ignorecase=True,
    ),
    Cause(
        "engine-config",
        "an engine's own argument check refused a value (vLLM, SGLang, Megatron, verl's config classes): the argument "
        "and its value are named above, with the recipe field that sets it",
        "change the named recipe field as the message asks (rollout.max_num_batched_tokens >= rollout.max_model_len "
        "without chunked prefill, rollout.max_num_seqs within the cache the memory allows, ...); `grpolab check` "
        "holds the rollout's settings to the engine's rules before launch",
        (
            r"max_num_batched_tokens \(\d+\) is smaller than max_model_len",
            r"max_num_seqs \(\d+\) (?:exceeds|is larger than|must be)",
            r"\d+ validation errors? for \w{0,40}Config\b",
            # vLLM's start-up check of gpu_memory_utilization against the memory free then: a setting to lower
            r"Free memory on device[^\n]{0,80}on startup is less than desired",
            # an Ascend MoE kernel's check of HCCL's buffer against its dispatch (`HCCL_BUFFSIZE is too SMALL, ...
            # NEEDED_HCCL_BUFFSIZE(...) = 305MB, HCCL_BUFFSIZE=200MB.`): a setting to raise
            r"\bHCCL_BUFFSIZE is too SMALL\b",
        ),
        ("max_num_batched_tokens", "max_num_seqs", "validation error", "free memory on device", "hccl_buffsize"),
        ("verl-project/verl PR 259", "verl-project/verl PR 7632"),
    ),
    Cause(
        "data-error",
        "a data row the trainer cannot use: a prompt longer than the limit, a missing column, a row that does not "
        "parse",
        "`grpolab data RECIPE` reads the first rows of each data file and measures the prompts before launch: run it "
        "to find the row; drop overlong prompts (data.filter_overlong_prompts: true) or raise data.max_prompt_length",
        (
            r"Prompt length of \d+ is longer than the maximum model length",
            r"prompt \(length \d+\) is longer than the maximum model length",
            r"sequence_length=\d+ is larger than max_length=\d+",
            r"Input prompt \(\d+ tokens\) is too long and exceeds limit",
            # a data file that does not read as its format (a Git LFS pointer or an HTML page saved as .parquet)
            r"Parquet magic bytes not found|Could not open Parquet input source|"
            r"Error creating dataset\. Could not read schema",
            # a data set none of whose rows read in the format asked for (LLaMA-Factory: `Cannot find valid samples,
            # check `data/README.md` for the data format.`)
            r"Cannot find valid samples\b",
        ),
        (
            "cannot find valid samples",
            "longer than the maximum model length",
            "is larger than max_length",
            "too long and exceeds limit",
            "parquet",
            "error creating dataset",
        ),
        ("verl-project/verl issue 1015", "verl-project/verl issue 544"),
        rule="data-prompt",
        ignorecase=True,
    ),
    Cause(
        "reward-error",
        "the reward function raised or timed out on a sample (also a signal-based timeout, which works only in a "
        "process's main thread, called in a thread)",
        "`grpolab data RECIPE` dry-runs the reward on the data before launch: run it and fix the function; a "
        "signal-based timeout (math_verify's default) must be turned off in threads (parsing_timeout=None, "
        "timeout_seconds=None) and the time bounded otherwise",
        (
            r"signal only works in main thread",
            # SymPy refusing an answer's expression (math_verify's and the math graders' comparisons)
            r"Can only compare inequalities with Expr|\bSympifyError\b",
        ),
        ("signal only works in main thread", "can only compare inequalities", "sympifyerror"),
        ("huggingface/Math-Verify issue 55", "huggingface/Math-Verify issue 50"),
        rule="reward-dry-run",
    ),
    Cause(
        "checkpoint-mismatch",
        "a checkpoint does not fit the model it is loaded into: tensor shapes differ, or keys are missing or "
        "unexpected (another model, another layout, another version's format)",
        "load the checkpoint into the model (and the parallel layout) it was saved from, or convert it with "
        "verl's model merger first; `grpolab resume` refuses a change the checkpoint cannot take",
        (
            r"(?:size|shape) mismatch for (?:\w+ )?(?:param(?:eter)?|weight|tensor|key)?[ :]*[\w.]+",
            # Megatron's distributed checkpoint: `Size mismatch between saved torch.Size([6561, 512]) and current`
            r"(?:size|shape) mismatch between saved\b",
            r"Missing key\(s\) in state_dict",
            r"Unexpected key\(s\) in state_dict",
            r"Error\(s\) in loading state_",  # (state_dict: a post cut after its underscore says the same)
            r"(?:checkpoint|state_dict|ckpt)[^\n]{0,80}(?:shape mismatch|do(?:es)? not match|mismatch)",
            r"shape mismatch[^\n]{0,80}(?:checkpoint|loading|load)",
            r"(?:missing|unexpected) keys?[^\n]{0,40}(?:checkpoint|when loading|state[_ ]dict)",
            # Megatron's distributed checkpoint: its own exception, and the merge of a checkpoint's shards
            r"CheckpointingException|Different dict keys encountered in `?apply_factory_merges",
            # vLLM's loader given a weight its model has no parameter for; accelerate's given one of another shape
            r"There is no module or parameter named '[^'\n]+' in \w+",
            r"Trying to set a tensor of shape [^\n]{0,80} in \"[\w.]+\" \(which has shape",
            # a weights file that is not one (a Git LFS pointer, a file cut short: safetensors' `Error while
            # deserializing header: HeaderTooLarge`)
            r"SafetensorError: Error while deserializing header",
        ),
        (
            "mismatch",
            "state_dict",
            "error(s) in loading",
            "missing key",
            "unexpected key",
            "do not match",
            "does not match",
            "checkpointingexception",
            "apply_factory_merges",
            "no module or parameter named",
            "trying to set a tensor of shape",
            "deserializing header",
        ),
        ("NVIDIA/Megatron-LM issue 924", "OpenRLHF/OpenRLHF issue 839"),
        ignorecase=True,
    ),
    Cause(
        "checkpoint-save",
        "a checkpoint could not be written: the layout's tensors are not ones the checkpoint format can save, or "
        "the format of the installed library changed",
        "save with the checkpoint format the training layout supports (Megatron's distributed checkpoint: a fully "
        "reshardable format, or without the distributed optimizer's flattened ranges), or the library version the "
        "saver was written for; `grpolab check` sizes the checkpoints against the free disk (a full disk is "
        "disk-full)",
        (
            r"(?:Failed|Unable) to save (?:the )?checkpoint",
            r"save_checkpoint[^\n]{0,80}(?:failed|error)",
            # torch.save into a folder that is not there (only a save says it: `RuntimeError: Parent directory
            # /ckpts/global_step_20 does not exist.`, a step's folder written before it was made)
            r"Parent directory \S+ does not exist",
        ),
        ("save checkpoint", "save the checkpoint", "save_checkpoint", "parent directory"),
        ("areal-project/AReaL PR 1468",),
        ignorecase=True,
    ),
)
