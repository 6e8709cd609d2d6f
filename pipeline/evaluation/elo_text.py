"""How an Elo figure reads in the status lines and screens (shared by the
learning measure, the loops' status lines and the live status screen)."""

from __future__ import annotations


def elo_text(elo: float, score: float | None = None, games: int | None = None) -> str:
    """An Elo figure as a reader should take it.  A sample of only losses
    (or only wins) has no finite Elo: the figure is the clamp's bound
    (see :mod:`pipeline.stats`), shown as such: ``0/4, below -280``."""
    if score is not None and games:
        points = f"{score * games:g}"
        if score <= 0.0:
            return f"{points}/{games}, below {elo:+.0f}"
        if score >= 1.0:
            return f"{points}/{games}, above {elo:+.0f}"
    return f"{elo:+.0f}"
