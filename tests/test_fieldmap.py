"""The field map (grpolab.verl.fieldmap) is the one home of the verl key of every first-class recipe field.

The renderer, the shadowing check of `verl_overrides`, the importer and docs/fieldmap.md derive from it; no other
module in lib/ spells one of those keys, neither whole nor as the tail of an f-string after a prefix constant
(`f"{ROLL}.enable_rollout_routing_replay"`). Every field the table names is a schema field, every alias the
installed verl really has, and the rows render what a recipe holds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from grpolab.recipe.dotted import has_dotted
from grpolab.recipe.loader import field_type, load_recipe
from grpolab.rules.gate import shadowing
from grpolab.verl import config as verl_schema
from grpolab.verl import fieldmap

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "lib" / "grpolab"
HOME = LIB / "verl" / "fieldmap.py"


def _verl_keys() -> set[str]:
    from grpolab.recipe.dotted import flatten

    return {k for engine in ("megatron", "fsdp") for k in flatten(verl_schema.base_config(engine) or {})}


def _spellings(key: str, known: set[str]) -> list[tuple[str, re.Pattern]]:
    """The whole key, and each tail an f-string writes after a prefix constant (`}.tail"`) when that tail names
    this key only (`}.enable_rollout_routing_replay"`, not `}.pipeline_model_parallel_size"`): (the text each
    spelling contains, its pattern). A source without that text is not searched with the pattern (126 keys' patterns
    over all of lib/ cost ~5 s of CPU; the plain `in` test, a few ms)."""
    parts = key.split(".")
    found = [(key, re.compile(r"(?<![\w.])" + re.escape(key) + r"(?![\w])"))]
    for i in range(1, len(parts)):
        tail = ".".join(parts[i:])
        if sum(k == key or k.endswith("." + tail) for k in known | {key}) == 1:
            found.append((f"}}.{tail}", re.compile(r"\}\." + re.escape(tail) + r"[\"']")))
    return found


def _first_class_keys() -> list[str]:
    """Verl keys of first-class fields whose spelling differs from the recipe key (data.train_files is both)."""
    keys = {
        fieldmap.key_name(row, "vllm")
        for row in fieldmap.KEYS
        if row.kind == "value" and fieldmap.key_name(row, "vllm") != row.field
    }
    return sorted(keys | {a.verl for a in fieldmap.ALIASES})


def test_first_class_verl_keys_are_spelled_in_one_place():
    sources = {p: p.read_text() for p in LIB.rglob("*.py")}
    elsewhere, known = {}, _verl_keys()
    for key in _first_class_keys():
        pats = _spellings(key, known)
        others = sorted(
            str(p.relative_to(ROOT))
            for p, text in sources.items()
            if p != HOME and any(needle in text and x.search(text) for needle, x in pats)
        )
        if others:
            elsewhere[key] = others
    assert not elsewhere, f"verl keys of first-class fields spelled outside the field map: {elsewhere}"


def test_every_row_names_a_schema_field_and_a_key_the_installed_verl_knows():
    for row in fieldmap.KEYS:
        assert field_type(row.field) is not None or row.field in ("model.card",), row.field
        config = verl_schema.base_config(row.engines[0])
        name = fieldmap.key_name(row, "vllm")
        if config is not None and not row.field.endswith("grad_offload"):  # verl 0.9.1 lacks grad_offload
            # a dict row's key may be one verl's code reads without a yaml default (custom_reward_function's
            # reward_kwargs): its sub-keys are then free-form (`+key.sub=value`)
            free = verl_schema.in_free_form(config, name) or (
                row.kind == "dict" and verl_schema.in_free_form(config, f"{name}.x")
            )
            assert has_dotted(config, name) or free, name
    for alias in fieldmap.ALIASES:
        assert field_type(alias.field) is not None, alias.field
        config = verl_schema.base_config(alias.engines[0])
        assert alias.why and (not alias.target or config is None or has_dotted(config, alias.target)), alias


def test_render_follows_the_rows():
    recipe = load_recipe("qwen3_30b_a3b", ["train.recompute.method=null", "train.optimizer_cpu_offload=true"])
    keys = fieldmap.render_keys(recipe, "/RUN")
    otc = fieldmap.OTC
    assert keys[fieldmap.verl_key("train.tp", "megatron")] == recipe.train.tp
    assert keys[f"{otc}.recompute_granularity"] == "full" and f"{otc}.recompute_method" not in keys  # null: left out
    assert keys[fieldmap.verl_key("trainer.ckpt_dir")] == "/RUN/checkpoint"
    assert fieldmap.verl_key("train.optimizer_offload_fraction") in keys  # needs optimizer_cpu_offload
    fsdp = load_recipe("qwen3_8b", ["train.fsdp_strategy=fsdp2", "trainer.logger=console", "train.vpp=null"])
    keys = fieldmap.render_keys(fsdp, "/RUN")
    assert keys[fieldmap.verl_key("train.fsdp_strategy")] == "fsdp2" and keys["trainer.logger"] == ["console", "file"]
    assert not any(".megatron." in k for k in keys)
    default = fieldmap.render_keys(load_recipe("qwen3_8b"), "/RUN")
    assert fieldmap.verl_key("train.fsdp_strategy") not in default  # verl's own default: not rendered


@pytest.mark.parametrize(
    "key, engine, field",
    [
        ("actor_rollout_ref.actor.ulysses_sequence_parallel_size", "fsdp", "train.ulysses_sp"),
        ("actor_rollout_ref.actor.megatron.override_transformer_config.sequence_parallel", "megatron", "train.sp"),
        ("+actor_rollout_ref.actor.megatron.override_transformer_config.moe_router_dtype", "megatron", None),
        ("actor_rollout_ref.rollout.engine_kwargs.vllm.compilation_config.cudagraph_mode", "fsdp", None),
        ("actor_rollout_ref.rollout.val_kwargs.top_p", "fsdp", "rollout.val_kwargs.top_p"),
    ],
)
def test_a_verl_key_finds_its_field(key, engine, field):
    found = fieldmap.match(key, engine, "vllm")
    if field is None:  # a key inside a dict field: the dict's own sub-key
        assert found is not None and found.row is not None and found.row.kind != "value"
    else:
        assert found is not None and found.field == field
    assert fieldmap.match("actor_rollout_ref.rollout.val_kwargs.repetition_penalty", "fsdp") is None  # not a field


def test_normalise_applies_aliases_by_their_effect():
    actor = fieldmap.ACTOR
    sp = f"{actor}.fsdp_config.ulysses_sequence_parallel_size"
    old = {f"{actor}.ulysses_sequence_parallel_size": 4, sp: 1}
    assert fieldmap.normalise(old, "fsdp") == {sp: 4}
    assert fieldmap.normalise({f"{actor}.ulysses_sequence_parallel_size": 1, sp: 2}, "fsdp") == {sp: 2}
    otc = {f"{fieldmap.OTC}.use_distributed_optimizer": False, f"{fieldmap.MEG}.use_distributed_optimizer": True}
    assert fieldmap.normalise(otc, "megatron") == {f"{fieldmap.MEG}.use_distributed_optimizer": True}  # no effect


def test_an_alias_in_verl_overrides_shadows_its_field():
    recipe = load_recipe("qwen3_8b", ["verl_overrides.actor_rollout_ref.actor.ulysses_sequence_parallel_size=4"])
    found = shadowing(recipe)
    assert [p.rule for p in found] == ["override-shadows"] and "train.ulysses_sp" in found[0].fix
