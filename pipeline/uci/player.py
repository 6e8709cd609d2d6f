"""The network playing one game: tree reuse, search limits, move choice.

:class:`NetPlayer` is what both the UCI engine and ``zerochess play`` drive.
It keeps one search tree per game (the native core's
:class:`~models.native_tree.NativeTree`, or the python reference's
:class:`~models.search_tree.GameTree` with ``search.backend: python``; see
:mod:`models.search_backend`) and, when the next
position extends the previous one by some moves, advances the tree along them
so the visits already spent below the new position are kept (tree reuse).

A search runs in chunks of simulations (:func:`models.search_backend.run_trees`
with a ``should_stop`` check between network batches), so it can end on a
node limit, a depth, a clock or a :class:`SearchControl` stop from another
thread, and report progress about once a second.

The trees are analysis trees (``score_alternatives``): once the solver has
proven the root, the simulations go to the root moves that are not proven, so
they get scores (MultiPV) and the node count stays the real work; replaying
the proof would add a visit per simulation without any evaluation.  When
every root move is proven the search ends on its own (nothing is left to
learn).

Positions the search refuses but where moves remain (a draw that may be
claimed: threefold repetition, 50-move rule) get the move with the highest
prior from one network evaluation, so a GUI that does not claim draws still
gets a legal ``bestmove``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import chess
import numpy as np

from models import encoding
from models.evaluation import Evaluator, Leaf
from models.policy import get_policy_map
from models.search_backend import (
    SearchTree,
    new_cache,
    new_tree,
    policy_encoding,
    root_repetitions,
    run_trees,
)
from models.search_config import SearchConfig, SearchError, terminal_value
from pipeline.uci.analysis import (
    DEFAULT_MATE_HORIZON,
    MoveLine,
    main_line_depth,
    root_lines,
    tree_visits,
)

log = logging.getLogger(__name__)

MIN_CHUNK = 64
"""Fewest simulations asked of the tree between two checks of the limits."""


class SearchControl:
    """The stop conditions of one search, safe to change from another thread.

    Args:
        nodes: stop when the tree holds this many simulations (reused ones count).
        time_s: stop after this many seconds (``None``: no clock).
        depth: stop when the principal variation is this long.

    With none of them the search runs until :meth:`stop`.
    """

    def __init__(
        self, nodes: int | None = None, time_s: float | None = None, depth: int | None = None
    ) -> None:
        self.started = time.perf_counter()
        self.nodes = nodes
        self.depth = depth
        self.deadline: float | None = None if time_s is None else self.started + time_s
        self._stop = threading.Event()

    def stop(self) -> None:
        """Ask the search to end after its current network batch."""
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def set_time(self, time_s: float | None) -> None:
        """Replace the clock: end ``time_s`` seconds from now (``None``: no clock)."""
        self.deadline = None if time_s is None else time.perf_counter() + time_s

    def out_of_time(self, now: float | None = None) -> bool:
        deadline = self.deadline
        return deadline is not None and (time.perf_counter() if now is None else now) >= deadline


@dataclass(frozen=True)
class SearchReport:
    """What a search found, for ``info`` lines and the move choice.

    Attributes:
        lines: every root move, best first (see :func:`~pipeline.uci.analysis.root_lines`).
        nodes: simulations in the tree (reused ones included).
        searched: simulations added by this search.
        elapsed_s: seconds since the search began.
        best_move: the move to play (``None`` when the game is over).
        root_value: Q of the root from the side to move.
        note: why the report is not a normal search result, if it is not.
    """

    lines: list[MoveLine]
    nodes: int
    searched: int
    elapsed_s: float
    best_move: chess.Move | None
    root_value: float
    note: str | None = None

    @property
    def nps(self) -> int:
        """Simulations per second of this search."""
        return int(self.searched / self.elapsed_s) if self.elapsed_s > 0 else 0

    @property
    def depth(self) -> int:
        return self.lines[0].depth if self.lines else 0

    @property
    def ponder_move(self) -> chess.Move | None:
        """The expected reply to ``best_move``, from its principal variation."""
        for line in self.lines:
            if line.move == self.best_move:
                return line.pv[1] if len(line.pv) > 1 else None
        return None


ProgressCallback = Callable[[SearchReport], None]


class NetPlayer:
    """Searches the positions of one game with an evaluator, reusing the tree.

    Args:
        evaluator: the network (or a test evaluator).
        config: the search parameters (noise is never added here).
        mate_horizon: plies searched for a mate proof in the tree.
        seed: seed of the move sampling when ``temperature`` > 0.
    """

    def __init__(
        self,
        evaluator: Evaluator,
        config: SearchConfig,
        *,
        mate_horizon: int = DEFAULT_MATE_HORIZON,
        seed: int | None = None,
    ) -> None:
        self.evaluator = evaluator
        self.config = config
        self.mate_horizon = mate_horizon
        self._rng = np.random.default_rng(seed)
        self._seed = 0 if seed is None else seed
        self._cache = new_cache(config, evaluator)
        self._tree: SearchTree | None = None

    @property
    def tree(self) -> SearchTree | None:
        """The current game's tree (``None`` before the first position)."""
        return self._tree

    @property
    def board(self) -> chess.Board | None:
        """A copy of the current position with its move stack."""
        return None if self._tree is None else self._tree.board.copy()

    def new_game(self) -> None:
        """Forget the tree and the evaluation cache."""
        self._tree = None
        self._cache = new_cache(self.config, self.evaluator)

    def update_config(self, **changes: object) -> None:
        """Change search parameters (e.g. ``leaves_per_batch``).  A python tree
        keeps its visits; a native tree holds its own copy of the parameters,
        so it is rebuilt on the same game (its visits are lost)."""
        self.config = replace(self.config, **changes)  # type: ignore[arg-type]
        tree = self._tree
        if tree is None:
            return
        if self.config.uses_native(self.evaluator):
            self._tree = self._new_tree(tree.board.copy())
        else:
            tree.config = self.config

    def set_position(self, board: chess.Board) -> None:
        """Make ``board`` (with its move stack) the position to search.

        When it is the current position followed by some moves, the tree is
        advanced along them and keeps its visits; otherwise a new tree starts.

        Raises:
            SearchError: ``board`` is not a valid chess position.
        """
        tree = self._tree
        if tree is not None and _extends(tree.board, board):
            for move in board.move_stack[len(tree.board.move_stack) :]:
                tree.advance(move)
            return
        self._tree = self._new_tree(board.copy())

    def _new_tree(self, board: chess.Board) -> SearchTree:
        tree = new_tree(
            board, self.config, self.evaluator, cache=self._cache, rng=self._rng, seed=self._seed
        )
        tree.score_alternatives = True
        return tree

    def search(
        self,
        control: SearchControl,
        *,
        temperature: float = 0.0,
        on_progress: ProgressCallback | None = None,
        progress_interval_s: float = 1.0,
    ) -> SearchReport:
        """Search the current position until ``control`` says stop; return the
        report whose ``best_move`` is the move to play.

        Raises:
            SearchError: no position was set.
        """
        tree = self._tree
        if tree is None:
            raise SearchError("search without a position: send 'position' first")
        board = tree.board
        moves = list(board.legal_moves)
        if not moves:
            outcome = "checkmate" if board.is_check() else "stalemate"
            return SearchReport(
                [], 0, 0, 0.0, None, 0.0, note=f"no legal move ({outcome}) in {board.fen()}"
            )
        if (
            tree.root.terminal_value is not None
            or terminal_value(board, moves, root_repetitions(tree)) is not None
        ):
            return self._policy_report(tree, moves, control)
        start_visits = tree_visits(tree)
        self._run(tree, control, on_progress, progress_interval_s, start_visits)
        report = self._report(tree, control, start_visits, temperature)
        if tree.exhausted:
            return replace(report, note="every move is proven: nothing is left to search")
        return report

    # -- internals -------------------------------------------------------

    def _run(
        self,
        tree: SearchTree,
        control: SearchControl,
        on_progress: ProgressCallback | None,
        interval_s: float,
        start_visits: int,
    ) -> None:
        """Search in chunks until a limit of ``control`` is reached."""
        last_progress = control.started

        def should_stop() -> bool:
            nonlocal last_progress
            now = time.perf_counter()
            if on_progress is not None and now - last_progress >= interval_s:
                last_progress = now
                on_progress(self._report(tree, control, start_visits, 0.0))
            return control.stopped or control.out_of_time(now) or self._deep_enough(tree, control)

        while True:
            visits = tree_visits(tree)
            if tree.root.expanded and (
                should_stop() or (control.nodes is not None and visits >= control.nodes)
            ):
                return
            chunk = max(MIN_CHUNK, 4 * self.config.leaves_per_batch)
            goal = visits + chunk if control.nodes is None else min(control.nodes, visits + chunk)
            was_expanded = tree.root.expanded
            tree.start(num_simulations=goal)
            run_trees([tree], self.evaluator, should_stop=should_stop)
            if tree.exhausted:
                log.info("every root move is proven in %s: the search ends", tree.board.fen())
                return
            if was_expanded and tree_visits(tree) == visits:
                log.warning(
                    "search made no progress at %d simulations in %s", visits, tree.board.fen()
                )
                return

    def _deep_enough(self, tree: SearchTree, control: SearchControl) -> bool:
        if control.depth is None:
            return False
        return main_line_depth(tree) >= control.depth

    def _report(
        self, tree: SearchTree, control: SearchControl, start_visits: int, temperature: float
    ) -> SearchReport:
        lines = root_lines(tree, self.mate_horizon)
        nodes = tree_visits(tree)
        best = lines[0].move if lines else None
        if lines and temperature > 0 and not (lines[0].mate is not None and lines[0].mate > 0):
            best = self._sample(lines, temperature)
        return SearchReport(
            lines=lines,
            nodes=nodes,
            searched=max(nodes - start_visits, 0),
            elapsed_s=time.perf_counter() - control.started,
            best_move=best,
            root_value=tree.root.q(),
        )

    def _sample(self, lines: list[MoveLine], temperature: float) -> chess.Move:
        """A move drawn with probability ∝ N^(1/T) (the best line when nothing is visited)."""
        visits = np.array([line.visits for line in lines], dtype=np.float64)
        if visits.sum() <= 0:
            return lines[0].move
        weights = (visits / visits.max()) ** (1.0 / temperature)
        return lines[int(self._rng.choice(len(lines), p=weights / weights.sum()))].move

    def _policy_report(
        self, tree: SearchTree, moves: list[chess.Move], control: SearchControl
    ) -> SearchReport:
        """One network evaluation for a position whose game may be claimed drawn."""
        priors, value = self._evaluate_root(tree, moves)
        order = np.argsort(-np.asarray(priors), kind="stable")
        lines = [MoveLine(moves[i], 0, float(priors[i]), None, None, [moves[i]]) for i in order]
        return SearchReport(
            lines=lines,
            nodes=0,
            searched=0,
            elapsed_s=time.perf_counter() - control.started,
            best_move=lines[0].move,
            root_value=float(value),
            note="a draw can be claimed here (repetition or 50-move rule): move from the policy alone",
        )


    def _evaluate_root(self, tree: SearchTree, moves: list[chess.Move]) -> tuple[np.ndarray, float]:
        """Priors over ``moves`` and the value of the game position, from one
        evaluator call (``evaluate_batch`` on the native backend)."""
        board = tree.board
        if not self.config.uses_native(self.evaluator):
            history = tree.history_snapshot() if self.evaluator.needs_planes else None
            priors, value = self.evaluator.evaluate([Leaf(board.copy(stack=False), moves, history)])[0][:2]
            return np.asarray(priors, dtype=np.float64), float(value)
        planes = encoding.encode_snapshots(tree.history_snapshot()[None], encoding.board_meta(board)[None])
        indices = get_policy_map(policy_encoding(self.evaluator)).indices(board, moves).astype(np.int64)
        logits, values = self.evaluator.evaluate_batch(  # type: ignore[attr-defined]
            planes, np.zeros(len(moves), dtype=np.int64), indices
        )[:2]  # aux, when the net gives it, is not needed here
        logits = np.asarray(logits, dtype=np.float64)
        priors = np.exp(logits - logits.max())
        return priors / priors.sum(), float(np.asarray(values)[0])


def _extends(old: chess.Board, new: chess.Board) -> bool:
    """Whether ``new`` is ``old`` followed by zero or more moves (same start)."""
    played = len(old.move_stack)
    if len(new.move_stack) < played or new.move_stack[:played] != old.move_stack:
        return False
    return old.root().fen() == new.root().fen()
