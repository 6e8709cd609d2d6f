"""Match statistics: Elo estimates, SPRT, round-robin ratings (pipeline/stats/)."""

from __future__ import annotations

import math
import random

import pytest

from pipeline.stats import (
    Estimate,
    Sprt,
    SprtConfig,
    StatsError,
    elo_to_score,
    pentanomial_estimate,
    pentanomial_from_pairs,
    rating_intervals,
    ratings,
    ratings_table,
    score_to_elo,
    sprt_bounds,
    sprt_decision,
    sprt_llr_pentanomial,
    sprt_llr_trinomial,
    trinomial_estimate,
)

Z95 = 1.959963984540054  # Φ⁻¹(0.975)


# ------------------------------------------------------------------ Elo <-> score


def test_elo_score_round_trip_and_ends() -> None:
    for s in (0.01, 0.25, 0.5, 0.64, 0.9, 0.999):
        assert elo_to_score(score_to_elo(s)) == pytest.approx(s, abs=1e-12)
    assert score_to_elo(0.5) == 0.0
    assert score_to_elo(1.0) == math.inf and score_to_elo(0.0) == -math.inf
    assert elo_to_score(math.inf) == 1.0 and elo_to_score(-math.inf) == 0.0
    assert elo_to_score(-1e6) == pytest.approx(0.0) and elo_to_score(1e6) == 1.0  # no overflow
    # 400·log10(0.75/0.25) = 400·log10 3 = 190.85
    assert score_to_elo(0.75) == pytest.approx(400 * math.log10(3))


def test_published_expected_score_table() -> None:
    # Wikipedia, "Elo rating system" (Theory section): a player rated 100 points
    # higher is expected to score 64%, 200 points higher 76%; the same table
    # (0 .50, 50 .57, 100 .64, 150 .70, 200 .76, 300 .85, 400 .91) is in
    # R. Hayward's notes, webdocs.cs.ualberta.ca/~hayward/670gga/jem/elo.html.
    table = {0: 0.50, 50: 0.57, 100: 0.64, 150: 0.70, 200: 0.76, 300: 0.85, 400: 0.91}
    for elo, score in table.items():
        assert elo_to_score(elo) == pytest.approx(score, abs=0.005)
        assert elo_to_score(-elo) == pytest.approx(1 - score, abs=0.005)
    # Hayward: a 0.6 win rate is 400·log10(0.6/0.4) ≈ 70.4 Elo.
    assert score_to_elo(0.6) == pytest.approx(70.4, abs=0.05)


# ------------------------------------------------------------------ estimates


def test_trinomial_estimate_by_hand() -> None:
    # W=60 D=20 L=20: s = (60 + 10)/100 = 0.7
    # Elo = −400·log10(1/0.7 − 1) = 400·log10(7/3) = 147.19
    # σ² = (60·0.3² + 20·0.2² + 20·0.7²)/100 = (5.4 + 0.8 + 9.8)/100 = 0.16
    # se = sqrt(0.16/100) = 0.04; z·se = 1.96·0.04 = 0.078399
    # low  = 400·log10(0.621601/0.378399) = 86.23
    # high = 400·log10(0.778399/0.221601) = 218.25
    est = trinomial_estimate(60, 20, 20)
    assert est.games == 100
    assert est.score == pytest.approx(0.7)
    assert est.elo == pytest.approx(147.19, abs=0.01)
    assert est.elo_low == pytest.approx(86.23, abs=0.01)
    assert est.elo_high == pytest.approx(218.25, abs=0.01)
    lo, hi = 0.7 - Z95 * 0.04, 0.7 + Z95 * 0.04
    assert est.elo_low == pytest.approx(400 * math.log10(lo / (1 - lo)))
    assert est.elo_high == pytest.approx(400 * math.log10(hi / (1 - hi)))
    # LOS = Φ((0.7 − 0.5)/0.04) = Φ(5) ≈ 0.9999997
    assert est.los == pytest.approx(0.9999997, abs=1e-7)
    assert est.elo_error == pytest.approx((218.25 - 86.23) / 2, abs=0.01)
    assert str(est) == "+147.2 ± 66.0 Elo (score 70.0%, 100 games)"


