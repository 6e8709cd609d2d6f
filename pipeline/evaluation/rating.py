"""A network's rating on Stockfish's ``UCI_Elo`` scale (``zerochess rate``).

1. The ladder (:mod:`pipeline.evaluation.rating_levels`): Stockfish's
   ``UCI_Elo`` levels (1350 to 2850 in Stockfish 15.1), and below them a
   chain of weaker levels measured against the lowest one, once per
   Stockfish version (cached).
2. A bisection over the ladder (:class:`~pipeline.evaluation.rating_fit.Bracket`):
   the net plays the middle level, then the middle of the half its score
   points to (above 50%: the stronger half), until the bracket closes or
   ``max_levels`` levels were played; each level a match of colour-swapped
   pairs from the opening book.
3. One maximum-likelihood rating from all those games, the levels' ratings
   held fixed, with a 95% interval that also carries the measured levels'
   errors (:func:`~pipeline.evaluation.rating_fit.fit_rating`).

The games are played in this process, one after the other
(:mod:`pipeline.evaluation.rating_players`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.evaluation.match import GameOutcome, Opening
from pipeline.evaluation.rating_fit import Bracket, GameVsLevel, Level, RatingFit, fit_rating
from pipeline.evaluation.rating_levels import (
    Ladder,
    LevelPlan,
    default_cache_path,
    engine_info,
    ladder,
)
from pipeline.evaluation.rating_players import MatchResult, PlayerPool, play_match
from pipeline.players.spec import PlayerContext
from pipeline.players.stockfish import find_stockfish

log = logging.getLogger(__name__)

SCALE = "Stockfish's UCI_Elo scale"
CHAIN_SEED = 0
"""Seed of the chain levels' random moves while the chain is measured (the
rating's own games use the request's seed)."""


class RatingError(ValueError):
    """A rating could not be made; the message says which level or value."""


@dataclass(frozen=True)
class LevelResult:
    """The rated player's games against one level (its side of the score)."""

    level: Level
    wins: int
    draws: int
    losses: int
    aborted: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """Points per counted game; 0.5 when none counted."""
        return (self.wins + self.draws / 2) / self.games if self.games else 0.5

    def games_vs(self) -> list[GameVsLevel]:
        return ([GameVsLevel(self.level, 1.0)] * self.wins + [GameVsLevel(self.level, 0.5)] * self.draws
                + [GameVsLevel(self.level, 0.0)] * self.losses)  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {**self.level.as_dict(), "games": self.games, "wins": self.wins, "draws": self.draws,
                "losses": self.losses, "aborted": self.aborted, "score": round(self.score, 4)}  # fmt: skip


def level_label(level: Level) -> str:
    """A level as the summary names it: its spec without ``stockfish:``, and
    for a measured level its rating (``nodes=1:random=0.33 (1102)``)."""
    label = level.name.removeprefix("stockfish:")
    return f"{label} ({level.rating:.0f})" if level.measured else label


@dataclass(frozen=True)
class Rating:
    """The fit and the matches behind it, in the order they were played."""

    fit: RatingFit
    results: tuple[LevelResult, ...]

    def line(self) -> str:
        """``rating: R [LO, HI] on Stockfish's UCI_Elo scale (N games, levels ...)``."""
        fit = self.fit
        levels = ", ".join(level_label(result.level) for result in self.results)
        return (f"rating: {fit.rating:.0f} [{fit.low:.0f}, {fit.high:.0f}] on {SCALE} "
                f"({fit.games} games, levels {levels})")  # fmt: skip

    def caveat(self) -> str | None:
        """A note when the figure is only a bound (every game lost, or won)."""
        if not self.fit.one_sided:
            return None
        lost = self.fit.score == 0.0
        return (f"the net {'lost' if lost else 'won'} every game: the rating is only "
                f"{'an upper' if lost else 'a lower'} bound")  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        fit = self.fit
        return {"rating": round(fit.rating, 1), "low": round(fit.low, 1), "high": round(fit.high, 1),
                "games": fit.games, "score": round(fit.score, 4), "stat_low": round(fit.stat_low, 1),
                "stat_high": round(fit.stat_high, 1), "levels": [r.as_dict() for r in self.results]}  # fmt: skip


PlayLevel = Callable[[Level], LevelResult]
"""Plays the rated player's match against one level."""


def rate(levels: Sequence[Level], play: PlayLevel, max_levels: int,
         on_level: Callable[[LevelResult], None] | None = None) -> Rating:  # fmt: skip
    """Bisect over ``levels`` (weakest first) playing at most ``max_levels``
    of them, then fit one rating to every game."""
    if max_levels < 1:
        raise RatingError(f"max_levels must be >= 1, got {max_levels}")
    ordered = [level.rating for level in levels]
    if ordered != sorted(ordered):
        raise RatingError("the ladder's levels must come weakest first")
    bracket = Bracket.over(len(levels))
    results: list[LevelResult] = []
    while not bracket.done and len(results) < max_levels:
        index = bracket.middle()
        result = play(levels[index])
        if result.games == 0:
            raise RatingError(f"every game against {levels[index].name} was aborted ({result.aborted})")
        results.append(result)
        if on_level is not None:
            on_level(result)
        bracket = bracket.after(index, result.score)
    games = [game for result in results for game in result.games_vs()]
    return Rating(fit_rating(games), tuple(results))


