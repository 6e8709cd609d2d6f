"""Pure Monte Carlo tree search with random rollouts (UCT), optionally with RAVE.

The classic, learning-free baseline the network is measured against: no
priors and no value function, only the rules, uniformly random playouts and a
material count where a playout is cut off.

One simulation:

1. **Selection** from the root by UCB1.  A node's unvisited children are tried
   first, in random order (their exploration bonus is infinite); once all have
   a visit the child maximising

   ``Q(child) + c * sqrt(ln N(node) / N(child))``,   ``Q = W / N``

   is followed (``c`` = ``exploration``, 1.4 by default; ``N(node)`` is the
   node's visit count, ``W`` the sum of the child's backed-up values).
2. **Expansion** of one unvisited child: its position is made and its legal
   moves are generated once (``board.generate_legal_moves()``).
3. **Rollout** from that child: at most ``rollout_plies`` uniformly random
   legal moves.  A game that ends on the way scores its result (checkmate
   +-1; stalemate, insufficient material, the 50-move rule and fivefold
   repetition 0).  At the cut-off the position is adjudicated by material:

   ``v = tanh(M / 5)``,   ``M = sum of piece values (P 1, N 3, B 3, R 5, Q 9)``

   of the side to move minus those of its opponent (``tanh(1/5) = 0.20`` for a
   pawn, ``tanh(9/5) = 0.95`` for a queen).  Long random playouts in chess are
   both slow in Python (~40 us a ply) and nearly uninformative; a short
   playout with a static score is the usual practical remedy.
4. **Backup** of the value along the path.

Sign convention: ``node.child_w[i] / node.child_n[i]`` is the mean value of
move ``i`` from the point of view of the player who makes it (the node's side
to move), i.e. of the player who moved *into* the child; selection maximises
it directly.  ``node.amaf_w[i] / node.amaf_n[i]`` uses the same point of view.

RAVE / AMAF (``rave=True``, Gelly & Silver's MC-RAVE): after a simulation
every node ``s_t`` on its path (root to the expanded leaf) counts every move
that *its* side to move played at or after ``t`` in the simulation (the tree
part and the rollout; each move only on its first such occurrence) as if it
had been played at ``s_t``: ``amaf_n[a] += 1`` and ``amaf_w[a] += z`` with the
result ``z`` from that side's point of view.  Selection then maximises

``(1 - beta) * Q + beta * Q_AMAF + c * sqrt(ln N(node) / N(child))``,
``beta = k / (k + 3 * N(child))``,   ``Q_AMAF = amaf_w / amaf_n``

(``k`` = ``rave_k``, 1000 by default: ``beta`` is 1 at ``N = 0``, 0.77 at
100 and 0.25 at 1000).  Unvisited children still come first (infinite bonus),
but in decreasing order of ``Q_AMAF`` (0 where a move has no AMAF data; ties
in random order).

Repetitions: the search works on ``board.copy(stack=False)`` copies; the game
history is read once per move from the last ``halfmove_clock`` plies of the
given board's move stack (positions before a capture or pawn move cannot
recur).  In the tree a position seen twice before (threefold, claimable) is a
draw; in a rollout, where nobody claims, only the fifth occurrence is.  The
root itself is searched whenever it has a legal move, even if a draw could be
claimed there (claiming is the caller's business).

Moves come from a fresh tree per move (no reuse); the final move is the most
visited child (ties: higher mean value, then the random expansion order).  A
position with a single legal move is answered without a search.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Hashable

import chess

from pipeline.players.base import Limits, PlayerError

# Material values for the cut-off adjudication (pawn units).
PIECE_VALUES = {chess.PAWN: 1, chess.KNIGHT: 3, chess.BISHOP: 3, chess.ROOK: 5, chess.QUEEN: 9}
MATERIAL_SCALE = 5.0

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


def material_balance(board: chess.Board) -> int:
    """White's material minus Black's, by :data:`PIECE_VALUES` (kings 0)."""
    return sum(
        value
        * (
            board.pieces_mask(piece_type, chess.WHITE).bit_count()
            - board.pieces_mask(piece_type, chess.BLACK).bit_count()
        )
        for piece_type, value in PIECE_VALUES.items()
    )


def adjudicate(board: chess.Board) -> float:
    """Cut-off value from the side to move's view: ``tanh(M / 5)``, ``M`` its material lead."""
    balance = material_balance(board)
    if board.turn != chess.WHITE:
        balance = -balance
    return math.tanh(balance / MATERIAL_SCALE)


