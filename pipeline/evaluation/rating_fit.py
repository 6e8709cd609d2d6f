"""The arithmetic of ``zerochess rate``, without engines: chaining measured
levels down from an anchor, the bisection over the ladder of levels, and one
maximum-likelihood rating of a player from all its games against levels of
known rating (:mod:`pipeline.evaluation.rating` plays the games).

Every Elo figure uses the logistic model of :mod:`pipeline.stats`:
a player ``d`` Elo stronger scores ``1/(1 + 10^(−d/400))`` on average.

Why not :func:`pipeline.stats.ratings`: it fits every player of a pool with
one anchor and a prior pulling each player toward the pool's middle; here the
levels' ratings are known (defined by Stockfish, or measured once and
cached), so the only free parameter is the rated player's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.stats import Estimate, StatsError

__all__ = [
    "Bracket",
    "ChainLink",
    "GameVsLevel",
    "Level",
    "RatingFit",
    "chain_levels",
    "fit_rating",
]

NATS_PER_ELO = math.log(10.0) / 400.0
LIKELIHOOD_DROP_95 = 3.841458820694124 / 2.0  # χ²(1) 95% quantile / 2: the likelihood-ratio interval


@dataclass(frozen=True)
class Level:
    """An opponent of known strength.

    Attributes:
        name: its player spec (``stockfish:elo=1500:nodes=50000``).
        rating: its rating on the UCI_Elo scale.
        low / high: the 95% interval of ``rating`` (both equal to it for a
            level whose rating is its definition, a ``UCI_Elo`` setting).
    """

    name: str
    rating: float
    low: float
    high: float

    @property
    def measured(self) -> bool:
        """Whether the rating is a measurement (it has an interval)."""
        return self.low < self.rating or self.high > self.rating

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "rating": round(self.rating, 1), "low": round(self.low, 1),
                "high": round(self.high, 1)}  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Level:
        level = cls(str(data["name"]), float(data["rating"]), float(data["low"]), float(data["high"]))  # type: ignore[arg-type]
        if not level.low <= level.rating <= level.high:
            raise StatsError(f"level {level.name!r}: rating {level.rating} outside [{level.low}, {level.high}]")
        return level


# --------------------------------------------------------------------------- chain


@dataclass(frozen=True)
class ChainLink:
    """A match between a level and the next stronger one of a chain.

    Attributes:
        lower / upper: the two levels' names (``upper`` is nearer the anchor).
        estimate: Elo of ``lower`` over ``upper`` (negative when weaker) with
            its 95% interval (:func:`pipeline.stats.pentanomial_estimate`).
        clamped: the score was 0 or 1, or too close to them for the games:
            ``estimate`` is only the bound of its clamp, not a measurement.
    """

    lower: str
    upper: str
    estimate: Estimate
    clamped: bool = False


def chain_levels(anchor: str, anchor_elo: float, links: Sequence[ChainLink]) -> list[Level]:
    """The levels of a chain hanging from ``anchor`` (rated ``anchor_elo``).

    ``links`` go down from the anchor: the first link's ``upper`` is the
    anchor, each next link's ``upper`` the previous link's ``lower``.  A
    level's rating is the anchor's plus the offsets of the links above it;
    the links are independent matches, so the errors of each side of the
    interval add in quadrature.  The chain stops above the first clamped link
    (the levels below it have only a bound).  Strongest level first."""
    levels: list[Level] = []
    upper, rating, down, up = anchor, float(anchor_elo), 0.0, 0.0
    for index, link in enumerate(links):
        if link.upper != upper:
            raise StatsError(f"chain link {index} ({link.lower} vs {link.upper}) does not hang from {upper!r}")
        if link.clamped:
            break
        estimate = link.estimate
        if not estimate.elo_low <= estimate.elo <= estimate.elo_high:
            raise StatsError(f"chain link {index}: elo {estimate.elo} outside its interval")
        rating += estimate.elo
        down = math.hypot(down, estimate.elo - estimate.elo_low)
        up = math.hypot(up, estimate.elo_high - estimate.elo)
        levels.append(Level(link.lower, rating, rating - down, rating + up))
        upper = link.lower
    return levels


# ----------------------------------------------------------------------- bisection


@dataclass(frozen=True)
class Bracket:
    """The indices ``lo..hi`` (inclusive) of the ladder, weakest first, where
    the rated player's 50% level may still be: a bisection over the ladder.

    Start with the whole ladder; :meth:`middle` is the level to play next;
    :meth:`after` narrows the bracket by the score there (above 50%: the
    player is stronger, look higher; below: lower; exactly 50%: found).
    The bracket closes (``done``) after at most ⌈log2(n + 1)⌉ levels."""

    lo: int
    hi: int

    @classmethod
    def over(cls, levels: int) -> Bracket:
        if levels < 1:
            raise StatsError(f"the ladder needs at least one level, got {levels}")
        return cls(0, levels - 1)

    @property
    def done(self) -> bool:
        return self.lo > self.hi

    def middle(self) -> int:
        if self.done:
            raise StatsError(f"the bracket {self.lo}..{self.hi} is closed: no level left to play")
        return (self.lo + self.hi) // 2

    def after(self, index: int, score: float) -> Bracket:
        """The bracket once level ``index`` was played with ``score`` (0..1)."""
        if not self.lo <= index <= self.hi:
            raise StatsError(f"level {index} is outside the bracket {self.lo}..{self.hi}")
        if score > 0.5:
            return Bracket(index + 1, self.hi)
        if score < 0.5:
            return Bracket(self.lo, index - 1)
        return Bracket(index + 1, index)  # exactly even: this level is the player's strength


# ---------------------------------------------------------------------------- fit


@dataclass(frozen=True)
class GameVsLevel:
    """One game of the rated player: the level it met and its score (0, ½, 1)."""

    level: Level
    score: float


@dataclass(frozen=True)
class RatingFit:
    """The rated player's rating and its 95% interval.

    Attributes:
        rating: the maximum of the posterior (the likelihood of all games,
            plus one virtual draw against the games' mean opponent, which
            keeps a player who lost or won everything finite).
        low / high: the interval: the games' likelihood-ratio interval (where
            the log posterior is within χ²(1, 95%)/2 of its maximum) widened,
            in quadrature, by the levels' own errors (each level weighted by
            its share of the games' information, the errors of chained levels
            taken as fully correlated).
        games: games counted.
        score: the player's mean score over them.
        stat_low / stat_high: the interval from the games alone.
    """

    rating: float
    low: float
    high: float
    games: int
    score: float
    stat_low: float
    stat_high: float

    @property
    def one_sided(self) -> bool:
        """Whether the player lost every game or won every game: then the
        rating rests on the virtual draw, and reads as a bound."""
        return self.score in (0.0, 1.0)


def _check_games(games: Sequence[GameVsLevel]) -> None:
    if not games:
        raise StatsError("a rating needs at least one game, got none")
    for index, game in enumerate(games):
        if not 0.0 <= game.score <= 1.0:  # also NaN
            raise StatsError(f"game {index} against {game.level.name}: score must lie in [0, 1], got {game.score!r}")


def _softplus(z: float) -> float:
    """log(1 + e^z) without overflow."""
    return max(z, 0.0) + math.log1p(math.exp(-abs(z)))


def _log_posterior(rating: float, ratings: Sequence[float], scores: Sequence[float], prior_at: float) -> float:
    """Σ s·log p + (1 − s)·log(1 − p) over the games, p the expected score
    against each opponent (log p = −softplus(−x), log(1 − p) = −softplus(x)
    with x the difference in nats), plus one virtual draw against ``prior_at``."""
    total = 0.0
    for opponent, score in zip([*ratings, prior_at], [*scores, 0.5]):
        x = (rating - opponent) * NATS_PER_ELO
        total -= score * _softplus(-x) + (1.0 - score) * _softplus(x)
    return total


def _expected(rating: float, opponent: float) -> float:
    x = (rating - opponent) * NATS_PER_ELO
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def _maximise(ratings: Sequence[float], scores: Sequence[float], prior_at: float) -> float:
    """The maximum of the (strictly concave) log posterior by Newton's method
    with step halving, in Elo."""
    rating = prior_at
    current = _log_posterior(rating, ratings, scores, prior_at)
    for _ in range(200):
        expected = [_expected(rating, r) for r in [*ratings, prior_at]]
        gradient = sum(s - p for s, p in zip([*scores, 0.5], expected)) * NATS_PER_ELO
        curvature = sum(p * (1.0 - p) for p in expected) * NATS_PER_ELO**2
        step = gradient / curvature
        scale = 1.0
        while True:
            candidate = rating + scale * step
            value = _log_posterior(candidate, ratings, scores, prior_at)
            if value >= current - 1e-12 or scale < 1e-9:
                break
            scale *= 0.5
        rating, current = candidate, value
        if abs(scale * step) < 1e-7:
            break
    return rating


def _crossing(inside: float, step: float, ratings: Sequence[float], scores: Sequence[float], prior_at: float,
              level: float) -> float:
    """Where the log posterior falls to ``level``, searching from ``inside``
    (above it) in the direction of ``step``: expand, then bisect."""
    def above(r: float) -> bool:
        return _log_posterior(r, ratings, scores, prior_at) >= level

    outside = inside + step
    while above(outside):
        inside, outside = outside, outside + 2.0 * (outside - inside)
    for _ in range(100):
        middle = (inside + outside) / 2.0
        if above(middle):
            inside = middle
        else:
            outside = middle
        if abs(outside - inside) < 1e-6:
            break
    return (inside + outside) / 2.0


def fit_rating(games: Sequence[GameVsLevel]) -> RatingFit:
    """The maximum-likelihood rating of one player from its games against
    levels of known rating, with its 95% interval (see :class:`RatingFit`).

    Model: P(win) = 1/(1 + 10^(−(R − r)/400)) against a level rated r; a
    game's score s counts as s of a win and 1 − s of a loss (a draw is half
    of each), the games independent."""
    _check_games(games)
    ratings = [game.level.rating for game in games]
    scores = [float(game.score) for game in games]
    prior_at = sum(ratings) / len(ratings)
    best = _maximise(ratings, scores, prior_at)
    floor = _log_posterior(best, ratings, scores, prior_at) - LIKELIHOOD_DROP_95
    stat_low = _crossing(best, -50.0, ratings, scores, prior_at, floor)
    stat_high = _crossing(best, 50.0, ratings, scores, prior_at, floor)
    down, up = _level_errors(games, best)
    return RatingFit(
        rating=best,
        low=best - math.hypot(best - stat_low, down),
        high=best + math.hypot(stat_high - best, up),
        games=len(games),
        score=sum(scores) / len(scores),
        stat_low=stat_low,
        stat_high=stat_high,
    )


def _level_errors(games: Sequence[GameVsLevel], rating: float) -> tuple[float, float]:
    """How far the levels' own intervals move the rating down and up.

    The fitted rating moves with a level's rating by that level's share of
    the games' Fisher information (Σ p(1 − p) over its games); the chained
    levels share most of their links, so their errors are added as fully
    correlated: the shares times each level's error, summed."""
    weights = [_expected(rating, game.level.rating) * (1.0 - _expected(rating, game.level.rating)) for game in games]
    total = sum(weights)
    down = sum(w * (game.level.rating - game.level.low) for w, game in zip(weights, games)) / total
    up = sum(w * (game.level.high - game.level.rating) for w, game in zip(weights, games)) / total
    return down, up
