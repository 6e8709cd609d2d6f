"""Walking back from checkmates: candidate endgame starts near a mate.

Uniformly random placements of a hard ending (KBNK above all) rarely hold a
mate that Stockfish can prove in a bounded search: at a million nodes it saw a
mate in at most 20 moves in 1 of 20 random KBNK placements.  A position a few
plies before a checkmate is another matter.  :func:`walk_back` draws one: a
random checkmate of the kind (the weak side to move and mated), then random
*un-moves*, the strong and the weak side in turn, so that after an odd number
of plies the strong side is to move and a mate lies that many plies ahead on
the path walked.  That path need not be forced (the weak side may have had
better moves), so :func:`pipeline.selfplay.endgames.endgame_fens` still labels
every candidate with Stockfish and keeps its mate distance.

Un-moves never un-capture and never un-promote (the material is the kind's),
and pawns are not walked back (a pawn's un-move, double steps and en passant
are left out): kinds with pawns raise :class:`~pipeline.config_errors.ConfigError`.
"""

from __future__ import annotations

import random
from typing import Protocol

import chess

from pipeline.config_errors import ConfigError

__all__ = ["Material", "bishops_on_both_colours", "random_mate", "un_moves", "walk_back"]


class Material(Protocol):
    """An ending's material (:class:`pipeline.selfplay.endgames.Material`)."""

    @property
    def name(self) -> str: ...
    @property
    def strong(self) -> tuple[chess.PieceType, ...]: ...
    @property
    def weak(self) -> tuple[chess.PieceType, ...]: ...

_MATE_ATTEMPTS = 200_000  # placements tried for one checkmate (KBNK needs some hundreds)
_EDGE = [square for square in chess.SQUARES if chess.square_file(square) in (0, 7) or chess.square_rank(square) in (0, 7)]


def bishops_on_both_colours(board: chess.Board, kind: Material) -> bool:
    """Two or more strong (White) bishops stand on both square colours (KBBK is a win only then)."""
    if kind.strong.count(chess.BISHOP) < 2:
        return True
    bishops = board.pieces(chess.BISHOP, chess.WHITE)
    return bool(bishops & chess.BB_LIGHT_SQUARES) and bool(bishops & chess.BB_DARK_SQUARES)


def _check_kind(kind: Material) -> None:
    pieces = (*kind.strong, *kind.weak)
    if chess.PAWN in pieces:
        raise ConfigError(f"endgame kind {kind.name!r}: walking back from mates does not move pawns")


def random_mate(rng: random.Random, kind: Material) -> chess.Board:
    """A random checkmate of ``kind``: White (the strong side) has just mated, Black to move.

    The weak king is drawn on the edge (every mate of these endings but the
    rare smothered ones has it there), the strong king nine times in ten two
    squares from it (as in the mates of a lone king; otherwise anywhere), and
    the other pieces uniformly."""
    _check_kind(kind)
    pieces = [(piece, chess.WHITE) for piece in kind.strong] + [(piece, chess.BLACK) for piece in kind.weak]
    for _ in range(_MATE_ATTEMPTS):
        weak_king = rng.choice(_EDGE)
        near = [square for square in chess.SQUARES if chess.square_distance(square, weak_king) == 2]
        strong_king = rng.choice(near) if rng.random() < 0.9 else rng.choice(chess.SQUARES)
        if strong_king == weak_king:
            continue
        squares = rng.sample([square for square in chess.SQUARES if square not in (weak_king, strong_king)], len(pieces))
        board = chess.Board(None)
        board.set_piece_at(weak_king, chess.Piece(chess.KING, chess.BLACK))
        board.set_piece_at(strong_king, chess.Piece(chess.KING, chess.WHITE))
        for square, (piece, colour) in zip(squares, pieces):
            board.set_piece_at(square, chess.Piece(piece, colour))
        board.turn = chess.BLACK
        if bishops_on_both_colours(board, kind) and board.is_valid() and board.is_checkmate():
            return board
    raise ConfigError(f"no checkmate of {kind.name} found in {_MATE_ATTEMPTS} placements")


def un_moves(board: chess.Board) -> list[chess.Board]:
    """Every position one non-capturing, non-pawn move before ``board``: the
    side *not* to move in ``board`` moved last.  Each returned board has that
    side to move, is valid, and has the move back to ``board`` among its legal moves."""
    mover = not board.turn
    before: list[chess.Board] = []
    for square in chess.SquareSet(board.pieces_mask(chess.KING, mover) | _non_pawn_non_king(board, mover)):
        piece = board.piece_at(square)
        assert piece is not None
        for origin in _origins(board, square):
            earlier = board.copy(stack=False)
            earlier.remove_piece_at(square)
            earlier.set_piece_at(origin, piece)
            earlier.turn = mover
            earlier.clear_stack()
            if earlier.is_valid() and chess.Move(origin, square) in earlier.legal_moves:
                before.append(earlier)
    return before


def _non_pawn_non_king(board: chess.Board, colour: chess.Color) -> int:
    mask = 0
    for piece in (chess.KNIGHT, chess.BISHOP, chess.ROOK, chess.QUEEN):
        mask |= board.pieces_mask(piece, colour)
    return mask


def _origins(board: chess.Board, square: chess.Square) -> list[chess.Square]:
    """Empty squares from which the (non-pawn) piece on ``square`` could have
    come: the moves of these pieces are symmetric, so they are the empty
    squares it attacks."""
    return list(chess.SquareSet(board.attacks_mask(square) & ~board.occupied))


def walk_back(rng: random.Random, kind: Material, plies: int) -> chess.Board | None:
    """A position ``plies`` (odd, >= 1) un-moves before a random checkmate of
    ``kind``, White (the strong side) to move; None when the walk reaches a
    position with no un-move (rare)."""
    if plies < 1 or plies % 2 == 0:
        raise ConfigError(f"walk_back plies must be odd and >= 1 (the strong side to move), got {plies}")
    board = random_mate(rng, kind)
    for _ in range(plies):
        earlier = un_moves(board)
        if not earlier:
            return None
        board = rng.choice(earlier)
    return board
