"""`grpolab data` and `grpolab data prepare` (issue 32): each data or reward fault, written here in code, is caught
in seconds with a message naming the file, the column or function, and the fix; a clean verl-format file passes;
prepare turns jsonl, csv, parquet and a `datasets` folder into verl's layout. Nothing is downloaded."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
from verl_data import parquet, verl_row  # noqa: E402

from grpolab.problems import errors  # noqa: E402
from grpolab.recipe.loader import load_recipe  # noqa: E402
from grpolab.rules.data import histogram, lines, report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = "params/data/tiny"
FAST = "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"


@pytest.fixture
def setup(tmp_path):
    """`setup(rows=..., reward=BODY, extra=[...])`: (the recipe, its data file); a recipe on a cpu profile (no step
    estimate: the per-call limit reward.max_call_ms holds) with a fsdp engine, its data and reward in tmp_path."""

    def make(rows=None, reward=None, extra=(), name="train.parquet"):
        data = tmp_path / name
        rows = [verl_row(i) for i in range(12)] if rows is None else rows
        if name.endswith(".parquet"):
            parquet(data, rows)
        else:
            data.write_text("\n".join(json.dumps(r) for r in rows))
        sets = [f"data.train_files={data}", f"data.val_files={data}", "train.engine=fsdp"]
        if reward is not None:
            (tmp_path / "rw.py").write_text(reward)
            sets.append(f"reward.function={tmp_path / 'rw.py'}:compute_score")
        return load_recipe(_base(tmp_path), [*sets, *extra]), str(data)

    return make


def _base(tmp_path: Path) -> str:
    path = tmp_path / "r.yaml"
    path.write_text("defaults: [base]\n")
    return str(path)


def by_rule(rep, rule):
    return [p for p in rep.problems if p.rule == rule]


def test_a_clean_file_with_verls_built_in_reward_passes(setup):
    recipe, _ = setup()
    rep = report(recipe)
    assert errors(rep.problems) == [], [p.format() for p in rep.problems]
    f = rep.files[0]
    assert f.format == "parquet" and f.rows_read == 12 and f.total == 12 and f.sources == {"openai/gsm8k": 12}
    assert f.prompt_kinds == {"messages": 12}
    right, wrong = rep.dry_run.by_row("right"), rep.dry_run.by_row("wrong")
    assert all(right[i] > wrong[i] for i in right)  # verl's gsm8k reward reads `#### x`


@pytest.mark.parametrize(
    "body, rule, words",
    [
        ("    return 0.0\n", "reward-constant", ["every score is 0", "rw.py:compute_score"]),
        ("    return 1.0 if str(ground_truth) in solution_str else 0.0\n", None, []),
        (
            "    if ground_truth == '3':\n        raise KeyError('no such row')\n"
            "    return 1.0 if str(ground_truth) in solution_str else 0.0\n",
            "reward-dry-run",
            ["raised on 1 of", "row 2", "KeyError"],
        ),
        ("    return float('nan')\n", "reward-value", ["nan", "finite"]),
        ("    return 'yes'\n", "reward-value", ["'yes'", "str"]),
        ("    return {'acc': 1.0}\n", "reward-value", ["without 'score'"]),
        (
            "    import time\n    time.sleep(0.004)\n    return 1.0 if str(ground_truth) in solution_str else 0.0\n",
            "reward-slow",
            ["ms per call", "reward.max_call_ms"],
        ),
    ],
    ids=["constant", "good", "raises-on-a-row", "nan", "string", "dict-without-score", "slow"],
)
def test_the_dry_run_catches_a_bad_reward(setup, body, rule, words):
    recipe, data = setup(reward=FAST + body, extra=["reward.max_call_ms=2"])
    rep = report(recipe, tokenize=False)
    found = [p for p in rep.problems if p.rule.startswith("reward")]
    if rule is None:
        assert found == [], [p.format() for p in found]
        return
    assert [p.rule for p in found] == [rule], [p.format() for p in found]
    assert found[0].key == "reward.function" and found[0].fix
    for word in words:
        assert word in found[0].message, found[0].message


def test_a_reward_that_hangs_is_stopped(setup):
    recipe, _ = setup(reward=FAST + "    import time\n    time.sleep(60)\n", extra=["reward.dry_run_timeout_s=1"])
    rep = report(recipe, tokenize=False)
    found = by_rule(rep, "reward-slow")
    assert rep.dry_run.timed_out and any("reward.dry_run_timeout_s 1 s" in p.message for p in found)
    assert any("did not return within" in p.message for p in found)  # the call itself is named too


def test_a_reward_that_does_not_import_is_named(setup):
    recipe, _ = setup(reward="import no_such_module_here\n" + FAST + "    return 0\n")
    found = by_rule(report(recipe, tokenize=False), "reward-dry-run")
    assert found and "no_such_module_here" in found[0].message and "does not load" in found[0].message


@pytest.mark.parametrize(
    "rows, name, rule, words",
    [
        (
            [verl_row(i, prompt=f"What is {i} + 1?") for i in range(4)],
            "train.parquet",
            "data-prompt",
            ["holds a string in 4 of 4", "'role': 'user'"],
        ),
        ([{"question": "1+1", "answer": "2"}] * 3, "train.jsonl", "data-columns", ["lack column 'prompt'", "question"]),
        (
            [{k: v for k, v in verl_row(i).items() if k != "reward_model"} for i in range(3)],
            "train.jsonl",
            "data-columns",
            ["'reward_model.ground_truth'", "naive"],
        ),
        ([verl_row(i, "my_math") for i in range(3)], "train.parquet", "data-source", ["'my_math' (3 of 3 rows)"]),
        ([verl_row(0)], "train.csv", "data-file", [".csv", "grpolab data prepare"]),
    ],
    ids=["string-prompt", "missing-prompt", "missing-ground-truth", "unknown-source", "csv"],
)
def test_data_faults_are_named_with_the_file_and_column(setup, rows, name, rule, words):
    recipe, data = setup(rows=rows, name=name)
    found = by_rule(report(recipe, dry=False, tokenize=False), rule)
    assert found and found[0].severity == "error", [p.format() for p in report(recipe, dry=False).problems]
    assert data in found[0].message and found[0].fix
    for word in words:
        assert word in found[0].message + found[0].fix


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    """A character tokenizer with a chat template, saved like a model's (one token per character)."""
    from grpolab.local.tiny import build_tokenizer

    folder = tmp_path_factory.mktemp("tok")
    tok = build_tokenizer()
    tok.chat_template = (
        "{% for m in messages %}{{ m['content'] }}{% endfor %}{% if add_generation_prompt %}={% endif %}"
    )
    tok.save_pretrained(folder)
    bare = tmp_path_factory.mktemp("bare")
    build_tokenizer().save_pretrained(bare)
    return folder, bare


