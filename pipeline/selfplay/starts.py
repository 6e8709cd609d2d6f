"""Start positions of self-play (and of the gating book): EPD or FEN files.

``selfplay.start_positions``, a curriculum stage's ``start_positions`` and
``gating.openings`` name such files; a relative path missing from the working
directory is looked up in the project's folder.
"""

from __future__ import annotations

from pathlib import Path

import chess

from pipeline.config_errors import ConfigError
from pipeline.resources import project_file

__all__ = ["load_start_positions", "project_file"]


def load_start_positions(path: str | Path) -> list[str]:
    """FENs from an EPD or FEN file, one position a line; ``#`` starts a comment.

    A relative path missing from the working directory is looked up in the
    project's folder (so ``data/endgames.epd`` in a preset works from anywhere).
    Raises :class:`ConfigError` naming the file and line of an invalid position.
    """
    path = project_file(path)
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read start positions {path}: {error}") from error
    fens = []
    for number, raw in enumerate(lines, 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        try:
            parts = text.split()
            is_fen = len(parts) == 6 and parts[4].isdigit() and parts[5].isdigit()
            board = chess.Board(text) if is_fen else chess.Board.from_epd(text)[0]
        except ValueError as error:
            raise ConfigError(f"{path}:{number}: invalid position {text!r}: {error}") from error
        if not board.is_valid() or board.outcome() is not None:
            raise ConfigError(f"{path}:{number}: position {text!r} is not playable ({board.status()!r})")
        fens.append(board.fen())
    if not fens:
        raise ConfigError(f"{path}: no positions")
    return fens
