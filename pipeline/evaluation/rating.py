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
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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
    played: tuple[LevelResult, ...] = ()  # every match in the order played (a level may repeat)

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
         on_level: Callable[[LevelResult], None] | None = None, *, width: float = 0.0,
         max_games: int = 0) -> Rating:  # fmt: skip
    """Bisect over ``levels`` (weakest first) playing at most ``max_levels``
    of them, then, while the 95% interval is wider than ± ``width`` Elo and
    fewer than ``max_games`` games were played, one more match against the
    level nearest the rating so far (:func:`refine`); one rating is fitted
    to every game.  ``width`` 0: the bisection alone."""
    if max_levels < 1:
        raise RatingError(f"max_levels must be >= 1, got {max_levels}")
    if width < 0 or max_games < 0:
        raise RatingError(f"width and max_games must be >= 0, got {width!r} and {max_games!r}")
    ordered = [level.rating for level in levels]
    if ordered != sorted(ordered):
        raise RatingError("the ladder's levels must come weakest first")
    bracket = Bracket.over(len(levels))
    results: list[LevelResult] = []
    while not bracket.done and len(results) < max_levels:
        index = bracket.middle()
        result = _played(play, levels[index])
        results.append(result)
        if on_level is not None:
            on_level(result)
        bracket = bracket.after(index, result.score)
    if width > 0:
        refine(levels, play, results, width, max_games, on_level)
    return Rating(fit_rating(_games(results)), merge_results(results), tuple(results))


def refine(levels: Sequence[Level], play: PlayLevel, results: list[LevelResult], width: float, max_games: int,
           on_level: Callable[[LevelResult], None] | None = None) -> None:  # fmt: skip
    """More matches at the level nearest the current rating (where a game
    says the most about it) until the interval is within ± ``width`` or the
    next match would pass ``max_games`` games; appends to ``results``."""
    while True:
        fit = fit_rating(_games(results))
        played = sum(result.games for result in results)
        per_match = max(result.games for result in results)
        if half_width(fit) <= width or played + per_match > max_games:
            return
        level = min(levels, key=lambda level: abs(level.rating - fit.rating))
        result = _played(play, level)
        results.append(result)
        if on_level is not None:
            on_level(result)


def half_width(fit: RatingFit) -> float:
    """Half the width of the fit's 95% interval."""
    return (fit.high - fit.low) / 2


def _played(play: PlayLevel, level: Level) -> LevelResult:
    result = play(level)
    if result.games == 0:
        raise RatingError(f"every game against {level.name} was aborted ({result.aborted})")
    return result


def _games(results: Sequence[LevelResult]) -> list[GameVsLevel]:
    return [game for result in results for game in result.games_vs()]


def merge_results(results: Sequence[LevelResult]) -> tuple[LevelResult, ...]:
    """The matches summed per level, in the order each level was first played."""
    merged: dict[str, LevelResult] = {}
    for result in results:
        seen = merged.get(result.level.name)
        merged[result.level.name] = result if seen is None else LevelResult(
            seen.level, seen.wins + result.wins, seen.draws + result.draws, seen.losses + result.losses,
            seen.aborted + result.aborted)  # fmt: skip
    return tuple(merged.values())


def replay(results: Sequence[LevelResult], play: PlayLevel,
           on_level: Callable[[LevelResult], None] | None = None) -> Rating:  # fmt: skip
    """Another player's rating from the same levels with as many games each
    as ``results`` (:func:`compare`'s second net)."""
    matches: list[LevelResult] = []
    for result in results:
        match = _played(play, result.level)
        matches.append(match)
        if on_level is not None:
            on_level(match)
    return Rating(fit_rating(_games(matches)), merge_results(matches), tuple(matches))


