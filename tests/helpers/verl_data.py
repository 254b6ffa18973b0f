"""verl-format data rows and the parquet writer that tests/test_data.py and tests/test_reward.py share (this folder
is put on sys.path by them; no package: verl's wheel installs a top-level `tests` package that would shadow ours)."""

from __future__ import annotations

from pathlib import Path


def verl_row(i: int, source: str = "openai/gsm8k", prompt=None) -> dict:
    """Row i of a verl-format math set: `What is i + 1?` as a chat prompt, its answer as the ground truth."""
    return {
        "data_source": source,
        "prompt": prompt if prompt is not None else [{"role": "user", "content": f"What is {i} + 1?"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": str(i + 1)},
        "extra_info": {"split": "train", "index": i},
    }


def parquet(path: Path, rows: list[dict]) -> str:
    """rows written to path as one parquet table; the path as a string (for a recipe override)."""
    import pyarrow as pa  # heavy: only the tests that write parquet load it
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)
