"""The players of ``zerochess rate`` and the matches between them, played in
this process, one game after the other.

A level below Stockfish's lowest ``UCI_Elo`` is full-strength Stockfish with
a node limit that plays a share of its moves at random: ``stockfish:nodes=1:random=0.25``
plays a uniformly random legal move with probability 0.25 and Stockfish's
move otherwise.  Node limits alone do not reach below ``UCI_Elo`` 1350: in
Stockfish 15.1 a one-node search still completes depth 1 and its quiescence
search, and ``nodes=1`` scored 18.5/20 against ``UCI_Elo`` 1350 here (and
13/20 against ``nodes=64``).  The random share is seeded, so with a
reproducible base (one thread, a node limit) the games are reproducible.
"""

from __future__ import annotations

import logging
import random
import zlib
from dataclasses import dataclass
from typing import Self

import chess

from pipeline.evaluation.match import GameOutcome, Opening, play_game
from pipeline.evaluation.tournament import PairingResult, TournamentReport, schedule
from pipeline.players.base import Limits, Player, PlayerError
from pipeline.players.spec import PlayerContext, build_player, check_player

log = logging.getLogger(__name__)

RANDOM_FIELD = "random="


class MixPlayer:
    """``base``'s moves, except a uniformly random legal move with
    probability ``share`` (its own seeded generator)."""

    def __init__(self, base: Player, share: float, seed: int) -> None:
        if not 0.0 < share <= 1.0:
            raise PlayerError(f"random share must be in (0, 1], got {share!r}")
        self.base = base
        self.share = share
        self.name = f"{base.name}:{RANDOM_FIELD}{share:g}"
        self._rng = random.Random(seed)

    def play(self, board: chess.Board, limits: Limits | None = None) -> chess.Move:
        if self._rng.random() < self.share:
            moves = sorted(board.legal_moves, key=chess.Move.uci)  # a fixed order: the same seed, the same move
            if not moves:
                raise PlayerError(f"no legal move in {board.fen()}")
            return self._rng.choice(moves)
        return self.base.play(board, limits)

    def new_game(self) -> None:
        self.base.new_game()

    def close(self) -> None:
        self.base.close()


def split_mix(name: str) -> tuple[str, float | None]:
    """A level's base spec and random share: ``stockfish:nodes=1:random=0.25``
    gives ``("stockfish:nodes=1", 0.25)``; a plain spec gives ``(spec, None)``."""
    base, sep, last = name.rpartition(":")
    if not sep or not last.startswith(RANDOM_FIELD):
        return name, None
    text = last[len(RANDOM_FIELD) :]
    try:
        share = float(text)
    except ValueError as error:
        raise PlayerError(f"level {name!r}: random share must be a number, got {text!r}") from error
    if not 0.0 < share <= 1.0:
        raise PlayerError(f"level {name!r}: random share must be in (0, 1], got {text}")
    return base, share


def mix_name(base: str, share: float) -> str:
    """The level name of ``base`` with a random ``share`` (``…:random=0.25``)."""
    return f"{base}:{RANDOM_FIELD}{share:g}"


def check_level(name: str, context: PlayerContext) -> None:
    """Validate a level's spec (no engine starts)."""
    base, _ = split_mix(name)
    check_player(base, context)


@dataclass(frozen=True)
class MatchResult:
    """A match of colour-swapped pairs: the figures from ``a``'s side and the games."""

    pairing: PairingResult
    games: list[GameOutcome]

    @property
    def score(self) -> float:
        """``a``'s points per counted game (aborted games left out); 0.5 for none."""
        games = self.pairing.games
        return (self.pairing.wins + self.pairing.draws / 2) / games if games else 0.5


class PlayerPool:
    """Players built once from their specs and kept for the next match; a
    random-share level (``…:random=P``) wraps its base.  ``close`` ends every
    engine process."""

    def __init__(self, context: PlayerContext, seed: int = 0) -> None:
        self.context = context
        self.seed = seed
        self._players: dict[tuple[str, int], Player] = {}

    def get(self, name: str, slot: int = 0) -> Player:
        """The player ``name``; ``slot`` tells apart two instances of one spec."""
        key = (name, slot)
        if key not in self._players:
            self._players[key] = self._build(name, slot)
        return self._players[key]

    def _build(self, name: str, slot: int) -> Player:
        base, share = split_mix(name)
        player = build_player(base, self.context)
        if share is None:
            return player
        seed = zlib.crc32(f"{self.seed}:{name}:{slot}".encode())
        return MixPlayer(player, share, seed)

    def close(self) -> None:
        for player in self._players.values():
            try:
                player.close()
            except Exception as error:  # noqa: BLE001 - close the others anyway
                log.warning("closing %s failed: %s", player.name, error)
        self._players.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def play_match(
    pool: PlayerPool,
    a: str,
    b: str,
    openings: list[Opening],
    pairs: int,
    *,
    max_plies: int = 400,
    event: str = "zerochess rate",
    first_opening: int = 0,
) -> MatchResult:
    """``pairs`` colour-swapped pairs of ``a`` against ``b`` in this process,
    the openings taken in the book's order from ``first_opening``."""
    if pairs < 1:
        raise PlayerError(f"a match needs at least one pair, got {pairs}")
    book = openings[first_opening % len(openings) :] + openings[: first_opening % len(openings)]
    report = TournamentReport([a, b])
    first, second = pool.get(a, 0), pool.get(b, 1)
    for task in schedule([a, b], book, pairs):
        outcomes = [
            play_game(white, black, task.opening, max_plies=max_plies, event=event,
                      round_label=f"{task.index + 1}.{game + 1}")
            for game, (white, black) in enumerate([(first, second), (second, first)])
        ]
        report.record(task, (first.name, second.name), outcomes)
    return MatchResult(report.pairings[(a, b)], report.games)
