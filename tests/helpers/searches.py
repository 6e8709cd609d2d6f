"""Searches for the tests: small configs, the algorithms, the checks that a
python and a native search of the same position agree visit for visit, and
the checks that a search proved a mate."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import chess
import numpy as np
import pytest

from models.evaluation import EvalCache, UniformEvaluator
from models.native_tree import NativeCache, NativeTree, run_native_searches
from models.search_config import SearchConfig, select_move
from models.search_drivers import run_searches
from models.search_tree import GameTree
from pipeline.uci.analysis import root_lines

from .boards import EP_FEN, KIWIPETE, board_from_moves, repetition_board, repetition_board_twice
from .native_random_games import random_games
from .search_positions import NEAR_MATE

TINY_SEARCH = SearchConfig(num_simulations=16, leaves_per_batch=4)
"""A short search (16 simulations, 4 leaves a batch) for self-play in the tests."""

ALGORITHMS = ["puct", "gumbel"]
"""The search algorithms (``search.algorithm``)."""


# -- python against native -------------------------------------------------------------


@functools.cache
def backend_positions() -> tuple[chess.Board, ...]:
    """At least 30 positions, most with a move stack (history planes, repetitions)."""
    boards = [chess.Board(), chess.Board(KIWIPETE), chess.Board(EP_FEN)]
    boards += [repetition_board(), repetition_board_twice()]
    boards += [chess.Board(fen) for fen in NEAR_MATE]
    for moves in random_games(40, seed=7, max_plies=120):
        for cut in (len(moves) // 3, (2 * len(moves)) // 3):
            board = board_from_moves(moves[:cut])
            if board.outcome(claim_draw=True) is None and any(board.legal_moves):
                boards.append(board)
        if len(boards) >= 34:
            break
    return tuple(boards)


def python_tree_of(board: chess.Board, config: SearchConfig, cache: EvalCache | None) -> GameTree:
    """A python tree on a copy of ``board`` (with input planes: the hashed evaluators read them)."""
    return GameTree(board.copy(), config, needs_planes=True, cache=cache)


def tree_pair(board: chess.Board, config: SearchConfig) -> tuple[GameTree, NativeTree]:
    """A python and a native tree on ``board``, each with its own cache when enabled."""
    size = config.cache_size
    python = python_tree_of(board, config, EvalCache(size) if size else None)
    native = NativeTree(board.copy(), config, cache=NativeCache(size) if size else None)
    return python, native


def visits(result: Any) -> dict[str, int]:
    """Root visits by UCI move of a search result of either backend."""
    return {move.uci(): int(count) for move, count in zip(result.moves, result.visits, strict=True)}


def steered(plain: Any, changed: Any) -> bool:
    """A utility changed the root's visits, or (Gumbel, whose halving fixes
    most root visits) its improved policy, between two search results."""
    if visits(plain) != visits(changed):
        return True
    if plain.improved_policy is None:
        return False
    return bool(np.abs(plain.improved_policy - changed.improved_policy).max() > 1e-9)


def assert_same(python: GameTree, native: NativeTree, context: str) -> None:
    """The two PUCT trees' results agree: visits, root value, draw and moves left, best move, priors, collisions."""
    expected, got = python.result(), native.result()
    assert visits(got) == visits(expected), context
    assert got.root_value == pytest.approx(expected.root_value, abs=1e-12), context
    assert got.root_draw == pytest.approx(expected.root_draw, abs=1e-12), context
    assert got.root_moves_left == pytest.approx(expected.root_moves_left, abs=1e-9), context
    assert got.best_move == expected.best_move, context
    priors = dict(zip([m.uci() for m in expected.moves], expected.priors, strict=True))
    for move, prior in zip(got.moves, got.priors, strict=True):
        assert prior == pytest.approx(priors[move.uci()], rel=1e-12, abs=1e-15), context
    assert native.collisions == python.collisions, context


def assert_same_gumbel(python: GameTree, native: NativeTree, context: str) -> None:
    """The two Gumbel trees' results agree: visits, best move, root value, improved policy."""
    expected, got = python.result(), native.result()
    assert visits(got) == visits(expected), context
    assert got.best_move == expected.best_move, context
    assert got.root_value == pytest.approx(expected.root_value, abs=1e-12), context
    policy = dict(zip([m.uci() for m in expected.moves], expected.improved_policy, strict=True))
    for move, p in zip(got.moves, got.improved_policy, strict=True):
        assert p == pytest.approx(policy[move.uci()], rel=1e-9, abs=1e-15), context


def gumbel_noise(board: chess.Board, seed: int) -> dict[chess.Move, float]:
    """Seeded Gumbel noise for each legal move of ``board``."""
    moves = list(board.legal_moves)
    return dict(zip(moves, np.random.default_rng(seed).gumbel(size=len(moves)).tolist(), strict=True))


# -- proven mates ------------------------------------------------------------------------


def after(board: chess.Board, move: chess.Move, check: Callable[[chess.Board], bool]) -> bool:
    """``check`` of the board after ``move`` (taken back afterwards)."""
    board.push(move)
    try:
        return check(board)
    finally:
        board.pop()


def mates_within(board: chess.Board, moves: int) -> bool:
    """The side to move mates in at most ``moves`` moves (brute force)."""
    for move in list(board.legal_moves):
        board.push(move)
        try:
            if board.is_checkmate():
                return True
            if moves > 1 and board.outcome() is None and all(
                after(board, reply, lambda b: mates_within(b, moves - 1)) for reply in list(board.legal_moves)
            ):
                return True
        finally:
            board.pop()
    return False


def uniform_search(board: chess.Board, config: SearchConfig, backend: str, sims: int | None = None) -> Any:
    """The tree of one search of ``board`` on ``backend`` with uniform priors and values 0."""
    evaluator = UniformEvaluator()
    if backend == "native":
        tree: Any = NativeTree(board.copy(), config)
        tree.start(sims)
        run_native_searches([tree], evaluator)
    else:
        tree = GameTree(board.copy(), config)
        tree.start(sims)
        run_searches([tree], evaluator)
    return tree


def assert_proves_mate(board: chess.Board, tree: Any, mate: int, config: SearchConfig) -> None:
    """The search of ``board`` proved a mate in ``mate`` moves, the proven move
    really mates that fast, the UCI line says so and the move is played."""
    result = tree.result()
    index = result.moves.index(result.best_move)
    assert result.proof is not None and result.proof[index] == 1, (board.fen(), result.best_move)
    assert result.proof_plies[index] == 2 * mate - 1, board.fen()
    assert tree.root.proof == 1 and tree.root.proof_plies == 2 * mate - 1, board.fen()
    assert after(
        board,
        result.best_move,
        lambda b: all(after(b, reply, lambda c: mates_within(c, mate - 1)) for reply in list(b.legal_moves)),
    ), board.fen()
    assert root_lines(tree)[0].move == result.best_move and root_lines(tree)[0].mate == mate
    assert select_move(result, 0, config, np.random.default_rng(0)) == result.best_move
