"""Match statistics for evaluation and gating: Elo estimates with confidence
intervals, the sequential probability ratio test (SPRT) and round-robin ratings.

Every Elo figure uses the logistic model.  A player ``elo`` points stronger
than its opponent has the expected score (points per game, draw = ½)

    s(elo) = 1 / (1 + 10^(−elo/400)),        elo(s) = −400·log10(1/s − 1).

Score 0% and 100% (zero-variance samples)
-----------------------------------------
:func:`score_to_elo` is exact: ``score_to_elo(1.0) == +inf`` and
``score_to_elo(0.0) == −inf``.  The estimates never hand out an infinity:
with ``n`` observations (games, or pairs in the pentanomial estimate) every
score that is mapped to Elo (the point estimate and both interval ends) is
clamped into [ε, 1 − ε] with

    ε = 1 / (2·(n + 1)),

the score the sample would have with one extra drawn observation (10/10 wins
reads as 10.5/11, +530 Elo), and the standard error of the score is floored at
sqrt(ε·(1 − ε)/n), so a sample of identical results (10 wins, or 10 draws)
still gets an interval of positive width.  In ordinary samples neither the
clamp nor the floor is active (the floor bites only when the per-game standard
deviation is below about 0.7/sqrt(n)).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np

__all__ = [
    "Estimate",
    "Sprt",
    "SprtConfig",
    "StatsError",
    "elo_to_score",
    "pentanomial_estimate",
    "pentanomial_from_pairs",
    "rating_intervals",
    "ratings",
    "ratings_table",
    "score_to_elo",
    "sprt_bounds",
    "sprt_decision",
    "sprt_llr_pentanomial",
    "sprt_llr_trinomial",
    "trinomial_estimate",
]

Decision = Literal["H1", "H0", "continue"]
GameResult = tuple[str, str, float]

#: Per-game score of each pentanomial class: pair score 0, ½, 1, 3/2, 2 halved.
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


def _count(value: object, name: str) -> int:
    """A non-negative integer count, or StatsError naming it."""
    try:
        n = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise StatsError(f"{name} must be an integer count, got {value!r}") from None
    if isinstance(value, bool) or n < 0:
        raise StatsError(f"{name} must be a non-negative integer, got {value!r}")
    return n


def _trinomial_counts(wins: int, draws: int, losses: int) -> tuple[int, int, int]:
    return _count(wins, "wins"), _count(draws, "draws"), _count(losses, "losses")


def _pentanomial_counts(counts: Sequence[int]) -> tuple[int, ...]:
    if isinstance(counts, (str, bytes)) or len(counts) != 5:
        raise StatsError(f"pentanomial counts must be 5 integers (LL..WW), got {counts!r}")
    return tuple(_count(c, f"pentanomial count [{i}]") for i, c in enumerate(counts))


def _confidence_z(confidence: float) -> float:
    """Two-sided normal quantile z = Φ⁻¹((1 + c)/2) (1.959964 for c = 0.95)."""
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise StatsError(f"confidence must lie in (0, 1), got {confidence!r}")
    return _STANDARD_NORMAL.inv_cdf((1.0 + c) / 2.0)


def _game_score(value: float, name: str = "result") -> float:
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


def _estimate_from_moments(
    mean: float, variance: float, n: int, games: int, confidence: float
) -> Estimate:
    """Shared tail of both estimates.  ``mean`` and ``variance`` are the per-game
    score mean and the variance of one observation's score over the ``n``
    observations; se = max(sqrt(σ²/n), sqrt(ε(1 − ε)/n)), ε = 1/(2(n + 1));
    score interval mean ± z·se, each end clamped into [ε, 1 − ε], then mapped
    through :func:`score_to_elo`."""
    z = _confidence_z(confidence)
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


def _trinomial_moments(wins: int, draws: int, losses: int) -> tuple[float, float]:
    """s = (W + D/2)/N and σ² = (W(1 − s)² + D(½ − s)² + L·s²)/N."""
    n = wins + draws + losses
    s = (wins + 0.5 * draws) / n
    var = (wins * (1.0 - s) ** 2 + draws * (0.5 - s) ** 2 + losses * s**2) / n
    return s, var


def _pentanomial_moments(counts: Sequence[int]) -> tuple[float, float]:
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
    w, d, l = _trinomial_counts(wins, draws, losses)
    n = w + d + l
    if n == 0:
        raise StatsError("an estimate needs at least one game, got wins=draws=losses=0")
    s, var = _trinomial_moments(w, d, l)
    return _estimate_from_moments(s, var, n, n, confidence)


def pentanomial_estimate(counts: Sequence[int], confidence: float = 0.95) -> Estimate:
    """Elo estimate from game pairs (same opening, colours swapped).

    ``counts`` = pairs scoring 0, ½, 1, 3/2, 2 points (LL, LD, DD or WL, WD,
    WW); per-game score of a pair x = points/2; with P pairs s = mean of x,
    σ² = variance of x over pairs, se = sqrt(σ²/P); the interval as in
    :func:`trinomial_estimate`.  ``games`` = 2P.  P = 0 raises StatsError."""
    c = _pentanomial_counts(counts)
    pairs = sum(c)
    if pairs == 0:
        raise StatsError(f"an estimate needs at least one pair, got counts {list(c)}")
    s, var = _pentanomial_moments(c)
    return _estimate_from_moments(s, var, pairs, 2 * pairs, confidence)


def pentanomial_from_pairs(
    pair_results: Sequence[tuple[float, float]],
) -> tuple[int, int, int, int, int]:
    """Pentanomial counts from the candidate's two game scores (0, ½ or 1) of
    each pair: the pair scoring a + b points lands in class 2·(a + b)."""
    counts = [0, 0, 0, 0, 0]
    for i, pair in enumerate(pair_results):
        if len(pair) != 2:
            raise StatsError(f"pair {i} must hold two game scores, got {pair!r}")
        a = _game_score(pair[0], f"pair {i} first game")
        b = _game_score(pair[1], f"pair {i} second game")
        counts[round(2.0 * (a + b))] += 1
    return (counts[0], counts[1], counts[2], counts[3], counts[4])


# ----------------------------------------------------------------------------- SPRT


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
    :func:`_estimate_from_moments`: as if one more draw had been played), so a
    match of identical results (100 wins in a row) still moves the LLR and
    decides instead of staying at 0 forever.  0 when there are no games."""
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
    w, d, l = _trinomial_counts(wins, draws, losses)
    if w + d + l == 0:
        return 0.0
    s, var = _trinomial_moments(w, d, l)
    return _llr_normal(w + d + l, s, var, config)


