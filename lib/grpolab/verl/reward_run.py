"""The reward dry run: call the recipe's reward on sample rows as the recipe's reward manager will, in a contained
process (it is user code), and read what it did.

What is passed is what verl's manager passes (read from the checked verl's files by grpolab.verl.rewards):
data_source, solution_str, ground_truth and extra_info by keyword, reward.kwargs over them, and in extra_info what
the manager adds (verl 0.9.1's naive: num_turns and rollout_reward_scores, and the agent loop's turn_scores and
tool_rewards; gdpo: experiment_name), with the values verl's agent loop gives them (AGENT_LOOP). The reward runs in
an executor thread where the manager uses one (a `signal` timeout fails here as on the cluster), and its result is
read as the manager and verl's torch.tensor(scores) read it (grpolab/verl/reward_runner.py says how).

A model writes its answer in some format the reward parses (`#### 42` for GSM8K, `\\boxed{42}` for MATH,
`Answer: 42` for DAPO, `<answer>42</answer>`), so on the first PROBE_ROWS rows the right and the wrong answer are
tried in each of FORMATS, then every other sampled row in the formats that told them apart, with the empty
answer, and a right answer as long as data.max_response_length allows (CHARS_PER_TOKEN characters a token) on
LONG_ROWS rows, since a reward quadratic in the answer's length is fast only on short answers.

Containment: grpolab/verl/reward_runner.py runs in the process that `run` starts: the import's isolation
(grpolab.importer.sandbox: no write outside its scratch folder, no network, everything killed when it returns)
where the caller passes it, else a plain subprocess in its own session; in both, a data-size limit (MEMORY_MB), a
time limit per call (PER_CALL_S) and for the whole run, the reward's output kept in a file (its first MiB) and
summarised, and every process it started killed at the end.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grpolab import owned
from grpolab.recipe import secrets

RUNNER = Path(__file__).with_name("reward_runner.py")
FORMATS = ("{}", "#### {}", "\\boxed{{{}}}", "Answer: {}", "<answer>{}</answer>")
ENOUGH_S = 4.0  # after this long of calls over the sampled rows, the rest are skipped (the time per call is known)
PER_CALL_S = 5.0  # one call longer than this is ended (a step makes hundreds): the worker restarts at the next
MEMORY_MB = 2048  # the reward's data (RLIMIT_DATA: what it allocates, not the libraries it maps, torch included)
PROBE_ROWS = 8
LONG_ROWS = 2
CHARS_PER_TOKEN = 4  # English BPE averages about 4 characters a token: the long answer's characters per token
MARGIN_S = 30  # the isolation's own limit over the dry run's (starting the namespace, loading the reward)
RESULTS_BYTES = 32 << 20  # the calls' records read back at most

# What verl 0.9.1's agent loop puts in the row fields the managers read with .get (rewards.Manager.adds/merges):
# experimental/agent_loop/single_turn_agent_loop.py:107 num_turns=2, :113 extra_fields turn_scores [] and
# tool_rewards []; tool_agent_loop.py:203 num_turns = user + assistant turns + 1, :212 turn_scores (the
# interaction's) and tool_rewards (the tools'); nothing sets `reward_scores` (the managers' default {}).
AGENT_LOOP = {
    "single": {"__num_turns__": 2, "tool_extra_fields": {"turn_scores": [], "tool_rewards": []}, "reward_scores": {}},
    "multi": {
        "__num_turns__": 4,
        "tool_extra_fields": {"turn_scores": [0.0], "tool_rewards": [0.0]},
        "reward_scores": {},
    },
}
MULTI_TURN_KEYS = ("tools_kwargs", "interaction_kwargs")  # extra_info keys of a multi-turn row (verl's RLHFDataset)


@dataclass
class Call:
    row: int
    kind: str  # right | wrong | empty | long
    score: float | None = None
    seconds: float = 0.0
    error: str = ""  # it raised: the exception's last line (redacted)
    error_type: str = ""
    bad: str = ""  # a value verl cannot take, NaN or inf
    crash: str = ""  # the process ended during the call: "killed by SIGSEGV", "exit 0", "per-call limit", "deadline"
    length: int = 0  # the answer's characters
    fmt: int = -1
    keys: list[str] | None = None  # a dict's keys
    extras: dict[str, str] | None = None  # a dict's other values: how they stack across rows


@dataclass
class DryRun:
    """What the reward did on the sample: every call, or why it could not be called at all."""

    function: str  # `path.py:name`, or verl's default_compute_score
    rows: list[dict[str, Any]] = field(default_factory=list)  # the sample rows scored: {where, data_source, judged}
    calls: list[Call] = field(default_factory=list)
    load_error: str = ""
    load_error_type: str = ""
    load_crash: str = ""  # the process ended while loading the reward
    timed_out: bool = False
    stopped_early: bool = False  # the calls after ENOUGH_S were not made
    planned: int = 0
    timeout_s: float = 0.0
    mode: str = "main"  # where the reward ran: an executor thread, its own process's main thread
    isolation: str = ""  # "" when isolated; else why not
    output_bytes: int = 0
    output_head: str = ""
    output_tail: str = ""
    output_file: str = ""
    formats: list[int] | None = None
    internal: str = ""  # the runner itself failed (it says why)
    memory_mb: int = MEMORY_MB

    def by_row(self, kind: str) -> dict[int, float]:
        """{row: the best score of that kind} over the calls that returned a number."""
        best: dict[int, float] = {}
        for c in self.calls:
            if c.kind == kind and c.score is not None:
                best[c.row] = max(best.get(c.row, c.score), c.score)
        return best

    def per_call_s(self) -> float | None:
        """The median time of a call on a short answer."""
        times = sorted(c.seconds for c in self.calls if c.kind != "long" and not c.crash)
        return times[len(times) // 2] if times else None


def answer_of(truth: Any) -> str | None:
    """The text a right answer gives for a ground truth, None when none can be written (test cases of a code task):
    a number or a string as it is; Search-R1's {target: [...]} and a list: their first answer."""
    if isinstance(truth, dict):
        for key in ("target", "answer", "answers", "ground_truth"):
            if key in truth:
                return answer_of(truth[key])
        return None
    if isinstance(truth, (list, tuple)):
        return answer_of(truth[0]) if truth else None
    if truth is None:
        return None
    text = str(truth)
    if text.lstrip().startswith("{"):
        try:
            if isinstance(json.loads(text), dict):
                return None  # test cases ({inputs, outputs}): a right answer is a program
        except ValueError:
            pass
    return text


