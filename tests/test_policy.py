"""Tests for models.policy: the az4672 and lc0_1858 move <-> index maps."""

from __future__ import annotations


import chess
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models import policy
from models.policy import (
    AZ4672,
    LC0_1858,
    IllegalMoveError,
    InvalidPolicyIndexError,
    PolicyMap,
    UnknownEncodingError,
    UnsupportedBoardError,
    get_policy_map,
    index_to_move,
    legal_mask,
    move_to_index,
)
from tests.helpers.boards import random_board

MAPS = [AZ4672, LC0_1858]
MAP_IDS = [m.name for m in MAPS]

START_FENS = [
    chess.STARTING_FEN,
    # castling available for both sides
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1",
    "r3k2r/pppq1ppp/2n2n2/4p3/2B1P3/2N2N2/PPPQ1PPP/R3K2R b KQkq - 0 1",
    # pawns on the 7th rank of both colours, pieces to capture on the 8th
    "1n2k1n1/P1P2P1P/8/8/8/8/p1p2p1p/1N2K1N1 w - - 0 1",
    "1n2k1n1/P1P2P1P/8/8/8/8/p1p2p1p/1N2K1N1 b - - 0 1",
    "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1",
]


boards = st.builds(
    random_board,
    seed=st.integers(0, 2**32 - 1),
    # few plies keep the castling / promotion set-ups of START_FENS alive
    plies=st.one_of(st.integers(0, 4), st.integers(0, 120)),
    start=st.sampled_from(START_FENS),
)


def mirror_move(move: chess.Move) -> chess.Move:
    """The colour-swapped, rank-flipped counterpart of ``move``."""
    return chess.Move(
        chess.square_mirror(move.from_square), chess.square_mirror(move.to_square), move.promotion
    )


def play(fen: str, uci: str) -> tuple[chess.Board, chess.Move]:
    """Board from ``fen`` and the move ``uci``, asserted legal."""
    board = chess.Board(fen)
    move = chess.Move.from_uci(uci)
    assert board.is_legal(move)
    return board, move


# ---------------------------------------------------------------------------
# az4672 worked examples and layout
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fen", "uci", "value"),
    [
        ("8/8/8/8/3Q4/8/8/4K2k w - - 0 1", "d4d2", 30),  # queen S distance 2
        ("8/8/8/8/8/5N2/8/K6k w - - 0 1", "f3e1", 61),  # knight (-1 file, -2 ranks)
        ("2r5/1P6/8/8/8/8/8/K6k w - - 0 1", "b7c8b", 70),  # bishop under-promotion, right
        ("4k3/8/8/3q4/8/8/8/K7 b - - 0 1", "d5d7", 30),  # black mirrored: S in its view
        ("4k3/8/8/8/8/8/1p6/K7 b - - 0 1", "b2b1n", 72),  # black knight under-promotion
        ("7k/P7/8/8/8/8/8/K7 w - - 0 1", "a7a8q", 1),  # queen promotion = queen N 1
    ],
)
def test_az_worked_examples(fen: str, uci: str, value: int) -> None:
    board, move = play(fen, uci)
    index = move_to_index(board, move)
    from_view = move.from_square ^ (0 if board.turn else 56)
    assert index // 64 + 1 == value
    assert index % 64 == from_view
    assert index_to_move(board, index) == move


