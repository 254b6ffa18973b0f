"""The tiny Qwen2-style model and character tokenizer behind the `tiny` recipe, built offline in code.

Nothing is downloaded: the tokenizer's vocabulary is a handful of characters, the model is a randomly
initialised `Qwen2ForCausalLM` a few hundred KB in size. Both are saved under a cache directory keyed by
their settings (and the init seed), so every process that asks for the same settings loads the same
weights with `from_pretrained`, exactly as it would a real checkpoint.

Cache root: grpolab.paths.cache_root() ($GRPOLAB_CACHE, else $XDG_CACHE_HOME/grpolab, else ~/.cache/grpolab).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from grpolab import owned
from grpolab.paths import cache_root

# The characters of the task (digits, `+`, `=`) plus `-` and `*` kept for other arithmetic tasks; the
# special tokens come first so their ids are stable. The order fixes every token's id and so the random
# init of each seed: changing it changes which seeds learn (benchmarks/tiny_grpo.py measured this one).
PAD, EOS, BOS, UNK = "<pad>", "<eos>", "<bos>", "<unk>"
SPECIALS = (PAD, EOS, BOS, UNK)
CHARS = "0123456789+=-*"
# Bump when the way the model or tokenizer is built changes, so old cache entries are not reused.
BUILD_VERSION = 1


@dataclass(frozen=True)
class TinyModelSpec:
    """What the tiny model is made of; every field is part of the cache key."""

    hidden_size: int = 64
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    intermediate_size: int = 256
    max_positions: int = 32
    init_seed: int = 0


def vocab() -> dict[str, int]:
    """Token -> id: the special tokens, then one token per character."""
    return {tok: i for i, tok in enumerate([*SPECIALS, *CHARS])}


def spec_key(spec: TinyModelSpec) -> str:
    """A short stable hash of the spec (and the build version): the cache directory's name."""
    blob = json.dumps({"build": BUILD_VERSION, "chars": CHARS, **asdict(spec)}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def character_tokenizer():
    """The character tokenizer itself (a `tokenizers.Tokenizer`: one token per character), without transformers'
    wrapper: counting prompt tokens needs only this (tokenizers imports in milliseconds, transformers in seconds)."""
    # lazy: tokenizers (only building the tiny model or counting its prompts needs it)
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel(vocab=vocab(), unk_token=UNK))
    # Every character is its own pre-token; Fuse joins decoded tokens without spaces.
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return tok


def prompt_tokens(prompts: list) -> list[int]:
    """Tokens of each prompt (a list of chat messages) as the CPU trainer feeds it to the tiny model: the character
    tokenizer on the messages' text, no chat template (the tiny model has none) and no special tokens
    (grpolab.local.train encodes with add_special_tokens=False). The engine's declaration names this function
    (grpolab.recipe.engines: prompt_tokens), so that `grpolab data` and 01_setup measure tiny's prompts."""
    tok = character_tokenizer()
    texts = ["\n".join(str(m.get("content", "")) for m in p if isinstance(m, dict)) for p in prompts]
    return [len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)]


def build_tokenizer():
    """A fast character tokenizer: one token per character, no special tokens added when encoding."""
    # lazy: transformers (only building or loading the tiny model needs it; seconds to import)
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=character_tokenizer(),
        pad_token=PAD,
        eos_token=EOS,
        bos_token=BOS,
        unk_token=UNK,
        padding_side="left",  # decoder-only generation pads prompts on the left
        model_max_length=1024,
    )


def build_model(spec: TinyModelSpec):
    """A randomly initialised Qwen2ForCausalLM of the given shape (deterministic for spec.init_seed)."""
    # lazy: torch, transformers (only building or loading the tiny model needs them; seconds to import)
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    ids = vocab()
    config = Qwen2Config(
        vocab_size=len(ids),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        pad_token_id=ids[PAD],
        eos_token_id=ids[EOS],
        bos_token_id=ids[BOS],
        use_cache=True,
    )
    # Seed a private generator's worth of state: building must not disturb the caller's RNG.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.init_seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config.pad_token_id = ids[PAD]
    model.generation_config.eos_token_id = ids[EOS]
    model.generation_config.bos_token_id = ids[BOS]
    return model


def ensure_tiny(spec: TinyModelSpec = TinyModelSpec(), root: Path | None = None) -> Path:
    """The directory holding the tiny model and tokenizer for `spec`, building it on first use.

    Built in a temporary sibling directory and renamed into place, so concurrent builders (parallel
    tests, several Ray jobs) never see a half-written model.
    """
    target = (root or cache_root()) / "tiny" / spec_key(spec)
    if (target / "config.json").is_file() and (target / "tokenizer.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = owned.temp_folder(".build-", target.parent)
    try:
        build_model(spec).save_pretrained(tmp)
        build_tokenizer().save_pretrained(tmp)
        (tmp / "grpolab_spec.json").write_text(json.dumps(asdict(spec), indent=2) + "\n")
        try:
            owned.move(tmp, target)
        except OSError:
            # Another process won the race; its copy is identical.
            if not (target / "config.json").is_file():
                raise
    finally:
        owned.remove_tree(tmp)
    return target
