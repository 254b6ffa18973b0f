"""`python -m grpolab` is the same as the `grpolab` command."""

import sys

from grpolab.cli import main

sys.exit(main())
