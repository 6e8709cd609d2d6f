"""The native self-play driver (models.native_search.SelfPlayDriver).

Games are replayed with python-chess: every move legal, the recorded FENs,
history rows and meta values equal to models.encoding's, the policy indices
decoding to legal moves, and the result and termination agreeing with
python-chess's view of the final position.  Then: determinism across threads
and overlap, resignation bookkeeping, max_plies, random_plies, bad arguments.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import chess
import numpy as np
import pytest

from models import _native, encoding
from models.hash_evaluator import HashEvaluator
from models.driver_settings import DriverConfigError, GamesSettings, settings_from
from models.native_drivers import (
    MatchDriver,
    MatchGame,
    NativeGame,
    SelfPlayDriver,
    native_config,
)
from models.policy import get_policy_map
from models.search_config import SearchConfig

ENDGAMES = [
    "k7/8/1K6/8/8/8/8/7R w - - 0 1",  # mates come quickly
    "7k/5Q2/8/6K1/8/8/8/8 w - - 0 1",  # stalemates are easy to blunder into
    "8/8/8/4k3/8/8/3pK3/8 w - - 0 1",  # Kxd2 leaves bare kings
    "4k3/8/8/8/8/8/8/R3K3 w - - 97 80",  # fifty moves close
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
    chess.STARTING_FEN,
]
SEARCH = SearchConfig(num_simulations=24, leaves_per_batch=4, cache_size=5_000, temperature_plies=4)


def _play(**overrides) -> tuple[SelfPlayDriver, list[NativeGame]]:  # noqa: ANN003
    options = dict(games=8, games_in_flight=4, seed=3, start_fens=ENDGAMES, max_plies=120,
                   fast_simulations=8, full_search_prob=0.5, resign_threshold=-1.0)
    options.update(overrides)
    search = options.pop("search", SEARCH)
    evaluator = options.pop("evaluator", None) or HashEvaluator()
    on_game = options.pop("on_game", None)
    overlap = options.pop("overlap", True)
    driver = SelfPlayDriver(search, *settings_from(**options), overlap=overlap)
    return driver, driver.play(evaluator, on_game)


def _game_over(board: chess.Board, seen: Counter) -> str | None:
    """The project's terminal rules, written with python-chess."""
    if board.is_checkmate():
        return "checkmate"
    if board.is_stalemate():
        return "stalemate"
    if seen[board._transposition_key()] >= 3:  # noqa: SLF001
        return "threefold_repetition"
    if board.halfmove_clock >= 100:
        return "fifty_moves"
    if board.is_insufficient_material():
        return "insufficient_material"
    return None


def _check_game(game: NativeGame, search: SearchConfig, fast: int, max_plies: int) -> None:
    policy_map = get_policy_map("az4672")
    board = chess.Board(game.start_fen)
    history = encoding.PlaneHistory.from_board(board)
    seen = Counter([board._transposition_key()])  # noqa: SLF001
    plies = len(game.moves)
    assert game.turns.shape == (plies,) and game.history.shape == (plies, 8, 14)
    assert game.meta.shape == (plies, 7)
    assert game.policy_offsets.shape == (plies + 1,) and game.policy_offsets[0] == 0
    assert len(game.fens) == plies == len(game.root_q) == len(game.full_search)
    for ply, uci in enumerate(game.moves):
        assert _game_over(board, seen) is None, f"{game.game_id} went on after the end at ply {ply}"
        assert game.fens[ply] == board.fen()
        assert bool(game.turns[ply]) == board.turn
        np.testing.assert_array_equal(game.history[ply], history.snapshot())
        np.testing.assert_array_equal(game.meta[ply], encoding.board_meta(board))
        start, stop = game.policy_offsets[ply], game.policy_offsets[ply + 1]
        visited = [policy_map.index_to_move(board, int(i)) for i in game.policy_index[start:stop]]
        assert all(move in board.legal_moves for move in visited)
        visits = game.policy_visits[start:stop]
        assert np.all(visits > 0)
        np.testing.assert_array_equal(game.policy_probs[start:stop], (visits / visits.sum()).astype(np.float32))
        assert visits.sum() >= (search.num_simulations if game.full_search[ply] else fast)
        move = chess.Move.from_uci(uci)
        assert move in visited, f"{game.game_id} ply {ply}: played an unvisited move"
        if ply >= search.temperature_plies and not search.solver:
            assert visits[visited.index(move)] == visits.max()
        assert -1.0 <= game.root_q[ply] <= 1.0
        board.push(move)
        history.push(board)
        seen[board._transposition_key()] += 1  # noqa: SLF001
    over = _game_over(board, seen)
    if game.termination in ("resign", "max_plies"):
        assert over is None
        if game.termination == "max_plies":
            assert plies == max_plies and game.result == "1/2-1/2"
        return
    assert game.termination == over, game.game_id
    if over == "checkmate":
        assert game.result == ("0-1" if board.turn == chess.WHITE else "1-0")
    else:
        assert game.result == "1/2-1/2"
    white_won = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}[game.result]
    expected_z = [white_won if game.turns[p] else -white_won for p in range(plies)]
    assert [game.z(p) for p in range(plies)] == expected_z


