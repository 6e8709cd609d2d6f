"""The python reference's tree node (:class:`Node`) and its keys.

A :class:`Node` holds one position of a :class:`models.search_tree.GameTree`
with its edges as plain lists, and applies the MCTS-solver's rule over its
children (:meth:`Node.update_proof`).

Sign conventions (the formula code uses the paper's symbols):

* ``Node.value_sum`` / ``Node.visits`` is the mean value W/N of the node from
  the point of view of the side to move *at that node*;
* ``Node.child_w[i]`` / ``Node.child_n[i]`` is the mean value of move ``i``
  from the point of view of the side choosing it (the node's side to move), so
  selection maximises ``Q + U`` directly;
* ``Node.draw_sum`` / ``Node.visits`` is the mean draw probability D backed up
  through the node (the same for both sides: no sign flip), and
  ``Node.moves_left_sum`` / ``Node.visits`` the mean plies M left to the
  game's end from the node: a leaf adds the evaluator's M, and every ply up
  the tree adds 1.  A finished game backs up D = 1 for a draw and 0 for a
  mate, M = 0; a node proven by the solver backs up its proof
  (:func:`proof_outcome`).

C++ twin: models/native/search.h (``Node`` and ``Edge``).
"""

from __future__ import annotations

from collections.abc import Hashable

import chess
import numpy as np


class VisitMeans:
    """The means over a node's visits of what the search backs up, shared by
    :class:`Node` and the native core's node view
    (:class:`models.native_tree.NativeNode`): both hold ``visits``,
    ``value_sum``, ``draw_sum`` and ``moves_left_sum``."""

    __slots__ = ()
    visits: int
    value_sum: float
    draw_sum: float
    moves_left_sum: float

    def q(self) -> float:
        """Mean value from this node's side to move (0 when unvisited)."""
        return self.value_sum / self.visits if self.visits else 0.0

    def draw(self) -> float:
        """Mean draw probability D backed up through the node (0 when unvisited)."""
        return self.draw_sum / self.visits if self.visits else 0.0

    def moves_left(self) -> float:
        """Mean plies M left to the game's end from the node (0 when unvisited)."""
        return self.moves_left_sum / self.visits if self.visits else 0.0


class Node(VisitMeans):
    """One position in the tree (see the module docstring for signs)."""

    __slots__ = (
        "board",
        "child_n",
        "child_w",
        "children",
        "draw_sum",
        "key",
        "moves",
        "moves_left_sum",
        "pending",
        "priors",
        "proof",
        "proof_plies",
        "proven_child",
        "raw_value",
        "repetitions",
        "row",
        "terminal_value",
        "value_sum",
        "visits",
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
        self.draw_sum = 0.0
        self.moves_left_sum = 0.0
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


def terminal_outcome(value: float) -> tuple[float, float, float]:
    """``(value, draw, moves_left)`` a finished game backs up: D = 1 for a
    draw (value 0), 0 for a mate; M = 0."""
    return value, (1.0 if value == 0.0 else 0.0), 0.0


def proof_outcome(node: Node) -> tuple[float, float, float]:
    """``(value, draw, moves_left)`` a node proven by the solver backs up: its
    proof as the value, D = 1 for a proven draw (else 0), M = its proof's
    plies (0 for a draw)."""
    assert node.proof is not None
    return float(node.proof), (1.0 if node.proof == 0 else 0.0), float(node.proof_plies)


def position_key(board: chess.Board) -> Hashable:
    """The position's identity for repetitions and the cache (python-chess's
    transposition key)."""
    return board._transposition_key()


def cache_key(node: Node) -> Hashable:
    """The evaluation cache's key of ``node``: its position and repetitions (0, 1, 2+)."""
    return (node.key, min(node.repetitions, 2))
