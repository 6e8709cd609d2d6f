"""Small helpers shared by the benchmark scripts of bench/."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_rate(run: Callable[[], int], repeats: int) -> float:
    """Median items per second of ``run`` over ``repeats`` calls; ``run``
    returns how many items (positions, encodings) it handled."""
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        count = run()
        rates.append(count / (time.perf_counter() - start))
    return statistics.median(rates)
