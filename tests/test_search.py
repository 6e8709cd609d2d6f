"""PUCT search: golden tactics, invariants of the statistics, batching, reuse."""

from __future__ import annotations

from collections.abc import Sequence

import chess
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.encoding import encode_board
from models.evaluation import EvalCache, EvaluationError, Leaf, UniformEvaluator, encode_leaves
from models.search_backend import choose_move
from models.search_config import SearchConfig, SearchError, select_move, terminal_value
from models.search_drivers import run_search, run_searches
from models.search_tree import GameTree
from tests.helpers.boards import random_board
from tests.helpers.search_positions import SIMPLE_MATES_IN_ONE

MATES_IN_ONE = [*SIMPLE_MATES_IN_ONE, ("4k3/8/4K3/8/8/8/8/R7 w - - 0 1", "a1a8")]


class TableEvaluator:
    """Uniform priors; the value of listed positions (by FEN board part + side)."""

    needs_planes = False

    def __init__(self, values: dict[str, float]) -> None:
        self.values = values

    def evaluate(self, leaves: Sequence[Leaf]) -> list[tuple[np.ndarray, float]]:
        out = []
        for leaf in leaves:
            key = " ".join(leaf.board.fen().split()[:2])
            out.append((np.full(len(leaf.moves), 1.0 / len(leaf.moves)), self.values.get(key, 0.0)))
        return out


class BadEvaluator:
    needs_planes = False

    def __init__(self, priors: float = float("nan"), value: float = 0.0) -> None:
        self.priors, self.value = priors, value

    def evaluate(self, leaves: Sequence[Leaf]) -> list[tuple[np.ndarray, float]]:
        return [(np.full(len(leaf.moves), self.priors), self.value) for leaf in leaves]


@pytest.mark.parametrize(("fen", "mate"), MATES_IN_ONE)
def test_finds_mate_in_one_with_uniform_evaluator(fen: str, mate: str) -> None:
    result = run_search(chess.Board(fen), UniformEvaluator(), SearchConfig(num_simulations=400))
    assert result.best_move.uci() == mate
    assert result.root_value > 0.5


def test_avoids_a_move_that_allows_mate_in_one() -> None:
    # Black threatens Re1#; only luft moves or guarding e1 keep white alive.
    board = chess.Board("4r1k1/5ppp/8/8/8/8/5PPP/1R4K1 w - - 0 1")
    result = run_search(board, UniformEvaluator(), SearchConfig(num_simulations=3000))
    board.push(result.best_move)
    for reply in board.legal_moves:
        board.push(reply)
        assert not board.is_checkmate(), f"{result.best_move} allows {reply}"
        board.pop()


def test_prefers_the_move_the_value_function_likes() -> None:
    # A bandit over the 20 opening moves: after 1.e4 black's position is bad.
    after_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b"
    result = run_search(chess.Board(), TableEvaluator({after_e4: -0.9}), SearchConfig(num_simulations=200))
    assert result.best_move == chess.Move.from_uci("e2e4")
    best = result.moves.index(result.best_move)
    assert result.q_values[best] == np.nanmax(result.q_values) > 0


@pytest.mark.parametrize("leaves_per_batch", [1, 8, 32])
@pytest.mark.parametrize("simulations", [1, 17, 200])
def test_root_visits_equal_simulations(leaves_per_batch: int, simulations: int) -> None:
    config = SearchConfig(num_simulations=simulations, leaves_per_batch=leaves_per_batch)
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    result = run_search(board, UniformEvaluator(), config)
    assert int(result.visits.sum()) == simulations
    assert set(result.moves) == set(board.legal_moves)
    assert result.policy.sum() == pytest.approx(1.0)
    assert (result.policy >= 0).all()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(0, 80))
def test_policy_is_a_distribution_over_legal_moves(seed: int, plies: int) -> None:
    board = random_board(seed, plies)
    if board.is_game_over(claim_draw=True):
        return
    result = run_search(board, UniformEvaluator(), SearchConfig(num_simulations=50, leaves_per_batch=4))
    assert sorted(m.uci() for m in result.moves) == sorted(m.uci() for m in board.legal_moves)
    assert result.policy.sum() == pytest.approx(1.0)
    assert int(result.visits.sum()) == 50
    assert result.best_move in board.legal_moves


