"""The data and the reward, checked on a sample before launch (rules data-*, prompt-length, chat-template,
reward-dry-run, reward-value, reward-constant, reward-slow).

`data(c)` is check's part: the first data.sample_rows rows of each file that is on this machine (grpolab.verl.dataset):
the format, the columns verl reads (data.prompt_key, and what the reward manager indexes in a row, read from the
installed verl), prompts as chat messages, and a built-in reward for every data_source when reward.function is
null. `report()` is `grpolab data`'s (the CLI, a notebook view and preflight's data stage): the same, plus the
prompt-length distribution with the model's tokenizer and the reward's dry run in a subprocess.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from grpolab.importer import sandbox
from grpolab.problems import Problem, closest
from grpolab.recipe.cards import model_facts
from grpolab.recipe.cost import step_estimate
from grpolab.recipe.dotted import MISSING, get_dotted
from grpolab.recipe.schema import Recipe
from grpolab.rules import registry
from grpolab.rules.checks import Checks
from grpolab.rules.data_values import PREPARE, SOURCE, TRUTH, distinct, values
from grpolab.rules.dry_run import judge as judge_dry_run
from grpolab.rules.dry_run import run as run_dry_run
from grpolab.rules.reward import manager_of
from grpolab.rules.reward import reward as reward_rules
from grpolab.verl import dataset, rewards
from grpolab.verl.config import verl_version
from grpolab.verl.prompt_lengths import prompt_lengths
from grpolab.verl.reward_run import ENOUGH_S

_WHY = {
    SOURCE: "the reward manager passes it as data_source= (verl's built-in reward is chosen by it)",
    TRUTH: "the reward manager passes it as ground_truth=",
}
COLUMNS_SHOWN = 40  # `grpolab data` lists this many column names of a file


def prompt_kind(value: Any) -> str:
    """messages (a list of {role, content}), string, or what else the prompt column holds."""
    if isinstance(value, str):
        return "string"
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(m, dict) and "role" in m and "content" in m for m in value)
    ):
        return "messages"
    if isinstance(value, (list, tuple)) and not value:
        return "empty list"
    return type(value).__name__


def data(c: Checks, samples: list[dataset.Sample] | None = None) -> None:
    """Check's part: every data file that is here, sampled."""
    for s in dataset.samples(c.r) if samples is None else samples:
        sample_problems(c, s)


