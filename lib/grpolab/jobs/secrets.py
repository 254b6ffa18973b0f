"""The job's secret-file hand-off: a run's secret env values reach its job through RUN_DIR/.secrets.json.

Ray's runtime_env is written to Ray's logs and returned by its Jobs API, so on the embedded head the secret
values travel in a file of the run directory instead: `hand_off` writes it (mode 0600, created exclusively) and
returns the env without them; the job's wrapper (grpolab.jobs.job_entry) `take`s it (reads and deletes) as it
starts; `discard` removes it when a submission fails or a run ends without its job having started, so no
secret stays on disk. Which names are secret, and every redaction: grpolab.recipe.secrets.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from grpolab import owned
from grpolab.recipe.secrets import is_secret

SECRETS_FILE = ".secrets.json"


def hand_off(run_dir: Path, env: Mapping[str, str], marked: Iterable[str] = ()) -> dict[str, str]:
    """Write the secret entries of env to RUN_DIR/.secrets.json (user-only) and return env without them."""
    marked = list(marked)
    secret = {k: v for k, v in env.items() if is_secret(k, marked)}
    if secret:
        fd = os.open(Path(run_dir) / SECRETS_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(secret, fh)
        except BaseException:  # a full disk: no half-written secrets file stays behind
            discard(run_dir)
            raise
    return {k: v for k, v in env.items() if k not in secret}


def take(run_dir: Path) -> dict[str, str]:
    """The secrets handed to this run's job, and the file deleted ({} when there is none)."""
    path = Path(run_dir) / SECRETS_FILE
    try:
        values = json.loads(path.read_text())
    except (FileNotFoundError, ValueError):
        values = {}
    finally:
        discard(run_dir)
    return {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {}


def discard(run_dir: Path) -> bool:
    """Remove the run's secrets file (a failed submission, a job that never started); True when one was there."""
    with contextlib.suppress(NotADirectoryError, owned.Refused):  # a folder or a mount at its name: not ours
        return owned.remove_file(Path(run_dir) / SECRETS_FILE)
    return False
