"""How fast `grpolab plan` is, and how its estimates compare with published figures we hold as facts.

Times `grpolab plan glm5_2` (32 x 16 Atlas A3, 512 devices) as a whole process: Python start-up, imports,
loading the recipe, enumerating and screening every layout with the rules, ranking, printing. Target: under
2 s on a 2-core machine. Then, for each published figure in tests/data/plan_facts.json (throughput or step
time of a seed recipe as a PR reported it), it prints the planner's estimate for the same recipe and layout
and the ratio estimate / published. Where the file holds no published figure it says so: the cost model has
not been calibrated against a measurement.

    .venv/bin/python benchmarks/plan_speed.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRPOLAB = str(Path(sys.executable).with_name("grpolab"))
FACTS = ROOT / "tests" / "data" / "plan_facts.json"


def whole_process(args: list[str], runs: int = 3) -> tuple[float, float]:
    """(best wall seconds, CPU seconds of that run) of `grpolab ARGS` as a fresh process."""
    import resource

    best = (float("inf"), 0.0)
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([GRPOLAB, *args], cwd=ROOT, capture_output=True, check=False)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = min(best, (wall, cpu))
    return best


def main() -> int:
    for args in (["plan", "glm5_2"], ["plan", "qwen3_5_122b_a10b_32k"], ["check", "glm5_2", "--no-verl"]):
        wall, cpu = whole_process(args)
        print(f"`grpolab {' '.join(args)}` whole process: {wall:.2f} s wall, {cpu:.2f} s CPU (best of 3)")
    print(
        "target: `grpolab plan glm5_2` under 2 s as a whole process (wall time is inflated when the machine "
        "is shared; CPU time is what one idle core would take)"
    )

    from grpolab.plan import planner

    facts = json.loads(FACTS.read_text())
    published = facts["published"]
    print(f"\nestimates against published figures ({FACTS.relative_to(ROOT)}):")
    if not published:
        print(f"  none held as facts: {facts['why_none']}")
    for item in published:
        recipe = planner.load(item["recipe"], overrides=item.get("overrides", []))
        p = planner.plan(recipe)
        own = planner.own_choice(p)
        if own is None:
            print(f"  {item['recipe']}: its own layout is not among the valid ones; no estimate")
            continue
        tokens = (
            recipe.data.train_batch_size
            * recipe.rollout.n
            * (recipe.data.max_prompt_length + recipe.data.max_response_length)
        )
        estimate = {"step_s": own.total, "tokens_per_device_s": tokens / own.total / recipe.world_size}[item["metric"]]
        print(
            f"  {item['recipe']} {item['metric']}: estimate {estimate:.3g}, published {item['value']:.3g} "
            f"({item['source']}), ratio {estimate / item['value']:.2f}"
        )
    print("\nfor the record, the planner's own estimates of the seed recipes' layouts (no measurement to compare):")
    for name in ("glm5_2", "qwen3_5_122b_a10b_32k", "qwen3_30b_a3b"):
        recipe = planner.load(name)
        own = planner.own_choice(planner.plan(recipe))
        if own:
            print(
                f"  {name}: est. step {own.total:.0f} s (rollout {own.rollout.cost['total']:.0f} s, "
                f"train {own.train.cost['total']:.0f} s): an estimate"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
