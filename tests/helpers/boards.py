"""Boards for the tests: seeded random games, boards from move lists, named
positions, and the input-plane layout as the encoding tests spell it out."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

import chess

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
"""The perft suite's busiest middlegame: castling both ways, pins, en passant chances."""

OUR = {name: i for i, name in enumerate("PNBRQK")}
"""Plane of each of the side to move's pieces inside a history step (step 0: planes 0..13)."""
THEIR = {name: 6 + i for i, name in enumerate("PNBRQK")}
"""Plane of each of the opponent's pieces inside a history step."""
REP1, REP2 = 12, 13
"""The repetition planes of a history step (seen once before, twice before)."""


def random_walk(seed: int | random.Random, plies: int, start: str = chess.STARTING_FEN, *,
                back: float = 0.0) -> Iterator[chess.Board]:  # fmt: skip
    """The positions of a seeded random game from ``start``: yields the board
    (one object, moved on between yields) before each of up to ``plies``
    uniformly random legal moves, then the last position; a position with no
    legal move ends the game early.  ``seed`` may be a ``random.Random`` to
    draw from (several games from one stream).  With ``back`` > 0, that share
    of the moves (from the third ply on) takes the mover's previous move back
    where it is legal, to provoke repetitions."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    board = chess.Board(start)
    for _ in range(plies):
        yield board
        moves = list(board.legal_moves)
        if not moves:
            return
        board.push(_pick(rng, board, moves, back))
    yield board


def _pick(rng: random.Random, board: chess.Board, moves: list[chess.Move], back: float) -> chess.Move:
    """A uniformly random move, or with probability ``back`` the reverse of the mover's previous move."""
    if back and len(board.move_stack) >= 2 and rng.random() < back:
        previous = board.move_stack[-2]
        reverse = chess.Move(previous.to_square, previous.from_square)
        if reverse in moves:
            return reverse
    return rng.choice(moves)


def random_board(seed: int | random.Random, plies: int, start: str = chess.STARTING_FEN, *,
                 back: float = 0.0) -> chess.Board:  # fmt: skip
    """The last position of :func:`random_walk` (with its move stack)."""
    for board in random_walk(seed, plies, start, back=back):
        pass
    return board


def board_from_moves(moves: Sequence[str], fen: str = chess.STARTING_FEN) -> chess.Board:
    """The board after the UCI ``moves`` from ``fen`` (with its move stack)."""
    board = chess.Board(fen)
    for uci in moves:
        board.push_uci(uci)
    return board


EP_FEN = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
"""White may take en passant on f6."""


def repetition_board() -> chess.Board:
    """The start position after the knights went out and back once (one repetition), then b1c3."""
    return board_from_moves(["g1f3", "g8f6", "f3g1", "f6g8", "b1c3"])


def repetition_board_twice() -> chess.Board:
    """A line where the root position occurred before and the tree can reach a threefold."""
    return board_from_moves(["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"])