def sample_problems(c: Checks, s: dataset.Sample, spread: dataset.Spread | None = None) -> None:
    """The checks of one file's sample (`spread`: rows from across the file too, and what its scan found)."""
    if not s.here:
        return  # preflight reads it on the nodes; `grpolab data` names it
    key = s.key
    if not s.format:
        c.add(
            "data-file",
            key,
            s.file,
            f"{s.file}: verl reads .parquet, .json and .jsonl data files, not {s.path.rsplit('.', 1)[-1]!r} "
            "(its RLHFDataset raises `Unsupported file format`)",
            PREPARE,
        )
        return
    if s.error:
        c.add("data-file", key, s.file, f"{s.file} cannot be read: {s.error}", f"rewrite it; {PREPARE}")
        return
    if spread is not None and spread.error:
        c.add(
            "data-file",
            key,
            s.file,
            f"{s.file}: {spread.error} (looked at {spread.looked or 'the file'}): verl's loader (datasets) stops there",
            f"fix or drop that line; {PREPARE}",
        )
    if not s.rows:
        c.add("data-file", key, s.file, f"{s.file} has no rows", "point the recipe at a file with data", "warning")
        return
    n = len(s.rows)
    values(c, s, distinct(s, spread), spread)
    manager = manager_of(c)
    for column in [c.r.data.prompt_key, *(manager.columns if manager else (SOURCE, TRUTH))]:
        lacking = [i for i, row in enumerate(s.rows) if get_dotted(row, column, MISSING) is MISSING]
        if not lacking:
            continue
        if column == c.r.data.prompt_key:
            why = "data.prompt_key: the chat messages verl generates from"
            near = closest(column, s.columns)
            fix = f"set data.prompt_key to {near!r}, or rename the column; {PREPARE}" if near else PREPARE
        else:
            who = f"verl {verl_version()}'s {manager.name!r} reward manager" if manager else "verl's reward manager"
            why = f"{who} reads row[{']['.join(repr(p) for p in column.split('.'))}]: {_WHY.get(column, '')}"
            fix = f"add {column} to every row; {PREPARE}"
        c.add(
            "data-columns",
            key,
            s.file,
            f"{s.file}: {len(lacking)} of {n} sample rows lack column {column!r} ({why}; a KeyError on the cluster); "
            f"its columns: {', '.join(s.columns) or 'none'}",
            fix,
        )
    prompts = [row.get(c.r.data.prompt_key) for row in s.rows if c.r.data.prompt_key in row]
    kinds = Counter(prompt_kind(p) for p in prompts)
    other = {k: v for k, v in kinds.items() if k != "messages"}
    if other:
        kind, count = max(other.items(), key=lambda kv: kv[1])
        first = next(i for i, p in enumerate(prompts) if prompt_kind(p) == kind)
        preview = repr(prompts[first])[:80]
        c.add(
            "data-prompt",
            key,
            s.file,
            f"{s.file}: column {c.r.data.prompt_key!r} holds a {kind} in {count} of {len(prompts)} sample rows "
            f"(row {first}: {preview}); verl expects chat messages, a list of {{'role': 'user', 'content': ...}}",
            "wrap each prompt as [{'role': 'user', 'content': text}] (as verl's examples/data_preprocess do); "
            + PREPARE,
        )
    if not c.r.engine.verl:
        _fits_the_cpu_trainer(c, s)
    if c.r.reward.function is None:
        builtin = rewards.builtin()
        sources = Counter(row.get(SOURCE) for row in s.rows if SOURCE in row)
        unknown = {
            src: k for src, k in sources.items() if not (isinstance(src, str) and builtin and builtin.scores(src))
        }
        if builtin and unknown:
            shown = ", ".join(f"{src!r} ({k} of {n} rows)" for src, k in unknown.items())
            near = [closest(str(src), builtin.names) for src in unknown]
            hint = f" ({', '.join(repr(x) for x in near if x)} is close)" if any(near) else ""
            c.add(
                "data-source",
                key,
                s.file,
                f"{s.file}: data_source {shown} has no built-in reward in verl {verl_version()} (its "
                f"default_compute_score raises NotImplementedError at the first reward); it scores: {builtin.listed()}",
                f"set reward.function to a reward of your own (`path.py:name`), or write a data_source verl "
                f"scores in the data{hint}",
            )


def _fits_the_cpu_trainer(c: Checks, s: dataset.Sample) -> None:
    """TRL 1.16 neither drops nor cuts a long prompt, and the tiny model's answers must fit data.max_response_length
    with their EOS (one token a character: grpolab.local.tiny): the sample's longest of each against the limits."""
    d = c.r.data
    prompts = [str(m.get("content", "")) for r in s.rows for m in (r.get(d.prompt_key) or []) if isinstance(m, dict)]
    truths = [str(t) for r in s.rows if (t := get_dotted(r, TRUTH, MISSING)) is not MISSING]
    for key, limit, longest, need, what in (
        ("data.max_prompt_length", d.max_prompt_length, max(prompts, key=len, default=""), 0, "prompt"),
        ("data.max_response_length", d.max_response_length, max(truths, key=len, default=""), 1, "answer and its EOS"),
    ):
        if longest and len(longest) + need > limit:
            c.add(
                "engine-support",
                key,
                limit,
                f"{s.file}: the longest {what} in the sample ({longest[:40]!r}) needs {len(longest) + need} tokens, "
                f"over {key} {limit} (the CPU trainer refuses such data: TRL neither drops nor cuts it)",
                f"set {key} to at least {len(longest) + need}",
            )


# ---------------------------------------------------------------------------------------------- grpolab data


@dataclass
class FileSummary:
    key: str
    file: str
    here: bool
    format: str
    rows_read: int
    total: int | None
    columns: list[str]
    sources: dict[str, int]
    prompt_kinds: dict[str, int]
    error: str = ""
    spread_rows: int = 0  # rows read from across the file (grpolab.verl.dataset.spread)
    looked: str = ""  # how much of the file that looked at