def sprt_llr_pentanomial(counts: Sequence[int], config: SprtConfig) -> float:
    """Approximate GSPRT log-likelihood ratio from game pairs:
    P·(s1 − s0)(2ŝ − s0 − s1)/(2σ̂²) over P pairs, ŝ and σ̂² the mean and
    variance of the pair's per-game score (pair points/2), s0, s1 the per-game
    expected scores.  In pair-point units (s0, s1, ŝ doubled, σ̂² ×4) the value
    is identical.  Returns 0 without games."""
    c = _pentanomial_counts(counts)
    pairs = sum(c)
    if pairs == 0:
        return 0.0
    s, var = _pentanomial_moments(c)
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
        self._count_game(_game_score(result_for_candidate, "result_for_candidate"))
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


# -------------------------------------------------------------------------- ratings

_ELO_PER_NAT = 400.0 / math.log(10.0)  # Elo = 400·log10(γ) = θ·400/ln 10


@dataclass(frozen=True)
class _Games:
    """Results indexed by player: per game the two player indices and a's score."""

    names: tuple[str, ...]
    a: np.ndarray
    b: np.ndarray
    score: np.ndarray


def _index_games(results: Sequence[GameResult]) -> _Games:
    names: dict[str, int] = {}
    a_idx, b_idx, scores = [], [], []
    for i, item in enumerate(results):
        try:
            a, b, score = item
        except (TypeError, ValueError):
            raise StatsError(
                f"result {i} must be (player_a, player_b, score), got {item!r}"
            ) from None
        if not isinstance(a, str) or not isinstance(b, str) or a == b:
            raise StatsError(f"result {i} needs two different player names, got {a!r} and {b!r}")
        try:
            s = float(score)
        except (TypeError, ValueError):
            s = math.nan
        if not 0.0 <= s <= 1.0:  # also NaN and non-numbers
            raise StatsError(f"result {i} score must lie in [0, 1], got {score!r}")
        a_idx.append(names.setdefault(a, len(names)))
        b_idx.append(names.setdefault(b, len(names)))
        scores.append(s)
    if not scores:
        raise StatsError("ratings need at least one game, got no results")
    return _Games(tuple(names), np.array(a_idx), np.array(b_idx), np.array(scores, dtype=float))


