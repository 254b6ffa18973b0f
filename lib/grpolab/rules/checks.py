"""The collector every rule family reports through: the recipe, its model facts and the problems found so far.

One `Checks` is made per recipe and handed to each family's functions (grpolab.rules.train_layout, batch, ...);
they read `c.r` (the recipe) and `c.f` (the model facts, None when unknown) and call `c.add`, which names the file
that set the key and takes the rule's default severity from grpolab.rules.registry. Collects, never raises (a rule
id the registry does not declare is a bug in lib/, and raises ValueError).

Blame goes to what the user set: a problem that several keys make together (`involves`) is said from the override
(`--set`, a notebook's `overrides`) that set one of them when the reported key came from a file, so the message
starts with what the user typed rather than a key the user never touched.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grpolab.problems import Problem
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.schema import Recipe
from grpolab.rules import registry


def known(problems: list[Problem]) -> list[Problem]:
    """The problems, unchanged, once every rule id among them is declared in grpolab.rules.registry: a typo in a rule
    id would break every consumer that filters by rule id, so it fails where problems are collected (here, for
    every rule family, and in the gate, for the schema's and verl's problems too)."""
    for problem in problems:
        if problem.rule not in registry.RULE_IDS:
            raise ValueError(f"unknown rule id {problem.rule!r} (rule ids are declared in grpolab.rules.registry)")
    return problems


@dataclass
class Checks:
    r: Recipe
    f: ModelCard | None
    problems: list[Problem] = field(default_factory=list)

    def add(
        self,
        rule: str,
        key: str,
        value,
        message: str,
        fix: str,
        severity: str | None = None,
        involves: tuple[str, ...] = (),
    ) -> None:
        """Collect a problem; its severity is the rule's default (grpolab.rules.registry) unless given. `involves`:
        the other keys that make the problem; when `key` came from a file and one of them from an override, the
        message names that override first."""
        severity = severity or registry.rule(rule).severity
        origin = self.r.origin(key)
        user = None if self.user_set(key) else next((k for k in involves if self.user_set(k)), None)
        if user is not None:
            origin = f"{self.r.origin(user)} (with {key} from {origin})"
        elif involves and not self.is_set(key):  # a key nothing sets (the fix's place): the file that made the problem
            origin = f"{self.r.origin(involves[0])} ({involves[0]}; {key} is unset)"
        self.problems += known([Problem(rule, severity, key, value, f"{origin}: {message}", fix)])

    def is_set(self, key: str) -> bool:
        """Whether a file or an override set this key (or a key inside it, or a section below the top one holding
        it); a key only a top-level section holds (`verl_overrides: {}` in base.yaml) is not."""
        parts = key.split(".")
        origins = self.r.origins
        return any(".".join(parts[:i]) in origins for i in range(2, len(parts) + 1)) or any(
            k.startswith(key + ".") for k in origins
        )

    def user_set(self, key: str) -> bool:
        """Whether an override (`--set`, a notebook's `overrides`) set this key."""
        return self.r.origin(key).startswith("--set")

    def culprit(self, section: str, names: tuple[str, ...]) -> str:
        """Of several keys that together break a rule, the one the user set last (the command line first)."""
        user = next((name for name in names if self.user_set(f"{section}.{name}")), None)
        recipe_file = self.r.files[-1]
        return user or next((name for name in names if self.r.origin(f"{section}.{name}") == recipe_file), names[0])
