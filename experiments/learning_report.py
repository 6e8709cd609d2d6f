"""The printed lines and the plots of experiments/learning.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from endgame_data import caps_text


def line(entry: dict[str, Any]) -> str:
    head = f"gen {entry['generation']:2d}  loss {entry['loss'].get('loss/total', float('nan')):.3f}"
    figures = figures_text(entry)
    return f"{head}  {figures}" if figures else head


def figures_text(entry: dict[str, Any]) -> str:
    """An evaluation's figures (mates, matches, caps, rating) as one line."""
    parts: list[str] = []
    if "mate" in entry:
        m = entry["mate"]
        parts.append(f"mate rate {m['rate']:.2f} [{m['rate_low']:.2f}, {m['rate_high']:.2f}] ({m['mates']}/{m['games']})")
        for kind, k in m.get("kinds", {}).items():
            parts.append(f"{kind} {k['rate']:.2f} [{k['rate_low']:.2f}, {k['rate_high']:.2f}] ({k['mates']}/{k['games']})")
    for key, label in (("vs_random", "vs random"), ("vs_gen0", "vs gen0")):
        if key in entry:
            r = entry[key]
            parts.append(f"{label} {r['score']:.2f} [{r['score_low']:.2f}, {r['score_high']:.2f}] "
                         f"(+{r['wins']} ={r['draws']} -{r['losses']})")  # fmt: skip
            if r.get("conversion", {}).get("ahead"):
                c = r["conversion"]
                parts.append(f"converted {c['won']}/{c['ahead']}")
    if entry.get("moved_on"):
        parts.append("(first kinds mastered: next stage)")
    if "caps" in entry:
        parts.append("caps " + caps_text(entry["caps"]))
    if "rating" in entry:
        r = entry["rating"]
        parts.append(f"rating {r['rating']:.0f} [{r['low']:.0f}, {r['high']:.0f}] ({r['games']} games)")
    return "  ".join(parts)


def plot(curve: list[dict[str, Any]], phase: str, path: Path, rechecked: list[dict[str, Any]] = ()) -> None:
    """The curve (and the rechecked generations as black error bars)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4))
    series = [("vs_gen0", "score vs generation 0", "score")]
    series += [("mate", "mate rate vs Stockfish defence (50 moves)", "rate")] if phase == "endgame" else []
    series += [("vs_random", "score vs random mover", "score")] if phase == "standard" else []
    for key, label, field in series:
        points = [e for e in curve if key in e]
        gens = [e["generation"] for e in points]
        values = [e[key][field] for e in points]
        low = [e[key][f"{field}_low"] for e in points]
        high = [e[key][f"{field}_high"] for e in points]
        axis.plot(gens, values, marker="o", label=label)
        axis.fill_between(gens, low, high, alpha=0.2)
        again = [e for e in rechecked if key in e]
        if again and key != "vs_gen0":
            axis.errorbar([e["generation"] for e in again], [e[key][field] for e in again],
                          yerr=[[e[key][field] - e[key][f"{field}_low"] for e in again],
                                [e[key][f"{field}_high"] - e[key][field] for e in again]],
                          fmt="s", color="black", capsize=3, label=f"{label}, rechecked")  # fmt: skip
    axis.axhline(0.5, color="grey", linewidth=0.8, linestyle=":")
    axis.set_ylim(-0.02, 1.02)
    axis.set_xlabel("generation")
    axis.set_ylabel("rate / score (95% interval)")
    axis.set_title(f"zerochess learning, {phase} ({curve[-1]['minutes']:.0f} min on 2 CPU cores)" if curve else phase)
    axis.legend(fontsize="small")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def plot_rounds(rounds: list[dict[str, Any]], path: Path) -> None:
    """Each kind's mate rate (95% interval shaded) after each DAgger round, against minutes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4))
    kinds = sorted({kind for entry in rounds for kind in entry.get("mate", {}).get("kinds", {})})
    for kind in kinds:
        points = [(entry["minutes"], entry["mate"]["kinds"][kind]) for entry in rounds
                  if kind in entry.get("mate", {}).get("kinds", {})]  # fmt: skip
        minutes = [minute for minute, _ in points]
        axis.plot(minutes, [figures["rate"] for _, figures in points], marker="o", label=kind)
        axis.fill_between(minutes, [figures["rate_low"] for _, figures in points],
                          [figures["rate_high"] for _, figures in points], alpha=0.15)  # fmt: skip
    axis.set_ylim(-0.02, 1.02)
    axis.set_xlabel("minutes (supervised start and rounds)")
    axis.set_ylabel("mate rate vs Stockfish defence (95% interval)")
    axis.set_title(f"zerochess DAgger over the tables, {len(rounds)} rounds")
    axis.legend(fontsize="small")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def plot_compare(folders: list[Path], labels: list[str], path: Path) -> None:
    """Mate rate (endgames) or score vs the random mover (standard) against
    wall-clock minutes, one line per run folder: searches compared at equal
    wall time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.5, 4))
    for folder, label in zip(folders, labels):
        data = json.loads((folder / "curve.json").read_text())
        key, field = ("mate", "rate") if data["phase"] == "endgame" else ("vs_random", "score")
        points = [e for e in data["generations"] if key in e]
        minutes = [e["minutes"] for e in points]
        axis.plot(minutes, [e[key][field] for e in points], marker="o", label=label)
        axis.fill_between(minutes, [e[key][f"{field}_low"] for e in points],
                          [e[key][f"{field}_high"] for e in points], alpha=0.2)  # fmt: skip
    axis.set_ylim(-0.02, 1.02)
    axis.set_xlabel("minutes (self-play, training and evaluation)")
    axis.set_ylabel("mate rate vs Stockfish (95% interval)" if key == "mate" else "score vs random (95% interval)")
    axis.set_title("zerochess learning at equal wall time, 2 CPU cores")
    axis.legend(fontsize="small")
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
