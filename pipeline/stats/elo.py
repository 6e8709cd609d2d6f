"""Elo and score, and match results as Elo estimates with confidence intervals
(trinomial over games, pentanomial over colour-swapped pairs); the argument
checks every statistic shares.  The model and the clamps: :mod:`pipeline.stats`.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

__all__ = [
    "PAIR_GAME_SCORES",
    "Estimate",
    "StatsError",
    "check_count",
    "confidence_z",
    "elo_to_score",
    "estimate_from_moments",
    "game_score",
    "pentanomial_counts",
    "pentanomial_estimate",
    "pentanomial_from_pairs",
    "pentanomial_moments",
    "score_to_elo",
    "trinomial_counts",
    "trinomial_estimate",
    "trinomial_moments",
]

PAIR_GAME_SCORES: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
_GAME_SCORES = (0.0, 0.5, 1.0)
_STANDARD_NORMAL = NormalDist()


class StatsError(ValueError):
    """A bad argument to a statistics function; the message names the value."""


# --------------------------------------------------------------------- Elo <-> score


def score_to_elo(score: float) -> float:
    """Elo difference whose expected score is ``score``:
    elo = −400·log10(1/s − 1) = 400·log10(s/(1 − s)).

    Exact at the ends: 0 → −inf, 1 → +inf.  Raises :class:`StatsError` for a
    score outside [0, 1] or NaN."""
    s = float(score)
    if not 0.0 <= s <= 1.0:  # also rejects NaN
        raise StatsError(f"score must lie in [0, 1], got {score!r}")
    if s == 0.0:
        return -math.inf
    if s == 1.0:
        return math.inf
    return 400.0 * math.log10(s / (1.0 - s))


def elo_to_score(elo: float) -> float:
    """Expected score of a player ``elo`` points stronger:
    s = 1/(1 + 10^(−elo/400)); ±inf map to 1 and 0.  Never overflows."""
    e = float(elo)
    if math.isnan(e):
        raise StatsError(f"elo must be a number, got {elo!r}")
    if e >= 0.0:
        return 1.0 / (1.0 + 10.0 ** (-e / 400.0))
    t = 10.0 ** (e / 400.0)  # in (0, 1): the same formula rearranged, no overflow
    return t / (1.0 + t)


# ----------------------------------------------------------------------- validation


def check_count(value: object, name: str) -> int:
    """A non-negative integer count, or StatsError naming it."""
    try:
        n = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise StatsError(f"{name} must be an integer count, got {value!r}") from None
    if isinstance(value, bool) or n < 0:
        raise StatsError(f"{name} must be a non-negative integer, got {value!r}")
    return n


def trinomial_counts(wins: int, draws: int, losses: int) -> tuple[int, int, int]:
    return check_count(wins, "wins"), check_count(draws, "draws"), check_count(losses, "losses")


def pentanomial_counts(counts: Sequence[int]) -> tuple[int, ...]:
    if isinstance(counts, (str, bytes)) or len(counts) != 5:
        raise StatsError(f"pentanomial counts must be 5 integers (LL..WW), got {counts!r}")
    return tuple(check_count(c, f"pentanomial count [{i}]") for i, c in enumerate(counts))


def confidence_z(confidence: float) -> float:
    """Two-sided normal quantile z = Φ⁻¹((1 + c)/2) (1.959964 for c = 0.95)."""
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise StatsError(f"confidence must lie in (0, 1), got {confidence!r}")
    return _STANDARD_NORMAL.inv_cdf((1.0 + c) / 2.0)


def game_score(value: float, name: str = "result") -> float:
    """A single game's score from the candidate's view: 0, ½ or 1."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise StatsError(f"{name} must be 0, 0.5 or 1, got {value!r}") from None
    if v not in _GAME_SCORES:
        raise StatsError(f"{name} must be 0, 0.5 or 1, got {value!r}")
    return v


# ------------------------------------------------------------------------ estimates


@dataclass(frozen=True)
class Estimate:
    """A match result as an Elo estimate with a confidence interval.

    ``score`` is the mean points per game (0..1); ``elo = score_to_elo(score)``
    (clamped, see the module notes); ``elo_low``/``elo_high`` are the ends of
    the ``confidence`` interval on the score mapped to Elo (asymmetric in
    Elo); ``los`` is the likelihood of superiority Φ((score − ½)/se)."""

    games: int
    score: float
    elo: float
    elo_low: float
    elo_high: float
    confidence: float = 0.95
    los: float | None = None

    @property
    def elo_error(self) -> float:
        """Half the interval's width, (elo_high − elo_low)/2: the "±" figure
        (the convention of cutechess-cli and fishtest)."""
        return (self.elo_high - self.elo_low) / 2.0

    def __str__(self) -> str:
        return (
            f"{self.elo:+.1f} ± {self.elo_error:.1f} Elo "
            f"(score {100.0 * self.score:.1f}%, {self.games} games)"
        )


