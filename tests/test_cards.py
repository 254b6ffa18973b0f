"""A card for any model (issue 21, item 1 a/b): facts from a config.json in a model directory or in the Hugging Face
cache, from the family table params/model_configs.yaml matched by the name in model.path, or none at all (no error);
`grpolab card` writes a card that the one strict schema loads and `check` uses."""

from __future__ import annotations

import json
import os
import re

import pytest
import yaml

from grpolab.cli import main as cli
from grpolab.preflight.spec import node_spec
from grpolab.problems import errors
from grpolab.recipe.cards import COMPARED, model_facts, resolve_model, table, table_card, table_match
from grpolab.recipe.loader import load_card, load_recipe
from grpolab.rules.gate import check

# a config.json as Hugging Face writes one (an invented model, so that no card or table row can answer for it)
CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
}


def _recipe(tmp_path, path: str, card: str | None = None) -> str:
    body = {"defaults": ["recipes/qwen3_8b"], "model": {"path": path, "card": card}}
    out = tmp_path / "r.yaml"
    out.write_text(yaml.safe_dump(body))
    return str(out)


def _hf_cache(tmp_path, repo_id: str, config: dict) -> str:
    """An HF hub cache as huggingface_hub lays it out: models--ORG--NAME/{refs/main, snapshots/<sha>/config.json}."""
    repo = tmp_path / "hf" / "hub" / f"models--{repo_id.replace('/', '--')}"
    snap = repo / "snapshots" / "0123abcd"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abcd")
    return str(tmp_path / "hf")


def test_facts_from_a_config_json_in_the_hf_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", _hf_cache(tmp_path, "acme/Reasoner-7B", CONFIG))
    recipe = load_recipe(_recipe(tmp_path, "acme/Reasoner-7B"))
    facts, problems = model_facts(recipe)
    assert problems == [] and facts.source.endswith("snapshots/0123abcd/config.json")
    assert (facts.num_layers, facts.num_heads, facts.num_kv_heads, facts.context_length) == (28, 28, 4, 4096)
    assert 7.0 < facts.params_b < 8.0  # computed from the architecture: Qwen2.5-7B's shape has 7.6B parameters
    # check uses them: 28 attention heads do not split over rollout tp 8
    _, found = check(_recipe(tmp_path, "acme/Reasoner-7B"), ["rollout.tp=8"])
    [heads] = [p for p in found if p.rule == "rollout-heads"]
    assert "28 attention heads" in heads.message and heads.severity == "error"


def test_facts_from_a_local_model_directory_win_over_the_table(tmp_path):
    model = tmp_path / "Qwen3-8B"  # a table name, but the directory's own config.json is what runs
    model.mkdir()
    (model / "config.json").write_text(json.dumps(CONFIG))
    facts, problems = model_facts(load_recipe(_recipe(tmp_path, str(model))))
    assert problems == [] and facts.num_heads == 28 and facts.source == str(model / "config.json")


