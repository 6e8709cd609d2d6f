"""Gumbel AlphaZero (``search.algorithm: gumbel``) in both backends.

The schedule of sequential halving against mctx's, the two backends equal
visit for visit for the same Gumbel draws (given per move), the budget spent
exactly, Gumbel-top-k at the root, the improved policy as a distribution and
as the self-play target, and known-answer positions where Gumbel at 2-16
simulations finds the right move at least as often as PUCT.
"""

from __future__ import annotations

import dataclasses
import math

import chess
import numpy as np
import pytest

from models import _native
from models.evaluation import EvalCache
from models.hash_evaluator import HashEvaluator
from models.driver_settings import settings_from
from models.native_drivers import SelfPlayDriver
from models.native_tree import NativeCache, NativeTree, run_native_searches
from models.search_config import SearchConfig, SearchError, select_move
from models.search_drivers import run_searches
from models.search_rules import considered_visit
from models.search_tree import GameTree
from tests.helpers.boards import KIWIPETE
from tests.helpers.search_positions import FREE_QUEEN, NEAR_MATE, MaterialEvaluator
from tests.helpers.searches import assert_same_gumbel, backend_positions, gumbel_noise

GUMBEL = SearchConfig(algorithm="gumbel", num_simulations=64, leaves_per_batch=1, cache_size=0)


def mctx_sequence(considered: int, budget: int) -> list[int]:
    """mctx's get_sequence_of_considered_visits, written out as the paper's
    Algorithm 2 describes it (the whole sequence)."""
    if considered <= 1:
        return list(range(budget))
    log2max = math.ceil(math.log2(considered))
    sequence: list[int] = []
    visits = [0] * considered
    width = considered
    while len(sequence) < budget:
        extra = max(1, int(budget / (log2max * width)))
        for _ in range(extra):
            sequence.extend(visits[:width])
            for i in range(width):
                visits[i] += 1
        width = max(2, width // 2)
    return sequence[:budget]


@pytest.mark.parametrize("considered", [1, 2, 3, 4, 5, 8, 16, 20])
def test_schedule_is_mctx_sequential_halving(considered: int) -> None:
    for budget in (1, 2, 3, 5, 8, 16, 32, 50, 100, 200, 800):
        expected = mctx_sequence(considered, budget)
        assert [considered_visit(considered, budget, k) for k in range(budget)] == expected
        assert [_native.considered_visit(considered, budget, k) for k in range(budget)] == expected
    assert _native.considered_visit(16, 10**9, 10**9 - 1) == considered_visit(16, 10**9, 10**9 - 1)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("algorithm", "alphazero"),
        ("gumbel_considered", 0),
        ("gumbel_considered", 2.5),
        ("gumbel_scale", -1.0),
        ("gumbel_c_visit", -5.0),
        ("gumbel_c_scale", float("nan")),
        ("solver", "yes"),
        ("solver_threats", "yes"),
    ],
)
def test_bad_gumbel_settings_name_the_key(key: str, value: object) -> None:
    with pytest.raises(SearchError, match=f"search.{key}"):
        SearchConfig(**{key: value})


GUMBEL_CONFIGS = [
    pytest.param(dict(leaves_per_batch=1, cache_size=0), id="lpb1"),
    pytest.param(
        dict(leaves_per_batch=8, cache_size=10_000, gumbel_considered=4), id="lpb8-m4-cache"
    ),
    pytest.param(
        dict(leaves_per_batch=4, cache_size=0, gumbel_scale=0.0, solver=False), id="lpb4-nosolver"
    ),
    pytest.param(dict(leaves_per_batch=2, cache_size=0, solver_threats=True), id="lpb2-threats"),
]


@pytest.mark.parametrize("overrides", GUMBEL_CONFIGS)
def test_same_visits_as_python_search(overrides: dict) -> None:
    """Same given Gumbel noise: the same visits, halving winner and improved policy."""
    config = dataclasses.replace(GUMBEL, num_simulations=96, **overrides)
    evaluator = HashEvaluator(seed=3)
    for index, board in enumerate(backend_positions()):
        size = config.cache_size
        python_tree = GameTree(
            board.copy(), config, needs_planes=True, cache=EvalCache(size) if size else None
        )
        native_tree = NativeTree(board.copy(), config, cache=NativeCache(size) if size else None)
        noise = gumbel_noise(board, index)
        python_tree.start(gumbel=noise)
        native_tree.start(gumbel=noise)
        run_searches([python_tree], evaluator)
        run_native_searches([native_tree], evaluator)
        assert_same_gumbel(python_tree, native_tree, f"{board.fen()} {overrides}")


