"""Benchmark of the native input planes (models._native) against models.encoding.

Run from the repository root after building the extension:
``python bench/encoding_native.py``.  On the positions of seeded random games
(``tests/helpers/native_random_games.py``, seed 0), prints the median over 3 repeats of
positions per second for:

(a) ``models.encoding`` line encoding: python-chess ``push``, ``PlaneHistory.push``,
    ``snapshot`` and ``meta_values`` per position, then one batched
    ``encode_snapshots`` per game (the tests' reference path);
(b) ``models.encoding.encode_batch`` of 256 already built (history, board) pairs
    (encoding only, no move played);
(c) native ``encode_line_all``: play every move (legality checked) and encode
    every position of the game, in C++;
(d) python-chess ``legal_moves`` + ``models.policy`` az4672 indices per position;
(e) native ``line_policy_indices`` (legal moves and their az4672 indices).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import chess
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import median_rate
from models import _native
from models.encoding import PlaneHistory, encode_batch
from models.policy import AZ4672
from tests.helpers.native_random_games import random_games, reference_line_planes

REPEATS = 3
GAMES = 40
BATCH = 256
START = chess.STARTING_FEN


def python_policies(moves: list[str]) -> None:
    """(d): legal moves and az4672 indices of every position with python-chess."""
    board = chess.Board()
    AZ4672.indices(board, list(board.legal_moves))
    for move in moves:
        board.push_uci(move)
        AZ4672.indices(board, list(board.legal_moves))


def batch_pairs(games: list[list[str]]) -> list[tuple[PlaneHistory, chess.Board]]:
    """(b)'s input: 256 (history, board) pairs at assorted plies of the games."""
    pairs = []
    for index in range(BATCH):
        moves = games[index % len(games)]
        board = chess.Board()
        for move in moves[: (index * 7) % (len(moves) + 1)]:
            board.push_uci(move)
        pairs.append((PlaneHistory.from_board(board), board))
    return pairs


def main() -> None:
    """Checks that native and Python agree, then times the five paths."""
    games = list(random_games(GAMES, seed=0))
    positions = sum(len(moves) + 1 for moves in games)
    for moves in games[:5]:
        assert np.array_equal(_native.encode_line_all(START, moves), reference_line_planes(moves))
    pairs = batch_pairs(games)

    def lines(encode: Callable[[list[str]], object]) -> Callable[[], int]:
        def run() -> int:
            for moves in games:
                encode(moves)
            return positions

        return run

    def batched() -> int:
        for _ in range(8):
            encode_batch(pairs)
        return 8 * BATCH

    results = {
        "(a) models.encoding line, batched": median_rate(lines(reference_line_planes), REPEATS),
        f"(b) models.encoding encode_batch {BATCH}": median_rate(batched, REPEATS),
        "(c) native encode_line_all": median_rate(
            lines(lambda m: _native.encode_line_all(START, m)), REPEATS
        ),
        "(d) python-chess + models.policy": median_rate(lines(python_policies), REPEATS),
        "(e) native line_policy_indices": median_rate(
            lines(lambda m: _native.line_policy_indices(START, m, "az4672")), REPEATS
        ),
    }
    print(f"{GAMES} games, {positions} positions, median of {REPEATS} repeats")
    print(f"{'path':40s} {'positions/s':>12s}")
    for name, value in results.items():
        print(f"{name:40s} {value:12,.0f}")
    native_planes = results["(c) native encode_line_all"]
    native_policies = results["(e) native line_policy_indices"]
    print(
        f"native planes: {native_planes / results['(a) models.encoding line, batched']:.1f}x (a), "
        f"{native_planes / results[f'(b) models.encoding encode_batch {BATCH}']:.1f}x (b); "
        f"native policies: {native_policies / results['(d) python-chess + models.policy']:.1f}x (d)"
    )


if __name__ == "__main__":
    main()
