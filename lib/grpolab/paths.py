"""Where things live: the params/ directory with the recipes and the runs/ directory with run records.

Both can be moved with environment variables (GRPOLAB_PARAMS, GRPOLAB_RUNS) so that an installed package,
a notebook in another folder and the tests all find the same files.
"""

from __future__ import annotations

import os
from pathlib import Path

# lib/grpolab/paths.py -> the project root is three levels up (a source checkout, installed editable).
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def params_dir() -> Path:
    """The params/ directory: $GRPOLAB_PARAMS, else the project's own."""
    return Path(os.environ.get("GRPOLAB_PARAMS") or PROJECT_ROOT / "params")


def runs_dir() -> Path:
    """The runs/ directory that holds one folder per run: $GRPOLAB_RUNS, else <project>/runs."""
    return Path(os.environ.get("GRPOLAB_RUNS") or PROJECT_ROOT / "runs")
