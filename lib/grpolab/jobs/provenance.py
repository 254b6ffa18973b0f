"""What a run records so that it can be reproduced and continued.

At launch (grpolab.jobs.launch.submit) every run's launch.json gets a `provenance` block:
    seed            trainer.seed: verl's data loader, actor, rollout and Megatron/FSDP seeds all render from it;
                    the local trainer's warm-up, data order and TRL's sampling use it
    recipe_sha256   a hash of the resolved recipe (secrets redacted): two runs with the same hash ran the same recipe
    data            a fingerprint of every data file: its size and the sha256 of its bytes; a file the launcher
                    cannot read (it lives on the cluster) is recorded as such. A relative path is read where
                    `grpolab data` reads it (grpolab.paths.recipe_relative).
and its `versions` gain `packages()`: the installed versions of the stack that shapes a run and of every package
the recipe pins. `grpolab resume` refuses a run whose data no longer match these fingerprints (the saved data
position would index other samples); `grpolab compare` and 06_compare list what differs between runs' records
(grpolab.monitor.rundiff) before their curves.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from grpolab.paths import recipe_relative
from grpolab.recipe import stack
from grpolab.recipe.dotted import get_dotted
from grpolab.verl.dataset import data_files

CHUNK = 1 << 20
# besides the launch record's own `versions`: what else changes a run's numbers or its checkpoints
PACKAGES = (
    "grpolab",
    "verl",
    "ray",
    "torch",
    "transformers",
    "trl",
    "accelerate",
    "datasets",
    "numpy",
    "pyarrow",
    "megatron-core",
    "mbridge",
    "vllm",
    "vllm-ascend",
    "sglang",
    "torch_npu",
)


def fingerprint(path: str, recipe: Any, key: str) -> dict:
    """{bytes, sha256} of one data file (`key` names it in the recipe), {error} when it cannot be read here."""
    full = recipe_relative(path, recipe.origin(key))
    try:
        stat = full.stat()
        digest = hashlib.sha256()
        with open(full, "rb") as fh:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                digest.update(chunk)
    except OSError as exc:
        return {"error": f"not readable here ({exc.strerror or exc}): on the cluster's nodes only?"}
    return {"bytes": stat.st_size, "sha256": digest.hexdigest()}  # no mtime: a copy of the same bytes is the same data


def fingerprints(recipe: Any) -> dict[str, dict]:
    """file -> fingerprint, for every data file of the recipe."""
    return {path: {"key": key, **fingerprint(path, recipe, key)} for key, path in data_files(recipe)}


def recipe_hash(recipe_data: dict) -> str:
    return hashlib.sha256(json.dumps(recipe_data, sort_keys=True, default=str).encode()).hexdigest()


def packages(recipe: Any = None) -> dict[str, str | None]:
    """Installed versions of PACKAGES and of every package the recipe's `stack` pins."""
    names = list(PACKAGES) + [n for n in (get_dotted(recipe, "stack") or {}) if n not in PACKAGES]
    return {name: stack.installed(name)[0] for name in names}


def record(recipe: Any, recipe_data: dict) -> dict:
    """The launch record's `provenance` block; `recipe_data` is the recipe as written to recipe.yaml (redacted).
    The package versions go into the record's `versions` (`packages`), beside the launcher's own."""
    return {
        "seed": get_dotted(recipe, "trainer.seed"),
        "recipe_sha256": recipe_hash(recipe_data),
        "data": fingerprints(recipe),
    }


def changed_data(recorded: dict[str, dict], now: dict[str, dict]) -> list[str]:
    """Sentences naming each data file that is not what the parent run trained on."""
    out = []
    for path in sorted(set(recorded) | set(now)):
        then, current = recorded.get(path), now.get(path)
        if then is None:
            out.append(f"{current['key']} {path}: not a data file of the run (the --set changes its data files)")
        elif current is None:
            out.append(f"{then['key']} {path}: the run trained on it; the resumed recipe no longer names it")
        elif "sha256" in then and "sha256" in current and then["sha256"] != current["sha256"]:
            size = f", {then.get('bytes')} -> {current.get('bytes')} bytes" if "bytes" in then else ""
            out.append(
                f"{then['key']} {path}: changed since the run (sha256 {then['sha256'][:12]} -> "
                f"{current['sha256'][:12]}{size})"
            )
        elif "sha256" in then and "error" in current:
            out.append(f"{then['key']} {path}: fingerprinted at launch, {current['error']}")
    return out
