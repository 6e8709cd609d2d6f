"""Distance-to-mate tables of pawnless endings with up to four pieces.

lc0 rescores its training games with the Syzygy tablebases; none can be
downloaded here, so the native core builds its own tables by retrograde
analysis (``models/native/tablebase.cpp``): KQK, KRK, KBBK, KBNK, KQKR and
any other pawnless material with at most two pieces besides the kings, in
seconds (the three four-piece tables above take 12 to 22 s each).  This module
names a position's table, finds its entry and reads it; it holds no files
(:mod:`pipeline.training.tablebases` keeps the tables on disk).

A table is named by its material with white's pieces first, each side's in
the order Q, R, B, N (``KQvK``, ``KBNvK``, ``KQvKR``).  A position whose
black side has more material is looked up with its colours swapped and the
board mirrored, so only tables whose white side is at least as strong are
needed.  Each entry is from the side to move's view: 0 a draw, ``v > 0``
mate in ``v`` plies, ``v < 0`` mated in ``-v - 1`` plies.  Castling rights
and the fifty-move rule are not in the tables: a position with castling
rights is not probed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models import _native

__all__ = ["INVALID", "MAX_PIECES", "Probe", "TableEntry", "build_tables", "decode_entry",
           "table_entry"]  # fmt: skip

INVALID = int(_native.TABLEBASE_INVALID)
MAX_PIECES = 2 + int(_native.TABLEBASE_MAX_EXTRA_PIECES)
"""The most pieces (kings included) a table holds."""

_ORDER = "QRBN"
_VALUE = {"Q": 9, "R": 5, "B": 3, "N": 3}


@dataclass(frozen=True)
class Probe:
    """A table's verdict for the side to move: ``result`` +1 (it mates in
    ``plies``), -1 (it is mated in ``plies``) or 0 (a draw, ``plies`` None)."""

    result: int
    plies: int | None


@dataclass(frozen=True)
class TableEntry:
    """Where a position is in the tables: the table's name and the entry's index."""

    name: str
    index: int


def table_entry(fen: str) -> TableEntry | None:
    """The table and entry of the position ``fen``, or None when no table
    holds it (a pawn, more than :data:`MAX_PIECES` pieces, castling rights).
    Only the FEN's placement, side to move and castling fields are read;
    the placement is not checked beyond the pieces it names."""
    fields = fen.split()
    if len(fields) < 3 or fields[1] not in ("w", "b") or fields[2] != "-":
        return None
    pieces = _placement(fields[0])
    if pieces is None or len(pieces) > MAX_PIECES:
        return None
    kings = [square for square, letter in pieces if letter in "Kk"]
    if len(kings) != 2 or not any(letter == "K" for _, letter in pieces):
        return None
    white = sorted(((sq, letter) for sq, letter in pieces if letter in _ORDER), key=_piece_order)
    black = sorted(((sq, letter.upper()) for sq, letter in pieces if letter in _ORDER.lower()), key=_piece_order)
    white_king = next(sq for sq, letter in pieces if letter == "K")
    black_king = next(sq for sq, letter in pieces if letter == "k")
    stm = 0 if fields[1] == "w" else 1
    if _strength(black) > _strength(white):
        white, black = [(sq ^ 56, p) for sq, p in black], [(sq ^ 56, p) for sq, p in white]
        white_king, black_king, stm = black_king ^ 56, white_king ^ 56, 1 - stm
    name = "K" + "".join(p for _, p in white) + "vK" + "".join(p for _, p in black)
    index = (stm * 64 + white_king) * 64 + black_king
    for square, _ in (*white, *black):
        index = index * 64 + square
    return TableEntry(name, index)


def decode_entry(value: int) -> Probe | None:
    """The :class:`Probe` of a table entry (None: the entry is not a position)."""
    if value == INVALID:
        return None
    if value > 0:
        return Probe(1, value)
    if value < 0:
        return Probe(-1, -value - 1)
    return Probe(0, None)


def build_tables(names: Iterable[str]) -> dict[str, npt.NDArray[np.int8]]:
    """The tables ``names`` built by the native core (smaller tables they
    need are built on the way and dropped).  Raises ValueError
    (``models._native.ChessError``) naming a malformed name."""
    generator = _native.TablebaseGenerator()
    return {name: generator.table(name) for name in names}


def _placement(placement: str) -> list[tuple[int, str]] | None:
    """(square, letter) of each piece of a FEN placement (a1 = 0), None when
    a pawn is on it or it is not eight ranks of eight squares."""
    ranks = placement.split("/")
    if len(ranks) != 8:
        return None
    pieces: list[tuple[int, str]] = []
    for row, rank in enumerate(ranks):
        file = 0
        for char in rank:
            if char.isdigit():
                file += int(char)
                continue
            if char not in "KQRBNkqrbn" or file > 7:
                return None
            pieces.append(((7 - row) * 8 + file, char))
            file += 1
        if file != 8:
            return None
    return pieces


def _piece_order(piece: tuple[int, str]) -> int:
    return _ORDER.index(piece[1].upper())


def _strength(side: list[tuple[int, str]]) -> tuple[int, int, str]:
    letters = "".join(p for _, p in side)
    return (sum(_VALUE[p] for p in letters), len(letters), "".join(sorted(letters, key=_ORDER.index)[::-1]))
