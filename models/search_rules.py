"""The python reference's selection rules: PUCT, Gumbel AlphaZero, the MCTS-solver.

Pure functions of a :class:`~models.search_node.Node` and the
:class:`~models.search_config.SearchConfig`, used by
:class:`models.search_tree.GameTree`:

* :func:`select_puct`: AlphaZero's argmax of Q + U, first-play urgency for
  unvisited moves, and lc0's moves-left utility (:func:`moves_left_utility`);
* :func:`select_gumbel_root` and :func:`select_gumbel_interior`: Gumbel
  AlphaZero (Danihelka et al. 2022, with mctx's defaults): sequential halving
  over the Gumbel-top-k moves at the root, the deterministic improved-policy
  selection below it;
* :func:`solver_choice` and :func:`mates_in_one`: the MCTS-solver's forced
  moves and its mate-in-one test;
* :func:`root_result`: the root's statistics and best move after a search.

C++ twin: models/native/search_select.cpp, search_gumbel.cpp and search_solver.cpp.
"""

from __future__ import annotations

import math

import chess
import numpy as np

from models.search_config import SearchConfig, SearchResult
from models.search_node import Node

TINY = 2.2250738585072014e-308
"""Smallest normal double: priors are clipped to it before a log (mctx's ``finfo.tiny``)."""
RESCALE_EPSILON = 1e-8
"""Floor of the Q range when completed Q values are rescaled to [0, 1] (mctx)."""


# ---------------------------------------------------------------------------
# Selection


def moves_left_utility(node: Node, config: SearchConfig) -> float | None:
    """The parent's mean plies left at ``node`` when the moves-left utility
    applies there (see :class:`SearchConfig`), else ``None`` (slope 0, an
    unvisited node, |Q| not above the threshold).  Each visited child then
    gets :func:`child_utility`."""
    if config.moves_left_slope == 0.0 or node.visits == 0:
        return None
    parent = float(node.visits)
    if not abs(node.value_sum / parent) > config.moves_left_threshold:
        return None
    return node.moves_left_sum / parent


def child_utility(child: Node | None, q: float, parent_m: float, config: SearchConfig) -> float:
    """A visited child's moves-left utility: ``clamp(slope * (M_child -
    parent_m), -cap, cap) * -sign(q) * (|q| - threshold) / (1 - threshold)``
    with ``q`` the child's mean value from the parent's side and M_child its
    mean plies left + 1; 0 for an unvisited child or where |q| is not above
    the threshold (a drawn child, a stalemate among them, is never preferred
    for being short)."""
    if child is None or child.visits == 0:
        return 0.0
    excess = abs(q) - config.moves_left_threshold
    if not excess > 0.0:
        return 0.0
    fraction = excess / (1.0 - config.moves_left_threshold)
    child_m = child.moves_left_sum / float(child.visits) + 1.0
    cap = config.moves_left_cap
    term = min(max(config.moves_left_slope * (child_m - parent_m), -cap), cap)
    return -term * fraction if q > 0.0 else term * fraction


def select_puct(node: Node, config: SearchConfig, skip: list[bool] | None) -> int:
    """PUCT: argmax of Q + c(s) * P * sqrt(N) / (1 + N_a) (+ the moves-left
    utility when it applies); unvisited Q = FPU; moves in ``skip`` (proven
    losses) are never chosen."""
    n_parent = node.visits
    c = config.c_puct_init + math.log((1.0 + n_parent + config.c_puct_base) / config.c_puct_base)
    if config.fpu_mode == "relative":
        fpu = (node.value_sum / n_parent if n_parent else 0.0) - config.fpu_value
    else:
        fpu = config.fpu_value
    k = c * math.sqrt(max(n_parent, 1))
    parent_m = moves_left_utility(node, config)
    best_index, best_score = 0, -math.inf
    for index, (prior, n, w) in enumerate(zip(node.priors, node.child_n, node.child_w)):
        if skip is not None and skip[index]:
            continue
        score = (w / n if n else fpu) + k * prior / (1.0 + n)
        if parent_m is not None and n:
            score += child_utility(node.children[index], w / n, parent_m, config)
        if score > best_score:
            best_index, best_score = index, score
    return best_index


def select_gumbel_interior(node: Node, config: SearchConfig, skip: list[bool] | None) -> int:
    """Gumbel below the root: argmax of pi'(a) - N(a) / (1 + sum N), pi' the
    improved policy softmax(logits + sigma(completed Q))."""
    logits, sigma = gumbel_sigma(node, config)
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


def select_gumbel_root(
    node: Node,
    config: SearchConfig,
    gumbel: list[float],
    counts: list[int],
    target: int,
    skip: list[bool] | None,
) -> int:
    """Sequential halving at the root (mctx): among the moves whose visits
    in this search equal the schedule's count, the highest g + logit +
    sigma(completed Q).  The first ``m`` simulations thus take the
    Gumbel-top-m moves, then the halves that score best.  ``gumbel``: the
    root's noise; ``counts``: this search's visits per root move (of
    ``target``)."""
    logits, sigma = gumbel_sigma(node, config)
    considered = min(config.gumbel_considered, len(counts))
    simulation = 0
    for count in counts:
        simulation += count
    wanted = considered_visit(considered, target, simulation)
    return _gumbel_argmax(gumbel, logits, sigma, counts, wanted, skip)


# ---------------------------------------------------------------------------
# Root statistics


def root_result(root: Node, config: SearchConfig, gumbel: list[float], counts: list[int]) -> SearchResult:
    """The statistics of an expanded ``root`` (see :class:`SearchResult`):
    visits, priors, Q values, the solver's proofs and the best move; a Gumbel
    search's improved policy and sequential-halving winner use the root's
    noise ``gumbel`` and this search's visits per move ``counts``."""
    assert root.moves is not None and root.priors is not None
    child_n = np.asarray(root.child_n)
    priors = np.asarray(root.priors)
    visits = np.rint(child_n).astype(np.int64)
    q_values = np.divide(
        np.asarray(root.child_w), child_n, out=np.full(len(visits), np.nan), where=child_n > 0
    )
    proof = proof_plies = None
    allowed = None
    if config.solver:
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
    if config.algorithm == "gumbel":
        logits, sigma = gumbel_sigma(root, config)
        improved = np.asarray(_softmax([logit + s for logit, s in zip(logits, sigma)]))
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
        root_draw=root.draw(),
        root_moves_left=root.moves_left(),
    )


# ---------------------------------------------------------------------------
# Gumbel AlphaZero


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
    parent_m = moves_left_utility(node, config)
    if parent_m is not None:
        for index, (n, w) in enumerate(zip(child_n, child_w)):
            if n > 0:
                completed[index] += child_utility(node.children[index], w / n, parent_m, config)
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


# ---------------------------------------------------------------------------
# MCTS-solver


def solver_choice(node: Node) -> tuple[int | None, list[bool] | None]:
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


def mates_in_one(board: chess.Board) -> bool:
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
