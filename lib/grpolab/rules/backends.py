"""Attention backends of the rollout engine: one the device can run (SGLang on NPU needs `ascend`; `ascend` needs
an NPU), and the field only where it is read.
"""

from __future__ import annotations

from grpolab.rules.checks import Checks
from grpolab.rules.view import ROLL, override, verl_engine


def rollout_backend(c: Checks) -> None:
    """SGLang on NPU needs the Ascend attention backend."""
    r = c.r
    ro = r.rollout
    if not verl_engine(r):
        return
    backend = (
        ro.attention_backend
        or ro.engine_kwargs.get("attention_backend")
        or override(r, f"{ROLL}.engine_kwargs.sglang.attention_backend", None)
    )
    if ro.engine == "sglang" and r.cluster.device == "npu" and backend != "ascend":
        c.add(
            "rollout-backend",
            "rollout.attention_backend",
            backend,
            f"SGLang on NPU needs attention_backend `ascend`; with {backend or 'none set'} verl picks "
            f"{'it' if backend else 'fa3 / flashinfer'}, CUDA kernels that fail when the rollout starts",
            "set rollout.attention_backend: ascend",
        )
    elif ro.engine == "sglang" and r.cluster.device == "cuda" and backend == "ascend":
        c.add(
            "rollout-backend",
            "rollout.attention_backend",
            backend,
            "the `ascend` attention backend needs Ascend NPUs; this recipe runs on CUDA",
            "set rollout.attention_backend: null (SGLang's default) or a CUDA backend (fa3, flashinfer)",
        )
    elif ro.engine != "sglang" and ro.attention_backend is not None:
        c.add(
            "rollout-backend",
            "rollout.attention_backend",
            ro.attention_backend,
            f"rollout.attention_backend applies to SGLang only; rollout.engine {ro.engine} ignores it",
            "remove rollout.attention_backend",
            severity="warning",
        )
