"""Write docs/rules.md (every rule id, what it checks, its severity, the public report) from the rule registry
(grpolab.rules.registry, through grpolab.rules.docs) and params/stack_rules.yaml.

.venv/bin/python scripts/make_rules_doc.py            # (re)write docs/rules.md
.venv/bin/python scripts/make_rules_doc.py --check    # exit 1 if docs/rules.md differs from the code
"""

from __future__ import annotations

import sys
from pathlib import Path

from make_docs import main

from grpolab.rules.docs import markdown

OUT = Path(__file__).resolve().parents[1] / "docs" / "rules.md"

if __name__ == "__main__":
    sys.exit(main(OUT, markdown, __doc__))