def test_prompt_lengths_against_max_prompt_length(setup, tokenizer_dir):
    folder, bare = tokenizer_dir
    rows = [verl_row(i, prompt=[{"role": "user", "content": "1+1" * (i + 1)}]) for i in range(10)]
    recipe, data = setup(rows=rows, extra=[f"model.path={folder}", "data.max_prompt_length=16"])
    rep = report(recipe, dry=False)
    assert sorted(rep.lengths.lengths) == [3 * (i + 1) + 1 for i in range(10)]  # content + the generation prompt
    found = by_rule(rep, "prompt-length")
    assert found and found[0].severity == "error" and "5 of 10 sample prompts" in found[0].message
    assert "longest 31" in found[0].message and "at least 31" in found[0].fix and data in found[0].message
    assert sum(c for _, _, c in histogram(rep.lengths.lengths, 16)) == 10
    dropped = report(
        load_recipe(
            _base(Path(data).parent),
            [*_sets(data), f"model.path={folder}", "data.max_prompt_length=16", "data.filter_overlong_prompts=true"],
        ),
        dry=False,
    )
    assert (
        by_rule(dropped, "prompt-length")[0].severity == "warning"
        and "drops" in by_rule(dropped, "prompt-length")[0].message
    )
    no_template = report(load_recipe(_base(Path(data).parent), [*_sets(data), f"model.path={bare}"]), dry=False)
    assert by_rule(no_template, "chat-template") and str(bare) in by_rule(no_template, "chat-template")[0].message


def _sets(data: str) -> list[str]:
    return [f"data.train_files={data}", f"data.val_files={data}", "train.engine=fsdp"]