def estimate_from_moments(
    mean: float, variance: float, n: int, games: int, confidence: float
) -> Estimate:
    """Shared tail of both estimates.  ``mean`` and ``variance`` are the per-game
    score mean and the variance of one observation's score over the ``n``
    observations; se = max(sqrt(σ²/n), sqrt(ε(1 − ε)/n)), ε = 1/(2(n + 1));
    score interval mean ± z·se, each end clamped into [ε, 1 − ε], then mapped
    through :func:`score_to_elo`."""
    z = confidence_z(confidence)
    eps = 1.0 / (2.0 * (n + 1))
    se = max(math.sqrt(variance / n), math.sqrt(eps * (1.0 - eps) / n))

    def elo_of(s: float) -> float:
        return score_to_elo(min(max(s, eps), 1.0 - eps))

    return Estimate(
        games=games,
        score=mean,
        elo=elo_of(mean),
        elo_low=elo_of(mean - z * se),
        elo_high=elo_of(mean + z * se),
        confidence=float(confidence),
        los=_STANDARD_NORMAL.cdf((mean - 0.5) / se),
    )


def trinomial_moments(wins: int, draws: int, losses: int) -> tuple[float, float]:
    """s = (W + D/2)/N and σ² = (W(1 − s)² + D(½ − s)² + L·s²)/N."""
    n = wins + draws + losses
    s = (wins + 0.5 * draws) / n
    var = (wins * (1.0 - s) ** 2 + draws * (0.5 - s) ** 2 + losses * s**2) / n
    return s, var


def pentanomial_moments(counts: Sequence[int]) -> tuple[float, float]:
    """Per-pair per-game score x_k = k/4 (k = pair points × 2); with P pairs
    s = Σ c_k·x_k / P and σ² = Σ c_k·(x_k − s)² / P (variance over pairs)."""
    pairs = sum(counts)
    s = sum(c * x for c, x in zip(counts, PAIR_GAME_SCORES)) / pairs
    var = sum(c * (x - s) ** 2 for c, x in zip(counts, PAIR_GAME_SCORES)) / pairs
    return s, var


def trinomial_estimate(wins: int, draws: int, losses: int, confidence: float = 0.95) -> Estimate:
    """Elo estimate from independent games (candidate's W/D/L).

    s = (W + D/2)/N; σ² = (W(1 − s)² + D(½ − s)² + L(0 − s)²)/N per game;
    se = sqrt(σ²/N); interval s ± z·se with z = Φ⁻¹((1 + confidence)/2), both
    ends mapped through :func:`score_to_elo`.  N = 0 raises StatsError."""
    w, d, l = trinomial_counts(wins, draws, losses)
    n = w + d + l
    if n == 0:
        raise StatsError("an estimate needs at least one game, got wins=draws=losses=0")
    s, var = trinomial_moments(w, d, l)
    return estimate_from_moments(s, var, n, n, confidence)


def pentanomial_estimate(counts: Sequence[int], confidence: float = 0.95) -> Estimate:
    """Elo estimate from game pairs (same opening, colours swapped).

    ``counts`` = pairs scoring 0, ½, 1, 3/2, 2 points (LL, LD, DD or WL, WD,
    WW); per-game score of a pair x = points/2; with P pairs s = mean of x,
    σ² = variance of x over pairs, se = sqrt(σ²/P); the interval as in
    :func:`trinomial_estimate`.  ``games`` = 2P.  P = 0 raises StatsError."""
    c = pentanomial_counts(counts)
    pairs = sum(c)
    if pairs == 0:
        raise StatsError(f"an estimate needs at least one pair, got counts {list(c)}")
    s, var = pentanomial_moments(c)
    return estimate_from_moments(s, var, pairs, 2 * pairs, confidence)


def pentanomial_from_pairs(
    pair_results: Sequence[tuple[float, float]],
) -> tuple[int, int, int, int, int]:
    """Pentanomial counts from the candidate's two game scores (0, ½ or 1) of
    each pair: the pair scoring a + b points lands in class 2·(a + b)."""
    counts = [0, 0, 0, 0, 0]
    for i, pair in enumerate(pair_results):
        if len(pair) != 2:
            raise StatsError(f"pair {i} must hold two game scores, got {pair!r}")
        a = game_score(pair[0], f"pair {i} first game")
        b = game_score(pair[1], f"pair {i} second game")
        counts[round(2.0 * (a + b))] += 1
    return (counts[0], counts[1], counts[2], counts[3], counts[4])
