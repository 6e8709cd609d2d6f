"""One entry point for both search backends (``SearchConfig.backend``).

Players, the UCI engine, ``zerochess analyse`` and :func:`choose_move` build
their trees and run their searches through these functions, so the choice
between the native core (:mod:`models.native_tree`) and the python reference
(:mod:`models.search_tree`, :mod:`models.search_drivers`) is made in one place:

* ``native`` when ``config.backend == "native"`` and the evaluator has
  ``evaluate_batch`` (:meth:`SearchConfig.uses_native`);
* ``python`` otherwise.

Both trees have the same interface for their users (``board``, ``advance``,
``start``, ``finished``, ``result``, ``history_snapshot`` and a read-only
``root`` node), so the callers do not care which one they hold.  This module
sits on top: it imports both backends and neither imports it.

C++ twin: none (the backends' twins are models/native/search.h, search_*.cpp and
models/native/search_bindings.cpp).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import chess
import numpy as np

from models.evaluation import EvalCache, Evaluator
from models.native_tree import NativeCache, NativeTree, run_native_searches
from models.search_config import SearchConfig, SearchError, SearchResult
from models.search_drivers import run_searches
from models.search_tree import GameTree

SearchTree = GameTree | NativeTree
"""A game's search tree on either backend."""


def new_cache(config: SearchConfig, evaluator: object) -> EvalCache | NativeCache:
    """An evaluation cache of ``config.cache_size`` entries for the backend
    that searches with ``evaluator``."""
    if config.uses_native(evaluator):
        return NativeCache(config.cache_size)
    return EvalCache(config.cache_size)


def new_tree(
    board: chess.Board,
    config: SearchConfig,
    evaluator: object,
    *,
    cache: EvalCache | NativeCache | None = None,
    rng: np.random.Generator | None = None,
    seed: int = 0,
) -> SearchTree:
    """The search tree of ``board`` (its move stack is the game's history).

    ``cache`` must come from :func:`new_cache` for the same backend (``None``:
    no cache shared across trees).  ``rng`` seeds the python tree's root
    noise, ``seed`` the native tree's.

    Raises:
        SearchError: ``board`` is not a valid position.
    """
    if config.uses_native(evaluator):
        native_cache = cache if isinstance(cache, NativeCache) else None
        return NativeTree(
            board, config, policy_encoding=policy_encoding(evaluator), cache=native_cache, seed=seed
        )
    python_cache = cache if isinstance(cache, EvalCache) else None
    return GameTree(
        board,
        config,
        needs_planes=bool(getattr(evaluator, "needs_planes", False)),
        cache=python_cache,
        rng=rng or np.random.default_rng(seed),
    )


def run_trees(
    trees: Sequence[SearchTree], evaluator: Any, *, should_stop: Callable[[], bool] | None = None
) -> int:
    """Step the started ``trees`` (all of one backend) together until each is
    finished or ``should_stop`` says so (checked between network batches);
    returns the evaluator calls."""
    if trees and not isinstance(trees[0], GameTree):
        return run_native_searches(trees, evaluator, should_stop=should_stop)  # type: ignore[arg-type]
    return run_searches(trees, evaluator, should_stop=should_stop)  # type: ignore[arg-type]


def search_position(
    board: chess.Board,
    evaluator: Any,
    config: SearchConfig,
    *,
    num_simulations: int | None = None,
    add_noise: bool = False,
    seed: int = 0,
) -> SearchResult:
    """Search ``board`` from scratch (``config.num_simulations`` unless
    ``num_simulations``) and return the root statistics."""
    tree = new_tree(board.copy(), config, evaluator, cache=new_cache(config, evaluator), seed=seed)
    tree.start(num_simulations=num_simulations, add_noise=add_noise)
    run_trees([tree], evaluator)
    return tree.result()


def choose_move(
    board: chess.Board,
    time_limit_s: float,
    evaluator: Evaluator,
    config: SearchConfig | None = None,
) -> chess.Move:
    """The most visited move after searching for about ``time_limit_s`` seconds
    (at least one batch of simulations, no noise), on ``config.backend``."""
    if not time_limit_s > 0:
        raise SearchError(f"time_limit_s must be > 0, got {time_limit_s!r}")
    config = config or SearchConfig()
    deadline = time.perf_counter() + time_limit_s
    tree = new_tree(board.copy(), config, evaluator, cache=new_cache(config, evaluator))
    tree.start(num_simulations=10**9)
    run_trees([tree], evaluator, should_stop=lambda: time.perf_counter() >= deadline)
    return tree.result().best_move


def policy_encoding(evaluator: object) -> str:
    """The policy encoding an evaluator reads its logits with: its
    ``policy_encoding`` attribute, else its ``policy_map``'s name, else ``az4672``."""
    name = getattr(evaluator, "policy_encoding", None)
    if name is None:
        name = getattr(getattr(evaluator, "policy_map", None), "name", "az4672")
    return str(name)


def root_repetitions(tree: SearchTree) -> int:
    """How often the game position occurred before (0, 1, 2+) in the game line."""
    repetitions = getattr(tree.root, "repetitions", None)
    if repetitions is not None:
        return int(repetitions)
    board = tree.board
    return 2 if board.is_repetition(3) else 1 if board.is_repetition(2) else 0
