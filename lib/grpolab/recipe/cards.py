"""Model facts (layers, heads, KV heads, experts, context, parameter counts) for the rules and the cost model.

Where the facts come from, first found wins:
1. the model's config.json: `model.path` is a local directory holding one, or a hub id (`Qwen/Qwen3-32B`) whose
   snapshot is in the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub); Qwen3.5 nests
   the text model's values under `text_config`;
2. `model.card`: any model `resolve_model` knows (a card in params/models/, a card file, a model directory, a hub
   id in the cache or the family table);
3. the family table params/model_configs.yaml (public config.json values with their sources), matched from the name
   in `model.path` (`/data/Qwen2.5-Math-7B-Instruct`, `deepseek-ai/DeepSeek-V3`).
A config.json and a card that disagree are an error (the card would make the rules check the wrong model). Nothing
found is not an error: `model_facts` returns (None, []) and the rules skip what needs the facts.
Parameter counts are computed from the architecture (no config.json states them).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from grpolab.paths import params_dir
from grpolab.problems import InputError, Problem, RecipeError, closest
from grpolab.recipe.card_schema import ModelCard
from grpolab.recipe.loader import card_path, load_card
from grpolab.recipe.schema import Recipe
from grpolab.recipe.yamlio import read_yaml

TABLE = "model_configs.yaml"  # under params/: the family table
MAX_CONFIG_BYTES = 1 << 20  # a config.json is a few KB; 1 MB stops a runaway or special file

# config.json key(s) -> card field; the first key present wins (architectures name the same fact differently)
CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "num_layers": ("num_hidden_layers", "num_layers", "n_layer"),  # n_*: GPT-2's names
    "hidden_size": ("hidden_size", "n_embd"),
    "num_heads": ("num_attention_heads", "n_head"),
    "num_kv_heads": ("num_key_value_heads", "num_attention_heads", "n_head"),
    "num_experts": ("n_routed_experts", "num_experts", "num_local_experts"),
    "active_experts": ("num_experts_per_tok", "moe_topk"),
    "vocab_size": ("vocab_size", "padded_vocab_size"),
    "context_length": ("max_position_embeddings", "seq_length", "n_positions", "n_ctx"),
    "head_dim": ("head_dim",),  # config.json's head_dim wins over a card's (GLM-5.2's 192 is qk_nope, see below)
    "linear_num_key_heads": ("linear_num_key_heads",),
    "linear_num_value_heads": ("linear_num_value_heads",),
    "full_attention_interval": ("full_attention_interval",),
    "linear_key_head_dim": ("linear_key_head_dim",),
    "linear_value_head_dim": ("linear_value_head_dim",),
    "mtp_layers": ("num_nextn_predict_layers", "mtp_num_hidden_layers"),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_nope_head_dim": ("qk_nope_head_dim",),
    "qk_rope_head_dim": ("qk_rope_head_dim",),
    "v_head_dim": ("v_head_dim",),
    "tie_word_embeddings": ("tie_word_embeddings",),
}
COMPARED = ("num_layers", "hidden_size", "num_heads", "num_kv_heads", "num_experts", "vocab_size")
# name parts that mark a checkpoint of the same architecture and context: Qwen3-8B-Base, Qwen2.5-Math-7B-Instruct,
# ...-FP8. Dated updates (-2507, -0324) are not dropped: they may change the context (the table lists them by name).
VARIANT = re.compile(
    r"[-_.](instruct|base|chat|it|pt|thinking|hf|fp8|bf16|fp16|int4|int8|awq|gptq[\w-]*|gguf|v\d+(\.\d+)*)$",
    re.IGNORECASE,
)


# ---------------------------------------------------------------------------------------------- config.json


def _merged(config: dict) -> dict:
    """The config's own keys with the text model's (`text_config`, Qwen3.5 and other VLMs) on top."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    return {**config, **text}


def _first(merged: dict, keys: tuple[str, ...]) -> Any:
    return next((merged[k] for k in keys if merged.get(k) is not None), None)


def _full_attention_interval(merged: dict) -> int | None:
    """Every Nth layer keeps a KV cache (full attention), the rest are linear (Gated DeltaNet): from
    `full_attention_interval`, or from a regular `layer_types` list."""
    if merged.get("full_attention_interval"):
        return merged["full_attention_interval"]
    types = merged.get("layer_types")
    if not isinstance(types, list) or "linear_attention" not in types:
        return None
    full = [i + 1 for i, t in enumerate(types) if t == "full_attention"]
    if full and all(b - a == full[0] for a, b in zip([0, *full], full)):
        return full[0]
    return None


