"""How long `grpolab data` takes to sample a big parquet: it reads only the first data.sample_rows rows (pyarrow's
batch reader), so a 1 GB file costs what its first rows cost. Writes a file of --mb MB of verl-format rows (random
text, which parquet cannot compress away) twice: in row groups of 10,000 rows (what `datasets`/pandas write) and as
one row group; times the sample read in a fresh process and `grpolab data RECIPE --no-dry-run --no-tokenizer` as a
whole process. Target: under 2 s for 1 GB.

    .venv/bin/python benchmarks/data_sample.py --mb 1024
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
ROW_BYTES = 2000  # prompt characters per row


def write(path: Path, mb: int, row_group: int | None) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = max(1, mb * 2**20 // ROW_BYTES)
    chunk = 10_000
    writer = None
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        table = pa.table(
            {
                "data_source": ["openai/gsm8k"] * n,
                "prompt": [[{"role": "user", "content": os.urandom(ROW_BYTES // 2).hex()}] for _ in range(n)],
                "reward_model": [{"style": "rule", "ground_truth": str(start + i)} for i in range(n)],
                "extra_info": [{"split": "train", "index": start + i} for i in range(n)],
            }
        )
        if writer is None:
            writer = pq.ParquetWriter(str(path), table.schema, compression="snappy")
        writer.write_table(table, row_group_size=row_group or rows)
    writer.close()
    return rows


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=1024, help="size of the file to sample, MB")
    args = parser.parse_args()
    read = (
        "import sys, time; from grpolab.verl.dataset import sample; t = time.perf_counter(); "
        "s = sample('data.train_files', sys.argv[1], 256); assert len(s.rows) == 256 or s.total < 256, s.error; "
        "print(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for label, group in (("row groups of 10,000 rows", 10_000), ("one row group", None)):
            path = Path(tmp) / "train.parquet"
            start = time.perf_counter()
            rows = write(path, args.mb, group)
            wrote = time.perf_counter() - start
            size = path.stat().st_size / 2**20
            out = subprocess.run([sys.executable, "-c", read, str(path)], check=True, capture_output=True, text=True)
            recipe = Path(tmp) / "r.yaml"
            recipe.write_text(f"defaults: [base]\ndata:\n  train_files: {path}\n  val_files: {path}\n")
            whole = timed([GRPOLAB, "data", str(recipe), "--no-dry-run", "--no-tokenizer"])
            print(
                f"{size:,.0f} MB parquet, {rows:,} rows, {label} (written in {wrote:.1f} s): sample of 256 rows "
                f"read in {float(out.stdout):.3f} s (pyarrow's import included); `grpolab data RECIPE --no-dry-run --no-tokenizer` whole process "
                f"{whole:.2f} s (target: under 2 s)"
            )
            path.unlink()


if __name__ == "__main__":
    main()
