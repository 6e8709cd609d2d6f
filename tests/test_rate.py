"""The arithmetic of ``zerochess rate`` on synthetic results, without an
engine: chaining levels, the bisection, the combined rating and its
interval, the levels cache and the random-share player."""

from __future__ import annotations

import json
import logging
import math
import random
import re
from pathlib import Path

import chess
import pytest

from pipeline.evaluation.rating import LevelResult, Rating, RatingError, rate
from pipeline.evaluation.rating_fit import (
    Bracket,
    ChainLink,
    GameVsLevel,
    Level,
    chain_levels,
    fit_rating,
)
from pipeline.evaluation.rating_levels import (
    EngineInfo,
    Ladder,
    LevelPlan,
    LevelsError,
    cached_chain,
    default_cache_path,
    elo_levels,
    ladder,
    measure_chain,
    read_cache,
    write_chain,
)
from pipeline.evaluation.rating_players import MatchResult, MixPlayer, mix_name, split_mix
from pipeline.evaluation.tournament import PairingResult
from pipeline.players.base import Player, PlayerError
from pipeline.stats import Estimate, StatsError, elo_to_score

ENGINE = EngineInfo("/usr/games/stockfish", "Stockfish 15.1", 1350, 2850)


def fixed(name: str, rating: float) -> Level:
    return Level(name, rating, rating, rating)


def estimate(elo: float, low: float, high: float) -> Estimate:
    return Estimate(games=40, score=elo_to_score(elo), elo=elo, elo_low=low, elo_high=high)


# ----------------------------------------------------------------------- the chain


def test_chained_levels_add_offsets_down_from_the_anchor_and_errors_in_quadrature() -> None:
    links = [
        ChainLink("a", "anchor", estimate(-100.0, -130.0, -60.0)),  # down 30, up 40
        ChainLink("b", "a", estimate(-200.0, -240.0, -170.0)),  # down 40, up 30
        ChainLink("c", "b", estimate(-50.0, -62.0, -41.0)),  # down 12, up 9
    ]
    a, b, c = chain_levels("anchor", 1350.0, links)
    assert (a.name, a.rating, a.low, a.high) == ("a", 1250.0, 1220.0, 1290.0)
    assert (b.rating, b.low, b.high) == (1050.0, 1000.0, 1100.0)  # 50 = hypot(30, 40), 50 = hypot(40, 30)
    assert c.rating == 1000.0
    assert c.low == pytest.approx(1000.0 - math.sqrt(30**2 + 40**2 + 12**2))
    assert c.high == pytest.approx(1000.0 + math.sqrt(40**2 + 30**2 + 9**2))
    assert all(level.measured for level in (a, b, c))


def test_the_chain_stops_above_a_clamped_link() -> None:
    links = [
        ChainLink("a", "anchor", estimate(-100.0, -130.0, -60.0)),
        ChainLink("b", "a", estimate(-530.0, -800.0, -300.0), clamped=True),  # 0/40: only a bound
        ChainLink("c", "b", estimate(-50.0, -62.0, -41.0)),
    ]
    assert [level.name for level in chain_levels("anchor", 1350.0, links)] == ["a"]


def test_a_link_that_does_not_hang_from_the_previous_level_is_refused() -> None:
    links = [ChainLink("a", "anchor", estimate(-100.0, -130.0, -60.0)),
             ChainLink("c", "b", estimate(-50.0, -62.0, -41.0))]  # fmt: skip
    with pytest.raises(StatsError, match="link 1 .*'a'"):
        chain_levels("anchor", 1350.0, links)


def synthetic_match(offset: float, pairs: int, rng: random.Random, a: str = "a", b: str = "b") -> MatchResult:
    """Pairs of games without draws where ``a`` is ``offset`` Elo stronger than ``b``."""
    p = elo_to_score(offset)
    scores = [(float(rng.random() < p), float(rng.random() < p)) for _ in range(pairs)]
    flat = [s for pair in scores for s in pair]
    pairing = PairingResult(a, b, wins=int(sum(flat)), losses=len(flat) - int(sum(flat)), pairs=scores)
    return MatchResult(pairing, [])