@pytest.mark.parametrize(
    "path, entry",
    [
        ("/data/Qwen2.5-Math-7B-Instruct", "Qwen2.5-7B"),
        ("Qwen/Qwen3-32B", "Qwen3-32B"),
        ("deepseek-ai/DeepSeek-V3", "DeepSeek-V3"),
        ("/models/deepseek-ai/DeepSeek-R1", "DeepSeek-V3"),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507", "Qwen3-235B-A22B-2507"),
        ("$HOME/models/gpt-oss-20b-bf16", "GPT-OSS-20B"),
        ("./model/Qwen2_5_1_5B_Instruct", "Qwen2.5-1.5B"),
        ("/models/zai-org/GLM-4.5-Air-Base", "GLM-4.5-Air"),
        ("moonshotai/Moonlight-16B-A3B-Instruct", "Moonlight-16B-A3B"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", "Qwen3-Next-80B-A3B"),
    ],
)
def test_a_name_in_model_path_finds_the_family_table(tmp_path, path, entry):
    assert table_match(path) == entry
    facts, problems = model_facts(load_recipe(_recipe(tmp_path, path)))
    assert problems == [] and facts.name == entry and "model_configs.yaml" in facts.source


def test_the_table_reads_like_the_models(tmp_path):
    """What the rules and the cost model need, as the public configs say: MLA, linear attention, experts."""
    dsv3 = table_card("DeepSeek-V3")
    assert (dsv3.attention, dsv3.kv_lora_rank, dsv3.qk_rope_head_dim, dsv3.num_experts, dsv3.active_experts) == (
        "mla",
        512,
        64,
        256,
        8,
    )
    assert (dsv3.dense_layers, dsv3.shared_experts, dsv3.context_length) == (3, 1, 163840)
    nxt = table_card("Qwen3-Next-80B-A3B")
    assert nxt.full_attention_interval == 4 and nxt.num_experts == 512 and nxt.active_experts == 10
    q35 = table_card("Qwen3.5-35B-A3B")  # nested under text_config, as Qwen3.5's config.json does
    assert (q35.linear_num_key_heads, q35.linear_num_value_heads, q35.full_attention_interval) == (16, 32, 4)
    assert table_card("Qwen3-4B").tie_word_embeddings and not table_card("Qwen3-8B").tie_word_embeddings
    # a dated update keeps the architecture but not always the context: -2507 is not the April release
    assert table_card(table_match("Qwen/Qwen3-235B-A22B-Instruct-2507")).context_length == 262144
    assert table_card(table_match("Qwen/Qwen3-235B-A22B")).context_length == 40960


@pytest.mark.parametrize("name", sorted(table()))
def test_computed_sizes_match_the_published_ones(name):
    """The parameter count computed from each table row is the size in the model's name (within 10 %: names round,
    7.6B is "7B"); Qwen3.5 rows whose linear-attention heads no source gives are counted as full attention, and
    their names count the vision tower too: 25 %."""
    # the sizes the model cards announce where the name does not carry one (MTP layers not counted)
    named = {"DeepSeek-V3": 671, "Kimi-K2": 1000, "GLM-4.5": 355, "GLM-4.5-Air": 106, "GLM-4.7-Flash": 30}
    named["Mixtral-8x7B"] = 46.7
    m = re.search(r"(\d+(?:\.\d+)?)B", name)
    published = named.get(name) or float(m.group(1))
    card = table_card(name)
    rough = card.full_attention_interval and not card.linear_num_key_heads
    assert abs(card.params_b - published) / published < (0.25 if rough else 0.10), (card.params_b, published)


@pytest.mark.parametrize("card_name", ["qwen3_8b", "qwen3_4b", "qwen3_30b_a3b", "qwen3_235b_a22b"])
def test_the_table_agrees_with_the_hand_written_cards(card_name):
    card = load_card(card_name)
    row = table_card(table_match(card.name))
    assert {f: getattr(row, f) for f in COMPARED} == {f: getattr(card, f) for f in COMPARED}
    assert abs(row.params_b - card.params_b) / card.params_b < 0.03


def test_an_unknown_model_has_no_facts_and_no_error(tmp_path):
    recipe = load_recipe(_recipe(tmp_path, "/data/my-own-model"))
    assert model_facts(recipe) == (None, [])
    _, problems = check(_recipe(tmp_path, "/data/my-own-model"))
    assert not [p for p in errors(problems) if p.key and p.key.startswith("model")]


def test_a_config_json_that_is_not_a_file_is_an_error_naming_it(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    os.mkfifo(model / "config.json")  # a FIFO would hang a plain read
    facts, problems = model_facts(load_recipe(_recipe(tmp_path, str(model))))
    assert facts is None and "config.json" in problems[0].message


def test_grpolab_card_writes_a_card_that_check_uses(tmp_path, capsys):
    model = tmp_path / "acme-7b"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(CONFIG))
    out = tmp_path / "cards" / "acme.yaml"
    assert cli(["card", str(model), "--out", str(out)]) == 0
    assert "model.card: " in capsys.readouterr().out
    card = load_card(out)  # the one strict schema
    assert (card.num_heads, card.context_length, card.source) == (28, 4096, str(model / "config.json"))
    assert cli(["card", str(model), "--out", str(out)]) == 2  # kept unless --force
    assert "exists" in capsys.readouterr().err
    # a recipe whose model.path has no config.json uses the card: its 4096-token context is checked
    recipe = _recipe(tmp_path, "/cluster/weights/acme", card=str(out))
    _, problems = check(recipe, ["data.max_response_length=8192"])
    [length] = [p for p in problems if p.rule == "lengths" and p.key == "data.max_response_length"]
    assert "context of 4096" in length.message


def test_grpolab_card_from_the_table_and_for_an_unknown_name(tmp_path, capsys):
    assert cli(["card", "Qwen/Qwen3-32B", "--out", "-"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert (printed["name"], printed["num_layers"], printed["num_kv_heads"]) == ("Qwen3-32B", 64, 8)
    assert cli(["card", "acme/unheard-of-9b", "--json"]) == 2
    captured = capsys.readouterr()
    assert json.loads(captured.out)["exit"] == 2 and "no model 'acme/unheard-of-9b'" in captured.err
    for tried in ("params/models/", "card file", "config.json", "Hugging Face cache", "model_configs.yaml"):
        assert tried in captured.err  # says what it tried


def test_one_resolver_finds_every_kind_of_model_reference(tmp_path, monkeypatch):
    """resolve_model (plan, card, and model.card for check and preflight): a card name, a card file, a model
    directory, its config.json, a hub id in the HF cache, a hub id or a family name in the table."""
    model = tmp_path / "acme-7b"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(CONFIG))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    _hf_cache(tmp_path, "acme/cached-7b", CONFIG)
    card_file = tmp_path / "k2.yaml"
    assert cli(["card", "Kimi-K2", "--out", str(card_file)]) == 0
    seen = {
        ref: (r.kind, r.card.name, r.model_path, r.model_card)
        for ref in (
            "qwen3_8b",
            str(card_file),
            str(model),
            str(model / "config.json"),
            "acme/cached-7b",
            "deepseek-ai/DeepSeek-V3",
            "Qwen3-32B",
        )
        for r in [resolve_model(ref)]
    }
    assert seen["qwen3_8b"][0::3] == ("card", "qwen3_8b")
    assert seen[str(card_file)] == ("card file", "Kimi-K2", "", str(card_file))
    assert seen[str(model)][0::2] == ("model directory", str(model))
    assert seen[str(model / "config.json")][0::2] == ("config.json", str(model))
    assert seen["acme/cached-7b"][0::2] == ("Hugging Face cache", "acme/cached-7b")
    assert seen["deepseek-ai/DeepSeek-V3"] == ("family table", "DeepSeek-V3", "deepseek-ai/DeepSeek-V3", None)
    assert seen["Qwen3-32B"] == ("family table", "Qwen3-32B", "Qwen/Qwen3-32B", None)
    assert resolve_model(str(model)).card.num_layers == 28
    # model.card takes the same references: a recipe naming a hub id or a card file gets those facts
    for ref, layers in (("deepseek-ai/DeepSeek-V3", 61), (str(card_file), 61)):
        recipe = load_recipe(_recipe(tmp_path, "/nowhere/weights", card=ref))
        facts, problems = model_facts(recipe)
        assert problems == [] and facts.num_layers == layers
        assert node_spec(recipe)["model"]["card_data"]["num_layers"] == layers  # preflight reads the same card
