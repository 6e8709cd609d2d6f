"""Games played on C++ threads by the native core: self-play and matches.

:class:`SelfPlayDriver` plays many self-play games with the rules of
:class:`pipeline.selfplay.SelfPlayWorker` on C++ threads, and hands back
:class:`NativeGame` arrays ready for the shard writer; :class:`MatchDriver`
plays games between two evaluators the same way.  Both call a
:class:`~models.native_tree.BatchEvaluator` once per round.

C++ twin: models/native/driver.* (``SelfPlayCore``, ``MatchCore``), bound in
models/native/driver_bindings.cpp (threads: thread_pool.*, batching: batching.*).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, fields

import chess
import numpy as np

from models import _native
from models.driver_settings import GamesSettings, SelfPlayRules
from models.native_tree import SEED_MASK, BatchEvaluator, copy_fields, search_params
from models.search_config import SearchConfig, result_value


@dataclass
class NativeGame:
    """A finished self-play game as arrays (one row per searched ply).

    ``policy_index[policy_offsets[p]:policy_offsets[p + 1]]`` are the policy
    indices of the moves visited at ply ``p`` and ``policy_visits`` their visit
    counts (pi = visits / their sum), as the shard writer stores them.
    ``policy_probs`` is the training target pi of each listed move (float32):
    visits / their sum for PUCT; for a Gumbel search every legal move is
    listed with its improved-policy probability (its visits may be 0).
    ``draw_playthrough`` games had draw adjudication disabled; ``would_draw``
    is then the plies after which it would have ended the game (else None).
    ``root_d`` is the search root's draw probability of each ply (float64; 0
    when the evaluator gave none).
    """

    game_id: str
    start_fen: str
    result: str
    termination: str
    playthrough: bool
    would_resign: bool | None
    fens: list[str]
    moves: list[str]
    turns: np.ndarray
    history: np.ndarray
    meta: np.ndarray
    root_q: np.ndarray
    full_search: np.ndarray
    policy_offsets: np.ndarray
    policy_index: np.ndarray
    policy_visits: np.ndarray
    policy_probs: np.ndarray | None = None
    draw_playthrough: bool = False
    would_draw: int | None = None
    root_d: np.ndarray | None = None

    def z(self, ply: int) -> int:
        """Outcome in {-1, 0, 1} from the side to move at ``ply`` (as GameRecord.z)."""
        return result_value(self.result, bool(self.turns[ply]))

    @property
    def false_resign(self) -> bool:
        """A play-through game in which the side that would have resigned did not lose."""
        if self.would_resign is None:
            return False
        return self.result != ("0-1" if self.would_resign == chess.WHITE else "1-0")

    @property
    def false_draw(self) -> bool:
        """A draw play-through game that would have been adjudicated a draw and was decided."""
        return self.would_draw is not None and self.result != "1/2-1/2"


def _game_from_core(item: dict, id_prefix: str) -> NativeGame:
    would_resign = item["would_resign"]
    return NativeGame(
        game_id=f"{id_prefix}-{item['index']:05d}",
        start_fen=item["start_fen"],
        result=item["result"],
        termination=item["termination"],
        playthrough=bool(item["playthrough"]),
        would_resign=None if would_resign < 0 else would_resign == 0,  # core: 0 = white
        fens=list(item["fens"]),
        moves=list(item["moves"]),
        turns=item["turns"],
        history=item["history"],
        meta=item["meta"],
        root_q=item["root_q"],
        full_search=item["full_search"],
        policy_offsets=item["policy_offsets"],
        policy_index=item["policy_index"],
        policy_visits=item["policy_visits"],
        policy_probs=item["policy_probs"],
        draw_playthrough=bool(item["draw_playthrough"]),
        would_draw=None if item["would_draw"] < 0 else int(item["would_draw"]),
        root_d=item["root_d"],
    )


def native_config(
    games: GamesSettings, searches: tuple[SearchConfig, ...], rules: SelfPlayRules | None = None
) -> _native.DriverConfig | _native.MatchConfig:
    """The core's config of a driver: ``DriverConfig`` for self-play (one
    search and ``rules``), ``MatchConfig`` for a match (two searches).  Every
    field of the settings is copied under its own name."""
    if rules is not None:
        config = _native.DriverConfig()
        config.search = search_params(searches[0])
        copy_fields(config, rules, [field.name for field in fields(SelfPlayRules)])
    else:
        config = _native.MatchConfig()
        config.search_a, config.search_b = (search_params(search) for search in searches)
    copy_fields(
        config,
        games,
        [field.name for field in fields(GamesSettings) if field.name not in ("seed", "id_prefix")],
    )
    config.start_fens = list(games.start_fens)
    config.seed = games.seed & SEED_MASK
    return config


class _Timer:
    """Seconds spent in the evaluator (from its thread) and waiting for it."""

    def __init__(self) -> None:
        self.eval_seconds = 0.0
        self.wait_seconds = 0.0
        self._lock = threading.Lock()

    def evaluate(self, evaluator: BatchEvaluator, batch: tuple) -> tuple[np.ndarray, np.ndarray]:
        begun = time.perf_counter()
        try:
            return evaluator.evaluate_batch(*batch)
        finally:
            with self._lock:
                self.eval_seconds += time.perf_counter() - begun

    def result(self, item: Future | tuple) -> tuple:
        if not isinstance(item, Future):
            return item
        begun = time.perf_counter()
        try:
            return item.result()
        finally:
            self.wait_seconds += time.perf_counter() - begun


class GamesDriver:
    """What both drivers share: the games to play (:class:`GamesSettings`)."""

    def __init__(self, games: GamesSettings) -> None:
        self.settings = games
        self.id_prefix = games.id_prefix
        self.stats: dict[str, float] = {}


class SelfPlayDriver(GamesDriver):
    """Many self-play games in C++ (the rules of pipeline.selfplay.SelfPlayWorker).

    With ``search.algorithm == "gumbel"`` full searches draw Gumbel noise
    instead of Dirichlet noise (fast searches none), the move played is the
    sequential-halving winner (no temperature), and ``NativeGame.policy_probs``
    holds the improved policy over every legal move.

    ``games_in_flight`` games form two lanes (one when it is 1); each lane
    step (deliver, play moves, start games, collect leaves) runs on
    ``threads`` C++ threads with the GIL released.  With ``overlap`` the
    evaluator works on one lane's batch in a Python thread while the core
    steps the other lane.  The same seed gives the same games for a
    deterministic evaluator, whatever ``threads`` and ``overlap``.

    Draw adjudication (``draw_adjudication_plies`` > 0; 0, the default, is
    off): once a game has that many plies and the root |q| of its last
    ``draw_adjudication_window`` plies all stayed below
    ``draw_adjudication_q``, it ends as a draw (termination
    ``draw_adjudicated``); a ``draw_adjudication_playthrough`` share of games
    plays on and records the ply count in ``NativeGame.would_draw``.
    """

    def __init__(
        self,
        search: SearchConfig,
        games: GamesSettings,
        rules: SelfPlayRules | None = None,
        *,
        overlap: bool = True,
    ) -> None:
        super().__init__(games)
        self.search = search
        self.rules = rules if rules is not None else SelfPlayRules()
        self.overlap = overlap

    def _core(self) -> _native.SelfPlayCore:
        return _native.SelfPlayCore(native_config(self.settings, (self.search,), self.rules))

    def play(
        self, evaluator: BatchEvaluator, on_game: Callable[[NativeGame], None] | None = None
    ) -> list[NativeGame]:
        """Play ``games`` games, ``games_in_flight`` at a time; returns them sorted by id."""
        started = time.perf_counter()
        core = self._core()
        timer = _Timer()
        finished: list[NativeGame] = []
        pending: list[Future | tuple | None] = [None] * core.lanes
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evaluator") as executor:
            try:
                while not (core.done() and all(item is None for item in pending)):
                    for lane in range(core.lanes):
                        item, pending[lane] = pending[lane], None
                        if item is not None:
                            core.set_results(lane, timer.result(item))
                        if core.step(lane):  # GIL released inside
                            batch = core.batch(lane)
                            pending[lane] = (
                                executor.submit(timer.evaluate, evaluator, batch)
                                if self.overlap
                                else timer.evaluate(evaluator, batch)
                            )
                        self._collect_finished(core, finished, on_game)
            finally:
                for item in pending:
                    if isinstance(item, Future):
                        item.cancel()
        self.stats = {
            **core.stats(),
            "eval_seconds": timer.eval_seconds,
            "wait_seconds": timer.wait_seconds,
            "wall_seconds": time.perf_counter() - started,
        }
        return sorted(finished, key=lambda game: game.game_id)

    def _collect_finished(
        self,
        core: _native.SelfPlayCore,
        finished: list[NativeGame],
        on_game: Callable[[NativeGame], None] | None,
    ) -> None:
        for raw in core.take_finished():
            game = _game_from_core(raw, self.id_prefix)
            finished.append(game)
            if on_game is not None:
                on_game(game)


# ---------------------------------------------------------------------------
# Matches between two evaluators


@dataclass
class MatchGame:
    """A finished game between players A and B (A is white in even games)."""

    game_id: str
    start_fen: str
    a_is_white: bool
    moves: list[str]
    result: str
    termination: str

    @property
    def score_a(self) -> float:
        """Player A's score: 1 for a win, 0.5 for a draw, 0 for a loss."""
        if self.result == "1/2-1/2":
            return 0.5
        return 1.0 if (self.result == "1-0") == self.a_is_white else 0.0