@pytest.mark.parametrize("solver", [False, True], ids=["no-solver", "solver"])
def test_games_are_legal_and_end_by_the_rules(solver: bool) -> None:
    """Without the solver the move played after the temperature plies is the
    most visited; with it, a proven win or a move that is not a proven loss
    may be played instead (tests/test_solver.py)."""
    seen_games: list[NativeGame] = []
    search = dataclasses.replace(SEARCH, solver=solver)
    driver, games = _play(games=12, on_game=seen_games.append, random_plies=2, search=search)
    assert [game.game_id for game in games] == [f"game-{i:05d}" for i in range(12)]
    assert sorted(game.game_id for game in seen_games) == [game.game_id for game in games]
    for game in games:
        _check_game(game, search, 8, 120)
    terminations = {game.termination for game in games}
    assert len(terminations) >= 3, terminations
    assert driver.stats["games"] == 12
    assert driver.stats["positions"] == sum(len(game.moves) for game in games)
    assert driver.stats["full_searches"] == sum(int(game.full_search.sum()) for game in games)
    assert 0 < driver.stats["full_searches"] < driver.stats["positions"]
    assert driver.stats["evaluations"] >= driver.stats["batches"] > 0


@pytest.mark.parametrize(("threads", "overlap"), [(2, True), (2, False), (1, True)])
def test_same_games_whatever_the_threads_and_overlap(threads: int, overlap: bool) -> None:
    small_cache = SearchConfig(num_simulations=24, leaves_per_batch=4, cache_size=64,
                               temperature_plies=4)
    options = dict(games=6, games_in_flight=5, random_plies=3, start_fens=None, max_plies=40,
                   search=small_cache)
    _, expected = _play(threads=1, overlap=False, **options)
    _, got = _play(threads=threads, overlap=overlap, **options)
    assert len(got) == len(expected) == 6
    for a, b in zip(expected, got):
        assert (a.game_id, a.start_fen, a.moves, a.result, a.termination) == (
            b.game_id, b.start_fen, b.moves, b.result, b.termination)
        arrays = ("history", "meta", "root_q", "full_search", "policy_offsets", "policy_index",
                  "policy_visits")
        for name in arrays:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    _, other_seed = _play(threads=threads, overlap=overlap, **{**options, "seed": 4})
    assert [game.moves for game in other_seed] != [game.moves for game in expected]


class _WhiteIsLost:
    """Value -0.99 for white to move and +0.99 for black (from the side to move)."""

    def evaluate_batch(self, planes, rows, indices):  # noqa: ANN001, ANN201
        black = planes[:, 112, 0, 0].astype(np.float32)
        return np.zeros(len(rows), np.float32), np.where(black == 1, 0.99, -0.99).astype(np.float32)


def test_white_resigns_after_resign_plies_of_its_own() -> None:
    driver, games = _play(games=3, start_fens=None, evaluator=_WhiteIsLost(), resign_threshold=-0.9,
                          resign_plies=3, resign_playthrough=0.0)
    for game in games:
        assert (game.result, game.termination, len(game.moves)) == ("0-1", "resign", 5)
        assert not game.playthrough and game.would_resign is None
        assert game.z(0) == -1 and game.z(1) == 1
    assert driver.stats["resigned"] == 3 and driver.stats["false_resigns"] == 0