def test_the_cli_prints_the_summary_and_exits_1_on_errors(cli, setup):
    recipe, data = setup(rows=[verl_row(i, "my_math") for i in range(5)])
    proc = cli("data", recipe.files[-1], *[f"--set={s}" for s in _sets(data)], "--no-tokenizer")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"data.train_files {data}: parquet, 5 rows read of 5" in proc.stdout
    assert "data_source: my_math (5)" in proc.stdout and "[data-source]" in proc.stdout
    proc = cli("data", recipe.files[-1], *[f"--set={s}" for s in _sets(data)], "--no-tokenizer", "--json")
    doc = json.loads(proc.stdout)
    assert doc["files"][0]["sources"] == {"my_math": 5} and {p["rule"] for p in doc["problems"]} >= {"data-source"}


def test_only_the_first_rows_are_read(tmp_path):
    from grpolab.verl.dataset import sample

    path = parquet(tmp_path / "big.parquet", [verl_row(i) for i in range(5000)])
    got = sample("data.train_files", path, 7)
    assert len(got.rows) == 7 and got.total == 5000 and got.rows[0]["extra_info"]["index"] == 0


# ---------------------------------------------------------------------------------------------- prepare


def test_prepare_a_gsm8k_jsonl_the_way_verls_script_does(cli, tmp_path):
    raw = tmp_path / "gsm8k.jsonl"
    raw.write_text(
        "\n".join(json.dumps({"question": f"{i} + 1000?", "answer": f"steps\n#### {i + 1000:,}"}) for i in range(30))
    )
    out = tmp_path / "out"
    proc = cli("data", "prepare", str(raw), "--out", str(out), "--preset", "gsm8k", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    done = json.loads(proc.stdout)
    assert done["rows"] == {"train": 30} and done["data_source"] == "openai/gsm8k"
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "train.parquet").to_pylist()
    assert rows[2]["prompt"] == [
        {"role": "user", "content": '2 + 1000? Let\'s think step by step and output the final answer after "####".'}
    ]
    assert rows[2]["reward_model"] == {"style": "rule", "ground_truth": "1002"}
    assert rows[2]["extra_info"] == {"split": "train", "index": 2} and rows[2]["ability"] == "math"
    # what prepare wrote passes `grpolab data`, verl's own gsm8k reward included
    recipe = tmp_path / "r.yaml"
    recipe.write_text("defaults: [base]\n")
    proc = cli("data", str(recipe), *[f"--set={s}" for s in _sets(str(out / "train.parquet"))], "--no-tokenizer")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "right answer: mean 1" in proc.stdout and "wrong answer: mean 0" in proc.stdout


def test_prepare_reads_csv_parquet_and_a_datasets_folder(tmp_path):
    import pyarrow.parquet as pq

    from grpolab.verl.prepare import prepare

    (tmp_path / "q.csv").write_text("problem,solution\n" + "".join(f"p{i},\\boxed{{{i}}}\n" for i in range(5)))
    done = prepare(tmp_path / "q.csv", tmp_path / "a", preset="math")
    assert pq.read_table(done.files["train"]).to_pylist()[3]["reward_model"]["ground_truth"] == "3"
    src = parquet(tmp_path / "q.parquet", [{"q": f"x{i}", "a": i} for i in range(4)] + [{"q": "y", "a": None}])
    done = prepare(src, tmp_path / "b", question="q", answer="a", data_source="my_task", template="Q: {question}")
    assert done.rows == {"train": 4} and done.skipped == 1
    assert pq.read_table(done.files["train"]).to_pylist()[0]["prompt"][0]["content"] == "Q: x0"
    import datasets

    folder = tmp_path / "saved"
    datasets.DatasetDict(
        {
            s: datasets.Dataset.from_list([{"question": f"{s}{i}", "answer": str(i)} for i in range(3)])
            for s in ("train", "test")
        }
    ).save_to_disk(str(folder))
    done = prepare(folder, tmp_path / "c", data_source="my_task")
    assert done.rows == {"train": 3, "test": 3} and Path(done.files["test"]).name == "test.parquet"


def test_prepare_refuses_what_it_cannot_use(cli, tmp_path):
    raw = tmp_path / "x.jsonl"
    raw.write_text(json.dumps({"text": "hi"}))
    proc = cli("data", "prepare", str(raw), "--out", str(tmp_path / "o"), "--data-source", "s")
    assert (
        proc.returncode == 2
        and "no row had both 'question' and 'answer'" in proc.stderr
        and "--question" in proc.stderr
    )


