"""``python -m icml25 ...`` is the same as ``icml25 ...``."""

import sys

from icml25.cli import main

sys.exit(main())
