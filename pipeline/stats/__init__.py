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

from pipeline.stats.elo import (
    Estimate,
    StatsError,
    elo_to_score,
    pentanomial_estimate,
    pentanomial_from_pairs,
    score_to_elo,
    trinomial_estimate,
)
from pipeline.stats.ratings import rating_intervals, ratings, ratings_table
from pipeline.stats.sprt import (
    Sprt,
    SprtConfig,
    sprt_bounds,
    sprt_decision,
    sprt_llr_pentanomial,
    sprt_llr_trinomial,
)

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
