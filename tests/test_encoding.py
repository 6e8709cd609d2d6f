"""Tests for models.encoding: golden positions, a slow reference, properties."""

from __future__ import annotations

import re
from collections.abc import Iterator

import chess
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.encoding import (
    CASTLING_PLANES,
    COLOUR_PLANE,
    HISTORY_STEPS,
    MOVE_COUNT_PLANE,
    NO_PROGRESS_PLANE,
    NUM_PLANES,
    PLANES_PER_STEP,
    EncodingShapeError,
    HistoryMismatchError,
    PlaneHistory,
    board_meta,
    encode_batch,
    encode_board,
    encode_snapshots,
)
from tests.helpers.boards import random_board
from tests.helpers.boards import OUR, REP1, REP2, THEIR

PROPERTY_SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
PLIES = st.integers(min_value=0, max_value=150)


# ---------------------------------------------------------------------------
# Slow reference implementation (independent of the module: piece_at loops)
# ---------------------------------------------------------------------------


def line_positions(board: chess.Board) -> list[chess.Board]:
    """All positions of the board's line, root first, as stackless copies."""
    work = board.copy()
    positions = [work.copy(stack=False)]
    while work.move_stack:
        work.pop()
        positions.append(work.copy(stack=False))
    return positions[::-1]


def ep_display(position: chess.Board) -> tuple[int, int] | None:
    """(real square, shown square) of the pawn capturable en passant, if any."""
    if not position.has_legal_en_passant():
        return None
    assert position.ep_square is not None
    file = chess.square_file(position.ep_square)
    if position.turn == chess.WHITE:
        return chess.square(file, 4), chess.square(file, 7)
    return chess.square(file, 3), chess.square(file, 0)


def reference_step(planes: np.ndarray, step: int, position: chess.Board, us: chess.Color) -> None:
    """Writes the 12 piece planes of one history step, slowly."""
    moved = ep_display(position)
    for square in chess.SQUARES:
        piece = position.piece_at(square)
        if piece is None:
            continue
        shown = square
        if moved is not None and square == moved[0] and piece.piece_type == chess.PAWN:
            shown = moved[1]
        rank = chess.square_rank(shown) if us == chess.WHITE else 7 - chess.square_rank(shown)
        offset = 0 if piece.color == us else 6
        plane = step * PLANES_PER_STEP + offset + piece.piece_type - 1
        planes[plane, rank, chess.square_file(shown)] = 1


def reference_encode(board: chess.Board) -> np.ndarray:
    """Slow reference encoder written from the spec."""
    planes = np.zeros((NUM_PLANES, 8, 8), dtype=np.uint8)
    us = board.turn
    positions = line_positions(board)
    keys = [p._transposition_key() for p in positions]
    for step in range(HISTORY_STEPS):
        index = len(positions) - 1 - step
        if index < 0:
            break
        reference_step(planes, step, positions[index], us)
        seen = keys[:index].count(keys[index])
        planes[step * PLANES_PER_STEP + REP1] = int(seen >= 1)
        planes[step * PLANES_PER_STEP + REP2] = int(seen >= 2)
    planes[112] = int(us == chess.BLACK)
    planes[113] = min(board.ply(), 255)
    planes[114] = int(board.has_kingside_castling_rights(us))
    planes[115] = int(board.has_queenside_castling_rights(us))
    planes[116] = int(board.has_kingside_castling_rights(not us))
    planes[117] = int(board.has_queenside_castling_rights(not us))
    planes[118] = min(board.halfmove_clock, 255)
    return planes


# ---------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------


def play(board: chess.Board, *sans: str) -> chess.Board:
    """Pushes SAN moves on the board and returns it."""
    for san in sans:
        board.push_san(san)
    return board


def replay(moves: list[chess.Move]) -> Iterator[tuple[int, chess.Board, PlaneHistory]]:
    """The line of ``moves`` from the start position: (ply, board, plane history)
    at the start and after each move (one board and one history, moved on)."""
    board = chess.Board()
    history = PlaneHistory.from_board(board)
    yield 0, board, history
    for ply, move in enumerate(moves, start=1):
        board.push(move)
        history.push(board)
        yield ply, board, history


def squares_of(plane: np.ndarray, black_view: bool = False) -> set[str]:
    """Names of the set squares of an 8x8 plane, mapped back to absolute squares."""
    ranks, files = np.nonzero(plane)
    return {
        chess.square_name(chess.square(int(f), 7 - int(r) if black_view else int(r)))
        for r, f in zip(ranks, files, strict=True)
    }


