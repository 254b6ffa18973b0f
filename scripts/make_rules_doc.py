"""Write docs/rules.md (every rule id, what it checks, its severity, the public report) from the rule registry
(grpolab.rules.registry, through grpolab.rules.docs) and params/stack_rules.yaml.

.venv/bin/python scripts/make_rules_doc.py            # (re)write docs/rules.md
.venv/bin/python scripts/make_rules_doc.py --check    # exit 1 if docs/rules.md differs from the code
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grpolab.rules.docs import markdown

OUT = Path(__file__).resolve().parents[1] / "docs" / "rules.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/rules.md is stale")
    args = parser.parse_args()
    text = markdown()
    if args.check:
        if not OUT.is_file() or OUT.read_text() != text:
            print(f"{OUT} is stale: run .venv/bin/python scripts/make_rules_doc.py", file=sys.stderr)
            return 1
        print(f"{OUT} is up to date")
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