@dataclass
class Report:
    """What `grpolab data` shows: per file, the prompt lengths, the dry run and every problem."""

    recipe: str
    files: list[FileSummary] = field(default_factory=list)
    lengths: Any = None  # grpolab.verl.prompt_lengths.Lengths
    max_prompt_length: int = 0
    dry_run: Any = None  # grpolab.verl.reward_run.DryRun
    step_s: float | None = None  # the cost model's step estimate
    budget_s: float | None = None  # what one call may take
    budget_why: str = ""
    problems: list[Problem] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["problems"] = [p.to_dict() for p in self.problems]
        if out["dry_run"]:  # the rows' own values (bytes, nested structs) stay out: the calls say what was scored
            out["dry_run"]["rows"] = len(self.dry_run.rows)
        return out


def report(recipe: Recipe, rows: int | None = None, *, dry: bool = True, tokenize: bool = True, isolate=None) -> Report:
    """`grpolab data`'s report. `isolate`: () -> (run, why not), how the dry run is contained (the front ends pass
    the import's isolation: grpolab.importer.sandbox); None: the isolation of this machine when it has one."""
    c = Checks(recipe, None)
    samples = dataset.samples(recipe, rows)
    out = Report(recipe.name, max_prompt_length=recipe.data.max_prompt_length)
    spreads = {}
    for s in samples:
        kinds = Counter(prompt_kind(r.get(recipe.data.prompt_key)) for r in s.rows if recipe.data.prompt_key in r)
        sources = Counter(str(r.get(SOURCE)) for r in s.rows if SOURCE in r)
        spreads[id(s)] = sp = dataset.spread(s, recipe.data.prompt_key)
        out.files.append(
            FileSummary(
                s.key,
                s.file,
                s.here,
                s.format,
                len(s.rows),
                s.total if s.total is not None else sp.total,
                s.columns,
                dict(sources),
                dict(kinds),
                s.error,
                len(sp.rows),
                sp.looked,
            )
        )
        if not s.here:
            c.add(
                "data-file",
                s.key,
                s.file,
                f"{s.file} is not on this machine: its sample, prompt lengths and the reward's dry run are not checked "
                "here",
                "run `grpolab data` where the file is, or `grpolab preflight` on the cluster",
                "warning",
            )

    reward_rules(c)
    for s in samples:
        sample_problems(c, s, spreads[id(s)])
    usable = [s for s in samples if s.here and s.rows and not s.error]
    train = next((s for s in usable if s.key == "data.train_files"), usable[0] if usable else None)
    if train is not None and tokenize:
        _lengths(c, out, train)
    # a reward that check already refuses (its file, its function, its signature, its manager) is not run
    refused = any(registry.rule(p.rule).family == "reward" and p.severity == "error" for p in c.problems)
    if train is not None and dry and not refused:
        _step_budget(c, out)
        files = [(s, spreads[id(s)]) for s in sorted(usable, key=lambda s: s is not train)]
        run = out.dry_run = run_dry_run(c, files, out.budget_s, isolate or _isolation)
        if run is not None:
            calls = recipe.data.train_batch_size * recipe.rollout.n
            judge_dry_run(c, run, out.budget_s, out.budget_why, calls)
    out.problems = c.problems
    return out


def _isolation():
    """The import's isolation when this machine has it: (its run, ""), else (None, why not)."""
    why = sandbox.available()
    return (sandbox.run, "") if why is None else (None, why)


