"""TRL's log names -> verl's metric names, and a JSONL writer in verl's file-logger format.

verl's `file` logger writes one line per step, `{"step": N, "data": {...}}`, to $VERL_FILE_LOGGER_PATH;
the local trainer writes the same lines with the same names so one monitor reads both. Every line is
flushed as it is written: a killed run keeps every finished step.

Pure Python: no torch import.
"""

from __future__ import annotations

import json
import math
import os
import resource
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grpolab import run_folder

# TRL 1.16 GRPOTrainer log key -> verl metric name.
TRL_TO_VERL = {
    "reward": "critic/score/mean",
    "reward_std": "critic/score/std",
    "completions/mean_length": "response_length/mean",
    "completions/max_length": "response_length/max",
    "completions/min_length": "response_length/min",
    "completions/clipped_ratio": "response_length/clip_ratio",
    "kl": "actor/kl_loss",
    "entropy": "actor/entropy",
    "clip_ratio/region_mean": "actor/pg_clipfrac",
    "grad_norm": "actor/grad_norm",
    "learning_rate": "actor/lr",
    "loss": "actor/pg_loss",
    "step_time": "timing_s/step",
}
# Computed by the local trainer (not TRL), already verl-named.
VAL_ACC = "val-core/arith/acc/mean@1"
SCORE_MAX = "critic/score/max"
SCORE_MIN = "critic/score/min"
THROUGHPUT = "perf/throughput"
TOTAL_TOKENS = "perf/total_num_tokens"
MAX_MEMORY = "actor/perf/max_memory_allocated_gb"
TESTING_TIME = "timing_s/testing"


def to_verl(logs: Mapping[str, Any]) -> dict[str, float]:
    """The TRL log entries that have a verl name, renamed; non-numbers and NaN dropped (JSON has no NaN)."""
    return {
        TRL_TO_VERL[key]: float(value)
        for key, value in logs.items()
        if key in TRL_TO_VERL
        and not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
    }


def max_rss_gb() -> float:
    """Peak resident memory of this process in GB.

    Stands in for verl's `actor/perf/max_memory_allocated_gb` (peak accelerator memory): on a CPU the
    model's memory is the process's memory.
    """
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is KiB on Linux, bytes on macOS.
    return peak / (1024**3 if sys.platform == "darwin" else 1024**2)


def metrics_path(run_dir: str | os.PathLike[str]) -> Path:
    """$VERL_FILE_LOGGER_PATH when set (as verl's file logger), else RUN_DIR/metrics.jsonl."""
    env = os.environ.get("VERL_FILE_LOGGER_PATH")
    return Path(env) if env else run_folder.metrics_file(run_dir)


class JsonlWriter:
    """Appends `{"step": N, "data": {...}}` lines, each flushed as soon as it is written.

    Flushing hands the line to the OS, so a killed process (SIGKILL included) loses nothing it wrote;
    no fsync per step: it would cost more than a tiny step and only guards against a machine crash.

    Truncates the file when opened, like verl's file logger at each start.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "w", encoding="utf-8")

    def write(self, step: int, data: Mapping[str, Any]) -> None:
        # as verl's file logger (orjson) does: a NaN or inf value is written as null, and the monitor reads a
        # logged null as NaN (its `nan` alert), so a diverged step is never silently dropped
        clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in data.items()}
        self._file.write(json.dumps({"step": int(step), "data": clean}) + "\n")
        self._file.flush()

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The lines of a metrics file (a torn last line, from a killed writer, is skipped)."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows
