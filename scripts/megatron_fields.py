"""Regenerate lib/grpolab/data/megatron_fields.json: the field names of megatron-core's TransformerConfig and
OptimizerConfig, which rule `unknown-override` checks `train.transformer` / `train.optimizer` keys against.

megatron-core needs torch and a GPU stack to import, so the fields are read from its source with `ast`.
Command (reads a wheel, no install needed):
    .venv/bin/pip download --no-deps megatron-core==0.16.1 -d /tmp/mc
    .venv/bin/python scripts/megatron_fields.py /tmp/mc/megatron_core-0.16.1-*.whl
"""

from __future__ import annotations

import ast
import json
import sys
import zipfile
from pathlib import Path

CLASSES = {
    "transformer": {
        "megatron/core/model_parallel_config.py": ["ModelParallelConfig"],
        "megatron/core/transformer/transformer_config.py": ["TransformerConfig", "MLATransformerConfig"],
    },
    "optimizer": {
        "megatron/core/optimizer/optimizer_config.py": ["OptimizerConfig", "AdamOptimizerConfig", "SGDOptimizerConfig"],
    },
}

# TransformerConfig keys that MindSpeed (Ascend) adds on top of megatron-core; the seed recipes use them.
ASCEND_EXTRAS = [
    "context_parallel_algo",
    "dsa_grouped_recompute",
    "swiglu",
    "use_ascend_mc2",
    "use_dsa_absorb",
    "use_flash_attn",
    "use_fused_lightning_indexer",
    "use_fused_lightning_indexer_kl_loss",
    "use_fused_rmsnorm",
    "use_fused_sparse_flash_attention",
    "use_fused_swiglu",
    "use_naive_l2norm",
]


def dataclass_fields(source: str, names: list[str]) -> set[str]:
    fields = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name in names:
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    fields.add(stmt.target.id)
    return fields


def main(wheel: str) -> None:
    with zipfile.ZipFile(wheel) as zf:
        version = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA")).split("-")[1].split(".dist")[0]
        out = {"megatron_core": version}
        for group, files in CLASSES.items():
            names: set[str] = set()
            for path, classes in files.items():
                names |= dataclass_fields(zf.read(path).decode(), classes)
            out[group] = sorted(names)
    out["ascend_extras"] = sorted(set(ASCEND_EXTRAS) - set(out["transformer"]))
    target = Path(__file__).resolve().parents[1] / "lib/grpolab/data/megatron_fields.json"
    target.write_text(json.dumps(out, indent=0) + "\n")
    print(f"wrote {target}: {len(out['transformer'])} transformer, {len(out['optimizer'])} optimizer fields")


if __name__ == "__main__":
    main(sys.argv[1])
