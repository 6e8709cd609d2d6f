"""Reading a searched tree the way a chess GUI wants it: scores, mates, lines.

Everything here is read-only over a searched tree's nodes: the python
reference's :class:`models.search_node.Node` or the native core's node views
(:class:`models.native_tree.NativeNode`), which read the same way.

Value to centipawns
    The network's value ``q`` is an expected score in [-1, 1] from the side to
    move.  GUIs want centipawns, so ``q`` is mapped with lc0's formula

        cp = 111.714640912 * tan(1.5620688421 * q)

    which gives 0 cp at q = 0, 46 at 0.25, 111 at 0.5, 336 at 0.8, 1283 at
    0.95 and 12800 at q = 1 (always finite).  It is odd and strictly
    increasing, so move order and sign are kept.

Mates
    With ``search.solver`` the search proves wins and losses itself
    (``Node.proof``, ``Node.proof_plies``: the MCTS-solver of
    :mod:`models.search_rules`), and those proofs are reported whatever their
    length.  Otherwise:
    the search marks checkmates it reaches (``Node.terminal_value == -1``).
    A mate is *proven* inside the tree when the side to move has a move into a
    proven loss (a win), or every legal move of the side to move exists in the
    tree and leads to a proven win of the opponent (a loss).  Proofs are
    searched up to ``horizon`` plies; a proof is reported as ``score mate N``
    (N moves, negative when the side to move is mated) and a proven win is
    played even when another move has more visits.

Depth
    The UCI ``depth`` of a line is the length of its principal variation
    (most visited child at each step, down to the first unvisited node).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

import chess

from models.search_backend import SearchTree
from models.search_node import Node

if TYPE_CHECKING:
    from models.native_tree import NativeNode

AnyNode = Union[Node, "NativeNode"]

CP_SCALE = 111.714640912
"""Multiplier of the tangent in :func:`value_to_centipawns` (lc0)."""

CP_ANGLE = 1.5620688421
"""Angle factor of the tangent in :func:`value_to_centipawns` (lc0); just under pi/2."""

DEFAULT_MATE_HORIZON = 10
"""Plies searched for a mate proof (mate in 5 at most)."""

MAX_PV_PLIES = 64
"""Longest principal variation reported."""


def value_to_centipawns(q: float) -> int:
    """Map an expected score ``q`` in [-1, 1] to centipawns (lc0's formula, see
    the module docstring).  Values outside [-1, 1] are clipped."""
    q = min(max(float(q), -1.0), 1.0)
    return round(CP_SCALE * math.tan(CP_ANGLE * q))


def win_plies(node: AnyNode | None, horizon: int) -> int | None:
    """Plies until the side to move at ``node`` mates, proven inside the tree
    within ``horizon`` plies (odd), or ``None``.  The search's solver proof
    (``node.proof``, any distance) is used when there is one."""
    if node is None:
        return None
    proof = getattr(node, "proof", None)
    if proof is not None:
        return node.proof_plies if proof == 1 else None
    if horizon <= 0 or node.terminal_value is not None or not node.expanded:
        return None
    best: int | None = None
    for child in node.children:
        plies = loss_plies(child, horizon - 1)
        if plies is not None and (best is None or plies + 1 < best):
            best = plies + 1
    return best


def loss_plies(node: AnyNode | None, horizon: int) -> int | None:
    """Plies until the side to move at ``node`` is mated, proven inside the
    tree within ``horizon`` plies (even; 0 when it is checkmated), or ``None``.

    Every legal move must be in the tree and lead to a proven mate, so this
    returns at the first move that does not (cheap on unproven nodes)."""
    if node is None:
        return None
    proof = getattr(node, "proof", None)
    if proof is not None:
        return node.proof_plies if proof == -1 else None
    if node.terminal_value is not None:
        return 0 if node.terminal_value <= -1.0 else None
    if horizon <= 0 or not node.expanded or not node.children or None in node.children:
        return None
    longest = 0
    for child in node.children:
        plies = win_plies(child, horizon - 1)
        if plies is None:
            return None
        longest = max(longest, plies + 1)
    return longest


def mate_moves_after(child: AnyNode | None, horizon: int) -> int | None:
    """UCI ``mate`` value of the move leading to ``child``, from the mover's
    side: ``+N`` when it mates in N moves (this one included), ``-N`` when the
    mover is mated in N moves, ``None`` when nothing is proven."""
    lost = loss_plies(child, horizon - 1)
    if lost is not None:
        return lost // 2 + 1
    won = win_plies(child, horizon - 1)
    if won is not None:
        return -((won + 1) // 2)
    return None


def principal_variation(
    first: chess.Move, child: AnyNode | None, limit: int = MAX_PV_PLIES
) -> list[chess.Move]:
    """``first`` followed by the most visited move at each node below ``child``
    (ties to the higher prior), down to an unvisited or finished node."""
    line = [first]
    node = child
    while node is not None and node.expanded and node.terminal_value is None and len(line) < limit:
        assert node.moves is not None and node.priors is not None
        index = max(range(len(node.moves)), key=lambda i: (node.child_n[i], node.priors[i]))
        if node.child_n[index] < 1.0:
            break
        line.append(node.moves[index])
        node = node.children[index]
    return line


@dataclass(frozen=True)
class MoveLine:
    """One root move as a GUI line.

    Attributes:
        move: the root move.
        visits: its search visits.
        prior: the network's prior for it.
        q: its mean value from the root's side to move (``None`` if unvisited).
        mate: proven mate in moves (see :func:`mate_moves_after`), or ``None``.
        pv: the principal variation starting with ``move``.
    """

    move: chess.Move
    visits: int
    prior: float
    q: float | None
    mate: int | None
    pv: list[chess.Move]

    @property
    def centipawns(self) -> int:
        """The line's score in centipawns (0 when unvisited)."""
        return value_to_centipawns(self.q if self.q is not None else 0.0)

    @property
    def depth(self) -> int:
        """UCI depth: the length of the principal variation."""
        return len(self.pv)


