"""The library a traceback frame's file lives in (vllm, verl, torch, the standard library, the user's own code):
the folder after site-packages / dist-packages, else the nearest folder of a known library in a source checkout,
read by the first-error layer (grpolab.monitor.firsterror) and the families (grpolab.monitor.families).

    library_of(path) -> str    one of KNOWN, another installed package's name, STDLIB or USER
    TRAINERS, ENGINES          the RL frameworks; the engines whose own checks are configuration checks
"""

from __future__ import annotations

import re

# The library a file path lives in: the folder after site-packages / dist-packages, else the nearest folder of a
# known library (a source checkout: /workspace/verl/verl/workers/...), else the standard library or the user's code.
KNOWN = tuple(
    """
    vllm_ascend vllm sglang sgl_kernel mindspeed_rl mindspeed_llm mindspeed megatron verl ray torch_npu
    torch transformers hydra omegaconf trl deepspeed accelerate peft flash_attn openrlhf nemo_rl nemo
    slime areal realhf roll prime_rl math_verify datasets pyarrow pandas numpy pydantic triton
    safetensors tensordict xformers wandb chatlearn skyrl torchdata swift llamafactory llmtuner rllm
    """.split()
)
# the RL frameworks: subpackages named after libraries are theirs (slime/ray); their own plain errors, trainer-bug
TRAINERS = (
    *("verl", "prime_rl", "slime", "openrlhf", "areal", "realhf", "trl", "nemo_rl", "roll", "chatlearn", "skyrl"),
    *("swift", "llamafactory", "llmtuner", "rllm"),  # ms-swift's, LLaMA-Factory's (its older name), rLLM's
)
# a distribution's name -> the package it installs, where they differ (vllm-ascend, megatron-core)
_NAMES = {name: name for name in KNOWN} | dict((("vllm-ascend", "vllm_ascend"), ("megatron_core", "megatron")))
# families of packages whose names carry a suffix (mindspeed_llm, megatron_core): the family unless KNOWN has the name
_PREFIXED = ("mindspeed", "megatron")
_SITE = re.compile(r"[/\\](?:site|dist)-packages[/\\]([^/\\]+)")
_STDLIB = re.compile(r"[/\\]lib(?:64)?[/\\]python\d(?:\.\d+)?[/\\]|^<frozen |^<string>|^<stdin>")
STDLIB = "python"  # the standard library
USER = "user code"  # the user's own code (a reward function, a data loader, a launch script)
ENGINES = ("vllm", "vllm_ascend", "sglang", "megatron", "mindspeed", "verl")


def library_of(path: str) -> str:
    """The library `path` (a traceback frame's file) lives in: one of KNOWN (vllm, verl, torch, ...), another
    installed package's name, STDLIB or USER."""
    if m := _SITE.search(path):
        name = re.sub(r"\.py$|-[\d.]+.*$", "", m.group(1))
        return _canonical(name)
    if _STDLIB.search(path):  # (the standard library of an environment named after a library: envs/sglang/lib/...)
        return STDLIB
    parts = re.split(r"[/\\]", path)
    folders = parts[:-1]
    names = [_canonical(part) for part in folders]
    for i in reversed(range(len(folders))):
        if (name := names[i]) in KNOWN:
            # a trainer's own subpackage named after a library (slime/slime/ray, openrlhf/trainer/ray,
            # verl/utils/megatron) is the trainer's, unless a checkout of that library lies between them
            # (verl/Megatron-LM/megatron)
            outer = next((j for j in range(i) if names[j] in TRAINERS and names[j] != name), None)
            if outer is not None and name not in names[outer + 1 : i]:
                return names[outer]
            return name
    for above, part in zip(folders, folders[1:]):  # a source checkout: ChatLearn/chatlearn/..., repo/src/package/...
        if above.lower().replace("-", "_") == part.lower() or (above == "src" and part != parts[-1]):
            return _canonical(part)
    return USER


def _canonical(name: str) -> str:
    low = name.lower()
    under = low.replace("-", "_")
    for family in _PREFIXED:
        if low.startswith(family):
            return under if under in KNOWN else family
    return _NAMES.get(low, _NAMES.get(under, low))
