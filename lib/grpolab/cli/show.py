"""`grpolab show RECIPE [--set k=v ...]`: the fully resolved recipe as YAML."""

from __future__ import annotations

from grpolab.cli.common import add_recipe_args, load


def register(sub) -> None:
    p = sub.add_parser("show", help="print the resolved recipe as YAML")
    add_recipe_args(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from grpolab.recipe import to_yaml

    print(to_yaml(load(args)), end="")
    return 0
