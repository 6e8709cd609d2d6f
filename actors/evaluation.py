"""Tournaments on Ray: game pairs spread over a pool of match actors.

Each actor builds the players it is asked for once (a Stockfish process, a
network) and plays whole pairs of games (same opening, colours swapped).  The
driver keeps at most two pairs per actor in flight, collects results as they
come (``ray.wait``) but records them in schedule order (:class:`InOrder`, so
that an SPRT's verdict does not depend on which actor finished first), writes
the PGN file atomically after every recorded pair, stops submitting once an
SPRT decides (pairs still in flight then are not counted), and closes every
player (so no engine process outlives the tournament) before killing the
actors.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import ray

from pipeline.atomic import atomic_write
from pipeline.evaluation.match import GameOutcome, Opening, play_game
from pipeline.evaluation.settings import MatchSettings
from pipeline.evaluation.tournament import InOrder, PairTask, TournamentReport, schedule
from pipeline.players.base import Player
from pipeline.players.spec import build_player
from pipeline.stats import Sprt, SprtConfig

log = logging.getLogger(__name__)

PAIRS_IN_FLIGHT_PER_ACTOR = 2


class MatchActor:
    """Plays game pairs between players built from specs (wrapped by ``ray.remote``)."""

    def __init__(self, settings: MatchSettings) -> None:
        self.settings = settings
        self._players: dict[tuple[str, int], Player] = {}

    def _player(self, spec: str, slot: int) -> Player:
        key = (spec, slot)  # one instance per side of a pairing: no shared search tree
        if key not in self._players:
            self._players[key] = build_player(spec, self.settings.context)
        return self._players[key]

    def play_pair(self, task: PairTask) -> tuple[tuple[str, str], list[GameOutcome]]:
        a, b = self._player(task.a, 0), self._player(task.b, 1)
        games = [
            play_game(first, second, task.opening, limits=self.settings.limits, max_plies=self.settings.max_plies,
                      event=self.settings.event, round_label=f"{task.index + 1}.{game + 1}")  # fmt: skip
            for game, (first, second) in enumerate([(a, b), (b, a)])
        ]
        return (a.name, b.name), games

    def close(self) -> int:
        """Close every player (engine processes end); returns how many."""
        for player in self._players.values():
            player.close()
        count = len(self._players)
        self._players.clear()
        return count


def run_tournament(
    players: list[str],
    openings: list[Opening],
    pairs_per_pairing: int,
    settings: MatchSettings,
    *,
    sprt: SprtConfig | None = None,
    pgn_path: str | None = None,
    on_pair: Callable[[TournamentReport], None] | None = None,
) -> TournamentReport:
    """Play a round-robin (a match for two players) on Ray actors.

    With ``sprt`` (two players only) the match stops once the test decides.
    Ray must be initialised.
    """
    if sprt is not None and len(players) != 2:
        raise ValueError(f"SPRT needs exactly two players, got {len(players)}")
    tasks = schedule(players, openings, pairs_per_pairing)
    report = TournamentReport(players, sprt=Sprt(sprt) if sprt is not None else None)
    actor_class = ray.remote(num_cpus=settings.num_cpus, num_gpus=settings.num_gpus, max_restarts=1,
                             max_task_retries=1)(MatchActor)  # fmt: skip
    actors = [actor_class.remote(settings) for _ in range(min(settings.workers, len(tasks)))]
    try:
        _drain(actors, tasks, report, pgn_path, on_pair)
    finally:
        _close(actors)
    return report


def _drain(
    actors: list[Any],
    tasks: list[PairTask],
    report: TournamentReport,
    pgn_path: str | None,
    on_pair: Callable[[TournamentReport], None] | None,
) -> None:
    queue = list(reversed(tasks))
    in_flight: dict[Any, tuple[Any, PairTask]] = {}
    load = {id(actor): 0 for actor in actors}
    recorder = InOrder(report)
    while queue or in_flight:
        if recorder.decided and queue:
            report.stopped_early = True
            queue.clear()
        for actor in actors:
            while queue and load[id(actor)] < PAIRS_IN_FLIGHT_PER_ACTOR:
                task = queue.pop()
                in_flight[actor.play_pair.remote(task)] = (actor, task)
                load[id(actor)] += 1
        if not in_flight:
            break
        done, _ = ray.wait(list(in_flight), num_returns=1)
        for ref in done:
            actor, task = in_flight.pop(ref)
            load[id(actor)] -= 1
            names, outcomes = ray.get(ref)
            if recorder.decided:
                report.stopped_early = True
                continue
            if recorder.add(task, names, outcomes) == 0:
                continue
            if pgn_path is not None:
                with atomic_write(pgn_path) as handle:
                    handle.write(report.pgn().encode("utf-8"))
            if on_pair is not None:
                on_pair(report)


def _close(actors: list[Any]) -> None:
    refs = [actor.close.remote() for actor in actors]
    try:
        ray.get(refs, timeout=60)
    except Exception as error:  # noqa: BLE001 - actors are killed below anyway
        log.warning("closing match actors failed: %s", error)
    for actor in actors:
        ray.kill(actor)
