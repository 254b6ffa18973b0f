"""The Hydra config a verl entry point composes its launch with: verl's own for verl.trainer.main_ppo, a recipe's
own for its entry point (recipe.dapo.main_dapo: its `@hydra.main(config_path="config", config_name="dapo_trainer")`
names recipe/dapo/config/dapo_trainer.yaml, which builds on verl's ppo_trainer), or the folder a launch names with
`--config-path` / `--config-name`.

Import, check and render compose a launch against that config: a recipe's keys (reward.reward_kwargs.
overlong_buffer_cfg in DAPO's) are its own, and a launch that composes for the entry point composes here. The entry
module is found, never imported, in the folders a launch runs it from (`roots`: the recipe's trainer.entry_dir, the
Ray working_dir, PYTHONPATH; the checked verl for verl's own modules), and its decorator is read with `ast`. A
config's `hydra.searchpath` that points at verl's config (file://verl/trainer/config, relative to where verl runs,
or pkg://verl.trainer.config) is pointed at the checked verl's config folder.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from grpolab.verl.versions import verl_root

MAIN = "verl.trainer.main_ppo"
DEFAULT_NAME = "ppo_trainer"


@dataclass(frozen=True)
class EntryConfig:
    """Where an entry point's launch composes: a config folder and the root config's name; `own` is False for verl's
    own config (main_ppo's)."""

    folder: Path
    name: str
    own: bool
    module_dir: Path | None = None  # the folder the entry module was found in (a root), None for verl's


def verl_config() -> Path | None:
    """The checked verl's Hydra config folder (verl/trainer/config), None without verl."""
    root = verl_root()
    folder = root / "trainer" / "config" if root is not None else None
    return folder if folder is not None and folder.is_dir() else None


def module_file(module: str, roots: list[Path]) -> tuple[Path, Path] | None:
    """(the entry module's file, the root it was found under): verl's own modules in the checked verl, others under
    the first root holding them (a package folder or a single module file)."""
    rel = Path(*module.split("."))
    if module.split(".")[0] == "verl":
        root = verl_root()
        if root is not None and (root.parent / rel).with_suffix(".py").is_file():
            return (root.parent / rel).with_suffix(".py"), root.parent
        return None
    for root in roots:
        path = (root / rel).with_suffix(".py")
        if path.is_file():
            return path, root
    return None


@lru_cache(maxsize=64)
def hydra_main(path: Path) -> tuple[str | None, str | None] | None:
    """(config_path, config_name) of the module's `@hydra.main(...)`, read with ast; None without one."""
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        if name != "main":
            continue
        kw = {k.arg: k.value for k in node.keywords}
        if "config_path" not in kw and "config_name" not in kw:
            continue
        values = [kw[k].value if isinstance(kw.get(k), ast.Constant) else None for k in ("config_path", "config_name")]
        return values[0], values[1]
    return None


def resolve(module: str, config_path: str | None, config_name: str | None, roots: list[Path]) -> EntryConfig | str:
    """The config a launch of `module` (with the `--config-path` / `--config-name` it passes, if any) composes
    with, or why it cannot be found on this machine."""
    verl = verl_config()
    if verl is None:
        return "verl is not installed here"
    name = (config_name or "").removesuffix(".yaml") or None
    if module == MAIN and config_path is None:
        return EntryConfig(verl, name or DEFAULT_NAME, own=False)
    found = module_file(module, roots)
    if found is None and config_path is None:
        where = ", ".join(str(r) for r in roots) or "no folder"
        return f"the entry point {module} is not on this machine (looked in {where})"
    module_dir = found[0].parent if found else None
    declared = hydra_main(found[0]) if found else None
    if config_path is None:
        if declared is None or declared[0] is None:
            return f"the entry point {module} ({found[0] if found else '?'}) names no Hydra config (@hydra.main)"
        folder = module_dir / declared[0]
    else:
        given = Path(config_path)
        if given.is_absolute():
            folder = given
        elif module_dir is not None:
            folder = module_dir / given  # Hydra's rule: relative to the entry module's folder
        else:
            return f"--config-path={config_path} is relative to {module}, which is not on this machine"
    name = name or (declared[1] if declared else None) or DEFAULT_NAME
    if folder.resolve() == verl.resolve() or folder.parts[-3:] == ("verl", "trainer", "config"):
        return EntryConfig(verl, name, own=False)  # a verl checkout's own config: the checked verl's
    if not (folder / f"{name}.yaml").is_file():
        return f"the entry point's config {folder / (name + '.yaml')} is not on this machine"
    return EntryConfig(folder, name, own=True, module_dir=found[1] if found else None)


def roots_of(recipe) -> list[Path]:
    """The folders a recipe's launch finds its entry point in: trainer.entry_dir, Ray's working_dir (when it is a
    folder here), the recipe's PYTHONPATH."""
    found = []
    entry_dir = recipe.trainer.entry_dir
    working = (recipe.cluster.runtime_env or {}).get("working_dir")
    path = recipe.env.get("PYTHONPATH", "")
    for text in (entry_dir, working, *path.split(":")):
        if isinstance(text, str) and text and Path(text).is_dir():
            found.append(Path(text))
    return found


def of(recipe) -> EntryConfig | str:
    """The config a recipe's launch composes with (see `resolve`)."""
    t = recipe.trainer
    return resolve(t.entrypoint, t.config_path, t.config_name, roots_of(recipe))
