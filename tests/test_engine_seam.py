"""The engine seam (issue 35): what differs between training engines is declared once, in grpolab/recipe/engines.py,
and every other module asks the declaration (`recipe.engine.priced`, `.model_parallel`, `.merger`, or `engine_of`
for a run's plain recipe record) instead of comparing a name. This test fails on a literal engine name ("megatron",
"fsdp", "trl"; the rollout engine "hf") or the CPU trainer's recipe name ("tiny") used as code anywhere in lib/
outside the engine declarations and grpolab/local/ (the CPU trainer itself); params/ is data, not lib. The scanner
is shown to catch planted literals.

Code is any use of a string constant whose whole value is one of the names: compared (`==`, `in`, a `match` case),
a dict literal's key or a subscript's index (`SIZES["fsdp"]`), a call's argument (`base_config("fsdp")`), an
assigned or returned value, a literal collection of such names (`VERL = ("megatron", "fsdp")`).
The exceptions, each a string that is not an engine in its context:
- prose: docstrings, the text of f-strings, and any longer string (a message naming `tiny` in an example, a verl key
  such as `actor_rollout_ref.actor.megatron.tensor_model_parallel_size`): only a constant that IS a name counts;
- a literal collection that also holds other values: a list of packages ("torch", "trl", ...), of shell commands
  ("pip", "hf", ...), of verl's actor.strategy values (Literal["fsdp", "fsdp2"]);
- "hf" anywhere but a comparison: elsewhere it is the model table's Hugging Face column (`row.get("hf")`), never
  the rollout engine (which code only compares);
- the values of a field map row's `omit=` (values of its recipe field: train.fsdp_strategy's "fsdp" is verl's
  actor.strategy, not the engine).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "helpers"))
from planted import planted_lib  # noqa: E402

from grpolab.recipe import engines  # noqa: E402

LIB = Path(__file__).resolve().parents[1] / "lib" / "grpolab"
HOMES = ("recipe/engines.py",)  # the declarations
TRAINER = "local/"  # the CPU trainer's own code: it is the engine it implements
NAMES = {*engines.ENGINES, "tiny", *engines.CPU_TRAINER.rollouts}
COMPARED_ONLY = set(engines.CPU_TRAINER.rollouts) - set(engines.ENGINES)  # "hf"
FIELD_VALUES = ("omit",)  # keyword arguments whose values are a recipe field's values


def _is_name(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in NAMES


def literals(rel: str, tree: ast.AST) -> set[str]:
    """`rel: engine name 'x' (line n)` for each name used as code in one module."""
    prose = set()  # ids of constants that are text, not code
    compared = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            prose.add(id(node.value))  # a docstring, or any bare string statement
        elif isinstance(node, ast.JoinedStr):
            prose.update(id(v) for v in node.values)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and not all(_is_name(e) for e in node.elts):
            prose.update(id(e) for e in node.elts)  # a collection of something else (packages, commands, strategies)
        elif isinstance(node, ast.keyword) and node.arg in FIELD_VALUES:
            prose.update(id(n) for n in ast.walk(node.value))
        if isinstance(node, ast.Compare):
            for side in (node.left, *node.comparators):
                compared.add(id(side))
                if isinstance(side, (ast.Tuple, ast.List, ast.Set)):
                    compared.update(id(e) for e in side.elts)
        elif isinstance(node, ast.MatchValue):
            compared.add(id(node.value))
    found = set()
    for node in ast.walk(tree):
        if not _is_name(node) or id(node) in prose:
            continue
        if node.value in COMPARED_ONLY and id(node) not in compared:
            continue
        found.add(f"{rel}: engine name {node.value!r} (line {node.lineno})")
    return found


def engine_literals(root: Path) -> set[str]:
    found: set[str] = set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel in HOMES or rel.startswith(TRAINER):
            continue
        found |= literals(rel, ast.parse(path.read_text(encoding="utf-8")))
    return found


def test_no_engine_name_outside_the_engine_declarations():
    assert engine_literals(LIB) == set(), "ask grpolab.recipe.engines (engine_of(recipe).<what differs>) instead"


def test_the_declarations_themselves_are_seen():
    """The scanner, run on the declarations' own module, finds every engine's name there (else it could pass by
    finding nothing)."""
    home = LIB / HOMES[0]
    seen = literals("elsewhere.py", ast.parse(home.read_text(encoding="utf-8")))
    for name in engines.ENGINES:
        assert [f for f in seen if f"engine name {name!r}" in f], (name, seen)


PLANTS = {
    "compare": 'def cpu(recipe):\n    return recipe.train.engine == "trl"\n',
    "member": 'def verl(recipe):\n    return recipe.train.engine in ("megatron", "fsdp")\n',
    "match": 'def kind(engine):\n    match engine:\n        case "megatron":\n            return 1\n    return 0\n',
    "lookup": 'SMALL = {"fsdp": 20, "megatron": 20}\n',
    "subscript": 'def big(sizes):\n    return sizes["megatron"]\n',
    "argument": 'def config(base_config):\n    return base_config("fsdp")\n',
    "declared": 'VERL = ("megatron", "fsdp")\n',
    "rollout": 'def local(ro):\n    return ro.engine != "hf"\n',
    "recipe": 'def is_tiny(recipe):\n    return recipe.name == "tiny"\n',
}
EXPECTED = {
    "compare": {"trl"},
    "member": {"megatron", "fsdp"},
    "match": {"megatron"},
    "lookup": {"fsdp", "megatron"},
    "subscript": {"megatron"},
    "argument": {"fsdp"},
    "declared": {"megatron", "fsdp"},
    "rollout": {"hf"},
    "recipe": {"tiny"},
}
HARMLESS = (
    '"""Trains with train.engine trl on the recipe tiny."""\n'  # a docstring
    "def why(engine):\n"
    '    return f"train.engine {engine} is not trl"\n'  # prose in an f-string
    'TP = "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"\n'  # a verl key
    'HINT = "run `grpolab run tiny` first"\n'  # a message naming the recipe in an example
    'PACKAGES = ("torch", "trl", "transformers")\n'  # package names
    'QUIET = ("pip", "hf", "wget")\n'  # shell commands
    "def hub(row):\n"
    '    return row.get("hf", "")\n'  # the model table's Hugging Face column
    'STRATEGY = ("fsdp", "fsdp2")\n'  # verl's actor.strategy values
    'ROW = dict(field="train.fsdp_strategy", omit=("fsdp",))\n'  # a field's value left out
)


def test_a_planted_engine_name_fails(tmp_path):
    """A copy of lib/ with each kind of literal planted in a module of its own (and one harmless module) shows
    exactly the planted names as new findings."""
    new = engine_literals(planted_lib(LIB, tmp_path, "jobs", HARMLESS, PLANTS))
    for name, values in EXPECTED.items():
        got = {f.split("'")[1] for f in new if f.startswith(f"jobs/planted_{name}.py: ")}
        assert got == values, (name, new)
    assert {f.split(":")[0] for f in new} == {f"jobs/planted_{name}.py" for name in PLANTS}