def move_code(move: chess.Move) -> int:
    """A small integer identifying a move (from, to, promotion) for AMAF tables."""
    return move.from_square | (move.to_square << 6) | ((move.promotion or 0) << 12)


def terminal_value(board: chess.Board, moves: list[chess.Move], repetitions: int) -> float | None:
    """Value of a finished game for the side to move in the tree, or ``None``.

    Checkmate -1; stalemate, insufficient material, the 50-move rule
    (halfmove clock >= 100) and threefold repetition (``repetitions >= 2``
    earlier occurrences) 0.
    """
    if not moves:
        return -1.0 if board.is_check() else 0.0
    if repetitions >= 2 or board.halfmove_clock >= 100 or board.is_insufficient_material():
        return 0.0
    return None


# ---------------------------------------------------------------------------
# Tree


class UCTNode:
    """One position of the tree; see the module docstring for the signs.

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


class _Search:
    """The tree and the simulation loop of one ``play`` call."""

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
            move = _random_legal_move(board, moves, random_)
            moves = None
            if move is None:
                return _no_move_value(board)
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
            return _no_move_value(board)
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


def _random_legal_move(
    board: chess.Board, legal: list[chess.Move] | None, random_: Callable[[], float]
) -> chess.Move | None:
    """A uniformly random legal move, ``None`` if there is none.

    With a ``legal`` list (the expanded node's moves) it is drawn from there.
    Otherwise, unless in check, a uniformly random *pseudo-legal* move is drawn
    from the counted move sets of :func:`_pseudo_legal_groups` (no move objects
    are built for the others) and redrawn while it would leave the king in
    check: rejection sampling, so uniform over the legal moves.  In check, or
    after ``_MAX_REJECTIONS`` redraws (a stalemate, say), the legal moves are
    generated in full.
    """
    if legal is None and not board.is_check():
        groups, total = _pseudo_legal_groups(board)
        if total == 0:
            return None
        for _ in range(_MAX_REJECTIONS):
            move = _nth_move(groups, int(random_() * total))
            if not board.is_into_check(move):
                return move
    if legal is None:
        legal = list(board.generate_legal_moves())
    return legal[int(random_() * len(legal))] if legal else None


_MAX_REJECTIONS = 8
_PIECE, _PAWN, _PROMOTION, _LISTED = range(4)
_PROMOTION_PIECES = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)
_NOT_FILE_A = chess.BB_ALL & ~chess.BB_FILE_A
_NOT_FILE_H = chess.BB_ALL & ~chess.BB_FILE_H

# A group of pseudo-legal moves: (count, kind, square or delta, targets).
#   _PIECE:     from ``square`` to each set bit of ``targets``;
#   _PAWN:      to each set bit ``t`` from ``t - delta``;
#   _PROMOTION: as _PAWN, four moves (Q, R, B, N) per target;
#   _LISTED:    ``targets`` is a list of moves (castling, en passant).
_Group = tuple[int, int, int, "int | list[chess.Move]"]


def _pseudo_legal_groups(board: chess.Board) -> tuple[list[_Group], int]:
    """The side to move's pseudo-legal moves as counted groups, and their total.

    Exactly the moves of ``board.generate_pseudo_legal_moves()``: piece moves
    from ``attacks_mask``, pawn pushes and captures by bitboard shifts,
    castling and en passant from python-chess's own generators.
    """
    white = board.turn == chess.WHITE
    us = board.occupied_co[board.turn]
    them = board.occupied_co[not board.turn]
    groups: list[_Group] = []
    total = 0
    occupied = board.occupied
    not_us = chess.BB_ALL & ~us
    pieces = us & ~board.pawns
    diagonal = board.bishops | board.queens
    straight = board.rooks | board.queens
    while pieces:
        square = pieces.bit_length() - 1
        bit = 1 << square
        pieces ^= bit
        # What board.attacks_mask(square) computes, without the call and lookup.
        if bit & board.knights:
            targets = chess.BB_KNIGHT_ATTACKS[square]
        elif bit & board.kings:
            targets = chess.BB_KING_ATTACKS[square]
        else:
            targets = 0
            if bit & diagonal:
                targets = chess.BB_DIAG_ATTACKS[square][chess.BB_DIAG_MASKS[square] & occupied]
            if bit & straight:
                targets |= (
                    chess.BB_RANK_ATTACKS[square][chess.BB_RANK_MASKS[square] & occupied]
                    | chess.BB_FILE_ATTACKS[square][chess.BB_FILE_MASKS[square] & occupied]
                )
        targets &= not_us
        if targets:
            count = targets.bit_count()
            groups.append((count, _PIECE, square, targets))
            total += count
    pawns = us & board.pawns
    empty = chess.BB_ALL & ~board.occupied
    if white:
        single = (pawns << 8) & empty
        shifted = (
            (8, single),
            (16, ((single & chess.BB_RANK_3) << 8) & empty),
            (7, ((pawns & _NOT_FILE_A) << 7) & them),
            (9, ((pawns & _NOT_FILE_H) << 9) & them),
        )
        last_rank, back_rank = chess.BB_RANK_8, chess.BB_RANK_1
    else:
        single = (pawns >> 8) & empty
        shifted = (
            (-8, single),
            (-16, ((single & chess.BB_RANK_6) >> 8) & empty),
            (-9, ((pawns & _NOT_FILE_A) >> 9) & them),
            (-7, ((pawns & _NOT_FILE_H) >> 7) & them),
        )
        last_rank, back_rank = chess.BB_RANK_1, chess.BB_RANK_8
    for delta, targets in shifted:
        if not targets:
            continue
        plain = targets & ~last_rank
        if plain:
            count = plain.bit_count()
            groups.append((count, _PAWN, delta, plain))
            total += count
        promoting = targets & last_rank
        if promoting:
            count = 4 * promoting.bit_count()
            groups.append((count, _PROMOTION, delta, promoting))
            total += count
    special: list[chess.Move] = []
    if board.castling_rights & back_rank and (
        board.chess960 or _castling_path_open(occupied, back_rank)
    ):
        special.extend(board.generate_castling_moves())
    if board.ep_square is not None:
        special.extend(board.generate_pseudo_legal_ep())
    if special:
        groups.append((len(special), _LISTED, 0, special))
        total += len(special)
    return groups, total


def _castling_path_open(occupied: int, back_rank: int) -> bool:
    """Whether f+g or b+c+d of the back rank are empty (standard chess castling
    needs one of them; a cheap filter before python-chess's generator)."""
    return not occupied & back_rank & _KINGSIDE_PATH or not occupied & back_rank & _QUEENSIDE_PATH


_KINGSIDE_PATH = chess.BB_FILE_F | chess.BB_FILE_G
_QUEENSIDE_PATH = chess.BB_FILE_B | chess.BB_FILE_C | chess.BB_FILE_D


def _nth_move(groups: list[_Group], index: int) -> chess.Move:
    """Move number ``index`` (0-based) of the groups, in their order."""
    for count, kind, square, targets in groups:
        if index >= count:
            index -= count
            continue
        if kind == _LISTED:
            assert isinstance(targets, list)
            return targets[index]
        assert isinstance(targets, int)
        promotion = None
        if kind == _PROMOTION:
            promotion = _PROMOTION_PIECES[index & 3]
            index >>= 2
        for _ in range(index):
            targets &= targets - 1
        to_square = (targets & -targets).bit_length() - 1
        if kind == _PIECE:
            return chess.Move(square, to_square)
        return chess.Move(to_square - square, to_square, promotion)
    raise IndexError("move index beyond the groups")


def _no_move_value(board: chess.Board) -> float:
    """Result from White's view when the side to move has no legal move."""
    if not board.is_check():
        return 0.0
    return -1.0 if board.turn == _WHITE else 1.0


# ---------------------------------------------------------------------------
# Player


class UCTPlayer:
    """Monte Carlo tree search with random rollouts (UCT), optionally RAVE.

    Args:
        rollouts: simulations per move (``limits.nodes`` overrides it).
        exploration: the UCB1 constant ``c`` in ``Q + c * sqrt(ln N_parent / N_child)``.
        rave: mix AMAF values into selection (see the module docstring).
        rave_k: ``k`` of ``beta = k / (k + 3 N)``.
        rollout_plies: random plies before the material adjudication (0: score the
            expanded position by material at once).
        seed: seed of the player's random generator (expansion order, rollouts);
            it runs on across moves and games, so a sequence of calls is reproducible.

    After ``play``, ``last_simulations`` holds the simulations run and
    ``last_root`` the search tree's root (``None`` for a forced move).
    """

    def __init__(
        self,
        rollouts: int = 1000,
        exploration: float = 1.4,
        rave: bool = False,
        rave_k: float = 1000.0,
        rollout_plies: int = 40,
        seed: int = 0,
    ) -> None:
        _check_int("rollouts", rollouts, minimum=1)
        _check_real("exploration", exploration, positive=False)
        if not isinstance(rave, bool):
            raise PlayerError(f"uct rave must be a bool, got {rave!r}")
        _check_real("rave_k", rave_k, positive=True)
        _check_int("rollout_plies", rollout_plies, minimum=0)
        _check_int("seed", seed, minimum=None)
        self.rollouts = rollouts
        self.exploration = float(exploration)
        self.rave = rave
        self.rave_k = float(rave_k)
        self.rollout_plies = rollout_plies
        self.seed = seed
        self.name = self._make_name()
        self._rng = random.Random(seed)
        self.last_simulations = 0
        self.last_root: UCTNode | None = None

    def _make_name(self) -> str:
        """``uct:rollouts=N`` plus the non-default settings, in the keys of
        ``pipeline.players.spec`` (``rave=1``, ``k``, ``c``, ``plies``, ``seed``)."""
        parts = [f"uct:rollouts={self.rollouts}"]
        if self.rave:
            parts.append("rave=1")
            if self.rave_k != 1000.0:
                parts.append(f"k={self.rave_k:g}")
        if self.exploration != 1.4:
            parts.append(f"c={self.exploration:g}")
        if self.rollout_plies != 40:
            parts.append(f"plies={self.rollout_plies}")
        if self.seed != 0:
            parts.append(f"seed={self.seed}")
        return ":".join(parts)

    def play(self, board: chess.Board, limits: Limits | None = None) -> chess.Move:
        """Search ``board`` (left unchanged) and return the most visited move.

        The budget is ``limits.nodes`` simulations if given, else ``rollouts``;
        ``limits.movetime_s`` stops the search earlier on the clock (checked
        between simulations; at least one always runs).  ``limits.depth`` is
        ignored.
        """
        if not board.is_valid():
            raise PlayerError(f"uct got an invalid position: {board.fen()} ({board.status()!r})")
        root_board = board.copy(stack=False)
        legal = list(root_board.generate_legal_moves())
        if not legal:
            raise PlayerError(f"uct got a finished game (no legal moves): {board.fen()}")
        self.last_root = None
        self.last_simulations = 0
        if len(legal) == 1:
            return legal[0]
        budget = limits.nodes if limits is not None and limits.nodes is not None else self.rollouts
        movetime = limits.movetime_s if limits is not None else None
        deadline = None if movetime is None else time.perf_counter() + movetime
        search = _Search(
            root_board,
            _history_keys(board),
            self._rng,
            self.exploration,
            self.rave,
            self.rave_k,
            self.rollout_plies,
        )
        done = 0
        while done < budget:
            search.simulate()
            done += 1
            if deadline is not None and time.perf_counter() >= deadline:
                break
        self.last_simulations = done
        self.last_root = search.root
        return search.root.moves[search.root.best_index()]

    def new_game(self) -> None:
        """Forget the last search (trees are not kept between moves anyway)."""
        self.last_root = None
        self.last_simulations = 0

    def close(self) -> None:
        """Nothing to release."""


def _history_keys(board: chess.Board) -> list[Hashable]:
    """Keys of the positions before ``board`` since the last capture or pawn move,
    most recent first (from its move stack)."""
    plies = min(board.halfmove_clock, len(board.move_stack))
    if plies == 0:
        return []
    past = board.copy(stack=plies)
    keys: list[Hashable] = []
    for _ in range(plies):
        past.pop()
        keys.append(past._transposition_key())
    return keys


def _check_int(name: str, value: object, minimum: int | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PlayerError(f"uct {name} must be an int, got {value!r}")
    if minimum is not None and value < minimum:
        raise PlayerError(f"uct {name} must be >= {minimum}, got {value!r}")


def _check_real(name: str, value: object, positive: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PlayerError(f"uct {name} must be a finite number, got {value!r}")
    if positive and not value > 0:
        raise PlayerError(f"uct {name} must be > 0, got {value!r}")
    if not positive and value < 0:
        raise PlayerError(f"uct {name} must be >= 0, got {value!r}")
