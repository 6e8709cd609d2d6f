"""The UCT player's search: its formulas, its tree and one simulation of it.

A simulation selects, expands one child, rolls out from it and backs the
result up.

:class:`~pipeline.players.uct.UCTPlayer` runs it; the algorithm, the signs and
the RAVE statistics are described in :mod:`pipeline.players.uct`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable

import chess

from models.search_config import terminal_value
from pipeline.players.random_moves import no_move_value, random_legal_move
from pipeline.selfplay.adjudication import material_balance

MATERIAL_SCALE = 5.0
"""The cut-off value is ``tanh(M / MATERIAL_SCALE)``, ``M`` a material lead in pawn units."""

_WHITE = chess.WHITE


# ---------------------------------------------------------------------------
# Formulas


def ucb1_bonus(exploration: float, parent_visits: int, child_visits: int) -> float:
    """UCB1 exploration term ``c * sqrt(ln N_parent / N_child)`` (``inf`` at ``N_child = 0``)."""
    if child_visits <= 0:
        return math.inf
    return exploration * math.sqrt(math.log(parent_visits) / child_visits)


def rave_beta(child_visits: int, k: float) -> float:
    """RAVE weight of the AMAF value: ``beta = k / (k + 3 * N_child)``."""
    return k / (k + 3.0 * child_visits)


def rave_value(q: float, q_amaf: float, child_visits: int, k: float) -> float:
    """Mixed value ``(1 - beta) * Q + beta * Q_AMAF`` with ``beta = rave_beta(N_child, k)``."""
    beta = rave_beta(child_visits, k)
    return (1.0 - beta) * q + beta * q_amaf


def adjudicate(board: chess.Board) -> float:
    """Cut-off value from the side to move's view: ``tanh(M / 5)``, ``M`` its material lead
    (:func:`~pipeline.selfplay.adjudication.material_balance`: P 1, N 3, B 3, R 5, Q 9)."""
    balance = material_balance(board)
    if board.turn != chess.WHITE:
        balance = -balance
    return math.tanh(balance / MATERIAL_SCALE)


def move_code(move: chess.Move) -> int:
    """A small integer identifying a move (from, to, promotion) for AMAF tables."""
    return move.from_square | (move.to_square << 6) | ((move.promotion or 0) << 12)


# ---------------------------------------------------------------------------
# Tree


class UCTNode:
    """One position of the tree; see :mod:`pipeline.players.uct` for the signs.

    Attributes:
        board: the position (a copy without move stack).
        parent: the node above (``None`` at the root).
        key: the position's transposition key (repetitions).
        moves: legal moves in random order (empty for a terminal node).
        children: child nodes by move index (``None`` until expanded).
        child_n, child_w: visits and summed values per move.
        amaf_n, amaf_w: AMAF visits and summed values per move (RAVE only).
        visits: simulations through this node.
        terminal: the game result for the side to move here, or ``None``.
    """

    __slots__ = (
        "amaf_n",
        "amaf_w",
        "board",
        "child_n",
        "child_w",
        "children",
        "code_index",
        "key",
        "moves",
        "parent",
        "terminal",
        "unvisited",
        "visits",
    )

    def __init__(
        self,
        board: chess.Board,
        parent: UCTNode | None,
        key: Hashable,
        moves: list[chess.Move],
        terminal: float | None,
        rave: bool,
    ) -> None:
        self.board = board
        self.parent = parent
        self.key = key
        self.terminal = terminal
        self.moves = moves if terminal is None else []
        count = len(self.moves)
        self.children: list[UCTNode | None] = [None] * count
        self.child_n = [0] * count
        self.child_w = [0.0] * count
        # Moves are shuffled at creation, so popping from the end is random order.
        self.unvisited = list(range(count - 1, -1, -1))
        self.amaf_n = [0] * count if rave else []
        self.amaf_w = [0.0] * count if rave else []
        self.code_index = {move_code(m): i for i, m in enumerate(self.moves)} if rave else {}
        self.visits = 0

    def q(self, index: int) -> float:
        """Mean value of move ``index`` for the player making it (0 when unvisited)."""
        n = self.child_n[index]
        return self.child_w[index] / n if n else 0.0

    def q_amaf(self, index: int) -> float:
        """AMAF mean value of move ``index`` for the player making it (0 without data)."""
        n = self.amaf_n[index] if self.amaf_n else 0
        return self.amaf_w[index] / n if n else 0.0

    def best_index(self) -> int:
        """The most visited move (ties: higher mean value, then the first in order)."""
        return max(range(len(self.moves)), key=lambda i: (self.child_n[i], self.q(i), -i))


class UCTSearch:
    """The tree and the simulation loop of one ``UCTPlayer.play`` call."""

    def __init__(
        self,
        board: chess.Board,
        history: list[Hashable],
        rng: random.Random,
        exploration: float,
        rave: bool,
        rave_k: float,
        rollout_plies: int,
    ) -> None:
        self.history = history  # keys of the positions before the root, most recent first
        self.rng = rng
        self.exploration = exploration
        self.rave = rave
        self.rave_k = rave_k
        self.rollout_plies = rollout_plies
        moves = list(board.generate_legal_moves())
        rng.shuffle(moves)
        self.root = UCTNode(board, None, board._transposition_key(), moves, None, rave)

    # -- one simulation -----------------------------------------------------

    def simulate(self) -> None:
        """Select, expand one child, roll out from it and back the result up."""
        node = self.root
        steps: list[tuple[UCTNode, int]] = []
        while node.terminal is None:
            if node.unvisited:
                index = self._take_unvisited(node)
                steps.append((node, index))
                node = self._expand(node, index)
                break
            index = self._select(node)
            steps.append((node, index))
            child = node.children[index]
            assert child is not None
            node = child
        codes = [move_code(parent.moves[i]) for parent, i in steps] if self.rave else None
        if node.terminal is not None:
            z = node.terminal if node.board.turn == _WHITE else -node.terminal
        else:
            z = self._rollout(node, codes)
        self._backup(steps, node, z)
        if codes is not None:
            self._backup_amaf([parent for parent, _ in steps] + [node], codes, z)

    def _take_unvisited(self, node: UCTNode) -> int:
        """An unvisited move: the next in random order (UCT), the best AMAF mean (RAVE)."""
        unvisited = node.unvisited
        if not self.rave:
            return unvisited.pop()
        best_pos = len(unvisited) - 1
        best_q = node.q_amaf(unvisited[best_pos])
        for pos in range(best_pos - 1, -1, -1):
            q = node.q_amaf(unvisited[pos])
            if q > best_q:
                best_pos, best_q = pos, q
        index = unvisited[best_pos]
        unvisited[best_pos] = unvisited[-1]
        unvisited.pop()
        return index

    def _select(self, node: UCTNode) -> int:
        """The move maximising ``Q (or the RAVE mix) + c * sqrt(ln N / n)``; all visited."""
        parent_visits = node.visits
        c = self.exploration
        child_n, child_w = node.child_n, node.child_w
        best_index, best_score = 0, -math.inf
        for i in range(len(child_n)):
            n = child_n[i]
            q = child_w[i] / n
            if self.rave:
                q = rave_value(q, node.q_amaf(i) if node.amaf_n[i] else q, n, self.rave_k)
            score = q + ucb1_bonus(c, parent_visits, n)
            if score > best_score:
                best_index, best_score = i, score
        return best_index

    def _expand(self, parent: UCTNode, index: int) -> UCTNode:
        """Create the child for move ``index``: its legal moves and terminal status."""
        board = parent.board.copy(stack=False)
        board.push(parent.moves[index])
        key = board._transposition_key()
        moves = list(board.generate_legal_moves())
        repetitions = self._previous_keys(parent, board.halfmove_clock).count(key)
        terminal = terminal_value(board, moves, repetitions)
        if terminal is None:
            self.rng.shuffle(moves)
        child = UCTNode(board, parent, key, moves, terminal, self.rave)
        parent.children[index] = child
        return child

    def _previous_keys(self, parent: UCTNode | None, plies: int) -> list[Hashable]:
        """Keys of the ``plies`` positions before a child of ``parent``, most recent
        first: tree ancestors, then the game history before the root."""
        keys: list[Hashable] = []
        node = parent
        while node is not None and len(keys) < plies:
            keys.append(node.key)
            node = node.parent
        if len(keys) < plies:
            keys.extend(self.history[: plies - len(keys)])
        return keys

    # -- rollout --------------------------------------------------------------

    def _rollout(self, leaf: UCTNode, codes: list[int] | None) -> float:
        """Random playout from ``leaf``; the result from White's view.

        Appends the codes of the moves played to ``codes`` (RAVE).
        """
        board = leaf.board.copy(stack=False)
        seen: dict[Hashable, int] = {}
        for key in self._previous_keys(leaf, board.halfmove_clock + 1):
            seen[key] = seen.get(key, 0) + 1
        random_ = self.rng.random
        moves: list[chess.Move] | None = leaf.moves  # legal at the first ply
        for _ in range(self.rollout_plies):
            move = random_legal_move(board, moves, random_)
            moves = None
            if move is None:
                return no_move_value(board)
            if board.halfmove_clock >= 100:
                return 0.0
            if codes is not None:
                codes.append(move_code(move))
            board.push(move)
            if board.halfmove_clock == 0:
                if board.is_insufficient_material():
                    return 0.0
                seen.clear()
            key = board._transposition_key()
            count = seen.get(key, 0) + 1
            if count >= 5:
                return 0.0
            seen[key] = count
        if moves is None and not any(board.generate_legal_moves()):
            return no_move_value(board)
        if board.halfmove_clock >= 100:
            return 0.0
        value = adjudicate(board)
        return value if board.turn == _WHITE else -value

    # -- backup ---------------------------------------------------------------

    @staticmethod
    def _backup(steps: list[tuple[UCTNode, int]], leaf: UCTNode, z: float) -> None:
        """Add the result ``z`` (White's view) to every move on the path, each from
        its mover's view."""
        for node, index in steps:
            node.visits += 1
            node.child_n[index] += 1
            node.child_w[index] += z if node.board.turn == _WHITE else -z
        leaf.visits += 1

    @staticmethod
    def _backup_amaf(path: list[UCTNode], codes: list[int], z: float) -> None:
        """MC-RAVE update: node ``t`` counts the first occurrence of each move its
        side played at plies ``t, t+2, ...`` of the simulation."""
        for t, node in enumerate(path):
            if not node.code_index:
                continue
            value = z if node.board.turn == _WHITE else -z
            index_of = node.code_index
            amaf_n, amaf_w = node.amaf_n, node.amaf_w
            done: set[int] = set()
            for code in codes[t::2]:
                if code in done:
                    continue
                done.add(code)
                i = index_of.get(code)
                if i is not None:
                    amaf_n[i] += 1
                    amaf_w[i] += value