def param_counts(config: dict) -> tuple[float, float]:
    """(total, routed-expert) parameters in billions, from the architecture (biases and norms left out).

    Embedding (and the output head unless tied), attention (GQA, MLA with its low-rank projections, or Gated
    DeltaNet on the linear layers), the dense MLPs of the first dense layers, and per MoE layer the routed experts,
    the shared experts and the router."""
    m = _merged(config)
    hidden, layers = _first(m, CONFIG_KEYS["hidden_size"]) or 0, _first(m, CONFIG_KEYS["num_layers"]) or 0
    heads = _first(m, CONFIG_KEYS["num_heads"]) or 1
    kv = _first(m, CONFIG_KEYS["num_kv_heads"]) or heads
    if m.get("intermediate_size") is None and m.get("n_embd"):  # GPT-2: n_inner, else 4 x n_embd
        m = {**m, "intermediate_size": m.get("n_inner") or 4 * hidden}
    hd = m.get("head_dim") or hidden // heads
    vocab = _first(m, CONFIG_KEYS["vocab_size"]) or 0
    embed = vocab * hidden * (1 if m.get("tie_word_embeddings") else 2)
    if m.get("kv_lora_rank"):
        nope, rope, v = m.get("qk_nope_head_dim") or hd, m.get("qk_rope_head_dim") or 0, m.get("v_head_dim") or hd
        q_rank = m.get("q_lora_rank")
        q = hidden * q_rank + q_rank * heads * (nope + rope) if q_rank else hidden * heads * (nope + rope)
        attn = q + hidden * (m["kv_lora_rank"] + rope) + m["kv_lora_rank"] * heads * (nope + v) + heads * v * hidden
    else:
        attn = 2 * hidden * heads * hd + 2 * hidden * kv * hd
    interval = _full_attention_interval(m)
    linear_layers = layers - layers // interval if interval else 0
    kh, vh = m.get("linear_num_key_heads"), m.get("linear_num_value_heads")
    if linear_layers and kh and vh:
        kd, vd = m.get("linear_key_head_dim") or 128, m.get("linear_value_head_dim") or 128
        linear = hidden * (2 * kh * kd + 2 * vh * vd + 2 * vh) + vh * vd * hidden + (2 * kh * kd + vh * vd) * 4
    else:
        linear = attn  # heads unknown: counted like a full-attention layer
    attention = (layers - linear_layers) * attn + linear_layers * linear
    experts = _first(m, CONFIG_KEYS["num_experts"]) or 0
    if not experts:
        return (embed + attention + layers * 3 * hidden * (m.get("intermediate_size") or 0)) / 1e9, 0.0
    moe_inter = m.get("moe_intermediate_size") or m.get("intermediate_size") or 0
    dense_layers = m.get("first_k_dense_replace") or 0
    routed = experts * 3 * hidden * moe_inter
    shared = 3 * hidden * (m.get("shared_expert_intermediate_size") or (m.get("n_shared_experts") or 0) * moe_inter)
    moe_layers = layers - dense_layers
    dense_mlp = dense_layers * 3 * hidden * (m.get("intermediate_size") or 0)
    total = embed + attention + dense_mlp + moe_layers * (routed + shared + hidden * experts)
    return total / 1e9, moe_layers * routed / 1e9


class ConfigError(InputError, ValueError):
    """A config.json this cannot read as a model (a missing or ill-typed size): names the file, the key, the fix."""


# config.json's size keys that the card and the parameter count read, beyond CONFIG_KEYS': whole numbers only
_SIZES = (
    "intermediate_size",
    "moe_intermediate_size",
    "first_k_dense_replace",
    "shared_expert_intermediate_size",
    "n_shared_experts",
    "q_lora_rank",
)
_POSITIVE = ("num_layers", "hidden_size", "num_heads", "vocab_size")  # card fields that must be above 0
_MAX_SIZE = 10**9  # no model has a size near this; a bigger number is a typo or an attack
_FIX = "fix the model's config.json, or describe the model with a card (`grpolab card NAME`, model.card)"


