"""``python -m pipeline``: the ``zerochess`` command under its older name (dvc.yaml's stages use it)."""

import sys

from zerochess.cli import main

sys.exit(main())
