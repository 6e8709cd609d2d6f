"""Tests for the native input planes and policy indices (models._native).

The Python modules ``models.encoding`` and ``models.policy`` are the
reference: the native planes must be byte-identical and the native policy
indices identical, on hand positions (with a few facts checked by hand) and
on every position of seeded random games (``tests/helpers/native_random_games.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import chess
import numpy as np
import pytest

from models import _native
from models.encoding import (
    NUM_PLANES,
    board_meta,
    board_row,
    encode_board,
)
from models.policy import AZ4672, LC0_1858, PolicyMap
from tests.helpers.boards import OUR, REP1, REP2, THEIR
from tests.helpers.native_random_games import random_games, reference_line_planes

START = chess.STARTING_FEN
ENCODINGS = {"az4672": AZ4672, "lc0_1858": LC0_1858}


def python_board(fen: str, moves: Sequence[str]) -> chess.Board:
    """A python-chess board of the line: the FEN, then the UCI moves."""
    board = chess.Board(fen)
    for move in moves:
        board.push_uci(move)
    return board


def view(square: str, black_view: bool = False) -> tuple[int, int]:
    """(rank, file) of a square in the planes (ranks mirrored for black to move)."""
    index = chess.parse_square(square) ^ (56 if black_view else 0)
    return index // 8, index % 8


# ---------------------------------------------------------------------------
# Golden positions: planes
# ---------------------------------------------------------------------------

GOLDEN_LINES = {
    "start": (START, []),
    "e4, ep square without capture": (START, ["e2e4"]),
    "ep legal, white captures": (START, ["e2e4", "a7a6", "e4e5", "d7d5"]),
    "ep legal, then captured": (START, ["e2e4", "a7a6", "e4e5", "d7d5", "e5d6"]),
    "ep legal, black captures": (START, ["a2a3", "d7d5", "a3a4", "d5d4", "e2e4"]),
    "ep pinned": ("8/8/8/K2pP2r/8/8/8/4k3 w - d6 0 1", []),
    "ep no pawn": ("rnbqkbnr/ppp1pppp/8/3p4/8/8/PPPPPPPP/RNBQKBNR w KQkq d6 0 2", []),
    "castling partly lost": (START, ["h2h4", "a7a5", "h1h3", "a8a6", "e2e4", "e7e5", "e1e2"]),
    "castling fen Kq": ("r3k2r/8/8/8/8/8/8/R3K2R w Kq - 0 1", []),
    "castling fen, black": ("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", ["e8c8", "e1g1"]),
    "black to move": (
        "r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/3P1N2/PPP2PPP/RNBQK2R b KQkq - 3 5",
        [],
    ),
    "twofold and threefold": (START, ["g1f3", "g8f6", "f3g1", "f6g8"] * 2 + ["g1f3"]),
    "promotion": ("8/P6k/8/8/8/8/6K1/8 w - - 0 1", ["a7a8q", "h7g7", "a8b8"]),
    "underpromotion capture": ("1r5k/P7/8/8/8/8/6K1/8 w - - 0 1", ["a7b8n"]),
    "counts capped": ("8/8/8/4k3/8/8/8/4K3 w - - 300 200", ["e1e2"]),
    "long line": (START, ["g1f3", "g8f6", "f3g1", "f6g8"] * 3 + ["e2e4", "e7e5", "d2d4"]),
}


@pytest.mark.parametrize("name", list(GOLDEN_LINES))
def test_golden_lines_match_python(name: str) -> None:
    fen, moves = GOLDEN_LINES[name]
    planes = _native.encode_fen_line(fen, moves)
    assert planes.shape == (NUM_PLANES, 8, 8) and planes.dtype == np.uint8
    board = python_board(fen, moves)
    np.testing.assert_array_equal(planes, encode_board(board))
    np.testing.assert_array_equal(_native.encode_line_all(fen, moves)[-1], planes)
    current = board.fen()
    np.testing.assert_array_equal(_native.board_meta(current), board_meta(board))
    for repetitions in (0, 1, 2, 5):
        np.testing.assert_array_equal(
            _native.board_row(current, repetitions),
            np.array(board_row(board, repetitions), dtype=np.uint64),
        )


def test_start_position_by_hand() -> None:
    planes = _native.encode_fen_line(START, [])
    assert planes[OUR["K"], 0, 4] == 1 and planes[THEIR["K"], 7, 4] == 1
    assert planes[OUR["P"], 1].all() and planes[OUR["P"]].sum() == 8
    assert planes[THEIR["P"], 6].all() and planes[THEIR["P"]].sum() == 8
    assert planes[14:112].sum() == 0
    assert planes[112:, 3, 3].tolist() == [0, 0, 1, 1, 1, 1, 0]


def test_en_passant_pawn_moves_to_last_rank() -> None:
    fen, moves = GOLDEN_LINES["ep legal, white captures"]
    planes = _native.encode_fen_line(fen, moves)
    assert planes[THEIR["P"]][view("d8")] == 1 and planes[THEIR["P"]][view("d5")] == 0
    # Black to capture: the white e-pawn is drawn on e1, seen from black.
    fen, moves = GOLDEN_LINES["ep legal, black captures"]
    planes = _native.encode_fen_line(fen, moves)
    assert planes[THEIR["P"]][view("e1", True)] == 1 and planes[THEIR["P"]][view("e4", True)] == 0
    # No legal capture (pinned, or no pawn next to it): nothing moves.
    for name in ("ep pinned", "ep no pawn"):
        pawns = _native.encode_fen_line(*GOLDEN_LINES[name])[THEIR["P"]]
        assert pawns[view("d5")] == 1 and pawns[view("d8")] == 0
    pawns = _native.encode_fen_line(*GOLDEN_LINES["e4, ep square without capture"])[THEIR["P"]]
    assert pawns[view("e4", True)] == 1 and pawns[view("e1", True)] == 0


def test_black_to_move_and_meta_by_hand() -> None:
    fen, _ = GOLDEN_LINES["black to move"]
    planes = _native.encode_fen_line(fen, [])
    assert planes[OUR["K"], 0, 4] == 1 and planes[OUR["Q"], 0, 3] == 1
    assert planes[OUR["B"]][view("c5", True)] == 1
    assert planes[112:, 0, 0].tolist() == [1, 9, 1, 1, 1, 1, 3]
    kq_rights = _native.board_meta("r3k2r/8/8/8/8/8/8/R3K2R w Kq - 0 1")
    assert kq_rights.tolist() == [0, 0, 1, 0, 0, 1, 0]
    fen, moves = GOLDEN_LINES["castling partly lost"]
    # After h1h3 (white loses O-O), a8a6 (black loses O-O-O), Ke2: black to move.
    assert _native.board_meta(python_board(fen, moves).fen())[2:6].tolist() == [1, 0, 0, 0]
    assert _native.board_meta("8/8/8/4k3/8/8/8/4K3 w - - 300 200")[[1, 6]].tolist() == [255, 255]


def test_repetition_planes_by_hand() -> None:
    fen, moves = GOLDEN_LINES["twofold and threefold"]
    all_planes = _native.encode_line_all(fen, moves)
    after_8 = all_planes[8]  # start position for the third time
    assert after_8[REP1].all() and after_8[REP2].all()
    assert after_8[14 * 4 + REP1].all() and not after_8[14 * 4 + REP2].any()
    assert not all_planes[0][REP1].any()
    assert all_planes[4][REP1].all() and not all_planes[4][REP2].any()


# ---------------------------------------------------------------------------
# Golden positions: policy indices
# ---------------------------------------------------------------------------

GOLDEN_POLICY = [
    # (fen, move, az4672 index, lc0_1858 index or None = python's value)
    (START, "e2e4", 1 * 64 + 12, None),  # north, distance 2
    (START, "g1f3", 63 * 64 + 6, None),  # knight jump k = 8
    (python_board(START, ["e2e4"]).fen(), "e7e5", 1 * 64 + 12, None),  # mirrored
    ("8/P6k/8/8/8/8/6K1/8 w - - 0 1", "a7a8q", 48, 1792),
    ("8/P6k/8/8/8/8/6K1/8 w - - 0 1", "a7a8r", 65 * 64 + 48, 1793),
    ("8/P6k/8/8/8/8/6K1/8 w - - 0 1", "a7a8b", 68 * 64 + 48, 1794),
    ("8/P6k/8/8/8/8/6K1/8 w - - 0 1", "a7a8n", 71 * 64 + 48, None),
    ("1r5k/P7/8/8/8/8/6K1/8 w - - 0 1", "a7b8n", 72 * 64 + 48, None),
    ("8/7k/8/8/8/8/p5K1/8 b - - 0 1", "a2a1q", 48, 1792),
    ("8/7k/8/8/8/8/p5K1/8 b - - 0 1", "a2a1n", 71 * 64 + 48, None),
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1g1", 15 * 64 + 4, None),
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1c1", 43 * 64 + 4, None),
    ("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", "e8c8", 43 * 64 + 4, None),
    ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1f1", 2 * 7 * 64 + 4, None),
    ("r3k2r/8/8/8/8/8/8/R4K1R w kq - 0 1", "f1g1", 2 * 7 * 64 + 5, None),
]


@pytest.mark.parametrize(("fen", "move", "az", "lc0"), GOLDEN_POLICY)
def test_golden_policy_indices(fen: str, move: str, az: int, lc0: int | None) -> None:
    board = chess.Board(fen)
    chess_move = chess.Move.from_uci(move)
    assert _native.policy_indices(fen, [move], "az4672").tolist() == [az]
    assert AZ4672.indices(board, [chess_move]).tolist() == [az]
    expected_lc0 = LC0_1858.indices(board, [chess_move]).tolist()
    assert _native.policy_indices(fen, [move], "lc0_1858").tolist() == expected_lc0
    if lc0 is not None:
        assert expected_lc0 == [lc0]


def test_lc0_castling_is_king_to_rook_and_knight_promotion_is_plain() -> None:
    fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1"
    board = chess.Board(fen)
    lc0 = LC0_1858.indices(board, [chess.Move.from_uci(m) for m in ("e1h1", "e1a1")]).tolist()
    assert _native.policy_indices(fen, ["e1g1", "e1c1"], "lc0_1858").tolist() == lc0
    promo = chess.Board("8/P6k/8/8/8/8/6K1/8 w - - 0 1")
    plain = LC0_1858.indices(promo, [chess.Move.from_uci("a7a8")]).tolist()
    assert _native.policy_indices(promo.fen(), ["a7a8n"], "lc0_1858").tolist() == plain
    assert _native.policy_size("az4672") == 4672 and _native.policy_size("lc0_1858") == 1858


TRICKY_FENS = [
    "5r1k/5p2/3r1n2/B4b1p/6QP/7K/3N4/6q1 w - - 2 34",  # queen pinned on a diagonal
    "8/8/8/K2pP2r/8/8/8/4k3 w - d6 0 1",  # en passant pinned along the rank
    "r3k2r/pP4pp/8/8/8/8/Pp4PP/R3K2R w KQkq - 0 1",  # castling, promotions by capture
    "r3k2r/pP4pp/8/8/8/8/Pp4PP/R3K2R b KQkq - 0 1",
    "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",
]


@pytest.mark.parametrize("fen", TRICKY_FENS)
@pytest.mark.parametrize("encoding", list(ENCODINGS))
def test_all_legal_moves_of_tricky_positions(fen: str, encoding: str) -> None:
    board = chess.Board(fen)
    indices, offsets, ucis = _native.line_policy_indices(fen, [], encoding)
    assert offsets.tolist() == [0, len(ucis)] and len(indices) == len(ucis)
    legal = [chess.Move.from_uci(uci) for uci in ucis]
    assert set(legal) == set(board.legal_moves)
    np.testing.assert_array_equal(indices, ENCODINGS[encoding].indices(board, legal))
    np.testing.assert_array_equal(_native.policy_indices(fen, ucis, encoding), indices)
    assert len(set(indices.tolist())) == len(indices)  # distinct moves, distinct indices


# ---------------------------------------------------------------------------
# Random games: every position against the Python reference
# ---------------------------------------------------------------------------


def check_line_policies(moves: Sequence[str], encoding: str, policy_map: PolicyMap) -> int:
    """Compares the native indices of all legal moves of every position; returns positions."""
    indices, offsets, ucis = _native.line_policy_indices(START, moves, encoding)
    assert len(offsets) == len(moves) + 2 and offsets[-1] == len(indices) == len(ucis)
    board = chess.Board()
    for ply in range(len(moves) + 1):
        if ply:
            board.push_uci(moves[ply - 1])
        start, end = offsets[ply], offsets[ply + 1]
        legal = [chess.Move.from_uci(uci) for uci in ucis[start:end]]
        assert set(legal) == set(board.legal_moves), (board.fen(), encoding)
        expected = policy_map.indices(board, legal)
        np.testing.assert_array_equal(indices[start:end], expected, err_msg=board.fen())
    return len(moves) + 1


def check_games(count: int, seed: int, policy_every: int) -> tuple[int, int]:
    """Planes of every position of ``count`` games; policies of every
    ``policy_every``-th game.  Returns (plane positions, policy positions)."""
    plane_positions = policy_positions = 0
    for number, moves in enumerate(random_games(count, seed=seed)):
        native = _native.encode_line_all(START, moves)
        reference = reference_line_planes(moves)
        if not np.array_equal(native, reference):
            ply = int(np.flatnonzero((native != reference).reshape(len(native), -1).any(1))[0])
            pytest.fail(f"seed {seed} game {number}, ply {ply}: planes differ ({moves[:ply]})")
        plane_positions += len(native)
        if number % policy_every == 0:
            for encoding, policy_map in ENCODINGS.items():
                policy_positions += check_line_policies(moves, encoding, policy_map)
    return plane_positions, policy_positions


def test_random_games_match_python() -> None:
    """The first 100 games of the board tests' fast set (seed 1), all checks."""
    planes, policies = check_games(100, seed=1, policy_every=1)
    assert planes > 5_000 and policies > 2 * 5_000


