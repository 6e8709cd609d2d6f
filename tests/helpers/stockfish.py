"""Stockfish in the tests: whether a binary is here, and the mark that skips a test without one."""

from __future__ import annotations

import os

import pytest


def have_stockfish() -> bool:
    """Whether a Stockfish binary can be found (PATH or Debian's /usr/games)."""
    from pipeline.players.stockfish import find_stockfish

    try:
        find_stockfish()
    except Exception:  # noqa: BLE001 - any failure: no engine here
        return False
    return True


needs_stockfish = pytest.mark.skipif(not have_stockfish(), reason="no Stockfish binary")
"""Skips a test where no Stockfish binary is installed."""


def _have_debian_stockfish() -> bool:
    from pipeline.players.stockfish import DEBIAN_PATH

    return os.access(DEBIAN_PATH, os.X_OK)


needs_debian_stockfish = pytest.mark.skipif(not _have_debian_stockfish(), reason="Debian's stockfish not installed")
"""Skips a test where Debian's ``/usr/games/stockfish`` (``DEBIAN_PATH``) is not installed."""
