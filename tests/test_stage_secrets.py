"""A secret given to run.ipynb as an override (`-y "overrides: [env.HF_TOKEN=...]"`) reaches the stage notebooks
without being copied into them: papermill writes the parameters it injects into every executed notebook, so the
stage runner masks secret overrides there and hands the real ones to the stage kernel through its environment."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import nbformat

from grpolab import notebook as nb

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ROOT / "tests" / "data" / "bad_inputs" / "with_secrets.yaml"  # marks CUSTOM_THING under `secrets:`
OVERRIDES = ["env.MY_PW=stage-pw-secret", "env.CUSTOM_THING=stage-custom-secret", "rollout.n=4"]

# the stage prints digests of what it loaded (its source must not hold the secrets either)
STAGE_CODE = """import hashlib
from grpolab import notebook as nb
recipe = nb.load(model, overrides)
for name in ("MY_PW", "CUSTOM_THING"):
    print(name, hashlib.sha256(recipe.env[name].encode()).hexdigest())
print("rollout.n", recipe.rollout.n)"""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_secret_overrides_reach_the_stage_but_not_its_notebook(tmp_path, stage_notebooks):
    stages = nb.Stages(
        {"model": str(RECIPE), "overrides": OVERRIDES, "dry_run": True, "ray_address": None},
        notebooks=stage_notebooks(tmp_path / "stages", STAGE_CODE),  # 01_setup runs; the others never do here
    )
    stages.run("01_setup", model=str(RECIPE), overrides=OVERRIDES)
    written = Path(stages.stages[0]["notebook"])
    text = written.read_text()
    assert "stage-pw-secret" not in text and "stage-custom-secret" not in text
    book = nbformat.read(str(written), as_version=4)
    injected = next(c for c in book.cells if "injected-parameters" in c.metadata.get("tags", []))
    assert "env.MY_PW=***redacted***" in injected.source and "env.CUSTOM_THING=***redacted***" in injected.source
    assert "rollout.n=4" in injected.source  # plain overrides are written as given
    shown = "".join(o.get("text", "") for c in book.cells if c.cell_type == "code" for o in c.outputs)
    # the stage loaded the real values
    assert f"MY_PW {_digest('stage-pw-secret')}" in shown, shown
    assert f"CUSTOM_THING {_digest('stage-custom-secret')}" in shown, shown
    assert "rollout.n 4" in shown, shown
    assert nb.STAGE_SECRETS_VAR not in os.environ  # only the stage kernel had it


def test_masked_overrides_round_trip():
    masked, real = nb.mask_overrides(OVERRIDES, marked=["CUSTOM_THING"])
    assert masked == ["env.MY_PW=***redacted***", "env.CUSTOM_THING=***redacted***", "rollout.n=4"]
    assert nb.unmask_overrides(masked) == masked  # outside a stage kernel nothing is put back
    os.environ[nb.STAGE_SECRETS_VAR] = __import__("json").dumps(real)
    try:
        assert nb.unmask_overrides(masked) == OVERRIDES
    finally:
        del os.environ[nb.STAGE_SECRETS_VAR]