def test_trinomial_symmetry_and_even_score() -> None:
    up, down = trinomial_estimate(60, 20, 20), trinomial_estimate(20, 20, 60)
    assert down.elo == pytest.approx(-up.elo)
    assert down.elo_low == pytest.approx(-up.elo_high)
    assert down.elo_high == pytest.approx(-up.elo_low)
    even = trinomial_estimate(30, 30, 30)
    # s = (30 + 15)/90 = 0.5 → Elo 0; σ² = (30·¼ + 0 + 30·¼)/90 = 1/6
    assert even.elo == 0.0 and even.los == pytest.approx(0.5)
    assert even.elo_low == pytest.approx(-even.elo_high)
    half = Z95 * math.sqrt((1 / 6) / 90)
    assert even.elo_high == pytest.approx(score_to_elo(0.5 + half))
    assert trinomial_estimate(30, 30, 30, confidence=0.5).elo_error < even.elo_error


def test_confidence_changes_width() -> None:
    wide, usual = trinomial_estimate(60, 20, 20, 0.99), trinomial_estimate(60, 20, 20)
    assert wide.elo_error > usual.elo_error
    assert wide.elo == usual.elo


def test_all_wins_and_all_draws_stay_finite() -> None:
    # 10/10: clamped to the score with one extra draw, 10.5/11 → 400·log10(21) = 528.86
    perfect = trinomial_estimate(10, 0, 0)
    assert perfect.elo == pytest.approx(400 * math.log10(21))
    assert math.isfinite(perfect.elo_low) and perfect.elo_low < perfect.elo
    assert perfect.elo_high == perfect.elo and perfect.los > 0.99
    assert trinomial_estimate(0, 0, 10).elo == pytest.approx(-perfect.elo)
    draws = trinomial_estimate(0, 10, 0)  # zero variance, but an interval of positive width
    assert draws.elo == 0.0 and draws.elo_low < 0.0 < draws.elo_high
    assert "100.0%" in str(perfect)
    single = pentanomial_estimate([0, 0, 0, 0, 3])
    assert math.isfinite(single.elo) and single.elo > 0


def test_pentanomial_estimate_by_hand() -> None:
    # 100 pairs [LL, LD, DD|WL, WD, WW] = [0, 10, 20, 50, 20]; per-game pair
    # scores 0, .25, .5, .75, 1: s = (2.5 + 10 + 37.5 + 20)/100 = 0.70
    # σ² = (10·0.45² + 20·0.2² + 50·0.05² + 20·0.3²)/100
    #    = (2.025 + 0.8 + 0.125 + 1.8)/100 = 0.0475;  se = sqrt(0.0475/100) = 0.021794
    # low = elo(0.7 − 1.96·0.021794) = 113.13, high = elo(0.7 + 0.042716) = 184.16
    est = pentanomial_estimate([0, 10, 20, 50, 20])
    assert est.games == 200
    assert est.score == pytest.approx(0.7)
    assert est.elo == pytest.approx(147.19, abs=0.01)
    assert est.elo_low == pytest.approx(113.13, abs=0.01)
    assert est.elo_high == pytest.approx(184.16, abs=0.01)
    mirrored = pentanomial_estimate([20, 50, 20, 10, 0])
    assert mirrored.elo == pytest.approx(-est.elo)
    assert mirrored.elo_low == pytest.approx(-est.elo_high)


def test_published_match_reports() -> None:
    # fishtest fixed-games test 631836b437f41b13973d7da1, quoted in
    # github.com/official-stockfish/Stockfish/pull/4160:
    #   "Elo: 1.35 +-1.2 (95%) LOS: 98.6%  Total: 60000 W: 16422 L: 16189 D: 27389
    #    Ptnml(0-2): 39, 5335, 18992, 5622, 12"
    est = pentanomial_estimate([39, 5335, 18992, 5622, 12])
    assert est.games == 60000
    assert est.elo == pytest.approx(1.35, abs=0.005)
    assert est.elo_error == pytest.approx(1.2, abs=0.05)
    assert est.los == pytest.approx(0.986, abs=0.0005)
    # OpenBench reports in github.com/Yoshie2000/PlentyChess/pull/292:
    #   "Elo | -4.86 +- 4.87 (95%) ... Penta | [13, 628, 1284, 566, 9]"
    #   "Elo | -5.57 +- 4.06 (95%) ... Penta | [25, 925, 1898, 811, 23]"
    for counts, elo, err in (
        ([13, 628, 1284, 566, 9], -4.86, 4.87),
        ([25, 925, 1898, 811, 23], -5.57, 4.06),
    ):
        est = pentanomial_estimate(counts)
        assert est.elo == pytest.approx(elo, abs=0.005)
        assert est.elo_error == pytest.approx(err, abs=0.005)
    # cutechess-cli, github.com/JoAnnP38/Pedantic/pull/8 (its order is W - L - D):
    #   "Score of Pedantic 0.2A vs Pedantic 0.2B: 332 - 316 - 352 [0.508] 1000
    #    Elo difference: 5.6 +/- 17.3, LOS: 73.5 %"
    est = trinomial_estimate(wins=332, draws=352, losses=316)
    assert est.elo == pytest.approx(5.6, abs=0.05)
    assert est.elo_error == pytest.approx(17.3, abs=0.05)
    assert est.los == pytest.approx(0.735, abs=0.0005)