def test_measuring_a_chain_recovers_known_offsets_within_its_intervals() -> None:
    plan = LevelPlan(shares=(0.1, 0.3, 1.0), games_per_link=400)
    truth = {plan.elo_spec(1350): 1350.0, **dict(zip(plan.chain_names(), (1150.0, 900.0, 700.0)))}
    rng = random.Random(7)
    played = []

    def play(lower: str, upper: str, pairs: int) -> MatchResult:
        played.append((lower, upper, pairs))
        return synthetic_match(truth[lower] - truth[upper], pairs, rng, lower, upper)

    levels, records = measure_chain(ENGINE, plan, plan.elo_spec(1350), play)
    assert [p[:2] for p in played] == [(plan.chain_names()[0], plan.elo_spec(1350)),
                                       (plan.chain_names()[1], plan.chain_names()[0]),
                                       (plan.chain_names()[2], plan.chain_names()[1])]  # fmt: skip
    assert all(pairs == 200 for *_, pairs in played)
    for level in levels:
        assert level.low < truth[level.name] < level.high, level
        assert abs(level.rating - truth[level.name]) < 60
    assert levels[2].high - levels[2].low > levels[0].high - levels[0].low  # errors grow down the chain
    assert [r["lower"] for r in records] == plan.chain_names()
    first = records[0]
    assert first["wins"] + first["losses"] == 400 and first["draws"] == 0
    assert first["elo"] == round(levels[0].rating - 1350.0, 1)


def test_measuring_stops_at_a_link_lost_entirely() -> None:
    plan = LevelPlan(shares=(0.1, 0.3, 1.0), games_per_link=20)
    calls = []

    def play(lower: str, upper: str, pairs: int) -> MatchResult:
        calls.append(lower)
        offset = -100.0 if len(calls) == 1 else -5000.0
        return synthetic_match(offset, pairs, random.Random(1), lower, upper)

    levels, records = measure_chain(ENGINE, plan, plan.elo_spec(1350), play)
    assert len(calls) == 2 and records[1]["clamped"] is True
    assert [level.name for level in levels] == plan.chain_names()[:1]


# ------------------------------------------------------------------- the bisection


def test_the_bisection_starts_in_the_middle_and_moves_toward_the_even_score() -> None:
    bracket = Bracket.over(9)
    assert bracket.middle() == 4
    stronger = bracket.after(4, 0.8)
    assert (stronger.lo, stronger.hi, stronger.middle()) == (5, 8, 6)
    weaker = bracket.after(4, 0.2)
    assert (weaker.lo, weaker.hi, weaker.middle()) == (0, 3, 1)
    assert bracket.after(4, 0.5).done
    with pytest.raises(StatsError, match="outside the bracket"):
        weaker.after(6, 0.5)
    with pytest.raises(StatsError, match="closed"):
        bracket.after(4, 0.5).middle()
    with pytest.raises(StatsError, match="at least one level"):
        Bracket.over(0)


@pytest.mark.parametrize("levels", [1, 2, 5, 8, 21, 22])
@pytest.mark.parametrize("strength", [-1.0, 0.3, 2.5, 6.7, 100.0])
def test_the_bisection_ends_between_the_two_levels_around_the_strength(levels: int, strength: float) -> None:
    """Levels rated 0, 1, 2, ...: a player rated ``strength`` beats the ones
    below and loses to the ones above; the bisection plays both neighbours
    (where there are any) within ceil(log2(n + 1)) levels."""
    bracket, played = Bracket.over(levels), []
    while not bracket.done:
        index = bracket.middle()
        played.append(index)
        bracket = bracket.after(index, 1.0 if strength > index else 0.0)
    assert len(played) <= math.ceil(math.log2(levels + 1))
    below, above = math.floor(strength), math.ceil(strength)
    for neighbour in (below, above):
        if 0 <= neighbour < levels:
            assert neighbour in played, (played, strength)


# --------------------------------------------------------------------------- the fit


def games_at(level: Level, wins: int, draws: int, losses: int) -> list[GameVsLevel]:
    return ([GameVsLevel(level, 1.0)] * wins + [GameVsLevel(level, 0.5)] * draws
            + [GameVsLevel(level, 0.0)] * losses)  # fmt: skip


def test_the_combined_rating_sits_between_two_levels_scored_symmetrically() -> None:
    low, high = fixed("low", 1000.0), fixed("high", 1200.0)
    fit = fit_rating(games_at(low, 32, 0, 18) + games_at(high, 18, 0, 32))
    assert fit.rating == pytest.approx(1100.0, abs=1e-6)
    assert fit.low == pytest.approx(2 * 1100.0 - fit.high)  # symmetric data, symmetric interval
    assert 40 < fit.high - fit.rating < 100 and fit.games == 100 and fit.score == 0.5


