"""The sequential probability ratio test (SPRT) of a candidate against a
baseline: Wald's bounds, the GSPRT log-likelihood ratio from games or pairs,
and :class:`Sprt`, a running test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pipeline.stats.elo import (
    Estimate,
    StatsError,
    elo_to_score,
    game_score,
    pentanomial_counts,
    pentanomial_estimate,
    pentanomial_from_pairs,
    pentanomial_moments,
    trinomial_counts,
    trinomial_estimate,
    trinomial_moments,
)

__all__ = [
    "Decision",
    "Sprt",
    "SprtConfig",
    "sprt_bounds",
    "sprt_decision",
    "sprt_llr_pentanomial",
    "sprt_llr_trinomial",
]

Decision = Literal["H1", "H0", "continue"]


@dataclass(frozen=True)
class SprtConfig:
    """SPRT of H0: Elo ≤ elo0 against H1: Elo ≥ elo1 (logistic Elo), with
    false-positive rate ``alpha`` (accepting H1 when H0 holds) and
    false-negative rate ``beta``.  Requires elo1 > elo0, 0 < α, β < 1 and
    α + β < 1 (otherwise the bounds would not straddle 0)."""

    elo0: float = 0.0
    elo1: float = 10.0
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        for name in ("elo0", "elo1"):
            if not math.isfinite(getattr(self, name)):
                raise StatsError(f"{name} must be a finite number, got {getattr(self, name)!r}")
        if not self.elo1 > self.elo0:
            raise StatsError(
                f"elo1 must be greater than elo0, got elo0={self.elo0!r}, elo1={self.elo1!r}"
            )
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise StatsError(f"{name} must lie in (0, 1), got {value!r}")
        if self.alpha + self.beta >= 1.0:
            raise StatsError(
                f"alpha + beta must be below 1, got alpha={self.alpha!r}, beta={self.beta!r}"
            )

    @property
    def scores(self) -> tuple[float, float]:
        """(s0, s1): the expected per-game scores at elo0 and elo1."""
        return elo_to_score(self.elo0), elo_to_score(self.elo1)


def sprt_bounds(config: SprtConfig) -> tuple[float, float]:
    """Wald's bounds (lower, upper) = (ln(β/(1 − α)), ln((1 − β)/α));
    ±ln 19 ≈ ±2.944 for α = β = 0.05."""
    a, b = config.alpha, config.beta
    return math.log(b / (1.0 - a)), math.log((1.0 - b) / a)


def _llr_normal(n: int, mean: float, variance: float, config: SprtConfig) -> float:
    """GSPRT normal approximation: the mean of n observations is taken as
    normal with variance σ̂²/n, so

        LLR = ((ŝ − s0)² − (ŝ − s1)²) / (2σ̂²/n) = n·(s1 − s0)·(2ŝ − s0 − s1) / (2σ̂²).

    σ̂² is floored at ε(1 − ε), ε = 1/(2(n + 1)) (the variance floor of
    :func:`~pipeline.stats.elo.estimate_from_moments`: as if one more draw
    had been played), so a match of identical results (100 wins in a row)
    still moves the LLR and decides instead of staying at 0 forever.  0 when there are no games."""
    if n == 0:
        return 0.0
    eps = 1.0 / (2.0 * (n + 1))
    variance = max(variance, eps * (1.0 - eps))
    s0, s1 = config.scores
    return n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * variance)


def sprt_llr_trinomial(wins: int, draws: int, losses: int, config: SprtConfig) -> float:
    """Approximate GSPRT log-likelihood ratio from independent games:
    N·(s1 − s0)(2ŝ − s0 − s1)/(2σ̂²) with ŝ, σ̂² the per-game mean and variance
    of :func:`trinomial_estimate` and s0, s1 = elo_to_score(elo0), (elo1).
    Returns 0 without games."""
    w, d, l = trinomial_counts(wins, draws, losses)
    if w + d + l == 0:
        return 0.0
    s, var = trinomial_moments(w, d, l)
    return _llr_normal(w + d + l, s, var, config)


def sprt_llr_pentanomial(counts: Sequence[int], config: SprtConfig) -> float:
    """Approximate GSPRT log-likelihood ratio from game pairs:
    P·(s1 − s0)(2ŝ − s0 − s1)/(2σ̂²) over P pairs, ŝ and σ̂² the mean and
    variance of the pair's per-game score (pair points/2), s0, s1 the per-game
    expected scores.  In pair-point units (s0, s1, ŝ doubled, σ̂² ×4) the value
    is identical.  Returns 0 without games."""
    c = pentanomial_counts(counts)
    pairs = sum(c)
    if pairs == 0:
        return 0.0
    s, var = pentanomial_moments(c)
    return _llr_normal(pairs, s, var, config)


def sprt_decision(llr: float, config: SprtConfig) -> Decision:
    """The verdict for ``llr``: "H1" at or above the upper bound, "H0" at or
    below the lower bound, otherwise "continue"."""
    lower, upper = sprt_bounds(config)
    if llr >= upper:
        return "H1"
    if llr <= lower:
        return "H0"
    return "continue"


class Sprt:
    """A running SPRT for a candidate against a baseline.

    Feed single games with :meth:`update` or colour-swapped pairs with
    :meth:`update_pair` (scores from the candidate's view).  While every game
    has come in pairs the LLR and estimate are pentanomial; once any single
    game is recorded they are trinomial over all games.  :attr:`decision` is
    sticky: the first bound the LLR reaches decides the test (Wald's stopping
    rule), games recorded afterwards are counted but do not change it."""

    def __init__(self, config: SprtConfig | None = None) -> None:
        self.config = config if config is not None else SprtConfig()
        self._wdl = [0, 0, 0]
        self._pairs = [0, 0, 0, 0, 0]
        self._singles = 0
        self._decision: Decision = "continue"

    def update(self, result_for_candidate: float) -> Decision:
        """Record one game (1 win, ½ draw, 0 loss); returns the decision."""
        self._count_game(game_score(result_for_candidate, "result_for_candidate"))
        self._singles += 1
        return self._settle()

    def update_pair(self, a: float, b: float) -> Decision:
        """Record a colour-swapped pair with the candidate's scores a and b."""
        counts = pentanomial_from_pairs([(a, b)])
        self._count_game(float(a))
        self._count_game(float(b))
        self._pairs = [p + c for p, c in zip(self._pairs, counts)]
        return self._settle()

    def _count_game(self, score: float) -> None:
        self._wdl[{1.0: 0, 0.5: 1, 0.0: 2}[score]] += 1

    def _settle(self) -> Decision:
        if self._decision == "continue":
            self._decision = sprt_decision(self.llr, self.config)
        return self._decision

    @property
    def paired(self) -> bool:
        """True while every recorded game came in a pair (and there is one)."""
        return self._singles == 0 and sum(self._pairs) > 0

    @property
    def trinomial(self) -> tuple[int, int, int]:
        """(wins, draws, losses) over all recorded games."""
        return (self._wdl[0], self._wdl[1], self._wdl[2])

    @property
    def pentanomial(self) -> tuple[int, int, int, int, int]:
        """Pair counts (LL, LD, DD|WL, WD, WW) over the recorded pairs."""
        p = self._pairs
        return (p[0], p[1], p[2], p[3], p[4])

    @property
    def games(self) -> int:
        return sum(self._wdl)

    @property
    def llr(self) -> float:
        """Current LLR (pentanomial when :attr:`paired`, else trinomial)."""
        if self.paired:
            return sprt_llr_pentanomial(self.pentanomial, self.config)
        return sprt_llr_trinomial(*self.trinomial, self.config)

    @property
    def bounds(self) -> tuple[float, float]:
        return sprt_bounds(self.config)

    @property
    def decision(self) -> Decision:
        """The verdict, "H1", "H0" or "continue"; sticky once a bound was reached."""
        return self._decision

    def estimate(self, confidence: float = 0.95) -> Estimate:
        """Elo estimate of the games so far (pentanomial when :attr:`paired`)."""
        if self.paired:
            return pentanomial_estimate(self.pentanomial, confidence)
        return trinomial_estimate(*self.trinomial, confidence)

    def __repr__(self) -> str:
        lower, upper = self.bounds
        return (
            f"Sprt(llr={self.llr:.3f} [{lower:.3f}, {upper:.3f}], decision={self.decision}, "
            f"W/D/L={self.trinomial}, pairs={self.pentanomial})"
        )
