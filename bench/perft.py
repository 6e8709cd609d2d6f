"""Benchmark of the native chess rules: perft nodes per second beside python-chess.

Run from the repository root after building the extension:
``python bench/perft.py``.  For each position, prints the median over 3 runs
of the native core's perft (bulk-counted at the last ply) and python-chess's
(a plain recursive perft counting ``legal_moves`` at the last ply, at a lower
depth), both in nodes per second, and their ratio.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import chess

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from models import _native  # noqa: E402

REPEATS = 3

# (name, FEN, native depth, python-chess depth)
POSITIONS = [
    ("start", chess.STARTING_FEN, 5, 3),
    ("kiwipete", "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", 4, 2),
    ("cpw 3", "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", 6, 4),
    ("cpw 4", "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", 5, 3),
    ("cpw 5", "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", 4, 3),
    ("cpw 6", "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", 4, 3),
]


def python_perft(board: chess.Board, depth: int) -> int:
    """python-chess perft with the same bulk count at the last ply."""
    if depth == 0:
        return 1
    if depth == 1:
        return board.legal_moves.count()
    nodes = 0
    for move in board.legal_moves:
        board.push(move)
        nodes += python_perft(board, depth - 1)
        board.pop()
    return nodes


def nodes_per_second(run: Callable[[], int]) -> tuple[int, float]:
    """(nodes, median nodes/s over REPEATS runs) of ``run()``, which returns a node count."""
    rates = []
    nodes = 0
    for _ in range(REPEATS):
        start = time.perf_counter()
        nodes = run()
        rates.append(nodes / max(time.perf_counter() - start, 1e-9))
    return nodes, statistics.median(rates)


def main() -> None:
    """Prints the table."""
    header = f"{'position':<10} {'native d':>8} {'native nodes':>13} {'native n/s':>13} "
    header += f"{'py d':>4} {'py nodes':>9} {'py n/s':>10} {'ratio':>7}"
    print(header)
    print("-" * len(header))
    for name, fen, depth, py_depth in POSITIONS:
        nodes, native_rate = nodes_per_second(lambda f=fen, d=depth: _native.perft(f, d))
        py_nodes, py_rate = nodes_per_second(
            lambda f=fen, d=py_depth: python_perft(chess.Board(f), d)
        )
        print(
            f"{name:<10} {depth:>8} {nodes:>13,} {native_rate:>13,.0f} "
            f"{py_depth:>4} {py_nodes:>9,} {py_rate:>10,.0f} {native_rate / py_rate:>7,.0f}x"
        )


if __name__ == "__main__":
    main()