def _check_sizes(merged: dict, source: str) -> None:
    """Every size config.json gives is a whole number in range; ConfigError naming the first that is not."""
    positive = {k for field in _POSITIVE for k in CONFIG_KEYS[field]}
    sized = [k for field, keys in CONFIG_KEYS.items() if field != "tie_word_embeddings" for k in keys]
    for key in dict.fromkeys(sized + list(_SIZES)):
        value = merged.get(key)
        if value is None:
            continue
        low = 1 if key in positive else 0
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= _MAX_SIZE:
            raise ConfigError(
                f"{source}: {key} = {json.dumps(value)[:40]} is not a size: config.json gives it as a whole number "
                f"from {low} to {_MAX_SIZE:,}; {_FIX}"
            )


def _check_experts(merged: dict, source: str) -> None:
    """A token is routed to at most as many experts as there are; ConfigError naming both keys when not."""
    active, experts = _first(merged, CONFIG_KEYS["active_experts"]), _first(merged, CONFIG_KEYS["num_experts"])
    if active and active > (experts or 0):
        key = next(k for k in CONFIG_KEYS["active_experts"] if merged.get(k) is not None)
        total = next((k for k in CONFIG_KEYS["num_experts"] if merged.get(k) is not None), "num_experts")
        raise ConfigError(
            f"{source}: {key} = {active} is more experts per token than the model has ({total} = {experts or 0}): "
            f"a token is routed to at most {total} experts; {_FIX}"
        )


def facts_from_config(config: dict, card: ModelCard | None, source: str) -> ModelCard:
    """A ModelCard built from config.json values, falling back to the card for what config.json lacks; ConfigError
    (one line: the file, the key, the fix) when a size is missing or ill-typed."""

    merged = _merged(config)
    _check_sizes(merged, source)
    _check_experts(merged, source)
    lacking = [
        f for f in ("num_layers", "hidden_size", "num_heads", "vocab_size") if _first(merged, CONFIG_KEYS[f]) is None
    ]
    if lacking and card is None:
        names = "; ".join(f"{f} (config.json's {' or '.join(CONFIG_KEYS[f])})" for f in lacking)
        raise ConfigError(f"{source}: no {names}: not a language model's config.json this can read; {_FIX}")
    try:
        return _facts(merged, config, card, source)
    except ValidationError as exc:
        shown = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()[:3])
        raise ConfigError(f"{source}: the model it describes is not valid ({shown}); {_FIX}") from None


def _facts(merged: dict, config: dict, card: ModelCard | None, source: str) -> ModelCard:
    values: dict[str, Any] = card.model_dump() if card else {}
    for field, keys in CONFIG_KEYS.items():
        found = _first(merged, keys)
        if found is not None:
            values[field] = found
    values["full_attention_interval"] = _full_attention_interval(merged) or values.get("full_attention_interval")
    values["model_type"] = merged.get("model_type", values.get("model_type", "unknown"))
    values.setdefault("name", merged.get("_name_or_path") or source)
    if merged.get("kv_lora_rank"):
        values["attention"] = "mla"
        values["num_kv_heads"] = values.get("num_kv_heads") or values["num_heads"]
    values.setdefault("attention", "gqa")
    heads = values.get("num_heads") or 1
    mla_dim = (merged.get("qk_nope_head_dim") or 0) + (merged.get("qk_rope_head_dim") or 0)  # MLA's q/k head
    values.setdefault("head_dim", merged.get("head_dim") or mla_dim or (values.get("hidden_size", heads) // heads))
    values.setdefault("num_experts", 0)
    values.setdefault("active_experts", 0)
    dense = merged.get("first_k_dense_replace")
    values.setdefault("dense_layers", (dense or 0) if values["num_experts"] else values.get("num_layers", 0))
    values.setdefault(
        "shared_experts", merged.get("n_shared_experts") or (1 if merged.get("shared_expert_intermediate_size") else 0)
    )
    if "params_b" not in values:
        values["params_b"], values["expert_params_b"] = (round(x, 3) for x in param_counts(config))
    values["index_topk_freq"] = merged.get("index_topk_freq", values.get("index_topk_freq"))
    values["index_skip_topk_offset"] = merged.get("index_skip_topk_offset", values.get("index_skip_topk_offset"))
    for field, info in ModelCard.model_fields.items():  # an optional fact neither source gives is unknown: null
        if type(None) in get_args(info.annotation):
            values.setdefault(field, None)
    values.setdefault("mtp_layers", 0)
    values.setdefault("tie_word_embeddings", False)
    values["source"] = source
    return ModelCard.model_validate(values)


def read_config(path: Path) -> dict:
    """A config.json as a mapping; InputError names the file when it is unreadable, special, huge or not JSON."""
    try:
        if not path.is_file():
            raise InputError(f"{path}: not a regular file; a model's config.json is a JSON file")
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise InputError(f"{path}: {path.stat().st_size:,} bytes is too big for a config.json")
        data = json.loads(path.read_text())
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to be a model's config.json; {_FIX}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not JSON ({exc}); fix or replace the model's config.json") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: a config.json is a JSON object, not {type(data).__name__}")
    return data


def hf_cache_dirs() -> list[Path]:
    """Where the Hugging Face hub keeps its cache, as huggingface_hub resolves it."""
    if os.environ.get("HF_HUB_CACHE"):
        return [Path(os.environ["HF_HUB_CACHE"]).expanduser()]
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "huggingface")
    return [Path(home).expanduser() / "hub"]


