"""The uniformly random mover and the network with PUCT search."""

from __future__ import annotations

import logging
import random
import time
from dataclasses import replace

import chess

from models.net import AlphaZeroNet
from models.net_evaluator import NetEvaluator
from models.search_backend import SearchTree, new_tree, run_trees
from models.search_config import SearchConfig
from pipeline.players.base import Limits, PlayerError

log = logging.getLogger(__name__)


class RandomPlayer:
    """Plays a uniformly random legal move."""

    def __init__(self, seed: int = 0) -> None:
        self.name = "random"
        self._rng = random.Random(seed)

    def play(self, board: chess.Board, limits: Limits | None = None) -> chess.Move:
        moves = list(board.legal_moves)
        if not moves:
            raise PlayerError(f"no legal move in {board.fen()}")
        return self._rng.choice(moves)

    def new_game(self) -> None:
        pass

    def close(self) -> None:
        pass


class NetPlayer:
    """The network with PUCT search: no noise, the most visited move.

    The budget is ``simulations`` per move (``limits.nodes`` overrides it) or,
    when ``limits.movetime_s`` is set, as many simulations as fit in the time.
    The tree is kept between the moves of one game (tree reuse).  The
    search runs on ``search.backend`` (the native core by default).
    """

    def __init__(
        self,
        net: AlphaZeroNet,
        search: SearchConfig,
        simulations: int,
        label: str = "net",
        precision: str = "fp32",
        compile: str = "eager",  # noqa: A002 - the setting's name
    ) -> None:
        if simulations < 1:
            raise PlayerError(f"net simulations must be >= 1, got {simulations}")
        self.evaluator = NetEvaluator(net, precision=precision, compile=compile)
        log.info("%s: %s", label, self.evaluator.describe())
        self.search = replace(search, num_simulations=simulations)
        self.simulations = simulations
        self.name = f"{label}:sims={simulations}"
        self._tree: SearchTree | None = None

    def play(self, board: chess.Board, limits: Limits | None = None) -> chess.Move:
        limits = limits or Limits()
        tree = self._tree_for(board)
        if limits.movetime_s is not None:
            deadline = time.perf_counter() + limits.movetime_s
            tree.start(num_simulations=10**9)
            run_trees([tree], self.evaluator, should_stop=lambda: time.perf_counter() >= deadline)
        else:
            tree.start(num_simulations=limits.nodes or self.simulations)
            run_trees([tree], self.evaluator)
        return tree.result().best_move

    def _tree_for(self, board: chess.Board) -> SearchTree:
        """The kept tree advanced to ``board``, or a new one if the game differs."""
        tree = self._tree
        if tree is not None:
            known = tree.board.move_stack
            line = board.move_stack
            if (
                len(line) >= len(known)
                and line[: len(known)] == known
                and tree.board.root().fen() == board.root().fen()
            ):
                for move in line[len(known) :]:
                    tree.advance(move)
                return tree
        tree = new_tree(board.copy(), self.search, self.evaluator)
        self._tree = tree
        return tree

    def new_game(self) -> None:
        self._tree = None

    def close(self) -> None:
        self._tree = None
