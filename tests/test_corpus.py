"""The public corpus (issue 21, item 6): real verl launches go through import -> check -> render, and what comes out
is what tests/data/corpus/MANIFEST.yaml says happens today.

Each launch in tests/data/corpus/launches/ is written back as a bash script (its exports, then its launcher line,
every argument quoted) and imported with the library's one path (grpolab.importer.script), the recipe is written and
checked (grpolab.rules.gate.check), rendered (grpolab.verl.render) and both launches are composed with the installed
verl's own Hydra config (grpolab.verl.config.effective). The outcome, in pipeline order:

    import   the importer refused the script: `detail` is part of its message
    check    check found errors: `detail` lists their rule ids
    render   the renderer failed: `detail` is part of its message
    nocompose  the script's own launch does not compose under the installed verl: `detail` is part of Hydra's message
    named    both compose and differ only where the import names the difference (its report: a reward's older key
             it applies, a key it could not reproduce): `detail` lists the keys
    differ   both compose but differ where the import says nothing: `detail` lists the keys
             (grpolab.verl.config.differences: run-owned keys aside)
    same     the same effective launch

`expect` in the manifest pins the outcome per script; `cause` says why, for the people closing the gap. When an
outcome changes (the importer learns a launcher, a rule stops a false refusal) the test fails naming the script and
the new outcome: update the manifest with `python tests/test_corpus.py --update` and review the diff.

Cost: an import composes verl's config once or twice (about 1 s each, remembered in the suite's cache: see
grpolab.verl.config.effective), so the whole corpus takes about 105 s of CPU on a cold cache and about 40 s on a warm
one; GRPOLAB_CORPUS=sample runs only the scripts marked `sample: true` (one of each outcome). Nothing starts Ray.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

import pytest
import yaml

CORPUS = Path(__file__).parent / "data" / "corpus"
MANIFEST = CORPUS / "MANIFEST.yaml"
SCRIPTS = yaml.safe_load(MANIFEST.read_text())["scripts"]
HOME, PWD = "/home/corpus", "/work/corpus"  # what $HOME and $PWD stand for in the recorded launches
RUN_DIR = "/RUN"
SAMPLE_ONLY = os.environ.get("GRPOLAB_CORPUS") == "sample"


def _sub(text: str) -> str:
    return text.replace("$HOME", HOME).replace("$PWD", PWD)


def launch(entry: dict) -> dict:
    return yaml.safe_load((CORPUS / "launches" / f"{entry['id']}.yaml").read_text())


def script_text(entry: dict) -> str:
    """The recorded launch as the bash script that makes it: exports, then the launcher line."""
    rec = launch(entry)
    lines = [
        "#!/usr/bin/env bash",
        f"# {entry['repo']}/{entry['path']} at {entry['commit'][:12]}: its recorded launch (tests/data/corpus)",
        "set -euo pipefail",
        *(f"export {k}={shlex.quote(_sub(v))}" for k, v in rec["env"].items()),
        " ".join(shlex.quote(_sub(a)) for a in rec["launcher"] + rec["args"]),
    ]
    return "\n".join(lines) + "\n"


def outcome(entry: dict, tmp: Path) -> tuple[str, object]:
    """What import -> check -> render -> compose does with one corpus launch (see the module docstring)."""
    from grpolab.importer.script import import_script, recipe_yaml
    from grpolab.problems import InputError, errors
    from grpolab.recipe.dotted import has_dotted
    from grpolab.rules.gate import check
    from grpolab.verl import config as verl_schema
    from grpolab.verl import entry as verl_entry
    from grpolab.verl.fieldmap import field_of
    from grpolab.verl.render import render

    script = tmp / f"{entry['id']}.sh"
    script.write_text(script_text(entry))
    device = "npu" if entry["kind"]["device"] == "npu" else "cuda"
    try:
        imported = import_script(script, name=entry["id"], device=device)
    except InputError as exc:
        return "import", str(exc).replace(str(script), "SCRIPT")
    except Exception as exc:  # an unexpected failure is an outcome too: the message says which
        return "import", f"{type(exc).__name__}: {exc}".replace(str(script), "SCRIPT")
    recipe_file = tmp / f"{entry['id']}.yaml"
    recipe_file.write_text(recipe_yaml(imported, str(script)))
    recipe, problems = check(recipe_file)
    if errors(problems):
        return "check", sorted({p.rule for p in errors(problems)})
    try:
        ours = render(recipe, RUN_DIR).argv()
    except Exception as exc:
        return "render", f"{type(exc).__name__}: {exc}"
    rec = launch(entry)
    module = rec["launcher"][rec["launcher"].index("-m") + 1]
    script_name, script_args = verl_schema.split_argv(["-m", module, *(_sub(a) for a in rec["args"])])
    # a first-class field's key the installed verl lacks (grad_offload): the recipe keeps it, the render leaves it out
    config = verl_schema.base_config(recipe.train.engine) or {}
    lacking = {
        key
        for key in (a.split("=", 1)[0] for a in script_args)
        if not key.startswith("+") and not has_dotted(config, key) and field_of(key) is not None
    }
    # the original composes with its entry point's own config (fully_async_main's, a recipe's), as verl would
    own = verl_entry.of(recipe)
    folder = own.folder if isinstance(own, verl_entry.EntryConfig) and own.own else None
    script_name = own.name if folder is not None and script_name == "ppo_trainer" else script_name
    try:
        theirs = verl_schema.effective(
            [a for a in script_args if a.split("=", 1)[0] not in lacking], script_name, folder
        )
    except Exception as exc:
        return "nocompose", str(exc).splitlines()[0]
    # the same effective launch: verl's aliases applied, numbers as numbers, run-owned and unread keys aside
    found = verl_schema.differences(
        theirs, ours, recipe.train.engine, skip=lacking, folder=folder, config_name=script_name if folder else None
    )
    keys = sorted(found)
    named = {u["key"] for u in imported.unmapped}
    if not keys:
        return "same", None
    return ("named" if set(keys) <= named else "differ"), keys


def _matches(got: tuple[str, object], want: dict) -> bool:
    stage, detail = got
    if stage != want["outcome"]:
        return False
    if stage in ("import", "render", "nocompose"):
        return want["detail"] in detail
    return detail == want.get("detail")


@pytest.mark.parametrize("entry", SCRIPTS, ids=[e["id"] for e in SCRIPTS])
def test_the_corpus_does_what_the_manifest_says(entry, tmp_path):
    if SAMPLE_ONLY and not entry.get("sample"):
        pytest.skip("GRPOLAB_CORPUS=sample: only the scripts marked sample")
    got = outcome(entry, tmp_path)
    want = entry["expect"]
    assert _matches(got, want), (
        f"{entry['id']} ({entry['repo']}/{entry['path']}): the manifest expects {want['outcome']} "
        f"({want.get('detail')!r}), today: {got[0]} ({got[1]!r}); if this is progress, "
        "run `python tests/test_corpus.py --update` and review MANIFEST.yaml"
    )


def test_the_corpus_is_real_and_complete():
    """At least 25 launches, each with its public source, its kind and a pinned outcome; every outcome kind that
    occurs has a sample the suite runs."""
    assert len(SCRIPTS) >= 25 and len({e["id"] for e in SCRIPTS}) == len(SCRIPTS)
    for e in SCRIPTS:
        assert e["repo"].count("/") == 1 and len(e["commit"]) == 40 and e["date"][:2] == "20", e["id"]
        assert {"device", "train", "rollout", "algorithm", "model", "launcher"} <= set(e["kind"]), e["id"]
        assert e["expect"]["outcome"] in ("import", "check", "render", "nocompose", "named", "differ", "same"), e["id"]
        assert e.get("cause"), e["id"]
        rec = launch(e)
        assert "-m" in rec["launcher"] and rec["args"], e["id"]
    outcomes = {e["expect"]["outcome"] for e in SCRIPTS}
    assert outcomes == {e["expect"]["outcome"] for e in SCRIPTS if e.get("sample")}
    assert {e["kind"]["device"] for e in SCRIPTS} == {"cuda", "npu"}
    assert {"vllm", "sglang"} <= {e["kind"]["rollout"] for e in SCRIPTS}
    assert {"megatron", "fsdp", "fsdp2"} <= {e["kind"]["train"] for e in SCRIPTS}


def _update() -> None:  # pragma: no cover - a maintenance command, run by hand
    """Run every corpus launch and write today's outcomes into MANIFEST.yaml (causes are kept)."""
    import tempfile

    data = yaml.safe_load(MANIFEST.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        for entry in data["scripts"]:
            stage, detail = outcome(entry, Path(tmp))
            if stage in ("import", "render", "nocompose"):  # the message's head: no machine path gets pinned
                detail = str(detail)[:160].split(" (/", 1)[0].split(" /", 1)[0]
            old = entry.get("expect", {})
            entry["expect"] = {"outcome": stage, "detail": detail}
            print(f"{entry['id']:48} {stage:9} {detail!r:.120}" + ("" if old == entry["expect"] else "   (changed)"))
    head = MANIFEST.read_text().split("scripts:", 1)[0]
    MANIFEST.write_text(head + yaml.safe_dump({"scripts": data["scripts"]}, sort_keys=False, width=200))


if __name__ == "__main__":  # pragma: no cover
    if sys.argv[1:] == ["--update"]:
        _update()
    else:
        sys.exit("usage: python tests/test_corpus.py --update   (rewrites tests/data/corpus/MANIFEST.yaml's expect)")
