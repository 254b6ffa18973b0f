"""Write every generated doc (docs/causes.md, docs/rules.md, docs/fieldmap.md), or with --check say which is stale;
the one way each scripts/make_*_doc.py writes its own (they call `main(OUT, markdown, __doc__)`).

.venv/bin/python scripts/make_docs.py            # (re)write every generated doc
.venv/bin/python scripts/make_docs.py --check    # exit 1 if any of them differs from the code
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def main(out: Path, markdown: Callable[[], str], doc: str) -> int:
    """(Re)write `out` from `markdown()`, or with --check exit 1 when `out` differs from it."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--check", action="store_true", help=f"exit 1 if {out.name} is stale")
    args = parser.parse_args()
    return write(out, markdown(), args.check, parser.prog)


def write(out: Path, text: str, check: bool, prog: str) -> int:
    if check:
        if not out.is_file() or out.read_text() != text:
            print(f"{out} is stale: run .venv/bin/python scripts/{prog}", file=sys.stderr)
            return 1
        print(f"{out} is up to date")
        return 0
    out.write_text(text)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    from grpolab.monitor.causes_doc import markdown as causes
    from grpolab.rules.docs import markdown as rules
    from grpolab.verl.fieldmap import markdown as fieldmap

    docs = Path(__file__).resolve().parents[1] / "docs"
    check = "--check" in sys.argv[1:]
    scripts = {"causes.md": causes, "rules.md": rules, "fieldmap.md": fieldmap}
    sys.exit(max(write(docs / name, make(), check, f"make_{name[:-3]}_doc.py") for name, make in scripts.items()))