def test_the_rating_of_a_single_level_is_the_levels_plus_the_score_s_elo() -> None:
    """64% against one level reads +100 Elo (the virtual draw at the level's
    rating pulls it in by a fraction of a point)."""
    level = fixed("l", 1500.0)
    fit = fit_rating(games_at(level, 320, 0, 180))
    assert fit.rating == pytest.approx(1500.0 + 400.0 * math.log10(0.64 / 0.36), abs=1.5)


def test_a_known_rating_is_recovered_from_expected_scores_over_many_levels() -> None:
    truth = 1234.0
    levels = [fixed(f"l{r}", float(r)) for r in range(900, 1700, 100)]
    games = [GameVsLevel(level, elo_to_score(truth - level.rating)) for level in levels for _ in range(50)]
    fit = fit_rating(games)
    assert fit.rating == pytest.approx(truth, abs=1.0)
    assert fit.low < truth < fit.high


def test_the_interval_narrows_with_more_games_and_covers_the_truth_mostly() -> None:
    rng = random.Random(3)
    levels = [fixed("a", 1000.0), fixed("b", 1300.0)]
    truth = 1150.0
    widths, covered = {}, 0
    for n in (20, 320):
        games = [GameVsLevel(level, float(rng.random() < elo_to_score(truth - level.rating)))
                 for level in levels for _ in range(n)]  # fmt: skip
        fit = fit_rating(games)
        widths[n] = fit.high - fit.low
    assert widths[320] < widths[20] / 3  # sqrt(16) = 4 with some slack
    for _ in range(100):
        games = [GameVsLevel(level, float(rng.random() < elo_to_score(truth - level.rating)))
                 for level in levels for _ in range(40)]  # fmt: skip
        fit = fit_rating(games)
        covered += fit.low <= truth <= fit.high
    assert 88 <= covered <= 100  # a 95% interval


def test_measured_levels_widen_the_interval_by_their_own_error() -> None:
    exact = fixed("exact", 800.0)
    measured = Level("measured", 800.0, 700.0, 860.0)
    sharp = fit_rating(games_at(exact, 10, 5, 10))
    blurred = fit_rating(games_at(measured, 10, 5, 10))
    assert blurred.rating == pytest.approx(sharp.rating)
    assert (blurred.stat_low, blurred.stat_high) == pytest.approx((sharp.stat_low, sharp.stat_high))
    assert blurred.rating - blurred.low == pytest.approx(math.hypot(sharp.rating - sharp.low, 100.0))
    assert blurred.high - blurred.rating == pytest.approx(math.hypot(sharp.high - sharp.rating, 60.0))


def test_a_player_who_lost_every_game_gets_a_finite_one_sided_figure() -> None:
    level = fixed("l", 1000.0)
    fit = fit_rating(games_at(level, 0, 0, 20))
    assert fit.one_sided and fit.score == 0.0
    assert math.isfinite(fit.low) and fit.low < fit.rating < fit.high < 1000.0
    assert not fit_rating(games_at(level, 1, 0, 19)).one_sided


@pytest.mark.parametrize("score", [-0.5, 1.5, math.nan])
def test_a_score_outside_0_1_is_refused_naming_the_level(score: float) -> None:
    with pytest.raises(StatsError, match="against l: score"):
        fit_rating([GameVsLevel(fixed("l", 1000.0), score)])
    with pytest.raises(StatsError, match="at least one game"):
        fit_rating([])


# -------------------------------------------------------------------------- rate()


def ladder_of(ratings: list[float]) -> list[Level]:
    return [fixed(f"level{r:.0f}", r) for r in ratings]


def expected_player(truth: float, games: int = 40):
    """A player ``truth`` strong whose results are its expected score, rounded."""
    def play(level: Level) -> LevelResult:
        wins = round(elo_to_score(truth - level.rating) * games)
        return LevelResult(level, wins, 0, games - wins)

    return play


def test_rate_bisects_then_fits_all_the_games() -> None:
    levels = ladder_of([300, 500, 700, 900, 1100, 1350, 1500, 1650, 1800])
    seen: list[str] = []
    rating = rate(levels, expected_player(1000.0), max_levels=6, on_level=lambda r: seen.append(r.level.name))
    assert seen == ["level1100", "level500", "level700", "level900"]  # 0.36, then 0.95, 0.85, 0.64
    assert [r.level.name for r in rating.results] == seen
    assert rating.fit.games == 160
    assert abs(rating.fit.rating - 1000.0) < 15
    assert rating.fit.low < 1000.0 < rating.fit.high


