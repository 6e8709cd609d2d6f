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

Modules: this one holds the player; :mod:`pipeline.players.uct_search` the
formulas, the tree and the simulation; :mod:`pipeline.players.random_moves`
the rollout's random move sampler.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Hashable

import chess

from pipeline.players.base import Limits, PlayerError
from pipeline.players.uct_search import UCTNode, UCTSearch


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
        search = UCTSearch(
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