def step_plane(step: int, offset: int) -> int:
    """Index of plane ``offset`` (0..13) of history step ``step``."""
    return step * PLANES_PER_STEP + offset


def assert_all(plane: np.ndarray, value: int) -> None:
    """Asserts that a plane is constant ``value``."""
    assert plane.shape == (8, 8)
    assert (plane == value).all(), plane


# ---------------------------------------------------------------------------
# Golden positions
# ---------------------------------------------------------------------------


def test_start_position() -> None:
    planes = encode_board(chess.Board())
    assert planes.shape == (NUM_PLANES, 8, 8) and planes.dtype == np.uint8
    assert planes[OUR["K"], 0, 4] == 1 and planes[THEIR["K"], 7, 4] == 1
    assert squares_of(planes[OUR["P"]]) == {f"{f}2" for f in "abcdefgh"}
    assert planes[OUR["P"], 1].all() and planes[OUR["P"]].sum() == 8
    assert squares_of(planes[THEIR["P"]]) == {f"{f}7" for f in "abcdefgh"}
    assert squares_of(planes[OUR["R"]]) == {"a1", "h1"}
    assert squares_of(planes[THEIR["Q"]]) == {"d8"}
    assert planes[REP1].sum() == 0 and planes[REP2].sum() == 0
    assert planes[PLANES_PER_STEP:112].sum() == 0  # steps 1..7 empty
    assert [int(planes[p, 3, 3]) for p in range(112, 119)] == [0, 0, 1, 1, 1, 1, 0]
    np.testing.assert_array_equal(planes, reference_encode(chess.Board()))


def test_after_e4_black_view() -> None:
    board = play(chess.Board(), "e4")
    planes = encode_board(board)
    # Black's pieces are "ours", on ranks 0/1 of black's view.
    assert planes[OUR["K"], 0, 4] == 1 and planes[OUR["P"], 1].all()
    assert planes[THEIR["P"], 7 - 3, 4] == 1  # white pawn e4
    assert squares_of(planes[THEIR["P"]], black_view=True) == {
        "a2", "b2", "c2", "d2", "e4", "f2", "g2", "h2",
    }  # fmt: skip
    assert squares_of(planes[THEIR["K"]], black_view=True) == {"e1"}
    # Step 1: start position, still in black's view with black as "ours".
    rank7, rank2 = {f"{f}7" for f in "abcdefgh"}, {f"{f}2" for f in "abcdefgh"}
    assert squares_of(planes[step_plane(1, OUR["P"])], black_view=True) == rank7
    assert squares_of(planes[step_plane(1, THEIR["P"])], black_view=True) == rank2
    assert planes[step_plane(2, 0) : 112].sum() == 0
    assert_all(planes[COLOUR_PLANE], 1)
    assert_all(planes[MOVE_COUNT_PLANE], 1)
    assert_all(planes[NO_PROGRESS_PLANE], 0)
    np.testing.assert_array_equal(planes, reference_encode(board))


@pytest.mark.parametrize(
    ("fen", "expected"),
    [
        ("r3k2r/8/8/8/8/8/8/R3K2R w Kq - 0 1", [1, 0, 0, 1]),
        ("r3k2r/8/8/8/8/8/8/R3K2R b Kq - 0 1", [0, 1, 1, 0]),
        ("r3k2r/8/8/8/8/8/8/R3K2R w - - 0 1", [0, 0, 0, 0]),
        ("r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1", [1, 1, 1, 1]),
        ("r3k2r/8/8/8/8/8/8/R4RK1 w kq - 0 1", [0, 0, 1, 1]),
    ],
)
def test_castling_planes(fen: str, expected: list[int]) -> None:
    board = chess.Board(fen)
    planes = encode_board(board)
    for plane, value in zip(range(114, 118), expected, strict=True):
        assert_all(planes[plane], value)
    np.testing.assert_array_equal(planes[CASTLING_PLANES, 0, 0], expected)
    np.testing.assert_array_equal(planes, reference_encode(board))


def test_en_passant_white_to_capture() -> None:
    board = play(chess.Board(), "e4", "a6", "e5", "d5")
    assert board.has_legal_en_passant()
    planes = encode_board(board)
    black_pawns = squares_of(planes[THEIR["P"]])
    assert "d8" in black_pawns and "d5" not in black_pawns
    assert black_pawns == {"a6", "b7", "c7", "d8", "e7", "f7", "g7", "h7"}
    assert "e5" in squares_of(planes[OUR["P"]])
    # Step 1 (after 2.e5, no en passant): the d-pawn still on d7.
    assert "d7" in squares_of(planes[step_plane(1, THEIR["P"])])
    np.testing.assert_array_equal(planes, reference_encode(board))
    # After the capture the step with the capturable pawn shows it on d8.
    board.push_san("exd6")
    after = encode_board(board)
    assert "d8" in squares_of(after[step_plane(1, OUR["P"])], black_view=True)
    np.testing.assert_array_equal(after, reference_encode(board))


