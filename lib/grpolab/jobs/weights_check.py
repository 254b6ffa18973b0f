"""Hugging Face weights checked against the model's card, from the safetensors headers alone (no torch, no data read).

What a merge can get wrong, and verl's model_merger has (verl #2319, #4370, #5603):
- a tensor written twice (two shards name it) or a key with a stray suffix (`...experts.gate_proj.weight100`);
- missing pieces: the embedding, the final norm, lm_head (unless the card ties it), a decoder layer;
- MoE layers whose experts do not number the card's `num_experts` (per expert `mlp.experts.E.<proj>.weight`, or
  fused 3-D `mlp.experts.<proj>` tensors whose first dimension counts them);
- a much smaller (or larger) model: total parameters further than TOLERANCE from the card's `params_b` (MTP layers
  the checkpoint leaves out are taken off the card's count first, as a share of the decoder layers).
A safetensors file starts with an 8-byte little-endian header length and a JSON header {name: {dtype, shape,
data_offsets}}; that is all this reads.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from grpolab.recipe.card_schema import ModelCard

TOLERANCE = 0.01
MAX_HEADER = 100 << 20  # a header of a model with a million tensors is a few hundred MB at most; stop runaways
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_EXPERT = re.compile(r"(?:^|\.)layers\.(\d+)\.mlp\.experts\.(\d+)\.(\w+)\.weight$")
_FUSED = re.compile(r"(?:^|\.)layers\.(\d+)\.mlp\.experts\.([A-Za-z_]+)(?:\.weight)?$")
_STRAY = re.compile(r"\.(weight|bias)\.?\d+$")  # weight100, weight.100: a counter glued to the name


@dataclass
class WeightsReport:
    tensors: int = 0
    params: int = 0
    expected_params: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {
            "tensors": self.tensors,
            "params": self.params,
            "expected_params": self.expected_params,
            "ok": self.ok,
            "problems": self.problems,
        }


def read_header(path: Path) -> dict[str, dict]:
    """{tensor name: {dtype, shape, data_offsets}} of one safetensors file."""
    with open(path, "rb") as fh:
        raw = fh.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: not a safetensors file (shorter than its 8-byte header length)")
        (size,) = struct.unpack("<Q", raw)
        if size > MAX_HEADER:
            raise ValueError(f"{path}: header of {size} bytes: not a safetensors file")
        header = json.loads(fh.read(size))
        if not isinstance(header, dict):
            raise ValueError(f"{path}: not a safetensors file (its header is not a JSON object)")
        have = os.fstat(fh.fileno()).st_size
    header.pop("__metadata__", None)
    ends = [
        info["data_offsets"][1]
        for info in header.values()
        if isinstance(info, dict) and isinstance(info.get("data_offsets"), list) and len(info["data_offsets"]) == 2
    ]
    need = 8 + size + max([e for e in ends if isinstance(e, int)], default=0)
    if have < need:
        raise ValueError(
            f"{path}: truncated: {have} bytes where its header names {need}; the copy or merge did not finish "
            "(export again from the checkpoint)"
        )
    return header


def tensors(folder: Path) -> tuple[dict[str, list[int]], list[str]]:
    """({name: shape} over every *.safetensors in folder, [names found in more than one file])."""
    shapes: dict[str, list[int]] = {}
    seen: Counter = Counter()
    for path in sorted(Path(folder).glob("*.safetensors")):
        for name, info in read_header(path).items():
            seen[name] += 1
            shapes[name] = list(info.get("shape") or [])
    return shapes, sorted(n for n, c in seen.items() if c > 1)


def _expected_params(card: ModelCard, layers_seen: set[int]) -> tuple[float, str]:
    total = card.params_b * 1e9
    if card.mtp_layers and not any(i >= card.num_layers for i in layers_seen):
        embed = card.vocab_size * card.hidden_size * (1 if card.tie_word_embeddings else 2)
        per_layer = (total - embed) / (card.num_layers + card.mtp_layers)
        return total - card.mtp_layers * per_layer, f" (the card's {card.params_b:g} B less its MTP layer(s))"
    return total, ""


def check(folder: Path, card: ModelCard) -> WeightsReport:
    """Every problem of the weights in `folder` against `card` (an empty list: they are the card's model)."""
    report = WeightsReport()
    shapes, twice = tensors(folder)
    report.tensors = len(shapes)
    if not shapes:
        report.problems.append(f"{folder}: no *.safetensors weights")
        return report
    report.params = sum(math.prod(s) for s in shapes.values())
    out = report.problems
    if twice:
        out.append(f"{len(twice)} tensor(s) written more than once, e.g. {', '.join(twice[:3])}")
    stray = sorted(n for n in shapes if _STRAY.search(n))
    if stray:
        out.append(f"{len(stray)} key(s) with a stray suffix (verl #2319), e.g. {', '.join(stray[:3])}")
    names = list(shapes)
    if not any(n.endswith("embed_tokens.weight") for n in names):
        out.append("no embedding (…embed_tokens.weight)")
    if not card.tie_word_embeddings and "lm_head.weight" not in shapes:
        out.append("no lm_head.weight (the card does not tie it to the embedding)")
    if not any(re.search(r"(?:^|\.)norm\.weight$", n) for n in names):
        out.append("no final norm (…model.norm.weight)")
    layers = {int(m.group(1)) for n in names if (m := _LAYER.search(n))}
    absent = [i for i in range(card.num_layers) if i not in layers]
    if absent:
        shown = ", ".join(map(str, absent[:10])) + (" ..." if len(absent) > 10 else "")
        out.append(f"{len(absent)} of the card's {card.num_layers} layers missing: {shown}")
    extra = sorted(i for i in layers if i >= card.num_layers + card.mtp_layers)
    if extra:
        out.append(f"layer(s) beyond the card's {card.num_layers} (+{card.mtp_layers} MTP): {extra[:5]}")
    if card.num_experts:
        out += _expert_problems(shapes, card)
    expected, why = _expected_params(card, layers)
    report.expected_params = expected
    if abs(report.params - expected) > TOLERANCE * expected:
        out.append(
            f"{report.params:,} parameters, {report.params / expected:.1%} of the {expected:,.0f} expected{why}: "
            f"more than {TOLERANCE:.0%} off"
        )
    return report


def _expert_problems(shapes: dict[str, list[int]], card: ModelCard) -> list[str]:
    per_layer: dict[int, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    fused: dict[int, dict[str, int]] = defaultdict(dict)
    for name, shape in shapes.items():
        if m := _EXPERT.search(name):
            per_layer[int(m.group(1))][m.group(3)].add(int(m.group(2)))
        elif (m := _FUSED.search(name)) and len(shape) == 3:
            fused[int(m.group(1))][m.group(2)] = shape[0]
    wrong = []
    for layer in range(card.dense_layers, card.num_layers):
        if layer in per_layer:
            for proj, experts in sorted(per_layer[layer].items()):
                if experts != set(range(card.num_experts)):
                    wrong.append(
                        f"layer {layer} {proj}: {len(experts)} experts (indices {min(experts)}..{max(experts)})"
                    )
        elif layer in fused:
            for proj, count in sorted(fused[layer].items()):
                if count != card.num_experts:
                    wrong.append(f"layer {layer} {proj}: {count} experts")
        else:
            wrong.append(f"layer {layer}: no expert weights")
    if not wrong:
        return []
    shown = "; ".join(wrong[:4]) + (f"; ... ({len(wrong)} in all)" if len(wrong) > 4 else "")
    return [f"MoE layers whose experts are not the card's {card.num_experts}: {shown}"]