@dataclass(frozen=True)
class Difference:
    """Elo of net A over net B rated on the same levels, with a 95% interval.

    Both nets played the same levels with the same games each, so the levels'
    own errors move both ratings alike and cancel in the difference: its
    interval combines the two fits' game-only intervals (``stat_low`` /
    ``stat_high``), the lower side of one with the upper side of the other,
    in quadrature."""

    elo: float
    low: float
    high: float

    @classmethod
    def of(cls, a: RatingFit, b: RatingFit) -> Difference:
        elo = a.rating - b.rating
        down = math.hypot(a.rating - a.stat_low, b.stat_high - b.rating)
        up = math.hypot(a.stat_high - a.rating, b.rating - b.stat_low)
        return cls(elo, elo - down, elo + up)

    def line(self, a: str, b: str, games: int) -> str:
        return (f"difference: {a} - {b} = {self.elo:+.0f} [{self.low:+.0f}, {self.high:+.0f}] Elo "
                f"(the same levels, {games} games each)")  # fmt: skip

    def as_dict(self) -> dict[str, float]:
        return {"elo": round(self.elo, 1), "low": round(self.low, 1), "high": round(self.high, 1)}


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
        width: after the bisection, more games at the level nearest the
            rating until its 95% interval is within ± this many Elo (0: the
            bisection alone; :func:`refine`).
        max_games: ... but at most this many games in all.
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
    width: float = 0.0
    max_games: int = 0

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
    then the bisection (and :func:`refine` with ``request.width``);
    ``on_event`` gets one line per chain link and per level played."""
    levels = request_ladder(request, on_event)
    games: list[GameOutcome] = []
    with PlayerPool(request.context, request.seed) as pool:
        play_level = level_player(pool, request, request.player, games)
        rating = rate(levels.levels, play_level, request.max_levels, on_level=lambda r: on_event(level_line(r)),
                      width=request.width, max_games=request.max_games)  # fmt: skip
    return RateReport(request, rating, levels, games)


def rate_pair(request: RateRequest, other: str,
              on_event: Callable[[str], None] = log.info) -> tuple[RateReport, RateReport, Difference]:  # fmt: skip
    """``request.checkpoint`` rated as :func:`rate_checkpoint` rates it, then
    ``other`` on the same levels with the same games each (the same openings
    and seeds), and the difference of the two with its own interval."""
    first = rate_checkpoint(request, on_event)
    second_request = replace(request, checkpoint=other)
    games: list[GameOutcome] = []
    on_event(f"rating {second_request.player} on the same levels")
    with PlayerPool(request.context, request.seed) as pool:
        play_level = level_player(pool, second_request, second_request.player, games)
        rating = replay(first.rating.played, play_level, on_level=lambda r: on_event(level_line(r)))
    second = RateReport(second_request, rating, first.ladder, games)
    return first, second, Difference.of(first.rating.fit, second.rating.fit)


def request_ladder(request: RateRequest, on_event: Callable[[str], None]) -> Ladder:
    """The request's ladder: cached, or measured now (and cached)."""
    path = find_stockfish(request.context.stockfish_path)
    engine = engine_info(path, request.context.engine_timeout_s)
    with PlayerPool(request.context, CHAIN_SEED) as pool:
        def play_link(lower: str, upper: str, pairs: int) -> MatchResult:
            return play_match(pool, lower, upper, request.openings, pairs, max_plies=request.max_plies,
                              event="zerochess rate: levels")  # fmt: skip

        return ladder(engine, request.plan, request.cache, play_link, remeasure=request.remeasure,
                      on_link=lambda record: on_event(link_line(record)))  # fmt: skip


def level_player(pool: PlayerPool, request: RateRequest, player: str, games: list[GameOutcome]) -> PlayLevel:
    """Plays ``player``'s match of ``request.pairs`` pairs against a level,
    adding its games to ``games``.  A level met again starts from the book's
    next openings (the k-th match against it from opening k × pairs, round
    the book), so repeated matches are new games."""
    matches: dict[str, int] = {}

    def play_level(level: Level) -> LevelResult:
        before = matches.get(level.name, 0)
        matches[level.name] = before + 1
        shift = (before * request.pairs) % len(request.openings)
        openings = request.openings[shift:] + request.openings[:shift]
        match = play_match(pool, player, level.name, openings, request.pairs, max_plies=request.max_plies)
        games.extend(match.games)
        pairing = match.pairing
        return LevelResult(level, pairing.wins, pairing.draws, pairing.losses, pairing.aborted)

    return play_level


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
