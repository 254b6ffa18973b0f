"""Write docs/causes.md (every failure cause, what it means, its fix, its check rule, the public reports) from the
cause registry (grpolab.monitor.causes, through grpolab.monitor.causes_doc).

.venv/bin/python scripts/make_causes_doc.py            # (re)write docs/causes.md
.venv/bin/python scripts/make_causes_doc.py --check    # exit 1 if docs/causes.md differs from the code
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grpolab.monitor.causes_doc import markdown

OUT = Path(__file__).resolve().parents[1] / "docs" / "causes.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/causes.md is stale")
    args = parser.parse_args()
    text = markdown()
    if args.check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT} is stale: run .venv/bin/python scripts/make_causes_doc.py", file=sys.stderr)
            return 1
        print(f"{OUT} is up to date")
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