def test_01_setups_data_view_shows_the_sample_and_returns_what_check_did_not_find(setup, tokenizer_dir, capsys):
    import grpolab.notebook as nb
    from grpolab.rules.gate import check

    folder, _ = tokenizer_dir
    reward = FAST + "    return 0.0\n"
    recipe, data = setup(reward=reward, extra=[f"model.path={folder}", "data.max_prompt_length=8"])
    _, problems = check(
        recipe.files[-1],
        [
            *_sets(data),
            f"reward.function={Path(data).parent / 'rw.py'}",
            f"model.path={folder}",
            "data.max_prompt_length=8",
        ],
        verl=False,
    )
    new = nb.show_data(recipe, problems)
    shown = capsys.readouterr().out
    assert "data.train_files" in shown and "prompt tokens" in shown and "reward dry run" in shown
    assert {p.rule for p in new} == {"reward-constant", "prompt-length"}  # check had not run the reward or tokenizer


def test_tiny_names_its_reward_and_data_and_run_dry_runs_them_before_submitting(cli, tmp_path):
    """tiny's reward is a verl-signature function named in its recipe, its data verl-format parquet (the data
    summary and the dry run cover them), and `grpolab run` refuses a reward that cannot tell right from wrong
    before anything starts (no Ray head is needed to refuse)."""
    recipe = load_recipe("tiny")
    assert recipe.reward.function.endswith("rewards/arith.py:compute_score")
    rep = report(recipe)
    assert errors(rep.problems) == [] and rep.files[0].sources == {"arith": 70}
    assert rep.dry_run.function.endswith("params/rewards/arith.py:compute_score")
    (tmp_path / "flat.py").write_text(FAST + "    return 1.0\n")
    proc = cli("run", "tiny", "--set", f"reward.function={tmp_path / 'flat.py'}:compute_score")
    assert proc.returncode == 1 and "reward dry run" in proc.stdout and "[reward-constant]" in proc.stdout
    assert "nothing was submitted" in proc.stdout and "submitted run" not in proc.stdout


def test_tinys_parquet_is_what_data_prepare_writes_from_its_jsonl(tmp_path):
    """tiny's recipe names params/data/tiny/{train,val}.parquet: `grpolab data prepare --preset arith` of the jsonl
    beside them; regenerated, the rows are the same (after editing a jsonl, run the command the failure names)."""
    import pyarrow.parquet as pq

    from grpolab.verl.prepare import prepare

    recipe = load_recipe("tiny")
    assert (recipe.data.train_files, recipe.data.val_files) == tuple(f"{DATA}/{s}.parquet" for s in ("train", "val"))
    copy = tmp_path / "tiny"  # the command below, run where the jsonl and the parquet sit side by side
    copy.mkdir()
    for split, rows in (("train", 70), ("val", 30)):
        for suffix in ("jsonl", "parquet"):
            (copy / f"{split}.{suffix}").write_bytes((ROOT / DATA / f"{split}.{suffix}").read_bytes())
        done = prepare(copy / f"{split}.jsonl", copy, preset="arith", split=split, force=(f"{split}.parquet",))
        written = pq.read_table(copy / f"{split}.parquet").to_pylist()
        assert done.rows == {split: rows} and written == pq.read_table(ROOT / DATA / f"{split}.parquet").to_pylist(), (
            f"regenerate it: grpolab data prepare {DATA}/{split}.jsonl --preset arith --split {split} --out {DATA} "
            f"--force {split}.parquet"
        )
    assert written[0] == {
        "data_source": "arith",
        "prompt": [{"role": "user", "content": "0+4="}],
        "ability": "arithmetic",
        "reward_model": {"style": "rule", "ground_truth": "4"},
        "extra_info": {"split": "val", "index": 0},
    }


def test_an_overlong_prompt_is_caught_without_the_tokenizer_too(setup):
    rows = [verl_row(i) for i in range(3)] + [verl_row(9, prompt=[{"role": "user", "content": "word " * 4000}])]
    recipe, data = setup(rows=rows, extra=["data.max_prompt_length=512", "model.path=/no/such/model"])
    found = by_rule(report(recipe, dry=False), "prompt-length")
    assert (
        found and found[0].severity == "error" and "1 of 4 sample prompts have at least 2500 tokens" in found[0].message
    )
    assert data in found[0].message and "at least 2500" in found[0].fix