def test_en_passant_black_to_capture() -> None:
    board = play(chess.Board(), "a3", "d5", "a4", "d4", "e4")
    assert board.has_legal_en_passant()
    planes = encode_board(board)
    white_pawns = squares_of(planes[THEIR["P"]], black_view=True)
    assert "e1" in white_pawns and "e4" not in white_pawns
    assert planes[THEIR["P"], 7, 4] == 1  # e1 in black's view
    np.testing.assert_array_equal(planes, reference_encode(board))


@pytest.mark.parametrize(
    "fen",
    [
        # ep square set, but no white pawn can capture
        "rnbqkbnr/ppp1pppp/8/3p4/8/8/PPPPPPPP/RNBQKBNR w KQkq d6 0 2",
        # exd6 is pseudo-legal but illegal: it would expose the king on rank 5
        "8/8/8/K2pP2r/8/8/8/4k3 w - d6 0 1",
    ],
)
def test_en_passant_square_without_legal_capture(fen: str) -> None:
    board = chess.Board(fen)
    assert board.ep_square is not None and not board.has_legal_en_passant()
    planes = encode_board(board)
    black_pawns = squares_of(planes[THEIR["P"]])
    assert "d5" in black_pawns and "d8" not in black_pawns
    np.testing.assert_array_equal(planes, reference_encode(board))


def test_repetition_planes() -> None:
    board = chess.Board()
    history = PlaneHistory.from_board(board)
    # After each out-and-back of the knights: the repetition count, and each plane's value on every square.
    rounds = [
        (1, {REP1: 1, REP2: 0, step_plane(4, REP1): 0}),  # step 4: the original start position
        (2, {REP1: 1, REP2: 1, step_plane(4, REP1): 1, step_plane(4, REP2): 0,  # step 4: the first repetition
             step_plane(1, REP1): 1}),  # after ...Ng1, seen once before
    ]  # fmt: skip
    for repetitions, values in rounds:
        for san in ["Nf3", "Nf6", "Ng1", "Ng8"]:
            board.push_san(san)
            history.push(board)
        assert history.repetitions() == repetitions
        planes = encode_board(board)
        for plane, value in values.items():
            assert_all(planes[plane], value)
        np.testing.assert_array_equal(history.encode(board), planes)
        np.testing.assert_array_equal(planes, reference_encode(board))


def test_unclean_castling_rights_and_null_moves() -> None:
    board = chess.Board("4k3/8/8/8/8/8/8/4K3 w KQkq - 0 1")  # rights without rooks
    history = PlaneHistory.from_board(board)
    for move in ["e1e2", "e8e7", "e2e1", "e7e8", "0000", "0000"]:
        board.push_uci(move)
        history.push(board)
        np.testing.assert_array_equal(history.encode(board), encode_board(board))
        np.testing.assert_array_equal(history.encode(board), reference_encode(board))
    assert history.repetitions() == 2 and board.is_repetition(3)
    planes = encode_board(board)
    assert planes[CASTLING_PLANES].sum() == 0
    assert_all(planes[REP2], 1)
    assert_all(planes[step_plane(1, REP1)], 0)  # after one null move: black to move, new


def test_promotion() -> None:
    board = chess.Board("8/P6k/8/8/8/8/6K1/8 w - - 0 1")
    board.push_san("a8=Q")
    planes = encode_board(board)
    assert squares_of(planes[THEIR["Q"]], black_view=True) == {"a8"}
    assert planes[THEIR["Q"], 0, 0] == 1
    assert planes[THEIR["P"]].sum() == 0
    assert squares_of(planes[step_plane(1, THEIR["P"])], black_view=True) == {"a7"}
    assert planes[OUR["K"], 1, 7] == 1  # h7 in black's view
    assert_all(planes[NO_PROGRESS_PLANE], 0)
    np.testing.assert_array_equal(planes, reference_encode(board))


