"""Rescoring the value target of positions whose result is known: a stand-in for tablebases.

lc0 rescores its training games with Syzygy tablebases: a position with few
enough pieces gets the tablebase's result instead of the game's.  Without
a tablebase (none can be downloaded here), ``train.known_endings`` rescores
the positions of four endings whose result is known from their material
alone: the side with king and queen, king and rook, king and two bishops on
opposite colours, or king, bishop and knight against a bare king wins, once
the other side can no longer take a piece.  Self-play on these endings
otherwise teaches the value head that they are drawn: a net that leaves a
piece en prise plays against itself, the lone king takes it, and the game
(every position of it) is a draw by insufficient material
(``experiments/learning.py``: about 45% of the games of the harder endings).

A position is rescored as a win for the strong side (``z = +1`` with the
strong side to move, ``-1`` with the lone king to move) when:

* no pawn is on the board and the material is one of those four;
* with the lone king to move, it cannot take a piece (it may be a position
  the game lost in, and its own z stays);
* with the strong side to move, at most one of its pieces is en prise to
  the lone king (a fork of two may lose one; that z stays too).

The 50-move rule is not looked at: the curriculum's games and its held-out
starts are shorter than 100 plies.  Any other position keeps its z.
"""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np
import numpy.typing as npt

__all__ = ["KNOWN_WINS", "known_ending_value", "rescore_known_endings"]

KNOWN_WINS = frozenset({"Q", "R", "BB", "BN"})
"""The strong side's pieces (besides its king) against a bare king that win (two bishops: on opposite colours)."""

_PIECE_LETTERS = frozenset("QRBNqrbn")


def known_ending_value(fen: str) -> int | None:
    """+1 / -1 (for the side to move) when ``fen`` is a known win of the
    strong side by the rules above, else None."""
    placement = fen.split(" ", 1)[0]
    pieces = [c for c in placement if c in _PIECE_LETTERS or c in "Pp"]
    if not 1 <= len(pieces) <= 2 or any(c in "Pp" for c in pieces):
        return None
    strong = chess.WHITE if pieces[0].isupper() else chess.BLACK
    if any(c.isupper() != (strong == chess.WHITE) for c in pieces):
        return None  # each side has a piece
    material = "".join(sorted(c.upper() for c in pieces))
    if material not in KNOWN_WINS:
        return None
    board = chess.Board(fen)
    if not board.is_valid() or (material == "BB" and _same_colour_bishops(board, strong)):
        return None
    en_prise = _en_prise(board, strong)
    if board.turn == strong:
        return 1 if en_prise <= 1 else None
    return -1 if en_prise == 0 else None


def rescore_known_endings(fens: Sequence[str], z: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``z`` with each row whose ``fens`` entry is a known win replaced by its
    known value (a new array; the rows are the shard's, side to move's view)."""
    rescored = z.astype(np.float32, copy=True)
    for row, fen in enumerate(fens):
        value = known_ending_value(fen)
        if value is not None:
            rescored[row] = value
    return rescored


def _same_colour_bishops(board: chess.Board, strong: chess.Color) -> bool:
    bishops = board.pieces(chess.BISHOP, strong)
    return bool(bishops & chess.BB_LIGHT_SQUARES) != bool(bishops & chess.BB_DARK_SQUARES)


def _en_prise(board: chess.Board, strong: chess.Color) -> int:
    """The strong side's pieces the lone king attacks that nothing defends."""
    king = board.king(not strong)
    if king is None:
        return 0
    near = chess.BB_KING_ATTACKS[king] & board.occupied_co[strong] & ~board.kings
    return sum(1 for square in chess.scan_forward(near) if not board.is_attacked_by(strong, square))