def root_lines(tree: SearchTree, horizon: int = DEFAULT_MATE_HORIZON) -> list[MoveLine]:
    """Every root move of a searched ``tree``, best first: proven wins (the
    shortest first), then by visits, then by prior; proven losses last."""
    root = tree.root
    if not root.expanded:
        return []
    assert root.moves is not None and root.priors is not None
    chosen = tree.result().best_move  # PUCT: most visited; Gumbel: the halving winner
    lines = []
    for index, move in enumerate(root.moves):
        child = root.children[index]
        visits = root.child_n[index]
        q = root.child_w[index] / visits if visits > 0 else None
        lines.append(
            MoveLine(
                move=move,
                visits=round(visits),
                prior=float(root.priors[index]),
                q=q,
                mate=mate_moves_after(child, horizon),
                pv=principal_variation(move, child),
            )
        )
    lines.sort(key=lambda line: _line_order(line, chosen))
    return lines


def _line_order(line: MoveLine, chosen: chess.Move | None = None) -> tuple[int, float, float, int, float]:
    """Sort key: proven wins by speed, then unproven by visits, then proven
    losses (the slowest first); among equals the search's chosen move first
    (a Gumbel search's halving winner, the solver's fastest win), then the
    higher prior."""
    if line.mate is not None and line.mate > 0:
        return (0, line.mate, 0.0, 0 if line.move == chosen else 1, -line.prior)
    if line.mate is not None:
        return (2, line.mate, 0.0, 0, 0.0)
    return (1, 0.0, -line.visits, 0 if line.move == chosen else 1, -line.prior)


def tree_visits(tree: SearchTree) -> int:
    """Simulations held under the root (what ``num_simulations`` counts)."""
    root = tree.root
    return round(sum(root.child_n)) if root.expanded else 0


def main_line_depth(tree: SearchTree) -> int:
    """Length of the principal variation of the most visited root move (0
    before the root is expanded); cheaper than :func:`root_lines`."""
    root = tree.root
    if not root.expanded:
        return 0
    assert root.moves is not None and root.priors is not None
    index = max(range(len(root.moves)), key=lambda i: (root.child_n[i], root.priors[i]))
    return len(principal_variation(root.moves[index], root.children[index]))