# ------------------------------------------------------------------ a checkpoint


@dataclass(frozen=True)
class RateRequest:
    """What ``zerochess rate`` was asked.

    Attributes:
        checkpoint: the network file.
        simulations: the network's search simulations a move.
        games: games against each level visited (colour-swapped pairs: rounded up to even).
        max_levels: levels visited at most.
        openings: the book the games start from.
        context: how players are built (search settings, Stockfish path, device).
        max_plies: a longer game is a draw.
        plan: how the ladder is made (and the chain measured).
        cache: the levels cache file.
        remeasure: measure the chain again even if cached.
        seed: seed of the chain levels' random moves in the rating's games.
        book: the opening book's path (for the record).
    """

    checkpoint: str
    simulations: int
    games: int
    max_levels: int
    openings: list[Opening]
    context: PlayerContext
    max_plies: int = 400
    plan: LevelPlan = field(default_factory=LevelPlan)
    cache: Path = field(default_factory=default_cache_path)
    remeasure: bool = False
    seed: int = 0
    book: str = ""

    @property
    def player(self) -> str:
        return f"net:{self.checkpoint}:sims={self.simulations}"

    @property
    def pairs(self) -> int:
        return max(1, -(-self.games // 2))


@dataclass
class RateReport:
    """A finished rating: the figure, the ladder, every game."""

    request: RateRequest
    rating: Rating
    ladder: Ladder
    games: list[GameOutcome]

    def as_dict(self) -> dict[str, Any]:
        engine = self.ladder.engine
        return {"checkpoint": self.request.checkpoint, "player": self.request.player, "scale": SCALE,
                **self.rating.as_dict(), "stockfish": engine.name, "stockfish_path": engine.path,
                "anchor": self.ladder.anchor, "anchor_elo": engine.elo_min,
                "chain_measured_now": self.ladder.measured_now, "cache": str(self.request.cache),
                "ladder": [level.as_dict() for level in self.ladder.levels], "chain_links": self.ladder.links}  # fmt: skip

    def pgn(self) -> str:
        return "\n\n".join(game.pgn for game in self.games) + ("\n" if self.games else "")


def rate_checkpoint(request: RateRequest, on_event: Callable[[str], None] = log.info) -> RateReport:
    """Rate ``request.checkpoint``: the ladder (measured first if not cached),
    then the bisection; ``on_event`` gets one line per chain link and per
    level played."""
    path = find_stockfish(request.context.stockfish_path)
    engine = engine_info(path, request.context.engine_timeout_s)
    with PlayerPool(request.context, CHAIN_SEED) as pool:
        def play_link(lower: str, upper: str, pairs: int) -> MatchResult:
            return play_match(pool, lower, upper, request.openings, pairs, max_plies=request.max_plies,
                              event="zerochess rate: levels")  # fmt: skip

        levels = ladder(engine, request.plan, request.cache, play_link, remeasure=request.remeasure,
                        on_link=lambda record: on_event(link_line(record)))  # fmt: skip
    games: list[GameOutcome] = []
    with PlayerPool(request.context, request.seed) as pool:
        def play_level(level: Level) -> LevelResult:
            match = play_match(pool, request.player, level.name, request.openings, request.pairs,
                               max_plies=request.max_plies)  # fmt: skip
            games.extend(match.games)
            pairing = match.pairing
            return LevelResult(level, pairing.wins, pairing.draws, pairing.losses, pairing.aborted)

        rating = rate(levels.levels, play_level, request.max_levels, on_level=lambda r: on_event(level_line(r)))
    return RateReport(request, rating, levels, games)


def link_line(record: dict[str, Any]) -> str:
    """A measured chain link as a progress line."""
    games = record["wins"] + record["draws"] + record["losses"]
    points = record["wins"] + record["draws"] / 2
    return (f"level {record['lower']} vs {record['upper']}: {points:g}/{games}, "
            f"{record['elo']:+.0f} [{record['elo_low']:+.0f}, {record['elo_high']:+.0f}] Elo")  # fmt: skip


def level_line(result: LevelResult) -> str:
    """A level the net played as a progress line."""
    level = result.level
    rated = f"{level.rating:.0f} [{level.low:.0f}, {level.high:.0f}]" if level.measured else f"{level.rating:.0f}"
    return (f"level {level.name} ({rated}): score {result.score:.2f}, {result.wins + result.draws / 2:g}/{result.games}"
            f" games (+{result.wins} ={result.draws} -{result.losses})")  # fmt: skip
