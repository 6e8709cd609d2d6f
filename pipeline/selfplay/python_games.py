"""The python reference backend of self-play (``search.backend: python``).

:class:`PythonSelfPlay` keeps ``selfplay.games_per_task`` games in flight,
each a :class:`models.search_tree.GameTree`: every round it collects the pending
leaves of every game's search, evaluates them in one call and delivers the
results; a game whose search is done plays its move at once and starts the
next search.  With ``selfplay.overlap_inference`` the games form two lanes:
while the network evaluates one lane's leaves in a background thread (torch
releases the GIL), the search delivers and collects the other's.  It is also
the backend of an evaluator that only implements ``evaluate(leaves)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import chess
import numpy as np

from models.encoding import board_meta
from models.evaluation import EvalCache, Evaluator, Leaf
from models.search_config import SearchConfig, select_move
from models.search_drivers import Owner, collect_leaves, deliver_results
from models.search_tree import GameTree
from pipeline.config_errors import ConfigError
from pipeline.selfplay.config import SelfPlayConfig
from pipeline.selfplay.records import GameRecord, PlyRecord, SelfPlayStats

__all__ = ["PythonSelfPlay"]

log = logging.getLogger(__name__)


@dataclass
class _Game:
    """A game in flight."""

    record: GameRecord
    tree: GameTree
    full_search: bool = True
    low_streak: dict[chess.Color, int] = field(default_factory=lambda: {chess.WHITE: 0, chess.BLACK: 0})
    quiet_streak: int = 0
    """Consecutive plies with root |q| below ``selfplay.draw_adjudication_q``."""


class PythonSelfPlay:
    """Plays self-play games on the python search, counting into ``stats``.

    Args:
        evaluator: an evaluator with ``evaluate(leaves)``.
        search: search parameters of a full search.
        selfplay: self-play parameters.
        start_fens: start positions to draw from.
        stats: the counters to add this backend's games to.
    """

    def __init__(
        self,
        evaluator: Evaluator,
        search: SearchConfig,
        selfplay: SelfPlayConfig,
        start_fens: list[str],
        stats: SelfPlayStats,
    ) -> None:
        self.evaluator = evaluator
        self.search = search
        self.selfplay = selfplay
        self.start_fens = start_fens
        self.stats = stats

    def play(
        self, games: int, seed: int, id_prefix: str, on_move: Callable[[], None] | None
    ) -> list[GameRecord]:
        """``games`` games in id order (see :meth:`pipeline.selfplay.worker.SelfPlayWorker.play`);
        ``on_move`` follows every move."""
        rng = np.random.default_rng(seed)
        cache = EvalCache(self.search.cache_size)
        lanes = 2 if self.selfplay.overlap_inference else 1
        per_lane = -(-self.selfplay.games_per_task // lanes)
        groups: list[list[_Game]] = [[] for _ in range(lanes)]
        in_flight: list[tuple[Future[Sequence[tuple[np.ndarray, float]]], list[Owner]] | None] = [None] * lanes
        finished: list[GameRecord] = []
        started = 0
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evaluator") as executor:
            while started < games or any(groups):
                for lane, group in enumerate(groups):
                    batch = in_flight[lane]
                    if batch is not None:
                        in_flight[lane] = None
                        deliver_results(batch[1], batch[0].result())
                    for game in [game for game in group if game.tree.finished]:
                        if self._play_move(game, rng):
                            group.remove(game)
                            finished.append(self._finish(game))
                        if on_move is not None:
                            on_move()
                    while started < games and len(group) < per_lane:
                        group.append(self._new_game(f"{id_prefix}-{started:05d}", rng, cache))
                        started += 1
                    owners, leaves = self._collect(group)
                    if leaves:
                        in_flight[lane] = (executor.submit(self.evaluator.evaluate, leaves), owners)
        return sorted(finished, key=lambda record: record.game_id)

    # -- one round of batched search --------------------------------------

    def _collect(self, group: list[_Game]) -> tuple[list[Owner], list[Leaf]]:
        owners, leaves = collect_leaves([game.tree for game in group])
        if leaves:
            self.stats.evaluations += len(leaves)
            self.stats.batches += 1
        return owners, leaves

    # -- game life cycle ---------------------------------------------------

    def _new_game(self, game_id: str, rng: np.random.Generator, cache: EvalCache) -> _Game:
        board = self._start_board(rng)
        tree = GameTree(board, self.search, needs_planes=self.evaluator.needs_planes, cache=cache, rng=rng)
        config = self.selfplay
        playthrough = config.resign_enabled and rng.random() < config.resign_playthrough
        draw_playthrough = config.draw_adjudication_enabled and rng.random() < config.draw_adjudication_playthrough
        record = GameRecord(game_id, board.fen(), playthrough=playthrough, draw_playthrough=draw_playthrough)
        game = _Game(record, tree)
        self._start_search(game, rng)
        return game

    def _start_board(self, rng: np.random.Generator) -> chess.Board:
        """A start position plus ``random_plies`` random moves (never a finished game)."""
        for _ in range(100):
            board = chess.Board(self.start_fens[int(rng.integers(len(self.start_fens)))])
            for _ in range(self.selfplay.random_plies):
                moves = list(board.legal_moves)
                if not moves:
                    break
                board.push(moves[int(rng.integers(len(moves)))])
            if board.outcome(claim_draw=True) is None:
                # The recorded game starts here: earlier random plies are not history.
                return chess.Board(board.fen())
        raise ConfigError("could not draw a playable start position in 100 tries")

    def _start_search(self, game: _Game, rng: np.random.Generator) -> None:
        full = rng.random() < self.selfplay.full_search_prob
        game.full_search = full
        sims = self.search.num_simulations if full else self.selfplay.fast_simulations
        game.tree.start(num_simulations=sims, add_noise=full)

    def _play_move(self, game: _Game, rng: np.random.Generator) -> bool:
        """Record the finished search, play a move; True when the game is over."""
        tree, record = game.tree, game.record
        board = tree.board
        result = tree.result()
        ply = len(record.plies)
        move = select_move(result, ply, self.search, rng)
        record.plies.append(
            PlyRecord(
                fen=board.fen(),
                turn=board.turn,
                history=tree.history_snapshot(),
                meta=board_meta(board),
                moves=result.moves,
                visits=result.visits,
                root_value=result.root_value,
                move=move,
                full_search=game.full_search,
                policy=None if result.improved_policy is None else result.improved_policy.astype(np.float32),
                root_draw=result.root_draw,
            )
        )
        if self._resigns(game, board.turn, result.root_value):
            record.result = "0-1" if board.turn == chess.WHITE else "1-0"
            record.termination = "resign"
            return True
        tree.advance(move)
        outcome = tree.board.outcome(claim_draw=True)
        if outcome is not None:
            record.result = outcome.result()
            record.termination = outcome.termination.name.lower()
            return True
        if len(record.plies) >= self.selfplay.max_plies:
            record.result, record.termination = "1/2-1/2", "max_plies"
            return True
        if self._adjudicates_draw(game, result.root_value):
            record.result, record.termination = "1/2-1/2", "draw_adjudicated"
            return True
        self._start_search(game, rng)
        return False

    def _resigns(self, game: _Game, side: chess.Color, value: float) -> bool:
        config = self.selfplay
        if not config.resign_enabled:
            return False
        game.low_streak[side] = game.low_streak[side] + 1 if value < config.resign_threshold else 0
        return game.low_streak[side] >= config.resign_plies and game.record.resigns(side)

    def _adjudicates_draw(self, game: _Game, value: float) -> bool:
        """Draw adjudication, after every ply that did not end the game
        otherwise; ``value`` is the ply's root q (only |q| counts)."""
        config = self.selfplay
        if not config.draw_adjudication_enabled:
            return False
        game.quiet_streak = game.quiet_streak + 1 if abs(value) < config.draw_adjudication_q else 0
        if len(game.record.plies) < config.draw_adjudication_plies or game.quiet_streak < config.draw_adjudication_window:
            return False
        return game.record.adjudicated_draw()

    def _finish(self, game: _Game) -> GameRecord:
        record = game.record
        stats = self.stats
        stats.games += 1
        stats.positions += len(record.plies)
        stats.full_searches += sum(ply.full_search for ply in record.plies)
        stats.resigned += record.termination == "resign"
        stats.playthrough += record.playthrough
        stats.false_resigns += record.false_resign
        stats.draws_adjudicated += record.termination == "draw_adjudicated"
        stats.draw_playthrough += record.draw_playthrough
        stats.false_draws += record.false_draw
        log.debug("%s: %s by %s after %d plies", record.game_id, record.result, record.termination, len(record.plies))
        return record
