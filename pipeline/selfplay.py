"""Self-play of several games side by side, their leaves sharing each batch.

This is the in-process core: it knows nothing of Ray or storage.  Every step
searches all unfinished games together (:func:`models.search.run_searches`),
then each game samples its move (temperature for the opening plies, then the
most visited move), records the search statistics and keeps the subtree.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import chess
import chess.pgn
import numpy as np

from models.evaluation import EvalCache, Evaluator
from models.search import GameTree, SearchConfig, run_searches, select_move

log = logging.getLogger(__name__)


@dataclass
class PlyRecord:
    """One searched position of a game.

    Attributes:
        fen: the position before the move.
        moves: the legal moves (order of ``visits``).
        visits: search visits per move; pi = visits / visits.sum().
        root_value: Q of the root from its side to move.
        move: the move played.
    """

    fen: str
    moves: list[chess.Move]
    visits: np.ndarray
    root_value: float
    move: chess.Move


@dataclass
class GameRecord:
    """A finished self-play game."""

    start_fen: str
    plies: list[PlyRecord] = field(default_factory=list)
    result: str = "*"
    termination: str = ""

    def outcome_for_ply(self, ply: int) -> int:
        """z in {-1, 0, 1} from the side to move at ``ply``."""
        if self.result == "1/2-1/2" or self.result == "*":
            return 0
        white_won = self.result == "1-0"
        white_to_move = chess.Board(self.plies[ply].fen).turn == chess.WHITE
        return 1 if white_won == white_to_move else -1

    def to_pgn(self, headers: dict[str, str] | None = None) -> chess.pgn.Game:
        """The game as PGN, each move commented with the root value and visits."""
        board = chess.Board(self.start_fen)
        game = chess.pgn.Game.from_board(board)
        game.headers["Event"] = "zerochess self-play"
        game.headers["Date"] = datetime.date.today().strftime("%Y.%m.%d")
        game.headers["White"] = game.headers["Black"] = "zerochess"
        game.headers["Result"] = self.result
        game.headers["Termination"] = self.termination
        for key, value in (headers or {}).items():
            game.headers[key] = value
        node: chess.pgn.GameNode = game
        for ply in self.plies:
            node = node.add_variation(ply.move)
            node.comment = f"q={ply.root_value:+.2f} n={int(ply.visits.sum())}"
        return game


def _finish(board: chess.Board, max_plies: int, plies: int) -> tuple[str, str] | None:
    outcome = board.outcome(claim_draw=True)
    if outcome is not None:
        return outcome.result(), outcome.termination.name.lower()
    if plies >= max_plies:
        return "1/2-1/2", "max_plies"
    return None


def play_games(
    evaluator: Evaluator,
    search: SearchConfig,
    *,
    games: int,
    max_plies: int,
    rng: np.random.Generator,
    start_fen: str = chess.STARTING_FEN,
    add_noise: bool = True,
    on_ply: Callable[[int], None] | None = None,
) -> list[GameRecord]:
    """Play ``games`` self-play games together and return their records.

    ``on_ply`` is called with the number of moves made in each step (for a
    progress bar).
    """
    cache = EvalCache(search.cache_size)
    trees = [
        GameTree(chess.Board(start_fen), search, needs_planes=evaluator.needs_planes, cache=cache, rng=rng)
        for _ in range(games)
    ]
    records = [GameRecord(start_fen) for _ in range(games)]
    active = list(range(games))
    while active:
        for index in active:
            trees[index].start(add_noise=add_noise)
        run_searches([trees[index] for index in active], evaluator)
        still_active = []
        for index in active:
            tree, record = trees[index], records[index]
            result = tree.result()
            move = select_move(result, len(record.plies), search, rng)
            record.plies.append(
                PlyRecord(tree.board.fen(), result.moves, result.visits, result.root_value, move)
            )
            tree.advance(move)
            finished = _finish(tree.board, max_plies, len(record.plies))
            if finished is None:
                still_active.append(index)
            else:
                record.result, record.termination = finished
        if on_ply is not None:
            on_ply(len(active))
        active = still_active
    log.info("played %d games, cache hits %d misses %d", games, cache.hits, cache.misses)
    return records