@pytest.mark.slow
def test_random_games_match_python_many() -> None:
    """The 5,000 games of the board tests' slow set (seed 2): planes on every
    position, policy indices (both encodings, every legal move) on every
    eighth game, since the python-chess reference for them is the slow part."""
    planes, policies = check_games(5_000, seed=2, policy_every=8)
    assert planes > 250_000 and policies > 2 * 30_000


def test_encode_fen_line_equals_last_of_line() -> None:
    moves = next(iter(random_games(1, seed=3)))
    all_planes = _native.encode_line_all(START, moves)
    assert all_planes.shape == (len(moves) + 1, NUM_PLANES, 8, 8)
    for ply in (0, 1, len(moves) // 2, len(moves)):
        np.testing.assert_array_equal(_native.encode_fen_line(START, moves[:ply]), all_planes[ply])


# ---------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda fen: _native.encode_fen_line(fen, []),
        lambda fen: _native.encode_line_all(fen, ["e2e4"]),
        lambda fen: _native.policy_indices(fen, [], "az4672"),
        lambda fen: _native.line_policy_indices(fen, [], "az4672"),
        lambda fen: _native.board_row(fen, 0),
        lambda fen: _native.board_meta(fen),
    ],
)
@pytest.mark.parametrize(
    "fen",
    [
        "not a fen",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
        "8/8/8/8/8/8/8/8 w - - 0 1",  # parses, but no kings
        # Rights without rooks: python-chess's is_valid() fails (bad castling
        # rights), and the native entry points accept valid positions only.
        "4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1",
    ],
)
def test_invalid_fen_raises_naming_it(call: Callable[[str], object], fen: str) -> None:
    with pytest.raises(_native.ChessError, match=re.escape(fen)):
        call(fen)


