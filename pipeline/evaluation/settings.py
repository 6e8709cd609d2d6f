"""How a tournament's games are played (:class:`MatchSettings`) and the shape
of the function that plays one (:data:`TournamentRunner`): the gate and the
learning measure (:mod:`pipeline.evaluation.gating`) take the runner as an
argument, so they run without Ray here and on Ray actors in
:func:`actors.evaluation.run_tournament`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pipeline.evaluation.tournament import TournamentReport
from pipeline.players.base import Limits
from pipeline.players.spec import PlayerContext


@dataclass(frozen=True)
class MatchSettings:
    """How games are played.

    Attributes:
        context: what building players needs (search config, Stockfish path...).
        limits: per-move limits for every player (None: each player's own).
        max_plies: a game this long is a draw.
        workers: Ray actors.
        event: PGN ``Event`` header.
        num_cpus: Ray ``num_cpus`` of each actor.
        num_gpus: Ray ``num_gpus`` of each actor.
    """

    context: PlayerContext = PlayerContext()
    limits: Limits | None = None
    max_plies: int = 400
    workers: int = 2
    event: str = "zerochess match"
    num_cpus: float = 1.0
    num_gpus: float = 0.0


TournamentRunner = Callable[..., TournamentReport]
"""Plays a round-robin (a match for two players) with
:func:`actors.evaluation.run_tournament`'s arguments: ``(players, openings,
pairs_per_pairing, settings, *, sprt=None, pgn_path=None, on_pair=None)``."""