def test_preflights_driver_runs_the_data_stage(setup):
    from grpolab.preflight.driver import data_rows

    recipe, _ = setup(reward=FAST + "    return 0.5\n")
    rows = data_rows(recipe)
    assert [(r.check, r.status) for r in rows] == [("data", "fail")] and "[reward-constant]" in rows[0].detail
    good, _ = setup()
    assert [(r.check, r.status) for r in data_rows(good)] == [("data", "ok")]


def test_a_corrupt_parquet_and_a_bad_jsonl_line_are_named(tmp_path):
    from grpolab.verl.dataset import sample

    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really a parquet file")
    assert sample("data.train_files", str(tmp_path / "broken.parquet"), 5).error
    (tmp_path / "bad.jsonl").write_text(json.dumps(verl_row(0)) + "\n{not json\n")
    got = sample("data.train_files", str(tmp_path / "bad.jsonl"), 5)
    assert "line 2 is not JSON" in got.error
    base = tmp_path / "r.yaml"
    base.write_text("defaults: [base]\n")
    recipe = load_recipe(str(base), [f"data.train_files={tmp_path / 'broken.parquet'}", "train.engine=fsdp"])
    found = [p for p in report(recipe, dry=False, tokenize=False).problems if p.key == "data.train_files"]
    assert [p.rule for p in found] == ["data-file"] and "broken.parquet cannot be read" in found[0].message
    assert found[0].severity == "error"


def test_a_reward_bound_by_assignment_is_judged_by_its_call(setup):
    """check cannot read the parameters of `compute_score = lambda ...`; the dry run calls it as verl does."""
    recipe, _ = setup(reward="compute_score = lambda solution_str, ground_truth: 1.0\n")
    found = by_rule(report(recipe, tokenize=False), "reward-dry-run")
    assert found and "unexpected keyword argument" in found[0].message and "data_source" in found[0].fix


def test_01_setups_data_view_shows_a_row_tinys_prompt_lengths_and_why_a_right_answer_scores_half(capsys):
    """Issue 44: the data view showed no row; tiny said it had no tokenizer (it is built in code), so no shipped
    recipe drew the histogram; glm5_2 blamed "no prompts as chat messages" for files that are simply not here; and
    tiny's dry run said "right answer: mean 0.5" with no word on why."""
    from grpolab import notebook as nb
    from grpolab.notebook.data import right_answer_note

    rep = report(load_recipe("tiny"))
    assert rep.lengths.lengths and set(rep.lengths.lengths) == {4}  # `a+b=`: four characters, four tokens
    assert rep.lengths.tokenizer == "grpolab.local.tiny's tokenizer, built in code" and not rep.lengths.template
    assert "no chat template): min 4, median 4, max 4; 0 of 70 over data.max_prompt_length 8" in "\n".join(lines(rep))
    note = right_answer_note(rep)
    assert note.startswith("about the dry run: a right answer scored 0.5 here, not 1.")
    assert "the right digits without EOS 0.5" in note  # the reward's own words on its scores
    recipe, problems = nb.check_recipe("tiny", [])
    nb.show_data(recipe, problems)
    out = capsys.readouterr().out
    assert "a sample row: row 0 of data.train_files (params/data/tiny/train.parquet)" in out
    assert "  prompt: [{'role': 'user', 'content': '0+0='}]" in out and "ground_truth" in out
    rep = report(load_recipe("glm5_2"))
    assert "  prompt lengths: not measured (the data files are not on this machine)" in lines(rep)
    recipe, problems = nb.check_recipe("glm5_2", [])
    nb.show_data(recipe, problems)
    assert "sample row" not in capsys.readouterr().out  # no row to show from a file that is not here


# ---------------------------------------------------------------------------------------------- issue 45: values, images