def _lengths(c: Checks, out: Report, s: dataset.Sample) -> None:
    key = c.r.data.prompt_key
    prompts = [r[key] for r in s.rows if prompt_kind(r.get(key)) == "messages"]
    if not prompts:
        return
    found = out.lengths = prompt_lengths(c.r, prompts)
    if found.why_none:
        _lengths_without_tokenizer(c, s, prompts, found.why_none)
        return
    if found.no_template:
        c.add(
            "chat-template",
            "model.path",
            c.r.model.path,
            f"the tokenizer in {found.tokenizer} has no chat template: verl applies one to every prompt",
            "use the model's instruct/chat tokenizer, or add a chat_template to its tokenizer_config.json",
        )
        return
    if found.errors:
        row, why = found.errors[0]
        c.add(
            "chat-template",
            "data.chat_template_kwargs",
            c.r.data.chat_template_kwargs,
            f"{s.file}: the chat template of {found.tokenizer} fails on {len(found.errors)} of {len(prompts)} sample "
            f"prompts (row {row}: {why})",
            "fix those rows' messages (roles the template accepts), or data.chat_template_kwargs",
        )
    limit = c.r.data.max_prompt_length
    over = [n for n in found.lengths if n > limit]
    if not over:
        return
    d = c.r.data
    share = f"{len(over)} of {len(found.lengths)} sample prompts ({100 * len(over) / len(found.lengths):.0f} %)"
    if d.filter_overlong_prompts:
        what, severity = "verl drops them (data.filter_overlong_prompts)", "warning"
    elif d.truncation == "error":
        what, severity = "verl stops with `Prompt length ... is longer than` (data.truncation error)", "error"
    else:
        what, severity = (
            f"verl cuts them ({d.truncation} truncation): the question loses its {d.truncation} part",
            "warning",
        )
    c.add(
        "prompt-length",
        "data.max_prompt_length",
        limit,
        f"{s.file}: {share} are longer than data.max_prompt_length {limit} tokens (longest {max(over)}, with the "
        f"chat template of {found.tokenizer}); {what}",
        f"set data.max_prompt_length to at least {max(over)}, or data.filter_overlong_prompts: true to drop them",
        severity,
    )


# without the tokenizer, a prompt has at least this many tokens per CHARS_PER_TOKEN_MAX characters (English BPE
# averages about 4 characters a token; 8 is a bound no long prompt's average reaches)
CHARS_PER_TOKEN_MAX = 8