def test_same_visits_with_tree_reuse_and_each_search_runs_the_budget() -> None:
    config = dataclasses.replace(GUMBEL, num_simulations=40, leaves_per_batch=2)
    evaluator = HashEvaluator(seed=5)
    for board in (chess.Board(), chess.Board(KIWIPETE), chess.Board(NEAR_MATE[1])):
        python_tree = GameTree(board.copy(), config, needs_planes=True)
        native_tree = NativeTree(board.copy(), config)
        for step in range(3):
            if python_tree._is_terminal_root():
                break
            kept = int(native_tree.result().visits.sum()) if step else 0
            noise = gumbel_noise(python_tree.board, step)
            python_tree.start(gumbel=noise)
            native_tree.start(gumbel=noise)
            run_searches([python_tree], evaluator)
            run_native_searches([native_tree], evaluator)
            assert_same_gumbel(python_tree, native_tree, f"{python_tree.board.fen()} step {step}")
            assert native_tree.simulations_done == python_tree.simulations_done == 40
            assert int(native_tree.result().visits.sum()) == kept + 40
            move = python_tree.result().best_move
            python_tree.advance(move)
            native_tree.advance(move)


@pytest.mark.parametrize("considered", [1, 2, 4, 16])
def test_sequential_halving_spends_exactly_the_budget_on_the_gumbel_top_k(considered: int) -> None:
    board = chess.Board(KIWIPETE)
    evaluator = HashEvaluator(seed=1)
    for sims in (1, 2, 3, 5, 8, 16, 32, 100):
        config = dataclasses.replace(GUMBEL, num_simulations=sims, gumbel_considered=considered)
        tree = NativeTree(board.copy(), config)
        noise = gumbel_noise(board, sims)
        tree.start(gumbel=noise)
        run_native_searches([tree], evaluator)
        result = tree.result()
        assert int(result.visits.sum()) == sims == tree.simulations_done
        # The first round visits the top-m moves by g + log prior, and nothing else ever.
        scores = {m: noise[m] + math.log(p) for m, p in zip(result.moves, result.priors)}
        top = sorted(scores, key=scores.get, reverse=True)[: min(considered, len(scores))]
        visited = {m for m, v in zip(result.moves, result.visits) if v > 0}
        assert visited == set(top[: min(sims, len(top))]), sims
        assert result.visits[result.moves.index(result.best_move)] == result.visits.max()


def test_improved_policy_is_a_distribution_and_the_training_target() -> None:
    evaluator = HashEvaluator(seed=2)
    for board in (chess.Board(), chess.Board(KIWIPETE), chess.Board(NEAR_MATE[0])):
        python_tree = GameTree(board.copy(), GUMBEL, needs_planes=True)
        native_tree = NativeTree(board.copy(), GUMBEL)
        for tree, run in ((python_tree, run_searches), (native_tree, run_native_searches)):
            tree.start(add_noise=True)
            run([tree], evaluator)
            result = tree.result()
            policy = result.improved_policy
            assert policy is not None and policy.shape == (len(result.moves),)
            assert np.all(policy > 0) and policy.sum() == pytest.approx(1.0, abs=1e-12)
            assert result.policy is policy
            # pi' = softmax(log prior + sigma(completed Q)): pi' / prior grows with Q
            # over the visited moves, and is the same for every unvisited move.
            ratio = policy / result.priors
            visited = np.flatnonzero(result.visits > 0)
            unvisited = np.flatnonzero(result.visits == 0)
            if board.fen() == NEAR_MATE[0]:  # the solver sends every simulation to the mate
                assert result.best_move.uci() == "d1d8" and len(visited) == 1
                continue
            assert len(visited) >= 2 and len(unvisited) >= 2
            np.testing.assert_allclose(ratio[unvisited], ratio[unvisited[0]], rtol=1e-9)
            by_q = visited[np.argsort(result.q_values[visited], kind="stable")]
            assert np.all(np.diff(ratio[by_q]) >= -1e-12)
            for ply in (0, 100):  # no temperature: the halving winner is played
                assert (
                    select_move(result, ply, GUMBEL, np.random.default_rng(0)) == result.best_move
                )
    puct = NativeTree(chess.Board(), dataclasses.replace(GUMBEL, algorithm="puct"))
    puct.start()
    run_native_searches([puct], evaluator)
    assert puct.result().improved_policy is None


def test_gumbel_noise_is_seeded_and_a_given_noise_must_cover_every_move() -> None:
    evaluator = HashEvaluator()
    results = []
    for seed in (1, 1, 2):
        tree = NativeTree(chess.Board(), GUMBEL, seed=seed)
        tree.start(add_noise=True)
        run_native_searches([tree], evaluator)
        results.append(tree.result().visits)
    assert np.array_equal(results[0], results[1]) and not np.array_equal(results[0], results[2])
    partial = dict(list(gumbel_noise(chess.Board(), 0).items())[1:])
    for tree in (
        GameTree(chess.Board(), GUMBEL, needs_planes=True),
        NativeTree(chess.Board(), GUMBEL),
    ):
        with pytest.raises(SearchError, match="gumbel noise has no finite value for [a-h][1-8]"):
            tree.start(gumbel=partial)


