"""The reward's dry run (issue 45): called as the recipe's reward manager calls it (keywords, what the manager adds
to extra_info, an executor thread), read as verl reads the result, on rows from across the files, and contained
(isolation, memory, time, output, processes); rewards and data built here in code."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
from verl_data import parquet, verl_row  # noqa: E402

from grpolab import owned  # noqa: E402
from grpolab.problems import errors  # noqa: E402
from grpolab.recipe.loader import load_recipe  # noqa: E402
from grpolab.rules.data import lines, report  # noqa: E402
from grpolab.verl import reward_run  # noqa: E402

SIG = "def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):\n"
SCORE = "    return 1.0 if str(ground_truth) in solution_str else 0.0\n"
KEY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"  # made up, shaped like a PEM body


@pytest.fixture
def dry(tmp_path):
    """`dry(reward, rows=..., extra=[...], fmt=...)`: `grpolab data`'s report of a recipe whose reward is `reward`
    and whose train and val file hold `rows` (12 verl rows by default); the reward's folder is tmp_path/a/b."""

    def make(reward=None, rows=None, extra=(), fmt="parquet", files=None, sample=None, isolate=None):
        work = tmp_path / "a" / "b"
        work.mkdir(parents=True, exist_ok=True)
        data = work / f"train.{fmt}"
        rows = [verl_row(i) for i in range(12)] if rows is None else rows
        if fmt == "parquet":
            parquet(data, rows)
        else:
            data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        sets = [f"data.train_files={data}", f"data.val_files={data}", "train.engine=fsdp"]
        if reward is not None:
            (work / "rw.py").write_text(reward)
            sets.append(f"reward.function={work / 'rw.py'}:compute_score")
        for name, text in (files or {}).items():
            (work / name).write_text(text)
        (tmp_path / "r.yaml").write_text("defaults: [base]\n")
        recipe = load_recipe(str(tmp_path / "r.yaml"), [*sets, *extra])
        return report(recipe, sample, tokenize=False, isolate=isolate)

    return make


def rules(rep, severity="error"):
    return {p.rule for p in rep.problems if p.severity == severity}


def message(rep, rule):
    return " ".join(p.message for p in rep.problems if p.rule == rule)


# ---------------------------------------------------------------------------------------------- what verl takes


@pytest.mark.parametrize(
    "body",
    [
        "    import numpy as np\n    return np.isclose(1.0 if str(ground_truth) in solution_str else 0.0, 1.0)\n",
        "    import numpy as np\n    return np.float32(str(ground_truth) in solution_str)\n",
        "    return str(ground_truth) in solution_str\n",
        "    return {'score': float(str(ground_truth) in solution_str), 'acc': True, 'pred': solution_str[-4:]}\n",
        "    turns = extra_info['num_turns']\n    assert extra_info['rollout_reward_scores'] == {}\n"
        "    assert extra_info['tool_rewards'] == [] and extra_info['turn_scores'] == []\n"
        "    return (1.0 if str(ground_truth) in solution_str else 0.0) - 0.0 * turns\n",
    ],
    ids=["numpy-bool", "numpy-float32", "bool", "dict-same-keys", "num-turns-and-tool-fields"],
)
def test_what_verl_takes_passes(dry, body):
    rep = dry(SIG + body)
    assert errors(rep.problems) == [], [p.format() for p in rep.problems]
    assert rep.dry_run.by_row("right") and rep.dry_run.mode == "thread"


def test_a_0d_torch_tensor_and_an_async_reward_pass(dry):
    rep = dry("import torch\n" + SIG + "    return torch.tensor(1.0 if str(ground_truth) in solution_str else 0.0)\n")
    assert errors(rep.problems) == [], [p.format() for p in rep.problems]
    rep = dry(
        "import asyncio\nasync def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    await asyncio.sleep(0)\n" + SCORE
    )
    assert errors(rep.problems) == [], [p.format() for p in rep.problems]


def test_a_helper_named_like_a_standard_module_does_not_shadow_it(dry):
    """verl loads the reward by its path without putting its folder first on sys.path: an inspect.py beside a
    working reward is no failure (it was, when the folder went first)."""
    rep = dry(SIG + SCORE, files={"inspect.py": "raise ImportError('the user helper')\n"})
    assert errors(rep.problems) == [], [p.format() for p in rep.problems]


def _seen(rep) -> dict:
    """What the reward printed about its first call (it prints one JSON line per call)."""
    return json.loads(rep.dry_run.output_head.splitlines()[0])


