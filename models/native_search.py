"""The native (C++) PUCT search and self-play driver, with the API of models.search.

:class:`NativeTree` is a drop-in for :class:`models.search.GameTree` and
:func:`run_native_searches` for :func:`models.search.run_searches`: the same
search (``models/search.py`` is the specification, tested equal visit for visit
in ``tests/test_native_search.py``) running in ``models._native`` with the GIL
released.  The evaluator is a :class:`BatchEvaluator`: one call per round gets
the planes of all leaves as one uint8 array and the (row, policy index) pairs
of their legal moves, and returns the raw logits of those moves and the
values; the core applies the softmax itself (double precision).

:class:`SelfPlayDriver` plays many self-play games with the rules of
:class:`pipeline.selfplay.SelfPlayWorker` on C++ threads, and hands back
:class:`NativeGame` arrays ready for the shard writer; :class:`MatchDriver`
plays games between two evaluators the same way.  :class:`HashEvaluator`
is a deterministic evaluator that both backends understand, for tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import chess
import numpy as np

from models import _native
from models.evaluation import Leaf, encode_leaves
from models.policy import get_policy_map
from models.search import SearchConfig, SearchError, SearchResult

__all__ = [
    "BatchEvaluator",
    "HashEvaluator",
    "MatchDriver",
    "MatchGame",
    "NativeCache",
    "NativeGame",
    "NativeNode",
    "NativeTree",
    "SelfPlayDriver",
    "run_native_searches",
]


class BatchEvaluator(Protocol):
    """What the native search needs from a network (see the module docstring)."""

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """planes ``(N, 119, 8, 8)`` uint8; rows and indices ``(M,)`` int64, the
        leaf row and policy index of each legal move of each leaf (leaves in
        order, each leaf's moves contiguous).  Returns the logits ``(M,)`` and
        the values ``(N,)`` (float32, value from each leaf's side to move)."""
        ...


def search_params(config: SearchConfig) -> _native.SearchParams:
    """The native form of a validated :class:`SearchConfig`."""
    params = _native.SearchParams()
    params.num_simulations = config.num_simulations
    params.c_puct_init = float(config.c_puct_init)
    params.c_puct_base = float(config.c_puct_base)
    params.fpu_absolute = config.fpu_mode == "absolute"
    params.fpu_value = float(config.fpu_value)
    params.dirichlet_alpha = float(config.dirichlet_alpha)
    params.dirichlet_epsilon = float(config.dirichlet_epsilon)
    params.temperature = float(config.temperature)
    params.temperature_plies = config.temperature_plies
    params.leaves_per_batch = config.leaves_per_batch
    params.virtual_loss = float(config.virtual_loss)
    params.cache_size = int(config.cache_size)
    params.gumbel = config.algorithm == "gumbel"
    params.gumbel_considered = int(config.gumbel_considered)
    params.gumbel_scale = float(config.gumbel_scale)
    params.gumbel_c_visit = float(config.gumbel_c_visit)
    params.gumbel_c_scale = float(config.gumbel_c_scale)
    params.solver = bool(config.solver)
    params.solver_threats = bool(config.solver_threats)
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
    """The search tree of one game in C++ (mirrors :class:`models.search.GameTree`).

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
                seed & 0xFFFF_FFFF_FFFF_FFFF,
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
        self,
        num_simulations: int | None = None,
        add_noise: bool = False,
        gumbel: Mapping[chess.Move, float] | None = None,
    ) -> None:
        """Begin a search until the root holds ``num_simulations`` visits (kept
        visits count; a Gumbel search runs them all anew), as
        :meth:`GameTree.start`; ``gumbel`` gives the root's Gumbel noise per
        legal move (else ``add_noise`` draws it from the tree's seed)."""
        sims = self.config.num_simulations if num_simulations is None else num_simulations
        if sims < 0:
            raise SearchError(f"num_simulations must be >= 0, got {sims}")
        noise = None if gumbel is None else {move.uci(): float(value) for move, value in gumbel.items()}
        try:
            self._tree.start(sims, add_noise, noise)
        except _native.ChessError as error:
            raise SearchError(str(error)) from error

    @property
    def finished(self) -> bool:
        return self._tree.finished

    @property
    def simulations_done(self) -> int:
        return self._tree.simulations_done

    def result(self) -> SearchResult:
        """The root's visit counts, priors and value."""
        try:
            ucis, child_n, child_w, priors, root_value, best, _, improved, proof, plies = self._tree.result()
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
        )

    def history_snapshot(self) -> np.ndarray:
        """``(8, 14)`` uint64 rows of the game position's input planes."""
        return self._tree.history_snapshot()

    @property
    def root(self) -> NativeNode:
        """A read-only view of the root (valid until the next :meth:`advance`)."""
        return NativeNode(self._tree, self._tree.root_id)


class NativeNode:
    """Read-only view of one node of a :class:`NativeTree`; quacks like
    :class:`models.search.Node` for reading (pipeline/uci/analysis.py).  The
    node's data is fetched from C++ on first use."""

    __slots__ = ("_tree", "_id", "_generation", "_info", "_edges", "_children", "_board")

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

    @property
    def visits(self) -> int:
        return self._node_info()[0]

    @property
    def value_sum(self) -> float:
        return self._node_info()[1]

    @property
    def terminal_value(self) -> float | None:
        return self._node_info()[2]

    @property
    def expanded(self) -> bool:
        return self._node_info()[3]

    @property
    def pending(self) -> bool:
        return self._node_info()[4]

    @property
    def proof(self) -> int | None:
        """Solver: -1 lost, 0 drawn, 1 won for the side to move, None unproven."""
        return self._node_info()[5]

    @property
    def proof_plies(self) -> int:
        """Plies to the end of a proven win or loss."""
        return self._node_info()[6]

    @property
    def moves(self) -> list[chess.Move] | None:
        return self._node_edges()[0]

    @property
    def priors(self) -> list[float] | None:
        return self._node_edges()[1]

    @property
    def child_n(self) -> list[float]:
        return self._node_edges()[2]

    @property
    def child_w(self) -> list[float]:
        return self._node_edges()[3]

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

    def q(self) -> float:
        """Mean value from this node's side to move (0 when unvisited)."""
        return self.value_sum / self.visits if self.visits else 0.0


def run_native_searches(
    trees: Sequence[NativeTree],
    evaluator: BatchEvaluator,
    *,
    should_stop: Callable[[], bool] | None = None,
) -> int:
    """Step the started ``trees`` together until each is finished, one
    ``evaluator.evaluate_batch`` call per round over the leaves of all trees
    (as :func:`models.search.run_searches`).  Returns the evaluator calls.
    A bad evaluation raises ``models._native.ChessError`` naming the FEN or the
    shape (a ValueError); the trees stay usable."""
    return _native.run_searches([tree._tree for tree in trees], evaluator, should_stop)


# ---------------------------------------------------------------------------
# Deterministic test evaluator

_MASK64 = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
_WORDS_PER_LEAF = 119 * 64 // 8


def _splitmix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _unit(x: np.ndarray) -> np.ndarray:
    """uint64 -> float64 in [0, 1)."""
    return (x >> np.uint64(11)).astype(np.float64) * 2.0**-53


def softmax(logits: np.ndarray) -> np.ndarray:
    """Max-subtracted softmax in float64 (the core's, written with numpy)."""
    shifted = np.asarray(logits, dtype=np.float64)
    exps = np.exp(shifted - shifted.max())
    return exps / exps.sum()


class HashEvaluator:
    """Deterministic evaluator for both backends: the value and every move's
    logit are a hash of the leaf's input planes (and the move's policy index),
    so the Python and the native search see the same numbers whenever they
    encode the same planes.

    ``evaluate_batch`` serves the native search; ``evaluate`` (with
    ``needs_planes = True``) serves :mod:`models.search` and returns
    ``softmax(logits)`` in float64.
    """

    needs_planes = True

    def __init__(self, seed: int = 0, policy_encoding: str = "az4672") -> None:
        rng = np.random.default_rng(seed)
        self._weights = rng.integers(0, 2**63, size=_WORDS_PER_LEAF, dtype=np.uint64) | np.uint64(1)
        self._salt = np.uint64(int(rng.integers(0, 2**63)))
        self.policy_map = get_policy_map(policy_encoding)
        self.calls = 0
        self.positions = 0

    def _leaf_hashes(self, planes: np.ndarray) -> np.ndarray:
        flat = np.ascontiguousarray(planes, dtype=np.uint8).reshape(len(planes), -1)
        words = flat.view(np.uint64)
        with np.errstate(over="ignore"):
            mixed = (words * self._weights).sum(axis=1, dtype=np.uint64)
        return _splitmix(mixed ^ self._salt)

    def _logits(self, hashes: np.ndarray, indices: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            salted = (indices.astype(np.uint64) + np.uint64(1)) * np.uint64(0xD6E8FEB86659FD93)
            keys = hashes ^ salted
        return (_unit(_splitmix(keys)) * 6.0 - 3.0).astype(np.float32)

    @staticmethod
    def _values(hashes: np.ndarray) -> np.ndarray:
        return (_unit(_splitmix(hashes)) * 1.8 - 0.9).astype(np.float32)

    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        self.calls += 1
        self.positions += len(planes)
        hashes = self._leaf_hashes(planes)
        return self._logits(hashes[rows], np.asarray(indices)), self._values(hashes)

    def evaluate(self, leaves: Sequence[Leaf]) -> list[tuple[np.ndarray, float]]:
        self.calls += 1
        self.positions += len(leaves)
        hashes = self._leaf_hashes(encode_leaves(leaves))
        values = self._values(hashes)
        results = []
        for index, leaf in enumerate(leaves):
            policy = self.policy_map.indices(leaf.board, leaf.moves).astype(np.int64)
            logits = self._logits(np.full(len(policy), hashes[index]), policy)
            results.append((softmax(logits), float(values[index])))
        return results


# ---------------------------------------------------------------------------
# Self-play driver


class DriverConfigError(ValueError):
    """Invalid :class:`SelfPlayDriver` or :class:`MatchDriver` argument; the
    message names the key."""


@dataclass
class NativeGame:
    """A finished self-play game as arrays (one row per searched ply).

    ``policy_index[policy_offsets[p]:policy_offsets[p + 1]]`` are the policy
    indices of the moves visited at ply ``p`` and ``policy_visits`` their visit
    counts (pi = visits / their sum), as the shard writer stores them.
    ``policy_probs`` is the training target pi of each listed move (float32):
    visits / their sum for PUCT; for a Gumbel search every legal move is
    listed with its improved-policy probability (its visits may be 0).
    ``draw_playthrough`` games had draw adjudication disabled; ``would_draw``
    is then the plies after which it would have ended the game (else None).
    """

    game_id: str
    start_fen: str
    result: str
    termination: str
    playthrough: bool
    would_resign: bool | None
    fens: list[str]
    moves: list[str]
    turns: np.ndarray
    history: np.ndarray
    meta: np.ndarray
    root_q: np.ndarray
    full_search: np.ndarray
    policy_offsets: np.ndarray
    policy_index: np.ndarray
    policy_visits: np.ndarray
    policy_probs: np.ndarray | None = None
    draw_playthrough: bool = False
    would_draw: int | None = None

    def z(self, ply: int) -> int:
        """Outcome in {-1, 0, 1} from the side to move at ``ply`` (as GameRecord.z)."""
        if self.result not in ("1-0", "0-1"):
            return 0
        winner = self.result == "1-0"
        return 1 if bool(self.turns[ply]) == winner else -1

    @property
    def false_resign(self) -> bool:
        """A play-through game in which the side that would have resigned did not lose."""
        if self.would_resign is None:
            return False
        return self.result != ("0-1" if self.would_resign == chess.WHITE else "1-0")

    @property
    def false_draw(self) -> bool:
        """A draw play-through game that would have been adjudicated a draw and was decided."""
        return self.would_draw is not None and self.result != "1/2-1/2"


def _game_from_core(item: dict, id_prefix: str) -> NativeGame:
    would_resign = item["would_resign"]
    return NativeGame(
        game_id=f"{id_prefix}-{item['index']:05d}",
        start_fen=item["start_fen"],
        result=item["result"],
        termination=item["termination"],
        playthrough=bool(item["playthrough"]),
        would_resign=None if would_resign < 0 else would_resign == 0,  # core: 0 = white
        fens=list(item["fens"]),
        moves=list(item["moves"]),
        turns=item["turns"],
        history=item["history"],
        meta=item["meta"],
        root_q=item["root_q"],
        full_search=item["full_search"],
        policy_offsets=item["policy_offsets"],
        policy_index=item["policy_index"],
        policy_visits=item["policy_visits"],
        policy_probs=item["policy_probs"],
        draw_playthrough=bool(item["draw_playthrough"]),
        would_draw=None if item["would_draw"] < 0 else int(item["would_draw"]),
    )


def _check_counts(bounds: dict[str, tuple[object, int]]) -> None:
    """Each value must be an integer >= its bound; DriverConfigError names the key."""
    for name, (value, low) in bounds.items():
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
            raise DriverConfigError(f"{name} must be an integer >= {low}, got {value!r}")


def _check_share(name: str, value: float, low: float = 0.0) -> None:
    if not low <= value <= 1.0:
        raise DriverConfigError(f"{name} must be in [{low:g}, 1], got {value!r}")


def _check_start_fens(start_fens: list[str] | None) -> list[str]:
    if start_fens is None:
        return [chess.STARTING_FEN]
    if not start_fens:
        raise DriverConfigError("start_fens must not be empty")
    for index, fen in enumerate(start_fens):
        try:
            board = chess.Board(fen)
        except ValueError as error:
            message = f"start_fens[{index}] is not a FEN: {fen!r} ({error})"
            raise DriverConfigError(message) from error
        if not board.is_valid() or board.outcome() is not None:
            status = board.status()
            raise DriverConfigError(f"start_fens[{index}] is not playable: {fen!r} ({status!r})")
    return list(start_fens)


class _Timer:
    """Seconds spent in the evaluator (from its thread) and waiting for it."""

    def __init__(self) -> None:
        self.eval_seconds = 0.0
        self.wait_seconds = 0.0
        self._lock = threading.Lock()

    def evaluate(self, evaluator: BatchEvaluator, batch: tuple) -> tuple[np.ndarray, np.ndarray]:
        begun = time.perf_counter()
        try:
            return evaluator.evaluate_batch(*batch)
        finally:
            with self._lock:
                self.eval_seconds += time.perf_counter() - begun

    def result(self, item: Future | tuple) -> tuple:
        if not isinstance(item, Future):
            return item
        begun = time.perf_counter()
        try:
            return item.result()
        finally:
            self.wait_seconds += time.perf_counter() - begun


class SelfPlayDriver:
    """Many self-play games in C++ (the rules of pipeline.selfplay.SelfPlayWorker).

    With ``search.algorithm == "gumbel"`` full searches draw Gumbel noise
    instead of Dirichlet noise (fast searches none), the move played is the
    sequential-halving winner (no temperature), and ``NativeGame.policy_probs``
    holds the improved policy over every legal move.

    ``games_in_flight`` games form two lanes (one when it is 1); each lane
    step (deliver, play moves, start games, collect leaves) runs on
    ``threads`` C++ threads with the GIL released.  With ``overlap`` the
    evaluator works on one lane's batch in a Python thread while the core
    steps the other lane.  The same seed gives the same games for a
    deterministic evaluator, whatever ``threads`` and ``overlap``.

    Draw adjudication (``draw_adjudication_plies`` > 0; 0, the default, is
    off): once a game has that many plies and the root |q| of its last
    ``draw_adjudication_window`` plies all stayed below
    ``draw_adjudication_q``, it ends as a draw (termination
    ``draw_adjudicated``); a ``draw_adjudication_playthrough`` share of games
    plays on and records the ply count in ``NativeGame.would_draw``.
    """

    def __init__(
        self,
        search: SearchConfig,
        *,
        games: int,
        games_in_flight: int,
        seed: int,
        policy_encoding: str = "az4672",
        start_fens: list[str] | None = None,
        random_plies: int = 0,
        max_plies: int = 512,
        full_search_prob: float = 1.0,
        fast_simulations: int = 32,
        resign_threshold: float = -1.0,
        resign_plies: int = 3,
        resign_playthrough: float = 0.0,
        draw_adjudication_plies: int = 0,
        draw_adjudication_window: int = 20,
        draw_adjudication_q: float = 0.05,
        draw_adjudication_playthrough: float = 0.0,
        threads: int = 1,
        id_prefix: str = "game",
        overlap: bool = True,
    ) -> None:
        _check_counts({
            "games": (games, 0),
            "games_in_flight": (games_in_flight, 1),
            "random_plies": (random_plies, 0),
            "max_plies": (max_plies, 1),
            "fast_simulations": (fast_simulations, 1),
            "resign_plies": (resign_plies, 1),
            "draw_adjudication_plies": (draw_adjudication_plies, 0),
            "draw_adjudication_window": (draw_adjudication_window, 1),
            "threads": (threads, 1),
        })
        _check_share("full_search_prob", full_search_prob)
        _check_share("resign_playthrough", resign_playthrough)
        _check_share("resign_threshold", resign_threshold, low=-1.0)
        _check_share("draw_adjudication_playthrough", draw_adjudication_playthrough)
        if not 0.0 < draw_adjudication_q <= 1.0:
            raise DriverConfigError(f"draw_adjudication_q must be in (0, 1], got {draw_adjudication_q!r}")
        get_policy_map(policy_encoding)  # raises for an unknown encoding
        self.search = search
        self.games = int(games)
        self.games_in_flight = int(games_in_flight)
        self.seed = int(seed)
        self.policy_encoding = policy_encoding
        self.start_fens = _check_start_fens(start_fens)
        self.random_plies = int(random_plies)
        self.max_plies = int(max_plies)
        self.full_search_prob = float(full_search_prob)
        self.fast_simulations = int(fast_simulations)
        self.resign_threshold = float(resign_threshold)
        self.resign_plies = int(resign_plies)
        self.resign_playthrough = float(resign_playthrough)
        self.draw_adjudication_plies = int(draw_adjudication_plies)
        self.draw_adjudication_window = int(draw_adjudication_window)
        self.draw_adjudication_q = float(draw_adjudication_q)
        self.draw_adjudication_playthrough = float(draw_adjudication_playthrough)
        self.threads = int(threads)
        self.id_prefix = id_prefix
        self.overlap = overlap
        self.stats: dict[str, float] = {}

    def _core(self) -> _native.SelfPlayCore:
        return _native.SelfPlayCore(
            search_params(self.search),
            self.policy_encoding,
            self.games,
            self.games_in_flight,
            self.seed & 0xFFFF_FFFF_FFFF_FFFF,
            self.start_fens,
            self.random_plies,
            self.max_plies,
            self.full_search_prob,
            self.fast_simulations,
            self.resign_threshold,
            self.resign_plies,
            self.resign_playthrough,
            self.threads,
            draw_adjudication_plies=self.draw_adjudication_plies,
            draw_adjudication_window=self.draw_adjudication_window,
            draw_adjudication_q=self.draw_adjudication_q,
            draw_adjudication_playthrough=self.draw_adjudication_playthrough,
        )

    def play(
        self, evaluator: BatchEvaluator, on_game: Callable[[NativeGame], None] | None = None
    ) -> list[NativeGame]:
        """Play ``games`` games, ``games_in_flight`` at a time; returns them sorted by id."""
        started = time.perf_counter()
        core = self._core()
        timer = _Timer()
        finished: list[NativeGame] = []
        pending: list[Future | tuple | None] = [None] * core.lanes
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evaluator") as executor:
            try:
                while not (core.done() and all(item is None for item in pending)):
                    for lane in range(core.lanes):
                        item, pending[lane] = pending[lane], None
                        if item is not None:
                            core.set_results(lane, timer.result(item))
                        if core.step(lane):  # GIL released inside
                            batch = core.batch(lane)
                            pending[lane] = (
                                executor.submit(timer.evaluate, evaluator, batch)
                                if self.overlap
                                else timer.evaluate(evaluator, batch)
                            )
                        self._collect_finished(core, finished, on_game)
            finally:
                for item in pending:
                    if isinstance(item, Future):
                        item.cancel()
        self.stats = {
            **core.stats(),
            "eval_seconds": timer.eval_seconds,
            "wait_seconds": timer.wait_seconds,
            "wall_seconds": time.perf_counter() - started,
        }
        return sorted(finished, key=lambda game: game.game_id)

    def _collect_finished(
        self,
        core: _native.SelfPlayCore,
        finished: list[NativeGame],
        on_game: Callable[[NativeGame], None] | None,
    ) -> None:
        for raw in core.take_finished():
            game = _game_from_core(raw, self.id_prefix)
            finished.append(game)
            if on_game is not None:
                on_game(game)


# ---------------------------------------------------------------------------
# Matches between two evaluators


@dataclass
class MatchGame:
    """A finished game between players A and B (A is white in even games)."""

    game_id: str
    start_fen: str
    a_is_white: bool
    moves: list[str]
    result: str
    termination: str

    @property
    def score_a(self) -> float:
        """Player A's score: 1 for a win, 0.5 for a draw, 0 for a loss."""
        if self.result == "1/2-1/2":
            return 0.5
        return 1.0 if (self.result == "1-0") == self.a_is_white else 0.0


class MatchDriver:
    """Games between two evaluators in C++ (each with its own search settings,
    tree and cache), sides alternating: A plays white in even-numbered games.

    Moves follow ``select_move``'s rules with each player's search config (set
    ``temperature_plies=0`` for the most visited move, with some
    ``random_plies`` for varied openings); no Dirichlet noise, and a Gumbel
    player draws no Gumbel noise (its root takes the top-k moves by policy).  The same seed
    gives the same games for deterministic evaluators, whatever ``threads``.
    """

    def __init__(
        self,
        search_a: SearchConfig,
        search_b: SearchConfig | None = None,
        *,
        games: int,
        games_in_flight: int,
        seed: int,
        policy_encoding: str = "az4672",
        start_fens: list[str] | None = None,
        random_plies: int = 0,
        max_plies: int = 512,
        threads: int = 1,
        id_prefix: str = "match",
    ) -> None:
        _check_counts({
            "games": (games, 0),
            "games_in_flight": (games_in_flight, 1),
            "random_plies": (random_plies, 0),
            "max_plies": (max_plies, 1),
            "threads": (threads, 1),
        })
        get_policy_map(policy_encoding)
        self.search_a = search_a
        self.search_b = search_b or search_a
        self.games = int(games)
        self.games_in_flight = int(games_in_flight)
        self.seed = int(seed)
        self.policy_encoding = policy_encoding
        self.start_fens = _check_start_fens(start_fens)
        self.random_plies = int(random_plies)
        self.max_plies = int(max_plies)
        self.threads = int(threads)
        self.id_prefix = id_prefix
        self.stats: dict[str, float] = {}

    def _core(self) -> _native.MatchCore:
        return _native.MatchCore(
            search_params(self.search_a),
            search_params(self.search_b),
            self.policy_encoding,
            self.games,
            self.games_in_flight,
            self.seed & 0xFFFF_FFFF_FFFF_FFFF,
            self.start_fens,
            self.random_plies,
            self.max_plies,
            self.threads,
        )

    def play(
        self,
        evaluator_a: BatchEvaluator,
        evaluator_b: BatchEvaluator,
        on_game: Callable[[MatchGame], None] | None = None,
    ) -> list[MatchGame]:
        """Play the games (one evaluator call per player and round); sorted by id."""
        started = time.perf_counter()
        core = self._core()
        calls = [0, 0]
        finished: list[MatchGame] = []
        while not core.done():
            core.step()  # GIL released inside
            for raw in core.take_finished():
                game = MatchGame(
                    game_id=f"{self.id_prefix}-{raw['index']:05d}",
                    start_fen=raw["start_fen"],
                    a_is_white=bool(raw["a_is_white"]),
                    moves=list(raw["moves"]),
                    result=raw["result"],
                    termination=raw["termination"],
                )
                finished.append(game)
                if on_game is not None:
                    on_game(game)
            for player, evaluator in enumerate((evaluator_a, evaluator_b)):
                if core.leaves(player):
                    core.set_results(player, evaluator.evaluate_batch(*core.batch(player)))
                    calls[player] += 1
        self.stats = {
            "games": len(finished),
            "batches_a": calls[0],
            "batches_b": calls[1],
            "score_a": sum(game.score_a for game in finished),
            "wall_seconds": time.perf_counter() - started,
        }
        return sorted(finished, key=lambda game: game.game_id)
