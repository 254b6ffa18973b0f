"""What the planner reads and writes: the recipe to plan (a recipe, or a bare model card on a hardware profile)
and the recipe `grpolab plan --write` writes, validated by the same loader before it is kept."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable
from pathlib import Path

import yaml

from grpolab import owned
from grpolab.paths import params_dir
from grpolab.problems import InputError, RecipeError, closest
from grpolab.recipe.cards import ResolvedModel, is_card_file, resolve_model
from grpolab.recipe.dotted import MISSING, get_dotted, set_dotted
from grpolab.recipe.layout import RolloutLayout, TrainLayout, overrides_of
from grpolab.recipe.loader import load_recipe, read_yaml
from grpolab.recipe.schema import Recipe
from grpolab.recipe.secrets import is_secret

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def hardware_overrides(profile: str) -> list[str]:
    """A hardware profile (params/hardware/<profile>.yaml) as `cluster.*` overrides, applied before --set."""
    path = params_dir() / "hardware" / f"{profile}.yaml"
    if not NAME.match(profile) or not path.is_file():
        known = sorted(p.stem for p in (params_dir() / "hardware").glob("*.yaml"))
        raise InputError(f"no hardware profile {profile!r} in params/hardware/; known: {', '.join(known)}")
    cluster = read_yaml(path).get("cluster") or {}
    return [f"cluster.{k}={v}" for k, v in cluster.items() if k != "nnodes"]


def model_target(ref: str) -> ResolvedModel | None:
    """What `grpolab plan REF` plans for: None when REF is a recipe (a name under params/recipes/, which wins over
    a card of the same name, or a recipe YAML file), else the model the one resolver finds (any model `grpolab
    card` takes); InputError naming everything tried when REF is neither."""
    path = Path(ref).expanduser()
    if (NAME.match(ref) and (params_dir() / "recipes" / f"{ref}.yaml").is_file()) or (
        path.suffix in (".yaml", ".yml") and path.is_file() and not is_card_file(path)
    ):
        return None
    try:
        return resolve_model(ref)
    except InputError as exc:
        near = closest(ref, [p.stem for p in (params_dir() / "recipes").glob("*.yaml")])
        hint = f" (did you mean recipe {near!r}?)" if near else ""
        raise InputError(f"not a recipe in params/recipes/{hint} or a recipe file, and {exc}") from None


def base_note(model: ResolvedModel) -> str:
    """The sentence that says what a bare model is planned on."""
    return f"model {model.describe()} on the base recipe params/base.yaml"


def load(ref: str, nodes: int | None = None, hardware: str | None = None, overrides: Iterable[str] = ()) -> Recipe:
    """The recipe to plan: a recipe (name or path), or any model the one resolver knows on base.yaml (hardware
    default ascend-a3), with the hardware profile, the node count and the overrides applied (in that order)."""
    model = model_target(ref)
    sets = []
    if model is not None:
        sets += model.overrides()
        ref_path: str | Path = params_dir() / "base.yaml"
        hardware = hardware or "ascend-a3"
    else:
        ref_path = ref
    if hardware:
        sets += hardware_overrides(hardware)
    if nodes is not None:
        sets.append(f"cluster.nnodes={nodes}")
    recipe = load_recipe(ref_path, [*sets, *overrides])
    if model is not None:
        recipe.set_origin(model.card.name if "/" in ref or Path(ref).suffix else ref)
    return recipe


def _parents(ref: str, recipe: Recipe, hardware: str | None) -> list[str]:
    if model_target(ref) is not None:  # a model, planned on the base recipe
        return ["base", f"hardware/{hardware or 'ascend-a3'}"]
    src = Path(recipe.files[-1])
    inside = params_dir() / "recipes" / f"{src.stem}.yaml"
    own = (params_dir().parent / src).resolve()
    parents = [f"recipes/{src.stem}" if inside.is_file() and own == inside.resolve() else str(own)]
    if hardware:
        parents.append(f"hardware/{hardware}")  # a later parent wins: the profile replaces the recipe's cluster
    return parents


def write_recipe(
    name: str,
    ref: str,
    train: TrainLayout,
    rollout: RolloutLayout,
    recipe: Recipe,
    hardware: str | None,
    overrides: Iterable[str],
) -> Path:
    """params/recipes/<name>.yaml: the chosen layout layered on the recipe given (never overwrites).

    Every value written is the value the loader typed when it read the overrides (`trainer.experiment=2024`
    stays the string "2024"); an env value whose name holds a secret (grpolab.recipe.secrets.is_secret: a name that
    looks secret or one the recipe lists under `secrets:`) is written as a reference, `${NAME}`, which Ray expands
    from the environment the job runs in: the value itself never reaches the file. The file is
    loaded back through the same loader before it is kept; InputError when it does not load."""

    if not NAME.match(name) or name.endswith((".yaml", ".yml")):
        raise InputError(f"recipe name {name!r}: use letters, digits, '_', '-' or '.', no path and no .yaml")
    folder = params_dir() / "recipes"
    path = folder / f"{name}.yaml"
    if os.path.lexists(path):  # a dangling link too: nothing is written through it
        raise InputError(f"params/recipes/{name}.yaml exists: choose another --write name (nothing overwritten)")
    data: dict = {"defaults": _parents(ref, recipe, hardware)}
    sets = overrides_of(train, rollout) + [f"cluster.nnodes={recipe.cluster.nnodes}"]
    model = model_target(ref)
    if model is not None:
        sets += model.overrides()
    secrets: list[str] = []
    for text in [*sets, *overrides]:
        key, value = _typed(recipe, text.split("=", 1)[0].strip())
        if key.startswith("env.") and is_secret(key[4:], recipe.secrets):
            secrets.append(key[4:])
            value = "${" + key[4:] + "}"
        if key.startswith("verl_overrides."):  # verl's own dotted keys stay one flat key
            data.setdefault("verl_overrides", {})[key.split(".", 1)[1]] = value
        else:
            set_dotted(data, key, value)
    header = (
        f"# {name}: {recipe.name} with the layout `grpolab plan` ranked first on {recipe.cluster.nnodes} x "
        f"{recipe.cluster.devices_per_node} {recipe.cluster.hardware} (ranked by an estimate, not a measurement)\n"
    )
    if secrets:
        header += (
            f"# {', '.join(secrets)}: a reference, not the value: Ray sets it from the environment the job runs in "
            "(export it there)\n"
        )
    text = header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=110)
    with tempfile.NamedTemporaryFile("w", dir=folder, prefix=f".{name}.", suffix=".yaml", delete=False) as tmp:
        tmp.write(text)
    try:
        load_recipe(tmp.name)
        os.link(tmp.name, path)  # fails rather than overwrite a file that appeared meanwhile
    except (RecipeError, InputError) as exc:
        detail = "; ".join(p.format() for p in exc.problems) if isinstance(exc, RecipeError) else str(exc)
        raise InputError(f"the recipe to write as params/recipes/{name}.yaml does not load: {detail}") from None
    except FileExistsError:
        raise InputError(
            f"params/recipes/{name}.yaml exists: choose another --write name (nothing overwritten)"
        ) from None
    finally:
        owned.remove_file(tmp.name)
    return path


def _typed(recipe: Recipe, key: str) -> tuple[str, object]:
    """(key, the value the loaded recipe holds there), for the longest part of `key` the recipe has (a list
    index such as `trainer.logger.0` writes the whole list); plain data, as YAML writes it."""
    if key.startswith("verl_overrides."):
        return key, recipe.verl_overrides.get(key.split(".", 1)[1])
    parts = key.split(".")
    for end in range(len(parts), 0, -1):
        value = get_dotted(recipe, ".".join(parts[:end]), MISSING)
        if value is not MISSING:
            if hasattr(value, "model_dump"):
                value = value.model_dump()
            return ".".join(parts[:end]), list(value) if isinstance(value, tuple) else value
    return key, None
