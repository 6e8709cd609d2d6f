"""Seeded random chess games for checking the native core against python-chess.

The games are biased so that a few thousand of them cover the rare rules:
captures and pawn pushes are favoured (promotions, under-promotions, en
passant), castling is usually taken when legal, and some games shuffle pieces
back and forth so that threefold repetitions happen.  A game ends like
``models.search_config.terminal_value`` decides: checkmate, stalemate, threefold
repetition (the position occurred twice before), the fifty-move rule (halfmove
clock >= 100) or insufficient material, or at ``max_plies``.

:func:`reference_line_planes` gives the python reference planes of such a game
(``models.encoding``), which the native line encoder must match byte for byte.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence

import chess
import numpy as np

from models.encoding import PlaneHistory, encode_snapshots, meta_values


def _game_over(board: chess.Board, seen: Counter[Hashable], legal: list[chess.Move]) -> bool:
    """Whether the game ends here under the project's rules."""
    if not legal or seen[board._transposition_key()] >= 3:  # noqa: SLF001 - python-chess's key
        return True
    return board.halfmove_clock >= 100 or board.is_insufficient_material()


def _reverse_of(move: chess.Move) -> chess.Move:
    """The move taking the piece straight back."""
    return chess.Move(move.to_square, move.from_square)


def _pick(
    board: chess.Board,
    legal: list[chess.Move],
    moves: list[str],
    rng: random.Random,
    shuffle: float,
) -> chess.Move:
    """One biased random move among ``legal``."""
    if len(moves) >= 2 and rng.random() < shuffle:
        back = _reverse_of(chess.Move.from_uci(moves[-2]))
        if back in legal:
            return back
    ep = [m for m in legal if board.is_en_passant(m)]
    if ep and rng.random() < 0.7:
        return rng.choice(ep)
    castles = [m for m in legal if board.is_castling(m)]
    if castles and rng.random() < 0.5:
        return rng.choice(castles)
    roll = rng.random()
    if roll < 0.35:
        captures = [m for m in legal if board.is_capture(m)]
        if captures:
            return rng.choice(captures)
    elif roll < 0.6:
        pawn_moves = [m for m in legal if board.piece_type_at(m.from_square) == chess.PAWN]
        if pawn_moves:
            return rng.choice(pawn_moves)
    return rng.choice(legal)


def random_game(seed: int, max_plies: int = 300) -> list[str]:
    """One game (UCI moves) from the start position, determined by ``seed``."""
    rng = random.Random(seed)
    shuffle = rng.choice((0.0, 0.0, 0.3, 0.8))
    board = chess.Board()
    seen: Counter[Hashable] = Counter([board._transposition_key()])  # noqa: SLF001
    moves: list[str] = []
    while len(moves) < max_plies:
        legal = list(board.generate_legal_moves())
        if _game_over(board, seen, legal):
            break
        move = _pick(board, legal, moves, rng, shuffle)
        board.push(move)
        moves.append(move.uci())
        seen[board._transposition_key()] += 1  # noqa: SLF001
    return moves


def random_games(count: int, seed: int = 0, max_plies: int = 300) -> Iterator[list[str]]:
    """``count`` games as lists of UCI moves; the same seed gives the same games."""
    for index in range(count):
        yield random_game(seed * 1_000_003 + index, max_plies)


def reference_line_planes(moves: Sequence[str]) -> np.ndarray:
    """models.encoding planes of every position of the line from the start: python-chess
    ``push``, ``PlaneHistory.push``, ``snapshot`` and ``meta_values`` per position, then
    one batched ``encode_snapshots``."""
    board = chess.Board()
    history = PlaneHistory.from_board(board)
    snapshots, metas = [history.snapshot()], [meta_values(board)]
    for move in moves:
        board.push_uci(move)
        history.push(board)
        snapshots.append(history.snapshot())
        metas.append(meta_values(board))
    return encode_snapshots(np.stack(snapshots), np.array(metas, dtype=np.uint8))
