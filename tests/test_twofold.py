"""``search.twofold_draw``: a position below the root that occurred before
(in the game or on the path from the root) is scored as a draw by the search
(lc0's two-fold draws), on both backends visit for visit, never as a proven
draw, and a tree reused onto such a child starts afresh."""

from __future__ import annotations

from dataclasses import replace

import chess
import pytest

from models.hash_evaluator import HashEvaluator
from models.native_tree import NativeTree, run_native_searches
from models.search_config import SearchConfig, SearchError
from models.search_drivers import run_searches
from models.search_tree import GameTree
from tests.helpers.boards import board_from_moves
from tests.helpers.searches import (
    assert_same,
    backend_positions,
    python_tree_of,
    steered,
    tree_pair,
)

OUT_AND_BACK = ["g1f3", "g8f6", "f3g1"]
"""After these the reply f6g8 repeats the start position."""
LOCKED = "4k3/8/8/p1p1p1p1/P1P1P1P1/8/8/4K3 w - - 0 1"
"""Locked pawns: only the kings move, so repetitions lie a few plies deep."""
START = chess.STARTING_FEN
REPEATABLE = [
    (START, OUT_AND_BACK),
    (START, ["e2e4", "e7e5", "g1f3", "b8c6", "f3g1"]),
    (START, ["d2d4", "d7d5", "b1c3", "g8f6", "c3b1", "f6g8", "b1c3"]),
    (START, ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6"]),
    (LOCKED, []),
    (LOCKED, ["e1d1", "e8d8", "d1e1"]),
    (LOCKED, ["e1d2", "e8d7", "d2e3", "d7e6", "e3d2"]),
]
"""Positions and lines after which a few plies repeat an earlier position."""


def _search(tree: GameTree | NativeTree, evaluator: HashEvaluator) -> None:
    tree.start()
    if isinstance(tree, NativeTree):
        run_native_searches([tree], evaluator)
    else:
        run_searches([tree], evaluator)


def _repeated_nodes(root):  # noqa: ANN001, ANN202 - python search nodes
    """The nodes below ``root`` whose position occurred before."""
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        children = [child for child in (node.children or []) if child is not None]
        found += [child for child in children if child.repetitions >= 1]
        stack += children
    return found


def test_a_repeated_position_below_the_root_is_an_unproven_draw() -> None:
    board = board_from_moves(OUT_AND_BACK)
    evaluator = HashEvaluator(seed=3)
    for twofold in (False, True):
        config = SearchConfig(num_simulations=800, backend="python", twofold_draw=twofold)
        tree = python_tree_of(board, config, None)
        _search(tree, evaluator)
        repeated = _repeated_nodes(tree.root)
        assert repeated, "the search never reached a repetition"
        if twofold:
            for node in repeated:
                assert node.terminal_value == 0.0 and node.proof is None and not node.expanded
                assert node.value_sum == 0.0
        else:
            assert all(node.terminal_value is None for node in repeated if node.repetitions == 1)
            assert any(node.expanded for node in repeated)


def test_the_root_itself_is_never_a_twofold_draw() -> None:
    board = board_from_moves([*OUT_AND_BACK, "f6g8"])  # the start position, seen once before
    config = SearchConfig(num_simulations=64, twofold_draw=True)
    tree = NativeTree(board, config)
    _search(tree, HashEvaluator(seed=1))
    assert tree.result().visits.sum() >= 64


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param(dict(leaves_per_batch=1, cache_size=0), id="lpb1-nocache"),
        pytest.param(dict(leaves_per_batch=8, cache_size=10_000, solver_threats=True), id="lpb8-cache-threats"),
        pytest.param(dict(algorithm="gumbel", leaves_per_batch=4, cache_size=10_000), id="gumbel"),
    ],
)
def test_same_visits_as_the_python_search(overrides: dict) -> None:
    config = SearchConfig(num_simulations=96, twofold_draw=True, **overrides)
    evaluator = HashEvaluator(seed=3, aux=True)
    boards = [*(board_from_moves(line, fen) for fen, line in REPEATABLE), *backend_positions()[:8]]
    changed = 0
    for board in boards:
        python_tree, native_tree = tree_pair(board, config)
        _search(python_tree, evaluator)
        _search(native_tree, evaluator)
        assert_same(python_tree, native_tree, f"{board.fen()} {overrides}")
        plain, _ = tree_pair(board, replace(config, twofold_draw=False))
        _search(plain, evaluator)
        changed += steered(plain.result(), python_tree.result())
    assert changed >= 2  # the rule is exercised, not only agreed on


def test_playing_into_a_twofold_child_reuses_nothing_and_agrees() -> None:
    """The knights go out and back twice: the trees advance onto children that
    were two-fold draws in the search, start afresh there, and stay equal."""
    config = SearchConfig(num_simulations=64, twofold_draw=True, leaves_per_batch=4, cache_size=0)
    evaluator = HashEvaluator(seed=5, aux=True)
    python_tree = python_tree_of(chess.Board(), config, None)
    native_tree = NativeTree(chess.Board(), config)
    for step, uci in enumerate(["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1"]):
        _search(python_tree, evaluator)
        _search(native_tree, evaluator)
        assert_same(python_tree, native_tree, f"step {step}")
        move = chess.Move.from_uci(uci)
        child = python_tree.root.children[python_tree.root.moves.index(move)]
        was_draw = child is not None and child.terminal_value is not None
        python_tree.advance(move)
        native_tree.advance(move)
        if was_draw:
            assert python_tree.root.terminal_value is None and python_tree.root.visits == 0
    assert python_tree.board.fen() == native_tree.board.fen()


def test_twofold_draw_must_be_a_boolean() -> None:
    with pytest.raises(SearchError, match="search.twofold_draw"):
        SearchConfig(twofold_draw="yes")  # type: ignore[arg-type]
