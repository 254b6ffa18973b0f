"""Write every generated doc (docs/causes.md, docs/rules.md, docs/fieldmap.md) from the code, or with --check say
which is stale.

.venv/bin/python scripts/make_docs.py            # (re)write every generated doc
.venv/bin/python scripts/make_docs.py --check    # exit 1 if any of them differs from the code
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grpolab.monitor.causes_doc import markdown as causes
from grpolab.rules.docs import markdown as rules
from grpolab.verl.fieldmap import markdown as fieldmap

DOCS = Path(__file__).resolve().parents[1] / "docs"
WRITERS = {"causes.md": causes, "rules.md": rules, "fieldmap.md": fieldmap}


def write(out: Path, text: str, check: bool) -> int:
    """(Re)write `out`, or with `check` exit status 1 when `out` differs from `text`."""
    if check:
        if not out.is_file() or out.read_text() != text:
            print(f"{out} is stale: run .venv/bin/python scripts/make_docs.py", file=sys.stderr)
            return 1
        print(f"{out} is up to date")
        return 0
    out.write_text(text)
    print(f"wrote {out}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated doc is stale")
    check = parser.parse_args().check
    return max(write(DOCS / name, make(), check) for name, make in WRITERS.items())


if __name__ == "__main__":
    sys.exit(main())
