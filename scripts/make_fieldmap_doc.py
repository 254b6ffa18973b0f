"""Write docs/fieldmap.md (each recipe field, its verl keys, engines, value transform, aliases) from
grpolab.verl.fieldmap.

.venv/bin/python scripts/make_fieldmap_doc.py            # (re)write docs/fieldmap.md
.venv/bin/python scripts/make_fieldmap_doc.py --check    # exit 1 if docs/fieldmap.md differs from the code
"""

from __future__ import annotations

import sys
from pathlib import Path

from make_docs import main

from grpolab.verl.fieldmap import markdown

OUT = Path(__file__).resolve().parents[1] / "docs" / "fieldmap.md"

if __name__ == "__main__":
    sys.exit(main(OUT, markdown, __doc__))
