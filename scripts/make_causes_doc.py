"""Write docs/causes.md (every failure cause, what it means, its fix, its check rule, the public reports) from the
cause registry (grpolab.monitor.causes, through grpolab.monitor.causes_doc).

.venv/bin/python scripts/make_causes_doc.py            # (re)write docs/causes.md
.venv/bin/python scripts/make_causes_doc.py --check    # exit 1 if docs/causes.md differs from the code
"""

from __future__ import annotations

import sys
from pathlib import Path

from make_docs import main

from grpolab.monitor.causes_doc import markdown

OUT = Path(__file__).resolve().parents[1] / "docs" / "causes.md"

if __name__ == "__main__":
    sys.exit(main(OUT, markdown, __doc__))