def cached_config(repo_id: str) -> Path | None:
    """config.json of `ORG/NAME` in the Hugging Face cache: the snapshot refs/main names, else the newest one."""
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id):
        return None
    for cache in hf_cache_dirs():
        repo = cache / f"models--{repo_id.replace('/', '--')}"
        ref = repo / "refs" / "main"
        try:
            if ref.is_file():
                pinned = repo / "snapshots" / ref.read_text().strip() / "config.json"
                if pinned.is_file():
                    return pinned
            snapshots = sorted((repo / "snapshots").glob("*/config.json"), key=lambda p: p.stat().st_mtime)
        except OSError:
            continue
        if snapshots:
            return snapshots[-1]
    return None


def config_json(path: str) -> Path | None:
    """The config.json that `model.path` names: in a local directory, or in the Hugging Face cache."""
    if not path:
        return None
    local = Path(path).expanduser()
    if (local / "config.json").exists():  # a special file too: read_config refuses it by name
        return local / "config.json"
    if local.is_file() and local.name == "config.json":
        return local
    return cached_config(path.strip().rstrip("/")) if not local.is_absolute() else None


# ---------------------------------------------------------------------------------------------- family table


@lru_cache(maxsize=4)
def _table(path: str, mtime: float) -> dict:
    return read_yaml(Path(path))


def table() -> dict:
    """params/model_configs.yaml: {name: {hf, source, aliases, config, ...}}."""
    path = params_dir() / TABLE
    return _table(str(path), path.stat().st_mtime) if path.is_file() else {}


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _names(model: str) -> list[str]:
    """The last part of a model path or hub id, then the same without variant suffixes, one at a time."""
    name = model.strip().rstrip("/").rsplit("/", 1)[-1]
    out = [name]
    while (shorter := VARIANT.sub("", out[-1])) != out[-1] and shorter:
        out.append(shorter)
    return out


def table_match(model: str) -> str | None:
    """The family-table entry whose name or alias is the model's name (variant suffixes dropped), else None."""
    if not model:
        return None
    index: dict[str, str] = {}
    for entry, row in table().items():
        for name in (entry, row.get("hf", ""), *(row.get("aliases") or [])):
            index.setdefault(_squash(str(name).rsplit("/", 1)[-1]), entry)
    return next((index[_squash(n)] for n in _names(model) if _squash(n) in index), None)


def table_card(entry: str) -> ModelCard:
    row = table()[entry]
    card = facts_from_config(row["config"], None, f"params/{TABLE}: {entry} ({row['source']})")
    return card.model_copy(update={"name": entry})


# ---------------------------------------------------------------------------------------------- finding a card

CARD_FILE_KEYS = ("name", "model_type", "num_layers")  # a YAML file holding these at its top is a card


@dataclass(frozen=True)
class ResolvedModel:
    """A model as a verb was given it, resolved: its facts, how they were found, and what `model.path` and
    `model.card` of a recipe for it hold (a card by name or file; a directory or hub id for verl to load)."""

    card: ModelCard
    kind: str  # "card", "card file", "model directory", "config.json", "Hugging Face cache", "family table"
    where: str  # the card file, the config.json or the family-table entry the facts come from
    model_path: str  # "" when only a card describes the model
    model_card: str | None  # the card name or file; None when config.json or the table answers

    def overrides(self) -> list[str]:
        """The recipe keys that name this model, as --set overrides (the card's file path kept absolute)."""
        return [f"model.card={self.model_card if self.model_card else 'null'}", f"model.path={self.model_path}"]

    def describe(self) -> str:
        return f"{self.card.name} ({self.kind}: {self.where})"


