"""The signs a failure shows, read by grpolab.monitor.families to name its family: what a traceback's stack shows
(the functions and files of a reward, a data loader, a weight sync, a checkpoint, an engine's start-up) and what an
error's message names (memory, a missing module, a device, a batch or layout relation, Hydra's search path). Each is
a pattern a person can read; which family a sign decides, and in what order, is families' business.
"""

from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------- what a stack shows
REWARD = re.compile(
    r"reward|compute_score|score_fn|(?:\b|_)score(?:_|s?\b)|\bgrader\b|math_verify|verif(?:y|ier)|_judge|remote_rm",
    re.IGNORECASE,
)
DATA = re.compile(
    r"__getitem__|_worker_loop|collate|rl_dataset|[/\\]dataset|datasets?[/\\]|_read_files|load_dataset|tokenize_and_"
    r"postprocess|_build_messages",
    re.IGNORECASE,
)
# the weight sync's own calls (not the per-layer loaders it and a load from files both go through)
SYNC_CALL = re.compile(
    r"update_?weights?|weights?_?update|sync_?weights?|weights?_?sync|update_parameter|sync_model_weights|"
    r"sharding_manager|broadcast_weights|send_weights|receive_weights|checkpoint_engine|param_sync|"
    # (TRL's and swift's rollout server setting up the weight channel)
    r"UpdateWeight|init_communicator|\bupdating (?:the )?weights\b|"
    # NeMo's word for it (`refit`, NeMo-Aligner's TensorRT-LLM engine, NeMo RL); DeepSpeed's hybrid engine fusing the
    # trained LoRA into the weights it generates with
    r"\brefit|_fuse_lora",
    re.IGNORECASE,
)
# a weight channel's communicator given a tensor on another device (vLLM's PyNcclCommunicator and its HCCL port, which
# RL frameworks send the weights through: `this nccl communicator is created to work on cuda:0, but the input tensor is
# on cpu`)
SYNC_DEVICE = re.compile(
    r"communicator is created to work on \w+:\d+, but the input tensor is on|"
    # the weight channel's communicator given the trainer's and the engine's ranks on one device (TRL's vLLM server:
    # `Attempting to use the same CUDA device for multiple distinct roles/ranks within the same communicator`)
    r"same \w+ device for multiple distinct roles",
    re.IGNORECASE,
)
# an engine's argument class refusing a keyword its caller passes (vLLM's EngineArgs, SGLang's ServerArgs): the
# caller was written for another version of the engine
ENGINE_ARGS = re.compile(r"\b(?:Async)?(?:Engine|Server)Args\.__init__\(\) got an unexpected keyword argument")
# a keyword spelled as a command-line flag (`'enable-auto-tool-choice'`): no Python keyword has a hyphen in any version
FLAG_KEYWORD = re.compile(r"unexpected keyword argument '[A-Za-z]\w*-[\w\-]*'")
# an attribute a module does not have, said without its type (`module 'torch_npu' has no attribute '_npu_rope'`)
MODULE_LACKS = re.compile(r"\bmodule '[\w.]+' has no attribute '")
# a call refused a keyword its callee does not take (a TypeError's words, also where a record left out the type)
KEYWORD_REFUSED = re.compile(r"\w\(\) got an unexpected keyword argument '")
# an engine's per-layer weight loaders, which a weight sync and a load from files both go through
WEIGHT_LOADERS = re.compile(r"weight_loader|load_weights\b|_load_w\d+\b|_load_model_weight", re.IGNORECASE)
# the sync's calls, and the loaders it goes through
SYNC = re.compile(rf"{SYNC_CALL.pattern}|{WEIGHT_LOADERS.pattern}", re.IGNORECASE)
# an engine loading its weights from files as it starts (vLLM's and SGLang's model_loader package, its entry points)
ENGINE_LOAD = re.compile(r"^(?:get_model|load_model) \S*model_loader[/\\]")
# (Open-Reasoner-Zero's `backload_to_gpu`: the engine moved back onto the device after a training phase)
WAKEUP = re.compile(
    r"resume_memory_occupation|\bwake_?up\b|waking up|cumem_allocator|torch_memory_saver|backload", re.I
)
KV = re.compile(r"KV cache|cache blocks|initialize_cache|_initialize_kv_caches|determine_num_available_blocks", re.I)
CONVERSION = re.compile(
    r"[/\\]conversion[/\\]|convert\w{0,40}\.py|model_merger|merge_\w{0,20}checkpoint|to_hf|hf_to_\w{1,20}|"
    r"_to_(?:nemo|mcore|megatron|dcp)\w{0,20}\.py|"  # a converter script named for its two formats (`ckpt_to_nemo.py`)
    # (Pai-Megatron-Patch's `model_checkpoints_convertor/.../hf2mcore_qwen2.py`, `checkpoint_conversion/x.py`)
    r"\b(?:hf2mcore|mcore2hf|hf2mg|mg2hf)\w{0,40}\.py|[/\\]\w{0,30}(?:_convertor|_conversion)[/\\]|"
    r"export_\w{0,20}checkpoint|AutoBridge|[/\\]mbridge[/\\]|megatron[/\\]bridge[/\\]|_weight_name_mapping|"
    r"No connector found for extension",  # NeMo's import_ckpt: no importer for the source it was given
    re.IGNORECASE,
)
# (Megatron's asynchronous writer, strategies.filesystem_async, writes only: a save's)
SAVE = re.compile(r"save_checkpoint|\bsave\w{0,20}\b|dist_checkpointing[/.]save|async_save|filesystem_async", re.I)
# a record's words for a save under way (not `saved`: a load names what was saved, `mismatch between saved ... and`)
SAVING = re.compile(r"save_checkpoint|\bsav(?:e|ing)\b|async_save|filesystem_async|dist_checkpointing[/.]save", re.I)
# Megatron's check of a distributed checkpoint's shards, which its save runs (validate_sharding_integrity)
SHARDING_CHECK = re.compile(r"Invalid access pattern for ShardedTensor")
# a model written whole (transformers' save_pretrained, a trainer's save_model): a save, with CKPT_WRITE's writers
SAVE_MODEL = re.compile(r"\bsave_pretrained\b|\b_?save_model\b")
# a checkpoint being written: its save's functions, Megatron's distributed checkpoint, torch.save's zip writer (a crash
# in it is the save's), a trainer's record of the save it is doing
CKPT_WRITE = re.compile(
    r"save_checkpoint|checkpoint\w{0,12}[ _]sav|sav\w{0,8}[ _](?:\w{1,12}[ _])?checkpoint|dist_checkpointing|"
    r"async_save|PyTorchStreamWriter|zip_writer|writeRecord|torch\.save\b|\b_?save\w{0,20} \S*torch[/\\]serialization\.py",
    re.IGNORECASE,
)
LOAD_CKPT = re.compile(
    r"load_checkpoint|_load_base_checkpoint|load_state_dict|dist_checkpointing|CheckpointingException|"
    # (a module named checkpoint.py is activation checkpointing's: torch's, Megatron's, MindSpeed's recompute)
    r"apply_factory_merges|\bcheckpoint\b(?!\.py)|"
    # a loader's own verdict on what it read (`Reward model is not correctly loaded.`, LLaMA-Factory's value head)
    r"\b(?:model|weights?|params|parameters)\w{0,20} (?:is |are |was |were )?not (?:correctly |properly |fully )?loaded",
    re.IGNORECASE,
)
CAPTURE = re.compile(
    r"captur\w{0,10} (?:cuda|npu|acl)? ?graph|graph captur|capture_model|cuda_graph_runner|(?:cuda|npu|acl) ?graph\w{0,10}"
    r"[^\n]{0,60}\bcaptur|capture_begin|NPUGraph\.cpp|AclmdlRICapture|"
    r"captures_underway|"  # torch's caching allocator asserting on a graph capture still under way
    # CUDA's refusal of an operation a stream under capture cannot record (cudaErrorStreamCaptureUnsupported)
    r"\bstream is capturing\b|cudaErrorStreamCapture",
    re.I,
)
CONFIG_CHECK = re.compile(
    r"(?:^|[/\\])(?:config|configs|arg_utils|server_args|arguments|transformer_config|\w{0,40}_config|\w{0,40}config)"
    r"(?:\.py$|[/\\])",
    re.IGNORECASE,
)
CHECK_FUNCTION = re.compile(r"__post_init__|verify|validate|_check|check_|from_engine_args|create_\w{0,40}config")
STARTUP = re.compile(
    r"determine_num_available_blocks|profile_run|_initialize_kv_caches|initialize_cache|init_device|load_model|"
    r"capture_model|_dummy_run|init_memory_pool|_init_cache_engine|initialize_from_config|init_worker|_init_executor|"
    r"determine_available_memory|get_kv_cache_spec|initialize_kv_cache|compile_or_warm_up_model"
)

