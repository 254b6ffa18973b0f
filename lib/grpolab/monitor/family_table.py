"""Every family of failure `grpolab diagnose` names: its cause id and what it means, one row each. The table the
classifier (grpolab.monitor.families) decides among, docs/causes.md lists and tests/data/failures/README.md labels by.

    FAMILIES    family -> (cause id, what it means)
"""

from __future__ import annotations

# family -> (cause id, what it means). A cause whose family no rule refines has the family of its own name.
FAMILIES: dict[str, tuple[str, str]] = {
    "hydra-config": (
        "config-key",
        "a config key or override was rejected by Hydra / OmegaConf, or Hydra found no config on its search path",
    ),
    "config-version-mismatch": (
        "config-key",
        "the code reads a config key the config does not have: the config "
        "file and the code come from different versions",
    ),
    "engine-config": (
        "engine-config",
        "an engine's own argument check refused a value (vLLM, SGLang, Megatron, "
        "verl's config classes): the argument, its value and the recipe field are named",
    ),
    "layout-mismatch": ("layout-mismatch", "the parallel layout does not fit the model or the devices"),
    "batch-divisible": ("batch-divisible", "a batch does not split evenly over the data-parallel groups or workers"),
    "version-mismatch": (
        "import-error",
        "two installed packages do not fit together: a function, attribute, name or "
        "symbol one of them uses is not there in the other's installed version",
    ),
    "api-mismatch": (
        "import-error",
        "code calls a library whose interface changed (a call returns or takes other "
        "values than the caller was written for)",
    ),
    "missing-dependency": ("import-error", "a package is not installed where the job runs"),
    "build-missing-extension": (
        "import-error",
        "a package's compiled extension was not built or not found (its native library, a custom allocator or kernel)",
    ),
    "data-error": (
        "data-error",
        "a data row the trainer cannot use: a prompt longer than the limit, a missing "
        "column, a row that does not parse",
    ),
    "reward-error": (
        "reward-error",
        "the reward function raised or timed out on a sample (signal-based timeouts in threads too)",
    ),
    "reward-missing": (
        "reward-missing",
        "no reward for the data's data_source, or the reward function cannot be loaded",
    ),
    "weight-sync": (
        "weight-sync",
        "the weights could not be sent from the trainer to the rollout engine (a layout, a "
        "device, a shard that was not gathered, the sync's own state)",
    ),
    "checkpoint-load": (
        "checkpoint-mismatch",
        "a checkpoint could not be loaded: shapes, keys or its format do not fit the model",
    ),
    "checkpoint-save": ("checkpoint-save", "a checkpoint could not be written (the layout's tensors, the format)"),
    "checkpoint-conversion": (
        "checkpoint-mismatch",
        "a checkpoint conversion (Hugging Face <-> Megatron, a model "
        "merger) failed: the model or its config is not one the converter supports",
    ),
    "chat-template": ("chat-template", "the tokenizer has no chat template, or applying it failed"),
    "rollout-startup-oom": (
        "device-oom",
        "the rollout engine ran out of device memory while it started (weights, KV cache, graph capture)",
    ),
    "rollout-wakeup-oom": (
        "device-oom",
        "the rollout engine ran out of device memory when it woke up after a "
        "training step (wake_up / resume_memory_occupation)",
    ),
    "kv-cache-too-small": (
        "device-oom",
        "the KV cache the memory leaves cannot hold one sequence of the model's length",
    ),
    "device-oom": ("device-oom", "the accelerator ran out of memory while training"),
    "host-oom": ("host-oom", "the host's RAM ran out"),
    "disk-full": ("disk-full", "a disk filled up"),
    "nan-loss": ("nan-loss", "the loss or the gradients became NaN/inf"),
    "device-fault": ("device-fault", "the device itself failed"),
    "cuda-graph-capture": ("unknown", "the inference engine failed while it captured its CUDA/NPU graphs"),
    "memory-saver-offload": (
        "unknown",
        "the sleep-mode allocator (torch_memory_saver, vLLM's CuMemAllocator) refused to pause, resume or free "
        "memory for another reason than memory running out: an offload or wake-up called out of order, twice, or on "
        "memory it does not hold",
    ),
    "no-device": ("no-device", "no usable accelerator"),
    "ray-resources": ("no-device", "the job asks Ray for more devices (or other resources) than the cluster has"),
    "device-visibility": ("no-device", "the process sees no devices: the visible-devices setting hides them"),
    "device-query": (
        "no-device",
        "a device tool or query failed (npu-smi, nvidia-smi, the driver's device count): the tool, its driver or "
        "the device id it was asked about",
    ),
    "comm-init": ("comm-init", "the communicator could not be set up"),
    "comm-timeout": ("comm-timeout", "a collective timed out: a rank stalled or died and the others waited"),
    "port-in-use": ("port-in-use", "a port was already bound"),
    "startup-timeout": ("startup-timeout", "something did not come up in time"),
    "ray-cluster-connect": ("startup-timeout", "a process could not reach the Ray cluster (its GCS / head node)"),
    "wandb-auth": ("wandb-auth", "Weights & Biases refused the login, or its own call failed (its run did not start)"),
    "killed": ("killed", "the process was killed from outside (SIGKILL)"),
    "sibling-crash": (
        "killed",
        "the launcher stopped this process (SIGTERM) because another process of the job "
        "ended: the real error is in that one's log",
    ),
    "worker-died": ("worker-died", "a Ray worker or actor died without a cause of its own in the log"),
    "trainer-bug": (
        "unknown",
        "the training framework's own code failed (a None where an object was expected, an "
        "index out of range, a group not set up) on a path the user did not configure wrongly",
    ),
    "unknown": ("unknown", "an error no family above explains (the first error is said in full)"),
    "warning-only": ("none", "the log shows warnings and no failure, and no sign of work done either"),
    "healthy-run": ("none", "the log shows no failure"),
}
