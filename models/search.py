"""PUCT Monte Carlo tree search (AlphaZero) over python-chess boards.

The search never imports torch: the network is injected through the small
:class:`Evaluator` protocol (a batch of leaves -> priors over each leaf's legal
moves and a value from the leaf's side to move).  Two drivers share one tree
implementation:

* :func:`run_search` searches one position;
* :func:`run_searches` steps many games' trees together so that the leaves of
  all of them go to the evaluator in one batch (how lc0's multiplexing backend
  and minigo's concurrent self-play feed an accelerator).

Inside one tree up to ``SearchConfig.leaves_per_batch`` leaves are collected
before an evaluation, kept apart by virtual loss.

Sign conventions (the formula code uses the paper's symbols):

* ``Node.value_sum`` / ``Node.visits`` is the mean value W/N of the node from
  the point of view of the side to move *at that node*;
* ``Node.child_w[i]`` / ``Node.child_n[i]`` is the mean value of move ``i``
  from the point of view of the side choosing it (the node's side to move), so
  selection maximises ``Q + U`` directly.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import chess
import numpy as np

from models import encoding
from models.evaluation import EvalCache, Evaluator, Leaf, check_evaluation

FPU_MODES = ("relative", "absolute")


class SearchError(ValueError):
    """Invalid search input or evaluator output; the message names the value."""


@dataclass(frozen=True)
class SearchConfig:
    """PUCT search parameters.

    Attributes:
        num_simulations: visits at the root after a search; the visits kept
            by tree reuse count towards them (lc0, KataGo).
        c_puct_init: c_init of AlphaZero's growing exploration constant
            ``c(s) = c_init + log((1 + N + c_base) / c_base)``.
        c_puct_base: c_base of that formula.
        fpu_mode: first-play urgency of unvisited moves: ``relative`` uses the
            parent's Q minus ``fpu_value`` (lc0, minigo); ``absolute`` uses
            ``fpu_value`` itself (0 is OpenSpiel's choice, -1 is "assume a loss").
        fpu_value: the reduction (relative) or the value (absolute).
        dirichlet_alpha: alpha of the root Dirichlet noise (0.3 for chess).
        dirichlet_epsilon: weight of the noise in the root priors (0.25).
        temperature: tau for the opening plies of self-play: moves are sampled
            with probability proportional to N^(1/tau).
        temperature_plies: plies played with ``temperature``; later plies take
            the most visited move.
        leaves_per_batch: leaves one tree collects (virtual loss) before the
            evaluator is called.
        virtual_loss: visits counted as losses on a path while its leaf waits.
        cache_size: entries of the evaluation cache (0 disables it).
    """

    num_simulations: int = 200
    c_puct_init: float = 1.25
    c_puct_base: float = 19652.0
    fpu_mode: str = "relative"
    fpu_value: float = 0.25
    dirichlet_alpha: float = 0.3
    dirichlet_epsilon: float = 0.25
    temperature: float = 1.0
    temperature_plies: int = 30
    leaves_per_batch: int = 8
    virtual_loss: float = 1.0
    cache_size: int = 200_000

    def __post_init__(self) -> None:
        positive = {
            "num_simulations": self.num_simulations,
            "c_puct_base": self.c_puct_base,
            "leaves_per_batch": self.leaves_per_batch,
        }
        for name, value in positive.items():
            if not value >= 1:
                raise SearchError(f"search.{name} must be >= 1, got {value!r}")
        non_negative = {
            "c_puct_init": self.c_puct_init,
            "dirichlet_alpha": self.dirichlet_alpha,
            "temperature": self.temperature,
            "temperature_plies": self.temperature_plies,
            "virtual_loss": self.virtual_loss,
            "cache_size": self.cache_size,
        }
        for name, value in non_negative.items():
            if not value >= 0:
                raise SearchError(f"search.{name} must be >= 0, got {value!r}")
        if not 0.0 <= self.dirichlet_epsilon <= 1.0:
            raise SearchError(
                f"search.dirichlet_epsilon must be in [0, 1], got {self.dirichlet_epsilon!r}"
            )
        if self.fpu_mode not in FPU_MODES:
            raise SearchError(f"search.fpu_mode must be one of {FPU_MODES}, got {self.fpu_mode!r}")
        if not -1.0 <= self.fpu_value <= 2.0:
            raise SearchError(f"search.fpu_value must be in [-1, 2], got {self.fpu_value!r}")


# ---------------------------------------------------------------------------
# Tree


class Node:
    """One position in the tree (see the module docstring for signs)."""

    __slots__ = (
        "board",
        "key",
        "repetitions",
        "row",
        "moves",
        "priors",
        "children",
        "child_n",
        "child_w",
        "visits",
        "value_sum",
        "terminal_value",
        "pending",
    )

    def __init__(self, board: chess.Board, key: Hashable, repetitions: int) -> None:
        self.board = board
        self.key = key
        self.repetitions = repetitions
        self.row: np.ndarray | None = None
        self.moves: list[chess.Move] | None = None
        self.priors: list[float] | None = None
        self.children: list[Node | None] = []
        self.child_n: list[float] = []
        self.child_w: list[float] = []
        self.visits = 0
        self.value_sum = 0.0
        self.terminal_value: float | None = None
        self.pending = False

    @property
    def expanded(self) -> bool:
        return self.priors is not None

    def expand(self, moves: list[chess.Move], priors: np.ndarray) -> None:
        # Plain lists: per-child updates and the selection loop over ~30
        # children are faster in Python than through numpy calls.
        self.moves = moves
        self.priors = priors.tolist()
        self.children = [None] * len(moves)
        self.child_n = [0.0] * len(moves)
        self.child_w = [0.0] * len(moves)

    def q(self) -> float:
        """Mean value from this node's side to move (0 when unvisited)."""
        return self.value_sum / self.visits if self.visits else 0.0




@dataclass(frozen=True)
class SearchResult:
    """Outcome of a search at the root.

    Attributes:
        moves: the root's legal moves.
        q_values: mean value of each move from the root's side to move
            (NaN where unvisited).
        visits: visits per move (``[num_moves]``), summing to the simulations
            under the root.
        priors: the network's priors per move (with noise when it was added).
        root_value: mean value Q of the root from its side to move.
        best_move: the most visited move (ties go to the higher prior).
    """

    moves: list[chess.Move]
    visits: np.ndarray
    priors: np.ndarray
    root_value: float
    best_move: chess.Move
    q_values: np.ndarray

    @property
    def policy(self) -> np.ndarray:
        """The visit distribution pi over ``moves`` (the training target)."""
        total = self.visits.sum()
        if total <= 0:
            return np.full(len(self.moves), 1.0 / len(self.moves))
        return self.visits / total


def terminal_value(board: chess.Board, moves: list[chess.Move], repetitions: int) -> float | None:
    """Value of a finished game for the side to move, or ``None`` if it goes on.

    Rules: checkmate (-1), stalemate, insufficient material, the 50-move rule
    (halfmove clock >= 100) and threefold repetition (the position seen twice
    before) are draws (0).
    """
    if not moves:
        return -1.0 if board.is_check() else 0.0
    if repetitions >= 2 or board.halfmove_clock >= 100 or board.is_insufficient_material():
        return 0.0
    return None


@dataclass
class PendingLeaf:
    """A leaf collected by :meth:`GameTree.collect`, waiting for its evaluation."""

    node: Node
    path: list[tuple[Node, int]]
    leaf: Leaf


@dataclass
class GameTree:
    """The search tree of one game, searched with batched leaf collection.

    ``board`` is the game position (its move stack, if any, is the game's
    history for repetitions and the input planes).  Call :meth:`start`, then
    alternate :meth:`collect` and :meth:`deliver` until :attr:`finished`, or
    let :func:`run_searches` do it.  :meth:`advance` keeps the chosen move's
    subtree (tree reuse).
    """

    board: chess.Board
    config: SearchConfig
    needs_planes: bool = False
    cache: EvalCache | None = None
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    collisions: int = 0

    def __post_init__(self) -> None:
        if not self.board.is_valid():
            raise SearchError(f"invalid position for search: {self.board.fen()} ({self.board.status()!r})")
        self._history = encoding.PlaneHistory.from_board(self.board)
        self.root = self._new_root(self.board)
        self._target = 0
        self._done = 0
        self._in_flight = 0
        self._noise = False
        self._noised_root: Node | None = None
        self._last_was_collision = False
        self._game_rows: np.ndarray | None = None

    # -- game line -------------------------------------------------------

    def _new_root(self, board: chess.Board) -> Node:
        key = _position_key(board)
        node = Node(board.copy(stack=False), key, self._history.repetitions())
        if self.needs_planes:
            node.row = encoding.board_row(node.board, node.repetitions)
        return node

    def advance(self, move: chess.Move) -> None:
        """Play ``move`` in the game and keep its subtree as the new root."""
        if move not in self.board.legal_moves:
            raise SearchError(f"illegal move {move.uci()} in {self.board.fen()}")
        child = None
        if self.root.expanded:
            assert self.root.moves is not None
            child = self.root.children[self.root.moves.index(move)]
        self.board.push(move)
        self._history.push(self.board)
        if child is None or child.pending:
            child = self._new_root(self.board)
        self.root = child
        self._game_rows = None
        self._target = self._done = self._in_flight = 0

    def history_snapshot(self) -> np.ndarray:
        """``(8, 14)`` uint64 rows of the game position's input planes."""
        return self._history.snapshot()

    # -- search ----------------------------------------------------------

    def start(self, num_simulations: int | None = None, add_noise: bool = False) -> None:
        """Begin a search until the root holds ``num_simulations`` visits
        (default: the config's).  Visits kept by tree reuse count towards
        them, as in lc0 and KataGo; a reused root that already holds more
        gets no new simulations."""
        sims = self.config.num_simulations if num_simulations is None else num_simulations
        if sims < 0:
            raise SearchError(f"num_simulations must be >= 0, got {sims}")
        if self.root.terminal_value is not None or self._is_terminal_root():
            raise SearchError(f"search started on a finished game: {self.board.fen()}")
        self._noise = add_noise
        self._done = 0
        self._in_flight = 0
        kept = int(round(sum(self.root.child_n))) if self.root.expanded else 0
        self._target = max(sims - kept, 0)
        if add_noise and self.root.expanded:
            self._add_noise(self.root)

    def _is_terminal_root(self) -> bool:
        moves = list(self.board.legal_moves)
        return terminal_value(self.board, moves, self.root.repetitions) is not None

    @property
    def finished(self) -> bool:
        return self.root.expanded and self._done >= self._target

    @property
    def simulations_done(self) -> int:
        return self._done

    def collect(self, max_leaves: int | None = None) -> list[PendingLeaf]:
        """Select up to ``max_leaves`` new leaves (virtual loss keeps them apart).

        Leaves that are terminal or found in the cache are backed up at once.
        """
        limit = self.config.leaves_per_batch if max_leaves is None else max_leaves
        if not self.root.expanded:
            if self.root.pending:
                return []
            pending = self._reach_leaf(self.root, [])
            return [pending] if pending is not None else []
        batch: list[PendingLeaf] = []
        misses = 0
        attempts = 0  # bounded, so a tree whose lines all end at once returns to the driver
        while len(batch) < limit and self._done + self._in_flight < self._target and attempts < 4 * limit:
            attempts += 1
            pending = self._simulate()
            if pending is not None:
                batch.append(pending)
            elif self._last_was_collision:
                misses += 1
                if misses > limit:
                    break
        return batch

    def deliver(self, pending: Sequence[PendingLeaf], results: Sequence[tuple[np.ndarray, float]]) -> None:
        """Expand the leaves with the evaluator's output and back the values up."""
        if len(pending) != len(results):
            raise SearchError(f"evaluator returned {len(results)} results for {len(pending)} leaves")
        for item, (priors, value) in zip(pending, results):
            priors = check_evaluation(item.node.board, item.node.moves, priors, value)
            node = item.node
            node.pending = False
            assert node.moves is not None
            if self.cache is not None:
                self.cache.put(_cache_key(node), node.moves, priors, float(value))
            node.expand(node.moves, priors)
            if node is self.root:
                if self._noise:
                    self._add_noise(node)
                node.visits += 1
                node.value_sum += float(value)
                continue
            self._in_flight -= 1
            self._backup(item.path, node, float(value))

    def _simulate(self) -> PendingLeaf | None:
        """One selection from the root; returns a leaf that needs the network."""
        self._last_was_collision = False
        node = self.root
        path: list[tuple[Node, int]] = []
        vloss = self.config.virtual_loss
        while node.expanded and node.terminal_value is None:
            index = self._select(node)
            path.append((node, index))
            node.child_n[index] += vloss
            node.child_w[index] -= vloss
            child = node.children[index]
            if child is None:
                assert node.moves is not None
                child = self._make_child(node, node.moves[index], path)
                node.children[index] = child
            node = child
        if node.terminal_value is not None:
            self._backup(path, node, node.terminal_value)
            return None
        if node.pending:
            self._revert_virtual_loss(path)
            self.collisions += 1
            self._last_was_collision = True
            return None
        return self._reach_leaf(node, path)

    def _reach_leaf(self, node: Node, path: list[tuple[Node, int]]) -> PendingLeaf | None:
        """A leaf seen for the first time: terminal, cached, or sent to the network."""
        cached = self.cache.get(_cache_key(node)) if self.cache is not None else None
        moves = cached[0] if cached is not None else list(node.board.generate_legal_moves())
        terminal = terminal_value(node.board, moves, node.repetitions)
        if terminal is not None:
            if node is self.root:
                raise SearchError(f"search started on a finished game: {node.board.fen()}")
            node.terminal_value = terminal
            self._backup(path, node, terminal)
            return None
        if cached is not None:
            node.expand(moves, cached[1])
            if node is self.root:
                node.visits += 1
                node.value_sum += cached[2]
                if self._noise:
                    self._add_noise(node)
            else:
                self._backup(path, node, cached[2])
            return None
        node.moves = moves
        node.pending = True
        if node is not self.root:
            self._in_flight += 1
        history = self._leaf_history(node, path) if self.needs_planes else None
        return PendingLeaf(node, path, Leaf(node.board, moves, history))

    def _make_child(self, parent: Node, move: chess.Move, path: list[tuple[Node, int]]) -> Node:
        board = parent.board.copy(stack=False)
        board.push(move)
        key = _position_key(board)
        repetitions = self._history.occurrences(key) if board.halfmove_clock else 0
        if board.halfmove_clock:
            # path[0] is the root, already counted with the game's positions.
            repetitions += sum(1 for node, _ in path[1:] if node.key == key)
        child = Node(board, key, repetitions)
        if self.needs_planes:
            child.row = encoding.board_row(board, repetitions)
        return child

    def _leaf_history(self, node: Node, path: list[tuple[Node, int]]) -> np.ndarray:
        """The leaf's last 8 positions as ``(8, 14)`` rows: tree path, then game."""
        steps_wanted = encoding.HISTORY_STEPS
        chain = [node.row] + [parent.row for parent, _ in reversed(path[-(steps_wanted - 1) :])]
        steps = len(chain)
        if steps == steps_wanted:
            return np.array(chain, dtype=np.uint64)
        rows = np.empty((steps_wanted, encoding.ROW_WIDTH), dtype=np.uint64)
        rows[:steps] = chain
        if steps < steps_wanted:
            # chain[-1] is the root: continue with the game's positions before it.
            if self._game_rows is None:
                self._game_rows = self._history.snapshot()
            game = self._game_rows
            rows[steps:] = game[1 : 1 + encoding.HISTORY_STEPS - steps]
        return rows

    def _select(self, node: Node) -> int:
        """PUCT: argmax of Q + c(s) * P * sqrt(N) / (1 + N_a); unvisited Q = FPU."""
        config = self.config
        n_parent = node.visits
        c = config.c_puct_init + math.log((1.0 + n_parent + config.c_puct_base) / config.c_puct_base)
        if config.fpu_mode == "relative":
            fpu = (node.value_sum / n_parent if n_parent else 0.0) - config.fpu_value
        else:
            fpu = config.fpu_value
        k = c * math.sqrt(max(n_parent, 1))
        best_index, best_score = 0, -math.inf
        for index, (prior, n, w) in enumerate(zip(node.priors, node.child_n, node.child_w)):
            score = (w / n if n else fpu) + k * prior / (1.0 + n)
            if score > best_score:
                best_index, best_score = index, score
        return best_index

    def _backup(self, path: list[tuple[Node, int]], leaf: Node, value: float) -> None:
        """Add ``value`` (leaf's side to move) along ``path``, undoing virtual loss."""
        leaf.visits += 1
        leaf.value_sum += value
        vloss = self.config.virtual_loss
        for node, index in reversed(path):
            value = -value
            node.child_n[index] += 1.0 - vloss
            node.child_w[index] += value + vloss
            node.visits += 1
            node.value_sum += value
        if path:
            self._done += 1

    def _revert_virtual_loss(self, path: list[tuple[Node, int]]) -> None:
        vloss = self.config.virtual_loss
        for node, index in path:
            node.child_n[index] -= vloss
            node.child_w[index] += vloss

    def _add_noise(self, node: Node) -> None:
        assert node.priors is not None
        if self._noised_root is node:
            return
        self._noised_root = node
        alpha, eps = self.config.dirichlet_alpha, self.config.dirichlet_epsilon
        if len(node.priors) < 2 or eps == 0 or alpha == 0:
            return
        noise = self.rng.dirichlet(np.full(len(node.priors), alpha))
        node.priors = ((1.0 - eps) * np.asarray(node.priors) + eps * noise).tolist()

    def result(self) -> SearchResult:
        """The root's visit counts, priors and value."""
        root = self.root
        if not root.expanded:
            raise SearchError(f"no search has run on {self.board.fen()}")
        assert root.moves is not None and root.priors is not None
        child_n = np.asarray(root.child_n)
        priors = np.asarray(root.priors)
        visits = np.rint(child_n).astype(np.int64)
        best = int(np.lexsort((-priors, -visits))[0])
        q_values = np.divide(
            np.asarray(root.child_w), child_n, out=np.full(len(visits), np.nan), where=child_n > 0
        )
        return SearchResult(
            moves=list(root.moves),
            visits=visits,
            priors=priors,
            root_value=root.q(),
            best_move=root.moves[best],
            q_values=q_values,
        )


def _position_key(board: chess.Board) -> Hashable:
    return board._transposition_key()


def _cache_key(node: Node) -> Hashable:
    return (node.key, min(node.repetitions, 2))


# ---------------------------------------------------------------------------
# Drivers


Owner = tuple[GameTree, list[PendingLeaf]]


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


def deliver_results(owners: Sequence[Owner], results: Sequence[tuple[np.ndarray, float]]) -> None:
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


def choose_move(
    board: chess.Board,
    time_limit_s: float,
    evaluator: Evaluator,
    config: SearchConfig | None = None,
) -> chess.Move:
    """The most visited move after searching for about ``time_limit_s`` seconds
    (at least one batch of simulations, no noise)."""
    if not time_limit_s > 0:
        raise SearchError(f"time_limit_s must be > 0, got {time_limit_s!r}")
    config = config or SearchConfig()
    deadline = time.perf_counter() + time_limit_s
    tree = GameTree(board.copy(), config, needs_planes=evaluator.needs_planes, cache=EvalCache(config.cache_size))
    tree.start(num_simulations=10**9)
    run_searches([tree], evaluator, should_stop=lambda: time.perf_counter() >= deadline)
    return tree.result().best_move


def select_move(
    result: SearchResult,
    ply: int,
    config: SearchConfig,
    rng: np.random.Generator,
) -> chess.Move:
    """Self-play move choice: sample ∝ N^(1/τ) for the first ``temperature_plies``
    plies, then the most visited move."""
    if ply >= config.temperature_plies or config.temperature == 0:
        return result.best_move
    visits = result.visits.astype(np.float64)
    if visits.sum() <= 0:
        return result.best_move
    weights = visits ** (1.0 / config.temperature)
    index = int(rng.choice(len(visits), p=weights / weights.sum()))
    return result.moves[index]
