"""Bad input never hurts: a corpus of hostile or careless inputs (files under tests/data/bad_inputs/ and command
lines in the table below) run through every verb of the CLI and through the notebooks.

For every case: the documented exit status (2 unusable input, 1 problems found, 0 clean), no traceback and no
`internal error`, an error is one line on stderr, `--json` prints one JSON document (errors too:
{"error": ..., "exit": 2}), secret values are never printed, and nothing is written anywhere but the test's
runs/ directory (the project tree, the rest of the test's tmp dir and /etc are compared before and after).

CLI cases run in-process through grpolab.cli.main (fast); a few run as real subprocesses, as a user types them
(closed pipe, a real `..` path from a working directory, the alias bomb's time), and a few run the notebooks with
papermill (slow: kept few).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BAD = ROOT / "tests" / "data" / "bad_inputs"
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
PAPERMILL = str(Path(sys.executable).with_name("papermill"))

# values of tests/data/bad_inputs/with_secrets.yaml and of the --set secrets below: never shown
SECRETS = (
    "hunter2-secret",
    "dbpass-secret",
    "api-pass-secret",
    "hf-access-secret",
    "marked-secret",
    "set-on-cli-secret",
)
SECRET_SETS = ["--set", "env.API_PASS=set-on-cli-secret"]
LONG = "x" * 5000

# (id, argv, exit status). In argv: {bad} the bad_inputs folder, {tmp} the test's tmp dir; the working directory
# is {tmp}/work/sub, so `../../etc/passwd` is {tmp}/etc/passwd (a stand-in for /etc/passwd, with a run-like
# sibling). Runs under {tmp}/runs: `done` (a finished run with metrics and a log), `other` (a record naming
# another run id), `corrupt` (status.json not JSON), `binary` (status.json binary).
FILE_CHECKS = [  # grpolab check FILE: (file, exit status)
    ("bad_env_name.yaml", 1),
    ("bad_logger.yaml", 1),
    ("billion_laughs.yaml", 2),
    ("binary.yaml", 2),
    ("bool_as_int.yaml", 1),
    ("deep_1.yaml", 2),
    ("deep_2.yaml", 2),
    ("defaults_not_list.yaml", 2),
    ("duplicate_key.yaml", 2),
    ("duplicate_section.yaml", 2),
    ("env_int_value.yaml", 1),
    ("huge_int.yaml", 1),
    ("inf_float.yaml", 1),
    ("injection_env_name.yaml", 1),
    ("int_as_bool.yaml", 1),
    ("latin1.yaml", 2),
    ("list_top.yaml", 2),
    ("loop_a.yaml", 2),
    ("loop_b.yaml", 2),
    ("missing_parent.yaml", 2),
    ("misspelled_key.yaml", 1),
    ("nan_float.yaml", 1),
    ("negative_n.yaml", 1),
    ("null_section.yaml", 1),
    ("number_key.yaml", 2),
    ("per_device_not_mapping.yaml", 2),
    ("python_tag.yaml", 2),
    ("scalar_top.yaml", 2),
    ("secrets_not_list.yaml", 1),
    ("self_alias.yaml", 2),
    ("string_as_int.yaml", 1),
    ("syntax_error.yaml", 2),
    ("tab_indent.yaml", 2),
    ("unknown_section.yaml", 1),
    ("utf16.yaml", 2),
    ("tiny_model_path.yaml", 0),  # model.path is ignored by trl: a warning, not an error
    ("with_secrets.yaml", 0),
]

CASES: list[tuple[str, list[str], int]] = [
    *[(f"check-{name.removesuffix('.yaml')}", ["check", "{bad}/" + name], code) for name, code in FILE_CHECKS],
    ("check-empty-file", ["check", "--no-verl", "{bad}/empty.yaml"], 1),
    ("check-json-binary", ["check", "--json", "{bad}/binary.yaml"], 2),
    ("check-json-bomb", ["check", "--json", "{bad}/billion_laughs.yaml"], 2),
    ("check-json-dup-section", ["check", "--json", "{bad}/duplicate_section.yaml"], 2),
    ("check-json-bool", ["check", "--json", "{bad}/bool_as_int.yaml"], 1),
    ("check-json-no-recipe", ["check", "--json", "no_such_recipe"], 2),
    ("check-no-recipe", ["check", "tinny"], 2),
    ("check-directory", ["check", "{bad}"], 2),
    ("check-dev-null", ["check", "/dev/null"], 2),
    ("check-long-name", ["check", LONG], 2),
    ("check-nul-in-name", ["check", "ti\x00ny"], 2),
    ("check-no-args", ["check"], 2),
    # the embedded head, import and plan
    ("head-bad-action", ["head", "bogus"], 2),
    ("head-unknown-flag", ["head", "status", "--frob"], 2),
    ("import-no-script", ["import", "/nonexistent/run.sh"], 2),
    ("import-json-no-script", ["import", "--json", "/nonexistent/run.sh"], 2),
    ("import-not-a-launch", ["import", "{bad}/empty.yaml"], 2),
    ("plan-no-recipe", ["plan", "nosuchrecipe"], 2),
    ("plan-json-no-recipe", ["plan", "--json", "nosuchrecipe"], 2),
    ("plan-zero-nodes", ["plan", "glm5_2", "--nodes", "0"], 2),
    ("plan-negative-top", ["plan", "glm5_2", "--top", "-3"], 2),
    ("plan-no-hardware", ["plan", "glm5_2", "--hardware", "nope"], 2),
    ("plan-write-escapes", ["plan", "glm5_2", "--write", "../../x"], 2),
    ("check-unknown-flag", ["check", "tiny", "--frobnicate"], 2),
    # grpolab data (issue 32)
    ("data-no-recipe", ["data", "nosuchrecipe"], 2),
    ("data-json-no-recipe", ["data", "--json", "nosuchrecipe"], 2),
    ("data-zero-rows", ["data", "tiny", "--rows", "0"], 2),
    ("data-two-recipes", ["data", "tiny", "glm5_2"], 2),
    ("data-prepare-no-source", ["data", "prepare", "--out", "/tmp"], 2),
    ("data-prepare-missing-source", ["data", "prepare", "/nonexistent/x.jsonl", "--out", "/tmp/x"], 2),
    # --set: strict types, malformed overrides, twice
    ("set-bool-for-int", ["check", "tiny", "--set", "cluster.nnodes=True"], 1),
    ("set-quoted-int", ["check", "tiny", "--set", 'rollout.n="8"'], 1),
    ("set-int-for-bool", ["check", "tiny", "--set", "trainer.val_before_train=0"], 1),
    ("set-inf", ["check", "tiny", "--set", "rollout.temperature=.inf"], 1),
    ("set-nan", ["check", "tiny", "--set", "rollout.temperature=.nan"], 1),
    ("set-str-for-float", ["check", "tiny", "--set", "rollout.temperature=hot"], 1),
    ("set-huge-int", ["check", "tiny", "--set", "data.train_batch_size=99999999999999999999"], 1),
    ("set-negative", ["check", "tiny", "--set", "rollout.n=-1"], 1),
    # huge counts in a multi-node recipe: the rules' "nearest valid" suggestions must not loop over them
    *[
        (f"set-huge-{key}", ["check", "--no-verl", "qwen3_8b", "--set", f"{key}=99999999999999999999"], 1)
        for key in ("cluster.nnodes", "cluster.devices_per_node", "train.tp", "rollout.tp", "data.train_batch_size")
    ],
    ("set-huge-train.pp", ["check", "--no-verl", "qwen3_8b", "--set", "train.pp=99999999999999997"], 1),
    ("set-no-equals", ["check", "tiny", "--set", "rollout.n"], 2),
    ("set-empty-key", ["check", "tiny", "--set", "=4"], 2),
    ("set-unknown-key", ["check", "tiny", "--set", "rollout.temprature=0.7"], 1),
    ("set-unknown-section", ["check", "tiny", "--set", "rolout.n=4"], 1),
    ("set-section-scalar", ["check", "tiny", "--set", "rollout=5"], 1),
    # a value YAML cannot read is taken as the string it is, which the schema then refuses
    ("set-yaml-syntax", ["check", "tiny", "--set", "rollout.n=[1,2"], 1),
    ("set-python-tag", ["check", "tiny", "--set", "rollout.n=!!python/object/apply:os.system [ls]"], 1),
    ("set-alias", ["check", "tiny", "--set", "rollout.n=*a"], 1),
    ("set-bad-env-name", ["check", "tiny", "--set", "env.BAD NAME=1"], 1),
    ("set-injection-env-name", ["check", "tiny", "--set", "env.X;rm -rf ~=1"], 1),
    ("set-secrets-not-list", ["check", "tiny", "--set", "secrets=HF_TOKEN"], 1),
    ("set-bad-logger", ["check", "tiny", "--set", "trainer.logger=[console,pigeon]"], 1),
    ("set-json-bool-for-int", ["check", "--json", "tiny", "--set", "cluster.nnodes=True"], 1),
    # show
    ("show-binary", ["show", "{bad}/binary.yaml"], 2),
    ("show-bomb", ["show", "{bad}/billion_laughs.yaml"], 2),
    ("show-latin1", ["show", "{bad}/latin1.yaml"], 2),
    ("show-utf16", ["show", "{bad}/utf16.yaml"], 2),
    ("show-dup-section", ["show", "{bad}/duplicate_section.yaml"], 2),
    ("show-python-tag", ["show", "{bad}/python_tag.yaml"], 2),
    ("show-loop", ["show", "{bad}/loop_a.yaml"], 2),
    ("show-no-recipe", ["show", "no_such_recipe"], 2),
    ("show-bool-for-int", ["show", "{bad}/bool_as_int.yaml"], 1),
    ("show-set-malformed", ["show", "tiny", "--set", "rollout.n"], 2),
    ("show-secrets", ["show", "{bad}/with_secrets.yaml", *SECRET_SETS], 0),
    ("show-json-unknown-flag", ["show", "--json", "{bad}/with_secrets.yaml"], 2),
    ("show-extra-arg", ["show", "tiny", "qwen3_8b"], 2),
    # render
    ("render-binary", ["render", "{bad}/binary.yaml"], 2),
    ("render-bomb", ["render", "--format", "sh", "{bad}/billion_laughs.yaml"], 2),
    ("render-latin1", ["render", "{bad}/latin1.yaml"], 2),
    ("render-bad-env-name-sh", ["render", "--format", "sh", "tiny", "--set", "env.BAD NAME=1"], 1),
    ("render-injection-env-name", ["render", "--format", "sh", "{bad}/injection_env_name.yaml"], 1),
    ("render-bad-format", ["render", "--format", "xml", "tiny"], 2),
    ("render-json-bad-format", ["render", "--json", "--format", "xml", "tiny"], 2),
    ("render-bool-for-int", ["render", "tiny", "--set", "cluster.nnodes=True"], 1),
    ("render-secrets-overrides", ["render", "{bad}/with_secrets.yaml", *SECRET_SETS], 0),
    ("render-secrets-sh", ["render", "--format", "sh", "{bad}/with_secrets.yaml", *SECRET_SETS], 0),
    ("render-secrets-json", ["render", "--format", "json", "{bad}/with_secrets.yaml", *SECRET_SETS], 0),
    ("render-no-recipe", ["render", "nope"], 2),
    # preflight: the recipe is checked before any cluster is reached
    ("preflight-binary", ["preflight", "{bad}/binary.yaml"], 2),
    ("preflight-bomb", ["preflight", "{bad}/billion_laughs.yaml"], 2),
    ("preflight-json-binary", ["preflight", "--json", "{bad}/binary.yaml"], 2),
    ("preflight-dup-section", ["preflight", "{bad}/duplicate_section.yaml"], 2),
    ("preflight-no-recipe", ["preflight", "no_such_recipe"], 2),
    ("preflight-timeout-word", ["preflight", "tiny", "--timeout", "soon"], 2),
    ("preflight-json-timeout-word", ["preflight", "--json", "tiny", "--timeout", "soon"], 2),
    ("preflight-set-malformed", ["preflight", "tiny", "--set", "rollout.n"], 2),
    # run --dry-run
    ("run-dry-run-id-dotdot", ["run", "--dry-run", "--run-id", "../../x", "tiny"], 2),
    ("run-dry-run-id-slash", ["run", "--dry-run", "--run-id", "a/b", "tiny"], 2),
    ("run-dry-run-id-dots", ["run", "--dry-run", "--run-id", "..", "tiny"], 2),
    ("run-dry-run-id-space", ["run", "--dry-run", "--run-id", "a b", "tiny"], 2),
    ("run-dry-run-id-empty", ["run", "--dry-run", "--run-id", "", "tiny"], 2),
    ("run-dry-run-id-long", ["run", "--dry-run", "--run-id", LONG, "tiny"], 2),
    ("run-dry-run-id-absolute", ["run", "--dry-run", "--run-id", "/etc/x", "tiny"], 2),
    ("run-dry-run-id-newline", ["run", "--dry-run", "--run-id", "a\nb", "tiny"], 2),
    ("run-dry-run-binary", ["run", "--dry-run", "{bad}/binary.yaml"], 2),
    ("run-dry-run-bomb", ["run", "--dry-run", "{bad}/billion_laughs.yaml"], 2),
    ("run-dry-run-bool-for-int", ["run", "--dry-run", "{bad}/bool_as_int.yaml"], 1),
    ("run-dry-run-dup-key", ["run", "--dry-run", "{bad}/duplicate_key.yaml"], 2),
    ("run-dry-run-secrets", ["run", "--dry-run", "{bad}/with_secrets.yaml", *SECRET_SETS], 0),
    ("run-no-recipe", ["run", "--dry-run", "nope"], 2),
    ("run-bad-flag", ["run", "--dry-run", "--wiat", "tiny"], 2),
    # runs / status / logs / stop
    ("runs-extra-arg", ["runs", "extra"], 2),
    ("runs-with-bad-records", ["runs"], 0),
    ("status-dotdot-passwd", ["status", "../../etc/passwd"], 2),
    ("status-dotdot-dir", ["status", "../../etc"], 2),
    ("status-etc-passwd", ["status", "/etc/passwd"], 2),
    ("status-etc", ["status", "/etc"], 2),
    ("status-not-a-run", ["status", "{tmp}/notrun"], 2),
    ("status-record-other-id", ["status", "{tmp}/runs/other"], 2),
    ("status-record-other-id-by-name", ["status", "other"], 2),
    ("status-record-corrupt", ["status", "corrupt"], 2),
    ("status-record-binary", ["status", "binary"], 2),
    ("status-no-run", ["status", "no-such-run"], 2),
    ("status-empty", ["status", ""], 2),
    ("status-long", ["status", LONG], 2),
    ("status-nul", ["status", "a\x00b"], 2),
    ("status-json-no-run", ["status", "--json", "no-such-run"], 2),
    ("status-json-dotdot", ["status", "--json", "../../etc/passwd"], 2),
    ("status-no-args", ["status"], 2),
    ("logs-negative-tail", ["logs", "--tail", "-5", "done"], 2),
    ("logs-word-tail", ["logs", "--tail", "some", "done"], 2),
    ("logs-float-tail", ["logs", "--tail", "1.5", "done"], 2),
    ("logs-dotdot", ["logs", "../../etc"], 2),
    ("logs-etc-passwd", ["logs", "/etc/passwd"], 2),
    ("logs-not-a-run", ["logs", "{tmp}/notrun"], 2),
    ("logs-no-run", ["logs", "no-such-run"], 2),
    ("logs-json-unknown-flag", ["logs", "--json", "done"], 2),
    ("stop-no-run", ["stop", "no-such-run"], 2),
    ("stop-dotdot", ["stop", "../../etc"], 2),
    ("stop-etc-passwd", ["stop", "/etc/passwd"], 2),
    ("stop-not-a-run", ["stop", "{tmp}/notrun"], 2),
    ("stop-record-other-id", ["stop", "{tmp}/runs/other"], 2),
    # monitor
    ("monitor-not-a-run", ["monitor", "{tmp}/notrun"], 2),
    ("monitor-dotdot-dir", ["monitor", "../../etc"], 2),
    ("monitor-etc", ["monitor", "/etc"], 2),
    ("monitor-no-run", ["monitor", "no-such-run"], 2),
    ("monitor-json-no-run", ["monitor", "--json", "no-such-run"], 2),
    ("monitor-record-other-id", ["monitor", "{tmp}/runs/other"], 2),
    # the curves cannot be written there: a note, the report still shows
    ("monitor-png-is-a-dir", ["monitor", "done", "--png", "{tmp}/notrun"], 0),
    ("monitor-png-under-a-file", ["monitor", "done", "--png", "../../etc/passwd/curves.png"], 0),
    ("monitor-thresholds-binary", ["monitor", "done", "--no-png", "--thresholds", "{bad}/binary.yaml"], 2),
    ("monitor-thresholds-bomb", ["monitor", "done", "--no-png", "--thresholds", "{bad}/billion_laughs.yaml"], 2),
    ("monitor-thresholds-missing", ["monitor", "done", "--no-png", "--thresholds", "{tmp}/nope.yaml"], 2),
    ("monitor-empty", ["monitor", ""], 2),
    # diagnose: a log (any file), a folder of logs, or a run
    ("diagnose-no-such", ["diagnose", "no-such-run"], 2),
    ("diagnose-json-no-such", ["diagnose", "--json", "no-such-run"], 2),
    ("diagnose-corrupt-record", ["diagnose", "{tmp}/runs/corrupt"], 2),
    ("diagnose-binary-file", ["diagnose", "{bad}/binary.yaml"], 2),  # an ELF binary: not a text log
    ("diagnose-empty", ["diagnose", ""], 2),
    # `done` ended SUCCEEDED, but its metrics.jsonl holds no step in verl's format ({"step", "data"}): a silent failure
    ("diagnose-done", ["diagnose", "done", "--no-refresh"], 1),
    ("diagnose-passwd-as-a-log", ["diagnose", "../../etc/passwd"], 0),
    # card
    ("card-unknown-model", ["card", "acme/unheard-of-9b"], 2),
    ("card-json-unknown-model", ["card", "--json", "acme/unheard-of-9b"], 2),
    ("card-dir-without-config", ["card", "{bad}"], 2),
    ("card-yaml-not-a-config", ["card", "{bad}/binary.yaml"], 2),
    ("card-out-not-yaml", ["card", "Qwen/Qwen3-8B", "--out", "{tmp}/card.txt"], 2),
    ("lab-dir-is-a-file", ["lab", "--dry-run", "--dir", "{bad}/binary.yaml"], 2),
    ("lab-port-not-a-number", ["lab", "--dry-run", "--port", "http"], 2),
    ("card-out-exists", ["card", "Qwen/Qwen3-8B", "--out", "{bad}/empty.yaml"], 2),
    ("card-no-args", ["card"], 2),
    # compare
    ("compare-no-baseline-flag", ["compare", "done"], 2),
    ("compare-no-run", ["compare", "no-such-run", "--baseline", "done"], 2),
    ("compare-no-baseline-run", ["compare", "done", "--baseline", "no-such-run"], 2),
    ("compare-not-a-run", ["compare", "{tmp}/notrun", "--baseline", "done"], 2),
    ("compare-dotdot", ["compare", "../../etc", "--baseline", "done"], 2),
    ("compare-steps-word", ["compare", "done", "--baseline", "done", "--steps", "abc"], 2),
    ("compare-steps-reversed", ["compare", "done", "--baseline", "done", "--steps", "5-1"], 2),
    ("compare-thresholds-binary", ["compare", "done", "--baseline", "done", "--thresholds", "{bad}/binary.yaml"], 2),
    ("compare-json-no-run", ["compare", "--json", "no-such-run", "--baseline", "done"], 2),
    # resume, export (grpolab.jobs.resume / export): a run that is no run, bad steps; a run never submitted
    ("resume-no-run", ["resume", "no-such-run"], 2),
    ("resume-dotdot", ["resume", "../../etc"], 2),
    ("resume-from-negative", ["resume", "done", "--from", "-1"], 2),
    ("resume-from-word", ["resume", "done", "--from", "last"], 2),
    ("resume-run-id-dotdot", ["resume", "done", "--run-id", "../x"], 2),
    ("resume-never-submitted", ["resume", "done"], 1),
    ("export-no-run", ["export", "no-such-run"], 2),
    ("export-json-no-run", ["export", "--json", "no-such-run"], 2),
    ("export-step-word", ["export", "done", "--step", "x"], 2),
    ("export-never-submitted", ["export", "done"], 1),
    # the command line itself
    ("no-verb", [], 2),
    ("unknown-verb", ["trian", "tiny"], 2),
    ("json-unknown-verb", ["--json", "trian"], 2),
    ("ls-extra-arg", ["ls", "extra"], 2),
    ("ls-json-unknown-flag", ["ls", "--json"], 2),
]


def _snapshot(root: Path, skip: tuple[str, ...] = ()) -> dict[str, tuple[int, int]]:
    """{relative path: (size, mtime_ns)} of every file under root, but caches and the skipped top folders."""
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = Path(dirpath).relative_to(root)
        dirnames[:] = [
            d
            for d in dirnames
            if d not in (".git", ".venv", "__pycache__", ".pytest_cache")
            and not (rel == Path(".") and (d in skip or d == ".cache"))  # the suite's GRPOLAB_CACHE (conftest)
        ]
        for name in filenames:
            st = os.lstat(os.path.join(dirpath, name))
            files[str(rel / name)] = (st.st_size, st.st_mtime_ns)
    return files


def _etc_names() -> set[str]:
    return set(os.listdir("/etc"))


@pytest.fixture
def world(tmp_path, monkeypatch, _isolated_runs):
    """The test's tmp dir: runs/ with good and broken runs, a stand-in /etc, a directory that is no run."""
    runs = _isolated_runs
    done = runs / "done"
    (done / "logs").mkdir(parents=True)
    (done / "status.json").write_text(
        json.dumps({"run_id": "done", "state": "SUCCEEDED", "recipe": "tiny", "created": 1.0, "updated": 2.0})
    )
    (done / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "critic/score/mean": 0.1 * s}) + "\n" for s in range(1, 6))
    )
    (done / "logs" / "job.log").write_text("".join(f"line {i}\n" for i in range(20)))
    (runs / "other").mkdir()
    (runs / "other" / "status.json").write_text(
        json.dumps({"run_id": "someone-else", "state": "RUNNING", "job_id": "raysubmit_foreign"})
    )
    (runs / "corrupt").mkdir()
    (runs / "corrupt" / "status.json").write_text('{"run_id": "corrupt", "state": ')
    (runs / "binary").mkdir()
    (runs / "binary" / "status.json").write_bytes(b"\xff\xfe\x00\x01" * 50)
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (tmp_path / "notrun").mkdir()
    (tmp_path / "notrun" / "metrics.jsonl").write_text('{"step": 1, "critic/score/mean": 0.5}\n')
    work = tmp_path / "work" / "sub"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    return tmp_path


