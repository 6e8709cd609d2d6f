"""``python -m zerochess`` is the ``zerochess`` command."""

import sys

from zerochess.cli import main

sys.exit(main())
