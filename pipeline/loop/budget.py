"""The loop's wall-clock budget (``run.hours``, ``zerochess run --hours``).

The clock counts the seconds the loop has run in this run folder, across
resumes: each ledger line the loop writes at a safe point (a finished
generation in the sync loop, a gated candidate or the end in the async loop)
carries ``elapsed_s``, the total so far, and a resumed run starts its clock
from the largest one.  Time spent in work a kill threw away is not counted.
The sync loop starts a generation only while time is left, so it ends at most
one generation past the budget; the async loop stops feeding its roles when
the budget is spent and drains (:mod:`actors.async_loop`)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any

from pipeline.config_errors import ConfigError

ELAPSED_KEY = "elapsed_s"


def parse_hours(text: str, option: str = "--hours") -> float:
    """A time budget given on the command line: a finite number of hours > 0."""
    try:
        hours = float(text)
    except (TypeError, ValueError):
        raise ConfigError(f"{option} must be a number of hours > 0, got {text!r}") from None
    if not math.isfinite(hours) or hours <= 0:
        raise ConfigError(f"{option} must be a number of hours > 0, got {text!r}")
    return hours


def spent_before(entries: Iterable[dict[str, Any]]) -> float:
    """Seconds a run folder's earlier sessions ran (the largest ``elapsed_s`` in its ledger)."""
    return max((float(entry[ELAPSED_KEY]) for entry in entries if ELAPSED_KEY in entry), default=0.0)


class RunClock:
    """Seconds run so far (``spent_s`` before this session plus this
    session's) against a budget of ``hours`` (0: no budget)."""

    def __init__(self, hours: float, spent_s: float = 0.0, now: Callable[[], float] = time.monotonic) -> None:
        self.budget_s = 3600.0 * hours
        self.spent_s = spent_s
        self._now = now
        self._started = now()

    def elapsed_s(self) -> float:
        return self.spent_s + self._now() - self._started

    def left_s(self) -> float | None:
        """Seconds left of the budget (None: no budget; never below 0)."""
        if self.budget_s <= 0:
            return None
        return max(0.0, self.budget_s - self.elapsed_s())

    def deadline(self) -> float | None:
        """The monotonic time the budget ends (None: no budget), for a live status line."""
        left = self.left_s()
        return None if left is None else self._now() + left

    def spent(self) -> bool:
        """True once the budget is used up (never without a budget)."""
        left = self.left_s()
        return left is not None and left <= 0

    def stamp(self) -> dict[str, float]:
        """The ledger field that lets a resumed run continue this clock."""
        return {ELAPSED_KEY: round(self.elapsed_s(), 1)}


def clock_text(seconds: float) -> str:
    """``1:02:03``: hours, minutes and seconds."""
    whole = int(max(seconds, 0.0))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def time_left_text(deadline: float | None, budget_s: float, now: float | None = None) -> str:
    """The status line's budget: ``0:41:10 left of 1 h``; empty without a budget."""
    if deadline is None:
        return ""
    left = deadline - (time.monotonic() if now is None else now)
    return f"{clock_text(left)} left of {budget_s / 3600:g} h"