def test_playthrough_games_record_who_would_have_resigned() -> None:
    driver, games = _play(games=3, start_fens=None, evaluator=_WhiteIsLost(), resign_threshold=-0.9,
                          resign_plies=3, resign_playthrough=1.0, max_plies=12)
    for game in games:
        assert game.playthrough and game.would_resign is chess.WHITE
        assert (game.termination, len(game.moves)) == ("max_plies", 12)
        assert game.false_resign
    stats = driver.stats
    assert (stats["playthrough"], stats["false_resigns"], stats["resigned"]) == (3, 3, 0)


def test_resignation_disabled_at_minus_one() -> None:
    _, games = _play(games=2, start_fens=None, evaluator=_WhiteIsLost(), resign_threshold=-1.0,
                     max_plies=10)
    assert all(game.termination == "max_plies" and not game.playthrough for game in games)


def test_max_plies_and_random_plies() -> None:
    _, games = _play(games=5, games_in_flight=1, start_fens=None, random_plies=6, max_plies=3)
    starts = {game.start_fen for game in games}
    assert len(starts) >= 3
    for game in games:
        board = chess.Board(game.start_fen)
        assert board.ply() == 6 and board.outcome() is None
        assert (len(game.moves), game.result, game.termination) == (3, "1/2-1/2", "max_plies")


def test_temperature_samples_opening_moves() -> None:
    search = SearchConfig(num_simulations=24, leaves_per_batch=4, cache_size=0, temperature=2.0,
                          temperature_plies=2,
                          dirichlet_epsilon=0.0)
    _, games = _play(games=12, start_fens=None, search=search, max_plies=1, full_search_prob=1.0)
    assert len({game.moves[0] for game in games}) >= 3  # sampled (the evaluator is deterministic)
    greedy = SearchConfig(num_simulations=24, leaves_per_batch=4, cache_size=0, temperature_plies=0,
                          dirichlet_epsilon=0.0)
    _, games = _play(games=6, start_fens=None, search=greedy, max_plies=1, full_search_prob=1.0)
    assert len({game.moves[0] for game in games}) == 1  # no noise: always the most visited move


def test_bad_evaluator_output_raises() -> None:
    class Short:
        def evaluate_batch(self, planes, rows, indices):  # noqa: ANN001, ANN202
            return np.zeros(len(rows) - 1, np.float32), np.zeros(len(planes), np.float32)

    with pytest.raises(ValueError, match="shape"):
        _play(games=2, evaluator=Short())


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("games", -1),
        ("games_in_flight", 0),
        ("random_plies", -2),
        ("max_plies", 0),
        ("fast_simulations", 0),
        ("resign_plies", 0),
        ("threads", 0),
        ("threads", 1.5),
        ("full_search_prob", 1.5),
        ("resign_playthrough", -0.1),
        ("resign_threshold", -2.0),
        ("start_fens", ["not a fen"]),
        ("start_fens", ["8/8/8/8/8/8/8/K7 w - - 0 1"]),
        ("start_fens", []),
    ],
)
def test_bad_arguments_name_the_key(key: str, value: object) -> None:
    options = dict(games=1, games_in_flight=1, seed=0)
    options[key] = value
    with pytest.raises(DriverConfigError, match=key):
        SelfPlayDriver(SEARCH, *settings_from(**options))


def test_no_games() -> None:
    driver = SelfPlayDriver(SEARCH, GamesSettings(games=0, games_in_flight=4, seed=0))
    assert driver.play(HashEvaluator()) == [] and driver.stats["games"] == 0


STEP_PARTS = ("deliver", "play", "refill", "collect", "cache", "gather")


@pytest.mark.parametrize("threads", [1, 2])
def test_step_timers_split_the_steps(threads: int) -> None:
    """The core times step()'s parts (bench/driver_threads.py prints them):
    each part is counted, and together they fit in the time the steps took."""
    driver = SelfPlayDriver(SEARCH, *settings_from(games=6, games_in_flight=6, seed=3, start_fens=ENDGAMES,
                                                   max_plies=20, threads=threads))  # fmt: skip
    driver.play(HashEvaluator())
    parts = {part: driver.stats[f"{part}_seconds"] for part in STEP_PARTS}
    assert all(seconds > 0.0 for seconds in parts.values()), parts
    assert sum(parts.values()) <= driver.stats["wall_seconds"]