def wrong_answer(truth: Any) -> str:
    """An answer that is not the ground truth, in its kind: a number plus one, the next letter, else a word."""
    text = (answer_of(truth) or "").strip()
    try:
        number = float(text.replace(",", ""))
        if math.isfinite(number):
            return str(int(number) + 1) if number.is_integer() else str(number + 1)
    except ValueError:
        pass
    if len(text) == 1 and text.isalpha():
        return "B" if text.upper() == "A" else "A"
    return "unrelated answer 7"


def call_kwargs(row: dict, truth: Any, source_key: str, manager: Any, experiment: str) -> dict:
    """data_source, ground_truth and extra_info as `manager` (rewards.Manager; None: verl's naive) passes them for
    a row: the row's extra_info (verl's dataset gives {} where it is missing), with what the manager adds."""
    extra = dict(row["extra_info"]) if isinstance(row.get("extra_info"), dict) else {}
    loop = AGENT_LOOP["multi" if any(extra.get(k) for k in MULTI_TURN_KEYS) else "single"]
    adds = (
        manager.adds
        if manager is not None
        else (("num_turns", "__num_turns__"), ("rollout_reward_scores", "reward_scores"))
    )
    merges = manager.merges if manager is not None else ("tool_extra_fields",)
    for name in merges:
        extra.update(loop.get(name, {}))
    for key, source in adds:
        extra[key] = experiment if source == "config.trainer.experiment_name" else loop.get(source)
    return {"data_source": row.get(source_key), "ground_truth": truth, "extra_info": extra}


