"""Every case of the public corpus of real failure logs (tests/data/failures, one YAML file each: the log as
posted, its source and the cause its thread names) diagnosed: the cause id, and where the case names them, the
rank and node in the message a person reads, and the rejected key for config-key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from grpolab.monitor.diagnose import diagnose_text

CORPUS = Path(__file__).parent / "data" / "failures"
CASES = sorted(CORPUS.glob("*.yaml"))

# Cases beyond what a log can show, each with its reason (strict: a case that starts passing fails here).
BEYOND = {
    "slime-1487": "a hang: the log as posted ends at `Timer actor_train start` with no error line, which reads the "
    "same as a log still being written; only a run's state and its quiet files can tell (`stalled`, grpolab.monitor.silent, on a run)",
    "open-r1-85": "the log as posted stops inside the traceback, before its error line: only a frame's source line "
    "names apply_chat_template, and a frame a traceback passes through is not its error",
}


def _case(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def _params() -> list:
    return list(_each())


def _each():
    for path in CASES:
        marks = [pytest.mark.xfail(reason=BEYOND[path.stem], strict=True)] if path.stem in BEYOND else []
        yield pytest.param(path, id=path.stem, marks=marks)


@pytest.mark.parametrize("path", _params())
def test_case(path):
    case = _case(path)
    expect = case["expect"]
    failure = diagnose_text(case["log"], path.name)
    found = failure.cause if failure else "none"
    assert found == expect["cause"], (found, failure and failure.message, failure and failure.lines)
    if failure is None:
        return
    if "rank" in expect:
        assert re.search(rf"\brank {expect['rank']}\b", failure.message), failure.message
        assert failure.rank == expect["rank"]
    if "node" in expect:
        assert str(expect["node"]) in failure.message, failure.message
    if "key" in expect:
        assert expect["key"] in failure.message and failure.key == expect["key"], failure.message


def test_every_case_is_sourced_and_uses_the_vocabulary():
    from grpolab.monitor.causes import BY_ID, NONE, UNKNOWN

    ids = set(BY_ID) | {UNKNOWN, NONE}
    assert len(CASES) >= 40
    for path in CASES:
        case = _case(path)
        assert case["source"]["repo"] and case["source"]["url"] and case["thread_cause"], path.name
        assert case["expect"]["cause"] in ids, path.name