def test_one_lanes_batch_is_copied_while_the_other_lane_steps() -> None:
    """batch() spreads its copy over the core's threads; a copy of lane 0
    made while another Python thread steps lane 1 (both without the GIL)
    takes turns with it on the pool and gives the same planes."""
    settings, rules = settings_from(games=40, games_in_flight=16, seed=3, start_fens=ENDGAMES, threads=2)
    core = _native.SelfPlayCore(native_config(settings, (SEARCH,), rules))
    assert core.lanes == 2 and core.step(0) > 0
    expected = core.batch(0)
    assert expected[0].any()

    def copies() -> list[bool]:
        return [all(np.array_equal(a, b) for a, b in zip(core.batch(0), expected)) for _ in range(30)]

    with ThreadPoolExecutor(max_workers=1) as executor:
        copied = executor.submit(copies)
        for _ in range(30):
            if core.step(1):
                planes, rows, _ = core.batch(1)
                core.set_results(1, (np.zeros(len(rows), np.float32), np.zeros(len(planes), np.float32)))
        assert all(copied.result())


# ---------------------------------------------------------------------------
# Matches


def _check_match_game(game: MatchGame, index: int, max_plies: int) -> None:
    assert game.a_is_white == (index % 2 == 0)
    board = chess.Board(game.start_fen)
    seen = Counter([board._transposition_key()])  # noqa: SLF001
    for uci in game.moves:
        assert _game_over(board, seen) is None
        move = chess.Move.from_uci(uci)
        assert move in board.legal_moves
        board.push(move)
        seen[board._transposition_key()] += 1  # noqa: SLF001
    over = _game_over(board, seen)
    if game.termination == "max_plies":
        assert over is None and len(game.moves) == max_plies and game.result == "1/2-1/2"
    else:
        assert game.termination == over
        decisive = "0-1" if board.turn == chess.WHITE else "1-0"
        expected = decisive if over == "checkmate" else "1/2-1/2"
        assert game.result == expected


def test_match_games_are_legal_with_alternating_sides() -> None:
    search = SearchConfig(num_simulations=16, leaves_per_batch=4, cache_size=1000,
                          temperature_plies=0)
    options = dict(games=8, seed=2, start_fens=ENDGAMES, max_plies=80, random_plies=1)
    driver = MatchDriver(search, None, GamesSettings(games_in_flight=3, threads=2, id_prefix="match", **options))
    games = driver.play(HashEvaluator(seed=1), HashEvaluator(seed=2))
    assert [game.game_id for game in games] == [f"match-{i:05d}" for i in range(8)]
    for index, game in enumerate(games):
        _check_match_game(game, index, 80)
    assert driver.stats["batches_a"] > 0 and driver.stats["batches_b"] > 0
    again = MatchDriver(search, None, GamesSettings(games_in_flight=5, threads=1, **options)).play(
        HashEvaluator(seed=1), HashEvaluator(seed=2)
    )
    assert [game.moves for game in again] == [game.moves for game in games]


def test_match_the_stronger_search_mates() -> None:
    """A searches 200 simulations, B one: from a mate in one, A mates as white every time
    (no solver: it would find the mate in one when B expands the root)."""
    strong = SearchConfig(num_simulations=200, leaves_per_batch=4, cache_size=0,
                          temperature_plies=0, solver=False)
    weak = SearchConfig(num_simulations=1, leaves_per_batch=1, cache_size=0, temperature_plies=0,
                        solver=False)
    settings = GamesSettings(games=6, games_in_flight=6, seed=0, start_fens=[ENDGAMES[0]], max_plies=1)
    driver = MatchDriver(strong, weak, settings)
    games = driver.play(HashEvaluator(seed=4), HashEvaluator(seed=4))
    for index, game in enumerate(games):
        _check_match_game(game, index, 1)
    a_white = [game for game in games if game.a_is_white]
    assert all(game.termination == "checkmate" and game.score_a == 1.0 for game in a_white)
    assert any(game.termination != "checkmate" for game in games if not game.a_is_white)
