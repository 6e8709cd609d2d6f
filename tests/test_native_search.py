"""The native PUCT search (models.native_search) against models.search, its specification.

With :class:`HashEvaluator` (priors and values hashed from the leaf's input
planes) and no noise, both backends must give the same visit counts and root
values on the same positions, whatever the batching, cache and FPU settings,
and after tree reuse.  Then: noise, errors, and a fuzz test with random
evaluator output.
"""

from __future__ import annotations

import chess
import numpy as np
import pytest

from models import _native
from models.evaluation import EvalCache
from models.hash_evaluator import HashEvaluator, softmax
from models.native_tree import NativeCache, NativeTree, run_native_searches
from models.search_config import SearchConfig, SearchError
from models.search_drivers import run_searches
from pipeline.uci.analysis import root_lines
from tests.helpers.boards import EP_FEN, KIWIPETE, board_from_moves, repetition_board
from tests.helpers.search_positions import MATED_IN_ONE, NEAR_MATE
from tests.helpers.searches import assert_same, backend_positions, python_tree_of, steered, tree_pair

CONFIGS = [
    pytest.param(
        dict(leaves_per_batch=1, cache_size=0, fpu_mode="relative"), id="lpb1-nocache-relative"
    ),
    pytest.param(
        dict(leaves_per_batch=1, cache_size=10_000, fpu_mode="absolute", fpu_value=0.0),
        id="lpb1-cache-abs",
    ),
    pytest.param(
        dict(leaves_per_batch=8, cache_size=0, fpu_mode="absolute", fpu_value=-1.0),
        id="lpb8-nocache-abs",
    ),
    pytest.param(
        dict(leaves_per_batch=8, cache_size=10_000, fpu_mode="relative"), id="lpb8-cache-relative"
    ),
    pytest.param(
        dict(leaves_per_batch=8, cache_size=30, fpu_mode="relative", virtual_loss=3.0),
        id="lpb8-lru-vl3",
    ),
    pytest.param(dict(leaves_per_batch=4, cache_size=0, solver=False), id="lpb4-nosolver"),
    pytest.param(
        dict(leaves_per_batch=8, cache_size=10_000, solver_threats=True), id="lpb8-cache-threats"
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("overrides", CONFIGS)
def test_same_visits_as_python_search(overrides: dict) -> None:
    config = SearchConfig(num_simulations=96, **overrides)
    evaluator = HashEvaluator(seed=3)
    positions = backend_positions()
    assert len(positions) >= 30
    for board in positions:
        _search_both(board, config, evaluator, f"{board.fen()} {overrides}")


def _search_both(board: chess.Board, config: SearchConfig, evaluator: HashEvaluator, context: str) -> tuple:
    """Both backends' trees of ``board`` after one search each, checked visit for visit."""
    python_tree, native_tree = tree_pair(board, config)
    python_tree.start()
    native_tree.start()
    run_searches([python_tree], evaluator)
    run_native_searches([native_tree], evaluator)
    assert_same(python_tree, native_tree, context)
    return python_tree, native_tree


MOVES_LEFT = dict(moves_left_threshold=0.05, moves_left_slope=0.03, moves_left_cap=0.2)
"""The moves-left utility on, with a threshold the hashed values often pass."""


@pytest.mark.parametrize(
    "overrides",
    [*CONFIGS, pytest.param(dict(algorithm="gumbel", leaves_per_batch=4, cache_size=10_000), id="gumbel")],
)
def test_same_visits_with_aux_and_the_moves_left_utility(overrides: dict) -> None:
    """An evaluator that returns D and M, the utility on: still visit for
    visit the same, and the utility changes the visits of most searches."""
    config = SearchConfig(num_simulations=96, **MOVES_LEFT, **overrides)
    evaluator = HashEvaluator(seed=3, aux=True)
    changed = 0
    positions = backend_positions()[:10]
    for board in positions:
        python_tree, _ = _search_both(board, config, evaluator, f"{board.fen()} {overrides}")
        plain = python_tree_of(board, SearchConfig(num_simulations=96, **overrides), None)
        plain.start()
        run_searches([plain], evaluator)
        changed += steered(plain.result(), python_tree.result())
    assert changed >= len(positions) // 2


@pytest.mark.parametrize("overrides", CONFIGS[::2])
def test_same_visits_with_tree_reuse(overrides: dict) -> None:
    """Advance both trees through their best moves; reused visits count towards the budget."""
    config = SearchConfig(num_simulations=120, **MOVES_LEFT, **overrides)
    evaluator = HashEvaluator(seed=5, aux=True)
    for board in (chess.Board(), repetition_board(), chess.Board(NEAR_MATE[1])):
        python_tree, native_tree = tree_pair(board, config)
        for step in range(4):
            if python_tree._is_terminal_root():  # noqa: SLF001
                break
            python_tree.start()
            native_tree.start()
            run_searches([python_tree], evaluator)
            run_native_searches([native_tree], evaluator)
            assert_same(python_tree, native_tree, f"{python_tree.board.fen()} step {step}")
            move = python_tree.result().best_move
            python_tree.advance(move)
            native_tree.advance(move)
            assert native_tree.board.fen() == python_tree.board.fen()
            assert np.array_equal(native_tree.history_snapshot(), python_tree.history_snapshot())


@pytest.mark.parametrize(
    "overrides",
    [
        CONFIGS[0],
        CONFIGS[3],
        pytest.param(dict(algorithm="gumbel", leaves_per_batch=1, cache_size=0), id="gumbel"),
    ],
)
def test_same_visits_scoring_the_alternatives_of_a_proven_root(overrides: dict) -> None:
    """score_alternatives (UCI analysis): the simulations of a proven root go
    to its unproven moves, the same on both backends, and a root whose moves
    are all proven is exhausted (finished, no simulation left to run)."""
    config = SearchConfig(num_simulations=96, **overrides)
    evaluator = HashEvaluator(seed=3)
    for board in [chess.Board(fen) for fen in NEAR_MATE[:2]] + [chess.Board(MATED_IN_ONE)]:
        trees = tree_pair(board, config)
        for tree in trees:
            tree.score_alternatives = True
            tree.start()
        run_searches([trees[0]], evaluator)
        run_native_searches([trees[1]], evaluator)
        assert_same(*trees, f"{board.fen()} {overrides}")
        result = trees[0].result()
        proven = ~np.isnan(result.proof)
        assert trees[0].root.proof is not None and proven.any()
        assert all(tree.exhausted == proven.all() and tree.finished for tree in trees)
        if not proven.all():
            assert result.visits[proven].sum() == 0 and result.visits.sum() == 96


def test_many_trees_share_one_cache_and_batch() -> None:
    """Trees stepped together with one shared cache: the same as run_searches."""
    config = SearchConfig(num_simulations=64, leaves_per_batch=4, cache_size=5_000)
    boards = [chess.Board(), chess.Board(KIWIPETE), repetition_board(), chess.Board(EP_FEN)]
    python_cache, native_cache = EvalCache(config.cache_size), NativeCache(config.cache_size)
    python_trees = [python_tree_of(board, config, python_cache) for board in boards]
    native_trees = [NativeTree(board.copy(), config, cache=native_cache) for board in boards]
    for tree in (*python_trees, *native_trees):
        tree.start()
    python_calls = run_searches(python_trees, HashEvaluator())
    native_calls = run_native_searches(native_trees, HashEvaluator())
    assert native_calls == python_calls
    assert len(native_cache) == len(python_cache)
    for python_tree, native_tree in zip(python_trees, native_trees):
        assert_same(python_tree, native_tree, python_tree.board.fen())


def test_analysis_reads_native_trees_like_python_trees() -> None:
    config = SearchConfig(num_simulations=300, leaves_per_batch=4, cache_size=0)
    board = chess.Board(NEAR_MATE[3])
    python_tree, native_tree = python_tree_of(board, config, None), NativeTree(board.copy(), config)
    for tree, run in ((python_tree, run_searches), (native_tree, run_native_searches)):
        tree.start()
        run([tree], HashEvaluator())
    expected, got = root_lines(python_tree), root_lines(native_tree)  # type: ignore[arg-type]
    assert [(line.move, line.visits, line.mate, line.pv) for line in got] == [
        (line.move, line.visits, line.mate, line.pv) for line in expected
    ]
    assert got[0].mate is not None and got[0].mate > 0
    root = native_tree.root
    assert root.expanded and not root.pending and root.terminal_value is None
    assert root.visits == python_tree.root.visits
    assert root.q() == pytest.approx(python_tree.root.q(), abs=1e-12)
    frontier, mated = [root], []
    for _ in range(4):
        frontier = [child for node in frontier for child in node.children if child is not None]
        mated += [node for node in frontier if node.terminal_value == -1.0]
    assert mated and all(node.board.is_checkmate() and node.moves is None for node in mated)


def test_root_views_go_stale_after_advance() -> None:
    tree = NativeTree(chess.Board(), SearchConfig(num_simulations=16, cache_size=0))
    tree.start()
    run_native_searches([tree], HashEvaluator())
    root = tree.root
    tree.advance(tree.result().best_move)
    with pytest.raises(SearchError, match="stale"):
        _ = root.visits


def test_noise_changes_root_priors_only() -> None:
    config = SearchConfig(num_simulations=200, leaves_per_batch=1, cache_size=0)
    evaluator = HashEvaluator()
    clean = NativeTree(chess.Board(), config, seed=1)
    noisy = NativeTree(chess.Board(), config, seed=1)
    again = NativeTree(chess.Board(), config, seed=1)
    other = NativeTree(chess.Board(), config, seed=2)
    clean.start()
    for tree in (noisy, again, other):
        tree.start(add_noise=True)
    run_native_searches([clean, noisy, again, other], evaluator)
    assert not np.allclose(noisy.result().priors, clean.result().priors)
    assert np.array_equal(noisy.result().priors, again.result().priors)
    assert not np.array_equal(noisy.result().priors, other.result().priors)
    assert noisy.result().priors.sum() == pytest.approx(1.0)
    compared = 0
    for clean_child, noisy_child in zip(clean.root.children, noisy.root.children):
        both = (clean_child, noisy_child)
        if all(child is not None and child.expanded for child in both):
            assert clean_child.priors == noisy_child.priors
            compared += 1
    assert compared >= 5


def test_noise_on_a_reused_root_once() -> None:
    config = SearchConfig(num_simulations=100, cache_size=0)
    tree = NativeTree(chess.Board(), config, seed=4)
    tree.start()
    run_native_searches([tree], HashEvaluator())
    before = tree.result().priors
    tree.start(num_simulations=150, add_noise=True)
    noised = tree.result().priors
    assert not np.array_equal(before, noised)
    tree.start(num_simulations=160, add_noise=True)  # same root: noise is not added twice
    assert np.array_equal(tree.result().priors, noised)


@pytest.mark.parametrize(
    "board",
    [
        chess.Board("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1"),  # stalemate
        chess.Board("k7/1Q6/1K6/8/8/8/8/8 b - - 0 1"),  # checkmate
        chess.Board("8/8/8/4k3/8/8/4K3/8 w - - 0 1"),  # insufficient material
        chess.Board("4k3/8/8/8/8/8/8/4K2R w K - 100 80"),  # fifty moves
        board_from_moves(["g1f3", "g8f6", "f3g1", "f6g8"] * 2),  # threefold
    ],
    ids=["stalemate", "checkmate", "insufficient", "fifty", "threefold"],
)
def test_finished_games_cannot_be_searched(board: chess.Board) -> None:
    tree = NativeTree(board, SearchConfig(num_simulations=8))
    with pytest.raises(SearchError, match="finished game"):
        tree.start()


@pytest.mark.parametrize(
    "fen",
    [
        "8/8/8/8/8/8/8/K7 w - - 0 1",
        "4k3/8/8/8/8/8/4r3/4K3 b - - 0 1",
        "4k3/8/8/8/8/8/8/4K3 w - - 0 1 extra",
    ],
    ids=["no-black-king", "side-not-to-move-in-check", "bad-fen"],
)
def test_invalid_positions_raise_naming_the_fen(fen: str) -> None:
    try:
        board = chess.Board(fen)
    except ValueError:
        with pytest.raises(ValueError):
            _native.SearchTree(_native.SearchParams(), "az4672", None, 0, fen, [])
        return
    with pytest.raises(SearchError, match=fen.split()[0].replace("/", "/")):
        NativeTree(board, SearchConfig())


def test_illegal_moves_and_bad_counts_raise() -> None:
    tree = NativeTree(chess.Board(), SearchConfig(num_simulations=8))
    with pytest.raises(SearchError, match="e2e5"):
        tree.advance(chess.Move.from_uci("e2e5"))
    with pytest.raises(SearchError, match="-1"):
        tree.start(num_simulations=-1)
    with pytest.raises(SearchError, match="no search"):
        tree.result()
    with pytest.raises(ValueError, match="encoding"):
        NativeTree(chess.Board(), SearchConfig(), policy_encoding="nope")


class _BadEvaluator:
    """Wraps HashEvaluator and spoils its output in one way."""

    def __init__(self, spoil: str) -> None:
        self.spoil = spoil
        self.inner = HashEvaluator()

    def evaluate_batch(self, planes, rows, indices):  # noqa: ANN001, ANN201
        logits, values = self.inner.evaluate_batch(planes, rows, indices)
        if self.spoil == "short-logits":
            return logits[:-1], values
        if self.spoil == "2d-values":
            return logits, values.reshape(-1, 1)
        if self.spoil == "nan-value":
            values[-1] = np.nan
        elif self.spoil == "inf-logit":
            logits[0] = np.inf
        elif self.spoil == "big-value":
            values[0] = 1.5
        elif self.spoil == "not-a-pair":
            return logits
        elif self.spoil == "strings":
            return ["a"] * len(logits), values
        elif self.spoil == "aux-shape":
            return logits, values, np.zeros((len(values), 3), dtype=np.float32)
        elif self.spoil == "big-draw":
            return logits, values, np.full((len(values), 2), 1.5, dtype=np.float32)
        elif self.spoil == "nan-moves-left":
            return logits, values, np.full((len(values), 2), np.nan, dtype=np.float32)
        elif self.spoil == "four-items":
            return logits, values, None, None
        return logits, values


@pytest.mark.parametrize(
    ("spoil", "match"),
    [
        ("short-logits", r"shape \(\d+,\)"),
        ("2d-values", r"shape \(\d+, 1\)"),
        ("nan-value", "non-finite.*/"),
        ("inf-logit", "non-finite.*/"),
        ("big-value", "outside.*/"),
        ("not-a-pair", "pair"),
        ("strings", "float"),
        ("aux-shape", r"aux of shape \(\d+, 3\)"),
        ("big-draw", "draw probability.*/"),
        ("nan-moves-left", "draw probability nan.*/"),
        ("four-items", "4 items"),
    ],
)
def test_bad_evaluator_output_raises_and_the_tree_survives(spoil: str, match: str) -> None:
    config = SearchConfig(num_simulations=40, leaves_per_batch=4, cache_size=100)
    tree = NativeTree(chess.Board(KIWIPETE), config)
    tree.start()
    run_native_searches([tree], HashEvaluator(), should_stop=lambda: True)  # root only
    with pytest.raises(ValueError, match=match):
        run_native_searches([tree], _BadEvaluator(spoil))
    run_native_searches([tree], HashEvaluator())
    assert tree.finished
    assert int(tree.result().visits.sum()) == 40


class _RandomEvaluator:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def evaluate_batch(self, planes, rows, indices):  # noqa: ANN001, ANN201
        assert planes.dtype == np.uint8 and planes.shape[1:] == (119, 8, 8)
        assert planes.flags.c_contiguous
        assert rows.dtype == np.int64 and indices.dtype == np.int64
        assert np.all(np.diff(rows) >= 0) and rows[-1] == len(planes) - 1
        scale = 10.0 ** self.rng.uniform(-3, 30)
        logits = (self.rng.standard_normal(len(rows)) * scale).astype(np.float32)
        values = self.rng.uniform(-1, 1, len(planes)).astype(np.float32)
        return logits, values


def test_fuzz_random_evaluator_output() -> None:
    rng = np.random.default_rng(11)
    positions = backend_positions()
    for round_ in range(12):
        config = SearchConfig(
            num_simulations=int(rng.integers(1, 150)),
            leaves_per_batch=int(rng.integers(1, 16)),
            cache_size=int(rng.choice([0, 10, 1000])),
            fpu_mode=str(rng.choice(["relative", "absolute"])),
            fpu_value=float(rng.uniform(-1, 2)),
            virtual_loss=float(rng.uniform(0, 3)),
        )
        cache = NativeCache(config.cache_size)
        picks = rng.integers(0, len(positions), 3)
        trees = [NativeTree(positions[i].copy(), config, cache=cache, seed=round_) for i in picks]
        for tree in trees:
            tree.start(add_noise=bool(rng.integers(2)))
        run_native_searches(trees, _RandomEvaluator(round_))
        for tree in trees:
            result = tree.result()
            assert int(result.visits.sum()) == config.num_simulations
            assert result.priors.sum() == pytest.approx(1.0)
            assert -1.0 <= result.root_value <= 1.0


def test_core_softmax_matches_numpy() -> None:
    logits = np.random.default_rng(0).standard_normal(40).astype(np.float32) * 5
    np.testing.assert_allclose(_native.softmax(logits), softmax(logits), rtol=1e-14)
