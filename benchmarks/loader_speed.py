"""How the recipe loader copes with big and hostile files: a 1 MB recipe (32,000 env entries) is checked, and a
342-byte "billion laughs" alias bomb (nested YAML aliases that would expand to 387 million values) is refused.
Targets: the 1 MB recipe checks in under 2 s; the alias bomb fails in under 1 s (before, it grew to 2 GB and never
ended, and 32k keys took 78 s: the loader was quadratic in the number of keys).

    .venv/bin/python benchmarks/loader_speed.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
BOMB = ROOT / "tests" / "data" / "bad_inputs" / "billion_laughs.yaml"


def big_recipe(path: Path, size: int = 1_000_000) -> int:
    """A valid recipe of about `size` bytes: tiny plus plain env entries. Returns the number of env keys."""
    lines = ["defaults: [recipes/tiny]", "env:"]
    n, total = 0, 0
    while total < size:
        line = f"  GRPOLAB_BENCH_{n:06d}: value-{n:06d}-abcdefghij"
        lines.append(line)
        total += len(line) + 1
        n += 1
    path.write_text("\n".join(lines) + "\n")
    return n


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> int:
    from grpolab.problems import InputError, RecipeError
    from grpolab.recipe.loader import load_recipe
    from grpolab.rules.validate import validate

    load_recipe("tiny")  # warm imports and caches: the figures below are the loader's, not Python's
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.yaml"
        keys = big_recipe(path)
        size = path.stat().st_size
        seconds, problems = timed(lambda: validate(load_recipe(path)))
        errors = [p for p in problems if p.severity == "error"]
        print(
            f"1 MB recipe ({size / 1e6:.2f} MB, {keys} env keys): load + validate {seconds:.2f} s, "
            f"{len(errors)} error(s) (target < 2 s)"
        )
        proc_s, proc = timed(
            lambda: subprocess.run([GRPOLAB, "check", "--no-verl", str(path)], capture_output=True, text=True, cwd=ROOT)
        )
        print(f"`grpolab check --no-verl` of it, whole process: {proc_s:.2f} s, exit {proc.returncode}")

    def bomb():
        try:
            load_recipe(BOMB)
        except (InputError, RecipeError) as exc:
            return str(exc)
        return None

    bomb_s, message = timed(bomb)
    print(f"alias bomb ({BOMB.stat().st_size} bytes): refused in {bomb_s * 1000:.0f} ms (target < 1 s): {message}")
    proc_s, proc = timed(
        lambda: subprocess.run([GRPOLAB, "check", str(BOMB)], capture_output=True, text=True, cwd=ROOT, timeout=60)
    )
    print(f"`grpolab check` of it, whole process: {proc_s:.2f} s, exit {proc.returncode}")
    ok = seconds < 2 and not errors and message is not None and bomb_s < 1
    print("targets met" if ok else "TARGET MISSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
