"""The python reference's search tree (:class:`GameTree`): PUCT or Gumbel
AlphaZero MCTS over python-chess boards.

This is the readable reference that the native core (``models/native/``,
:mod:`models.native_tree`) is tested against, visit for visit.  It never
imports torch: the network is injected through the small
:class:`~models.evaluation.Evaluator` protocol (a batch of leaves -> priors
over each leaf's legal moves and a value from the leaf's side to move).

A tree collects up to ``SearchConfig.leaves_per_batch`` leaves (kept apart by
virtual loss) before an evaluation; :mod:`models.search_drivers` steps many
trees together so that their leaves share one evaluator call.  The selection
rules (PUCT, Gumbel, MCTS-solver) live in :mod:`models.search_rules`, the
node and its sign conventions in :mod:`models.search_node`.

C++ twin: models/native/search_tree.cpp (``SearchTree``; declared in search.h).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import chess
import numpy as np

from models import encoding
from models.evaluation import EvalCache, Leaf, LeafEvaluation, check_evaluation, split_evaluation
from models.search_config import (
    GumbelNoise,
    SearchConfig,
    SearchError,
    SearchResult,
    requested_simulations,
    terminal_value,
)
from models.search_node import Node, cache_key, position_key, proof_outcome, terminal_outcome
from models.search_rules import (
    mates_in_one,
    root_result,
    select_gumbel_interior,
    select_gumbel_root,
    select_puct,
    solver_choice,
)


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
    let :func:`models.search_drivers.run_searches` do it.  :meth:`advance`
    keeps the chosen move's subtree (tree reuse).

    ``score_alternatives`` (analysis, e.g. UCI MultiPV): once the solver has
    proven the root, simulations go only to the root moves that are not
    proven, so that they get scores, instead of replaying the proof (a proven
    move's simulation backs its proof up at once, with no evaluation); when
    every root move is proven the tree is :attr:`exhausted` and finished.
    Off (self-play, matches): the proof is followed as in any node.
    """

    board: chess.Board
    config: SearchConfig
    needs_planes: bool = False
    cache: EvalCache | None = None
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    collisions: int = 0
    score_alternatives: bool = False

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
        # Gumbel: the root's noise and this search's visits per root move.
        self._gumbel: list[float] = []
        self._root_counts: list[int] = []
        self._given_gumbel: dict[chess.Move, float] | None = None

    # -- game line -------------------------------------------------------

    def _new_root(self, board: chess.Board) -> Node:
        key = position_key(board)
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
        if child is None or child.pending or child.terminal_value is not None:  # a two-fold draw: afresh
            child = self._new_root(self.board)
        self.root = child
        self._game_rows = None
        self._target = self._done = self._in_flight = 0
        self._gumbel, self._root_counts = [], []

    def history_snapshot(self) -> np.ndarray:
        """``(8, 14)`` uint64 rows of the game position's input planes."""
        return self._history.snapshot()

    # -- search ----------------------------------------------------------

    def start(
        self, num_simulations: int | None = None, add_noise: bool = False, gumbel: GumbelNoise | None = None
    ) -> None:
        """Begin a search until the root holds ``num_simulations`` visits
        (default: the config's).  Visits kept by tree reuse count towards
        them, as in lc0 and KataGo; a reused root that already holds more
        gets no new simulations.

        With ``algorithm == "gumbel"`` the search runs ``num_simulations``
        new simulations whatever was kept, ``add_noise`` draws the root's
        Gumbel noise (``gumbel_scale`` times standard Gumbel draws from
        ``rng``; no Dirichlet noise) and ``gumbel`` gives that noise per
        root move instead (every legal move; for tests comparing backends).
        """
        sims = requested_simulations(self.config, num_simulations)
        if self.root.terminal_value is not None or self._is_terminal_root():
            raise SearchError(f"search started on a finished game: {self.board.fen()}")
        self._given_gumbel = self._check_gumbel(gumbel)
        self._noise = add_noise
        self._done = 0
        self._in_flight = 0
        kept = int(round(sum(self.root.child_n))) if self.root.expanded else 0
        self._gumbel, self._root_counts = [], []
        if self.config.algorithm == "gumbel":
            self._target = sims
        else:
            self._target = max(sims - kept, 0)
        if self.root.expanded:
            self._prepare_root(self.root)

    def _check_gumbel(self, gumbel: GumbelNoise | None) -> dict[chess.Move, float] | None:
        if gumbel is None:
            return None
        values = {move: float(value) for move, value in gumbel.items()}
        for move in self.board.legal_moves:
            if move not in values or not math.isfinite(values[move]):
                raise SearchError(f"gumbel noise has no finite value for {move.uci()} in {self.board.fen()}")
        return values

    def _prepare_root(self, node: Node) -> None:
        """Root noise once the root is expanded: Gumbel's or Dirichlet's."""
        if self.config.algorithm != "gumbel":
            if self._noise:
                self._add_noise(node)
            return
        assert node.moves is not None
        count = len(node.moves)
        self._root_counts = [0] * count
        if self._given_gumbel is not None:
            self._gumbel = [self._given_gumbel[move] for move in node.moves]
        elif self._noise and self.config.gumbel_scale > 0:
            self._gumbel = (self.rng.gumbel(size=count) * self.config.gumbel_scale).tolist()
        else:
            self._gumbel = [0.0] * count

    def _is_terminal_root(self) -> bool:
        moves = list(self.board.legal_moves)
        return terminal_value(self.board, moves, self.root.repetitions) is not None

    @property
    def finished(self) -> bool:
        return self.root.expanded and (
            self._done >= self._target or (self._in_flight == 0 and self.exhausted)
        )

    @property
    def exhausted(self) -> bool:
        """With ``score_alternatives``: the root and each of its moves are
        proven, so no simulation can learn anything more."""
        return self._searches_alternatives() and all(
            child is not None and child.proof is not None for child in self.root.children
        )

    def _searches_alternatives(self) -> bool:
        """Whether root selections skip the proven moves (see the class docstring)."""
        return self.score_alternatives and self.root.expanded and self.root.proof is not None

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
            if self.exhausted:
                break
            attempts += 1
            pending = self._simulate()
            if pending is not None:
                batch.append(pending)
            elif self._last_was_collision:
                misses += 1
                if misses > limit:
                    break
        return batch

    def deliver(self, pending: Sequence[PendingLeaf], results: Sequence[LeafEvaluation]) -> None:
        """Expand the leaves with the evaluator's output and back the values
        (and the auxiliary D and M, see :mod:`models.search_node`) up."""
        if len(pending) != len(results):
            raise SearchError(f"evaluator returned {len(results)} results for {len(pending)} leaves")
        for item, result in zip(pending, results):
            node = item.node
            priors, value, draw, moves_left = split_evaluation(node.board, result)
            priors = check_evaluation(node.board, node.moves, priors, value)
            node.pending = False
            assert node.moves is not None
            if self.cache is not None:
                self.cache.put(cache_key(node), node.moves, priors, float(value), draw, moves_left)
            node.expand(node.moves, priors)
            node.raw_value = float(value)
            proven = self._find_mates(node, item.path)
            outcome = proof_outcome(node) if proven else (float(value), draw, moves_left)
            if node is self.root:
                self._prepare_root(node)
                _add_visit(node, *outcome)
                continue
            self._in_flight -= 1
            self._backup(item.path, node, *outcome, proven=proven)

    def _simulate(self) -> PendingLeaf | None:
        """One selection from the root; returns a leaf that needs the network."""
        self._last_was_collision = False
        node = self.root
        path: list[tuple[Node, int]] = []
        vloss = self.config.virtual_loss
        root = self.root
        while node.expanded and node.terminal_value is None and (node.proof is None or node is root):
            index = self._select(node)
            if node is root and self._root_counts:
                self._root_counts[index] += 1
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
            self._backup(path, node, *terminal_outcome(node.terminal_value))
            return None
        if node.proof is not None:  # proven by the solver: its exact value
            self._backup(path, node, *proof_outcome(node))
            return None
        if node.pending:
            self._revert_virtual_loss(path)
            self.collisions += 1
            self._last_was_collision = True
            return None
        return self._reach_leaf(node, path)

    def _reach_leaf(self, node: Node, path: list[tuple[Node, int]]) -> PendingLeaf | None:
        """A leaf seen for the first time: terminal, cached, or sent to the network."""
        cached = self.cache.get(cache_key(node)) if self.cache is not None else None
        moves = cached.moves if cached is not None else list(node.board.generate_legal_moves())
        terminal = terminal_value(node.board, moves, node.repetitions)
        if terminal is not None:
            if node is self.root:
                raise SearchError(f"search started on a finished game: {node.board.fen()}")
            node.terminal_value = terminal
            if self.config.solver:
                node.proof, node.proof_plies = int(terminal), 0
            self._backup(path, node, *terminal_outcome(terminal), proven=self.config.solver)
            return None
        if self.config.twofold_draw and node is not self.root and node.repetitions >= 1:
            node.terminal_value = 0.0  # a draw for the search, not a proven one
            self._backup(path, node, *terminal_outcome(0.0), proven=False)
            return None
        if cached is not None:
            node.expand(moves, cached.priors)
            node.raw_value = cached.value
            proven = self._find_mates(node, path)
            outcome = proof_outcome(node) if proven else (cached.value, cached.draw, cached.moves_left)
            if node is self.root:
                _add_visit(node, *outcome)
                self._prepare_root(node)
            else:
                self._backup(path, node, *outcome, proven=proven)
            return None
        node.moves = moves
        node.pending = True
        if node is not self.root:
            self._in_flight += 1
        history = self._leaf_history(node, path) if self.needs_planes else None
        return PendingLeaf(node, path, Leaf(node.board, moves, history))

    def _find_mates(self, node: Node, path: list[tuple[Node, int]]) -> bool:
        """Solver, at an expansion: the moves that checkmate get their
        (terminal) child now; with ``solver_threats``, the moves after which
        the opponent mates in one get their child now, proven won (for the
        opponent) in 1 ply.  ``path`` leads to ``node`` (repetitions).  True
        when the node is proven by them."""
        if not self.config.solver:
            return False
        assert node.moves is not None
        threats = self.config.solver_threats
        board = node.board
        found = False
        for index, move in enumerate(node.moves):
            check = board.gives_check(move)
            if not check and not threats:
                continue  # a mate is a check: only checks are played out
            board.push(move)
            if check and not any(board.generate_legal_moves()):
                child = Node(board.copy(stack=False), position_key(board), 0)
                child.terminal_value = -1.0
                child.proof = -1
                node.children[index] = child
                found = True
            elif threats and board.halfmove_clock < 100 and mates_in_one(board):
                # The opponent mates in one, unless the move ends the game in a
                # draw (50-move rule, insufficient material, threefold repetition).
                if not board.is_insufficient_material():
                    board.pop()
                    child = self._make_child(node, move, path)
                    node.children[index] = child
                    if child.repetitions < 2:
                        child.proof, child.proof_plies = 1, 1
                        found = True
                    continue
            board.pop()
        if not found:
            return False
        node.proven_child = True
        return node.update_proof()

    def _make_child(self, parent: Node, move: chess.Move, path: list[tuple[Node, int]]) -> Node:
        board = parent.board.copy(stack=False)
        board.push(move)
        key = position_key(board)
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
        """The move to follow from ``node``: the solver's forced choice, else
        PUCT or Gumbel (root: sequential halving; below: deterministic); at a
        proven root with ``score_alternatives``, an unproven move."""
        skip = None
        if node is self.root and self._searches_alternatives():
            skip = [child is not None and child.proof is not None for child in node.children]
        elif node.proven_child:
            forced, skip = solver_choice(node)
            if forced is not None:
                return forced
        if self.config.algorithm == "gumbel":
            if node is self.root and self._root_counts:
                return select_gumbel_root(
                    node, self.config, self._gumbel, self._root_counts, self._target, skip
                )
            return select_gumbel_interior(node, self.config, skip)
        return select_puct(node, self.config, skip)

    def _backup(
        self,
        path: list[tuple[Node, int]],
        leaf: Node,
        value: float,
        draw: float,
        moves_left: float,
        proven: bool = False,
    ) -> None:
        """Add ``value`` (leaf's side to move) along ``path``, undoing virtual
        loss, with the draw probability ``draw`` (no sign flip) and
        ``moves_left`` (one more per ply up); ``proven``: the leaf was just
        proven (solver: update the path)."""
        _add_visit(leaf, value, draw, moves_left)
        vloss = self.config.virtual_loss
        for node, index in reversed(path):
            value = -value
            moves_left += 1.0
            node.child_n[index] += 1.0 - vloss
            node.child_w[index] += value + vloss
            _add_visit(node, value, draw, moves_left)
        if path:
            self._done += 1
        if proven:
            for node, _ in reversed(path):
                node.proven_child = True
                if node.proof is not None or not node.update_proof():
                    break

    def _revert_virtual_loss(self, path: list[tuple[Node, int]]) -> None:
        vloss = self.config.virtual_loss
        for node, index in path:
            node.child_n[index] -= vloss
            node.child_w[index] += vloss
        if path and self._root_counts and path[0][0] is self.root:
            self._root_counts[path[0][1]] -= 1

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
        """The root's visit counts, priors, value and best move (see
        :class:`SearchResult`)."""
        if not self.root.expanded:
            raise SearchError(f"no search has run on {self.board.fen()}")
        return root_result(self.root, self.config, self._gumbel, self._root_counts)


def _add_visit(node: Node, value: float, draw: float, moves_left: float) -> None:
    """One visit of ``node`` backing up ``value`` (its side to move), D and M."""
    node.visits += 1
    node.value_sum += value
    node.draw_sum += draw
    node.moves_left_sum += moves_left