# ------------------------------------------------------------------------------------------------- what is shown

_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]+-----.*?(?:-----END [A-Z0-9 ]+-----|\Z)", re.DOTALL)
_OPAQUE = re.compile(
    r"(?<![A-Za-z0-9+=_])(?=[A-Za-z0-9+=_]*[0-9])(?=[A-Za-z0-9+=_]*[a-z])(?=[A-Za-z0-9+=_]*[A-Z])[A-Za-z0-9+=_]{24,}"
)
_NAMED = re.compile(r"([A-Za-z][A-Za-z0-9_.-]*)(\s*[:=]\s*)([^\s,;]+)")
_NOT_A_NAME = ("Error", "Exception", "Warning")  # `KeyError: 'x'`: an exception's name, not a secret's


def redact_shown(text: str, values: tuple[str, ...] = ()) -> str:
    """A reward's exception or output as it may be shown: the secret values of this shell's environment, a PEM
    block, a value after a secret word (the one list: grpolab.recipe.secrets.WORDS, `token=...`) and long opaque
    tokens (24+ characters mixing digits, lower and upper case: keys, not words or paths) replaced."""
    text = secrets.redact_text(str(text), values)
    text = _PEM.sub(f"-----BEGIN ... {secrets.REDACTED}", text)
    text = _NAMED.sub(
        lambda m: m.group(1) + m.group(2) + secrets.REDACTED
        if secrets.is_secret(m.group(1)) and not m.group(1).endswith(_NOT_A_NAME)
        else m.group(0),
        text,
    )
    return _OPAQUE.sub(secrets.REDACTED, text)


def callers_secrets() -> tuple[str, ...]:
    """The secret values of this shell's environment (by name: grpolab.recipe.secrets)."""
    return tuple(v for k, v in os.environ.items() if secrets.is_secret(k) and len(v) >= secrets.MIN_VALUE_LEN)


# ------------------------------------------------------------------------------------------------- the run

Run = Callable[..., subprocess.CompletedProcess]


