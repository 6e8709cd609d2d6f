"""Uniformly random legal moves for python-chess boards, without generating them all.

The move sampler of the UCT player's rollouts (:mod:`pipeline.players.uct`):
:func:`random_legal_move` draws a pseudo-legal move from counted move sets
(:func:`pseudo_legal_groups`, :func:`nth_move`) and redraws while it would
leave the king in check, which is uniform over the legal moves and several
times cheaper than ``list(board.generate_legal_moves())`` per ply.
"""

from __future__ import annotations

from collections.abc import Callable

import chess


def random_legal_move(
    board: chess.Board, legal: list[chess.Move] | None, random_: Callable[[], float]
) -> chess.Move | None:
    """A uniformly random legal move, ``None`` if there is none.

    With a ``legal`` list (the expanded node's moves) it is drawn from there.
    Otherwise, unless in check, a uniformly random *pseudo-legal* move is drawn
    from the counted move sets of :func:`pseudo_legal_groups` (no move objects
    are built for the others) and redrawn while it would leave the king in
    check: rejection sampling, so uniform over the legal moves.  In check, or
    after ``_MAX_REJECTIONS`` redraws (a stalemate, say), the legal moves are
    generated in full.
    """
    if legal is None and not board.is_check():
        groups, total = pseudo_legal_groups(board)
        if total == 0:
            return None
        for _ in range(_MAX_REJECTIONS):
            move = nth_move(groups, int(random_() * total))
            if not board.is_into_check(move):
                return move
    if legal is None:
        legal = list(board.generate_legal_moves())
    return legal[int(random_() * len(legal))] if legal else None


_MAX_REJECTIONS = 8
_PIECE, _PAWN, _PROMOTION, _LISTED = range(4)
_PROMOTION_PIECES = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)
_NOT_FILE_A = chess.BB_ALL & ~chess.BB_FILE_A
_NOT_FILE_H = chess.BB_ALL & ~chess.BB_FILE_H

# A group of pseudo-legal moves: (count, kind, square or delta, targets).
#   _PIECE:     from ``square`` to each set bit of ``targets``;
#   _PAWN:      to each set bit ``t`` from ``t - delta``;
#   _PROMOTION: as _PAWN, four moves (Q, R, B, N) per target;
#   _LISTED:    ``targets`` is a list of moves (castling, en passant).
MoveGroup = tuple[int, int, int, "int | list[chess.Move]"]


def pseudo_legal_groups(board: chess.Board) -> tuple[list[MoveGroup], int]:
    """The side to move's pseudo-legal moves as counted groups, and their total.

    Exactly the moves of ``board.generate_pseudo_legal_moves()``: piece moves
    from ``attacks_mask``, pawn pushes and captures by bitboard shifts,
    castling and en passant from python-chess's own generators.
    """
    white = board.turn == chess.WHITE
    us = board.occupied_co[board.turn]
    them = board.occupied_co[not board.turn]
    groups: list[MoveGroup] = []
    total = 0
    occupied = board.occupied
    not_us = chess.BB_ALL & ~us
    pieces = us & ~board.pawns
    diagonal = board.bishops | board.queens
    straight = board.rooks | board.queens
    while pieces:
        square = pieces.bit_length() - 1
        bit = 1 << square
        pieces ^= bit
        # What board.attacks_mask(square) computes, without the call and lookup.
        if bit & board.knights:
            targets = chess.BB_KNIGHT_ATTACKS[square]
        elif bit & board.kings:
            targets = chess.BB_KING_ATTACKS[square]
        else:
            targets = 0
            if bit & diagonal:
                targets = chess.BB_DIAG_ATTACKS[square][chess.BB_DIAG_MASKS[square] & occupied]
            if bit & straight:
                targets |= (
                    chess.BB_RANK_ATTACKS[square][chess.BB_RANK_MASKS[square] & occupied]
                    | chess.BB_FILE_ATTACKS[square][chess.BB_FILE_MASKS[square] & occupied]
                )
        targets &= not_us
        if targets:
            count = targets.bit_count()
            groups.append((count, _PIECE, square, targets))
            total += count
    pawns = us & board.pawns
    empty = chess.BB_ALL & ~board.occupied
    if white:
        single = (pawns << 8) & empty
        shifted = (
            (8, single),
            (16, ((single & chess.BB_RANK_3) << 8) & empty),
            (7, ((pawns & _NOT_FILE_A) << 7) & them),
            (9, ((pawns & _NOT_FILE_H) << 9) & them),
        )
        last_rank, back_rank = chess.BB_RANK_8, chess.BB_RANK_1
    else:
        single = (pawns >> 8) & empty
        shifted = (
            (-8, single),
            (-16, ((single & chess.BB_RANK_6) >> 8) & empty),
            (-9, ((pawns & _NOT_FILE_A) >> 9) & them),
            (-7, ((pawns & _NOT_FILE_H) >> 7) & them),
        )
        last_rank, back_rank = chess.BB_RANK_1, chess.BB_RANK_8
    for delta, targets in shifted:
        if not targets:
            continue
        plain = targets & ~last_rank
        if plain:
            count = plain.bit_count()
            groups.append((count, _PAWN, delta, plain))
            total += count
        promoting = targets & last_rank
        if promoting:
            count = 4 * promoting.bit_count()
            groups.append((count, _PROMOTION, delta, promoting))
            total += count
    special: list[chess.Move] = []
    if board.castling_rights & back_rank and (
        board.chess960 or _castling_path_open(occupied, back_rank)
    ):
        special.extend(board.generate_castling_moves())
    if board.ep_square is not None:
        special.extend(board.generate_pseudo_legal_ep())
    if special:
        groups.append((len(special), _LISTED, 0, special))
        total += len(special)
    return groups, total


def _castling_path_open(occupied: int, back_rank: int) -> bool:
    """Whether f+g or b+c+d of the back rank are empty (standard chess castling
    needs one of them; a cheap filter before python-chess's generator)."""
    return not occupied & back_rank & _KINGSIDE_PATH or not occupied & back_rank & _QUEENSIDE_PATH


_KINGSIDE_PATH = chess.BB_FILE_F | chess.BB_FILE_G
_QUEENSIDE_PATH = chess.BB_FILE_B | chess.BB_FILE_C | chess.BB_FILE_D


def nth_move(groups: list[MoveGroup], index: int) -> chess.Move:
    """Move number ``index`` (0-based) of the groups, in their order."""
    for count, kind, square, targets in groups:
        if index >= count:
            index -= count
            continue
        if kind == _LISTED:
            assert isinstance(targets, list)
            return targets[index]
        assert isinstance(targets, int)
        promotion = None
        if kind == _PROMOTION:
            promotion = _PROMOTION_PIECES[index & 3]
            index >>= 2
        for _ in range(index):
            targets &= targets - 1
        to_square = (targets & -targets).bit_length() - 1
        if kind == _PIECE:
            return chess.Move(square, to_square)
        return chess.Move(to_square - square, to_square, promotion)
    raise IndexError("move index beyond the groups")


def no_move_value(board: chess.Board) -> float:
    """Result from White's view when the side to move has no legal move."""
    if not board.is_check():
        return 0.0
    return -1.0 if board.turn == chess.WHITE else 1.0
