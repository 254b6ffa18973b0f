"""The reward dry run: call the recipe's reward on sample rows, in a subprocess with a time limit (it is user code).

Each row is scored three ways, as verl's reward managers call the function (keyword arguments data_source,
solution_str, ground_truth, extra_info, plus reward.kwargs): with its own ground truth as the answer, with a wrong
answer and with an empty one. A model writes its answer in some format the reward parses (`#### 42` for GSM8K,
`\\boxed{42}` for MATH, `Answer: 42` for DAPO, `<answer>42</answer>`), so the right and the wrong answer are each
tried in those formats and the best score is kept. The subprocess prints one JSON line per call (score, time,
error), so a call that hangs still leaves the calls before it. With reward.function null it calls the installed
verl's own default_compute_score, the function verl's managers fall back to, loaded without verl's package
__init__ (which imports torch), so the dry run takes a second, not ten.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

# how a model writes an answer, for the rewards verl ships and the common custom ones
# a dry run that has spent this long calling knows the time per call: the remaining calls are skipped
ENOUGH_S = 4.0
FORMATS = ("{}", "#### {}", "\\boxed{{{}}}", "Answer: {}", "<answer>{}</answer>")

_RUNNER = r"""
import importlib.util, json, math, numbers, os, sys, time, traceback
job = json.loads(sys.stdin.read())
_out = os.fdopen(os.dup(1), "w")  # the reward's own prints go to stderr, never between these lines
os.dup2(2, 1)
sys.stdout = sys.stderr
if job["file"]:
    sys.path.insert(0, os.path.dirname(job["file"]))
    spec = importlib.util.spec_from_file_location("grpolab_reward_under_test", job["file"])
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        fn = getattr(module, job["name"])
    except BaseException as exc:
        print(json.dumps({"load_error": "".join(traceback.format_exception_only(type(exc), exc)).strip()}), file=_out, flush=True)
        sys.exit(0)
else:
    # verl's own dispatch without verl/__init__ (which imports torch: seconds): its packages as bare namespaces
    import types
    root = list(importlib.util.find_spec("verl").submodule_search_locations)[0]
    for package, folder in (("verl", root), ("verl.utils", os.path.join(root, "utils"))):
        stub = types.ModuleType(package)
        stub.__path__ = [folder]
        sys.modules[package] = stub
    from verl.utils.reward_score import default_compute_score as fn