def plain_run(argv: list[str], env: dict, scratch: Path, cwd: str, timeout: float) -> subprocess.CompletedProcess:
    """No isolation here: the runner in a session of its own (its supervisor still kills what the reward starts)."""
    return subprocess.run(
        argv,
        env=env,
        cwd=cwd,
        timeout=timeout,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def dry_run(
    file: str | None,
    name: str,
    kwargs: dict,
    rows: list[dict],
    *,
    timeout_s: float,
    mode: str = "thread",
    long_chars: tuple[int, ...] = (),
    run: Run | None = None,
    isolation: str = "",
    enough_s: float = ENOUGH_S,
    per_call_s: float = PER_CALL_S,
    memory_mb: int = MEMORY_MB,
    output_dir: Path | None = None,
) -> DryRun:
    """Call the reward (`file` None: verl's default_compute_score) on `rows` ({kwargs, right, wrong, where, ...}:
    what call_kwargs makes, the right answer or None, a wrong one). `run` runs the runner (the import's
    isolation; None: a plain subprocess, and `isolation` says why). The reward's output is kept in
    `output_dir` (its first MiB), when given."""
    shown = f"{file}:{name}" if file else "verl's default_compute_score (reward.function null)"
    out = DryRun(
        shown, [r["info"] for r in rows], timeout_s=timeout_s, mode=mode, isolation=isolation, memory_mb=memory_mb
    )
    hide = callers_secrets()
    scratch = owned.temp_folder("grpolab-reward-")
    try:
        job = {
            "file": file,
            "name": name,
            "kwargs": kwargs,
            "rows": [
                {"id": i, "kwargs": r["kwargs"], "right": r["right"], "wrong": r["wrong"]} for i, r in enumerate(rows)
            ],
            "formats": list(FORMATS),
            "probe": PROBE_ROWS,
            "long_rows": LONG_ROWS if long_chars else 0,
            "long_chars": list(long_chars),
            "mode": mode,
            "memory_mb": memory_mb,
            "per_call_s": min(per_call_s, timeout_s / 2),
            "enough_s": enough_s,
            "deadline_s": timeout_s,
            "results": str(scratch / "calls.jsonl"),
            "output": str(scratch / "output.log"),
            "cwd": os.getcwd(),
            "verl_root": _installed_verl() if file is None else None,
        }
        (scratch / "dry-run-job.json").write_text(json.dumps(job, default=str))
        (scratch / "runner.py").write_text(RUNNER.read_text())
        argv = [sys.executable, str(scratch / "runner.py"), str(scratch / "dry-run-job.json")]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false", "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            try:
                proc = (run or plain_run)(argv, env, scratch, job["cwd"], timeout_s + MARGIN_S)
            except RuntimeError as exc:  # the isolation said it could, then could not: run it plainly, and say so
                out.isolation = str(exc) or "the isolation failed to start"
                proc = plain_run(argv, env, scratch, job["cwd"], timeout_s + MARGIN_S)
        except subprocess.TimeoutExpired:
            out.timed_out = True
            proc = None
        _read_results(out, scratch / "calls.jsonl", hide)
        if proc is not None and proc.returncode != 0 and not out.calls and not out.load_error and not out.load_crash:
            last = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
            out.internal = redact_shown(last[0][:300], hide)
        if output_dir is not None and (scratch / "output.log").is_file() and out.output_bytes:
            out.output_file = _keep_output(scratch / "output.log", output_dir)
    finally:
        owned.remove_tree(scratch)
    return out


def _installed_verl() -> str | None:
    """The installed verl's package folder (found, not imported: verl/__init__ imports torch)."""
    spec = importlib.util.find_spec("verl")
    return list(spec.submodule_search_locations)[0] if spec and spec.submodule_search_locations else None


def _read_results(out: DryRun, path: Path, hide: tuple[str, ...]) -> None:
    try:
        with open(path, "rb") as fh:
            data = fh.read(RESULTS_BYTES)
    except OSError:
        return
    for line in data.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if not isinstance(item, dict):
            continue
        if "load_error" in item:
            out.load_error = redact_shown(item["load_error"], hide)
            out.load_error_type = item.get("error_type", "")
        elif "stopped" in item:
            out.stopped_early = True
            out.planned = item.get("planned", 0)
        elif "end" in item:
            out.planned = max(out.planned, item.get("planned", 0))
            out.formats = item.get("formats")
        elif "summary" in item:
            output = item.get("output") or {}
            out.output_bytes = int(output.get("bytes", 0))
            out.output_head = redact_shown(output.get("head", ""), hide)
            out.output_tail = redact_shown(output.get("tail", ""), hide)
            out.timed_out = out.timed_out or bool(item.get("timed_out"))
            for crash in item.get("crashes", []):
                if crash.get("at") == "load":
                    out.load_crash = crash.get("how", "")
        elif "i" in item:
            out.calls.append(
                Call(
                    row=int(item.get("row", 0)),
                    kind=str(item.get("kind", "")),
                    score=item.get("score"),
                    seconds=float(item.get("s", 0.0)),
                    error=redact_shown(item.get("error", ""), hide),
                    error_type=item.get("error_type", ""),
                    bad=redact_shown(item.get("bad", ""), hide),
                    crash=item.get("crash", ""),
                    length=int(item.get("len", 0)),
                    fmt=int(item.get("fmt", -1)),
                    keys=item.get("keys"),
                    extras=item.get("extras"),
                )
            )


def output_folder() -> Path:
    """Where the reward's output of the last dry run is kept: a folder of this user's own under the temp folder
    (the embedded head's state is beside it), one file per reward."""
    return Path(tempfile.gettempdir()) / f"grpolab-{os.getuid()}" / "dry-run"


def _keep_output(source: Path, folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if folder.stat().st_uid != os.getuid() or folder.is_symlink():
        return ""  # not this user's own folder: the output is not kept
    target = folder / "reward-output.log"
    data = source.read_bytes()[: 1 << 20]
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return str(target)
