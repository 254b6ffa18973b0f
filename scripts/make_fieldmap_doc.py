"""Write docs/fieldmap.md (each recipe field, its verl keys, engines, value transform, aliases) from
grpolab.verl.fieldmap.

.venv/bin/python scripts/make_fieldmap_doc.py            # (re)write docs/fieldmap.md
.venv/bin/python scripts/make_fieldmap_doc.py --check    # exit 1 if docs/fieldmap.md differs from the code
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grpolab.verl.fieldmap import markdown

OUT = Path(__file__).resolve().parents[1] / "docs" / "fieldmap.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/fieldmap.md is stale")
    args = parser.parse_args()
    text = markdown()
    if args.check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT} is stale: run .venv/bin/python scripts/make_fieldmap_doc.py", file=sys.stderr)
            return 1
        print(f"{OUT} is up to date")
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