def test_gumbel_self_play_records_the_improved_policy() -> None:
    search = dataclasses.replace(GUMBEL, num_simulations=16, leaves_per_batch=4, cache_size=2000)
    options = dict(
        games=4,
        games_in_flight=4,
        seed=1,
        random_plies=2,
        max_plies=30,
        full_search_prob=0.5,
        fast_simulations=4,
        resign_threshold=-1.0,
    )
    games = SelfPlayDriver(search, *settings_from(threads=1, **options)).play(HashEvaluator())
    again = SelfPlayDriver(search, *settings_from(threads=2, **options)).play(HashEvaluator())
    assert [g.moves for g in again] == [g.moves for g in games]
    for game in games:
        board = chess.Board(game.start_fen)
        for ply, uci in enumerate(game.moves):
            span = slice(game.policy_offsets[ply], game.policy_offsets[ply + 1])
            probs = game.policy_probs[span]
            assert len(probs) == board.legal_moves.count()  # every legal move is listed
            assert probs.dtype == np.float32 and probs.sum() == pytest.approx(1.0, abs=1e-5)
            visits = game.policy_visits[span]
            assert visits.sum() >= (16 if game.full_search[ply] else 4)
            board.push_uci(uci)


@pytest.mark.parametrize("sims", [2, 4, 8, 16])
def test_gumbel_finds_the_free_queen_at_least_as_often_as_puct(sims: int) -> None:
    """Uniform policy, material value: the one move that wins the queen.
    PUCT (no noise) keeps deepening its first moves; Gumbel spreads the
    budget over the sampled moves and keeps the best."""
    evaluator = MaterialEvaluator()
    found = {}
    for algorithm, noise, seeds in (("puct", False, 1), ("puct", True, 4), ("gumbel", True, 4)):
        config = SearchConfig(
            num_simulations=sims,
            algorithm=algorithm,
            solver=False,
            leaves_per_batch=1,
            cache_size=0,
        )
        trees = []
        for seed in range(seeds):
            for index, (fen, _) in enumerate(FREE_QUEEN):
                tree = NativeTree(chess.Board(fen), config, seed=100 * seed + index)
                tree.start(add_noise=noise)
                trees.append(tree)
        run_native_searches(trees, evaluator)
        answers = [answer for _ in range(seeds) for _, answer in FREE_QUEEN]
        found[(algorithm, noise)] = np.mean(
            [t.result().best_move.uci() == a for t, a in zip(trees, answers)]
        )
    assert found[("gumbel", True)] >= max(found[("puct", False)], found[("puct", True)])
    if sims >= 8:
        assert found[("gumbel", True)] >= 0.25 > found[("puct", False)]


def test_uci_lines_lead_with_the_halving_winner() -> None:
    """Sequential halving ends with moves of equal visits: the UCI engine's
    first line (its bestmove) must be the winner, not the higher prior."""
    from pipeline.uci.analysis import root_lines

    evaluator = HashEvaluator(seed=4)
    config = dataclasses.replace(GUMBEL, num_simulations=24)
    ties = 0
    for index, board in enumerate(backend_positions()[:12]):
        for tree, run in (
            (GameTree(board.copy(), config, needs_planes=True), run_searches),
            (NativeTree(board.copy(), config), run_native_searches),
        ):
            tree.start(gumbel=gumbel_noise(board, index))
            run([tree], evaluator)
            result = tree.result()
            assert root_lines(tree)[0].move == result.best_move
            ties += int(np.sum(result.visits == result.visits.max())) > 1
    assert ties > 0


def test_no_dirichlet_noise_with_gumbel() -> None:
    """add_noise draws Gumbel noise only: the priors stay the network's."""
    evaluator = HashEvaluator(seed=6)
    priors = []
    for noise in (False, True):
        for tree, run in (
            (GameTree(chess.Board(KIWIPETE), GUMBEL, needs_planes=True), run_searches),
            (NativeTree(chess.Board(KIWIPETE), GUMBEL), run_native_searches),
        ):
            tree.start(add_noise=noise)
            run([tree], evaluator)
            result = tree.result()
            priors.append(dict(zip([m.uci() for m in result.moves], result.priors)))
    for other in priors[1:]:
        assert other.keys() == priors[0].keys()
        assert all(other[m] == pytest.approx(priors[0][m], rel=1e-12) for m in other)
