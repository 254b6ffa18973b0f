"""`grpolab card MODEL_DIR|NAME [--out PATH] [--force] [--json]`: write a model card that `check` then uses.

The model is found by the one resolver (grpolab.recipe.cards.resolve_model): a card in params/models/ or a card
file, a model's config.json (a model directory, a config.json, or a hub id such as Qwen/Qwen3-32B in the Hugging
Face cache), else the family table params/model_configs.yaml (`grpolab card Qwen3-32B`, `deepseek-ai/DeepSeek-V3`).
The card goes to params/models/<name>.yaml (a recipe uses it with `model.card: <name>`), or to --out PATH
(`--out -` prints it), which `grpolab plan PATH` and `model.card: PATH` then take. An existing card is kept
unless --force.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from grpolab import owned
from grpolab.paths import is_system_folder, params_dir
from grpolab.problems import InputError


def register(sub) -> None:
    p = sub.add_parser("card", help="write a model card from a config.json (local, the HF cache or the table)")
    p.add_argument("model", metavar="MODEL_DIR|NAME", help="a model directory, a config.json, a hub id or a name")
    p.add_argument(
        "--out", metavar="PATH", help="where to write the card (default params/models/<name>.yaml; - prints)"
    )
    p.add_argument("--force", action="store_true", help="replace an existing card file")
    p.add_argument("--json", action="store_true", help="print {path, card} as JSON")
    p.set_defaults(func=main)


def card_name(name: str) -> str:
    """A card's file name from the model's name: Qwen/Qwen3-32B -> qwen3_32b."""
    return re.sub(r"[^a-z0-9]+", "_", name.rsplit("/", 1)[-1].lower()).strip("_") or "model"


def card_yaml(card) -> str:
    # lazy: yaml (the parser imports every verb's module; a command loads only its own verb's)
    import yaml

    header = f"# {card.name}: written by `grpolab card` from {card.source}\n"
    return header + yaml.safe_dump(card.model_dump(mode="json"), sort_keys=False, width=120)


def main(args) -> int:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.recipe.cards import resolve_model
    from grpolab.recipe.loader import load_card

    card = resolve_model(args.model).card
    text = card_yaml(card)
    if args.out == "-":
        print(json.dumps({"path": None, "card": card.model_dump(mode="json")}) if args.json else text, end="")
        return 0
    out = Path(args.out).expanduser() if args.out else params_dir() / "models" / f"{card_name(card.name)}.yaml"
    if out.suffix not in (".yaml", ".yml"):
        raise InputError(f"--out {args.out}: a card is a .yaml file")
    if os.path.lexists(out) and not args.force:  # a dangling link too
        raise InputError(f"{out} exists; pass --force to replace it, or --out another path")
    if args.out and is_system_folder(out.parent):
        raise InputError(f"--out {args.out}: {out.parent} is a system folder; write the card somewhere of yours")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = owned.fresh_file(out.with_name(f".{out.name}.{os.getpid()}.tmp"))
    tmp.write_text(text)
    owned.replace_file(tmp, out)  # replaces a link itself, never the file it points at
    load_card(out)  # the written card loads through the one strict schema (a bug here is not the user's to find)
    default_home = out.parent.resolve() == (params_dir() / "models").resolve()
    use = out.stem if default_home else str(out)
    if args.json:
        print(json.dumps({"path": str(out), "card": card.model_dump(mode="json")}))
    else:
        print(f"wrote {out} ({card.name}: {card.num_layers} layers, {card.params_b:g}B parameters)")
        print(f"use it with `model.card: {use}` (or --set model.card={use}); plan it: grpolab plan {use}")
    return 0
