"""Where things live: the params/ directory with the recipes, the runs/ directory with run records, and the cache
of what can be rebuilt (tiny models, verl's verdicts on composed launches).

Each can be moved with an environment variable (GRPOLAB_PARAMS, GRPOLAB_RUNS, GRPOLAB_CACHE) so that an installed
package, a notebook in another folder and the tests all find the same files.
"""

from __future__ import annotations

import os
from pathlib import Path

# lib/grpolab/paths.py -> the project root is three levels up (a source checkout, installed editable).
PROJECT_ROOT = Path(__file__).resolve().parents[2]


def params_dir() -> Path:
    """The params/ directory: $GRPOLAB_PARAMS, else the source checkout's own (an editable install), else the one a
    wheel install ships (`pip install .` puts it in the environment's data folder: <prefix>/share/grpolab/params)."""
    if os.environ.get("GRPOLAB_PARAMS"):
        return Path(os.environ["GRPOLAB_PARAMS"])
    own = PROJECT_ROOT / "params"
    if (own / "base.yaml").is_file():
        return own
    return installed_params() or own


def installed_params() -> Path | None:
    """The params/ a wheel install shipped (pyproject's data-files), in this environment's or the user's data folder."""
    import site
    import sysconfig

    for data in (sysconfig.get_path("data"), site.getuserbase()):
        folder = Path(data) / "share" / "grpolab" / "params"
        if (folder / "base.yaml").is_file():
            return folder
    return None


def runs_dir() -> Path:
    """The runs/ directory that holds one folder per run: $GRPOLAB_RUNS, else <project>/runs."""
    return Path(os.environ.get("GRPOLAB_RUNS") or PROJECT_ROOT / "runs")


def cache_root() -> Path:
    """What can be rebuilt: $GRPOLAB_CACHE, else $XDG_CACHE_HOME/grpolab, else ~/.cache/grpolab."""
    if os.environ.get("GRPOLAB_CACHE"):
        return Path(os.environ["GRPOLAB_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "grpolab"