def test_az_castling_is_king_two_square_move() -> None:
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    short = move_to_index(board, chess.Move.from_uci("e1g1"))
    long = move_to_index(board, chess.Move.from_uci("e1c1"))
    assert (short // 64 + 1, short % 64) == (7 * 2 + 2, chess.E1)  # east, 2
    assert (long // 64 + 1, long % 64) == (7 * 6 + 2, chess.E1)  # west, 2
    assert move_to_index(board, chess.Move.from_uci("e1h1")) == short  # king-to-rook input
    assert index_to_move(board, short) == chess.Move.from_uci("e1g1")
    king_to_rook_slot = (7 * 2 + 3 - 1) * 64 + chess.E1  # east, 3
    with pytest.raises(InvalidPolicyIndexError):
        index_to_move(board, king_to_rook_slot)


def test_az_has_1858_geometric_slots() -> None:
    assert AZ4672.size == 4672
    assert int((AZ4672.to_view >= 0).sum()) == 1858
    names = [n for n in AZ4672.view_uci if n]
    assert len(names) == len(set(names)) == 1858
    np.testing.assert_array_equal(AZ4672.gather_index, np.arange(4672))


# ---------------------------------------------------------------------------
# lc0_1858 layout
# ---------------------------------------------------------------------------


def test_lc0_table_order() -> None:
    names = LC0_1858.view_uci
    assert LC0_1858.size == len(names) == len(set(names)) == 1858
    assert names[:12] == (
        "a1b1", "a1c1", "a1d1", "a1e1", "a1f1", "a1g1", "a1h1",
        "a1a2", "a1b2", "a1c2", "a1a3", "a1b3",
    )
    assert all(len(n) == 4 for n in names[:1792])
    assert names[1792:1801] == (
        "a7a8q", "a7a8r", "a7a8b", "a7b8q", "a7b8r", "a7b8b", "b7a8q", "b7a8r", "b7a8b",
    )
    assert names[-3:] == ("h7h8q", "h7h8r", "h7h8b")
    assert all(len(n) == 5 for n in names[1792:])


def test_lc0_castling_is_king_to_rook() -> None:
    names = LC0_1858.view_uci
    for fen, short, long in [
        ("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1g1", "e1c1"),
        ("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", "e8g8", "e8c8"),
    ]:
        board = chess.Board(fen)
        for uci, view in [(short, "e1h1"), (long, "e1a1")]:
            move = chess.Move.from_uci(uci)
            index = LC0_1858.move_to_index(board, move)
            assert names[index] == view
            assert LC0_1858.index_to_move(board, index) == move
        with pytest.raises(InvalidPolicyIndexError):  # the plain e1g1 pair is not castling
            LC0_1858.index_to_move(board, names.index("e1g1"))


def test_lc0_rook_move_e1g1_is_plain_pair() -> None:
    board, move = play("4k3/8/8/8/8/8/8/K3R3 w - - 0 1", "e1g1")
    index = LC0_1858.move_to_index(board, move)
    assert LC0_1858.view_uci[index] == "e1g1"
    assert LC0_1858.index_to_move(board, index) == move


@pytest.mark.parametrize(
    ("fen", "uci", "view"),
    [
        ("1r5k/P7/8/8/8/8/8/7K w - - 0 1", "a7a8n", "a7a8"),
        ("1r5k/P7/8/8/8/8/8/7K w - - 0 1", "a7b8n", "a7b8"),
        ("1r5k/P7/8/8/8/8/8/7K w - - 0 1", "a7a8q", "a7a8q"),
        ("1r5k/P7/8/8/8/8/8/7K w - - 0 1", "a7b8r", "a7b8r"),
        ("7k/8/8/8/8/8/6p1/5R1K b - - 0 1", "g2f1n", "g7f8"),
        ("7k/8/8/8/8/8/6p1/5R1K b - - 0 1", "g2f1b", "g7f8b"),
    ],
)
def test_lc0_promotions(fen: str, uci: str, view: str) -> None:
    board, move = play(fen, uci)
    index = LC0_1858.move_to_index(board, move)
    assert LC0_1858.view_uci[index] == view
    assert LC0_1858.index_to_move(board, index) == move


def test_lc0_gather_index() -> None:
    gather = LC0_1858.gather_index
    assert gather.shape == (1858,) and gather.dtype == np.int64
    assert len(np.unique(gather)) == 1858
    assert gather.min() >= 0 and gather.max() < 4672
    names = LC0_1858.view_uci
    a7 = chess.A7
    assert gather[names.index("a7a8")] == (64 + 3 * 2 + 2 - 1) * 64 + a7  # knight, straight
    assert gather[names.index("a7b8")] == (64 + 3 * 2 + 3 - 1) * 64 + a7  # knight, right
    assert gather[names.index("a7a8q")] == 0 * 64 + a7  # queen N 1
    assert gather[names.index("a7b8r")] == (64 + 3 * 0 + 3 - 1) * 64 + a7
    assert gather[names.index("b7a8b")] == (64 + 3 * 1 + 1 - 1) * 64 + chess.B7
    assert gather[names.index("d4d2")] == (30 - 1) * 64 + chess.D4
    assert gather[names.index("a6a8")] == (1 - 1 + 1) * 64 + chess.A6  # queen N 2


# ---------------------------------------------------------------------------
# Properties over random positions, both encodings
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("pmap", MAPS, ids=MAP_IDS)
@settings(max_examples=100, deadline=None)
@given(board=boards)
def test_bijection_on_legal_moves(pmap: PolicyMap, board: chess.Board) -> None:
    moves = list(board.legal_moves)
    per_move = [pmap.move_to_index(board, m) for m in moves]
    assert len(set(per_move)) == len(moves)
    assert all(0 <= i < pmap.size for i in per_move)
    for move, index in zip(moves, per_move):
        assert pmap.index_to_move(board, index) == move
    fast = pmap.indices(board, moves)
    assert fast.dtype == np.int64
    np.testing.assert_array_equal(fast, np.asarray(per_move, dtype=np.int64))
    mask = pmap.legal_mask(board)
    assert mask.shape == (pmap.size,) and mask.dtype == bool
    assert int(mask.sum()) == board.legal_moves.count()
    assert set(np.flatnonzero(mask).tolist()) == set(per_move)


@pytest.mark.parametrize("pmap", MAPS, ids=MAP_IDS)
@settings(max_examples=50, deadline=None)
@given(board=boards)
def test_mirror_gives_same_indices(pmap: PolicyMap, board: chess.Board) -> None:
    moves = list(board.legal_moves)
    mirrored = board.mirror()
    original = pmap.indices(board, moves)
    np.testing.assert_array_equal(
        pmap.indices(mirrored, [mirror_move(m) for m in moves]), original
    )
    np.testing.assert_array_equal(pmap.legal_mask(mirrored), pmap.legal_mask(board))


@pytest.mark.parametrize("pmap", MAPS, ids=MAP_IDS)
@settings(max_examples=30, deadline=None)
@given(board=boards, index=st.integers(0, 4671))
def test_index_to_move_accepts_exactly_the_mask(
    pmap: PolicyMap, board: chess.Board, index: int
) -> None:
    index %= pmap.size
    if pmap.legal_mask(board)[index]:
        assert pmap.move_to_index(board, pmap.index_to_move(board, index)) == index
    else:
        with pytest.raises(InvalidPolicyIndexError):
            pmap.index_to_move(board, index)


# ---------------------------------------------------------------------------
# API details and errors
# ---------------------------------------------------------------------------


def test_get_policy_map_and_module_functions() -> None:
    assert get_policy_map("az4672") is AZ4672
    assert get_policy_map("lc0_1858") is LC0_1858
    board = chess.Board()
    assert legal_mask(board).sum() == 20
    np.testing.assert_array_equal(legal_mask(board), AZ4672.legal_mask(board))
    assert policy.indices(board, []).shape == (0,)


def test_unknown_encoding_lists_valid_names() -> None:
    with pytest.raises(UnknownEncodingError) as info:
        get_policy_map("az73")
    assert isinstance(info.value, ValueError)
    for text in ("az73", "az4672", "lc0_1858"):
        assert text in str(info.value)


@pytest.mark.parametrize("pmap", MAPS, ids=MAP_IDS)
@pytest.mark.parametrize("index", [-1, 4672, 10**6])
def test_index_out_of_range(pmap: PolicyMap, index: int) -> None:
    board = chess.Board()
    if index == 4672:
        index = pmap.size
    with pytest.raises(InvalidPolicyIndexError) as info:
        pmap.index_to_move(board, index)
    assert isinstance(info.value, ValueError)
    assert str(index) in str(info.value) and board.fen() in str(info.value)


@pytest.mark.parametrize("pmap", MAPS, ids=MAP_IDS)
def test_index_of_illegal_move(pmap: PolicyMap) -> None:
    board = chess.Board()
    blocked = 0 * 64 + chess.A1 if pmap is AZ4672 else pmap.view_uci.index("a1a2")
    with pytest.raises(InvalidPolicyIndexError) as info:
        pmap.index_to_move(board, blocked)
    assert str(blocked) in str(info.value) and board.fen() in str(info.value)


@pytest.mark.parametrize("pmap", MAPS, ids=MAP_IDS)
def test_unused_az_slot_and_illegal_moves(pmap: PolicyMap) -> None:
    board = chess.Board()
    if pmap is AZ4672:  # queen move south from a1 leaves the board
        with pytest.raises(InvalidPolicyIndexError):
            pmap.index_to_move(board, (7 * 4 + 1 - 1) * 64 + chess.A1)
    for uci in ("e2e5", "0000", "e2e4q"):
        with pytest.raises(IllegalMoveError) as info:
            pmap.move_to_index(board, chess.Move.from_uci(uci))
        assert uci in str(info.value) and board.fen() in str(info.value)
    with pytest.raises(IllegalMoveError):
        pmap.indices(board, [chess.Move.from_uci("a1c4")])


@pytest.mark.parametrize("pmap", MAPS, ids=MAP_IDS)
def test_chess960_rejected(pmap: PolicyMap) -> None:
    board = chess.Board(chess960=True)
    with pytest.raises(UnsupportedBoardError):
        pmap.legal_mask(board)


def test_tables_are_read_only() -> None:
    for pmap in MAPS:
        for array in (pmap.from_view, pmap.to_view, pmap.promotion, pmap.gather_index):
            with pytest.raises(ValueError):
                array[0] = 1
        with pytest.raises(AttributeError):
            pmap.size = 3  # type: ignore[misc]