def test_pentanomial_from_pairs() -> None:
    pairs = [(1, 1), (1, 0), (0.5, 0.5), (0, 0.5), (0, 0), (0.5, 1), (1, 0.5)]
    # pair points 2, 1, 1, ½, 0, 3/2, 3/2 → classes 4, 2, 2, 1, 0, 3, 3
    assert pentanomial_from_pairs(pairs) == (1, 1, 2, 2, 1)
    assert pentanomial_from_pairs([]) == (0, 0, 0, 0, 0)
    with pytest.raises(StatsError, match="0.3"):
        pentanomial_from_pairs([(1, 0.3)])


# ----------------------------------------------------------------------- SPRT


def _game(rng: random.Random, win: float, draw: float) -> float:
    u = rng.random()
    return 1.0 if u < win else 0.5 if u < win + draw else 0.0


def test_sprt_bounds() -> None:
    lower, upper = sprt_bounds(SprtConfig())
    # α = β = 0.05: ln(0.05/0.95) = −ln 19, ln(0.95/0.05) = ln 19 ≈ 2.944
    assert upper == pytest.approx(math.log(19)) and lower == pytest.approx(-math.log(19))
    assert upper == pytest.approx(2.944, abs=5e-4)
    lower, upper = sprt_bounds(SprtConfig(alpha=0.05, beta=0.1))
    assert (lower, upper) == pytest.approx((math.log(0.1 / 0.95), math.log(0.9 / 0.05)))
    assert sprt_decision(3.0, SprtConfig()) == "H1"
    assert sprt_decision(-3.0, SprtConfig()) == "H0"
    assert sprt_decision(0.0, SprtConfig()) == "continue"


def test_llr_by_hand() -> None:
    # s0 = 1/(1 + 10^0) = 0.5, s1 = 1/(1 + 10^(−10/400)) = 0.514387
    # W=60 D=20 L=20: ŝ = 0.7, σ̂² = 0.16
    # LLR = 100·0.014387·(1.4 − 0.5 − 0.514387)/(2·0.16) = 1.7337
    config = SprtConfig(0.0, 10.0)
    assert sprt_llr_trinomial(60, 20, 20, config) == pytest.approx(1.7337, abs=1e-4)
    # pairs [0, 10, 20, 50, 20]: ŝ = 0.7, σ̂² = 0.0475 over P = 100 pairs
    # LLR = 100·0.014387·0.385613/(2·0.0475) = 5.8399
    assert sprt_llr_pentanomial([0, 10, 20, 50, 20], config) == pytest.approx(5.8399, abs=1e-4)
    # the same in pair-point units (s doubled, σ² × 4) is the same number
    s0, s1 = 2 * 0.5, 2 * elo_to_score(10)
    assert 100 * (s1 - s0) * (2 * 1.4 - s0 - s1) / (2 * 4 * 0.0475) == pytest.approx(
        5.8399, abs=1e-4
    )


def test_llr_with_identical_results_uses_the_variance_floor() -> None:
    config = SprtConfig()
    assert sprt_llr_trinomial(0, 0, 0, config) == 0.0
    # 3 draws: eps = 1/8, var floor = 7/64; LLR = 3(s1-s0)(1-s0-s1)/(2*7/64), slightly negative
    s0, s1 = config.scores
    assert sprt_llr_trinomial(0, 3, 0, config) == pytest.approx(3 * (s1 - s0) * (1 - s0 - s1) / (2 * 7 / 64))
    assert sprt_llr_trinomial(0, 3, 0, config) < 0
    assert sprt_llr_pentanomial([0, 0, 4, 0, 0], config) < 0
    # a clean sweep is evidence for H1, not "no information"
    assert sprt_llr_trinomial(10, 0, 0, config) > 0
    sprt = Sprt(SprtConfig(0.0, 200.0))
    decisions = [sprt.update_pair(1.0, 1.0) for _ in range(40)]
    assert decisions[-1] == "H1" and sprt.trinomial == (80, 0, 0)
    draws = Sprt(config)
    for _ in range(3):
        assert draws.update(0.5) == "continue"