SPY = (
    "import json, threading\n" + SIG + "    print(json.dumps({'thread': threading.current_thread().name, "
    "'keys': sorted(kwargs), 'extra': extra_info}, default=str), flush=True)\n" + SCORE
)


def test_the_reward_gets_what_the_manager_passes_in_the_managers_thread(dry):
    """verl 0.9.1's naive manager: extra_info plus num_turns (2 for a single turn), rollout_reward_scores and the
    agent loop's turn_scores / tool_rewards, called in an executor thread; remote: its own process's main thread;
    a multi-turn row (tools_kwargs): the tool agent loop's values."""
    seen = _seen(dry(SPY))
    assert seen["thread"] != "MainThread" and seen["keys"] == []
    assert seen["extra"] == {
        "split": "train",
        "index": 0,
        "num_turns": 2,
        "rollout_reward_scores": {},
        "turn_scores": [],
        "tool_rewards": [],
    }
    dapo = _seen(dry(SPY, extra=["reward.manager=dapo"]))
    assert dapo["extra"] == {"split": "train", "index": 0}  # dapo adds nothing
    remote = dry(SPY, extra=["reward.manager=remote"])
    assert _seen(remote)["thread"] == "MainThread" and remote.dry_run.mode == "process"
    multi = [
        dict(verl_row(i), extra_info={"index": i, "tools_kwargs": {"calc": {"create_kwargs": {"ground_truth": "1"}}}})
        for i in range(4)
    ]
    assert _seen(dry(SPY, rows=multi))["extra"]["num_turns"] == 4
    assert _seen(dry(SPY, extra=["reward.kwargs.scale=2"]))["keys"] == ["scale"]


# ---------------------------------------------------------------------------------------------- faults


ROWS_200 = [verl_row(i) for i in range(200)]


@pytest.mark.parametrize(
    "body, rows, extra, rule, words",
    [
        (
            "    if extra_info['index'] % 40 == 37:\n        raise KeyError('unit')\n" + SCORE,
            ROWS_200,
            [],
            "reward-dry-run",
            ["raised on", "KeyError: 'unit'"],
        ),
        (
            "    out = {'score': float(str(ground_truth) in solution_str)}\n"
            "    if solution_str:\n        out['pred'] = solution_str[-3:]\n    return out\n",
            None,
            [],
            "reward-value",
            ["different shapes", "KeyError when a later row lacks one"],
        ),
        (
            "    return {'score': 1.0 if str(ground_truth) in solution_str else 0.0, 'hits': [1] * len(solution_str)}\n",
            None,
            [],
            "reward-value",
            ["'hits' as lists of different lengths"],
        ),
        (
            "    import os\n    if not solution_str:\n        os._exit(0)\n" + SCORE,
            None,
            [],
            "reward-dry-run",
            ["ended its process", "exit 0", "the empty answer"],
        ),  # fmt: skip
        (
            "    import ctypes\n    if solution_str.startswith('####'):\n        ctypes.string_at(0)\n" + SCORE,
            None,
            [],
            "reward-dry-run",
            ["ended its process", "SIGSEGV"],
        ),
        (
            "    import signal\n    signal.signal(signal.SIGALRM, lambda *a: None)\n" + SCORE,
            None,
            [],
            "reward-dry-run",
            ["signal only works in main thread"],
        ),
        ("    return None\n", None, [], "reward-value", ["returned None"]),
        ("    import numpy as np\n    return np.array(1.0)\n", None, [], "reward-value", ["numpy array"]),
        ("    return [1.0]\n", None, [], "reward-value", ["[1.0] (list)"]),
        ("    return complex(1, 1)\n", None, [], "reward-value", ["complex"]),
        ("    block = bytearray(20 * 2**30)\n" + SCORE, None, [], "reward-dry-run", ["MemoryError", "2 GiB"]),
        ("    print('x' * (6 * 2**20))\n" + SCORE, None, [], "reward-output", ["MiB over", "a call"]),
        (
            "    words, n = solution_str.split(), 0\n    for i in range(len(words)):\n        for j in range(i):\n"
            "            n += words[i] == words[j]\n" + SCORE,
            None,
            ["data.max_response_length=4096"],
            "reward-slow",
            ["-character answer", "x the time of a 8x shorter one"],
        ),
        (
            "    def walk(i):\n        return 0 if i >= len(solution_str) else 1 + walk(i + 1)\n    walk(0)\n" + SCORE,
            None,
            ["data.max_response_length=2048"],
            "reward-dry-run",
            ["RecursionError", "the long answer"],
        ),
        ("    return 0.5\n", None, [], "reward-constant", ["every score is 0.5"]),
    ],
    ids=[
        "raises-1-in-40",
        "dict-keys-differ",
        "ragged-list",
        "os-exit",
        "segfault",
        "signal-in-thread",
        "none",
        "numpy-0d-array",
        "list",
        "complex",
        "allocates-20gb",
        "prints-6mb",
        "quadratic",
        "recursion-on-long",
        "constant",
    ],  # fmt: skip
)
def test_a_fault_is_caught_and_named(dry, body, rows, extra, rule, words):
    rep = dry(SIG + body, rows=rows, extra=extra)
    assert rule in rules(rep), [p.format() for p in rep.problems]
    text = message(rep, rule)
    for word in words:
        assert word in text, text


