"""Fakes for preflight's tests, at the hardware/software boundary only: an Ascend toolkit's install-info file,
an `npu-smi` script, a package's dist-info, a model directory with config.json and weight shards, parquet
data files. Imported by tests/test_preflight*.py (this folder is put on sys.path; no package)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from grpolab.recipe.loader import load_card

NPU_SMI_910B = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.rc2                 Version: 24.1.rc2                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.6        40                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 90.1        41                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3161 / 65536         |
+===========================+===============+====================================================+
"""


def write_toolkit(root: Path, version: str, nested: bool = True) -> Path:
    """A fake Ascend toolkit: <root>/latest/<arch>/ascend_toolkit_install.info with `version=`."""
    folder = root / "latest" / "aarch64-linux" if nested else root / "aarch64-linux"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ascend_toolkit_install.info").write_text(
        f"package_name=Ascend-cann-toolkit\nversion={version}\ninnerversion=V100R001\narch=aarch64\n"
    )
    return root


def write_npu_smi(bindir: Path, text: str = NPU_SMI_910B) -> Path:
    bindir.mkdir(parents=True, exist_ok=True)
    script = bindir / "npu-smi"
    script.write_text("#!/bin/sh\ncat <<'EOF'\n" + text + "EOF\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def write_dist(site: Path, name: str, version: str) -> None:
    """A package's metadata only (what grpolab.recipe.stack.installed reads): <site>/<name>-<version>.dist-info/METADATA."""
    folder = site / f"{name.replace('-', '_')}-{version}.dist-info"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def write_model(folder: Path, card_name: str, shards: int = 2, present: int = 2, **config_changes) -> Path:
    card = load_card(card_name)
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "model_type": card.model_type,
        "num_hidden_layers": card.num_layers,
        "hidden_size": card.hidden_size,
        "num_attention_heads": card.num_heads,
        "num_key_value_heads": card.num_kv_heads,
        "num_experts": card.num_experts,
        "num_experts_per_tok": card.active_experts,
        "vocab_size": card.vocab_size,
        "max_position_embeddings": card.context_length,
        **config_changes,
    }
    (folder / "config.json").write_text(json.dumps(config))
    names = [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": {f"w{i}": n for i, n in enumerate(names)}})
    )
    for name in names[:present]:
        (folder / name).write_bytes(b"")
    return folder


def write_parquet(path: Path, reward: bool = True, ground_truth: bool = True) -> Path:
    columns = {"data_source": ["gsm8k"], "prompt": [[{"role": "user", "content": "1+1?"}]]}
    if reward:
        columns["reward_model"] = [{"ground_truth": "2", "style": "rule"} if ground_truth else {"style": "rule"}]
    pq.write_table(pa.table(columns), path)
    return path
