"""Drivers of the python reference: many :class:`~models.search_tree.GameTree`
searches stepped together, one evaluator call per round.

* :func:`run_search` searches one position;
* :func:`run_searches` steps many games' trees together so that the leaves of
  all of them go to the evaluator in one batch (how lc0's multiplexing backend
  and minigo's concurrent self-play feed an accelerator);
* :func:`collect_leaves` and :func:`deliver_results` are the two halves of one
  such round, for drivers that evaluate elsewhere (pipeline/selfplay/python_games.py).

C++ twin: models/native/run_searches.* and batching.* (``run_searches``, the native
batched driver, bound in search_bindings.cpp and wrapped by :func:`models.native_tree.run_native_searches`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import chess
import numpy as np

from models.evaluation import EvalCache, Evaluator, Leaf, LeafEvaluation
from models.search_config import SearchConfig, SearchResult
from models.search_tree import GameTree, PendingLeaf

Owner = tuple[GameTree, list[PendingLeaf]]
"""A tree that gave leaves in a round, with those leaves."""


def collect_leaves(trees: Sequence[GameTree]) -> tuple[list[Owner], list[Leaf]]:
    """Collect the pending leaves of every tree for one evaluator call: the
    trees that gave leaves with theirs (for :func:`deliver_results`), and all
    the leaves in order."""
    owners: list[Owner] = []
    leaves: list[Leaf] = []
    for tree in trees:
        pending = tree.collect()
        if pending:
            owners.append((tree, pending))
            leaves.extend(item.leaf for item in pending)
    return owners, leaves


def deliver_results(owners: Sequence[Owner], results: Sequence[LeafEvaluation]) -> None:
    """Hand each tree its slice of one evaluator call's results."""
    offset = 0
    for tree, pending in owners:
        tree.deliver(pending, results[offset : offset + len(pending)])
        offset += len(pending)


def run_searches(
    trees: Sequence[GameTree],
    evaluator: Evaluator,
    *,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Step the started ``trees`` together until each is finished.

    Every round collects leaves from all unfinished trees and evaluates them
    in one ``evaluator.evaluate`` call.  Returns the number of evaluator calls.
    ``should_stop`` (checked between rounds) ends the search early, e.g. on a clock.
    """
    calls = 0
    rounds = 0
    while True:
        active = [tree for tree in trees if not tree.finished]
        if not active or (should_stop is not None and rounds > 0 and should_stop()):
            return calls
        rounds += 1
        owners, leaves = collect_leaves(active)
        if not leaves:
            continue
        deliver_results(owners, evaluator.evaluate(leaves))
        calls += 1


def run_search(
    board: chess.Board,
    evaluator: Evaluator,
    config: SearchConfig,
    *,
    add_noise: bool = False,
    rng: np.random.Generator | None = None,
) -> SearchResult:
    """Search one position from scratch and return the root statistics."""
    tree = GameTree(
        board.copy(),
        config,
        needs_planes=evaluator.needs_planes,
        cache=EvalCache(config.cache_size),
        rng=rng or np.random.default_rng(),
    )
    tree.start(add_noise=add_noise)
    run_searches([tree], evaluator)
    return tree.result()