def test_leaf_planes_equal_encoding_the_full_game_line() -> None:
    # Leaves collected inside the tree must be encoded as if the game had
    # been played up to them: tree path + the game's own history.
    board = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "e2e4"]:
        board.push_uci(uci)
    tree = GameTree(board.copy(), SearchConfig(num_simulations=120, leaves_per_batch=6), needs_planes=True)
    tree.start()
    evaluator = UniformEvaluator()
    checked = 0
    while not tree.finished:
        pending = tree.collect()
        for item in pending:
            line = board.copy()
            for node, index in item.path:
                line.push(node.moves[index])
            np.testing.assert_array_equal(encode_leaves([item.leaf])[0], encode_board(line))
            checked += 1
        tree.deliver(pending, evaluator.evaluate([item.leaf for item in pending]))
    assert checked > 60


def test_batched_driver_shares_evaluator_calls_between_games() -> None:
    config = SearchConfig(num_simulations=64, leaves_per_batch=4)
    evaluator = UniformEvaluator()
    trees = [GameTree(random_board(seed, 6), config) for seed in range(16)]
    for tree in trees:
        tree.start()
    calls = run_searches(trees, evaluator)
    assert all(int(tree.result().visits.sum()) == 64 for tree in trees)
    assert evaluator.positions / calls > 16  # many games' leaves per batch
    assert calls < 64


def test_virtual_loss_spreads_a_batch_over_distinct_leaves() -> None:
    tree = GameTree(chess.Board(), SearchConfig(num_simulations=100, leaves_per_batch=16))
    tree.start()
    root = tree.collect()
    assert [item.node for item in root] == [tree.root]
    tree.deliver(root, UniformEvaluator().evaluate([item.leaf for item in root]))
    pending = tree.collect()
    assert len(pending) == 16
    assert len({id(item.node) for item in pending}) == 16


def test_tree_reuse_keeps_the_chosen_subtree() -> None:
    tree = GameTree(chess.Board(), SearchConfig(num_simulations=300, leaves_per_batch=4))
    tree.start()
    run_searches([tree], UniformEvaluator())
    result = tree.result()
    move = result.best_move
    kept = int(result.visits[result.moves.index(move)])
    tree.advance(move)
    assert tree.root.visits == kept
    assert int(tree.result().visits.sum()) == kept - 1
    tree.start(num_simulations=kept + 40)  # tops the kept visits up
    run_searches([tree], UniformEvaluator())
    assert int(tree.result().visits.sum()) == kept + 40
    tree.start(num_simulations=10)  # already more: no new simulations
    run_searches([tree], UniformEvaluator())
    assert int(tree.result().visits.sum()) == kept + 40


def test_cache_does_not_change_results_for_a_pure_evaluator() -> None:
    board = chess.Board()
    base = SearchConfig(num_simulations=400, leaves_per_batch=1)
    cached = GameTree(board.copy(), base, cache=EvalCache(10_000))
    plain = GameTree(board.copy(), base, cache=None)
    for tree in (cached, plain):
        tree.start()
        run_searches([tree], UniformEvaluator())
    np.testing.assert_array_equal(cached.result().visits, plain.result().visits)


def test_threefold_repetition_is_a_draw_inside_the_tree() -> None:
    board = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]:
        board.push_uci(uci)
    # Black to move: ...Ng8 repeats the start position a third time.
    tree = GameTree(board.copy(), SearchConfig(num_simulations=200))
    tree.start()
    run_searches([tree], UniformEvaluator())
    root = tree.root
    child = root.children[root.moves.index(chess.Move.from_uci("f6g8"))]
    assert child is not None and child.repetitions == 2 and child.terminal_value == 0.0


def test_terminal_values_follow_the_rules() -> None:
    mated = chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1")
    stalemate = chess.Board("k7/2Q5/1K6/8/8/8/8/8 b - - 0 1")
    bare_kings = chess.Board("8/8/4k3/8/8/3K4/8/8 w - - 0 1")
    fifty = chess.Board("8/8/4k3/8/8/3K4/8/7R w - - 100 80")
    alive = chess.Board()
    for board, expected in [(mated, -1.0), (stalemate, 0.0), (bare_kings, 0.0), (fifty, 0.0), (alive, None)]:
        assert terminal_value(board, list(board.legal_moves), 0) == expected
    assert terminal_value(alive, list(alive.legal_moves), 2) == 0.0


