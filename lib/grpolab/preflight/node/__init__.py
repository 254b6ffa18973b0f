"""Per-node checks: `node_checks(spec)` runs as a Ray task pinned to one node and returns that node's rows.

`spec` is a plain dict made on the driver by grpolab.preflight.spec.node_spec (nothing here reads the recipe
files: the nodes need not have params/). Each row is a dict {check, status, detail, fix}; the driver adds the
node name. The checks, one module per purpose:

    env       the environment as the job will see it (node env + recipe env), required variables
    devices   torch_npu / CANN / npu-smi, or CUDA
    packages  stack pins and required packages against what is installed (grpolab.recipe.stack parses both)
    files     model directory and weights, data files and columns, checkpoint directory and space
    limits    HCCL port ranges, open-file limit

What a worker imports to run them: the standard library, grpolab.recipe.stack and grpolab.recipe.files,
grpolab.recipe.secrets (redaction) and the report's statuses; pydantic only when a model card is compared, and
torch, torch_npu and pyarrow only inside a check, guarded (the device probes run in a child process with a
timeout). No row carries a secret's value: the job env's secrets are redacted from every row before it leaves
the node.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any

from grpolab.preflight.node.devices import check_devices
from grpolab.preflight.node.env import check_env, job_env
from grpolab.preflight.node.files import check_checkpoint, check_data, check_model
from grpolab.preflight.node.limits import check_nofile, check_ports
from grpolab.preflight.node.packages import check_stack
from grpolab.preflight.node.rows import FAIL, redact_rows, row


def _guard(name: str, fn: Callable[[], Any]) -> list[dict]:
    """Run one check; a bug or an unexpected error becomes a fail row, never a lost node report."""
    try:
        out = fn()
    except Exception as exc:  # one broken check must not hide the others
        said = f"the check itself failed: {type(exc).__name__}: {exc}"[:400]
        return [row(name, FAIL, said, "report this as a grpolab bug, with the recipe")]
    return out if isinstance(out, list) else [out]


def node_checks(spec: dict) -> dict:
    """Every per-node check on the node this task runs on. Returns {host, elapsed_s, rows}."""
    t0 = time.perf_counter()
    node_env = dict(os.environ)
    env = job_env(node_env, spec["env"])
    rows: list[dict] = []
    rows += _guard("device", lambda: check_devices(spec, env))
    rows += _guard("stack", lambda: check_stack(spec, env))
    rows += _guard("env", lambda: check_env(spec, node_env, env))
    rows += _guard("model", lambda: check_model(spec))
    rows += _guard("data", lambda: check_data(spec))
    rows += _guard("checkpoint", lambda: check_checkpoint(spec))
    rows += _guard("hccl-ports", lambda: check_ports(spec, env))
    rows += _guard("open-files", lambda: check_nofile(spec))
    rows = redact_rows(rows, env_of_recipe(spec, env), node_env, spec.get("secrets", []))
    return {"host": socket.gethostname(), "elapsed_s": time.perf_counter() - t0, "rows": rows}


def env_of_recipe(spec: dict, env: dict[str, str]) -> dict[str, str]:
    """The recipe's env entries as the job sees them (`${VAR}` expanded)."""
    return {name: env[name] for name in spec["env"] if name in env}
