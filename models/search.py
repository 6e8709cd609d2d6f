"""PUCT Monte Carlo tree search (AlphaZero) over python-chess boards.

This module is the readable reference that the native core (``models/native/``,
``models/native_search.py``) is tested against, visit for visit.

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

``SearchConfig.algorithm`` picks PUCT (AlphaZero) or Gumbel AlphaZero
(Danihelka et al. 2022, with mctx's defaults: Gumbel-top-k and sequential
halving at the root, the deterministic improved-policy selection below it);
``SearchConfig.solver`` adds the MCTS-solver (proven wins, losses and draws;
mates in one are seen when a node is expanded, and with
``SearchConfig.solver_threats`` the moves that allow a mate in one too).

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
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import chess
import numpy as np

from models import encoding
from models.evaluation import EvalCache, Evaluator, Leaf, check_evaluation

FPU_MODES = ("relative", "absolute")
BACKENDS = ("native", "python")
ALGORITHMS = ("puct", "gumbel")
TINY = 2.2250738585072014e-308
"""Smallest normal double: priors are clipped to it before a log (mctx's ``finfo.tiny``)."""
RESCALE_EPSILON = 1e-8
"""Floor of the Q range when completed Q values are rescaled to [0, 1] (mctx)."""


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
        algorithm: ``puct`` (AlphaZero) or ``gumbel`` (Gumbel AlphaZero,
            Danihelka et al. 2022, mctx's ``gumbel_muzero_policy``): at the
            root, Gumbel-top-k sampling of ``gumbel_considered`` moves and
            sequential halving over them within ``num_simulations``; below
            it, the deterministic selection argmax(pi' - N / (1 + sum N));
            the move played is the halving winner and the training target is
            the improved policy softmax(logits + sigma(completed Q)).  The
            Gumbel noise (with ``add_noise``) replaces the Dirichlet noise and
            there is no temperature.  Visits kept by tree reuse do not count
            towards a Gumbel search: each runs ``num_simulations`` new ones.
        gumbel_considered: moves sampled at the root (m; mctx's 16).
        gumbel_scale: scale of the Gumbel noise (1.0; 0 = deterministic).
        gumbel_c_visit: c_visit of sigma(q) = (c_visit + max N) * c_scale * q (50).
        gumbel_c_scale: c_scale of that formula (0.1).
        solver: MCTS-solver: checkmates and draws found by the search are
            proven and propagate up the tree (a position is won when a move
            leads to a proven loss of the opponent, lost when every move
            leads to a proven win of the opponent, drawn when every move is
            proven and the best is a draw); proven nodes back up their exact
            value, selection never enters a proven loss when another move
            exists, and a proven win is the best move.
        solver_threats: with ``solver``, expanding a node also plays out
            each move that does not mate at once and proves it lost when the
            opponent then has a mate in one (its child is proven won for the
            opponent in 1 ply; the mover sees a loss in 2).  A node whose
            every move allows a mate in one is then proven lost, so a mate in
            2 is seen one level higher.  Costs a legal-move generation per
            move and per checking reply at each expansion; off by default.
        backend: ``native`` (the C++ core in ``models/native``, through
            :mod:`models.native_search`: the default, used by self-play,
            players, UCI and ``zerochess analyse``) or ``python`` (this
            module: the readable reference, for debugging and for comparing
            the two).  An evaluator that only implements ``evaluate(leaves)``
            (no ``evaluate_batch``) is always searched by the python backend.
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
    backend: str = "native"
    algorithm: str = "puct"
    gumbel_considered: int = 16
    gumbel_scale: float = 1.0
    gumbel_c_visit: float = 50.0
    gumbel_c_scale: float = 0.1
    solver: bool = True
    solver_threats: bool = False

    def __post_init__(self) -> None:
        positive = {
            "num_simulations": self.num_simulations,
            "c_puct_base": self.c_puct_base,
            "leaves_per_batch": self.leaves_per_batch,
            "gumbel_considered": self.gumbel_considered,
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
            "gumbel_scale": self.gumbel_scale,
            "gumbel_c_visit": self.gumbel_c_visit,
            "gumbel_c_scale": self.gumbel_c_scale,
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
        if self.backend not in BACKENDS:
            raise SearchError(f"search.backend must be one of {BACKENDS}, got {self.backend!r}")
        if self.algorithm not in ALGORITHMS:
            raise SearchError(f"search.algorithm must be one of {ALGORITHMS}, got {self.algorithm!r}")
        if isinstance(self.gumbel_considered, bool) or not isinstance(self.gumbel_considered, int):
            raise SearchError(f"search.gumbel_considered must be an integer, got {self.gumbel_considered!r}")
        if not isinstance(self.solver, bool):
            raise SearchError(f"search.solver must be true or false, got {self.solver!r}")
        if not isinstance(self.solver_threats, bool):
            raise SearchError(f"search.solver_threats must be true or false, got {self.solver_threats!r}")
        for name in ("gumbel_scale", "gumbel_c_visit", "gumbel_c_scale"):
            if not math.isfinite(getattr(self, name)):
                raise SearchError(f"search.{name} must be finite, got {getattr(self, name)!r}")

    def uses_native(self, evaluator: object) -> bool:
        """Whether a search with ``evaluator`` runs on the native core: the
        backend is ``native`` and the evaluator has ``evaluate_batch``."""
        return self.backend == "native" and callable(getattr(evaluator, "evaluate_batch", None))


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
        "raw_value",
        "proof",
        "proof_plies",
        "proven_child",
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
        self.raw_value = 0.0  # the evaluator's value (Gumbel's mixed value)
        # MCTS-solver: -1 lost, 0 drawn, 1 won for the side to move (None:
        # unproven), in proof_plies plies; proven_child: a child is proven.
        self.proof: int | None = None
        self.proof_plies = 0
        self.proven_child = False

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

    def update_proof(self) -> bool:
        """MCTS-solver rule over the children; True when the node became proven."""
        best_win: int | None = None
        all_proven, draw, longest = True, False, 0
        for child in self.children:
            if child is None or child.proof is None:
                all_proven = False
            elif child.proof == -1:
                if best_win is None or child.proof_plies + 1 < best_win:
                    best_win = child.proof_plies + 1
            elif child.proof == 0:
                draw = True
            else:
                longest = max(longest, child.proof_plies + 1)
        if best_win is not None:
            self.proof, self.proof_plies = 1, best_win
        elif all_proven and self.children:
            self.proof, self.proof_plies = (0, 0) if draw else (-1, longest)
        else:
            return False
        return True




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
        best_move: PUCT: the most visited move (ties go to the higher
            prior); Gumbel: the sequential-halving winner.  With the solver,
            the fastest proven win, and never a proven loss when another
            move is not one.
        improved_policy: Gumbel only: softmax(logits + sigma(completed Q))
            over ``moves`` (the training target), else ``None``.
        proof: per move, the solver's proven outcome for the side playing
            it (1 win, 0 draw, -1 loss, NaN unproven), or ``None``.
        proof_plies: per move, the plies to the end of a proven win or loss
            counting the move (0 when unproven or drawn), or ``None``.
    """

    moves: list[chess.Move]
    visits: np.ndarray
    priors: np.ndarray
    root_value: float
    best_move: chess.Move
    q_values: np.ndarray
    improved_policy: np.ndarray | None = None
    proof: np.ndarray | None = None
    proof_plies: np.ndarray | None = None

    @property
    def policy(self) -> np.ndarray:
        """The training target pi over ``moves``: the improved policy of a
        Gumbel search, else the visit distribution."""
        if self.improved_policy is not None:
            return self.improved_policy
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
        # Gumbel: the root's noise and this search's visits per root move.
        self._gumbel: list[float] = []
        self._root_counts: list[int] = []
        self._given_gumbel: dict[chess.Move, float] | None = None

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
        self._gumbel, self._root_counts = [], []

    def history_snapshot(self) -> np.ndarray:
        """``(8, 14)`` uint64 rows of the game position's input planes."""
        return self._history.snapshot()

    # -- search ----------------------------------------------------------

    def start(
        self,
        num_simulations: int | None = None,
        add_noise: bool = False,
        gumbel: Mapping[chess.Move, float] | None = None,
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
        sims = self.config.num_simulations if num_simulations is None else num_simulations
        if sims < 0:
            raise SearchError(f"num_simulations must be >= 0, got {sims}")
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

    def _check_gumbel(self, gumbel: Mapping[chess.Move, float] | None) -> dict[chess.Move, float] | None:
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
            node.raw_value = float(value)
            proven = self._find_mates(node, item.path)
            backed = float(node.proof) if proven and node.proof is not None else float(value)
            if node is self.root:
                self._prepare_root(node)
                node.visits += 1
                node.value_sum += backed
                continue
            self._in_flight -= 1
            self._backup(item.path, node, backed, proven=proven)

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
            self._backup(path, node, node.terminal_value)
            return None
        if node.proof is not None:  # proven by the solver: its exact value
            self._backup(path, node, float(node.proof))
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
            if self.config.solver:
                node.proof, node.proof_plies = int(terminal), 0
            self._backup(path, node, terminal, proven=self.config.solver)
            return None
        if cached is not None:
            node.expand(moves, cached[1])
            node.raw_value = cached[2]
            proven = self._find_mates(node, path)
            backed = float(node.proof) if proven and node.proof is not None else cached[2]
            if node is self.root:
                node.visits += 1
                node.value_sum += backed
                self._prepare_root(node)
            else:
                self._backup(path, node, backed, proven=proven)
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
                child = Node(board.copy(stack=False), _position_key(board), 0)
                child.terminal_value = -1.0
                child.proof = -1
                node.children[index] = child
                found = True
            elif threats and board.halfmove_clock < 100 and _mates_in_one(board):
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
        """The move to follow from ``node``: the solver's forced choice, else
        PUCT or Gumbel (root: sequential halving; below: deterministic)."""
        skip = None
        if node.proven_child:
            forced, skip = _solver_choice(node)
            if forced is not None:
                return forced
        if self.config.algorithm == "gumbel":
            if node is self.root and self._root_counts:
                return self._select_gumbel_root(node, skip)
            return self._select_gumbel_interior(node, skip)
        return self._select_puct(node, skip)

    def _select_puct(self, node: Node, skip: list[bool] | None) -> int:
        """PUCT: argmax of Q + c(s) * P * sqrt(N) / (1 + N_a); unvisited Q = FPU;
        moves in ``skip`` (proven losses) are never chosen."""
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
            if skip is not None and skip[index]:
                continue
            score = (w / n if n else fpu) + k * prior / (1.0 + n)
            if score > best_score:
                best_index, best_score = index, score
        return best_index

    def _select_gumbel_interior(self, node: Node, skip: list[bool] | None) -> int:
        """Gumbel below the root: argmax of pi'(a) - N(a) / (1 + sum N), pi' the
        improved policy softmax(logits + sigma(completed Q))."""
        logits, sigma = gumbel_sigma(node, self.config)
        improved = _softmax([logit + s for logit, s in zip(logits, sigma)])
        total = 1.0
        for n in node.child_n:
            total += n
        best_index, best_score = 0, -math.inf
        for index, (p, n) in enumerate(zip(improved, node.child_n)):
            if skip is not None and skip[index]:
                continue
            score = p - n / total
            if score > best_score:
                best_index, best_score = index, score
        return best_index

    def _select_gumbel_root(self, node: Node, skip: list[bool] | None) -> int:
        """Sequential halving at the root (mctx): among the moves whose visits
        in this search equal the schedule's count, the highest g + logit +
        sigma(completed Q).  The first ``m`` simulations thus take the
        Gumbel-top-m moves, then the halves that score best."""
        logits, sigma = gumbel_sigma(node, self.config)
        counts = self._root_counts
        considered = min(self.config.gumbel_considered, len(counts))
        simulation = 0
        for count in counts:
            simulation += count
        wanted = considered_visit(considered, self._target, simulation)
        return _gumbel_argmax(self._gumbel, logits, sigma, counts, wanted, skip)

    def _backup(self, path: list[tuple[Node, int]], leaf: Node, value: float, proven: bool = False) -> None:
        """Add ``value`` (leaf's side to move) along ``path``, undoing virtual
        loss; ``proven``: the leaf was just proven (solver: update the path)."""
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
        root = self.root
        if not root.expanded:
            raise SearchError(f"no search has run on {self.board.fen()}")
        assert root.moves is not None and root.priors is not None
        child_n = np.asarray(root.child_n)
        priors = np.asarray(root.priors)
        visits = np.rint(child_n).astype(np.int64)
        q_values = np.divide(
            np.asarray(root.child_w), child_n, out=np.full(len(visits), np.nan), where=child_n > 0
        )
        proof = proof_plies = None
        allowed = None
        if self.config.solver:
            proof = np.full(len(visits), np.nan)
            proof_plies = np.zeros(len(visits), dtype=np.int64)
            for index, child in enumerate(root.children):
                if child is not None and child.proof is not None:
                    proof[index] = -child.proof
                    proof_plies[index] = child.proof_plies + 1 if child.proof else 0
            losing = proof == -1
            if losing.any() and not losing.all():
                allowed = [not lose for lose in losing]
        improved = None
        if self.config.algorithm == "gumbel":
            logits, sigma = gumbel_sigma(root, self.config)
            improved = np.asarray(_softmax([logit + s for logit, s in zip(logits, sigma)]))
            counts, gumbel = self._root_counts, self._gumbel
            if len(counts) != len(visits):
                counts, gumbel = [0] * len(visits), [0.0] * len(visits)
            top = max(count for i, count in enumerate(counts) if allowed is None or allowed[i])
            skip = None if allowed is None else [not ok for ok in allowed]
            best = _gumbel_argmax(gumbel, logits, sigma, counts, top, skip)
        else:
            best = -1
            for index in range(len(visits)):
                if allowed is not None and not allowed[index]:
                    continue
                if best < 0 or (visits[index], priors[index]) > (visits[best], priors[best]):
                    best = index
        if proof is not None and proof_plies is not None:
            best = _fastest_win(proof, proof_plies, priors, best)
        return SearchResult(
            moves=list(root.moves),
            visits=visits,
            priors=priors,
            root_value=root.q(),
            best_move=root.moves[best],
            q_values=q_values,
            improved_policy=improved,
            proof=proof,
            proof_plies=proof_plies,
        )


# ---------------------------------------------------------------------------
# Gumbel AlphaZero and the MCTS-solver (helpers shared by GameTree's methods)


def considered_visit(considered: int, budget: int, simulation: int) -> int:
    """Sequential halving's schedule (mctx's ``get_sequence_of_considered_visits``
    for ``considered`` moves and ``budget`` simulations, at index
    ``simulation``): the visits a root move must have to get that simulation.

    Phases over ``considered``, then max(2, half) moves...: each phase gives
    its moves max(1, budget // (ceil(log2(considered)) * moves)) visits each,
    one round at a time.
    """
    if considered <= 1:
        return simulation
    log2max = (considered - 1).bit_length()
    base, width = 0, considered
    while True:
        extra = max(1, budget // (log2max * width))
        if simulation < extra * width:
            return base + simulation // width
        simulation -= extra * width
        base += extra
        width = max(2, width // 2)


def gumbel_sigma(node: Node, config: SearchConfig) -> tuple[list[float], list[float]]:
    """``(logits, sigma)`` of an expanded node's moves: log priors, and
    sigma(completed Q) of mctx's ``qtransform_completed_by_mix_value``:
    unvisited moves get the mixed value (the raw value mixed with the
    prior-weighted Q of the visited moves), all are rescaled to [0, 1] by
    their min and max, times (c_visit + max N) * c_scale."""
    assert node.priors is not None
    priors, child_n, child_w = node.priors, node.child_n, node.child_w
    logits = [math.log(max(prior, TINY)) for prior in priors]
    sum_n = sum_p = max_n = 0.0
    for prior, n in zip(priors, child_n):
        sum_n += n
        if n > 0:
            sum_p += max(prior, TINY)
            max_n = max(max_n, n)
    weighted = 0.0
    for prior, n, w in zip(priors, child_n, child_w):
        if n > 0:
            weighted += max(prior, TINY) * (w / n) / sum_p
    mixed = (node.raw_value + sum_n * weighted) / (sum_n + 1.0)
    completed = [w / n if n > 0 else mixed for n, w in zip(child_n, child_w)]
    low, high = min(completed), max(completed)
    span = max(high - low, RESCALE_EPSILON)
    scale = (config.gumbel_c_visit + max_n) * config.gumbel_c_scale
    return logits, [scale * ((q - low) / span) for q in completed]


def _softmax(values: list[float]) -> list[float]:
    top = max(values)
    exps = [math.exp(v - top) for v in values]
    total = 0.0
    for e in exps:
        total += e
    return [e / total for e in exps]


def _gumbel_argmax(
    gumbel: list[float],
    logits: list[float],
    sigma: list[float],
    counts: list[int],
    wanted: int,
    skip: list[bool] | None,
) -> int:
    """argmax of max(-1e9, g + logit + sigma) over the moves with ``wanted``
    visits (not in ``skip``); over all allowed moves when none has them."""
    best, best_score = -1, -math.inf
    fallback, fallback_score = 0, -math.inf
    for index, count in enumerate(counts):
        if skip is not None and skip[index]:
            continue
        score = max(-1e9, gumbel[index] + logits[index] + sigma[index])
        if score > fallback_score:
            fallback, fallback_score = index, score
        if count == wanted and score > best_score:
            best, best_score = index, score
    return best if best >= 0 else fallback


def _solver_choice(node: Node) -> tuple[int | None, list[bool] | None]:
    """(the fastest move into a proven loss of the opponent, if any; else the
    moves into proven wins of the opponent, to skip unless all are)."""
    assert node.priors is not None
    forced: int | None = None
    skip = []
    for index, child in enumerate(node.children):
        proof = child.proof if child is not None else None
        if proof == -1 and child is not None and (
            forced is None
            or _faster(child.proof_plies, node.priors[index], node.children[forced], node.priors[forced])
        ):
            forced = index
        skip.append(proof == 1)
    if forced is not None:
        return forced, None
    if all(skip):
        return None, None
    return None, skip


def _faster(plies: int, prior: float, other: Node | None, other_prior: float) -> bool:
    """A win in ``plies`` beats ``other``'s: fewer plies, then the higher prior."""
    assert other is not None
    return plies < other.proof_plies or (plies == other.proof_plies and prior > other_prior)


def _fastest_win(proof: np.ndarray, plies: np.ndarray, priors: np.ndarray, default: int) -> int:
    """The proven win in the fewest plies (ties: the higher prior, then the
    first), else ``default``."""
    best = -1
    for index in range(len(proof)):
        if proof[index] != 1:
            continue
        if best < 0 or plies[index] < plies[best] or (plies[index] == plies[best] and priors[index] > priors[best]):
            best = index
    return default if best < 0 else best


def _mates_in_one(board: chess.Board) -> bool:
    """Whether the side to move has a checkmating move."""
    for reply in list(board.generate_legal_moves()):
        if not board.gives_check(reply):
            continue
        board.push(reply)
        mated = not any(board.generate_legal_moves())
        board.pop()
        if mated:
            return True
    return False


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
    (at least one batch of simulations, no noise), on ``config.backend``."""
    from models.search_backend import new_cache, new_tree, run_trees  # imports this module

    if not time_limit_s > 0:
        raise SearchError(f"time_limit_s must be > 0, got {time_limit_s!r}")
    config = config or SearchConfig()
    deadline = time.perf_counter() + time_limit_s
    tree = new_tree(board.copy(), config, evaluator, cache=new_cache(config, evaluator))
    tree.start(num_simulations=10**9)
    run_trees([tree], evaluator, should_stop=lambda: time.perf_counter() >= deadline)
    return tree.result().best_move


def select_move(
    result: SearchResult,
    ply: int,
    config: SearchConfig,
    rng: np.random.Generator,
) -> chess.Move:
    """Self-play move choice: sample ∝ N^(1/τ) for the first ``temperature_plies``
    plies, then the best move (:attr:`SearchResult.best_move`).  A Gumbel
    search always plays its best move (the sequential-halving winner: its
    Gumbel noise is the exploration), and a proven win is always played; the
    sampling never picks a proven loss when another move was visited."""
    proof = result.proof
    if config.algorithm == "gumbel" or (proof is not None and bool(np.any(proof == 1))):
        return result.best_move
    if ply >= config.temperature_plies or config.temperature == 0:
        return result.best_move
    visits = result.visits.astype(np.float64)
    if proof is not None:
        visits = np.where(proof == -1, 0.0, visits)
    if visits.sum() <= 0:
        return result.best_move
    weights = visits ** (1.0 / config.temperature)
    index = int(rng.choice(len(visits), p=weights / weights.sum()))
    return result.moves[index]
