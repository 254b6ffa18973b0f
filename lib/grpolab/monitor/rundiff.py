"""What differs between runs, read from their own records: the resolved recipe and the stack they ran on.

    record_of(run) -> {dotted key: value}      every field of runs/<id>/recipe.yaml under `recipe.`, launch.json's
                                               `versions` and `git_commit` under `stack.`, its other fields under
                                               `launch.`; per-run bookkeeping (run id, times, paths) left out
    differences([run, ...]) -> [Difference]    the keys whose values are not the same in every run (a key one run
                                               lacks counts as different), in section order

General on purpose: a field a later version of the run record adds (a seed, a recipe hash, data fingerprints) is
compared without a change here. Only PER_RUN names the fields that differ between any two runs by construction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from grpolab.jobs.runs import Run
from grpolab.problems import InputError
from grpolab.recipe.dotted import flatten
from grpolab.recipe.files import json_object
from grpolab.recipe.secrets import REDACTED, is_secret, redact_override
from grpolab.recipe.yamlio import read_yaml

SECTIONS = ("recipe", "stack", "launch")
# launch.json fields that differ between any two runs by construction (ids, clocks, this run's own paths)
PER_RUN = ("run_id", "created", "entrypoint", "ray")
ABSENT = "(absent)"  # how a key that one run's record lacks is shown


@dataclass(frozen=True)
class Difference:
    key: str  # dotted, with its section first: recipe.train.tp, stack.verl, launch.engine
    values: tuple[Any, ...]  # one per run, ABSENT where that run's record has no such key

    @property
    def section(self) -> str:
        return self.key.split(".", 1)[0]


def _read_yaml(path) -> dict:
    """A run's recipe.yaml through the one hardened reader; {} when it is missing or unreadable (a run without
    a readable recipe differs in nothing we can show)."""
    try:
        return read_yaml(path, "run's recipe")
    except InputError:
        return {}


def record_of(run: Run) -> dict[str, Any]:
    """The run's record as {dotted key: value} (see the module docstring); {} for a run with no record files."""
    out = {f"recipe.{k}": v for k, v in flatten(_read_yaml(run.recipe_file)).items()}
    launch = json_object(run.launch_file)
    commit = launch.pop("git_commit", None)
    out.update({f"stack.{k}": v for k, v in flatten(launch.pop("versions", None) or {}).items()})
    if commit is not None:
        out["stack.git_commit"] = commit
    for name in PER_RUN:
        launch.pop(name, None)
    out.update({f"launch.{k}": v for k, v in flatten(launch).items()})
    return {k: _shown(k, v) for k, v in out.items()}


def _shown(key: str, value: Any) -> Any:
    """A record's value as it may be printed: a secret env value (by its name) and a secret `--set` text (a resumed
    run's overrides, in records written before they were redacted) hidden."""

    name = key.rsplit(".", 1)[-1]
    if ".env." in f".{key}" and is_secret(name) and value not in (None, REDACTED):
        return REDACTED
    if isinstance(value, str):
        return redact_override(value)
    if isinstance(value, list):
        return [redact_override(v) if isinstance(v, str) else v for v in value]
    return value


def _same(values: tuple[Any, ...]) -> bool:
    first = json.dumps(values[0], sort_keys=True, default=str)
    return all(json.dumps(v, sort_keys=True, default=str) == first for v in values[1:])


def differences(runs: list[Run]) -> list[Difference]:
    """Keys whose values are not the same in every run, recipe first, then stack, then the rest of the launch."""
    records = [record_of(run) for run in runs]
    if len(records) < 2:
        return []
    keys = sorted({k for r in records for k in r}, key=lambda k: (_section_rank(k), k))
    found = [Difference(key, tuple(r.get(key, ABSENT) for r in records)) for key in keys]
    return [d for d in found if not _same(d.values)]


def _section_rank(key: str) -> int:
    section = key.split(".", 1)[0]
    return SECTIONS.index(section) if section in SECTIONS else len(SECTIONS)


def value_text(value: Any, width: int = 60) -> str:
    """A value as a short string for a table cell."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= width else text[: width - 3] + "..."
