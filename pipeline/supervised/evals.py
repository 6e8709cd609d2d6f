"""Engine evaluations as value targets: centipawns to an expected score, and
the ``[%eval ...]`` comments of a PGN move (lichess's notation, which
``zerochess sfgames`` writes)."""

from __future__ import annotations

import math
import re
from typing import Final

CP_SCALE: Final = 111.714640912
"""lc0's centipawn scale (``pipeline.uci.analysis`` maps values to centipawns with it)."""
CP_ANGLE: Final = 1.5620688421
"""lc0's angle factor, just under pi/2."""

EVAL_COMMENT = re.compile(r"\[%eval\s+(#[-+]?\d+|[-+]?\d+(?:\.\d+)?)\s*\]")


def centipawns_to_value(cp: float) -> float:
    """Expected score in [-1, 1] of a centipawn score: ``atan(cp / 111.71) / 1.5621``, clipped.

    The inverse of ``pipeline.uci.analysis.value_to_centipawns``.
    """
    return max(-1.0, min(1.0, math.atan(cp / CP_SCALE) / CP_ANGLE))


def comment_value(comment: str) -> float | None:
    """White's expected score in a move comment's ``[%eval E]`` (E in pawns,
    or ``#N`` for a mate: +1 when N > 0, -1 when N < 0); None without one."""
    match = EVAL_COMMENT.search(comment)
    if match is None:
        return None
    text = match.group(1)
    if text.startswith("#"):
        mate = int(text[1:])
        return 1.0 if mate > 0 else -1.0 if mate < 0 else 0.0
    return centipawns_to_value(100.0 * float(text))