@pytest.mark.parametrize(
    "rows, rule, severity, words",
    [
        (
            [dict(verl_row(i), extra_info=json.dumps({"index": i})) for i in range(6)],
            "data-values",
            "error",
            ["extra_info is a JSON string", "6 of", "extra_info.get('index')"],
        ),
        (
            [
                dict(verl_row(i), reward_model={"style": "rule", "ground_truth": i if i % 2 else str(i)})
                for i in range(6)
            ],
            "data-values",
            "warning",
            ["a string in most rows but a number in 3 of"],
        ),
        (
            [dict(verl_row(i), images=[{"bytes": b"\x89PNG", "path": None}]) for i in range(4)],
            "data-images",
            "error",
            ["1 image(s) and 0 '<image>'", "asserts they match"],
        ),
        (
            [verl_row(i, prompt=[{"role": "user", "content": "<image>Find x."}]) for i in range(4)],
            "data-images",
            "error",
            ["says '<image>' but the row has no images", "never sees the figure"],
        ),
        (
            [dict(verl_row(i, prompt=[{"role": "user", "content": "<image>x"}]), images=[7]) for i in range(4)],
            "data-images",
            "error",
            ["images that verl cannot open"],
        ),
    ],
    ids=[
        "extra-info-json-string",
        "ground-truth-mixed-types",
        "image-without-placeholder",
        "placeholder-without-image",
        "image-of-another-kind",
    ],  # fmt: skip
)
def test_row_values_and_images_verl_needs(setup, rows, rule, severity, words):
    images = any("images" in r for r in rows)  # bytes: a parquet holds them, a jsonl does not
    recipe, data = setup(rows=rows, name="train.parquet" if images else "train.jsonl")
    found = by_rule(report(recipe, dry=False, tokenize=False), rule)
    assert found and found[0].severity == severity, [p.format() for p in report(recipe, dry=False).problems]
    for word in words:
        assert word in found[0].message, found[0].message
    assert data in found[0].message and found[0].fix


def test_images_with_a_text_only_model_are_an_error(setup, tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["Qwen3ForCausalLM"], "hidden_size": 64}))
    rows = [
        dict(verl_row(i, prompt=[{"role": "user", "content": "<image>x"}]), images=[{"bytes": b"x"}]) for i in range(3)
    ]
    recipe, _ = setup(rows=rows, extra=[f"model.path={model}"])
    found = by_rule(report(recipe, dry=False, tokenize=False), "data-images")
    assert found and "no vision tower" in found[0].message
    (model / "config.json").write_text(
        json.dumps({"architectures": ["Qwen2_5_VLForConditionalGeneration"], "vision_config": {}})
    )
    recipe, _ = setup(rows=rows, extra=[f"model.path={model}"])
    assert not by_rule(report(recipe, dry=False, tokenize=False), "data-images")


# ---------------------------------------------------------------------------------------------- issue 46: what a file is


