"""How fast `grpolab check` is: the import time of grpolab, the time to validate each recipe after import,
and `grpolab check glm5_2` as a whole process. Targets: each validation under 50 ms after import; the whole
`grpolab check glm5_2` process (which also composes the launch against verl's Hydra config) under 1.5 s.

    .venv/bin/python benchmarks/check_speed.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))


def best_of(n: int, fn) -> float:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    code = "import time; t = time.perf_counter(); import grpolab.rules.validate; print(time.perf_counter() - t)"
    imports = [
        float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
        for _ in range(3)
    ]
    print(f"import grpolab.rules.validate: {min(imports) * 1000:.0f} ms (best of 3)")

    from grpolab.recipe.loader import load_recipe, recipe_names
    from grpolab.rules.validate import validate

    worst = 0.0
    print(f"{'recipe':24} {'load+validate':>14} {'validate only':>14}")
    for name in recipe_names():
        load_recipe(name)  # warm caches (model cards, megatron field list)
        both = best_of(5, lambda name=name: validate(load_recipe(name)))
        recipe = load_recipe(name)
        only = best_of(5, lambda recipe=recipe: validate(recipe))
        worst = max(worst, both)
        print(f"{name:24} {both * 1000:11.1f} ms {only * 1000:11.1f} ms")
    print(f"slowest check after import: {worst * 1000:.1f} ms (target < 50 ms)")

    import os
    import tempfile

    with tempfile.TemporaryDirectory() as cache:  # cold: Hydra composes; warm: its verdict is cached on disk
        env = {**os.environ, "GRPOLAB_CACHE": cache}
        runs = []
        for _ in range(4):
            start = time.perf_counter()
            subprocess.run([GRPOLAB, "check", "glm5_2"], capture_output=True, check=True, cwd=ROOT, env=env)
            runs.append(time.perf_counter() - start)
    print(
        f"`grpolab check glm5_2` whole process: first (cold cache) {runs[0]:.2f} s, then median "
        f"{statistics.median(runs[1:]):.2f} s (target < 1.5 s)"
    )
    ok = worst < 0.05 and max(runs) < 1.5
    print("targets met" if ok else "TARGET MISSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
