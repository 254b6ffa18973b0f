"""The collector every rule family reports through: the recipe, its model facts and the problems found so far.

One `Checks` is made per recipe and handed to each family's functions (grpolab.rules.train_layout, batch, ...);
they read `c.r` (the recipe) and `c.f` (the model facts, None when unknown) and call `c.add`, which names the file
that set the key and takes the rule's default severity from grpolab.rules.registry. Collects, never raises.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grpolab.problems import Problem
from grpolab.recipe.schema import ModelCard, Recipe
from grpolab.rules import registry


@dataclass
class Checks:
    r: Recipe
    f: ModelCard | None
    problems: list[Problem] = field(default_factory=list)

    def add(self, rule: str, key: str, value, message: str, fix: str, severity: str | None = None) -> None:
        """Collect a problem; its severity is the rule's default (grpolab.rules.registry) unless given."""
        severity = severity or registry.default_severity(rule)
        self.problems.append(Problem(rule, severity, key, value, f"{self.r.origin(key)}: {message}", fix))

    def culprit(self, section: str, names: tuple[str, ...]) -> str:
        """Of several keys that together break a rule, the one the user set last (the command line first)."""
        for name in names:
            if self.r.origin(f"{section}.{name}").startswith("--set"):
                return name
        recipe_file = self.r.files[-1]
        for name in names:
            if self.r.origin(f"{section}.{name}") == recipe_file:
                return name
        return names[0]
