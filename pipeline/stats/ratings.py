"""Round-robin ratings: maximum a-posteriori Bradley–Terry (logistic Elo)
ratings of a pool, their bootstrap intervals and a text table.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.stats.elo import StatsError, check_count, confidence_z

__all__ = ["GameResult", "rating_intervals", "ratings", "ratings_table"]

GameResult = tuple[str, str, float]

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
    confidence_z(confidence)
    if check_count(samples, "samples") < 1:
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