def test_black_to_move_fen() -> None:
    board = chess.Board("r1bqk2r/pppp1ppp/2n2n2/2b1p3/2B1P3/3P1N2/PPP2PPP/RNBQK2R b KQkq - 3 5")
    planes = encode_board(board)
    assert planes[OUR["K"], 0, 4] == 1 and planes[OUR["Q"], 0, 3] == 1
    assert planes[THEIR["K"], 7, 4] == 1
    assert squares_of(planes[OUR["B"]], black_view=True) == {"c8", "c5"}
    assert planes[OUR["B"], 3, 2] == 1  # c5
    assert squares_of(planes[THEIR["N"]], black_view=True) == {"b1", "f3"}
    assert planes[PLANES_PER_STEP:112].sum() == 0
    assert [int(planes[p, 0, 0]) for p in range(112, 119)] == [1, 9, 1, 1, 1, 1, 3]
    np.testing.assert_array_equal(planes, reference_encode(board))


@pytest.mark.parametrize(
    ("fen", "move_count", "no_progress"),
    [
        ("8/8/8/4k3/8/8/8/4K3 w - - 300 200", 255, 255),
        ("8/8/8/4k3/8/8/8/4K3 b - - 255 128", 255, 255),
        ("8/8/8/4k3/8/8/8/4K3 w - - 254 128", 254, 254),
        ("8/8/8/4k3/8/8/8/4K3 b - - 7 3", 5, 7),
    ],
)
def test_counts_capped(fen: str, move_count: int, no_progress: int) -> None:
    planes = encode_board(chess.Board(fen))
    assert_all(planes[MOVE_COUNT_PLANE], move_count)
    assert_all(planes[NO_PROGRESS_PLANE], no_progress)


def test_board_meta_matches_planes() -> None:
    board = play(chess.Board(), "e4", "e5", "Ke2")
    meta = board_meta(board)
    assert meta.shape == (7,) and meta.dtype == np.uint8
    np.testing.assert_array_equal(meta, encode_board(board)[112:, 5, 5])
    np.testing.assert_array_equal(meta, [1, 3, 1, 1, 0, 0, 1])


# ---------------------------------------------------------------------------
# PlaneHistory behaviour
# ---------------------------------------------------------------------------


def test_copy_is_independent() -> None:
    board = play(chess.Board(), "e4", "e5")
    history = PlaneHistory.from_board(board)
    clone = history.copy()
    board.push_san("Nf3")
    clone.push(board)
    assert len(clone) == len(history) + 1
    np.testing.assert_array_equal(clone.encode(board), encode_board(board))
    board.pop()
    np.testing.assert_array_equal(history.encode(board), encode_board(board))


def test_encode_into_slices_and_strided_buffers() -> None:
    board = play(chess.Board(), "d4", "Nf6", "c4")
    history = PlaneHistory.from_board(board)
    expected = encode_board(board)
    batch = np.zeros((3, NUM_PLANES, 8, 8), dtype=np.uint8)
    history.encode_into(board, batch[1])
    np.testing.assert_array_equal(batch[1], expected)
    assert batch[0].sum() == 0 and batch[2].sum() == 0
    strided = np.zeros((8, 8, NUM_PLANES), dtype=np.uint8).transpose(2, 0, 1)
    history.encode_into(board, strided)
    np.testing.assert_array_equal(strided, expected)


def test_snapshot_shape_and_padding() -> None:
    board = play(chess.Board(), "e4")
    snapshot = PlaneHistory.from_board(board).snapshot()
    assert snapshot.shape == (HISTORY_STEPS, 14) and snapshot.dtype == np.uint64
    assert (snapshot[2:] == 0).all() and snapshot[0].any() and snapshot[1].any()


def test_pop_empty_raises() -> None:
    history = PlaneHistory()
    with pytest.raises(IndexError):
        history.pop()


# ---------------------------------------------------------------------------
# Invalid input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "dtype"),
    [
        ((NUM_PLANES, 8), np.uint8),
        ((1, NUM_PLANES, 8, 8), np.uint8),
        ((NUM_PLANES, 8, 8), np.float32),
    ],
)
def test_encode_into_rejects_bad_buffer(shape: tuple[int, ...], dtype: type) -> None:
    board = chess.Board()
    history = PlaneHistory.from_board(board)
    with pytest.raises(EncodingShapeError, match=re.escape(str(shape))) as info:
        history.encode_into(board, np.zeros(shape, dtype=dtype))
    assert isinstance(info.value, ValueError)


def test_encode_rejects_other_board() -> None:
    board = chess.Board()
    history = PlaneHistory.from_board(board)
    board.push_san("e4")
    with pytest.raises(HistoryMismatchError, match="4P3") as info:
        history.encode(board)
    assert isinstance(info.value, ValueError)