def test_odd_data_files_are_named_in_one_line_never_hung_on_or_read_whole(tmp_path, monkeypatch):
    """A FIFO, a link to /dev/zero, a broken line after 5,000 rows, a UTF-8 BOM, deep nesting, an over-long line,
    a parquet of thousands of columns: each is named (or read, the BOM as datasets reads it), in seconds."""
    from grpolab.verl import dataset

    base = tmp_path / "r.yaml"
    base.write_text("defaults: [base]\n")

    def problems(path):
        recipe = load_recipe(str(base), [f"data.train_files={path}", f"data.val_files={path}", "train.engine=fsdp"])
        started = time.monotonic()
        rep = report(recipe, dry=False, tokenize=False)
        assert time.monotonic() - started < 20
        return [
            p for p in rep.problems if p.key == "data.train_files" and p.rule == "data-file" and p.severity == "error"
        ]

    os.mkfifo(tmp_path / "fifo.jsonl")
    assert "a FIFO, not a file of rows" in problems(tmp_path / "fifo.jsonl")[0].message
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    assert "a character device (it links to /dev/zero)" in problems(tmp_path / "zero.jsonl")[0].message
    late = tmp_path / "late.jsonl"
    late.write_text(
        "".join(json.dumps(verl_row(i)) + "\n" for i in range(5000)) + '{"data_source": "openai/gsm8k", "pro\n'
    )
    assert "line 5,001 is not JSON" in problems(late)[0].message and "datasets" in problems(late)[0].message
    bom = tmp_path / "bom.jsonl"
    bom.write_text("\ufeff" + "".join(json.dumps(verl_row(i)) + "\n" for i in range(5)), encoding="utf-8")
    assert problems(bom) == []
    array = tmp_path / "bom.json"
    array.write_text("\ufeff" + json.dumps([verl_row(i) for i in range(5)]), encoding="utf-8")
    assert problems(array) == []
    deep = tmp_path / "deep.jsonl"
    deep.write_text(json.dumps(verl_row(0)) + '\n{"x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    assert "line 2 nests deeper than JSON readers go" in problems(deep)[0].message
    monkeypatch.setattr(dataset, "MAX_LINE", 4096)
    dataset._read.cache_clear()
    dataset._spread.cache_clear()
    long = tmp_path / "long.jsonl"
    long.write_text(json.dumps(verl_row(0)) + "\n" + json.dumps(verl_row(1, prompt="x" * 10_000)) + "\n")
    assert "line 2 is over 4,096 bytes: not read" in problems(long)[0].message
    import pyarrow as pa
    import pyarrow.parquet as pq

    wide = {
        **{k: [v] for k, v in verl_row(0).items()},
        **{f"c{i}": pa.array([i % 100], pa.int8()) for i in range(3000)},
    }
    pq.write_table(pa.table(wide), tmp_path / "wide.parquet")
    assert problems(tmp_path / "wide.parquet") == []
    recipe = load_recipe(str(base), [f"data.train_files={tmp_path / 'wide.parquet'}", "train.engine=fsdp"])
    shown = "\n".join(lines(report(recipe, dry=False, tokenize=False)))
    assert "... (2,965 more)" in shown


# ---------------------------------------------------------------------------------------------- issue 46: prepare


def _gsm8k_jsonl(path: Path, n: int = 5) -> Path:
    path.write_text("".join(json.dumps({"question": f"q{i}", "answer": f"so #### {i}"}) + "\n" for i in range(n)))
    return path


def test_prepare_never_replaces_a_users_file(cli, tmp_path):
    """Over its source's own folder, or over an existing train.parquet, prepare writes nothing unless --force names
    each file; then it replaces exactly that one and says so; the source itself is never replaced."""
    raw = tmp_path / "raw"
    raw.mkdir()
    parquet(raw / "train.parquet", [{"question": f"q{i}", "answer": f"#### {i}"} for i in range(5)])
    before = (raw / "train.parquet").read_bytes()
    proc = cli("data", "prepare", str(raw / "train.parquet"), "--out", str(raw), "--preset", "gsm8k")
    assert proc.returncode == 2 and "train.parquet is the source itself" in proc.stderr
    assert (raw / "train.parquet").read_bytes() == before and sorted(os.listdir(raw)) == ["train.parquet"]
    src = _gsm8k_jsonl(raw / "src.jsonl")
    proc = cli("data", "prepare", str(src), "--out", str(raw), "--preset", "gsm8k")
    assert proc.returncode == 2 and "--force train.parquet" in proc.stderr and "it holds the source" in proc.stderr
    assert (raw / "train.parquet").read_bytes() == before
    out = tmp_path / "out"
    out.mkdir()
    (out / "train.parquet").write_bytes(b"mine")
    proc = cli("data", "prepare", str(src), "--out", str(out), "--preset", "gsm8k")
    assert proc.returncode == 2 and "train.parquet is there already" in proc.stderr
    assert (out / "train.parquet").read_bytes() == b"mine"
    proc = cli("data", "prepare", str(src), "--out", str(out), "--preset", "gsm8k", "--force", "test.parquet")
    assert proc.returncode == 2 and (out / "train.parquet").read_bytes() == b"mine"
    proc = cli("data", "prepare", str(src), "--out", str(out), "--preset", "gsm8k", "--force", "train.parquet")
    assert proc.returncode == 0 and "(replaced, as --force named it)" in proc.stdout
    import pyarrow.parquet as pq

    assert pq.read_table(out / "train.parquet").num_rows == 5 and sorted(os.listdir(out)) == ["train.parquet"]


@pytest.mark.parametrize("split", ["../x", "/abs/x", "a/b", ".hidden"])
def test_prepare_writes_only_into_out_under_a_plain_split_name(cli, tmp_path, split):
    src = _gsm8k_jsonl(tmp_path / "src.jsonl")
    proc = cli("data", "prepare", str(src), "--out", str(tmp_path / "out"), "--preset", "gsm8k", "--split", split)
    assert proc.returncode == 2 and "--split" in proc.stderr and "is not a name" in proc.stderr
    assert sorted(set(os.listdir(tmp_path)) - {"runs"}) == ["src.jsonl"]  # runs/: the cli fixture's own


def test_prepare_refuses_a_datasets_folder_whose_splits_leave_it_and_an_out_link(cli, tmp_path):
    folder = tmp_path / "saved"
    folder.mkdir()
    (folder / "dataset_dict.json").write_text(json.dumps({"splits": ["../escaped"]}))
    proc = cli("data", "prepare", str(folder), "--out", str(tmp_path / "out"), "--data-source", "s")
    assert proc.returncode == 2 and "dataset_dict.json's split '../escaped' is not a name" in proc.stderr
    src = _gsm8k_jsonl(tmp_path / "src.jsonl")
    (tmp_path / "mine").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "mine")
    proc = cli("data", "prepare", str(src), "--out", str(tmp_path / "link"), "--preset", "gsm8k")
    assert proc.returncode == 2 and "is a link" in proc.stderr and os.listdir(tmp_path / "mine") == []
    (tmp_path / "etc").symlink_to("/etc")
    proc = cli("data", "prepare", str(src), "--out", str(tmp_path / "etc"), "--preset", "gsm8k")
    assert proc.returncode == 2 and not os.path.exists("/etc/train.parquet")
    proc = cli("data", "prepare", str(src), "--out", "/usr/share/grpolab-test-out", "--preset", "gsm8k")
    assert proc.returncode == 2 and "system folder" in proc.stderr and not os.path.exists("/usr/share/grpolab-test-out")


