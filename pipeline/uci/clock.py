"""Time management: how long to think about one move.

With a clock (``go wtime/btime [winc/binc] [movestogo]``) the engine spends

    budget = remaining / moves_left + 0.75 * increment

where ``moves_left`` is ``movestogo`` (capped at :data:`MAX_MOVES_LEFT`) or
:data:`DEFAULT_MOVES_LEFT` in sudden death, then caps the budget at
:data:`MAX_SHARE` of the remaining time (all but the overhead when this is the
last move before the time control), takes off the ``MoveOverhead`` option
(GUI and pipe latency), and never goes below :data:`MIN_BUDGET_S`.  A search
stops at the first limit reached among nodes, depth and time.
"""

from __future__ import annotations

DEFAULT_MOVES_LEFT = 30
"""Moves assumed left in sudden death (no ``movestogo``)."""

MAX_MOVES_LEFT = 50
"""Cap on ``movestogo`` (a long control spends at least 1/50 of the clock)."""

INCREMENT_SHARE = 0.75
"""Share of the increment added to every move's budget."""

MAX_SHARE = 0.5
"""Most of the remaining time one move may use."""

MIN_BUDGET_S = 0.01
"""Smallest budget, so that the engine always searches a little."""


def clock_budget_s(
    remaining_ms: float,
    increment_ms: float = 0.0,
    moves_to_go: int | None = None,
    overhead_ms: float = 0.0,
) -> float:
    """Seconds to spend on this move given the side to move's clock (see the
    module docstring)."""
    remaining = max(remaining_ms, 0.0) / 1000.0
    increment = max(increment_ms, 0.0) / 1000.0
    overhead = max(overhead_ms, 0.0) / 1000.0
    if moves_to_go is not None and moves_to_go >= 1:
        moves_left = min(moves_to_go, MAX_MOVES_LEFT)
    else:
        moves_left = DEFAULT_MOVES_LEFT
    budget = remaining / moves_left + INCREMENT_SHARE * increment
    cap = remaining - overhead if moves_left == 1 else remaining * MAX_SHARE
    return max(min(budget, cap) - overhead, MIN_BUDGET_S)


def movetime_budget_s(movetime_ms: float, overhead_ms: float = 0.0) -> float:
    """Seconds to spend for ``go movetime``: the time less the overhead."""
    return max((movetime_ms - max(overhead_ms, 0.0)) / 1000.0, MIN_BUDGET_S)
