"""Self-play: many games side by side, all their leaves in one network batch.

:class:`SelfPlayWorker` is a plain class (Ray wraps it in :mod:`actors`): it
keeps ``selfplay.games_per_task`` games in flight and, each round, collects
the pending leaves of every game's search, evaluates them in one call and
delivers the results; a game whose search is done plays its move at once and
starts the next search, so the batch stays full (lc0's multiplexing, minigo's
concurrent games).  It implements what lc0 and KataGo users expect:
Dirichlet noise and a temperature schedule, playout cap randomization,
resignation with a play-through share to measure false resignations, a
maximum length, and start positions from a file plus random plies.  Off by
default, not AlphaZero: draw adjudication of a long game whose root values
stay near 0 (``selfplay.draw_adjudication_*``, with its own play-through
share), and, not zero-knowledge, a game reaching the maximum length can be
scored by material or by Stockfish (:mod:`pipeline.selfplay.adjudication`).

Two backends play the same rules (``search.backend``):

* ``native`` (the default, :mod:`pipeline.selfplay.native`):
  :class:`models.native_drivers.SelfPlayDriver` keeps
  the games in flight in C++ on ``selfplay.search_threads`` threads, without
  the GIL, and hands the network one ``evaluate_batch`` call per batch
  (two lanes, double-buffered on CUDA or with ``selfplay.overlap_inference``:
  the search fills one batch while the network evaluates the other; on a CPU
  in turn, so the search does not take the forward's cores).  A finished game comes back as arrays
  (:class:`~models.native_drivers.NativeGame`); :class:`NativeGameRecord` wraps
  it as a :class:`GameRecord` whose plies are only built when asked for (a PGN
  needs none of them), and :func:`game_positions` reads the arrays directly.
* ``python``: the readable reference (:mod:`pipeline.selfplay.python_games`,
  a :class:`models.search_tree.GameTree` per game, ``selfplay.overlap_inference``
  lanes).  It is also used for an evaluator that only implements
  ``evaluate(leaves)``.
"""

from __future__ import annotations

from collections.abc import Callable

import chess

from models.evaluation import Evaluator
from models.search_config import SearchConfig
from pipeline.config_errors import ConfigError
from pipeline.selfplay.adjudication import Adjudicator
from pipeline.selfplay.config import SelfPlayConfig
from pipeline.selfplay.native import count_native, play_native
from pipeline.selfplay.python_games import PythonSelfPlay
from pipeline.selfplay.records import GameRecord, NativeGameRecord, SelfPlayStats, final_position

__all__ = ["SelfPlayWorker"]


class SelfPlayWorker:
    """Plays self-play games with one evaluator, many games per batch.

    Args:
        evaluator: the network (:class:`~models.net_evaluator.NetEvaluator`),
            or any evaluator with ``evaluate_batch`` (native backend) or
            ``evaluate`` (python backend); its ``policy_encoding`` attribute
            (default ``az4672``) names the policy indices the native core sends.
        search: search parameters of a full search (``backend`` picks the core).
        selfplay: self-play parameters.
        start_fens: start positions to draw from (default: the standard one).
    """

    def __init__(
        self,
        evaluator: Evaluator,
        search: SearchConfig,
        selfplay: SelfPlayConfig,
        start_fens: list[str] | None = None,
    ) -> None:
        self.evaluator = evaluator
        self.search = search
        self.selfplay = selfplay
        self.start_fens = start_fens or [chess.STARTING_FEN]
        self.adjudicator = Adjudicator(selfplay)  # checks Stockfish's path before any game
        self.stats = SelfPlayStats()
        self.native_stats: dict[str, float] = {}
        """The native driver's counters of the last :meth:`play` (eval/wait/wall seconds too)."""

    def play(
        self,
        games: int,
        seed: int,
        id_prefix: str = "game",
        on_move: Callable[[], None] | None = None,
    ) -> list[GameRecord]:
        """Play ``games`` games (at most ``games_per_task`` at a time) and
        return their records in id order.  The same ``seed`` gives the same
        games for a deterministic evaluator (and the same backend).

        Native backend: ``selfplay.search_threads`` C++ threads, two lanes
        (overlapped as :func:`~pipeline.selfplay.native.native_overlap`
        says); ``on_move`` is called for each move of a game when the game
        ends.  Python backend: with ``selfplay.overlap_inference``
        the games form two lanes: while the network evaluates one lane's
        leaves in a background thread (torch releases the GIL), the search
        delivers and collects the other's; ``on_move`` follows every move.
        """
        if games < 0:
            raise ConfigError(f"games must be >= 0, got {games}")
        if self.search.uses_native(self.evaluator):
            records = self._play_native(games, seed, id_prefix, on_move)
        else:
            records = self._play_python(games, seed, id_prefix, on_move)
        self._adjudicate(records)
        return records

    def _adjudicate(self, records: list[GameRecord]) -> None:
        """Score the games that reached ``max_plies`` with the adjudication in
        force (``selfplay.adjudicate_*``, :mod:`pipeline.selfplay.adjudication`): their
        result and termination, hence the z of their rows, change."""
        if not self.adjudicator.enabled:
            return
        try:
            for record in records:
                if record.termination != "max_plies" or record.num_plies == 0:
                    continue
                verdict = self.adjudicator.adjudicate(final_position(record))
                if verdict is None:
                    continue
                record.result, record.termination = verdict
                if isinstance(record, NativeGameRecord):
                    record.native.result, record.native.termination = verdict
                self.stats.adjudicated += 1
        finally:
            self.adjudicator.close()

    def _play_native(
        self, games: int, seed: int, id_prefix: str, on_move: Callable[[], None] | None
    ) -> list[GameRecord]:
        """:meth:`play` on the native core (``search.backend: native``)."""
        if games == 0:
            return []
        records, self.native_stats = play_native(
            self.evaluator, self.search, self.selfplay, self.start_fens, games, seed, id_prefix, on_move
        )
        count_native(self.stats, self.native_stats)
        return records

    def _play_python(
        self, games: int, seed: int, id_prefix: str, on_move: Callable[[], None] | None
    ) -> list[GameRecord]:
        """:meth:`play` on the python reference search (``search.backend: python``)."""
        backend = PythonSelfPlay(self.evaluator, self.search, self.selfplay, self.start_fens, self.stats)
        return backend.play(games, seed, id_prefix, on_move)
