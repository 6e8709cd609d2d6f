"""``python -m pipeline`` is the ``zerochess`` command."""

import sys

from pipeline.cli import main

sys.exit(main())