def test_sprt_strong_candidate_accepts_h1() -> None:
    rng = random.Random(2024)
    sprt = Sprt(SprtConfig(0.0, 10.0))
    for _ in range(300):  # 80% expected score: W 70%, D 20%, L 10%
        if sprt.update(_game(rng, 0.7, 0.2)) != "continue":
            break
    assert sprt.decision == "H1" and sprt.games < 300
    assert sprt.llr >= math.log(19)
    assert sprt.estimate().elo > 100


def test_sprt_even_match_does_not_accept_h1() -> None:
    for seed in range(5):
        rng = random.Random(seed)
        sprt = Sprt(SprtConfig(0.0, 10.0))
        for _ in range(3000):  # 50% expected score, 60% draws
            if sprt.update(_game(rng, 0.2, 0.6)) != "continue":
                break
        assert sprt.decision in ("H0", "continue"), (seed, sprt)


def test_sprt_weak_candidate_accepts_h0() -> None:
    rng = random.Random(7)
    sprt = Sprt(SprtConfig(0.0, 10.0))
    for _ in range(1000):  # 30% expected score
        if sprt.update(_game(rng, 0.15, 0.3)) != "continue":
            break
    assert sprt.decision == "H0" and sprt.games < 500


def test_pentanomial_and_trinomial_agree_in_sign() -> None:
    config = SprtConfig(0.0, 10.0)
    for win, sign in ((0.45, 1.0), (0.2, -1.0)):  # vs losses 0.2 / 0.45, draws 0.35
        rng = random.Random(11)
        pairs = [(_game(rng, win, 0.35), _game(rng, win, 0.35)) for _ in range(200)]
        counts = pentanomial_from_pairs(pairs)
        scores = [s for pair in pairs for s in pair]
        w, d, l = scores.count(1.0), scores.count(0.5), scores.count(0.0)
        llr_p = sprt_llr_pentanomial(counts, config)
        llr_t = sprt_llr_trinomial(w, d, l, config)
        assert llr_p * sign > 0 and llr_t * sign > 0
        assert pentanomial_estimate(counts).elo == pytest.approx(trinomial_estimate(w, d, l).elo)


def test_sprt_pairs_counts_and_sticky_decision() -> None:
    sprt = Sprt(SprtConfig(0.0, 10.0))
    sprt.update_pair(1, 0.5)
    sprt.update_pair(0, 0)
    sprt.update_pair(0.5, 0.5)
    assert sprt.paired
    assert sprt.pentanomial == (1, 0, 1, 1, 0)
    assert sprt.trinomial == (1, 3, 2)
    assert sprt.llr == sprt_llr_pentanomial((1, 0, 1, 1, 0), sprt.config)
    assert sprt.estimate().games == 6
    sprt.update(1.0)  # a single game: trinomial from now on
    assert not sprt.paired
    assert sprt.llr == sprt_llr_trinomial(2, 3, 2, sprt.config)
    for _ in range(40):
        sprt.update_pair(1, 1)
    assert sprt.decision == "H1"
    for _ in range(200):
        sprt.update_pair(0, 0)  # LLR falls below the lower bound...
    assert sprt.llr < sprt.bounds[0]
    assert sprt.decision == "H1"  # ...but the test had already stopped
    with pytest.raises(StatsError, match="0.3"):
        sprt.update(0.3)


# -------------------------------------------------------------------- ratings


def _synthetic_pool(elos: dict[str, float], games: int, seed: int) -> list[tuple[str, str, float]]:
    rng = random.Random(seed)
    names = sorted(elos)
    results = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            e = elo_to_score(elos[a] - elos[b])  # P(win) = e − 0.15, P(draw) = 0.3
            results += [(a, b, _game(rng, e - 0.15, 0.3)) for _ in range(games)]
    return results


def test_ratings_recover_known_elos() -> None:
    results = _synthetic_pool({"A": 0.0, "B": -100.0, "C": -200.0}, 2000, seed=1)
    r = ratings(results)
    assert sum(r.values()) == pytest.approx(0.0, abs=1e-9)
    assert r["A"] - r["B"] == pytest.approx(100, abs=15)
    assert r["B"] - r["C"] == pytest.approx(100, abs=15)
    assert r["A"] - r["C"] == pytest.approx(200, abs=15)
    anchored = ratings(results, anchor="C", anchor_elo=1000.0)
    assert anchored["C"] == 1000.0
    assert anchored["A"] - anchored["C"] == pytest.approx(r["A"] - r["C"], abs=1e-6)


