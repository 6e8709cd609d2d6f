"""Benchmark of models.encoding: encodings per second of four encoders.

Run from the repository root: ``python bench/encoding.py``. Prints, for a fixed
set of positions from seeded random games, the median over 5 repeats of:

(a) a naive ``piece_at`` encoder that walks the history with pop/push,
(b) ``encode_board`` from scratch (replays the move stack),
(c) ``PlaneHistory.encode`` on an already built history,
(d) ``encode_batch`` of 256 (history, board) pairs,

and each one's speed relative to (a).
"""

from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

import chess
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import median_rate  # noqa: E402
from models.encoding import PlaneHistory, encode_batch, encode_board  # noqa: E402

REPEATS = 5
BATCH = 256
GAMES = 32
SEED = 20240601


def seeded_positions(games: int = GAMES, seed: int = SEED) -> list[chess.Board]:
    """Final positions (with move stacks) of seeded random games of 10..120 plies."""
    rng = random.Random(seed)
    boards = []
    for _ in range(games):
        board = chess.Board()
        for _ in range(rng.randint(10, 120)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        boards.append(board)
    return boards


def naive_encode(board: chess.Board) -> np.ndarray:
    """Naive encoder: piece_at loops, history walked by popping and re-pushing."""
    planes = np.zeros((119, 8, 8), dtype=np.uint8)
    us = board.turn
    popped: list[chess.Move] = []
    for step in range(8):
        naive_step(planes, step, board, us)
        if not board.move_stack:
            break
        popped.append(board.pop())
    for move in reversed(popped):
        board.push(move)
    naive_meta(planes, board, us)
    return planes


def naive_step(planes: np.ndarray, step: int, board: chess.Board, us: chess.Color) -> None:
    """Fills one history step square by square."""
    victim = target = None
    if board.has_legal_en_passant() and board.ep_square is not None:
        file = chess.square_file(board.ep_square)
        capturer_white = board.turn == chess.WHITE
        victim = chess.square(file, 4 if capturer_white else 3)
        target = chess.square(file, 7 if capturer_white else 0)
    for square in chess.SQUARES:
        piece = board.piece_at(square)
        if piece is None:
            continue
        shown = target if square == victim and target is not None else square
        rank = chess.square_rank(shown) if us == chess.WHITE else 7 - chess.square_rank(shown)
        plane = step * 14 + (0 if piece.color == us else 6) + piece.piece_type - 1
        planes[plane, rank, chess.square_file(shown)] = 1
    planes[step * 14 + 12] = board.is_repetition(2)
    planes[step * 14 + 13] = board.is_repetition(3)


def naive_meta(planes: np.ndarray, board: chess.Board, us: chess.Color) -> None:
    """Fills planes 112..118."""
    planes[112] = us == chess.BLACK
    planes[113] = min(board.ply(), 255)
    planes[114] = board.has_kingside_castling_rights(us)
    planes[115] = board.has_queenside_castling_rights(us)
    planes[116] = board.has_kingside_castling_rights(not us)
    planes[117] = board.has_queenside_castling_rights(not us)
    planes[118] = min(board.halfmove_clock, 255)


def main() -> None:
    """Runs the four measurements and prints them side by side."""
    boards = seeded_positions()
    histories = [PlaneHistory.from_board(b) for b in boards]
    pairs = list(zip(histories, boards, strict=True))
    batch = [pairs[i % len(pairs)] for i in range(BATCH)]
    for history, board in pairs:  # all four agree before timing anything
        assert (naive_encode(board) == history.encode(board)).all()
        assert (encode_board(board) == history.encode(board)).all()

    def naive() -> int:
        for _ in range(4):
            for board in boards:
                naive_encode(board)
        return 4 * len(boards)

    def scratch() -> int:
        for _ in range(4):
            for board in boards:
                encode_board(board)
        return 4 * len(boards)

    def cached() -> int:
        for _ in range(64):
            for history, board in pairs:
                history.encode(board)
        return 64 * len(pairs)

    def batched() -> int:
        for _ in range(32):
            encode_batch(batch)
        return 32 * BATCH

    results = {
        "(a) naive piece_at + pop/push": median_rate(naive, REPEATS),
        "(b) encode_board from scratch": median_rate(scratch, REPEATS),
        "(c) PlaneHistory.encode (cached)": median_rate(cached, REPEATS),
        f"(d) encode_batch of {BATCH}": median_rate(batched, REPEATS),
    }
    plies = [len(b.move_stack) for b in boards]
    print(
        f"{len(boards)} positions, plies {min(plies)}..{max(plies)} "
        f"(mean {statistics.mean(plies):.0f}), median of {REPEATS} repeats"
    )
    baseline = results["(a) naive piece_at + pop/push"]
    print(f"{'encoder':36s} {'encodings/s':>12s} {'vs (a)':>8s}")
    for name, value in results.items():
        print(f"{name:36s} {value:12,.0f} {value / baseline:7.1f}x")


if __name__ == "__main__":
    main()