@pytest.mark.parametrize(
    "name, text, words",
    [
        (
            "src.jsonl",
            "".join(json.dumps({"question": f"q{i}", "answer": f"#### {i}"}) + "\n" for i in range(9000)) + "{broken\n",
            ["line 9,001 is not JSON", "nothing was written"],
        ),
        ("src.csv", "question,answer\nq1,#### 1\nq2,#### 2,extra,cells\n", ["CSV parse error", "Expected 2 columns"]),
        ("src.jsonl", '{"question": "q", "answer": ' + "[" * 100_000 + "]" * 100_000 + "}\n", ["nests deeper"]),
        (
            "src.jsonl",
            "".join(
                json.dumps({"question": [{"role": "user", "content": "q"}], "answer": "#### 1"}) + "\n"
                for _ in range(3)
            )
            + json.dumps({"question": [{"role": "user", "content": ["an image", "and text"]}], "answer": "#### 2"})
            + "\n",
            ["does not fit verl's layout", "'question' column as messages"],
        ),
    ],
    ids=["broken-line-late", "ragged-csv", "deep-nesting", "content-of-another-type"],
)
def test_prepare_fails_in_one_line_and_leaves_nothing_half_written(cli, tmp_path, name, text, words):
    (tmp_path / name).write_text(text)
    proc = cli("data", "prepare", str(tmp_path / name), "--out", str(tmp_path / "out"), "--preset", "gsm8k")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    for word in words:
        assert word in proc.stderr, proc.stderr
    assert os.listdir(tmp_path / "out") == []  # no train.parquet with part of the rows, no staging folder


def test_prepare_reads_a_bom_tolerates_a_late_column_and_refuses_a_fifo(cli, tmp_path):
    bom = tmp_path / "bom.jsonl"
    bom.write_text("\ufeff" + json.dumps({"question": "q", "answer": "#### 3"}) + "\n", encoding="utf-8")
    assert cli("data", "prepare", str(bom), "--out", str(tmp_path / "a"), "--preset", "gsm8k").returncode == 0
    late = tmp_path / "late.jsonl"  # the question column appears only after 5,000 rows
    late.write_text(
        "".join(json.dumps({"id": i, "answer": "#### 1"}) + "\n" for i in range(5000))
        + "".join(json.dumps({"id": i, "question": "q", "answer": "#### 2"}) + "\n" for i in range(3))
    )
    proc = cli("data", "prepare", str(late), "--out", str(tmp_path / "b"), "--preset", "gsm8k", "--json")
    done = json.loads(proc.stdout)
    assert proc.returncode == 0 and done["rows"] == {"train": 3} and done["skipped"] == 5000
    assert "no column 'question'" in done["skipped_why"][0]
    os.mkfifo(tmp_path / "fifo.jsonl")
    started = time.monotonic()
    proc = cli("data", "prepare", str(tmp_path / "fifo.jsonl"), "--out", str(tmp_path / "c"), "--preset", "gsm8k")
    assert proc.returncode == 2 and "is a FIFO" in proc.stderr and time.monotonic() - started < 20
