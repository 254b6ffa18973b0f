"""Derive what each supported verl version's keys mean, from its own config and source, into
lib/grpolab/data/verl_versions.json (grpolab.verl.versions reads it).

Reads verl's wheels as zip files (never installs them) and, for main, a git mirror of volcengine/verl with
`git show` (the commit is recorded). Every fact carries the file and line it comes from.

    .venv/bin/python scripts/verl_versions.py                       # the wheels in .cache/verl-wheels, no main
    .venv/bin/python scripts/verl_versions.py --main /path/to/verl.git [--commit SHA]
    .venv/bin/python scripts/verl_versions.py --check               # exit 1 when the committed table is stale

The wheels come from PyPI: `pip download --no-deps verl==0.9.1 -d .cache/verl-wheels` (scripts/setup.sh does it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from grpolab.verl import fieldmap, versions  # noqa: E402

WHEELS = ROOT / ".cache" / "verl-wheels"
RELEASES = ("0.7.1", "0.8.0", "0.9.0", "0.9.1")


def default_keys() -> list[tuple[str, str]]:
    """(verl key, the engine whose config holds it) of every plain row of the field map: their defaults per version."""
    return [
        (row.verl, "megatron" if row.engines == fieldmap.MEGATRON else "fsdp")
        for row in fieldmap.KEYS
        if row.kind == "value" and fieldmap.ROLLOUT_WORD not in row.verl
    ]


def wheel_source(path: Path) -> versions.Source:
    archive = zipfile.ZipFile(path)
    names = set(archive.namelist())
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    def text(rel: str) -> str | None:
        return archive.read(rel).decode(errors="replace") if rel in names else None

    def files(prefix: str) -> list[str]:
        return sorted(n for n in names if n.startswith(prefix) and not n.endswith("/"))

    return versions.Source(f"PyPI {path.name} (sha256 {digest})", text, files)


def git_source(repo: Path, commit: str) -> versions.Source:
    listed = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", commit, "verl/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    names = set(listed)
    date = subprocess.run(
        ["git", "-C", str(repo), "show", "-s", "--format=%cs", commit], check=True, capture_output=True, text=True
    ).stdout.strip()

    def text(rel: str) -> str | None:
        if rel not in names:
            return None
        out = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{rel}"], capture_output=True)
        return out.stdout.decode(errors="replace")

    def files(prefix: str) -> list[str]:
        return sorted(n for n in names if n.startswith(prefix))

    return versions.Source(f"github.com/volcengine/verl main at {commit} ({date})", text, files)


def build(main: Path | None, commit: str) -> dict:
    table: dict = {}
    for release in RELEASES:
        wheel = WHEELS / f"verl-{release}-py3-none-any.whl"
        if not wheel.is_file():
            sys.exit(f"missing {wheel}: pip download --no-deps verl=={release} -d {WHEELS}")
        table[release] = versions.derive(wheel_source(wheel), fieldmap.VERSIONED, default_keys())
    if main is not None:
        sha = subprocess.run(
            ["git", "-C", str(main), "rev-parse", commit], check=True, capture_output=True, text=True
        ).stdout.strip()
        facts = versions.derive(git_source(main, sha), fieldmap.VERSIONED, default_keys())
        facts["main"] = sha
        table[facts["version"]] = facts
    elif versions.TABLE.is_file():  # keep the committed main row when no mirror is given
        table.update({v: f for v, f in versions.table().items() if "main" in f})
    return {
        "about": "Derived by scripts/verl_versions.py from each verl version's own config and source; do not edit.",
        "supported": versions.SUPPORTED,
        "versions": table,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--main", type=Path, help="a git mirror of volcengine/verl")
    parser.add_argument("--commit", default="HEAD")
    parser.add_argument("--check", action="store_true", help="compare with the committed table, write nothing")
    args = parser.parse_args()
    text = json.dumps(build(args.main, args.commit), indent=1, sort_keys=False) + "\n"
    if args.check:
        same = versions.TABLE.is_file() and versions.TABLE.read_text() == text
        print("verl_versions.json is up to date" if same else "verl_versions.json is stale: run the script")
        return 0 if same else 1
    versions.TABLE.write_text(text)
    print(f"wrote {versions.TABLE.relative_to(ROOT)}: {', '.join(json.loads(text)['versions'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