import asyncio, inspect
begun = time.perf_counter()
for call in job["calls"]:
    if time.perf_counter() - begun > job["enough_s"]:
        print(json.dumps({"stopped": len(job["calls"])}), file=_out, flush=True)
        break
    kwargs = dict(call["kwargs"], **job["kwargs"])
    start = time.perf_counter()
    out = {"row": call["row"], "kind": call["kind"]}
    try:
        result = fn(**kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(result) if inspect.iscoroutine(result) else asyncio.get_event_loop().run_until_complete(result)
        out["s"] = time.perf_counter() - start
        if isinstance(result, dict):
            out["dict"] = True
            result = result.get("score", "<no 'score' key>")
        if isinstance(result, bool) or isinstance(result, numbers.Real):
            out["score"] = float(result)
            if not math.isfinite(out["score"]):
                out["score"], out["bad"] = None, repr(result)
        else:
            out["bad"] = repr(result)[:120] + " (" + type(result).__name__ + ")"
    except BaseException as exc:
        out["s"] = time.perf_counter() - start
        out["error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:400]
    print(json.dumps(out), file=_out, flush=True)
"""


@dataclass
class Call:
    row: int
    kind: str  # right | wrong | empty
    score: float | None = None
    seconds: float = 0.0
    error: str = ""  # it raised: the exception's last line
    bad: str = ""  # a non-number, NaN or inf


@dataclass
class DryRun:
    """What the reward did on the sample: every call, or why it could not be called at all."""

    function: str  # `path.py:name`, or verl's default_compute_score
    rows: list[dict[str, Any]] = field(default_factory=list)  # the sample rows scored
    calls: list[Call] = field(default_factory=list)
    load_error: str = ""
    timed_out: bool = False
    stopped_early: bool = False  # a slow reward: the calls after ENOUGH_S were not made
    timeout_s: float = 0.0
    stderr: str = ""

    def by_row(self, kind: str) -> dict[int, float]:
        """{row: the best score of that kind} over the calls that returned a number."""
        best: dict[int, float] = {}
        for c in self.calls:
            if c.kind == kind and c.score is not None:
                best[c.row] = max(best.get(c.row, c.score), c.score)
        return best

    def per_call_s(self) -> float | None:
        times = sorted(c.seconds for c in self.calls)
        return times[len(times) // 2] if times else None


def wrong_answer(truth: Any) -> str:
    """An answer that is not the ground truth, in its kind: a number plus one, the next letter, else a word."""
    text = str(truth).strip()
    try:
        number = float(text.replace(",", ""))
        if math.isfinite(number):
            return str(int(number) + 1) if number.is_integer() else str(number + 1)
    except ValueError:
        pass
    if len(text) == 1 and text.isalpha():
        return "B" if text.upper() == "A" else "A"
    return "unrelated answer 7"


def calls_for(rows: list[dict[str, Any]], source_key: str, truth_of) -> list[dict]:
    """The calls of the dry run: every row with its right answer and a wrong one in every format, and empty."""
    bases = [
        {
            "data_source": row.get(source_key),
            "ground_truth": truth_of(row),
            "extra_info": dict(row["extra_info"]) if isinstance(row.get("extra_info"), dict) else {},
        }
        for row in rows
    ]
    # the empty answer first: a stopped run has all three kinds
    calls = [{"row": i, "kind": "empty", "kwargs": {**base, "solution_str": ""}} for i, base in enumerate(bases)]
    for fmt in FORMATS:  # then each format over every row
        for i, base in enumerate(bases):
            truth = base["ground_truth"]
            for kind, answer in (("right", str(truth)), ("wrong", wrong_answer(truth))):
                calls.append({"row": i, "kind": kind, "kwargs": {**base, "solution_str": fmt.format(answer)}})
    return calls


def dry_run(
    file: str | None,
    name: str,
    kwargs: dict,
    rows: list[dict],
    calls: list[dict],
    timeout_s: float,
    enough_s: float = ENOUGH_S,
) -> DryRun:
    """Run the calls in a subprocess; stop it after timeout_s. `file` None: verl's default_compute_score. After
    enough_s of calls the rest are skipped (`stopped_early`): the time per call is known by then."""
    shown = f"{file}:{name}" if file else "verl's default_compute_score (reward.function null)"
    job = {"file": file, "name": name, "kwargs": kwargs, "calls": calls, "enough_s": enough_s}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    out = DryRun(shown, rows, timeout_s=timeout_s)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _RUNNER],
            input=json.dumps(job, default=str),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
        )
        stdout, out.stderr = proc.stdout, proc.stderr[-2000:]
    except subprocess.TimeoutExpired as exc:
        out.timed_out = True
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    for line in stdout.splitlines():
        try:
            item = json.loads(line)
        except json.JSONDecodeError:
            continue  # the reward's own prints
        if not isinstance(item, dict):
            continue
        if "stopped" in item:
            out.stopped_early = True
        elif "load_error" in item:
            out.load_error = item["load_error"]
        elif "row" in item:
            out.calls.append(
                Call(
                    item["row"],
                    item["kind"],
                    item.get("score"),
                    item.get("s", 0.0),
                    item.get("error", ""),
                    item.get("bad", ""),
                )
            )
    if not out.calls and not out.load_error and not out.timed_out and out.stderr:
        out.load_error = out.stderr.strip().splitlines()[-1]
    return out
