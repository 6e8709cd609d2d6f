"""The native (C++) search tree with the API of the python reference.

:class:`NativeTree` is a drop-in for :class:`models.search_tree.GameTree` and
:func:`run_native_searches` for :func:`models.search_drivers.run_searches`:
the same search (the python reference is the specification, tested equal
visit for visit in ``tests/test_native_search.py``) running in
``models._native`` with the GIL released.  The evaluator is a
:class:`BatchEvaluator`: one call per round gets the planes of all leaves as
one uint8 array and the (row, policy index) pairs of their legal moves, and
returns the raw logits of those moves and the values; the core applies the
softmax itself (double precision).  :class:`NativeNode` is a read-only view
of one node, read like :class:`models.search_node.Node`.

C++ twin: models/native/search.h, search_tree.cpp, eval_cache.cpp (``SearchTree``, ``EvalCache``),
bound in models/native/search_bindings.cpp.  The games driven on C++ threads
are in :mod:`models.native_drivers`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from typing import Any, Protocol

import chess
import numpy as np

from models import _native
from models.search_config import (
    GumbelNoise,
    SearchConfig,
    SearchError,
    SearchResult,
    requested_simulations,
)
from models.search_node import VisitMeans

SEED_MASK = 0xFFFF_FFFF_FFFF_FFFF
"""Seeds reach the core as unsigned 64-bit integers: ``seed & SEED_MASK``."""


class BatchEvaluator(Protocol):
    """What the native search needs from a network (see the module docstring)."""

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
        """planes ``(N, 119, 8, 8)`` uint8; rows and indices ``(M,)`` int64, the
        leaf row and policy index of each legal move of each leaf (leaves in
        order, each leaf's moves contiguous).  Returns the logits ``(M,)`` and
        the values ``(N,)`` (float32, value from each leaf's side to move),
        optionally followed by ``aux`` ``(N, 2)`` float32: each leaf's draw
        probability D in [0, 1] and plies left M >= 0 (absent or ``None``:
        D = M = 0, the same search as without them)."""
        ...


def copy_fields(target: object, source: object, names: Iterable[str]) -> None:
    """Set each of ``names`` on ``target`` (a bound native config) to its
    value on ``source`` (a settings dataclass of the same field names)."""
    for name in names:
        setattr(target, name, getattr(source, name))


_SEARCH_FIELDS_RENAMED = ("backend", "fpu_mode", "algorithm")
"""SearchConfig fields the native search does not read under their own name."""


def search_params(config: SearchConfig) -> _native.SearchParams:
    """The native form of a validated :class:`SearchConfig`: its fields under
    their own names, ``fpu_mode`` and ``algorithm`` as two flags."""
    params = _native.SearchParams()
    copy_fields(params, config, [f.name for f in fields(config) if f.name not in _SEARCH_FIELDS_RENAMED])
    params.fpu_absolute = config.fpu_mode == "absolute"
    params.gumbel = config.algorithm == "gumbel"
    return params


class NativeCache:
    """LRU evaluation cache of the native search (models.evaluation.EvalCache's
    rules), thread-safe and shareable between the trees of one driver."""

    def __init__(self, max_size: int) -> None:
        if max_size < 0:
            raise ValueError(f"cache max_size must be >= 0, got {max_size}")
        self._cache = _native.EvalCache(max_size)

    def __len__(self) -> int:
        return len(self._cache)

    @property
    def hits(self) -> int:
        return self._cache.hits

    @property
    def misses(self) -> int:
        return self._cache.misses


# ---------------------------------------------------------------------------
# One game's tree


class NativeTree:
    """The search tree of one game in C++ (mirrors :class:`models.search_tree.GameTree`).

    ``board``'s move stack is the game's history (repetitions and history
    planes).  Raises :class:`SearchError` naming the FEN for an invalid position.
    """

    def __init__(
        self,
        board: chess.Board,
        config: SearchConfig,
        *,
        policy_encoding: str = "az4672",
        cache: NativeCache | None = None,
        seed: int = 0,
    ) -> None:
        self.board = board
        self.config = config
        self.policy_encoding = policy_encoding
        moves = [move.uci() for move in board.move_stack]
        try:
            self._tree = _native.SearchTree(
                search_params(config),
                policy_encoding,
                cache._cache if cache is not None else None,
                seed & SEED_MASK,
                board.root().fen(),
                moves,
            )
        except _native.ChessError as error:
            message = str(error)
            if board.fen() not in message:
                message += f" (search position {board.fen()})"
            raise SearchError(message) from error

    @property
    def collisions(self) -> int:
        return self._tree.collisions

    def advance(self, move: chess.Move) -> None:
        """Play ``move`` in the game and keep its subtree as the new root."""
        if move not in self.board.legal_moves:
            raise SearchError(f"illegal move {move.uci()} in {self.board.fen()}")
        self._tree.advance(move.uci())
        self.board.push(move)

    def start(
        self, num_simulations: int | None = None, add_noise: bool = False, gumbel: GumbelNoise | None = None
    ) -> None:
        """Begin a search until the root holds ``num_simulations`` visits (kept
        visits count; a Gumbel search runs them all anew), as
        :meth:`GameTree.start`; ``gumbel`` gives the root's Gumbel noise per
        legal move (else ``add_noise`` draws it from the tree's seed)."""
        sims = requested_simulations(self.config, num_simulations)
        noise = None if gumbel is None else {move.uci(): float(value) for move, value in gumbel.items()}
        try:
            self._tree.start(sims, add_noise, noise)
        except _native.ChessError as error:
            raise SearchError(str(error)) from error

    @property
    def finished(self) -> bool:
        return self._tree.finished

    @property
    def score_alternatives(self) -> bool:
        """At a proven root, search only the unproven root moves (as
        :attr:`GameTree.score_alternatives <models.search_tree.GameTree>`)."""
        return self._tree.score_alternatives

    @score_alternatives.setter
    def score_alternatives(self, on: bool) -> None:
        self._tree.score_alternatives = on

    @property
    def exhausted(self) -> bool:
        """With :attr:`score_alternatives`: the root and each of its moves are proven."""
        return self._tree.exhausted

    @property
    def simulations_done(self) -> int:
        return self._tree.simulations_done

    def result(self) -> SearchResult:
        """The root's visit counts, priors and value."""
        try:
            (ucis, child_n, child_w, priors, root_value, best, _, improved, proof, plies, draw, moves_left) = (
                self._tree.result()
            )
        except _native.ChessError as error:
            raise SearchError(str(error)) from error
        moves = [chess.Move.from_uci(uci) for uci in ucis]
        q_values = np.divide(child_w, child_n, out=np.full(len(moves), np.nan), where=child_n > 0)
        if proof is not None:
            proof = np.where(proof == _native.PROOF_NONE, np.nan, proof.astype(np.float64))
        return SearchResult(
            moves=moves,
            visits=np.rint(child_n).astype(np.int64),
            priors=priors,
            root_value=float(root_value),
            best_move=moves[best],
            q_values=q_values,
            improved_policy=improved,
            proof=proof,
            proof_plies=plies,
            root_draw=float(draw),
            root_moves_left=float(moves_left),
        )

    def history_snapshot(self) -> np.ndarray:
        """``(8, 14)`` uint64 rows of the game position's input planes."""
        return self._tree.history_snapshot()

    @property
    def root(self) -> NativeNode:
        """A read-only view of the root (valid until the next :meth:`advance`)."""
        return NativeNode(self._tree, self._tree.root_id)


def _view(part: str, index: int, doc: str) -> Any:
    """A read-only property of :class:`NativeNode`: item ``index`` of the
    tuple its method ``part`` (``_node_info`` or ``_node_edges``) returns."""
    return property(lambda node: getattr(node, part)()[index], doc=doc)


class NativeNode(VisitMeans):
    """Read-only view of one node of a :class:`NativeTree`; quacks like
    :class:`models.search_node.Node` for reading (pipeline/uci/analysis.py).  The
    node's data is fetched from C++ on first use."""

    __slots__ = ("_board", "_children", "_edges", "_generation", "_id", "_info", "_tree")

    def __init__(self, tree: _native.SearchTree, node_id: int) -> None:
        self._tree = tree
        self._id = node_id
        self._generation = tree.generation
        self._info: tuple | None = None
        self._edges: tuple | None = None
        self._children: list[NativeNode | None] | None = None
        self._board: chess.Board | None = None

    def _check(self) -> None:
        if self._tree.generation != self._generation:
            raise SearchError("stale node view: the tree has advanced since it was made")

    def _node_info(self) -> tuple:
        if self._info is None:
            self._check()
            self._info = self._tree.node_info(self._id)
        return self._info

    def _node_edges(self) -> tuple:
        if self._edges is None:
            self._check()
            ucis, priors, child_n, child_w, children = self._tree.node_edges(self._id)
            moves = None if ucis is None else [chess.Move.from_uci(uci) for uci in ucis]
            self._edges = (moves, priors, child_n, child_w, children)
        return self._edges

    # Read from node_info (visits .. moves_left_sum) and node_edges (moves .. child_w).
    visits: int = _view("_node_info", 0, "Visits of the node.")
    value_sum: float = _view("_node_info", 1, "Sum of the values backed up, from the side to move.")
    terminal_value: float | None = _view("_node_info", 2, "Value of a finished game, else None.")
    expanded: bool = _view("_node_info", 3, "Whether the node has its moves and priors.")
    pending: bool = _view("_node_info", 4, "Whether the node waits for its evaluation.")
    proof: int | None = _view(
        "_node_info", 5, "Solver: -1 lost, 0 drawn, 1 won for the side to move, None unproven."
    )
    proof_plies: int = _view("_node_info", 6, "Plies to the end of a proven win or loss.")
    draw_sum: float = _view("_node_info", 7, "Sum of the draw probabilities backed up.")
    moves_left_sum: float = _view("_node_info", 8, "Sum of the plies left backed up (one more per ply up).")
    moves: list[chess.Move] | None = _view("_node_edges", 0, "The legal moves (None: unexpanded).")
    priors: list[float] | None = _view("_node_edges", 1, "The priors of the moves.")
    child_n: list[float] = _view("_node_edges", 2, "Visits per move.")
    child_w: list[float] = _view("_node_edges", 3, "Sum of the values per move, from the side choosing it.")

    @property
    def children(self) -> list[NativeNode | None]:
        if self._children is None:
            ids = self._node_edges()[4]
            self._children = [NativeNode(self._tree, i) if i >= 0 else None for i in ids]
        return self._children

    @property
    def board(self) -> chess.Board:
        """The node's position (no move stack), built on demand."""
        if self._board is None:
            self._check()
            self._board = chess.Board(self._tree.node_fen(self._id))
        return self._board



def run_native_searches(
    trees: Sequence[NativeTree],
    evaluator: BatchEvaluator,
    *,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Step the started ``trees`` together until each is finished, one
    ``evaluator.evaluate_batch`` call per round over the leaves of all trees
    (as :func:`models.search_drivers.run_searches`).  Returns the evaluator calls.
    A bad evaluation raises ``models._native.ChessError`` naming the FEN or the
    shape (a ValueError); the trees stay usable."""
    return _native.run_searches([tree._tree for tree in trees], evaluator, should_stop)