def test_a_reward_that_ends_its_process_when_loaded_is_an_error_not_zero_calls(dry):
    rep = dry("import os, sys\nprint('loading', flush=True)\nos._exit(0)\n" + SIG + SCORE)
    assert "reward-dry-run" in rules(rep) and "ends its process when it is loaded (exit 0" in message(
        rep, "reward-dry-run"
    )
    assert "'loading'" in message(rep, "reward-dry-run")


def test_a_package_verls_own_reward_needs_is_a_warning_a_rewards_own_an_error(dry):
    """verl's built-in geo3k reward imports mathruler (a verl-core dependency): missing here, its rows are not
    judged (a warning); a reward of one's own that imports a missing package fails where verl runs it (an error)."""
    rep = dry("import no_such_grader_pkg\n" + SIG + SCORE)
    assert "reward-dry-run" in rules(rep) and "does not load" in message(rep, "reward-dry-run")
    try:
        import mathruler  # noqa: F401

        pytest.skip("mathruler is installed here: verl's geo3k reward runs")
    except ImportError:
        pass
    geo = [dict(verl_row(i, "hiyouga/geometry3k"), prompt=[{"role": "user", "content": "Find x."}]) for i in range(4)]
    rep = dry(None, rows=geo)
    assert "reward-dry-run" in rules(rep, "warning") and "'mathruler'" in message(rep, "reward-dry-run")
    assert errors(rep.problems) == []


# ---------------------------------------------------------------------------------------------- sampling


def test_rows_from_across_the_files_are_scored_and_counted(dry):
    """A fault in one row of forty is found though none of the first 16 rows (`grpolab data --rows 16`) has it:
    rows from across the file are scored too; the report says how many rows and calls, and the longest answer."""
    rows = [verl_row(i) for i in range(3000)]
    body = "    if extra_info['index'] % 40 == 38:\n        raise ValueError('a rare row')\n" + SCORE
    rep = dry(SIG + body, rows=rows, fmt="jsonl", sample=16)
    assert "reward-dry-run" in rules(rep) and "ValueError: a rare row" in message(rep, "reward-dry-run")
    shown = "\n".join(lines(rep))
    assert f"on {len(rep.dry_run.rows)} rows, {len(rep.dry_run.calls)} calls" in shown
    assert "answers up to" in shown and "from across it (all 3,000 lines)" in shown


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_a_null_ground_truth_is_found_anywhere_in_the_file(tmp_path, fmt):
    """`grpolab data` reads the ground truths of the whole file (a parquet's one column, a jsonl's every line),
    so one null row past the sample is named, with its place."""
    rows = [verl_row(i) for i in range(3000)]
    rows[2877] = dict(rows[2877], reward_model={"style": "rule", "ground_truth": None})
    data = tmp_path / f"t.{fmt}"
    if fmt == "parquet":
        parquet(data, rows)
    else:
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "r.yaml").write_text("defaults: [base]\n")
    sets = [f"data.train_files={data}", f"data.val_files={data}", "train.engine=fsdp"]
    rep = report(load_recipe(str(tmp_path / "r.yaml"), sets), 16, dry=False, tokenize=False)
    where = "row 2,877" if fmt == "parquet" else "line 2,878"
    assert "data-values" in rules(rep) and f"1 of 3,000 rows of the file ({where})" in message(rep, "data-values")


# ---------------------------------------------------------------------------------------------- containment


