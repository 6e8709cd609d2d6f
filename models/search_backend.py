"""One entry point for both search backends (``SearchConfig.backend``).

Players, the UCI engine, ``zerochess analyse`` and :func:`models.search.choose_move`
build their trees and run their searches through these functions, so the
choice between the native core (:mod:`models.native_search`) and the python
reference (:mod:`models.search`) is made in one place:

* ``native`` when ``config.backend == "native"`` and the evaluator has
  ``evaluate_batch`` (:meth:`SearchConfig.uses_native`);
* ``python`` otherwise.

Both trees have the same interface for their users (``board``, ``advance``,
``start``, ``finished``, ``result``, ``history_snapshot`` and a read-only
``root`` node), so the callers do not care which one they hold.
``models.native_search`` is imported lazily: it imports :mod:`models.search`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Union

import chess
import numpy as np

from models.evaluation import EvalCache
from models.search import GameTree, SearchConfig, SearchResult, run_searches

if TYPE_CHECKING:
    from models.native_search import NativeCache, NativeTree

SearchTree = Union[GameTree, "NativeTree"]
"""A game's search tree on either backend."""


def new_cache(config: SearchConfig, evaluator: object) -> EvalCache | NativeCache:
    """An evaluation cache of ``config.cache_size`` entries for the backend
    that searches with ``evaluator``."""
    if config.uses_native(evaluator):
        from models.native_search import NativeCache

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
        from models.native_search import NativeCache, NativeTree

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
        from models.native_search import run_native_searches

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
