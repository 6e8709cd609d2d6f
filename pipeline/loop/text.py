"""The loops' figures as text: a generation's status line and its gate's
figures (``gate/...``, ``ladder/N/...``)."""

from __future__ import annotations

from typing import Any

from pipeline.evaluation.elo_text import elo_text
from pipeline.evaluation.measure import measure_text


def gate_metrics(gated: dict[str, Any]) -> dict[str, float]:
    """The flat ``gate/...`` and ``ladder/N/...`` figures of a gate entry (MLflow, metrics.json)."""
    metrics: dict[str, float] = {"gate/promoted": float(gated["promote"])}
    head = gated.get("vs_best", {}).get("pairings", [{}])
    if head and head[0].get("elo") is not None:
        metrics["gate/elo_vs_best"] = head[0]["elo"]
        metrics["gate/score_vs_best"] = head[0]["score"]
        metrics["gate/games_vs_best"] = float(head[0].get("games", 0))
    converted = gated.get("conversion") or {}  # the candidate's, over the match against the best
    if "ahead" in converted:
        metrics["gate/conversion_ahead"] = float(converted["ahead"])
        metrics["gate/conversion_won"] = float(converted["won"])
        if converted["ahead"]:
            metrics["gate/conversion"] = float(converted["rate"])
    for index, level in enumerate(gated.get("ladder", [])):
        if level.get("elo") is not None:
            metrics[f"ladder/{index}/elo"] = level["elo"]
            metrics[f"ladder/{index}/score"] = level["score"]
            metrics[f"ladder/{index}/games"] = float(level.get("games", 0))
    return metrics


def status_line(summary: dict[str, Any]) -> str:
    """The one line a finished generation prints (its ``summary`` as the ledger stores it)."""
    gate = summary["gate"]
    train = summary["train"]
    selfplay = summary["selfplay"]
    ladder = ", ".join(
        f"SF{key.split('/')[1]} "
        + elo_text(value, gate.get(key.replace("/elo", "/score")), int(gate.get(key.replace("/elo", "/games"), 0)))
        for key, value in gate.items() if key.endswith("/elo")
    )  # fmt: skip
    return (
        f"generation {summary['generation']}: {selfplay.get('games', 0):.0f} games "
        f"({selfplay.get('positions_per_s', 0):.0f} pos/s), loss {train.get('loss/total', float('nan')):.3f} "
        f"(policy {train.get('loss/policy', float('nan')):.3f}, value {train.get('loss/value', float('nan')):.3f}), "
        f"gate: {'PROMOTED' if gate['gate/promoted'] else 'rejected'}"
        + (f", vs best {vs_best_text(gate)} Elo" if "gate/elo_vs_best" in gate else "")
        + (f", ladder {ladder}" if ladder else "")
        + (f"; {measure_text(summary['measure'])}" if summary.get("measure") else "")
    )


def vs_best_text(gate: dict[str, float]) -> str:
    """The gate's Elo against the best net (a bound when the score is 0 or 1)."""
    return elo_text(gate["gate/elo_vs_best"], gate.get("gate/score_vs_best"), int(gate.get("gate/games_vs_best", 0)))
