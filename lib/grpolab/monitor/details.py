"""What a cause's own lines say beyond its id: the rejected key and the nearest valid key of the installed verl's
config (grpolab.verl.config reads it as data); for a batch or a layout, the numbers, the recipe key to change and
its nearest valid values, from the rules' own maths (grpolab.rules.maths); what an HCCL/NCCL error code means.

    explain(cause, lines, facts) -> Extra(message, fix, key, rule)
    read_facts(line, facts)          settings a log prints on its command line (rollout.n=8, train_batch_size=...)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from grpolab.problems import closest
from grpolab.recipe.dotted import get_dotted
from grpolab.recipe.engines import FSDP, MEGATRON
from grpolab.rules.maths import divisors, listed, multiples_near, nearest
from grpolab.verl.config import base_config
from grpolab.verl.fieldmap import KEYS, field_of

FACTS = "facts"  # the prefilter's owner of FACT_WORDS
FACT_WORDS = ("rollout.n=", "n_samples=", "train_batch_size=", "ppo_mini_batch_size=", "n_gpus_per_node=", "nnodes=")
_FACT = re.compile(
    r"(?:^|[\s'\"])\+?(?:[\w.]+\.)?(rollout\.n|n_samples|train_batch_size|ppo_mini_batch_size|n_gpus_per_node|nnodes)"
    r"=(\d+)\b"
)

# HcclResult (CANN's inc/hccl/hccl_types.h, as vendored in Ascend/pytorch third_party/hccl; read 2026-12-02): the
# code an `HCCL function error: ..., error code is N` line ends with
HCCL_CODES = {
    1: "a parameter error (HCCL_E_PARA: often the rank table or a device id that does not match the devices)",
    2: "an empty pointer (HCCL_E_PTR)",
    3: "memory (HCCL_E_MEMORY)",
    4: "an internal error (HCCL_E_INTERNAL: often CANN and the driver at versions that do not fit)",
    5: "an unsupported feature (HCCL_E_NOT_SUPPORT: the CANN version)",
    6: "a resource not found (HCCL_E_NOT_FOUND)",
    7: "a resource unavailable (HCCL_E_UNAVAIL: the device is held by another process)",
    8: "a system call error (HCCL_E_SYSCALL)",
    9: "a timeout (HCCL_E_TIMEOUT: a rank did not join in time; HCCL_CONNECT_TIMEOUT)",
    10: "a file that could not be opened (HCCL_E_OPEN_FILE_FAILURE: the rank table path)",
    11: "a TCP connection failure (HCCL_E_TCP_CONNECT: HCCL_SOCKET_IFNAME, firewalls, HCCL_IF_BASE_PORT)",
    12: "a RoCE connection failure (HCCL_E_ROCE_CONNECT: the device NICs, `hccn_tool`)",
    13: "a TCP transfer failure (HCCL_E_TCP_TRANSFER)",
    14: "a RoCE transfer failure (HCCL_E_ROCE_TRANSFER)",
    15: "a runtime call failure (HCCL_E_RUNTIME: the CANN runtime)",
    16: "a driver call failure (HCCL_E_DRV: the driver version)",
    17: "a profiling error (HCCL_E_PROFILING)",
    18: "a CCE error (HCCL_E_CCE)",
    19: "a network error (HCCL_E_NETWORK)",
    20: "try again (HCCL_E_AGAIN)",
    21: "an error on a remote rank (HCCL_E_REMOTE: look at the other ranks' logs)",
}
# ncclResult_t (NVIDIA/nccl src/nccl.h.in)
NCCL_CODES = {
    "ncclUnhandledCudaError": "a CUDA call failed inside NCCL (the driver, the device)",
    "ncclSystemError": "a system call failed (sockets, shared memory: NCCL_SOCKET_IFNAME, /dev/shm size)",
    "ncclInternalError": "an internal error (often NCCL versions that differ between nodes)",
    "ncclInvalidArgument": "an invalid argument",
    "ncclInvalidUsage": "invalid usage (e.g. two ranks on one device)",
    "ncclRemoteError": "an error on a remote rank or the network",
}


@dataclass
class Extra:
    message: str = ""
    fix: str = ""
    key: str | None = None
    rule: str | None = None  # the `grpolab check` rule that finds it; None: the cause's own, "": none applies


def read_facts(line: str, facts: dict[str, str]) -> None:
    for name, value in _FACT.findall(line):
        facts.setdefault(name, value)


_PRODUCT = re.compile(r"\((\d+) ?[x*\u00d7] ?(\d+)\)")  # TRL's "(3 x 8)": processes x per-device batch


def explain(cause: str, lines: list[str], facts: dict[str, str], previous: list[str] | None = None) -> Extra:
    """`previous`: the line before each of `lines` in the log (pydantic names a field on the line above its error)."""
    handler = _HANDLERS.get(cause)
    if handler is None:
        return Extra()
    if cause == "config-key" and previous:  # pydantic: `field.path` on one line, `Extra inputs are not ...` below
        lines = [
            f"Could not override '{above.strip()}'" if _EXTRA_INPUT.search(line) and _LOCATION.match(above) else line
            for line, above in zip(lines, previous)
        ]
    lines = [_PRODUCT.sub(lambda m: f"({int(m.group(1)) * int(m.group(2))})", line) for line in lines]
    for index, line in enumerate(lines):
        if cause == "config-key" and _FULL_KEY.search(line):
            continue  # the full key OmegaConf prints under its error: added to the error's own key below
        extra = handler(line, facts)
        if extra is not None:
            if cause == "config-key":  # `Key 'a' is not in struct` names the parent of `Could not override 'a.b'`
                deeper = (handler(text, facts) for text in lines[index + 1 :] if not _FULL_KEY.search(text))
                extra = next((e for e in deeper if e and e.key and e.key.startswith(f"{extra.key}.")), extra)
            full = next((m.group(1) for text in lines if (m := _FULL_KEY.search(text))), None)
            if cause == "config-key" and full and full != extra.key:
                out = _config_key(f"Could not override '{full}'", facts)  # the key as a person writes it: dotted
                if out and extra.key and extra.key.startswith(f"{full}."):  # an override under a key not there
                    said = f"The rejected key: {extra.key} ({full} is not in the config)"
                    out.message = out.message.replace(f"The rejected key: {full}", said, 1)
                    out.key = extra.key  # the key as the launch wrote it
                return out
            return extra
    return Extra()


_FULL_KEY = re.compile(r"^\s*full_key: ([\w.\-\[\]]+)")
_EXTRA_INPUT = re.compile(r"Extra inputs are not permitted")
_LOCATION = re.compile(r"^\s*[A-Za-z_][\w.\-\[\]]*\s*$")  # pydantic's error location: `teacher_gpu_ids`, `a.b.0`


# ---------------------------------------------------------------------------------------------- config-key
_KEY = re.compile(
    r"Could not override '([^'\n]+)'|Key '([^'\n]+)' is not in struct|ConfigAttributeError: Key '([^'\n]+)'|"
    r"An item is already at '([^'\n]+)'|Error merging override \+?([\w.\-]+)|Could not delete from config\. "
    r"'([^'\n]+)'|unexpected keyword argument '([^'\n]+)'|unrecognized arguments: (\S+)|"
    r"Missing mandatory value: ([\w.\-]+)|(?:key|option|field)s?[: ]+'?([\w.\-]+)|full_key: ([\w.\-]+)",
    re.IGNORECASE,
)


def nearest_verl_key(key: str) -> str | None:
    """The installed verl's config key nearest to `key` (a dotted key under one of its top-level sections), or
    None (no verl, or nothing near)."""

    parts = key.lstrip("+~").split(".")
    for engine in (FSDP.name, MEGATRON.name):
        config = base_config(engine)
        if not config or parts[0] not in config:
            continue
        node, prefix = config, []
        for part in parts[:-1]:
            if isinstance(node, dict) and part in node:
                node, prefix = node[part], prefix + [part]
            else:
                break
        if not isinstance(node, dict):
            continue
        rest = parts[len(prefix) :]
        near = closest(rest[0], node)
        if near and near != rest[0]:
            return ".".join(prefix + [near])
        if near and len(rest) > 1 and isinstance(sub := get_dotted(config, ".".join(prefix + [near])), dict):
            if inner := closest(rest[1], sub):
                return ".".join(prefix + [near, inner])
    return None


def _config_key(line: str, facts) -> Extra | None:
    m = _KEY.search(line)
    if not m:
        return None
    key = next(g for g in m.groups() if g)
    if "Missing mandatory value" in line:  # OmegaConf's `???`: the key is known and has no default, set it
        return Extra(f"The key without a value: {key}", f"set {key} (the config has no default for it)", key)
    near = nearest_verl_key(key)
    message = f"The rejected key: {key}"
    if near:
        owner = field_of(near)
        message += f"; the nearest key of the installed verl's config: {near}" + (
            f" (the recipe field {owner})" if owner else ""
        )
        fix = f"rename {key} to {near}" + (f" (in a recipe: {owner})" if owner else "")
    else:
        fix = f"remove or correct {key} (the installed version has no such argument or key)"

    config = base_config(FSDP.name) or {}
    verl_key = "." in key and key.lstrip("+~").split(".")[0] in config
    return Extra(message, fix, key, None if verl_key else "")


# ---------------------------------------------------------------------------------------------- batches
_CHUNK = re.compile(r"size of DataProto (\d+) and chunk (\d+)", re.IGNORECASE)
_TWO = re.compile(  # (a name is matched from its first character only, and every repeat is bounded: linear)
    r"(?<![\w.])([A-Za-z_][\w.]{0,80}(?: [a-z_]{1,40}){0,5}?)\W{0,3}?[ (=:]{1,4}(\d+)\)?[^\n\d]{0,80}?(?:divisible "
    r"by|multiple of|divide|%)\W{0,4}(?:(?<![\w.])([A-Za-z_][\w.]{0,80}(?: [a-z_]{1,40}){0,5}?))?\W{0,3}?[ (=:]{0,4}"
    r"(\d+)"
)


_AT_LEAST = re.compile(
    r"(?<![\w.])([A-Za-z_][\w.]{0,80}) \(?(\d+)\)? (?:must|should) be (?:>=|at least|larger than or equal to|no "
    r"smaller than) ([A-Za-z_][\w.]{0,80}) \(?(\d+)"
)


def _recipe_key(name: str) -> str | None:
    """The recipe field behind a verl name a message prints (ppo_mini_batch_size -> algorithm.ppo_mini_batch_size),
    from the one field map."""

    name = name.strip().split(".")[-1].replace(" ", "_")
    for row in KEYS:
        if row.verl.split(".")[-1] == name or row.field.split(".")[-1] == name:
            return row.field
    return None


# Engine arguments spelled otherwise than the verl key that sets them: the engine's name -> verl's key leaf (verl
# 0.9.1's vllm_rollout passes tensor_parallel_size=config.tensor_model_parallel_size; its SGLang server passes
# mem_fraction_static=config.gpu_memory_utilization and max_running_requests=config.max_num_seqs)
_ENGINE_SPELLING = {
    "tensor_parallel_size": "tensor_model_parallel_size",
    "mem_fraction_static": "gpu_memory_utilization",
    "max_running_requests": "max_num_seqs",
    "tp_size": "tensor_model_parallel_size",
    "max_tokens": "max_response_length",
}
# vLLM's words for an argument it names in a message ("less than desired GPU memory utilization (0.9, 19.84 GiB)")
_SPELLED = re.compile(r"\b[GN]PU memory utilization \(", re.IGNORECASE)
_ARGUMENT = re.compile(r"(?<![\w.])(?:--)?([a-z][a-z0-9]*(?:[_-][a-z0-9]+)+)\b`?\)?(?:[ :=]+\(?(-?[\d.]+)\)?)?")


def engine_arguments(message: str) -> list[tuple[str, str, str | None]]:
    """The arguments an engine's error message names: (name, the value it gives or "", the recipe field through the
    field map or None), the ones with a recipe field first."""
    found: dict[str, tuple[str, str, str | None]] = {}
    message = _SPELLED.sub("gpu_memory_utilization (", message)
    for m in _ARGUMENT.finditer(message):
        name = m.group(1).replace("-", "_")
        if name in found or len(found) >= 6:
            continue
        field = _recipe_key(_ENGINE_SPELLING.get(name, name))
        if field is None and "_" not in name:
            continue
        found[name] = (name, m.group(2) or "", field)
    return sorted(found.values(), key=lambda t: t[2] is None)


def _batch(line: str, facts) -> Extra | None:
    if m := _CHUNK.search(line):
        size, chunks = int(m.group(1)), int(m.group(2))
        n = int(facts.get("rollout.n") or facts.get("n_samples") or 0)
        message = (
            f"The batch of {size} samples does not split into {chunks} equal chunks (verl's DataProto.chunk: the "
            "rollout's agent-loop workers or the data-parallel ranks)"
        )
        if n and size % n == 0:
            prompts = size // n
            step = chunks // math.gcd(n, chunks)
            valid = nearest(prompts, multiples_near(prompts, step))
            message += f"; it is data.train_batch_size {prompts} x rollout.n (the group size) {n}"
            fix = f"set data.train_batch_size to one of {listed(valid)} (x {n} a multiple of {chunks})"
        else:
            valid = nearest(size, multiples_near(size, chunks))
            fix = (
                f"make data.train_batch_size x rollout.n a multiple of {chunks} (nearest valid totals: {listed(valid)})"
                f", or the chunks a divisor of {size}: {listed(nearest(chunks, divisors(size)))}"
            )
        return Extra(message, fix, "data.train_batch_size", "dispatch-chunk")
    if m := _AT_LEAST.search(line):
        small, a, large, b = m.group(1), int(m.group(2)), m.group(3), int(m.group(4))
        key_a, key_b = _recipe_key(small) or small, _recipe_key(large) or large
        return Extra(
            f"{small} = {a} is smaller than {large} = {b}",
            f"lower {key_b} to a divisor of {a} ({listed(nearest(b, divisors(a)))}) or raise {key_a} to {b} or more",
            key_b,
            "mini-batch",
        )
    if m := _TWO.search(line):
        name, value, by_name, by = m.group(1), int(m.group(2)), (m.group(3) or "").strip(), int(m.group(4))
        if by <= 0:
            return None
        key = _recipe_key(name)
        valid = nearest(value, multiples_near(value, by))
        message = f"{name.strip()} = {value} is not a multiple of {by_name + ' = ' if by_name else ''}{by}"
        if n := facts.get("rollout.n"):
            message += f" (rollout.n, the group size, is {n})"
        rule = "mini-batch" if "mini" in name and "micro" not in line.lower() else "batch-divisible"
        if key is None:
            return Extra(message, f"make {name.strip()} a multiple of {by} (nearest: {listed(valid)})", None, rule)
        return Extra(message, f"set {key} to one of {listed(valid)}", key, rule)
    return None


# ---------------------------------------------------------------------------------------------- layouts
_PARALLEL = {"tensor": "tp", "tp": "tp", "pipeline": "pp", "pp": "pp", "expert": "ep", "ep": "ep", "context": "cp"}


def _layout(line: str, facts) -> Extra | None:
    m = _TWO.search(line)
    if not m:
        return None
    what, total, by_name, size = m.group(1).strip(), int(m.group(2)), (m.group(3) or "").lower(), int(m.group(4))
    if re.search(r"parallel|\b(?:tp|pp|ep|cp)\b", what, re.IGNORECASE) and not re.search(
        r"parallel|\b(?:tp|pp|ep|cp)\b", by_name
    ):  # "TP size (3) must divide the heads (32)": the divisor is named first
        what, total, by_name, size = by_name.strip() or "the model", size, what.lower(), total
    # Megatron writes tensor_model_parallel_size; vLLM and SGLang "tensor parallel size" in words
    words = re.search(r"vllm|sglang|engine|rollout|(?:tensor|pipeline|expert) parallel size", line, re.IGNORECASE)
    side = "rollout" if words else "train"
    short = next((s for word, s in _PARALLEL.items() if word in by_name.split() or by_name.startswith(word)), None)
    if short is None or total <= 0:
        if re.search(r"(?:Error|Exception)$", what) or not by_name:  # ensure_divisibility: bare numbers
            return Extra(
                f"{total} (a model dimension split over ranks: heads, experts, vocabulary) is not divisible by {size} "
                "(a parallel size)",
                f"use a parallel size that divides {total}: {listed(nearest(size, [d for d in divisors(total) if d != size]))}",
            )
        return Extra(f"{what} = {total} does not fit {by_name or 'the layout'} = {size}")
    key = f"{side}.{short}"
    valid = [d for d in divisors(total) if d != size]
    if short == "tp":
        check = "rollout-heads" if side == "rollout" else "heads-tp"
    elif short == "pp":
        check = "pp-layers"
    elif short == "ep":
        check = "rollout-ep" if side == "rollout" else "experts-ep"
    else:
        check = "world-divisible"
    return Extra(
        f"{what} = {total} is not divisible by {by_name} = {size} ({key})",
        f"set {key} to a divisor of {total}: {listed(nearest(size, valid))}",
        key,
        check,
    )


# ---------------------------------------------------------------------------------------------- communicators
_HCCL_CODE = re.compile(
    r"(?<!\w)(hccl\w{1,60})(?:\([^\n]{0,300}?\))?, error code is (\d+)|HCCL error[^\n]{0,40}?\b(?:code|ret)[ :=]{1,4}"
    r"(\d+)",
    re.IGNORECASE,
)
_NCCL_CODE = re.compile(
    r"\b(nccl(?:UnhandledCudaError|SystemError|InternalError|InvalidArgument|InvalidUsage|"
    r"RemoteError))\b"
)


def _comm(line: str, facts) -> Extra | None:
    if m := _HCCL_CODE.search(line):
        code = int(m.group(2) or m.group(3))
        call = m.group(1) or "HCCL"
        if meaning := HCCL_CODES.get(code):
            return Extra(f"{call} returned HCCL error code {code}: {meaning}")
    if m := _NCCL_CODE.search(line):
        return Extra(f"NCCL returned {m.group(1)}: {NCCL_CODES[m.group(1)]}")
    return None


_HANDLERS = {
    "config-key": _config_key,
    "batch-divisible": _batch,
    "layout-mismatch": _layout,
    "comm-init": _comm,
    "comm-timeout": _comm,
}