def is_card_file(path: Path) -> bool:
    """A .yaml file whose top level looks like a model card (what `grpolab card --out` writes), not a recipe."""
    if path.suffix not in (".yaml", ".yml") or not path.is_file():
        return False
    try:
        data = read_yaml(path)
    except (InputError, RecipeError):
        return False
    return isinstance(data, dict) and all(k in data for k in CARD_FILE_KEYS) and "defaults" not in data


def resolve_model(ref: str) -> ResolvedModel:
    """The one model resolver of every verb that takes a model (`plan`, `card`, `check` and `preflight` through
    `model.card`), first found wins: a card name in params/models/, a card file, a model directory or its
    config.json, a hub id in the Hugging Face cache, a hub id or name in the family table params/model_configs.yaml.
    InputError naming everything tried when none has it; RecipeError when a card file breaks the card schema."""
    text = str(ref).strip()
    if not text:
        raise InputError("no model given: name a card, a card file, a model directory, a hub id or a model name")
    path = Path(text).expanduser()
    if "/" not in text and not path.suffix and card_path(text).is_file():
        return ResolvedModel(load_card(text), "card", f"params/models/{text}.yaml", "", text)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return ResolvedModel(load_card(path), "card file", str(path), "", str(path.resolve()))
    cfg = config_json(text)
    if cfg is not None:
        if path.is_dir():
            kind, model_path = "model directory", text
        elif path.is_file():
            kind, model_path = "config.json", str(path.parent)
        else:
            kind, model_path = "Hugging Face cache", text.rstrip("/")
        return ResolvedModel(facts_from_config(read_config(cfg), None, str(cfg)), kind, str(cfg), model_path, None)
    entry = table_match(text)
    if entry is not None:
        hub = text.rstrip("/") if re.fullmatch(r"[\w.-]+/[\w.-]+", text.rstrip("/")) else table()[entry]["hf"]
        return ResolvedModel(table_card(entry), "family table", f"params/{TABLE}: {entry}", hub, None)
    cards = sorted(p.stem for p in (params_dir() / "models").glob("*.yaml"))
    near = closest(text, [*cards, *table()])
    where = ", ".join(str(p) for p in hf_cache_dirs())
    raise InputError(
        f"no model {text!r}: tried a card in params/models/ (known: {', '.join(cards)}), a card file (.yaml), a "
        f"model directory or config.json, the Hugging Face cache ({where}) and the names and hub ids of "
        f"params/{TABLE}"
        + (f"; did you mean {near!r}?" if near else "")
        + "; give a directory holding the model's config.json, or write a card with `grpolab card`"
    )


def _card_problem(exc: Exception, recipe: Recipe) -> list[Problem]:
    if isinstance(exc, RecipeError):
        return list(exc.problems)
    return [
        Problem(
            "schema",
            "error",
            "model.card",
            recipe.model.card,
            f"{recipe.origin('model.card')}: {exc}",
            "name a file in params/models/ (without .yaml) or a card file, or null to use config.json or the "
            "family table",
        )
    ]


def model_facts(recipe: Recipe) -> tuple[ModelCard | None, list[Problem]]:
    """The model's facts and any problem in finding them (unreadable card, card vs config.json mismatch);
    (None, []) when no config.json, card or family-table entry describes the model."""
    card = None
    problems: list[Problem] = []
    if recipe.model.card:
        try:
            card = resolve_model(recipe.model.card).card
        except (InputError, RecipeError) as exc:
            problems.extend(_card_problem(exc, recipe))
    cfg_path = config_json(recipe.model.path)
    if cfg_path is None:
        if card is None and not problems and (entry := table_match(recipe.model.path)) is not None:
            card = table_card(entry)
        return card, problems
    try:
        config = read_config(cfg_path)
        facts = facts_from_config(config, card, str(cfg_path))
    except (InputError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        text = str(exc).splitlines()[0]
        problems.append(
            Problem("schema", "error", "model.path", str(cfg_path), text, "fix or replace the model's config.json")
        )
        return card, problems
    if card is not None:
        for field in COMPARED:
            have, want = getattr(facts, field), getattr(card, field)
            if have != want:
                problems.append(
                    Problem(
                        "schema",
                        "error",
                        "model.card",
                        recipe.model.card,
                        f"{cfg_path} says {field} = {have}, but card {recipe.model.card!r} says {want}: "
                        "the path and the card describe different models",
                        f"point model.path at {card.name}, or set model.card to the card of the model at the path "
                        "(or null to use config.json alone)",
                    )
                )
    return facts, problems
