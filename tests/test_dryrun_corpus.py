"""The dry run's development corpus (tests/data/dryrun/cases.py: rewards and data in the shapes verl's own
data_preprocess scripts and reward_score modules use, good and faulty, built in code): every good case passes
`grpolab data` with no error, every fault is refused by an error of a rule it expects, nothing is written outside
the case's folder and nothing it started is left running. tests/data/dryrun/README.md has the figures (measure.py
runs the same cases through the CLI, with the held-out share apart)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "data" / "dryrun"))
from cases import CASES, build  # noqa: E402

from grpolab.recipe.loader import load_recipe  # noqa: E402
from grpolab.rules.data import report  # noqa: E402


def _left(marker: str, root: Path) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if marker.encode() in cmd or cwd.startswith(str(root)):
            found.append(pid)
    return found


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_corpus_case_gets_the_verdict_verl_would(case, tmp_path):
    work = tmp_path / "a" / "b"
    recipe_file, _ = build(case, work)
    sets = json.loads((work / "sets.json").read_text())
    recipe = load_recipe(str(recipe_file), [f"{k}={v}" for k, v in sets.items()])
    rep = report(recipe, tokenize=False)
    shown = [p.format() for p in rep.problems]
    found = {p.rule for p in rep.problems if p.severity == "error"}
    if case.kind == "good":
        assert not found, shown
    elif case.warning_only:
        assert not found and {p.rule for p in rep.problems} & set(case.expect), shown
    else:
        assert found & set(case.expect), shown
    # a process the dry run stopped may take a moment to leave /proc; one it left behind stays (the planted one sleeps
    # 300 s): looked at again for up to 2 s only while something is found
    deadline = time.monotonic() + 2
    while _left("grpolab-dryrun-corpus", tmp_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _left("grpolab-dryrun-corpus", tmp_path) == []
    runs = tmp_path / "runs"  # the suite's own runs folder (tests/conftest.py)
    outside = [p for p in tmp_path.rglob("*") if work not in p.parents and p not in (work, work.parent, runs)]
    assert [p for p in outside if runs not in p.parents] == []