def _fill(argv: list[str], tmp: Path) -> list[str]:
    return [a.replace("{bad}", str(BAD)).replace("{tmp}", str(tmp)) for a in argv]


def _assert_clean(code: int, want: int, out: str, err: str, as_json: bool, secrets_shown: bool = False) -> None:
    text = out + err
    assert code == want, f"exit {code}, expected {want}\nstdout: {out[-1500:]}\nstderr: {err[-1500:]}"
    assert "Traceback" not in text and "internal error" not in text, text[-3000:]
    if want == 2:  # unusable input: one line on stderr, naming the verb
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("grpolab"), err
    if as_json:
        doc = json.loads(out)  # one JSON document, errors included
        if want == 2:
            assert doc["exit"] == 2 and isinstance(doc["error"], str) and doc["error"], doc
    if not secrets_shown:
        for value in SECRETS:
            assert value not in text, f"secret {value!r} printed"


@pytest.mark.parametrize("argv, want", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_cli(world, argv, want, capsys):
    from grpolab.cli import main

    tmp = world
    project, others, etc = _snapshot(ROOT), _snapshot(tmp, skip=("runs",)), _etc_names()
    start = time.perf_counter()
    code = main(_fill(argv, tmp))
    seconds = time.perf_counter() - start
    captured = capsys.readouterr()
    _assert_clean(code, want, captured.out, captured.err, "--json" in argv)
    assert _snapshot(ROOT) == project, "wrote into the project tree"
    assert _snapshot(tmp, skip=("runs",)) == others, "wrote outside runs/"
    assert _etc_names() == etc, "wrote into /etc"
    if "billion_laughs" in " ".join(argv):
        assert seconds < 1.0, f"the alias bomb took {seconds:.2f} s"


def test_the_corpus_is_large_and_covers_every_verb():
    from grpolab.cli import VERBS

    assert len(CASES) + len(SUBPROCESS_CASES) + len(NOTEBOOK_CASES) >= 120
    used = {next((a for a in argv if a in VERBS), None) for _, argv, _ in CASES}
    assert set(VERBS) <= used, set(VERBS) - used
    unused = {p.name for p in BAD.iterdir()} - {a.rsplit("/", 1)[-1] for _, argv, _ in CASES for a in argv}
    assert unused <= {"deep_3.yaml"}, unused  # deep_3 is reached through deep_1 / deep_2


def test_render_shows_secrets_only_when_asked(world, capsys):
    """The counterpart of the masked render cases: --show-secrets prints them, so masking is not an accident."""
    from grpolab.cli import main

    shown = [v for v in SECRETS if v != "api-pass-secret"]  # the --set value replaces the file's API_PASS
    for verb in ("render", "show"):
        code = main([verb, "--show-secrets", str(BAD / "with_secrets.yaml"), *SECRET_SETS])
        out = capsys.readouterr().out
        assert code == 0
        assert all(value in out for value in shown), out


def test_set_twice_and_ignored_model_path_are_warned(world, capsys):
    from grpolab.cli import main

    assert main(["check", "tiny", "--set", "rollout.n=4", "--set", "rollout.n=8"]) == 0
    assert "rollout.n is set 2 times" in capsys.readouterr().out
    assert main(["check", str(BAD / "tiny_model_path.yaml")]) == 0
    assert "model.path" in capsys.readouterr().out


# ------------------------------------------------------------------------------------- as real subprocesses

SUBPROCESS_CASES = [
    ("status-dotdot-passwd", ["status", "../../etc/passwd"], 2),
    ("check-binary", ["check", "{bad}/binary.yaml"], 2),
    ("check-json-bomb", ["check", "--json", "{bad}/billion_laughs.yaml"], 2),
    ("logs-negative-tail", ["logs", "--tail", "-5", "done"], 2),
    ("render-secrets-sh", ["render", "--format", "sh", "{bad}/with_secrets.yaml", *SECRET_SETS], 0),
    ("run-dry-run-id-dotdot", ["run", "--dry-run", "--run-id", "../../x", "tiny"], 2),
]


@pytest.mark.parametrize("argv, want", [c[1:] for c in SUBPROCESS_CASES], ids=[c[0] for c in SUBPROCESS_CASES])
def test_bad_input_subprocess(world, argv, want):
    tmp = world
    project, others, etc = _snapshot(ROOT), _snapshot(tmp, skip=("runs",)), _etc_names()
    proc = subprocess.run(
        [GRPOLAB, *_fill(argv, tmp)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp / "work" / "sub",
        env={**os.environ, "GRPOLAB_RUNS": str(tmp / "runs")},
    )
    _assert_clean(proc.returncode, want, proc.stdout, proc.stderr, "--json" in argv)
    assert _snapshot(ROOT) == project
    assert _snapshot(tmp, skip=("runs",)) == others
    assert _etc_names() == etc


def test_monitor_into_a_closed_pipe_is_quiet(world):
    """`grpolab monitor RUN | head -1`: the reader goes away; no BrokenPipeError, no traceback."""
    proc = subprocess.run(
        f"{GRPOLAB} monitor done --no-png | head -c 1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=world / "work" / "sub",
        env={**os.environ, "GRPOLAB_RUNS": str(world / "runs")},
    )
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.stderr.strip() == "", proc.stderr


# ------------------------------------------------------------------------------------- notebooks (papermill)

NOTEBOOK_CASES = [
    ("setup-binary-recipe", "01_setup", ["-p", "model", "{bad}/binary.yaml"], "binary file"),
    ("setup-alias-bomb", "01_setup", ["-p", "model", "{bad}/billion_laughs.yaml"], "expands to more than"),
    ("setup-bool-for-int", "01_setup", ["-y", "overrides: [cluster.nnodes=True]"], "cluster.nnodes"),
    ("launch-run-id-dotdot", "03_launch", ["-p", "run_id", "../../x", "-p", "dry_run", "True"], "../../x"),
    ("launch-resume-never-submitted", "03_launch", ["-p", "resume", "done", "-p", "dry_run", "True"], "no recipe.yaml"),
    ("monitor-not-a-run", "04_monitor", ["-p", "run_id", "{tmp}/notrun", "-p", "wait", "False"], "not a run"),
]


@pytest.mark.parametrize("name, args, message", [c[1:] for c in NOTEBOOK_CASES], ids=[c[0] for c in NOTEBOOK_CASES])
def test_bad_input_notebook(world, name, args, message):
    import nbformat

    tmp = world
    out = tmp / "runs" / f"out-{name}.ipynb"  # inside runs/: the one place the test lets anything be written
    project, others, etc = _snapshot(ROOT), _snapshot(tmp, skip=("runs",)), _etc_names()
    env = {**os.environ, "GRPOLAB_RUNS": str(tmp / "runs")}
    env.pop("JPY_SESSION_NAME", None)
    proc = subprocess.run(
        [PAPERMILL, str(ROOT / "notebooks" / f"{name}.ipynb"), str(out), "--no-progress-bar", *_fill(args, tmp)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert proc.returncode != 0, proc.stderr[-2000:]
    errors = [
        o
        for c in nbformat.read(str(out), as_version=4).cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    assert len(errors) == 1 and errors[0].ename == "NotebookStop", [(e.ename, e.evalue) for e in errors]
    assert message in errors[0].evalue, errors[0].evalue
    assert len(errors[0].traceback) <= 8, errors[0].traceback  # the message, not a traceback
    assert _snapshot(ROOT) == project
    assert _snapshot(tmp, skip=("runs",)) == others
    assert _etc_names() == etc
