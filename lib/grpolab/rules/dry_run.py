"""The reward's dry run, judged (rules reward-dry-run, reward-value, reward-constant, reward-slow, reward-output):
which sample rows are scored, what is passed, and what the calls say (grpolab.verl.reward_run makes them).

Rows: the first PROBE rows of the train file, then rows spread across the train and val files (the start, the
end and evenly between, grpolab.verl.dataset.spread), at most DRY_ROWS, each passed as the recipe's reward manager
passes it. Verdicts, each naming the row (file and row or line) and the answer (right, wrong, empty, or the long
one with its length):
- it raised on a row, or its process ended (a crash, os._exit, a memory limit): an error, since verl's reward
  worker fails with it; a `signal` call in an executor thread is named as such; a raise that needs the network (no
  network in the dry run) or a package verl declares but this machine lacks is a warning: not judged here;
- a value verl cannot take, or dicts whose keys (or list lengths) differ by row (verl stacks the first row's keys
  across the batch): reward-value;
- never the right answer above a wrong and an empty one: reward-constant;
- slower than the step budget (rules.data's): a warning, over SLOW_ERROR times it an error; a call on the long
  answer too, naming its length; a call past the per-call limit: an error;
- more output than OUTPUT_WARN bytes a call (a warning) or OUTPUT_ERROR (an error): verl writes it to the
  worker's log on every call of every step.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from grpolab.recipe.dotted import MISSING, get_dotted
from grpolab.rules.checks import Checks
from grpolab.rules.data_values import SOURCE, TRUTH
from grpolab.rules.reward import manager_of
from grpolab.verl import dataset, rewards
from grpolab.verl.reward_run import (
    CHARS_PER_TOKEN,
    DryRun,
    answer_of,
    call_kwargs,
    dry_run,
    output_folder,
    wrong_answer,
)

DRY_ROWS = 400  # rows the dry run may score, over the train and val files (3 calls each: cheap for a fast reward)
PROBE = 8
SLOW_ERROR = 10  # a reward this many times over its step budget is an error (it takes the whole step), else a warning
OUTPUT_WARN = 16 << 10  # bytes a call may print before it is named
OUTPUT_ERROR = 1 << 20
NETWORK = re.compile(
    r"ConnectionError|ConnectionRefused|URLError|gaierror|Name or service not known|Temporary failure in name "
    r"resolution|Network is unreachable|No route to host|NewConnectionError|ConnectTimeout|getaddrinfo",
)
_MODULE = re.compile(r"No module named '([\w.]+)'")


def usable(row: Any) -> bool:
    """A row the reward can be called on: a ground truth present and not null, extra_info a mapping or absent."""
    return (
        isinstance(row, dict)
        and get_dotted(row, TRUTH, MISSING) not in (MISSING, None)
        and (row.get("extra_info") is None or isinstance(row.get("extra_info"), dict))
    )


def pick_rows(files: list[tuple[dataset.Sample, dataset.Spread]]) -> list[tuple[str, dict]]:
    """(where, row) to score: the train file's first rows, then rows from across every file, evenly, deduplicated."""
    pools = []
    for s, sp in files:
        first = [(f"{s.file} row {i:,}", r) for i, r in enumerate(s.rows)]
        across = [(f"{s.file} {where}", r) for where, r in sp.rows]
        pools.append([(w, r) for w, r in first + across if usable(r)])
    picked: list[tuple[str, dict]] = []
    seen: set[str] = set()

    def take(where: str, row: dict) -> None:
        key = repr((row.get(SOURCE), get_dotted(row, TRUTH), row.get("extra_info")))[:2000]
        if key not in seen and len(picked) < DRY_ROWS:
            seen.add(key)
            picked.append((where, row))

    if pools:
        for where, row in pools[0][:PROBE]:
            take(where, row)
    share = max(1, (DRY_ROWS - len(picked)) // max(1, len(pools)))
    rest = [pool[i] for pool in pools for i in _evenly(len(pool), share)]
    # spread first: a slow reward whose calls stop after ENOUGH_S has still seen the whole range of rows
    for i in _spread_order(len(rest)):
        take(*rest[i])
    return picked


def _evenly(n: int, want: int) -> list[int]:
    return list(range(n)) if n <= want else sorted({round(i * (n - 1) / (want - 1)) for i in range(want)})


def _spread_order(n: int) -> list[int]:
    """0..n-1 in an order that halves the gaps as it goes (0, n/2, n/4, 3n/4, ...)."""
    bits = max(1, (n - 1).bit_length())
    return sorted(range(n), key=lambda i: int(format(i, f"0{bits}b")[::-1], 2))


def run(c: Checks, files, budget_s: float | None, isolate) -> DryRun | None:
    """Make the dry run's calls for the recipe; None when no row can be scored. `isolate`: (run, why not) from
    the caller's layer (the import's isolation)."""
    r = c.r
    chosen = pick_rows(files)
    if not chosen:
        return None
    manager = manager_of(c)
    rows = []
    for where, row in chosen:
        truth = get_dotted(row, TRUTH)
        rows.append(
            {
                "kwargs": call_kwargs(row, truth, SOURCE, manager, r.trainer.experiment),
                "right": answer_of(truth),
                "wrong": wrong_answer(truth),
                "info": {"where": where, "data_source": row.get(SOURCE), "judged": answer_of(truth) is not None},
            }
        )
    file = str(rewards.resolve(r)) if r.reward.function else None
    name = rewards.split_function(r.reward.function)[1] if r.reward.function else ""
    longest = r.data.max_response_length * CHARS_PER_TOKEN
    runner, why = isolate()
    return dry_run(
        file,
        name,
        dict(r.reward.kwargs),
        rows,
        timeout_s=r.reward.dry_run_timeout_s,
        mode=manager.mode if manager else "thread",
        long_chars=(longest // 8, longest),
        run=runner,
        isolation=why,
        per_call_s=max(2.0, min(30.0, SLOW_ERROR * 4 * (budget_s or 0.05))),
        output_dir=output_folder(),
    )


def judge(c: Checks, run: DryRun, budget_s: float | None, budget_why: str, step_calls: int) -> None:
    r = c.r
    where = {i: info["where"] for i, info in enumerate(run.rows)}
    rows_n = len(run.rows)

    def add(rule: str, message: str, fix: str, severity: str | None = None) -> None:
        c.add(rule, "reward.function", r.reward.function, message, fix, severity)

    if run.isolation:
        add(
            "reward-dry-run",
            f"the dry run could not isolate {run.function} on this machine ({run.isolation}): it ran with your "
            "permissions (memory, time and its processes still bounded)",
            "run `grpolab data` where util-linux `unshare` and user namespaces are available to keep it in a scratch "
            "folder without network",
            "warning",
        )
    if run.internal and not run.calls:
        add("reward-dry-run", f"the dry run of {run.function} did not start: {run.internal}",
            "see the message; `grpolab data --no-dry-run` skips it", "warning")  # fmt: skip
        return
    if run.load_crash:
        last = (run.output_tail or run.output_head).strip().splitlines()[-1:]
        said = f"; its last output line: {last[0][:160]!r}" if last else ""
        add(
            "reward-dry-run",
            f"{run.function} ends its process when it is loaded ({run.load_crash}{said}): verl's reward worker dies "
            "importing it",
            "remove the os._exit / sys.exit / crashing call at the top of the reward file",
        )
        return
    if run.load_error:
        _load_error(c, run, add)
        return
    if not run.calls:
        add(
            "reward-dry-run",
            f"{run.function} made no call in the dry run (its process ended before the first one"
            + (f"; it printed: {run.output_tail or run.output_head}" if run.output_bytes else "")
            + ")",
            "run it by hand on one row to see why",
        )
        return
    _raised(c, run, add, where, rows_n)
    _crashed(run, add, where, budget_s)
    _values(run, add, where)
    _constant(c, run, add, rows_n)
    _slow(run, add, where, budget_s, budget_why, step_calls)
    _output(run, add, step_calls)
    if run.timed_out:
        add(
            "reward-slow",
            f"{run.function} did not finish the dry run's calls in reward.dry_run_timeout_s {run.timeout_s:g} s "
            f"(finished {len(run.calls)} calls{f' of {run.planned}' if run.planned else ''}); a step calls it "
            f"{step_calls} times",
            "make the reward fast (no network or model call per answer), or raise reward.dry_run_timeout_s to see "
            "how slow it is",
        )


def _answer(call) -> str:
    return f"the {call.kind} answer" + (f" ({call.length:,} characters)" if call.kind == "long" else "")


def _absent_here(run: DryRun, error: str, error_type: str) -> str | None:
    """The package verl's own reward needs and this machine lacks (`No module named 'x'` from verl's built-in
    reward: verl's install on the nodes brings it); None for a reward of one's own (its imports are its own)."""
    missing = _MODULE.search(error) if error_type == "ModuleNotFoundError" else None
    return missing.group(1).split(".")[0] if missing and run.function.startswith("verl's") else None


def _load_error(c: Checks, run: DryRun, add) -> None:
    package = _absent_here(run, run.load_error, run.load_error_type)
    if package:
        add(
            "reward-dry-run",
            f"{run.function} needs {package!r}, which verl's install brings and this machine lacks: not judged here",
            f"pip install {package} here to dry-run it",
            "warning",
        )
        return
    if NETWORK.search(run.load_error):
        add("reward-dry-run", f"{run.function} needs the network to load ({run.load_error}); the dry run gives it "
            "none: not judged here", "run `grpolab data` where it loads offline, or check it on the cluster",
            "warning")  # fmt: skip
        return
    add(
        "reward-dry-run",
        f"{run.function} does not load: {run.load_error}",
        "fix the file until `python -c 'import importlib.util ...'` loads it; it runs on every reward worker",
    )


def _raised(c: Checks, run: DryRun, add, where, rows_n) -> None:
    raised = [x for x in run.calls if x.error]
    if not raised:
        return
    offline = [x for x in raised if NETWORK.search(x.error)]
    if offline and len(offline) == len(raised):
        add("reward-dry-run", f"{run.function} needs the network ({offline[0].error}); the dry run gives it none: "
            "not judged here", "check it where its service is reachable", "warning")  # fmt: skip
        return
    absent = {_absent_here(run, x.error, x.error_type) for x in raised}
    if None not in absent and len(absent) == 1:
        package = next(iter(absent))
        add(
            "reward-dry-run",
            f"{run.function} needs {package!r} on {len({x.row for x in raised})} of {rows_n} sample rows, which "
            "verl's install brings and this machine lacks: those rows are not judged here",
            f"pip install {package} here to dry-run them",
            "warning",
        )
        return
    rows_hit = sorted({x.row for x in raised})
    first = raised[0]
    kinds = Counter(x.kind for x in raised)
    signal_in_thread = "signal only works in main thread" in first.error
    if signal_in_thread:
        fix = (
            f"verl's {c.r.reward.manager!r} manager calls the reward in an executor thread, where `signal` cannot be "
            "used: time it out another way (concurrent.futures with a timeout, or a subprocess)"
        )
    elif first.error_type == "MemoryError":
        fix = "allocate less per answer: a reward needing gigabytes crowds the trainer's node too"
    elif first.error_type == "TypeError" and "argument" in first.error:
        manager = manager_of(c)
        names = ", ".join(manager.keywords) if manager else "data_source, solution_str, ground_truth, extra_info"
        fix = f"give it the parameters verl's reward manager passes by keyword: ({names}, **kwargs)"
    else:
        fix = (
            "make the reward return a number for every answer, wrong, empty and long ones included (a raise stops "
            "the reward worker and the step)"
        )
    add(
        "reward-dry-run",
        f"{run.function} raised on {len(rows_hit)} of {rows_n} sample rows ({', '.join(f'{v} {k}' for k, v in kinds.items())} "
        f"answer calls; first: {where.get(first.row, first.row)}, data_source {run.rows[first.row]['data_source']!r}, "
        f"{_answer(first)}): {first.error}"
        + (
            f" (the dry run lets a reward allocate {run.memory_mb >> 10} GiB)"
            if first.error_type == "MemoryError"
            else ""
        ),
        fix,
    )


def _crashed(run: DryRun, add, where, budget_s) -> None:
    crashed = [x for x in run.calls if x.crash and x.crash not in ("per-call limit", "deadline")]
    if crashed:
        first = crashed[0]
        how = "os._exit" if first.crash.startswith("exit") else "a crash"
        add(
            "reward-dry-run",
            f"{run.function} ended its process on {len(crashed)} call(s) ({first.crash}; first: "
            f"{where.get(first.row, first.row)}, {_answer(first)}): verl's reward worker dies with it ({how})",
            "never call os._exit or let a native library crash on a bad answer: catch it and return a score "
            "(run native code in a subprocess)",
        )
    limited = [x for x in run.calls if x.crash == "per-call limit"]
    if limited:
        first = limited[0]
        add(
            "reward-slow",
            f"{run.function} did not return within {first.seconds:.0f} s on {len(limited)} call(s) (first: "
            f"{where.get(first.row, first.row)}, {_answer(first)}); a step waits for its slowest call",
            "make the reward's time bounded in the answer's length (no nested loops over it, no retries without a "
            "limit)",
        )


def _values(run: DryRun, add, where) -> None:
    bad = [x for x in run.calls if x.bad]
    if bad:
        add(
            "reward-value",
            f"{run.function} returned {bad[0].bad} on {where.get(bad[0].row, bad[0].row)} ({_answer(bad[0])}), "
            f"{len(bad)} such call(s): verl's managers need a finite number (or a dict with a finite 'score'), as "
            "torch.tensor(scores) takes it",
            "return a float (or {'score': float, ...}); never None, NaN, inf, text or an array",
        )
    dicts = [x for x in run.calls if x.keys is not None and not x.bad]
    if dicts:
        shapes = Counter(tuple(x.keys) for x in dicts)
        if len(shapes) > 1 or len(dicts) < len([x for x in run.calls if x.score is not None]):
            (common, _), *_ = shapes.most_common()
            odd = next((x for x in run.calls if x.score is not None and tuple(x.keys or ()) != common), dicts[0])
            add(
                "reward-value",
                f"{run.function} returns results of different shapes: {_keys(common)} on most calls, "
                f"{_keys(odd.keys)} on {where.get(odd.row, odd.row)} ({_answer(odd)}); verl stacks the first row's "
                "keys over the batch (np.array of info[key]): a KeyError when a later row lacks one",
                "return the same keys on every answer (put a default, e.g. 'pred': '' when nothing was parsed)",
            )
            return
        lengths: dict[str, set[str]] = {}
        for x in dicts:
            for key, sig in (x.extras or {}).items():
                lengths.setdefault(key, set()).add(sig)
        ragged = {k: v for k, v in lengths.items() if len(v) > 1 and any(s.startswith("list[") for s in v)}
        if ragged:
            key, sigs = next(iter(ragged.items()))
            add(
                "reward-value",
                f"{run.function} returns {key!r} as lists of different lengths ({', '.join(sorted(sigs))}): verl "
                "stacks it with np.array over the batch, which refuses ragged lists",
                f"return {key!r} as one number or text per answer",
            )


def _keys(keys) -> str:
    return "{" + ", ".join(keys) + "}" if keys is not None else "a plain number"


def _constant(c: Checks, run: DryRun, add, rows_n) -> None:
    judged = {i for i, info in enumerate(run.rows) if info["judged"]}
    right = {i: v for i, v in run.by_row("right").items() if i in judged}
    wrong, empty = run.by_row("wrong"), run.by_row("empty")
    if not right:
        return
    tells = [i for i in right if right[i] > max(wrong.get(i, right[i]), empty.get(i, right[i]))]
    scores = [x.score for x in run.calls if x.score is not None]
    if any(x.error or x.crash or x.bad for x in run.calls):
        return
    blind = [i for i in right if i not in tells]
    if tells and len(blind) * 10 >= len(right):
        row = run.rows[blind[0]]
        add(
            "reward-constant",
            f"{run.function} tells right from wrong on {len(tells)} of {len(right)} sample rows, not on "
            f"{len(blind)} (e.g. {row['where']}, data_source {row['data_source']!r}): those rows teach nothing",
            "check how the reward reads those rows' ground truth (its type, its format) and answers",
            "warning",
        )
        return
    if tells:
        return
    same = len(set(scores)) == 1
    what = f"every score is {scores[0]:g}" if same else "it never scores the ground truth above a wrong or empty answer"
    add(
        "reward-constant",
        f"{run.function} cannot tell right from wrong on {len(right)} sample rows: {what} (the ground truth as the "
        "answer, also written as '#### x', '\\boxed{x}', 'Answer: x', '<answer>x</answer>'); GRPO's advantages are "
        "then all zero and nothing is learned",
        "make the reward compare the answer it extracts with ground_truth (check its parsing of the answer format "
        "your prompt asks for)",
    )


def _slow(run: DryRun, add, where, budget_s, budget_why, step_calls) -> None:
    per_call = run.per_call_s()
    if per_call is not None and budget_s and per_call > budget_s:
        severity = None if per_call > SLOW_ERROR * budget_s else "warning"
        add(
            "reward-slow",
            f"{run.function} takes {per_call * 1000:.0f} ms per call (median of "
            f"{len([x for x in run.calls if x.kind != 'long'])}"
            + (", stopped early" if run.stopped_early else "")
            + f"): {per_call * step_calls:.0f} s for a step's {step_calls} calls; the limit is "
            f"{budget_s * 1000:.1f} ms per call: {budget_why}",
            "make the reward faster (precompile regexes, no per-call model loads or network), or raise "
            "reward.max_step_share / reward.max_call_ms if the cost is known and accepted",
            severity,
        )
    long_calls = [x for x in run.calls if x.kind == "long" and not x.crash and x.seconds]
    if long_calls and budget_s:
        # the fastest call at each length (two rows each): a busy machine slows some calls, never speeds one up
        longest = max(x.length for x in long_calls)
        worst = min((x for x in long_calls if x.length == longest), key=lambda x: x.seconds)
        shorter = [x for x in long_calls if x.length < longest]
        growth = worst.seconds / max(min(x.seconds for x in shorter), 1e-6) if shorter else 0.0
        ratio = longest / max(1, max(x.length for x in shorter)) if shorter else 1.0
        # time growing as the square of the length (8x the characters, over 3 x 8 the time) is a fault even where
        # it fits today's limit only on short answers; any answer over SLOW_ERROR x the limit is one too
        superlinear = growth > 3 * ratio
        over = worst.seconds > budget_s and (worst.seconds > budget_s * SLOW_ERROR or superlinear)
        if over or (superlinear and worst.seconds > budget_s / 4):
            grows = f", {growth:.0f}x the time of a {ratio:.0f}x shorter one" if shorter else ""
            add(
                "reward-slow",
                f"{run.function} takes {worst.seconds:.2f} s on a {worst.length:,}-character answer "
                f"({where.get(worst.row, worst.row)}; data.max_response_length allows about that){grows}; "
                f"the limit is {budget_s * 1000:.1f} ms per call ({budget_why})",
                "make the reward linear in the answer's length (no loop over every prefix or pair of characters)",
                None if over else "warning",
            )


def _output(run: DryRun, add, step_calls) -> None:
    calls = max(1, len(run.calls))
    per_call = run.output_bytes / calls
    if per_call <= OUTPUT_WARN:
        return
    kept = f"; the first MiB is in {run.output_file}" if run.output_file else ""
    last = (run.output_tail or run.output_head).strip().splitlines()[-1:] or [""]
    add(
        "reward-output",
        f"{run.function} printed {run.output_bytes / 2**20:.1f} MiB over {calls} calls ({per_call / 1024:.0f} KiB a "
        f"call, {per_call * step_calls / 2**30:.2f} GiB a step of {step_calls} calls into the reward worker's log"
        f"{kept}); last line: {last[0][:120]!r}",
        "print only what you need to debug, once (e.g. for the first answers), or use logging at a level that is off",
        None if per_call > OUTPUT_ERROR else "warning",
    )
