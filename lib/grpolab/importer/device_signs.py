"""What a launch script's own environment says about its device, when it names no device: variables only
Ascend's stack reads. verl's main_ppo picks npu by itself on an Ascend machine, so an NPU script often names no
device; its exported variables still say where it runs (the held-out 2026 NPU scripts, tests/data/corpus/README.md).
"""

from __future__ import annotations

from collections.abc import Mapping

# read only by Ascend's stack: the runtime (ASCEND_RT_VISIBLE_DEVICES, ASCEND_LAUNCH_BLOCKING, ...: CANN's
# environment variable reference), HCCL (HCCL_CONNECT_TIMEOUT, HCCL_EXEC_TIMEOUT, ...: CANN's HCCL docs) and
# vLLM-Ascend (VLLM_ASCEND_*: vllm_ascend/envs.py)
ASCEND_PREFIXES = ("ASCEND_", "HCCL_", "VLLM_ASCEND_")


def ascend_signs(env: Mapping[str, str]) -> list[str]:
    """The variables among `env` that only an Ascend NPU stack reads (sorted); empty for a script that sets none."""
    return sorted(name for name in env if name.startswith(ASCEND_PREFIXES))
