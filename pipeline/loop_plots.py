"""The loop's figures: ``elo.png`` (Elo against the best and the Stockfish
ladder by generation, and below it the learning measure).  Pure matplotlib:
no Ray, no MLflow; :mod:`actors.loop` saves and logs them."""

from __future__ import annotations

from typing import Any

from pipeline.evaluation.measure import PREFIX as MEASURE_PREFIX


def elo_figure(history: list[dict[str, Any]], baseline: dict[str, float] | None = None) -> Any:
    """The Elo curves (vs best and vs each ladder level) of ``history``'s
    generations, whole generations on the x axis; below them, when the loop
    measured learning (``gating.measure``), the measure from generation 0
    (``baseline``) on, with its 95% interval as a band.

    A generation whose score was 0 (or 1) has no finite Elo: its point is the
    clamp's bound (``pipeline.stats``), drawn as an open triangle pointing
    down (up) rather than as a measured value."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    measured = bool(baseline) or any(entry.get("measure") for entry in history)
    if measured:
        figure, (axis, lower) = plt.subplots(2, 1, figsize=(6, 7), sharex=True)
        _measure_panel(lower, history, baseline or {})
    else:
        figure, axis = plt.subplots(figsize=(6, 4))
    generations = [entry["generation"] for entry in history]
    keys = sorted({key for entry in history for key in entry["gate"] if key.endswith("elo") or "elo_vs" in key})
    bounds = False
    for key in keys:
        elos = [entry["gate"].get(key, float("nan")) for entry in history]
        scores = [entry["gate"].get(_score_key(key)) for entry in history]
        (line,) = axis.plot(generations, elos, label=key)
        measured = [(g, e) for g, e, sc in zip(generations, elos, scores) if sc is None or 0.0 < sc < 1.0]
        if measured:
            axis.plot(*zip(*measured), "o", color=line.get_color())
        below, above = ([(g, e) for g, e, sc in zip(generations, elos, scores) if sc == bound] for bound in (0.0, 1.0))
        bounds |= mark_bounds(axis, line.get_color(), below, above, facecolor="none", size=9)
    if bounds:
        axis.plot([], [], "v", color="grey", markerfacecolor="none", label="bound (score 0: Elo below; 1: above)")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    if not measured:
        axis.set_xlabel("generation")
    axis.set_ylabel("Elo (candidate's view)")
    axis.legend(fontsize="small")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    return figure


def mark_bounds(axis: Any, color: Any, below: list[tuple[Any, Any]], above: list[tuple[Any, Any]], *,
                facecolor: str, size: float) -> bool:  # fmt: skip
    """Draw Elo points that are only the bound of the estimate's clamp as open
    triangles, pointing down (``below``) or up (``above``); whether any was drawn."""
    drawn = False
    for points, marker in ((below, "v"), (above, "^")):
        if points:
            drawn = True
            axis.plot(*zip(*points), marker, color=color, markerfacecolor=facecolor, markersize=size)
    return drawn


MEASURE_SERIES = (
    ("mate_rate", "mate rate vs Stockfish defence"),
    ("score_vs_gen0", "score vs generation 0"),
    ("score_vs_random", "score vs random mover"),
)


def _measure_panel(axis: Any, history: list[dict[str, Any]], baseline: dict[str, float]) -> None:
    """The learning measure per generation (generation 0: the random net),
    each series with its 95% interval as a band."""
    from matplotlib.ticker import MaxNLocator

    rows = [(0, baseline)] + [(entry["generation"], entry.get("measure") or {}) for entry in history]
    for name, label in MEASURE_SERIES:
        key = MEASURE_PREFIX + name
        points = [(g, f[key], f.get(f"{key}_low", f[key]), f.get(f"{key}_high", f[key])) for g, f in rows if key in f]
        if not points:
            continue
        gens, values, low, high = zip(*points)
        (line,) = axis.plot(gens, values, marker="o", label=label)
        axis.fill_between(gens, low, high, alpha=0.2, color=line.get_color())
    axis.set_ylim(-0.02, 1.02)
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_xlabel("generation (0: the random network)")
    axis.set_ylabel("learning measure (95% interval)")
    axis.legend(fontsize="small")
    axis.grid(alpha=0.3)


def _score_key(elo_key: str) -> str:
    """The score metric beside an Elo metric (``ladder/0/elo`` -> ``ladder/0/score``)."""
    return "gate/score_vs_best" if elo_key == "gate/elo_vs_best" else elo_key.replace("/elo", "/score")