# ---------------------------------------------------------------------------------------------- what a message names
PROMPT_TOO_LONG = re.compile(
    r"prompt (?:length|\(length) ?(?:of )?\(?\d+\)? (?:tokens )?is (?:too )?long(?:er)?|sequence_length=\d+ is larger "
    r"than max_length|prompt \(\d+ tokens\) is too long|is longer than the maximum model length|"
    r"exceeds (?:the )?max(?:imum)?_?(?:prompt|model)_?len|"
    # an OpenAI-compatible server's refusal (vLLM: `This model's maximum context length is 16384 tokens. However,
    # you requested 19591 tokens`)
    r"maximum context length is \d+ tokens\. However, (?:you requested|your request has) \d+ (?:input )?tokens|"
    # the tokens left for a response came out negative: the prompt alone is longer than the model's length
    r"max_tokens must be at least 1, got -\d+|"
    # a multimodal item longer than the engine's encoder cache (vLLM: `the decoder prompt contains a(n) video item
    # with length 16758, which exceeds the pre-allocated encoder cache size 16384`)
    r"prompt contains an? ?(?:\(n\) )?\w+ item with length \d+, which exceeds",
    re.IGNORECASE,
)
# a call whose arguments do not fit the called function's signature: the function's name is group 1
SIGNATURE = re.compile(
    r"(\w+)\(\) (?:missing \d+ required (?:positional|keyword-only) arguments?|got an unexpected keyword argument|"
    r"takes \d+ positional arguments? but)"
)
# a data set's own content refused (TRL: `the dataset contains non-conversational inputs`)
DATASET_SAYS = re.compile(
    r"\b(?:the|your) (?:dataset|data set) (?:contains|has|includes|is missing|lacks|does not (?:contain|have))\b", re.I
)
# a value the code does not know among its choices (`Unknown lr scheduler: linear`, `Unsupported optimizer: x`)
UNKNOWN_CHOICE = re.compile(
    r"^(?:Unknown|Unsupported|Unrecognized|Invalid) [\w \-]{1,40}: ?\S+\. (?:Supported|Valid|Available|Allowed) \w+ "
    r"(?:are|include)\b|"  # (`Invalid attention backend: ''. Valid backends are: [...]`: a choice, its choices named)
    # a backend a setting chose that the model does not run with (`Qwen2.5-VL does not support _Backend.FLASHINFER
    # backend now`)
    r"\bdoes not support (?:the )?\S{1,60} (?:attention )?backend\b|"
    r"^(?:Unknown|Unsupported|Unrecognized) [\w \-]{1,40}: ?\S+|"
    # the value named in the sentence, the choices after it (`Unrecognized distributed executor backend tp. Supported
    # values are 'ray', 'mp' ...`)
    r"^(?:Unknown|Unsupported|Unrecognized) [^\n]{1,80}\. (?:Supported|Valid|Available|Allowed) (?:values|options|"
    r"choices|backends|types) (?:are|include)\b"
)
# a check that asks for a setting by name (`Please set micro_batch_size or set use_flash_attn=True in config.`)
PLEASE_SET = re.compile(
    r"\bplease (?:set|pass|enable|disable|use) [^.\n]{0,80}\bin (?:the |your )?config\b|"
    # a check naming the dotted keys it asks for (verl's `Please set at least one of 'actor.ppo_micro_batch_size' or`)
    r"\bplease (?:set|specify|pass|provide) (?:at least |exactly |only )?one of ['\"`]?\w+\.[\w.]+",
    re.IGNORECASE,
)
# an empty setting converted to a number (an environment variable or an override set to nothing)
EMPTY_VALUE = re.compile(r"invalid literal for int\(\) with base \d+: ''|could not convert string to float: ''")
# a shell that could not find a command (`launch.sh: line 18: nvcc: command not found`): a tool not installed
# (a shell's `command not found`, and dash's `/bin/sh: 1: /usr/local/cuda/bin/nvcc: not found`)
COMMAND_MISSING = re.compile(
    r"(?:[\w.\-/]+: command not found|^[ \t]*(?:/usr)?(?:/bin/)?(?:ba|da|z)?sh: (?:\d+: |line \d+: )?[\w.\-/]{1,200}: "
    r"not found)\s*$"
)
# a compiler or build tool said not found (in a build that failed: the package's native part could not be built)
COMPILER = re.compile(
    r"(?:^|[/\s])(?:nvcc|gcc|g\+\+|c\+\+|cc|clang|ninja|cmake|make|hipcc)(?=: (?:command )?not found)"
)
# a parser that was given arguments it does not know (argparse's, ms-swift's `remaining_argv: [...]`): keys
# (pydantic's refusal of a key its model does not have: `Extra inputs are not permitted`, under the key's name)
UNKNOWN_ARGS = re.compile(r"unrecognized arguments:|remaining_argv: \[|Extra inputs are not permitted")
# torch.distributed's error of its backend (NCCL, HCCL, Gloo), relayed or not (the registry's comm-init reads it too)
DIST_BACKEND = re.compile(r"\bDistBackendError\b")
# a call whose number of arguments the callee does not take: an interface that changed under its caller
ARITY = re.compile(r"takes (?:from )?\d+(?: to \d+)? positional arguments? but \d+ (?:were|was) given")
# argparse's refusal of a command line: `torchrun: error: argument --master-port/--master_port: invalid int value: ''`
# (a program named in words too: TRL's `TRL CLI: error: argument command: invalid choice: 'vllm-serve'`)
ARGPARSE = re.compile(
    r"([\w.\-]{1,60}(?: [\w.\-]{1,30}){0,2}): error: (?:argument |unrecognized arguments|the following arguments are "
    r"required)[^\n]*"
)
# a name one version spells otherwise (transformers 5's `PreTrainedConfig`: `name 'PreTrainedConfig' is not defined. Did
# you mean: 'PretrainedConfig'?`): the caller was written for the other version
RENAMED = re.compile(r"name '(\w+)' is not defined\. Did you mean: '(\w+)'")
# a version check that could not read a version (unsloth's `Invalid version format: <module 'trl' ...>`, packaging's
# `Invalid version: '...'`): the checker and the checked package do not fit
VERSION_PARSE = re.compile(r"\bInvalid version(?: format| string)?: ")
# a command line's subcommand its program does not have (`argument command: invalid choice: 'vllm-serve' (choose from
# 'chat', 'dpo', ...)`): the installed version predates it, or it is misspelled
NO_SUBCOMMAND = re.compile(r"argument (?:command|subcommand|cmd|\{[\w,\-]{1,200}\}): invalid choice: '([^'\n]{1,60})'")
# a config value of the wrong type in a check of numbers: a string where a number was due (an unset shell variable
# passed as an override `key=`, a quoted number)
STRING_VALUE = re.compile(
    r"unsupported operand type\(s\) for [^:\n]{1,4}: '(?:int|float|str)' and '(?:int|float|str)'|"
    r"not supported between instances of '(?:int|float|str)' and '(?:int|float|str)'"
)
# torch's device mesh built over the ranks: a mesh shape (sequence, tensor parallel sizes) the world does not fill
DEVICE_MESH = re.compile(r"init_device_mesh|device_mesh\.py")
SIGNAL_THREAD = re.compile(r"signal only works in main thread", re.IGNORECASE)
OOM = re.compile(
    r"out of memory|OutOfMemoryError|CUresult error(?::| result=) ?2\b|ACL_ERROR_RT_MEMORY|207001|"
    r"enough GPU RAM to fit|"  # transformers' quantizer: the model does not fit on the device
    r"No available memory for the cache blocks|stored in KV cache",
    re.IGNORECASE,
)
MISSING = re.compile(
    r"No module named|is not installed|not installed\b|ModuleNotFoundError|\b[Pp]lease install\b|\bpip install\b|"
    # a name imported from a package Python found only as a folder (a namespace package: `cannot import name
    # '__version__' from 'vllm' (unknown location)`): the package is not installed where the job runs, a folder
    # of its name (a source checkout) stands in its place
    r"cannot import name '\w+' from '[\w.]+' \(unknown location\)"
)
# Python names the first part of a dotted import it cannot find: `No module named 'vllm.v1.engine.utils'` says vllm is
# there and lacks the module (another version), where a missing package says `No module named 'vllm'`
SUBMODULE = re.compile(r"No module named '\w+\.[\w.]+'")
# a checkpoint's parameter named as the key a loader could not find (`KeyError: 'layers.0.mlp.down_proj.weight'`)
PARAM_KEY = re.compile(r"^'(?:[\w]+\.)+(?:weight|bias|scale|qweight|scales)\w{0,10}'$")
# a loader reading the model's weight files (vLLM's `Loading safetensors checkpoint shards: 0% Completed`)
LOADING_SHARDS = re.compile(r"Loading (?:safetensors|pt|bin) checkpoint shards|Loading checkpoint shards")
# a distributed checkpoint's own files (Megatron's and torch.distributed.checkpoint's `common.pt`, `.metadata`,
# `metadata.json`, `__0_0.distcp`, Megatron's tracker `latest_checkpointed_iteration.txt`)
CKPT_FILE = re.compile(
    r"\bcommon\.pt\b|(?:^|[/\\ '\"])\.metadata\b|\bmetadata\.json\b|\.distcp\b|latest_checkpointed_iteration\.txt|"
    r"/iter_\d{7}/"  # (a Megatron checkpoint's iteration folder: `.../iter_0000000/run_config.yaml`)
)
# an inference server launched on its own: no trainer beside it sends it weights
SERVER_LAUNCH = re.compile(r"\bsglang\.launch_server\b|\bvllm serve\b|\bvllm\.entrypoints\.openai\.api_server\b")
# a weight of no elements loaded into a parameter (`Attempted to load weight (torch.Size([0])) into parameter`): a
# ZeRO-3 shard sent to the rollout without its gather
EMPTY_WEIGHT = re.compile(r"load weight \(torch\.Size\(\[0\]\)\)")
# torch's dispatch refusing a plain tensor beside a DTensor: the framework's code did not convert one (its sharding)
DTENSOR_MIX = re.compile(r"got mixed torch\.Tensor and DTensor")
# transformers' (and diffusers') lazy import: the import's own error follows on the next line
LAZY_IMPORT = re.compile(r"Failed to import [\w.]+ because of the following error")
# make's stop after a command of its failed (`make[2]: *** [CMakeFiles/x.dir/build.make:101: x] Error 1`)
MAKE_STOPPED = r"^[ \t]*make(?:\[\d+\])?: \*\*\* [^\n]{0,300} Error \d+"
# a package's native part that did not build or link: pip's wheel build, the linker, make (their own records)
BUILD_FAILED = (
    r"Failed building wheel for |Could not build wheels for |\berror: subprocess-exited-with-error\b|"
    # a compiler a package runs to build its kernels on the fly, failed (FlashInfer's ninja, Triton's ptxas)
    r"CalledProcessError: Command '\['(?:[^'\n]{0,200}/)?(?:ninja|nvcc|ptxas|gcc|g\+\+|c\+\+|cc|clang|cmake|make)'|"
    r"Failed to (?:download and )?build [`']|"  # (uv's: `× Failed to download and build `flash-attn==2.8.1``)
    r"\bNinja build failed\b|"  # (torch's cpp_extension, its own words for the same)
    r"\bundefined reference to [`']|\bld returned \d+ exit status|" + MAKE_STOPPED
)
# a compiler older than the device it builds for (Triton's ptxas asked for `--gpu-name=sm_120a`): its version's
ARCH_COMPILE = re.compile(
    r"ptxas'[^\n]{0,300}--gpu-name=sm_\d+a?\b|Unsupported gpu architecture|"
    r"ptxas fatal *: Value 'sm_\d+a?' is not defined"
)
# torch's (and torch_npu's) glog record at warning level, after its `[` or where a post dropped it
# (`[W NPUStream.cpp:409] Warning: NPU warning, error code is 507046`, `[W AclInterface.cpp:181] Warning: Failed to
# find function ...`): a warning the job goes on after, whatever words it holds
GLOG_WARNING = r"W [\w.]+:\d+\] Warning: "
# CANN failing to import one of its own Python modules (TBE's: set_env.sh not sourced, or the toolkit's Python
# packages not installed): `EC0010: Failed to import Python module [ModuleNotFoundError: No module named ...]`, and its
# TUNE record quoting Python's line (`"ModuleNotFoundError: No module named 'tbe.common'`)
CANN_IMPORT = r"Failed to import Python module \[|\]\"(?:ModuleNotFoundError|ImportError): No module named '"
# CANN's operators without a kernel binary for an op (`Op Cast does not has any binary`): the kernels package not
# installed, or (its config not parsed: KERNEL_CONFIG) installed for another toolkit or driver
NO_BINARY = r"\bOp \w+ does not ha(?:s|ve) any binary"
KERNEL_CONFIG = re.compile(r"Parse dynamic kernel config fail|Cannot parse json for config file")
EXTENSION = re.compile(
    BUILD_FAILED + "|"
    r"Cannot find bin of op\b|"  # CANN's operator package holds no kernel binary for the op: its kernels not installed
    r"\b\w{1,40}\._C\b|_C'|No module named '(?:[\w.]{1,80}\.)?_?custom_ops'|"
    r"camem|allocator is not available|not compiled with|custom (?:ops?|kernels?) (?:is |are )?"
    r"not (?:available|found|built)|extension\b[^.\n]{0,60}\bnot (?:available|found|built|installed)|"
    r"cannot open shared object",
    re.IGNORECASE,
)
ACROSS = re.compile(
    r"unexpected keyword argument|takes \d+ positional arguments? but|missing \d+ required (?:positional|keyword)|"
    r"got multiple values for argument|has no attribute|cannot import name|undefined symbol|"
    r"(?:too many|not enough) values to unpack"
)
UNPACK = re.compile(r"(?:too many|not enough) values to unpack")
# more devices asked of Ray (or the cluster) than it has: phrases of the registry's no-device
# (grpolab.monitor.causes_setup) and of the family ray-resources (RESOURCES), written once here
REQUESTED_MORE = (
    r"[Rr]equested (?:more|\d+) (?:GPUs|NPUs|devices)[^\n]{0,60}(?:only|available)|Not enough (?:GPUs|NPUs|devices)"
    r" available"
)
BUNDLE_INVALID = r"placement group bundle index \d+ is invalid"  # a bundle (a device slot) the group does not have
# a trainer's own check of the Ray cluster's size (ROLL: `The Ray clusters(ray_num_nodes: 0) cannot meet the required
# number of nodes`)
CLUSTER_TOO_SMALL = (
    r"(?:cannot|can't|could not|unable to) (?:meet|satisfy) the (?:required|requested) (?:number of )?"
    r"(?:nodes|GPUs|NPUs|devices)"
)
# vLLM's Ray executor still waiting for the placement group of its workers' devices (`Waiting for creating a placement
# group of specs for 150 seconds. specs=[{'GPU': 1.0}, {'GPU': 1.0}]`): a warning while it waits, a cause if the log
# says nothing else
PG_WAIT = r"Waiting for creating a placement group of specs for \d+ seconds"
RESOURCES = re.compile(
    rf"{REQUESTED_MORE}|Not enough (?:GPUs|NPUs|devices)|{BUNDLE_INVALID}|{CLUSTER_TOO_SMALL}|"
    r"cannot be scheduled|Total available (?:GPUs|NPUs)|exceeds the total number of available|infeasible|"
    r"No available node types can fulfill|node has no (?:NPU|GPU)s? available|"
    r"does not allocate any (?:GPUs|NPUs)|"  # Ray's placement gave the driver's node none (OpenRLHF's check)
    # vLLM's Ray executor (and Ray Serve LLM) could not place its workers' groups
    r"Not enough resources to allocate \d+ placement groups|"
    rf"{PG_WAIT}",
    re.IGNORECASE,
)
INVISIBLE = re.compile(
    r"visible devices? \(0\)|no visible (?:device|gpu|npu)|VISIBLE_DEVICES[^\n]{0,40}(?:empty|unset|invalid)|Error "
    r"setting \w{0,40}VISIBLE_DEVICES|"
    r"Expects tensor to be on the compute device|"  # FSDP: a worker's device not its own
    r"NPU device is not available or visible|"  # SGLang's and slime's check of torch_npu: no NPU the process sees
    # CANN refusing the visible-devices setting (`set ASCEND_RT_VISIBLE_DEVICES:4 error, input data rang[0-2)`)
    r"\bset \w{0,40}VISIBLE_DEVICES\S{0,20} error|Set visible device failed|"
    # a device index beyond those the process sees (torch's lazy init: `device >= 0 && device < num_gpus`)
    r"device >= 0 && device < num_gpus|invalid device ordinal",
    re.IGNORECASE,
)
# a row's field a KeyError names: verl's data columns and the common data sets' ones (a row without it: the data)
DATA_FIELD = re.compile(
    r"KeyError: '(?:reward_model|ground_truth|data_source|extra_info|ability|prompt|problem|question|answer|solution|"
    r"messages|images|videos|response|raw_prompt|input|output|label|target)'?|"
    # pandas' own words for columns a frame does not have (a data file without the column the code selects)
    r"KeyError: [\"']?(?:None of \[Index\(\[|\[[^\]\n]{0,200}\] not in index)",
)
# a row whose images or videos do not fit its prompt's placeholders (a multimodal data set's row, not the model)
MEDIA_TOKENS = re.compile(
    r"(?:Image|Video) features and (?:image|video) tokens do ?not match|"
    r"Attempted to assign \d+ = \d+ (?:multimodal|image|video) tokens to \d+ placeholders|"
    # vLLM's check of a prompt's placeholders against its media items (the row's text lacks the image tokens)
    r"Expected there to be \d+ prompt updates corresponding to \d+ (?:image|video|audio) items",
    re.IGNORECASE,
)
# a driver's or worker's own process that could not register with its node's raylet: the registry's startup-timeout
# (grpolab.monitor.causes_run) and the family ray-cluster-connect (RAY_CONNECT) read this one phrase
RAYLET_REGISTER = r"Failed to register worker\b[^\n]{0,80}\bto Raylet|Unable to register worker with raylet"
RAY_CONNECT = re.compile(
    r"Failed to connect to GCS|Unable to connect to (?:the )?GCS|could not connect to (?:the )?"
    r"ray|Failed to (?:connect|register) (?:to )?(?:the )?raylet|ConnectionError: Could not|"
    # Ray's Jobs API refusing a submission (its job head's frames), or a URL at Ray's GCS or dashboard port
    r"ray[/\\]dashboard[/\\]modules[/\\]job[/\\]|https?://[\w.\-]+:(?:6379|8265)/api/|" + RAYLET_REGISTER,
    re.IGNORECASE,
)
HYDRA_PATH = re.compile(
    r"Could not load '[^'\n]+'|Cannot find primary config|MissingConfigException|Primary config "
    r"(?:directory|module) not found|Config search path:"
)
LAYOUT_WORDS = re.compile(
    r"tensor[_ ]parallel|pipeline[_ ]parallel|expert[_ ]parallel|world[_ ]size|\btp\b|\bpp\b|\bep\b|attention heads|"
    r"num_heads|num_layers|hidden layers|experts|infer_tp|num_?kv_?heads|num_key_value_heads|numHeads|numKvHeads|"
    r"head_?num|\b(?:tp|pp|ep|cp|etp)_size\b|local_world_size",
    re.IGNORECASE,
)
# (not `chunked`: vLLM's chunked prefill and chunked MM input are token budgets, no batch split)
BATCH_WORDS = re.compile(r"batch_size|batch size|mini_batch|micro_batch|chunk(?!ed)", re.IGNORECASE)
# the lengths a rollout is configured with (the model's context, a sequence's, the prompt's and the response's)
LENGTH_WORDS = re.compile(
    r"(?:context|sequence|seq|model|prompt|response|position)[ _](?:length|len)\b|max_model_len|max_position_embeddings|"
    r"max_(?:seq|prompt|response)_len\w{0,6}",
    re.IGNORECASE,
)
# a model parameter's name (Megatron's `decoder.layers.0.self_attention.linear_proj.weight`, Hugging Face's
# `model.layers.3.mlp.gate_proj.weight`): a key the other side of a weight transfer or a load does not know
PARAM_NAME = re.compile(r"\b(?:[a-z_]+\.){1,3}layers\.(?:\d+|N)\.[\w.]{1,120}?(?:weight|bias|scale)\w{0,10}\b")
# the driver's management library that could not start (`Failed to initialize NVML: Driver/library version mismatch`,
# nvidia-container-cli's `nvml error: driver/library version mismatch`): the devices cannot be queried
NVML_FAILED = r"Failed to initiali[sz]e NVML\b|\bnvml error: "
# the tools and calls that ask the driver about its devices
DEVICE_TOOL = re.compile(
    r"\b(?:npu-smi|nvidia-smi|rocm-smi|hl-smi|xpu-smi|dcmi\w{0,20}|nvmlInit\w{0,10}|NVML\w{0,20} (?:error|failed)|"
    rf"{NVML_FAILED}|"
    r"get_npu_versions|cudaGetDeviceCount|aclrtGetDeviceCount)\b",
)
# the sleep-mode allocators of vLLM and SGLang (their pause, resume, free)
SAVER = re.compile(
    r"torch_memory_saver|memory_saver\.|cumem_allocator|CuMemAllocator|"
    # torch's memory pool, which vLLM's sleep mode allocates in, refusing PYTORCH_CUDA_ALLOC_CONF's expandable segments
    r"Expandable segments are not compatible with memory pool|"
    r"Sleep mode can only be used for one instance",  # vLLM's: a second engine with sleep mode in one process
    re.IGNORECASE,
)
# a check that relates quantities and failed: `256 != 2 * 18 * 7`, "is not equal to", "must be divisible by"
RELATION = re.compile(
    r"!=|==|\b\d+ ?<=? ?[a-z_]{0,40} ?\d+\b|"  # (ROLL's `batch_size 32 < chunks 64`)
    r"\bnot (?:equal|divisible|a multiple)|\bmust (?:be|equal|divide)|\bshould (?:be|equal|divide)|"
    r"\bonly supports? |\bnot supported\b|\bexceeds?\b|\b(?:greater|larger|more|less|smaller|fewer) than\b|"
    r"\bdivisible\b|\bmultiple of\b|\d+ ?[*%] ?\d+|\bnot compatible with\b",
    re.IGNORECASE,
)
# a part of the framework used before it was set up: "data parallel group is not initialized"
NOT_SET_UP = re.compile(
    r"\b(?:is|are|was|were|has|have) not (?:been |yet )?(?:initiali[sz]ed|set up|created|built|started)\b|"
    r"\bnot yet initiali[sz]ed|\buninitiali[sz]ed\b|\bno (?:running|current) event loop\b|"
    # a context a call must run inside (vLLM's `Forward context is not set. Please use set_forward_context`)
    r"\bcontext is not set\b",
    re.IGNORECASE,
)
# Hydra applying an override (its errors name it): not code reading a key
OVERRIDE = re.compile(r"override|Could not append|Could not delete|hydra[/\\.]", re.IGNORECASE)
# torchelastic's exit code in its failure summary, its colon aligned with the other fields'
# (`exitcode  : 1 (pid: 39886)`)
EXITCODE = r"exitcode {0,4}: ?"
SIGKILL = re.compile(rf"SIGKILL|{EXITCODE}-9\b|return code ?= ?-9\b|signal 9\b|\bKilled\b")
# DeepSpeed's launcher stopping the other ranks once one ended (`sigkill_handler] Killing subprocess N`): a weak sign of
# the registry's killed (grpolab.monitor.causes_run) and a stop by the launcher here (sibling-crash)
LAUNCHER_KILLING = r"sigkill_handler\] Killing subprocess"
# a CUDA kernel's assertion, printed by each thread that failed it (`IndexKernel.cu:93: operator(): block: [0,0,0],
# thread: [0,0,0] Assertion `...` failed.`)
KERNEL_ASSERT = re.compile(
    r"\.cuh?:\d+: [^\n]{0,120}block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\] Assertion\b|"
    # an Ascend C kernel's (CANN's operator code: `[ASSERT] .../gather_v3/gather_v3_base.h:137: Assertion ...`)
    r"\[ASSERT\] \S{1,300}[/\\]op_impl[/\\]\S{1,300}\.h:\d+: Assertion\b"
)
# a data set's own files (datasets' `dataset_dict.json` of a DatasetDict saved to disk, a parquet or JSON-lines file)
DATA_FILE = re.compile(r"\bdataset_(?:dict|info)\.json\b|\bDatasetDict\b|\.parquet\b|\.jsonl\b")
# a node stopped from outside, its processes with it (Ray's `the actor's node was terminated expectedly: received
# SIGTERM`)
NODE_STOPPED = re.compile(r"node was terminated (?:expectedly|unexpectedly)?:? ?received SIGTERM")
SIGTERM = re.compile(rf"SIGTERM|death signal|signal 15\b|{EXITCODE}-15\b|\b15 death|{LAUNCHER_KILLING}", re.IGNORECASE)
# a library's words that its interface changed: what the caller does is no longer there ("TensorDict does not support
# membership checks with the `in` keyword ... please use `key in tensordict.keys()` instead", "... was removed in")
CHANGED = re.compile(
    r"\bno longer (?:supported|available|accepted|exists?)\b|\bhas been (?:removed|renamed)\b|\bwas (?:removed|renamed) "
    r"in\b|\bdoes not support [^\n]{0,200}(?:please )?use [^\n]{0,160}instead|\bis deprecated and (?:has been|was) removed",
    re.IGNORECASE,
)
# W&B's own servers out of reach (a proxy, DNS, a refused connection): its logger (or weave) did not start
WANDB_HOST = re.compile(r"\bapi\.wandb\.ai\b|\bwandb\.ai\b[^\n]{0,80}(?:resolve|connect|proxy)", re.IGNORECASE)
# DeepSpeed's own check that train batch = micro batch x gradient accumulation x world size (its message cut or not)
DS_BATCH = re.compile(r"_batch_assertion|_configure_train_batch_size")
# torch's DataLoader relaying what its worker raised on a row (`Caught ValueError in DataLoader worker process 0`)
DATALOADER = re.compile(r"Caught \w+ in DataLoader worker process \d+")
# a chat template being applied: transformers' apply_chat_template, TRL's maybe_apply_chat_template, Jinja's frame
TEMPLATE = re.compile(r"apply_chat_template|<template>|top-level template code")
# a text field where token ids were due (a collator turning an untokenized column into a tensor)
UNTOKENIZED = re.compile(r"too many dimensions 'str'|invalid data type '(?:numpy\.)?str_?'")
# a split into pieces of 0 (torch's `split_size must be a positive integer, but got 0`): a batch smaller than its parts
ZERO_SPLIT = re.compile(r"split_size must be a positive integer, but got 0\b")
# a count of steps that came out 0 (`Number of steps/epoch 0`): the data set holds fewer rows than one batch
NO_STEPS = re.compile(
    r"steps?(?:/| per )epoch:? 0\b|total (?:number of )?(?:training )?steps:? 0\b|"
    r"[/%] ?(?:self\.)?(?:num_)?steps_per_epoch\b|[/%] ?len\((?:self\.)?train_dataloader\)|"  # the division's source line
    r"len\((?:self\.)?train_dataloader\) ?>=? ?1\b|"  # a trainer's own check that one batch is there
    r"\b(?:train(?:ing)?|val(?:idation)?) ?dataloader is empty",
    re.IGNORECASE,
)
# a device id out of the range of the devices a library sees (`MUJOCO_EGL_DEVICE_ID ... between 0 and 0, got 1`)
DEVICE_ID_RANGE = re.compile(
    r"DEVICE_ID\b[^\n]{0,80}\bbetween \d+ and \d+|device id \d+ (?:is )?(?:out of range|invalid)"
)
# datasets' reader does not know a feature type the file was written with (datasets 4's `List`, read by 3.x)
FEATURE_TYPE = re.compile(r"Feature type '[\w.]+' not found")
# a just-in-time build of a compiled extension (Triton's driver helper, torch's cpp_extension, a kernel library's)
BUILD = re.compile(
    r"compile_module_from_src|_jit_compile|load_inline|_run_ninja_build|_write_ninja_file|build_extension|"
    r"cpp_extension|triton[/\\]runtime[/\\]build\.py|"
    r"[/\\]jit[/\\]core\.py",  # a kernel library's JIT build at import (aiter's)
)
# a check that refuses a setting of the stack and says which to change ("FRACTAL_NZ mode is enabled. This may cause
# model parameter precision issues in the RL scenarios. Please set VLLM_ASCEND_ENABLE_NZ=0.")
SETTING = re.compile(
    r"\b(?:mode|option|flag|feature)\b[^.\n]{0,40}\b(?:is|are) (?:enabled|disabled|not supported|unsupported|not "
    r"allowed)\b|\bplease (?:set|pass|enable|disable) (?:[A-Z][A-Z0-9_]{2,}=|--?[a-z][\w-]+)|"
    # an environment setting named with the value it has (`Using V1 AsyncLLMEngine, but envs.VLLM_USE_V1=False`)
    r"\b(?:but|while|with) (?:envs\.)?[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}=\w+|"
    # a dtype the device cannot compute in (vLLM: `Bfloat16 is only supported on GPUs with compute capability ...`)
    r"\b(?:bfloat16|bf16|float16|fp16|fp8|float8\w{0,10})\b[^.\n]{0,30}\b(?:is |are )?(?:only|not) supported on\b|"
    # a dtype a quantization method cannot compute in (`torch.bfloat16 is not supported for quantization method awq`)
    r"\b(?:bfloat16|bf16|float16|fp16|float32|half)\b is not supported for quantization method\b|"
    # a kernel a setting asks for that the device cannot run (`FP8 block scaled GEMM requires Hopper and CUDA >= 12.9`)
    r"\brequires (?:Hopper|Ampere|Ada|Blackwell|sm_?\d{2,3}|compute capability)\b|"
    # shapes a precision setting cannot compute in (TransformerEngine: `FP8 execution requires 2D input matrices with
    # height divisible by 8 and width divisible by 16`): the setting is the fix (FP8 off for such layers, or padding)
    r"\b(?:fp8|float8\w{0,10})\b[^.\n]{0,30}\brequires\b[^.\n]{0,80}\b(?:divisible|multiple of)\b",
    re.IGNORECASE,
)
# W&B's login on the stack (a key it refused, a prompt for one in a job with no terminal)
WANDB_LOGIN = re.compile(r"wandb_login|_login\b|api_key|maybe_login|\blogin\b", re.IGNORECASE)
# where a batch is split over the data-parallel workers (verl's DataProto.chunk and its dispatch functions): a
# traceback cut inside one is the batch's split (its assertion names the sizes: `only support equal chunk`)
BATCH_SPLIT = re.compile(
    r"protocol\.py:\d+ in (?:chunk|split)\b|_split_args_kwargs_data_proto|dispatch_\w{0,40}data_proto|"
    r" in \w{0,40}(?:mini|micro)_batch"  # a trainer's own split into mini/micro batches (SkyRL's boundaries)
)
# waiting for Ray's placement groups to be ready (NeMo RL's virtual cluster, verl's resource pools): a traceback cut
# there is a start-up that did not come up in time (the wait's timeout, a cluster short of what the groups ask)
PLACEMENT = re.compile(r"placement_groups?\w{0,30}|\bpg\.ready|wait_for_pg|_create_pg", re.IGNORECASE)
# a reward function, module or worker that cannot be loaded (`Failed to import class ...GeneralRuleRewardWorker`)
REWARD_LOAD = re.compile(
    r"(?:Failed to|cannot|could not|unable to) (?:import|load|find)\b[^\n]{0,200}reward|"
    r"reward\w{0,60} (?:is not found|not found|cannot be (?:imported|loaded))",
    re.IGNORECASE,
)
# a model the installed version does not know (`Model architecture qwen3 is not supported for now`, transformers'
# `does not recognize this architecture`): a newer version knows it (a converter's own refusal is the conversion's)
UNSUPPORTED_MODEL = re.compile(
    r"(?:model )?(?:architecture|model[ _]type)s? [`'\"]?[\w.-]{1,60}[`'\"]? (?:is )?not (?:yet )?(?:supported|recogni[sz]ed)|"
    r"does not recognize this architecture|not supported for now|"
    # an older transformers refusing a newer model's RoPE settings (Llama 3.1's `rope_type: llama3`): a version's
    r"rope_scaling`? must be a dictionary with (?:with )?two fields|"
    # a tokenizer class a newer transformers has (GLM-5's `TokenizersBackend`): the installed one is older
    r"Tokenizer class \w+ does not exist or is not currently imported",
    re.IGNORECASE,
)
# a model folder that is no Hugging Face model: its config.json names no model_type (a trainer's own checkpoint, a
# folder one level off); an unknown model_type says "does not recognize this architecture" instead (a version's)
NOT_A_MODEL = re.compile(
    r"Unrecognized model in \S+[^\n]{0,20}Should have a .?model_type.? key|"
    # transformers' refusal of a path that holds no model (`Can't load the configuration of '~/models/x'`)
    r"Can't load (?:the )?(?:configuration|config|tokenizer|model|weights) (?:of|for) |"
    # a local path that is not there, which huggingface_hub then validates as a repo id and refuses
    r"Repo id must be in the form 'repo_name' or 'namespace/repo_name'|Incorrect path_or_model_id|"
    # vLLM's: neither a config.json nor a format it reads in the model's folder (`No supported config format found`)
    r"No supported config format found in "
)
# the importer's own frames (a traceback cut inside an import: the module that did not import is below them)
# the function name grpolab.monitor.cutlog gives a frame whose source line is an import statement (a log cut under it)
IMPORT_FRAME = "<import>"
IMPORTING = re.compile(
    rf"_find_and_load|_load_unlocked|import_module|_call_with_frames|_gcd_import|exec_module|{IMPORT_FRAME}"
)
# loading weights from files (a traceback cut there: the checkpoint's load, whatever its error said)
LOADING = re.compile(r"from_pretrained|load_adapter|safe_open|safetensors|load_state_dict|load_checkpoint", re.I)
# the creation of a process group's store (torch's TCPStore rendezvous; vLLM's distributed set-up): its port
STORE = re.compile(
    r"_create_c10d_store|_tcp_rendezvous_handler|\bTCPStore\b|init_worker_distributed_environment|"
    r"init_process_group"
)
# Megatron's getters of a parallel group (they assert it was set up: `... group is not initialized`)
GROUP_GETTER = re.compile(r"\bget_\w{1,60}_(?:group|world_size|rank)\b")
# a command line a launcher echoes as a Python list (DeepSpeed's `sigkill_handler ['python', '-m', ...,
# '--load_checkpoint', ...] exits with return code = 1`): its arguments are the launch's words, not what failed
ARGV_ECHO = re.compile(r"\[(?:'[^']{0,300}', ){3,}'[^']{0,300}'\]")
# a package's loader of its own compiled library (Transformer Engine's `_load_library`: `next(so_dir.glob(...))`
# raising StopIteration when the .so is not there), and what such a search raises when it finds nothing
LOAD_LIBRARY = re.compile(r"^_?load_(?:\w{0,20}_)?(?:library|lib|so|extension|ext)$")
NOT_FOUND_TYPES = ("StopIteration", "FileNotFoundError", "OSError", "IndexError")
# a reshape by the group size that the gathered batch does not divide (`rewards.view(num_devices,
# self.num_generations)`: `shape '[2, 8]' is invalid for input of size 17`), the batch's split, not a layout
RESHAPE = re.compile(r"shape '\[[-\d, ]{1,60}\]' is invalid for input of size \d+")
GROUP_SIZE = re.compile(r"\bnum_generations\b|\bn_samples\w{0,20}|\bgroup_size\b|\brollout_n\b|num_return_sequences")
# a platform plugin patching the engine it runs on as it registers (vllm-ascend's `pre_register_and_update`,
# `adapt_patch`): a traceback cut there is most often the plugin and the engine at versions that do not fit
PLUGIN_PATCH = re.compile(r"\b(?:pre_register_and_update|adapt_patch|apply_\w{0,20}patch\w{0,20})\b")
# a trainer's or a library's check of the installed packages' versions (LLaMA-Factory's `check_dependencies`,
# transformers' `require_version`): a traceback cut there is that check refusing a version
VERSION_CHECK = re.compile(r"\b(?:check_dependencies|require_version\w{0,20}|_?check_\w{0,20}versions?)\b")
# an argument a newer version removed, its replacement named (SGLang: `Removed server argument(s): warmup ->
# warmup_mode=request or warmup_mode=off`)
REMOVED_ARGUMENT = re.compile(r"\bRemoved server argument\(s\): ")
# torch refusing tensors that do not fit together: shapes, sizes, devices (`The expanded size of the tensor (1024)
# must match the existing size (32)`, `Expected all tensors to be on the same device`, `shape '[14, -1]' is invalid
# for input of size 7`): read last, after every sign of a setting, a sync or a load, it is the code's own computation
TENSORS_DO_NOT_FIT = re.compile(
    r"The expanded size of the tensor|Sizes of tensors must match|Expected all tensors to be on the same device|"
    r"The size of tensor a \(\d+\) must match|is invalid for input of size|Split sizes doesn't match|"
    r"view size is not compatible with input tensor|cannot be converted to Scalar|Expected reduction dim|"
    r"mat1 and mat2 shapes cannot be multiplied"
)