def test_the_reward_writes_nothing_outside_and_leaves_nothing_running(dry, tmp_path, monkeypatch):
    # The scratch folders this run makes are recorded as they are made: another test running beside this one
    # makes its own grpolab-reward- folders in /tmp, so a listing of /tmp before and after is not this run's.
    made = []
    make_folder = owned.temp_folder
    monkeypatch.setattr(
        owned, "temp_folder", lambda prefix, dir=None: made.append(make_folder(prefix, dir)) or made[-1]
    )
    marker = f"grpolab-test-daemon-{os.getpid()}-{time.monotonic_ns()}"
    reward = (
        "import os, subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)  # {marker}'], start_new_session=True)\n"
        "if os.fork() == 0:\n    import time\n    time.sleep(120)\n    os._exit(0)\n"
        + SIG
        + "    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'OUTSIDE'), 'a') as f:\n"
        "        f.write('x')\n" + SCORE
    )
    started = time.monotonic()
    rep = dry(reward)
    assert time.monotonic() - started < 30
    assert errors(rep.problems) == [], [p.format() for p in rep.problems]
    assert not (tmp_path / "OUTSIDE").exists()
    time.sleep(0.3)
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                left.append(pid)
        except OSError:
            continue
    assert left == []
    assert [f for f in made if f.name.startswith("grpolab-reward-")], made
    assert [f for f in made if f.exists()] == []


def test_without_isolation_it_still_runs_bounded_and_says_so(dry):
    rep = dry(SIG + SCORE, isolate=lambda: (None, "no unshare here"))
    warned = [p for p in rep.problems if p.rule == "reward-dry-run" and p.severity == "warning"]
    assert warned and "could not isolate" in warned[0].message and "no unshare here" in warned[0].message
    assert rep.dry_run.by_row("right") and errors(rep.problems) == []
    rep = dry(SIG + "    block = bytearray(20 * 2**30)\n" + SCORE, isolate=lambda: (None, "none"))
    assert "MemoryError" in message(rep, "reward-dry-run")


def test_the_output_is_kept_in_a_file_and_summarised(dry):
    rep = dry(SIG + "    print('y' * 20000 + ' ' + solution_str[-10:])\n" + SCORE)
    run = rep.dry_run
    assert run.output_bytes > 20000 * len(run.calls) and Path(run.output_file).stat().st_size <= 1 << 20
    assert len(run.output_head) <= 2048 and len(run.output_tail) <= 2048
    kept = f"the first MiB is in {run.output_file}"
    assert "reward-output" in rules(rep, "warning") and kept in message(rep, "reward-output")


# ---------------------------------------------------------------------------------------------- what is shown


def test_a_secret_in_the_rewards_exception_or_output_is_not_shown(dry, tmp_path, monkeypatch):
    key = tmp_path / "id_rsa"
    key.write_text(f"-----BEGIN PRIVATE KEY-----\n{KEY}\n-----END PRIVATE KEY-----\n")
    rep = dry(f"KEY = open({str(key)!r}).read()\n" + SIG + "    raise ValueError('cannot sign with ' + KEY)\n")
    text = message(rep, "reward-dry-run")
    assert "cannot sign with -----BEGIN ... ***redacted***" in text and KEY not in text
    rep = dry(f"import os\nprint('api_key=' + {KEY[:30]!r}, flush=True)\nos._exit(3)\n" + SIG + SCORE)
    assert "api_key=***redacted***" in message(rep, "reward-dry-run") and KEY[:30] not in message(rep, "reward-dry-run")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plainword-secret")
    rep = dry("import os\n" + SIG + "    raise RuntimeError(os.environ['MY_SERVICE_TOKEN'])\n")
    assert "plainword-secret" not in message(rep, "reward-dry-run")


def test_redaction_keeps_paths_and_words(dry):
    text = "FileNotFoundError: /tmp/grpolab-dryrun-vf4n5x3g/forks-and-daemon/a/b/reward.py: no such file"
    assert reward_run.redact_shown(text) == text
    assert reward_run.redact_shown(f"token: {KEY}") == "token: ***redacted***"


def test_an_isolation_that_fails_to_start_falls_back_and_says_so(dry):
    def broken(*args, **kwargs):
        raise RuntimeError("unshare: cannot open /proc/self/uid_map")

    rep = dry(SIG + SCORE, isolate=lambda: (broken, ""))
    assert "could not isolate" in message(rep, "reward-dry-run") and "uid_map" in message(rep, "reward-dry-run")
    assert rep.dry_run.by_row("right") and errors(rep.problems) == []