class MatchDriver(GamesDriver):
    """Games between two evaluators in C++ (each with its own search settings,
    tree and cache), sides alternating: A plays white in even-numbered games.

    Moves follow ``select_move``'s rules with each player's search config (set
    ``temperature_plies=0`` for the most visited move, with some
    ``random_plies`` for varied openings); no Dirichlet noise, and a Gumbel
    player draws no Gumbel noise (its root takes the top-k moves by policy).  The same seed
    gives the same games for deterministic evaluators, whatever ``threads``.
    """

    def __init__(
        self, search_a: SearchConfig, search_b: SearchConfig | None, games: GamesSettings
    ) -> None:
        super().__init__(games)
        self.search_a = search_a
        self.search_b = search_b or search_a

    def _core(self) -> _native.MatchCore:
        return _native.MatchCore(native_config(self.settings, (self.search_a, self.search_b)))

    def play(
        self,
        evaluator_a: BatchEvaluator,
        evaluator_b: BatchEvaluator,
        on_game: Callable[[MatchGame], None] | None = None,
    ) -> list[MatchGame]:
        """Play the games (one evaluator call per player and round); sorted by id."""
        started = time.perf_counter()
        core = self._core()
        calls = [0, 0]
        finished: list[MatchGame] = []
        while not core.done():
            core.step()  # GIL released inside
            for raw in core.take_finished():
                game = MatchGame(
                    game_id=f"{self.id_prefix}-{raw['index']:05d}",
                    start_fen=raw["start_fen"],
                    a_is_white=bool(raw["a_is_white"]),
                    moves=list(raw["moves"]),
                    result=raw["result"],
                    termination=raw["termination"],
                )
                finished.append(game)
                if on_game is not None:
                    on_game(game)
            for player, evaluator in enumerate((evaluator_a, evaluator_b)):
                if core.leaves(player):
                    core.set_results(player, evaluator.evaluate_batch(*core.batch(player)))
                    calls[player] += 1
        self.stats = {
            "games": len(finished),
            "batches_a": calls[0],
            "batches_b": calls[1],
            "score_a": sum(game.score_a for game in finished),
            "wall_seconds": time.perf_counter() - started,
        }
        return sorted(finished, key=lambda game: game.game_id)