def test_two_player_rating_matches_score() -> None:
    # 1000 games scoring 64% → score_to_elo(0.64) = 99.95 Elo (the prior's one
    # virtual draw each moves it by well under 1 Elo)
    results = [("A", "B", 1.0)] * 500 + [("A", "B", 0.5)] * 280 + [("A", "B", 0.0)] * 220
    r = ratings(results)
    assert r["A"] - r["B"] == pytest.approx(score_to_elo(0.64), abs=1.0)
    assert r["A"] == pytest.approx(-r["B"])


def test_perfect_scorer_is_finite() -> None:
    results = [("A", "B", 1.0)] * 20 + [("B", "C", 0.5)] * 10 + [("C", "B", 0.0)] * 5
    r = ratings(results)
    assert all(math.isfinite(v) for v in r.values())
    assert r["A"] > r["B"] > r["C"]
    alone = ratings([("A", "B", 1.0)] * 3)
    assert math.isfinite(alone["A"]) and alone["A"] > 0 > alone["B"]


def test_rating_intervals_and_table() -> None:
    results = _synthetic_pool({"A": 0.0, "B": -100.0, "C": -200.0}, 300, seed=3)
    r = ratings(results)
    spans = rating_intervals(results, samples=40, seed=5)
    assert spans == rating_intervals(results, samples=40, seed=5)  # seeded
    for name, (low, high) in spans.items():
        assert low < r[name] < high
    anchored = rating_intervals(results, anchor="B", anchor_elo=50.0, samples=10)
    assert anchored["B"] == pytest.approx((50.0, 50.0))
    table = ratings_table(results, samples=20)
    lines = table.splitlines()
    assert len(lines) == 4 and "Elo" in lines[0]
    assert [line.split()[1] for line in lines[1:]] == ["A", "B", "C"]
    assert lines[1].split()[0] == "1" and "600" in lines[1]  # A played 600 games
    assert "-" in ratings_table(results, samples=0).splitlines()[1]


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: trinomial_estimate(-1, 2, 3), "-1"),
        (lambda: trinomial_estimate(1, 2.5, 3), "2.5"),
        (lambda: trinomial_estimate(0, 0, 0), "0"),
        (lambda: trinomial_estimate(1, 1, 1, confidence=1.0), "1.0"),
        (lambda: pentanomial_estimate([0, 0, 0, 0, 0]), "pair"),
        (lambda: pentanomial_estimate([1, 2, 3]), "[1, 2, 3]"),
        (lambda: pentanomial_estimate([1, 2, -3, 4, 5]), "-3"),
        (lambda: sprt_llr_trinomial(1, -2, 3, SprtConfig()), "-2"),
        (lambda: SprtConfig(elo0=5.0, elo1=5.0), "elo1=5.0"),
        (lambda: SprtConfig(elo0=5.0, elo1=0.0), "elo0=5.0"),
        (lambda: SprtConfig(alpha=0.0), "0.0"),
        (lambda: SprtConfig(beta=1.5), "1.5"),
        (lambda: SprtConfig(alpha=0.6, beta=0.5), "0.6"),
        (lambda: score_to_elo(1.5), "1.5"),
        (lambda: score_to_elo(-0.1), "-0.1"),
        (lambda: elo_to_score(float("nan")), "nan"),
        (lambda: ratings([]), "no results"),
        (lambda: ratings([("A", "A", 1.0)]), "'A'"),
        (lambda: ratings([("A", "B", 2.0)]), "2.0"),
        (lambda: ratings([("A", "B", "win")]), "'win'"),
        (lambda: rating_intervals([("A", "B", 1.0)], samples=0), "samples"),
        (lambda: ratings([("A", "B", 1.0)], anchor="Z"), "'Z'"),
    ],
)
def test_bad_input_raises_value_error_naming_value(call, needle: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        call()
    assert isinstance(info.value, StatsError)
    assert needle in str(info.value)


def test_estimate_is_frozen() -> None:
    est = trinomial_estimate(1, 1, 1)
    assert isinstance(est, Estimate)
    with pytest.raises(AttributeError):
        est.elo = 3.0  # type: ignore[misc]
