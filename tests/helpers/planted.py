"""A copy of lib/grpolab with planted modules, for the tests that show a source scan fails on what it forbids
(tests/test_engine_seam.py, tests/test_one_home.py; this folder is put on sys.path by them)."""

from __future__ import annotations

import shutil
from pathlib import Path


def planted_lib(lib: Path, into: Path, folder: str, harmless: str, plants: dict[str, str]) -> Path:
    """lib copied to into/grpolab, with folder/harmless.py and one folder/planted_NAME.py per plant; the copy."""
    copy = into / "grpolab"
    shutil.copytree(lib, copy, ignore=shutil.ignore_patterns("__pycache__", "*.json", "*.csv"))
    (copy / folder / "harmless.py").write_text(harmless)
    for name, code in plants.items():
        (copy / folder / f"planted_{name}.py").write_text(code)
    return copy
