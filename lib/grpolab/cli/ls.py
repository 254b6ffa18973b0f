"""`grpolab ls`: the recipes under params/recipes/, one line each."""

from __future__ import annotations

import sys

from grpolab.paths import params_dir
from grpolab.problems import InputError, RecipeError


def register(sub) -> None:
    p = sub.add_parser("ls", help="list the recipes, one line each")
    p.set_defaults(func=main)


def main(args) -> int:
    # lazy: pydantic, yaml (the parser imports every verb's module; a command loads only its own verb's)
    from grpolab.recipe.loader import describe, load_recipe, recipe_names

    names = recipe_names()
    if not names:  # nothing to list is a broken install or a wrong GRPOLAB_PARAMS, never "no recipes"
        print(
            f"error: no recipes found in {params_dir() / 'recipes'} (the params/ folder: $GRPOLAB_PARAMS, else the "
            "source checkout's, else <prefix>/share/grpolab/params from `pip install .`); set GRPOLAB_PARAMS to a "
            "params/ folder",
            file=sys.stderr,
        )
        return 2
    for name in names:
        path = params_dir() / "recipes" / f"{name}.yaml"
        try:
            r = load_recipe(name)
            shape = (
                f"{r.cluster.nnodes}x{r.cluster.devices_per_node} {r.cluster.device:4} "
                f"{r.train.engine}+{r.rollout.engine}"
            )
        except (InputError, RecipeError) as exc:
            shape = f"INVALID ({str(exc).splitlines()[0]})"
        print(f"{name:24} {shape:28} {describe(path)}")
    return 0