def test_rate_stops_after_max_levels() -> None:
    levels = ladder_of([300, 500, 700, 900, 1100, 1350, 1500, 1650, 1800])
    rating = rate(levels, expected_player(1000.0), max_levels=1)
    assert [r.level.name for r in rating.results] == ["level1100"]


def test_rate_refuses_a_level_with_only_aborted_games_and_an_unsorted_ladder() -> None:
    levels = ladder_of([300, 500])
    with pytest.raises(RatingError, match="level300 was aborted"):
        rate(levels, lambda level: LevelResult(level, 0, 0, 0, aborted=2), max_levels=3)
    with pytest.raises(RatingError, match="weakest first"):
        rate(list(reversed(levels)), expected_player(400.0), max_levels=3)
    with pytest.raises(RatingError, match="max_levels"):
        rate(levels, expected_player(400.0), max_levels=0)


LINE = re.compile(r"^rating: (-?\d+) \[(-?\d+), (-?\d+)\] on Stockfish's UCI_Elo scale \((\d+) games, levels (.+)\)$")


def test_the_summary_line_names_rating_interval_games_and_levels() -> None:
    levels = [Level("stockfish:nodes=1:random=0.33", 1100.0, 1000.0, 1180.0), fixed("stockfish:elo=1350:nodes=50000", 1350.0)]
    rating = rate(levels, expected_player(1200.0), max_levels=4)
    match = LINE.match(rating.line())
    assert match, rating.line()
    r, lo, hi, games = (int(match.group(i)) for i in range(1, 5))
    assert lo <= r <= hi and games == 80
    assert match.group(5) == "nodes=1:random=0.33 (1100), elo=1350:nodes=50000"
    assert rating.caveat() is None
    lost = Rating(fit_rating(games_at(levels[0], 0, 0, 4)), ())
    assert "lost every game" in (lost.caveat() or "")


# ----------------------------------------------------------------- ladder and cache


def test_the_uci_elo_levels_span_the_engine_s_range_with_its_maximum() -> None:
    plan = LevelPlan(elo_step=200, elo_nodes=1000)
    levels = elo_levels(ENGINE, plan)
    assert [level.rating for level in levels] == [1350, 1550, 1750, 1950, 2150, 2350, 2550, 2750, 2850]
    assert levels[0].name == "stockfish:elo=1350:nodes=1000" and not levels[0].measured


def test_the_ladder_keeps_the_chain_below_the_anchor_weakest_first() -> None:
    chain = [Level("x", 1400.0, 1300.0, 1500.0), Level("y", 1200.0, 1100.0, 1300.0), Level("z", 600.0, 400.0, 800.0)]
    ladder_ = Ladder(ENGINE, "anchor", chain, elo_levels=elo_levels(ENGINE, LevelPlan()))
    names = [level.name for level in ladder_.levels]
    assert names[:3] == ["z", "y", "stockfish:elo=1350:nodes=50000"]
    assert "x" not in names


def sample_chain() -> list[Level]:
    return [Level("stockfish:nodes=1:random=0.1", 1200.0, 1150.0, 1260.0),
            Level("stockfish:nodes=1:random=1", 400.0, 250.0, 520.0)]  # fmt: skip


def even_match(a: str, b: str, pairs: int) -> MatchResult:
    """Every pair won once and lost once."""
    return MatchResult(PairingResult(a, b, wins=pairs, losses=pairs, pairs=[(1.0, 0.0)] * pairs), [])


def test_the_cache_round_trips_per_engine_and_settings(tmp_path: Path) -> None:
    cache = tmp_path / "sub" / "levels.json"
    plan = LevelPlan(shares=(0.1, 1.0))
    anchor = plan.elo_spec(1350)
    assert cached_chain(cache, ENGINE, plan, anchor) is None
    write_chain(cache, ENGINE, plan, anchor, sample_chain(), [{"lower": "x"}])
    other = EngineInfo("/opt/sf16", "Stockfish 16", 1320, 3190)
    write_chain(cache, other, plan, plan.elo_spec(1320), sample_chain()[:1], [])
    levels, links = cached_chain(cache, ENGINE, plan, anchor)  # type: ignore[misc]
    assert levels == sample_chain() and links == [{"lower": "x"}]
    assert set(read_cache(cache)) == {"Stockfish 15.1", "Stockfish 16"}  # one engine's entry kept the other's
    assert cached_chain(cache, ENGINE, LevelPlan(shares=(0.1, 1.0), games_per_link=8), anchor) is None
    assert cached_chain(cache, ENGINE, plan, LevelPlan(elo_nodes=7).elo_spec(1350)) is None
    assert [p.name for p in cache.parent.iterdir()] == ["levels.json"]  # no temp file left