def _lengths_without_tokenizer(c: Checks, s: dataset.Sample, prompts: list, why: str) -> None:
    """Prompts surely over data.max_prompt_length by their characters alone (a lower bound of their tokens)."""
    limit = c.r.data.max_prompt_length
    chars = [sum(len(str(m.get("content", ""))) for m in p) for p in prompts]
    over = [n // CHARS_PER_TOKEN_MAX for n in chars if n // CHARS_PER_TOKEN_MAX > limit]
    if not over:
        return
    d = c.r.data
    severity = "error" if d.truncation == "error" and not d.filter_overlong_prompts else "warning"
    c.add(
        "prompt-length",
        "data.max_prompt_length",
        limit,
        f"{s.file}: {len(over)} of {len(prompts)} sample prompts have at least {max(over)} tokens by their characters "
        f"alone ({CHARS_PER_TOKEN_MAX} characters a token at most), over data.max_prompt_length {limit} ({why}: "
        "counted without the chat template)",
        f"set data.max_prompt_length to at least {max(over)} (more with the chat template), or "
        "data.filter_overlong_prompts: true to drop them; put the tokenizer at model.path to measure exactly",
        severity,
    )


def _step_budget(c: Checks, out: Report) -> None:
    """What one reward call may take: the step estimate's share over the step's calls, else reward.max_call_ms."""
    r = c.r
    calls = r.data.train_batch_size * r.rollout.n
    step = None
    if r.engine.verl and r.cluster.device != "cpu":  # the cpu profile's cost constants are placeholders
        facts, _ = model_facts(r)
        if facts is not None:
            try:
                step = step_estimate(r, facts).total
            except Exception:  # an estimate the model cannot make for this layout: the per-call limit holds
                step = None
    if step:
        out.step_s = step
        out.budget_s = step * r.reward.max_step_share / calls
        out.budget_why = (
            f"{r.reward.max_step_share:g} (reward.max_step_share) of the estimated step {step:.0f} s over its "
            f"{calls} calls (data.train_batch_size {r.data.train_batch_size} x rollout.n {r.rollout.n})"
        )
    else:
        out.budget_s = r.reward.max_call_ms / 1000
        out.budget_why = f"reward.max_call_ms {r.reward.max_call_ms:g} (no step estimate for this recipe)"


def histogram(lengths: list[int], limit: int, bins: int = 10) -> list[tuple[int, int, int]]:
    """(low, high, count) bins of the prompt lengths up to max(longest, limit): the notebook's and the CLI's."""
    top = max([*lengths, limit, 1])
    width = max(1, -(-top // bins))
    counts = Counter(min(n // width, bins - 1) for n in lengths)
    return [(i * width, (i + 1) * width, counts.get(i, 0)) for i in range(bins)]


def lines(rep: Report) -> list[str]:
    """The report as `grpolab data` prints it (the problems follow, in check's format)."""
    out = [f"recipe {rep.recipe}: data sample"]
    for f in rep.files:
        if not f.here:
            out.append(f"  {f.key} {f.file}: not on this machine")
            continue
        if f.error or not f.format:
            out.append(f"  {f.key} {f.file}: {f.error or 'not a format verl reads'}")
            continue
        of = f" of {f.total:,}" if f.total is not None else ""
        across = f"; {f.spread_rows} more from across it ({f.looked})" if f.looked else ""
        out.append(f"  {f.key} {f.file}: {f.format}, {f.rows_read} rows read{of}{across}")
        more = f", ... ({len(f.columns) - COLUMNS_SHOWN:,} more)" if len(f.columns) > COLUMNS_SHOWN else ""
        out.append(f"    columns: {', '.join(f.columns[:COLUMNS_SHOWN])}{more}")
        out.append(f"    prompts: {', '.join(f'{v} {k}' for k, v in f.prompt_kinds.items()) or 'none'}")
        out.append(f"    data_source: {', '.join(f'{k} ({v})' for k, v in f.sources.items()) or 'none'}")
    lg = rep.lengths
    if lg is None and rep.files and not any(f.here for f in rep.files):
        out.append("  prompt lengths: not measured (the data files are not on this machine)")
    elif lg is None:
        out.append("  prompt lengths: not measured (no prompts as chat messages)")
    elif lg.why_none:
        out.append(f"  prompt lengths: not measured ({lg.why_none})")
    elif lg.lengths:
        ls = sorted(lg.lengths)
        over = sum(n > rep.max_prompt_length for n in ls)
        out.append(
            f"  prompt tokens ({lg.tokenizer}, {'chat template applied' if lg.template else 'no chat template'}): "
            f"min {ls[0]}, "
            f"median {ls[len(ls) // 2]}, "
            f"max {ls[-1]}; {over} of {len(ls)} over data.max_prompt_length {rep.max_prompt_length}"
        )
        peak = max(c for _, _, c in histogram(ls, rep.max_prompt_length)) or 1
        for low, high, count in histogram(ls, rep.max_prompt_length):
            mark = " <- max_prompt_length" if low < rep.max_prompt_length <= high else ""
            out.append(f"    {low:>7}-{high:<7} {'#' * round(30 * count / peak):<30} {count}{mark}")
    run = rep.dry_run
    if run is not None:
        skipped = f" of {run.planned} planned (stopped after {ENOUGH_S:g} s)" if run.stopped_early else ""
        where = "an executor thread" if run.mode == "thread" else "its process's main thread"
        isolated = "isolated" if not run.isolation else "NOT isolated"
        out.append(
            f"  reward dry run: {run.function} on {len(run.rows)} rows, {len(run.calls)} calls{skipped}; called in "
            f"{where} as reward.manager calls it; {isolated}"
        )
        longest = max((x.length for x in run.calls), default=0)
        if longest:
            out.append(f"    answers up to {longest:,} characters")
        if run.output_bytes:
            kept = f" (the first MiB: {run.output_file})" if run.output_file else ""
            out.append(f"    it printed {run.output_bytes:,} bytes{kept}")
        for kind in ("right", "wrong", "empty"):
            got = list(run.by_row(kind).values())
            if got:
                out.append(
                    f"    {kind:5} answer: mean {sum(got) / len(got):.3g}, min {min(got):.3g}, max {max(got):.3g}"
                )
        per = run.per_call_s()
        if per is not None:
            out.append(
                f"    {per * 1000:.2f} ms per call (median); limit {rep.budget_s * 1000:.1f} ms: {rep.budget_why}"
                if rep.budget_s
                else f"    {per * 1000:.2f} ms per call (median)"
            )
    return out