def test_bad_batch_inputs() -> None:
    with pytest.raises(EncodingShapeError, match=r"\(2, 8, 13\)"):
        encode_snapshots(np.zeros((2, 8, 13), np.uint64), np.zeros((2, 7), np.uint8))
    with pytest.raises(EncodingShapeError, match=r"\(2, 6\)"):
        encode_snapshots(np.zeros((2, 8, 14), np.uint64), np.zeros((2, 6), np.uint8))
    with pytest.raises(EncodingShapeError, match="item 0"):
        encode_batch([(np.zeros((8, 13), np.uint64), chess.Board())])
    assert encode_batch([]).shape == (0, NUM_PLANES, 8, 8)


# ---------------------------------------------------------------------------
# Properties on random games
# ---------------------------------------------------------------------------


@PROPERTY_SETTINGS
@given(seed=SEEDS, plies=PLIES)
def test_incremental_equals_from_scratch(seed: int, plies: int) -> None:
    game = random_board(seed, plies, back=0.3)
    last = len(game.move_stack)
    for ply, board, history in replay(game.move_stack):
        assert history.repetitions() >= 1 or not board.is_repetition(2)
        if ply % 11 == seed % 11 or ply == last:
            np.testing.assert_array_equal(history.encode(board), encode_board(board))
            assert (history.repetitions() >= 1) == board.is_repetition(2)
            assert (history.repetitions() >= 2) == board.is_repetition(3)


@PROPERTY_SETTINGS
@given(seed=SEEDS, plies=PLIES)
def test_push_pop_restores(seed: int, plies: int) -> None:
    board = random_board(seed, plies, back=0.3)
    history = PlaneHistory.from_board(board)
    before, reps = history.encode(board), history.repetitions()
    for move in list(board.legal_moves)[:6]:
        board.push(move)
        history.push(board)
        child, child_reps = history.encode(board), history.repetitions()
        board.pop()
        history.pop()
        np.testing.assert_array_equal(history.encode(board), before)
        assert history.repetitions() == reps
        board.push(move)  # pushing again after a pop sees the same counts
        history.push(board)
        np.testing.assert_array_equal(history.encode(board), child)
        assert history.repetitions() == child_reps
        board.pop()
        history.pop()


@PROPERTY_SETTINGS
@given(seed=SEEDS, plies=PLIES)
def test_batch_and_snapshots_equal_single(seed: int, plies: int) -> None:
    game = random_board(seed, plies, back=0.3)
    singles, snapshots, metas = [], [], []
    items: list[tuple[PlaneHistory | np.ndarray, chess.Board]] = []
    for _, board, history in replay(game.move_stack):
        singles.append(history.encode(board))
        snapshots.append(history.snapshot())
        metas.append(board_meta(board))
        items.append((history.snapshot(), board.copy(stack=False)))
    items[-1] = (history, board)  # mix a live history with snapshots
    expected = np.stack(singles)
    np.testing.assert_array_equal(encode_snapshots(np.stack(snapshots), np.stack(metas)), expected)
    np.testing.assert_array_equal(encode_batch(items), expected)


@PROPERTY_SETTINGS
@given(seed=SEEDS, plies=PLIES)
def test_mirror_symmetry(seed: int, plies: int) -> None:
    board = random_board(seed, plies, back=0.3).copy(stack=False)
    planes, mirrored = encode_board(board), encode_board(board.mirror())
    same = [p for p in range(NUM_PLANES) if p not in (COLOUR_PLANE, MOVE_COUNT_PLANE)]
    np.testing.assert_array_equal(planes[same], mirrored[same])
    assert planes[COLOUR_PLANE, 0, 0] != mirrored[COLOUR_PLANE, 0, 0]


@PROPERTY_SETTINGS
@given(seed=SEEDS, plies=PLIES)
def test_reference_equals_fast(seed: int, plies: int) -> None:
    board = random_board(seed, plies, back=0.3)
    np.testing.assert_array_equal(encode_board(board), reference_encode(board))


def test_mirror_symmetry_with_en_passant() -> None:
    board = play(chess.Board(), "e4", "a6", "e5", "d5").copy(stack=False)
    assert board.has_legal_en_passant() and board.mirror().has_legal_en_passant()
    planes, mirrored = encode_board(board), encode_board(board.mirror())
    np.testing.assert_array_equal(planes[:112], mirrored[:112])
    np.testing.assert_array_equal(planes[114:], mirrored[114:])