def _pair_tables(
    n: int, a: np.ndarray, b: np.ndarray, score: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """points[i, j] = points i took from j; games[i, j] = games between them."""
    points = np.zeros((n, n))
    games = np.zeros((n, n))
    np.add.at(points, (a, b), score)
    np.add.at(points, (b, a), 1.0 - score)
    np.add.at(games, (a, b), 1.0)
    np.add.at(games, (b, a), 1.0)
    return points, games


def _log_posterior(theta: np.ndarray, points: np.ndarray) -> float:
    """Σ_{i,j} points_ij·log p_ij (each game counted from both sides gives the
    Bradley–Terry log-likelihood with draws as half a win each way) plus the
    prior: one draw per player against a virtual opponent at θ = 0."""
    diff = theta[:, None] - theta[None, :]
    log_p = -np.logaddexp(0.0, -diff)  # log σ(θi − θj)
    prior = 0.5 * (-np.logaddexp(0.0, -theta)) + 0.5 * (-np.logaddexp(0.0, theta))
    return float(np.sum(points * log_p) + np.sum(prior))


def _fit_theta(
    points: np.ndarray, games: np.ndarray, iterations: int, tolerance: float
) -> np.ndarray:
    """Maximise the log posterior over θ (natural-log strengths) by Newton's
    method with step halving.  With p_ij = σ(θi − θj), p_i = σ(θi):

        g_i  = Σ_j (points_ij − games_ij·p_ij) + ½ − p_i
        H_ii = −Σ_j games_ij·p_ij·p_ji − p_i(1 − p_i),   H_ij = games_ij·p_ij·p_ji

    −H is strictly diagonally dominant (the prior term), so the posterior is
    strictly concave with a unique, finite maximum even for a 100% scorer."""
    n = points.shape[0]
    theta = np.zeros(n)
    current = _log_posterior(theta, points)
    for _ in range(iterations):
        diff = theta[:, None] - theta[None, :]
        p = 1.0 / (1.0 + np.exp(-diff))
        p_self = 1.0 / (1.0 + np.exp(-theta))
        grad = np.sum(points - games * p, axis=1) + 0.5 - p_self
        w = games * p * p.T
        neg_hess = -w
        neg_hess[np.diag_indices(n)] = w.sum(axis=1) + p_self * (1.0 - p_self)
        step = np.linalg.solve(neg_hess, grad)
        scale = 1.0
        while True:
            candidate = theta + scale * step
            value = _log_posterior(candidate, points)
            if value >= current - 1e-12 or scale < 1e-6:
                break
            scale *= 0.5
        theta, current = candidate, value
        if np.max(np.abs(scale * step)) * _ELO_PER_NAT < tolerance:
            break
    return theta


def _place(
    elos: np.ndarray, names: Sequence[str], anchor: str | None, anchor_elo: float
) -> np.ndarray:
    """Centre on mean 0, or shift so that ``anchor`` reads ``anchor_elo``."""
    if anchor is None:
        return elos - elos.mean()
    return elos - elos[list(names).index(anchor)] + anchor_elo


def _check_anchor(anchor: str | None, names: Sequence[str]) -> None:
    if anchor is not None and anchor not in names:
        raise StatsError(f"anchor {anchor!r} is not a player in the results")


def _fit_elos(
    games: _Games, anchor: str | None, anchor_elo: float, iterations: int, tolerance: float
) -> np.ndarray:
    points, counts = _pair_tables(len(games.names), games.a, games.b, games.score)
    theta = _fit_theta(points, counts, iterations, tolerance)
    return _place(theta * _ELO_PER_NAT, games.names, anchor, anchor_elo)


def ratings(
    results: Sequence[GameResult],
    anchor: str | None = None,
    anchor_elo: float = 0.0,
    iterations: int = 100,
    tolerance: float = 1e-6,
) -> dict[str, float]:
    """Maximum a-posteriori logistic ratings of a pool from
    ``(player_a, player_b, score_for_a)`` games (score 0, ½, 1 or any value in
    [0, 1]).

    Model (Bradley–Terry): P(i beats j) = 1/(1 + 10^(−(Ri − Rj)/400)); a
    game's score x counts as x of a win for a and 1 − x for b, so a draw is
    half a win each way.  Prior: every player has drawn one game against a
    virtual opponent rated at the pool's origin, which keeps a 100% (or 0%)
    scorer finite and pulls players with few games gently toward the middle.
    Solved by Newton's method (at most ``iterations`` steps, until the largest
    change is below ``tolerance`` Elo).  Ratings are centred on mean 0 unless
    ``anchor`` is given, whose rating is then ``anchor_elo``."""
    games = _index_games(results)
    _check_anchor(anchor, games.names)
    elos = _fit_elos(games, anchor, anchor_elo, iterations, tolerance)
    return {name: float(r) for name, r in zip(games.names, elos)}


def rating_intervals(
    results: Sequence[GameResult],
    anchor: str | None = None,
    anchor_elo: float = 0.0,
    confidence: float = 0.95,
    samples: int = 200,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals of :func:`ratings`: ``samples`` times,
    redraw len(results) games with replacement (numpy ``default_rng(seed)``),
    refit, and take the (1 − c)/2 and (1 + c)/2 quantiles per player.  The
    anchor's interval is (anchor_elo, anchor_elo)."""
    _confidence_z(confidence)
    if _count(samples, "samples") < 1:
        raise StatsError(f"samples must be at least 1, got {samples!r}")
    games = _index_games(results)
    _check_anchor(anchor, games.names)
    rng = np.random.default_rng(seed)
    n_games = len(games.score)
    draws = np.empty((samples, len(games.names)))
    for k in range(samples):
        pick = rng.integers(0, n_games, size=n_games)
        sample = _Games(games.names, games.a[pick], games.b[pick], games.score[pick])
        draws[k] = _fit_elos(sample, anchor, anchor_elo, 100, 1e-4)
    low = np.quantile(draws, (1.0 - confidence) / 2.0, axis=0)
    high = np.quantile(draws, (1.0 + confidence) / 2.0, axis=0)
    return {name: (float(lo), float(hi)) for name, lo, hi in zip(games.names, low, high)}


def ratings_table(
    results: Sequence[GameResult],
    anchor: str | None = None,
    anchor_elo: float = 0.0,
    confidence: float = 0.95,
    samples: int = 100,
    seed: int = 0,
) -> str:
    """A text table, strongest first: rank, name, rating, ± (half the width
    of the bootstrap interval of :func:`rating_intervals`; "-" when
    ``samples`` is 0), games played and score (% of points)."""
    rated = ratings(results, anchor, anchor_elo)
    spans: dict[str, float] = {}
    if samples:
        intervals = rating_intervals(results, anchor, anchor_elo, confidence, samples, seed)
        spans = {name: (high - low) / 2.0 for name, (low, high) in intervals.items()}
    played: dict[str, int] = dict.fromkeys(rated, 0)
    points: dict[str, float] = dict.fromkeys(rated, 0.0)
    for a, b, s in results:
        played[a] += 1
        played[b] += 1
        points[a] += float(s)
        points[b] += 1.0 - float(s)
    width = max(4, *(len(n) for n in rated))
    lines = [f"{'Rank':>4}  {'Name':<{width}}  {'Elo':>7}  {'±':>6}  {'Games':>6}  {'Score':>6}"]
    order = sorted(rated, key=lambda n: (-rated[n], n))
    for rank, name in enumerate(order, 1):
        err = f"{spans[name]:6.1f}" if name in spans else f"{'-':>6}"
        score = 100.0 * points[name] / played[name]
        lines.append(
            f"{rank:>4}  {name:<{width}}  {rated[name]:+7.1f}  {err}  "
            f"{played[name]:>6}  {score:5.1f}%"
        )
    return "\n".join(lines)