def test_a_corrupt_cache_is_ignored_with_a_warning_and_rewritten(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:  # fmt: skip
    cache = tmp_path / "levels.json"
    cache.write_text('{"format": 1, "engines": {"Stockfish 15.1": ')
    plan = LevelPlan(shares=(0.1, 1.0), games_per_link=2)
    calls = []

    def play(lower: str, upper: str, pairs: int) -> MatchResult:
        calls.append(lower)
        return even_match(lower, upper, pairs)

    with caplog.at_level(logging.WARNING):
        made = ladder(ENGINE, plan, cache, play)
    assert "ignoring the levels cache" in caplog.text and made.measured_now
    assert json.loads(cache.read_text())["engines"]["Stockfish 15.1"]["measured_with"]["shares"] == [0.1, 1.0]
    again = ladder(ENGINE, plan, cache, play)
    assert not again.measured_now and again.chain == made.chain and len(calls) == 2
    ladder(ENGINE, plan, cache, play, remeasure=True)
    assert len(calls) == 4


def test_the_default_cache_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ZEROCHESS_CACHE_DIR", str(tmp_path / "z"))
    assert default_cache_path() == tmp_path / "z" / "stockfish_levels.json"
    monkeypatch.delenv("ZEROCHESS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_cache_path() == tmp_path / "x" / "zerochess" / "stockfish_levels.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_path() == tmp_path / "home" / ".cache" / "zerochess" / "stockfish_levels.json"


@pytest.mark.parametrize("shares", [(), (0.5, 0.1), (0.1, 0.1), (0.0, 0.5), (0.5, 1.5)])
def test_a_bad_level_plan_is_refused(shares: tuple[float, ...]) -> None:
    with pytest.raises(LevelsError, match="shares"):
        LevelPlan(shares=shares)


# ---------------------------------------------------------------- the weak levels


class FirstMove:
    name = "first"

    def play(self, board: chess.Board, limits: object = None) -> chess.Move:
        return min(board.legal_moves, key=chess.Move.uci)

    def new_game(self) -> None:
        pass

    def close(self) -> None:
        pass


def moves_of(player: Player, plies: int = 30) -> list[str]:
    board, moves = chess.Board(), []
    for _ in range(plies):
        if board.is_game_over():
            break
        move = player.play(board)
        assert move in board.legal_moves
        moves.append(move.uci())
        board.push(move)
    return moves


def test_the_random_share_is_seeded_and_used() -> None:
    base_only = moves_of(MixPlayer(FirstMove(), 1e-9, seed=1))
    assert base_only == moves_of(FirstMove())
    assert moves_of(MixPlayer(FirstMove(), 0.5, seed=1)) == moves_of(MixPlayer(FirstMove(), 0.5, seed=1))
    mixed = moves_of(MixPlayer(FirstMove(), 0.5, seed=1))
    assert 0 < sum(a != b for a, b in zip(mixed, base_only))
    assert MixPlayer(FirstMove(), 0.25, seed=0).name == "first:random=0.25"
    with pytest.raises(PlayerError, match="random share"):
        MixPlayer(FirstMove(), 0.0, seed=0)


def test_level_names_split_into_base_and_share() -> None:
    assert split_mix("stockfish:nodes=1:random=0.25") == ("stockfish:nodes=1", 0.25)
    assert split_mix("stockfish:elo=1350:nodes=50000") == ("stockfish:elo=1350:nodes=50000", None)
    assert split_mix(mix_name("stockfish:nodes=1", 1.0)) == ("stockfish:nodes=1", 1.0)
    for bad in ("stockfish:nodes=1:random=x", "stockfish:nodes=1:random=2"):
        with pytest.raises(PlayerError, match="random share"):
            split_mix(bad)


# ------------------------------------------------------------- refine, compare


def test_refining_plays_the_level_nearest_the_rating_until_the_interval_is_narrow() -> None:
    from pipeline.evaluation.rating import half_width

    levels = ladder_of([300, 500, 700, 900, 1100, 1350, 1500, 1650, 1800])
    seen: list[str] = []
    coarse = rate(levels, expected_player(1000.0, games=10), max_levels=6)
    fine = rate(levels, expected_player(1000.0, games=10), max_levels=6, on_level=lambda r: seen.append(r.level.name),
                width=75.0, max_games=400)  # fmt: skip
    assert half_width(coarse.fit) > 75.0 >= half_width(fine.fit)
    extra = seen[len(coarse.results):]
    assert extra and set(extra) <= {"level900", "level1100"}  # the two levels either side of 1000
    assert fine.fit.games == 10 * len(seen) == sum(result.games for result in fine.results)
    assert len(fine.played) == len(seen) and len(fine.results) == len(set(seen))  # merged per level
    assert abs(fine.fit.rating - 1000.0) < 30


def test_refining_stops_before_passing_max_games() -> None:
    levels = ladder_of([300, 500, 700, 900, 1100, 1350, 1500, 1650, 1800])
    rating = rate(levels, expected_player(1000.0, games=10), max_levels=6, width=1.0, max_games=75)
    assert rating.fit.games == 70  # 4 bisection matches, then 3 more of 10: an 8th would pass 75


def test_a_negative_width_or_game_cap_is_refused() -> None:
    with pytest.raises(RatingError, match="width and max_games"):
        rate(ladder_of([300, 500]), expected_player(400.0), max_levels=2, width=-1.0)


def test_replay_plays_the_same_matches_and_the_difference_has_its_own_interval() -> None:
    from pipeline.evaluation.rating import Difference, replay

    levels = ladder_of([300, 500, 700, 900, 1100, 1350, 1500, 1650, 1800])
    first = rate(levels, expected_player(1000.0, games=20), max_levels=6, width=60.0, max_games=400)
    met: list[str] = []
    second = replay(first.played, expected_player(1200.0, games=20), on_level=lambda r: met.append(r.level.name))
    assert met == [result.level.name for result in first.played]
    assert second.fit.games == first.fit.games
    difference = Difference.of(second.fit, first.fit)
    assert difference.low < difference.elo < difference.high
    assert abs(difference.elo - 200.0) < 40 and difference.low < 200.0 < difference.high
    # the levels' own errors cancel: with measured levels the two ratings widen, their difference does not
    assert "difference: A - B = +" in difference.line("A", "B", second.fit.games)


def test_the_difference_ignores_the_levels_own_errors() -> None:
    from pipeline.evaluation.rating import Difference, replay

    measured = [Level(f"chain{r}", float(r), r - 150.0, r + 150.0) for r in (300, 500, 700, 900, 1100)]
    first = rate(measured, expected_player(800.0, games=40), max_levels=6)
    second = replay(first.played, expected_player(800.0, games=40))
    difference = Difference.of(first.fit, second.fit)
    assert first.fit.high - first.fit.low > 250  # the levels' errors are in each rating's interval
    assert difference.high - difference.low < (first.fit.stat_high - first.fit.stat_low) * 1.5
    assert difference.elo == pytest.approx(0.0, abs=1e-6)


def test_a_level_met_again_starts_from_the_next_openings_of_the_book(monkeypatch: pytest.MonkeyPatch) -> None:
    """``level_player``: the first match against a level plays the book's
    first pairs (as before), the k-th one starts k x pairs further on, round
    the book, so repeated matches are new games."""
    from pipeline.evaluation import rating as rating_module
    from pipeline.evaluation.match import Opening
    from pipeline.evaluation.rating import RateRequest, level_player
    from pipeline.players.spec import PlayerContext

    starts: list[tuple[str, str]] = []

    def fake_match(pool, player, level, openings, pairs, max_plies):  # noqa: ANN001, ANN202 - play_match's shape
        starts.append((level, openings[0].name))
        return MatchResult(PairingResult(player, level, wins=pairs, losses=pairs), [])

    monkeypatch.setattr(rating_module, "play_match", fake_match)
    book = [Opening(f"o{i}", chess.STARTING_FEN) for i in range(5)]
    request = RateRequest(checkpoint="net.pt", simulations=2, games=4, max_levels=2, openings=book,
                          context=PlayerContext())  # fmt: skip
    play = level_player(None, request, request.player, [])  # type: ignore[arg-type]
    a, b = fixed("a", 1000.0), fixed("b", 1200.0)
    results = [play(level) for level in (a, b, a, a, b)]
    assert starts == [("a", "o0"), ("b", "o0"), ("a", "o2"), ("a", "o4"), ("b", "o2")]
    assert all(result.games == 4 for result in results)
