"""models._native.Board.gives_check against python-chess's Board.gives_check.

The native test decides a check without playing the move (the MCTS-solver
calls it for every move of every expanded node), so it has its own rules for
the rare cases: the promoted piece, castling (the rook checks), en passant
(the captured pawn's square opens a line too) and discovered checks.
python-chess plays the move and asks is_check(): the two must agree on every
legal move of random legal positions and of golden positions for each rule.
"""

from __future__ import annotations

import chess
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models import _native
from tests.helpers.native_random_games import random_games


def assert_same_checks(board: chess.Board) -> int:
    """Compares gives_check on every legal move of ``board``; returns how many gave check."""
    native = _native.Board(board.fen())
    checks = 0
    for move in board.legal_moves:
        expected = board.gives_check(move)
        assert native.gives_check(move.uci()) == expected, f"{move.uci()} in {board.fen()}"
        checks += expected
    return checks


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=0, max_value=2**16), max_size=160))
def test_matches_python_chess_along_random_playouts(choices: list[int]) -> None:
    """Uniform random playouts from the start (each drawn integer picks the
    next move); every position on the way is compared."""
    board = chess.Board()
    for choice in choices:
        assert_same_checks(board)
        legal = list(board.legal_moves)
        if not legal:
            break
        board.push(legal[choice % len(legal)])
    assert_same_checks(board)


def test_matches_python_chess_in_biased_random_games() -> None:
    """The biased games of tests/helpers/native_random_games.py reach promotions,
    castling and en passant often; every position of 60 of them is compared."""
    positions = checks = 0
    for moves in random_games(60, seed=11):
        board = chess.Board()
        for uci in moves:
            checks += assert_same_checks(board)
            positions += 1
            board.push_uci(uci)
        checks += assert_same_checks(board)
    assert positions > 5_000 and checks > 500


# name: (FEN, moves that give check, moves that do not); every other legal
# move is compared with python-chess as well.
GOLDEN = {
    # en passant: both pawns leave the fifth rank, the rook sees the king
    "en-passant-opens-the-rank": ("8/8/8/k1pP3R/8/8/8/4K3 w - c6 0 1", ["d5c6"], ["d5d6"]),
    # en passant: only the captured pawn's square (d5) was blocking the bishop
    "en-passant-captured-square": ("8/5k2/8/3pP3/8/1B6/8/4K3 w - d6 0 1", ["e5d6"], ["e1d1"]),
    # black en passant: the captured pawn on d4 was blocking the bishop's diagonal
    "black-en-passant": ("4k3/b7/8/8/3Pp3/8/8/6K1 b - d3 0 1", ["e4d3"], ["e4e3"]),
    "castling-king-side": ("5k2/8/8/8/8/8/8/4K2R w K - 0 1", ["e1g1"], ["e1f2"]),
    "castling-queen-side": ("3k4/8/8/8/8/8/8/R3K3 w Q - 0 1", ["e1c1"], ["e1d2"]),
    # the rook on d1 checks through e1, the square the king left; a king move
    # off the first rank uncovers the rook on a1, one along it does not
    "castling-through-the-king-square": (
        "8/8/8/8/8/8/8/R3K2k w Q - 0 1",
        ["e1c1", "e1d2", "e1f2"],
        ["e1d1", "e1f1"],
    ),
    # a knight on d8 attacks f7, a queen there does not
    "under-promotion-knight": ("8/3P1k2/8/8/8/8/8/4K3 w - - 0 1", ["d7d8n"], ["d7d8q", "d7d8b"]),
    # capturing promotion: a queen or rook on d8 checks along the rank
    "capture-promotion": ("3r2k1/4P3/8/8/8/8/8/4K3 w - - 0 1", ["e7d8q", "e7d8r"], ["e7d8n"]),
    # the pawn leaves the a-file (capture): discovered check by the queen
    "discovered-pawn-capture": ("k7/8/8/8/1p6/P7/8/Q3K3 w - - 0 1", ["a3b4"], ["a3a4"]),
    # every knight move uncovers the rook
    "discovered-knight": ("k7/8/8/8/N7/8/8/R3K3 w - - 0 1", ["a4b6", "a4c5", "a4b2"], []),
    # the bishop leaves the rook's file: discovered check, double check from c6
    "discovered-bishop": ("4k3/8/8/8/4B3/8/8/K3R3 w - - 0 1", ["e4d5", "e4c6", "e4f5"], ["e1f1"]),
    # black: the knight uncovers the bishop's diagonal; the bishop moving along it does not
    "black-discovered": ("4k3/8/8/4b3/8/2n5/8/K7 b - - 0 1", ["c3d5", "c3a2"], ["e5f6"]),
}


@pytest.mark.parametrize(("fen", "checking", "quiet"), GOLDEN.values(), ids=GOLDEN.keys())
def test_golden_positions(fen: str, checking: list[str], quiet: list[str]) -> None:
    board = chess.Board(fen)
    assert board.is_valid(), fen
    native = _native.Board(fen)
    for uci in checking:
        assert board.gives_check(chess.Move.from_uci(uci)), (uci, fen)  # the golden case itself
        assert native.gives_check(uci), (uci, fen)
    for uci in quiet:
        assert not board.gives_check(chess.Move.from_uci(uci)), (uci, fen)
        assert not native.gives_check(uci), (uci, fen)
    assert_same_checks(board)


def test_illegal_or_malformed_moves_raise() -> None:
    board = _native.Board()
    with pytest.raises(_native.ChessError, match="e2e5"):
        board.gives_check("e2e5")
    with pytest.raises(ValueError, match="zz"):
        board.gives_check("zz")