def test_dirichlet_noise_only_at_the_root_and_reproducible() -> None:
    config = SearchConfig(num_simulations=32)

    def priors(seed: int, noise: bool) -> np.ndarray:
        tree = GameTree(chess.Board(), config, rng=np.random.default_rng(seed))
        tree.start(add_noise=noise)
        run_searches([tree], UniformEvaluator())
        return tree.result().priors

    uniform = np.full(20, 1 / 20)
    np.testing.assert_allclose(priors(0, False), uniform)
    noisy = priors(0, True)
    assert not np.allclose(noisy, uniform)
    assert noisy.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(noisy, priors(0, True))


def test_temperature_samples_early_and_takes_the_best_later() -> None:
    config = SearchConfig(num_simulations=100, temperature_plies=30)
    result = run_search(chess.Board(), UniformEvaluator(), config)
    rng = np.random.default_rng(1)
    early = {select_move(result, 0, config, rng) for _ in range(200)}
    late = {select_move(result, 30, config, rng) for _ in range(20)}
    assert len(early) > 5
    assert late == {result.best_move}


@pytest.mark.parametrize("backend", ["native", "python"])
def test_choose_move_under_a_clock_returns_a_legal_move(backend: str) -> None:
    board = chess.Board(MATES_IN_ONE[0][0])
    move = choose_move(board, 1.0, UniformEvaluator(), SearchConfig(leaves_per_batch=8, backend=backend))
    assert move.uci() == MATES_IN_ONE[0][1]


def test_backend_is_validated_and_needs_the_batch_protocol() -> None:
    with pytest.raises(SearchError, match="backend.*'gpu'"):
        SearchConfig(backend="gpu")
    assert SearchConfig().backend == "native" and SearchConfig().uses_native(UniformEvaluator())
    assert not SearchConfig(backend="python").uses_native(UniformEvaluator())
    assert not SearchConfig().uses_native(BadEvaluator())  # only evaluate(leaves): the python search


def test_uniform_evaluator_batch_protocol_gives_zero_logits_and_values() -> None:
    evaluator = UniformEvaluator()
    planes = np.zeros((3, 119, 8, 8), np.uint8)
    logits, values = evaluator.evaluate_batch(planes, np.array([0, 0, 1, 2], np.int64), np.arange(4, dtype=np.int64))
    assert logits.dtype == values.dtype == np.float32
    assert logits.tolist() == [0.0] * 4 and values.tolist() == [0.0] * 3
    assert (evaluator.calls, evaluator.positions) == (1, 3)


def test_bad_inputs_raise_errors_that_name_the_value() -> None:
    with pytest.raises(SearchError, match="num_simulations.*-5"):
        SearchConfig(num_simulations=-5)
    with pytest.raises(SearchError, match="fpu_mode"):
        SearchConfig(fpu_mode="sideways")
    with pytest.raises(EvaluationError, match="non-finite.*rnbqkbnr"):
        run_search(chess.Board(), BadEvaluator(), SearchConfig(num_simulations=4))
    with pytest.raises(EvaluationError, match="outside"):
        run_search(chess.Board(), BadEvaluator(priors=0.1, value=3.0), SearchConfig(num_simulations=4))
    with pytest.raises(SearchError, match="finished game"):
        run_search(chess.Board("R5k1/5ppp/8/8/8/8/8/6K1 b - - 0 1"), UniformEvaluator(), SearchConfig())
    with pytest.raises(SearchError, match="invalid position"):
        GameTree(chess.Board("8/8/8/8/8/8/8/K7 w - - 0 1"), SearchConfig())
    tree = GameTree(chess.Board(), SearchConfig())
    with pytest.raises(SearchError, match="num_simulations"):
        tree.start(num_simulations=-1)
    with pytest.raises(SearchError, match="illegal move e2e5"):
        tree.advance(chess.Move.from_uci("e2e5"))
    with pytest.raises(SearchError, match="time_limit_s"):
        choose_move(chess.Board(), 0.0, UniformEvaluator())


def test_a_clock_stops_a_search_whose_lines_all_end_at_once() -> None:
    # White's only move draws by insufficient material: every simulation ends
    # on a terminal node and never calls the evaluator.
    board = chess.Board("7k/8/8/8/8/8/1q6/K7 w - - 0 1")  # Kxb2 is forced and leaves bare kings
    assert board.legal_moves.count() == 1
    move = choose_move(board, 0.2, UniformEvaluator())
    assert move.uci() == "a1b2"
