"""The search's settings, errors and results, shared by both backends.

Both the python reference (:mod:`models.search_tree` and the modules it uses)
and the native wrapper (:mod:`models.native_tree`, :mod:`models.native_drivers`)
import this module, and nothing here imports either of them:

* :class:`SearchConfig` (validated search parameters) and :class:`SearchError`;
* :class:`SearchResult`, the root statistics a search hands back, and
  :func:`select_move`, the self-play move choice made from it;
* :func:`terminal_value` and :func:`result_value`, the rules of a finished game.

C++ twin: models/native/search.h (``SearchParams``, the native form of
:class:`SearchConfig`, filled by :func:`models.native_tree.search_params`) and
models/native/board.h/board.cpp (the game-over rules of :func:`terminal_value`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import chess
import numpy as np

FPU_MODES = ("relative", "absolute")
BACKENDS = ("native", "python")
ALGORITHMS = ("puct", "gumbel")


class SearchError(ValueError):
    """Invalid search input or evaluator output; the message names the value."""


GumbelNoise = Mapping[chess.Move, float]
"""Root Gumbel noise given per legal move (``start(gumbel=...)`` of either tree)."""


@dataclass(frozen=True)
class SearchConfig:
    """PUCT search parameters.

    The moves-left utility (:func:`models.search_rules.moves_left_utility`):
    at a node whose mean value Q (its side to move's view) has |Q| above
    ``moves_left_threshold``, each visited child's selection score Q + U
    (PUCT), or its completed Q (Gumbel: before the rescaling to sigma, so the
    root's halving, the interior selection and the improved policy see it), gets

        clamp(slope * (M_child - M_parent), -cap, cap) * (-sign(q)) * (|q| - threshold) / (1 - threshold)

    with q the child's mean value (the node's side's view; no utility where
    |q| is not above the threshold), M_parent the node's mean plies left and
    M_child = the child's mean plies left + 1 (counting the move).  A winning
    side thus prefers the moves that end the game sooner, a losing one those
    that last longer; unvisited children, and drawn ones (a stalemate ends
    the game at once), get no utility.  Weighting by the child's q, as lc0
    does, matters once the cap is large: weighted by the node's Q, a
    stalemate in a won ending gained up to the whole cap for being short.
    """

    num_simulations: int = 200
    """visits at the root after a search; the visits kept by tree reuse count towards them (lc0,
    KataGo)."""
    c_puct_init: float = 1.25
    """c_init of AlphaZero's growing exploration constant ``c(s) = c_init + log((1 + N + c_base)
    / c_base)``."""
    c_puct_base: float = 19652.0
    """c_base of that formula."""
    fpu_mode: str = "relative"
    """first-play urgency of unvisited moves: ``relative`` uses the parent's Q minus
    ``fpu_value`` (lc0, minigo); ``absolute`` uses ``fpu_value`` itself (0 is OpenSpiel's choice,
    -1 is "assume a loss")."""
    fpu_value: float = 0.25
    """the reduction (relative) or the value (absolute)."""
    dirichlet_alpha: float = 0.3
    """alpha of the root Dirichlet noise (0.3 for chess)."""
    dirichlet_epsilon: float = 0.25
    """weight of the noise in the root priors (0.25)."""
    temperature: float = 1.0
    """tau for the opening plies of self-play: moves are sampled with probability proportional to
    N^(1/tau)."""
    temperature_plies: int = 30
    """plies played with ``temperature``; later plies take the most visited move."""
    leaves_per_batch: int = 8
    """leaves one tree collects (virtual loss) before the evaluator is called."""
    virtual_loss: float = 1.0
    """visits counted as losses on a path while its leaf waits."""
    cache_size: int = 200_000
    """entries of the evaluation cache (0 disables it)."""
    backend: str = "native"
    """``native`` (the C++ core in ``models/native``, through :mod:`models.native_tree`: the
    default, used by self-play, players, UCI and ``zerochess analyse``) or ``python``
    (:mod:`models.search_tree`: the readable reference, for debugging and for comparing the two).
    An evaluator that only implements ``evaluate(leaves)`` (no ``evaluate_batch``) is always
    searched by the python backend."""
    algorithm: str = "puct"
    """``puct`` (AlphaZero) or ``gumbel`` (Gumbel AlphaZero, Danihelka et al. 2022, mctx's
    ``gumbel_muzero_policy``): at the root, Gumbel-top-k sampling of ``gumbel_considered`` moves
    and sequential halving over them within ``num_simulations``; below it, the deterministic
    selection argmax(pi' - N / (1 + sum N)); the move played is the halving winner and the
    training target is the improved policy softmax(logits + sigma(completed Q)).  The Gumbel
    noise (with ``add_noise``) replaces the Dirichlet noise and there is no temperature.  Visits
    kept by tree reuse do not count towards a Gumbel search: each runs ``num_simulations`` new
    ones."""
    gumbel_considered: int = 16
    """moves sampled at the root (m; mctx's 16)."""
    gumbel_scale: float = 1.0
    """scale of the Gumbel noise (1.0; 0 = deterministic)."""
    gumbel_c_visit: float = 50.0
    """c_visit of sigma(q) = (c_visit + max N) * c_scale * q (50)."""
    gumbel_c_scale: float = 0.1
    """c_scale of that formula (0.1)."""
    solver: bool = True
    """MCTS-solver: checkmates and draws found by the search are proven and propagate up the tree
    (a position is won when a move leads to a proven loss of the opponent, lost when every move
    leads to a proven win of the opponent, drawn when every move is proven and the best is a
    draw); proven nodes back up their exact value, selection never enters a proven loss when
    another move exists, and a proven win is the best move."""
    solver_threats: bool = False
    """with ``solver``, expanding a node also plays out each move that does not mate at once and
    proves it lost when the opponent then has a mate in one (its child is proven won for the
    opponent in 1 ply; the mover sees a loss in 2).  A node whose every move allows a mate in one
    is then proven lost, so a mate in 2 is seen one level higher.  Costs a legal-move generation
    per move and per checking reply at each expansion; off by default."""
    twofold_draw: bool = False
    """a position below the root that occurred before (in the game or on the path from the root)
    is scored as a draw, as lc0's two-fold draws: a net that is ahead then sees no value in
    repeating, one behind sees the draw a repetition offers.  Not a proven draw (the opponent may
    still deviate); playing into such a child starts its subtree afresh.  Off by default."""
    moves_left_threshold: float = 0.8
    """|Q| of a node above which the moves-left utility applies to its children (lc0's moves-left
    head in the search); in [0, 1)."""
    moves_left_slope: float = 0.0
    """utility per ply of difference between a child's moves left and its parent's (e.g. 0.0027);
    0 (the default) disables the utility."""
    moves_left_cap: float = 0.2
    """the largest utility, either sign (e.g. 0.2)."""

    def __post_init__(self) -> None:
        positive = {
            "num_simulations": self.num_simulations,
            "c_puct_base": self.c_puct_base,
            "leaves_per_batch": self.leaves_per_batch,
            "gumbel_considered": self.gumbel_considered,
        }
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
            "moves_left_slope": self.moves_left_slope,
            "moves_left_cap": self.moves_left_cap,
        }
        for bound, values in ((1, positive), (0, non_negative)):
            for name, value in values.items():
                if not value >= bound:
                    raise SearchError(f"search.{name} must be >= {bound}, got {value!r}")
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
        for name in ("solver_threats", "twofold_draw"):
            if not isinstance(getattr(self, name), bool):
                raise SearchError(f"search.{name} must be true or false, got {getattr(self, name)!r}")
        if not 0.0 <= self.moves_left_threshold < 1.0:
            raise SearchError(
                f"search.moves_left_threshold must be in [0, 1), got {self.moves_left_threshold!r}"
            )
        for name in ("gumbel_scale", "gumbel_c_visit", "gumbel_c_scale", "moves_left_slope", "moves_left_cap"):
            if not math.isfinite(getattr(self, name)):
                raise SearchError(f"search.{name} must be finite, got {getattr(self, name)!r}")

    def uses_native(self, evaluator: object) -> bool:
        """Whether a search with ``evaluator`` runs on the native core: the
        backend is ``native`` and the evaluator has ``evaluate_batch``."""
        return self.backend == "native" and callable(getattr(evaluator, "evaluate_batch", None))


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
        root_draw: mean draw probability D of the root (0 when the
            evaluator gives no auxiliary outputs).
        root_moves_left: mean plies M left to the game's end from the root:
            the evaluator's M at each leaf plus the leaf's depth below the
            root (with no auxiliary outputs, M = 0 at the leaves: the mean
            depth of what was backed up).
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
    root_draw: float = 0.0
    root_moves_left: float = 0.0

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


def result_value(result: str, turn: chess.Color) -> int:
    """Outcome in {-1, 0, 1} of a game that ended ``result`` (``1-0``,
    ``0-1``, else a draw) for the side ``turn``."""
    if result not in ("1-0", "0-1"):
        return 0
    return 1 if turn == (result == "1-0") else -1


def requested_simulations(config: SearchConfig, num_simulations: int | None) -> int:
    """The root visits a search started with ``num_simulations`` aims at
    (``None``: the config's).

    Raises:
        SearchError: a negative count.
    """
    sims = config.num_simulations if num_simulations is None else num_simulations
    if sims < 0:
        raise SearchError(f"num_simulations must be >= 0, got {sims}")
    return sims


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
