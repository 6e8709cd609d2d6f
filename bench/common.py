"""Small helpers shared by the benchmark scripts of bench/."""

from __future__ import annotations

import argparse
import math
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


def number_list(kind: Callable[[str], float], minimum: float) -> Callable[[str], list]:
    """An argparse ``type`` for a comma-separated list of finite numbers
    (``kind`` is ``int`` or ``float``), each at least ``minimum``.  A bad item
    is argparse's usage error naming it (exit 2), not a traceback."""
    noun = "a whole number" if kind is int else "a finite number"

    def parse(text: str) -> list:
        items = [part.strip() for part in text.split(",") if part.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"needs {noun} or more, comma-separated, got {text!r}")
        values = []
        for item in items:
            try:
                value = kind(item)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{item!r} in {text!r} is not {noun}") from None
            if not math.isfinite(value):
                raise argparse.ArgumentTypeError(f"{item!r} in {text!r} is not {noun}")
            if value < minimum:
                raise argparse.ArgumentTypeError(f"{item!r} in {text!r} is below {minimum}")
            values.append(value)
        return values

    return parse