@pytest.mark.parametrize(
    "call",
    [
        lambda moves: _native.encode_fen_line(START, moves),
        lambda moves: _native.encode_line_all(START, moves),
        lambda moves: _native.line_policy_indices(START, moves, "lc0_1858"),
    ],
)
@pytest.mark.parametrize("bad", ["e2e5", "e7e5", "zz99", "e2e4q", "e1g1"])
def test_illegal_move_in_line_raises_naming_it(
    call: Callable[[list[str]], object], bad: str
) -> None:
    with pytest.raises(_native.ChessError, match=bad):
        call(["d2d4", "d7d5", bad])


@pytest.mark.parametrize("bad", ["e2e5", "e7e5", "e2", "a7a8q", ""])
def test_illegal_move_for_policy_raises_naming_it(bad: str) -> None:
    with pytest.raises(_native.ChessError, match=f"'{bad}'"):
        _native.policy_indices(START, ["e2e4", bad], "az4672")


@pytest.mark.parametrize("name", ["az", "AZ4672", "lc0", ""])
def test_unknown_encoding_raises_naming_it(name: str) -> None:
    for call in (
        lambda: _native.policy_indices(START, ["e2e4"], name),
        lambda: _native.line_policy_indices(START, [], name),
        lambda: _native.policy_size(name),
    ):
        with pytest.raises(_native.ChessError, match=f"'{name}'"):
            call()


def test_chess_error_is_a_value_error_and_negative_repetitions() -> None:
    assert issubclass(_native.ChessError, ValueError)
    with pytest.raises(_native.ChessError, match="-1"):
        _native.board_row(START, -1)
