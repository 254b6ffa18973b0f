"""The dry run's development corpus: reward functions and data files in the shapes people give verl (shapes.py),
good ones (verl 0.9.1 runs them: `grpolab data` must pass them, exit 0) and faulty ones (verl fails on them, or
trains on nothing: `grpolab data` must exit 1 naming it), each built in code by `build(case, folder)`.

`held` marks the held-out share: written with the rest before any change was made, measured before and after, and
never looked at while the code was changed (README.md has the figures). `outside` cases also check containment:
the reward tries to write OUTSIDE (a folder two levels above the case's own), or leaves processes behind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from shapes import code_row, dapo_row, geo3k_row, gsm8k_row, interaction_row, math_row, search_row, tool_row

SIG = "def compute_score(data_source, solution_str, ground_truth, extra_info=None, **kwargs):\n"
GSM8K = (
    "import re\n"
    "_NUM = re.compile(r'#### (\\-?[0-9\\.\\,]+)')\n"
    "def _answer(text):\n"
    "    found = _NUM.findall(text)\n"
    "    return found[-1].replace(',', '') if found else None\n"
)
GSM8K_SCORE = "    return 1.0 if _answer(solution_str) == str(ground_truth) else 0.0\n"
BOXED = (
    "def _boxed(text):\n"
    "    start = text.rfind('\\\\boxed{')\n"
    "    if start < 0:\n"
    "        return None\n"
    "    depth, i = 0, start + 6\n"
    "    for j in range(i, len(text)):\n"
    "        depth += {'{': 1, '}': -1}.get(text[j], 0)\n"
    "        if depth == 0:\n"
    "            return text[i + 1:j]\n"
    "    return None\n"
)
DAPO = (
    "import re\n"
    "def _pred(text):\n"
    "    found = re.findall(r'(?i)Answer\\s*:\\s*([^\\n]+)', text[-300:])\n"
    "    return found[-1].strip() if found else ''\n"
)


@dataclass
class Case:
    name: str
    kind: str  # good | fault
    why: str  # what it is and where its shape comes from
    reward: str | None = None  # the reward file's text (None: verl's built-in reward)
    rows: list | None = None  # train rows (val: the same unless val_rows)
    val_rows: list | None = None
    fmt: str = "parquet"  # parquet | jsonl | json | csv | text (data given as text)
    text: str | None = None  # the train file's text (fmt text: its name is train.jsonl)
    sets: list[str] = field(default_factory=list)
    expect: tuple[str, ...] = ()  # a fault: one of these rules must be an error
    held: bool = False
    files: dict[str, str] = field(default_factory=dict)  # other files beside the reward (name -> text)
    outside: bool = False  # the reward tries to write outside / leave processes: containment is checked
    # a fault verl runs with (it trains on less): named by a warning, not refused (measure.py counts it a miss)
    warning_only: bool = False


def _rows(make, n=40, **kw):
    return [make(i, **kw) for i in range(n)]


CASES: list[Case] = [
    # ------------------------------------------------------------------------------------------------ good
    Case("gsm8k-builtin", "good", "gsm8k.py layout, verl's built-in gsm8k reward", None, _rows(gsm8k_row)),
    Case("gsm8k-custom", "good", "gsm8k layout, a custom `####` reward", GSM8K + SIG + GSM8K_SCORE, _rows(gsm8k_row)),
    Case("math-builtin", "good", "MATH-lighteval layout, built-in math reward", None, _rows(math_row)),
    Case(
        "math-custom-boxed",
        "good",
        "MATH layout, a custom \\boxed{} reward",
        BOXED + SIG + "    return 1.0 if _boxed(solution_str) == ground_truth else 0.0\n",
        _rows(math_row),
        held=True,
    ),
    Case(
        "dapo-builtin",
        "good",
        "DAPO-Math-17k layout, built-in math_dapo (dict score)",
        None,
        _rows(dapo_row),
        sets=["reward.manager=dapo"],
    ),
    Case(
        "dapo-custom-dict",
        "good",
        "DAPO layout, a reward returning {score, acc, pred} on every row (math_dapo's shape)",
        DAPO + SIG + "    pred = _pred(solution_str)\n    ok = pred == ground_truth\n"
        "    return {'score': 1.0 if ok else -1.0, 'acc': ok, 'pred': pred}\n",
        _rows(dapo_row),
        sets=["reward.manager=dapo"],
    ),
    Case("geo3k-builtin", "good", "geo3k layout with images, built-in geo3k reward", None, _rows(geo3k_row, 12)),
    Case(
        "search-r1-builtin",
        "good",
        "Search-R1 layout, ground truth {target: [...]}, built-in EM reward",
        None,
        _rows(search_row),
        held=True,
    ),
    Case(
        "search-r1-custom",
        "good",
        "Search-R1 layout, a custom EM reward over ground_truth['target']",
        "import re\n" + SIG + "    m = re.findall(r'<answer>(.*?)</answer>', solution_str, re.S)\n"
        "    if not m:\n        return 0.0\n"
        "    return 1.0 if m[-1].strip().lower() in [t.lower() for t in ground_truth['target']] else 0.0\n",
        _rows(search_row),
    ),
    Case(
        "tool-agent-num-turns",
        "good",
        "gsm8k multi-turn with tools; the reward reads extra_info['num_turns'] (verl's naive manager sets it)",
        GSM8K + SIG + "    turns = extra_info['num_turns']\n"
        "    base = 1.0 if _answer(solution_str) == ground_truth else 0.0\n"
        "    return base - 0.01 * max(0, turns - 2)\n",
        _rows(tool_row),
    ),
    Case(
        "interaction-scores",
        "good",
        "gsm8k with an interaction; the reward reads extra_info['rollout_reward_scores'] and tool_rewards",
        GSM8K
        + SIG
        + "    bonus = sum(extra_info['rollout_reward_scores'].values()) + sum(extra_info['tool_rewards'])\n"
        "    return (1.0 if _answer(solution_str) == ground_truth else 0.0) + 0.0 * bonus\n",
        _rows(interaction_row),
        held=True,
    ),
    Case(
        "numpy-bool",
        "good",
        "a reward returning np.isclose(...) (numpy.bool_), which verl turns into a float",
        "import numpy as np\n" + GSM8K + SIG + "    a = _answer(solution_str)\n"
        "    try:\n        return np.isclose(float(a), float(ground_truth))\n    except (TypeError, ValueError):\n"
        "        return np.bool_(False)\n",
        _rows(gsm8k_row),
    ),
    Case(
        "torch-0d",
        "good",
        "a reward returning a 0-d torch tensor, which verl's torch.tensor(scores) takes",
        "import torch\n"
        + GSM8K
        + SIG
        + "    return torch.tensor(1.0 if _answer(solution_str) == ground_truth else 0.0)\n",
        _rows(gsm8k_row, 16),
    ),
    Case(
        "numpy-float32",
        "good",
        "a reward returning numpy.float32",
        "import numpy as np\n" + GSM8K + SIG + "    return np.float32(_answer(solution_str) == ground_truth)\n",
        _rows(gsm8k_row),
        held=True,
    ),
    Case(
        "bool-and-int",
        "good",
        "a reward returning True/False or 0/1",
        GSM8K
        + SIG
        + "    return _answer(solution_str) == ground_truth if len(solution_str) % 2 else int(_answer(solution_str) == ground_truth)\n",
        _rows(gsm8k_row),
    ),
    Case(
        "async-reward",
        "good",
        "an async def reward (the naive manager awaits it)",
        "import asyncio\n"
        + GSM8K
        + "async def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    await asyncio.sleep(0)\n" + GSM8K_SCORE,
        _rows(gsm8k_row),
    ),
    Case(
        "reward-kwargs",
        "good",
        "a reward with reward.kwargs (verl's custom_reward_function.reward_kwargs)",
        GSM8K + "def compute_score(data_source, solution_str, ground_truth, extra_info=None, scale=1.0, **kwargs):\n"
        "    return scale * (1.0 if _answer(solution_str) == ground_truth else 0.0)\n",
        _rows(gsm8k_row),
        sets=["reward.kwargs.scale=2.0"],
    ),
    Case(
        "stdlib-named-helper",
        "good",
        "a working reward with a helper file named inspect.py beside it",
        GSM8K + SIG + GSM8K_SCORE,
        _rows(gsm8k_row),
        files={"inspect.py": "raise ImportError('this is the user helper, not the standard inspect')\n"},
    ),
    Case(
        "jsonl-bom",
        "good",
        "verl-layout jsonl written with a UTF-8 BOM (datasets reads it)",
        GSM8K + SIG + GSM8K_SCORE,
        fmt="text",
        text="\ufeff" + "\n".join(json.dumps(gsm8k_row(i)) for i in range(30)) + "\n",
        held=True,
    ),
    Case("jsonl-plain", "good", "verl-layout jsonl", GSM8K + SIG + GSM8K_SCORE, _rows(gsm8k_row), fmt="jsonl"),
    Case(
        "prints-a-little",
        "good",
        "a reward that prints one line per call (common when debugging)",
        GSM8K + SIG + "    print('scored', data_source, repr(solution_str[:40]))\n" + GSM8K_SCORE,
        _rows(gsm8k_row),
    ),
    Case(
        "thread-timeout",
        "good",
        "a reward with a thread-safe timeout (concurrent.futures), which works in verl's executor threads",
        "import concurrent.futures as cf\n"
        + GSM8K
        + "_POOL = cf.ThreadPoolExecutor(2)\n"
        + SIG
        + "    fut = _POOL.submit(_answer, solution_str)\n"
        "    return 1.0 if fut.result(timeout=5) == ground_truth else 0.0\n",
        _rows(gsm8k_row),
        held=True,
    ),
    Case(
        "code-builtin",
        "good",
        "codecontests layout (test cases as ground truth), built-in prime_code",
        None,
        _rows(code_row, 6),
    ),
    Case(
        "mixed-sources-custom",
        "good",
        "train gsm8k, val MATH, one reward dispatching on data_source",
        GSM8K
        + BOXED
        + SIG
        + "    if data_source == 'openai/gsm8k':\n"
        + "    "
        + GSM8K_SCORE
        + "    return 1.0 if _boxed(solution_str) == ground_truth else 0.0\n",
        _rows(gsm8k_row),
        val_rows=_rows(math_row, 20, split="test"),
    ),
    Case(
        "subprocess-cleaned",
        "good",
        "a code reward that runs the answer in a subprocess with a timeout and waits for it",
        "import subprocess, sys\n"
        + SIG
        + "    out = subprocess.run([sys.executable, '-c', 'print(2+3)'], capture_output=True, text=True, timeout=10)\n"
        "    return 1.0 if out.stdout.strip() == '5' and ground_truth in solution_str else 0.0\n",
        _rows(gsm8k_row, 4),
        held=True,
    ),
    Case(
        "long-linear",
        "good",
        "a reward linear in the answer length (a regex over the whole answer)",
        GSM8K
        + SIG
        + "    words = len(solution_str.split())\n    return (1.0 if _answer(solution_str) == ground_truth else 0.0) - 0.0 * words\n",
        _rows(gsm8k_row),
    ),
    Case(
        "rate-limited-manager",
        "good",
        "verl's rate_limited manager with a plain reward",
        GSM8K + SIG + GSM8K_SCORE,
        _rows(gsm8k_row),
        sets=["reward.manager=rate_limited"],
    ),
    Case(
        "json-array",
        "good",
        "verl-layout .json (one array)",
        GSM8K + SIG + GSM8K_SCORE,
        _rows(gsm8k_row),
        fmt="json",
        held=True,
    ),
    # ------------------------------------------------------------------------------------------------ faults
    Case(
        "raises-1-in-40",
        "fault",
        "a reward that raises on one row in forty (a KeyError on a rare answer form)",
        GSM8K + SIG + "    if extra_info['index'] % 40 == 37:\n        raise KeyError('unit')\n" + GSM8K_SCORE,
        _rows(gsm8k_row, 200),
        expect=("reward-dry-run",),
    ),
    Case(
        "dict-keys-differ",
        "fault",
        "dict scores whose keys differ by row (verl stacks the first row's keys and fails)",
        DAPO + SIG + "    pred = _pred(solution_str)\n    out = {'score': float(pred == ground_truth)}\n"
        "    if pred:\n        out['pred'] = pred\n    return out\n",
        _rows(dapo_row),
        expect=("reward-value",),
    ),
    Case(
        "quadratic",
        "fault",
        "a reward quadratic in the answer length (a repetition count over every pair of words: fast on short "
        "answers, a quarter second on a 4,096-token one)",
        GSM8K
        + SIG
        + "    words, rep = solution_str.split(), 0\n    for i in range(len(words)):\n"
        + "        for j in range(i):\n            rep += words[i] == words[j]\n"
        + GSM8K_SCORE,
        _rows(gsm8k_row),
        sets=["data.max_response_length=4096"],
        expect=("reward-slow",),
    ),
    Case(
        "null-ground-truth",
        "fault",
        "ground_truth null in some rows (they score 0 forever)",
        GSM8K + SIG + GSM8K_SCORE,
        [
            dict(gsm8k_row(i), reward_model={"style": "rule", "ground_truth": None if i % 7 == 3 else str(i)})
            for i in range(40)
        ],
        fmt="jsonl",
        expect=("data-columns", "data-ground-truth", "data-values"),
    ),
    Case(
        "extra-info-json-string",
        "fault",
        "extra_info stored as a JSON string (verl's dataset calls .get on it)",
        GSM8K + SIG + GSM8K_SCORE,
        [dict(gsm8k_row(i), extra_info=json.dumps(gsm8k_row(i)["extra_info"])) for i in range(30)],
        expect=("data-columns", "data-extra-info", "data-values"),
        held=True,
    ),
    Case(
        "native-crash",
        "fault",
        "a reward that crashes natively on some answers (a segfault in a C call)",
        "import ctypes\n"
        + GSM8K
        + SIG
        + "    if _answer(solution_str) is None and solution_str:\n        ctypes.string_at(0)\n"
        + GSM8K_SCORE,
        _rows(gsm8k_row),
        expect=("reward-dry-run",),
    ),
    Case(
        "os-exit-some",
        "fault",
        "a reward that calls os._exit(0) on empty answers",
        "import os\n" + GSM8K + SIG + "    if not solution_str:\n        os._exit(0)\n" + GSM8K_SCORE,
        _rows(gsm8k_row),
        expect=("reward-dry-run",),
    ),
    Case(
        "os-exit-import",
        "fault",
        "a reward file that calls os._exit(0) when imported",
        "import os\nos._exit(0)\n" + SIG + "    return 0.0\n",
        _rows(gsm8k_row),
        expect=("reward-dry-run",),
        held=True,
    ),
    Case(
        "signal-timeout",
        "fault",
        "a signal.alarm timeout inside the reward (fails in verl's executor threads)",
        "import signal\n" + GSM8K + SIG + "    signal.signal(signal.SIGALRM, lambda *a: None)\n    signal.alarm(5)\n"
        "    try:\n    " + GSM8K_SCORE + "    finally:\n        signal.alarm(0)\n",
        _rows(gsm8k_row),
        expect=("reward-dry-run",),
    ),
    Case(
        "returns-none",
        "fault",
        "returns None when no answer is found",
        GSM8K
        + SIG
        + "    a = _answer(solution_str)\n    if a is None:\n        return None\n    return float(a == ground_truth)\n",
        _rows(gsm8k_row),
        expect=("reward-value",),
    ),
    Case(
        "returns-str",
        "fault",
        "returns the score as text",
        GSM8K + SIG + "    return '1' if _answer(solution_str) == ground_truth else '0'\n",
        _rows(gsm8k_row),
        expect=("reward-value",),
        held=True,
    ),
    Case(
        "dict-no-score",
        "fault",
        "a dict without 'score' (verl indexes result['score'])",
        GSM8K + SIG + "    return {'reward': float(_answer(solution_str) == ground_truth)}\n",
        _rows(gsm8k_row),
        expect=("reward-value",),
    ),
    Case(
        "numpy-array",
        "fault",
        "returns a 1-element numpy array (torch.tensor(scores) fails on a batch of them)",
        "import numpy as np\n" + GSM8K + SIG + "    return np.array([float(_answer(solution_str) == ground_truth)])\n",
        _rows(gsm8k_row),
        expect=("reward-value",),
    ),
    Case(
        "nan",
        "fault",
        "returns NaN for empty answers",
        GSM8K + SIG + "    if not solution_str:\n        return float('nan')\n" + GSM8K_SCORE,
        _rows(gsm8k_row),
        expect=("reward-value",),
        held=True,
    ),
    Case(
        "constant",
        "fault",
        "a reward that always returns 0",
        SIG + "    return 0.0\n",
        _rows(gsm8k_row),
        expect=("reward-constant",),
    ),
    Case(
        "wrong-signature",
        "fault",
        "a reward without extra_info (the naive manager passes it)",
        "def compute_score(data_source, solution_str, ground_truth):\n    return 0.0\n",
        _rows(gsm8k_row),
        expect=("reward-signature",),
    ),
    Case(
        "tools-kwargs-missing",
        "fault",
        "a reward reading extra_info['tools_kwargs'] on single-turn gsm8k rows that have none",
        GSM8K + SIG + "    truth = extra_info['tools_kwargs']['calc_gsm8k_reward']['create_kwargs']['ground_truth']\n"
        "    return 1.0 if _answer(solution_str) == truth else 0.0\n",
        _rows(gsm8k_row),
        expect=("reward-dry-run",),
        held=True,
    ),
    Case(
        "allocates-20gb",
        "fault",
        "a reward that allocates 20 GB",
        SIG + "    block = bytearray(20 * 2**30)\n    return float(len(block) > 0 and ground_truth in solution_str)\n",
        _rows(gsm8k_row, 4),
        expect=("reward-dry-run",),
    ),
    Case(
        "prints-6mb",
        "fault",
        "a reward that prints 6 MB per call",
        GSM8K + SIG + "    print('x' * (6 * 2**20))\n" + GSM8K_SCORE,
        _rows(gsm8k_row, 8),
        expect=("reward-output", "reward-slow"),
    ),
    Case(
        "hangs",
        "fault",
        "a reward that never returns",
        SIG + "    import time\n    time.sleep(600)\n",
        _rows(gsm8k_row, 4),
        sets=["reward.dry_run_timeout_s=3"],
        expect=("reward-slow",),
        held=True,
    ),
    Case(
        "raises-on-empty",
        "fault",
        "a reward that indexes the last word (IndexError on an empty answer)",
        SIG + "    last = solution_str.split()[-1]\n    return 1.0 if last == ground_truth else 0.0\n",
        _rows(gsm8k_row),
        expect=("reward-dry-run",),
    ),
    Case(
        "raises-on-latex",
        "fault",
        "a MATH reward doing float(ground_truth) (raises on LaTeX answers in some rows)",
        BOXED + SIG + "    return 1.0 if float(_boxed(solution_str) or 'nan') == float(ground_truth) else 0.0\n",
        _rows(math_row),
        expect=("reward-dry-run",),
    ),
    Case(
        "does-not-import",
        "fault",
        "a reward importing a package that is not installed",
        "import no_such_grader_pkg\n" + SIG + "    return 0.0\n",
        _rows(gsm8k_row),
        expect=("reward-dry-run",),
        held=True,
    ),
    Case(
        "string-prompt",
        "fault",
        "prompt as a plain string",
        GSM8K + SIG + GSM8K_SCORE,
        [dict(gsm8k_row(i), prompt=gsm8k_row(i)["prompt"][0]["content"]) for i in range(20)],
        expect=("data-prompt",),
    ),
    Case(
        "no-reward-model",
        "fault",
        "rows without reward_model",
        GSM8K + SIG + GSM8K_SCORE,
        [{k: v for k, v in gsm8k_row(i).items() if k != "reward_model"} for i in range(20)],
        expect=("data-columns",),
    ),
    Case(
        "unknown-source",
        "fault",
        "a data_source verl's built-in reward does not score",
        None,
        [dict(gsm8k_row(i), data_source="my_gsm8k") for i in range(20)],
        expect=("data-source",),
        held=True,
    ),
    Case("csv-data", "fault", "a .csv data file", None, _rows(gsm8k_row, 5), fmt="csv", expect=("data-file",)),
    Case(
        "broken-line-late",
        "fault",
        "a jsonl whose line 5,001 is broken (verl's loader fails on it)",
        GSM8K + SIG + GSM8K_SCORE,
        fmt="text",
        text="\n".join(json.dumps(gsm8k_row(i)) for i in range(5000)) + '\n{"data_source": "openai/gsm8k", "prompt\n',
        expect=("data-file",),
    ),
    Case(
        "images-without-placeholder",
        "fault",
        "geo3k rows with an image but no <image> in the prompt (verl asserts image_offset == len(images))",
        None,
        [geo3k_row(i, placeholders=0) for i in range(10)],
        expect=("data-images", "data-prompt"),
    ),
    Case(
        "placeholder-without-image",
        "fault",
        "geo3k prompts with <image> but no images column (the model never sees the figure)",
        None,
        [{k: v for k, v in geo3k_row(i).items() if k != "images"} for i in range(10)],
        expect=("data-images", "data-prompt"),
        held=True,
    ),
    Case(
        "returns-list",
        "fault",
        "returns [score] (verl's torch.tensor(scores) fails on a batch mixing lists)",
        GSM8K + SIG + "    return [float(_answer(solution_str) == ground_truth)]\n",
        _rows(gsm8k_row),
        expect=("reward-value",),
    ),
    Case(
        "numpy-0d-array",
        "fault",
        "returns np.array(x) (a 0-d array: torch.tensor fails when it comes first)",
        "import numpy as np\n" + GSM8K + SIG + "    return np.array(float(_answer(solution_str) == ground_truth))\n",
        _rows(gsm8k_row),
        expect=("reward-value",),
    ),
    Case(
        "raises-on-long",
        "fault",
        "a reward that recurses once per character (RecursionError on a long answer)",
        GSM8K
        + "def _walk(s, i=0):\n    return 0 if i >= len(s) else 1 + _walk(s, i + 1)\n"
        + SIG
        + "    _walk(solution_str)\n"
        + GSM8K_SCORE,
        _rows(gsm8k_row),
        sets=["data.max_response_length=2048"],
        expect=("reward-dry-run", "reward-slow"),
        held=True,
    ),
    Case(
        "ground-truth-mixed-types",
        "fault",
        "ground_truth a string in some rows and a number in others (the reward compares strings: 0 forever there)",
        GSM8K + SIG + "    return 1.0 if _answer(solution_str) == ground_truth else 0.0\n",
        [
            dict(
                gsm8k_row(i),
                reward_model={
                    "style": "rule",
                    "ground_truth": int(gsm8k_row(i)["reward_model"]["ground_truth"])
                    if i % 2
                    else gsm8k_row(i)["reward_model"]["ground_truth"],
                },
            )
            for i in range(30)
        ],
        fmt="jsonl",
        expect=("data-values", "data-columns", "reward-constant", "data-ground-truth"),
        warning_only=True,
    ),
    # ------------------------------------------------------------------------------------------------ containment
    Case(
        "writes-outside",
        "good",
        "a working reward that also appends to a file two folders above its own (must not land there)",
        "import os\n"
        + GSM8K
        + SIG
        + "    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'OUTSIDE.txt'), 'a') as f:\n"
        "        f.write('x')\n" + GSM8K_SCORE,
        _rows(gsm8k_row, 8),
        outside=True,
    ),
    Case(
        "forks-and-daemon",
        "good",
        "a working reward that forks a sleeping child and a detached daemon on import",
        "import os, subprocess, sys\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)  # grpolab-dryrun-corpus'], start_new_session=True)\n"
        "if os.fork() == 0:\n    import time\n    time.sleep(300)\n    os._exit(0)\n" + GSM8K + SIG + GSM8K_SCORE,
        _rows(gsm8k_row, 8),
        outside=True,
    ),
]


def build(case: Case, folder: Path) -> tuple[Path, Path]:
    """Write the case's data, reward and recipe into folder: (the recipe file, the train data file)."""
    folder.mkdir(parents=True, exist_ok=True)
    train, val = folder / f"train.{case.fmt if case.fmt != 'text' else 'jsonl'}", None
    if case.fmt == "text":
        train.write_text(case.text, encoding="utf-8")
    else:
        _write(train, case.rows, case.fmt)
    if case.val_rows is not None:
        val = folder / f"val.{case.fmt}"
        _write(val, case.val_rows, case.fmt)
    sets = {"data.train_files": str(train), "data.val_files": str(val or train), "train.engine": "fsdp"}
    if case.reward is not None:
        (folder / "reward.py").write_text(case.reward)
        sets["reward.function"] = f"{folder / 'reward.py'}:compute_score"
    for name, text in case.files.items():
        (folder / name).write_text(text)
    for s in case.sets:
        key, _, value = s.partition("=")
        sets[key] = value
    recipe = folder / "recipe.yaml"
    recipe.write_text("defaults: [base]\n")
    (folder / "sets.json").write_text(json.dumps(sets))
    return recipe, train


def _write(path: Path, rows: list, fmt: str) -> None:
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "json":
        path.write_text(json.dumps(rows))
    elif fmt == "csv":
        import csv

        with open(path, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            for r in rows:
                writer.writerow({k: json.dumps(v) if not isinstance(v, str) else v for k, v in r.items()})
