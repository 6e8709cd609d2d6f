"""The compute frontier: what training time (and play-time search) buys.

A run of ``zerochess run --preset cpu --hours H`` (the default recipe) keeps
in its ledger, for each generation, the net it trained and the seconds the
loop had run by then (``elapsed_s``).  The recipe's schedule does not depend
on the budget (a constant learning rate, a fixed window), so one run of H
hours also stands for the shorter budgets: the net of the last generation
finished by each minute mark is the net a run of that budget would end with.

    python experiments/frontier.py points RUN --minutes 15,30,60,120
    python experiments/frontier.py rate RUN --minutes 15,30,60,120 --simulations 32,800 \\
        --data docs/results/data/frontier-s0.json
    python experiments/frontier.py page docs/results/data/frontier-*.json --out docs/results/frontier.md

``rate`` rates each point's net with ``zerochess rate`` (the real command: the
levels cache, ``--width``, the search of ``params.yaml``'s recipe) and writes
the data file as it goes (a rerun skips the ratings it holds).  ``page``
draws the table, the plot and the fits (Elo per doubling of training time;
with two search sizes, the exchange rate between training time and
play-time simulations) from the data files alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from common import number_list  # noqa: E402 - bench/common.py, beside this folder

from pipeline.atomic import atomic_write  # noqa: E402

RATE_MAX_PLIES = 400  # the levels cache is keyed by the games' length: the one earlier ratings used


def ledger_curve(run: Path) -> list[dict[str, Any]]:
    """One row per finished generation: its net, minutes, losses."""
    rows = []
    for line in (run / "ledger.jsonl").read_text().splitlines():
        entry = json.loads(line) if line.strip() else {}
        if entry.get("stage") != "generation" or "elapsed_s" not in entry:
            continue
        generation = entry["generation"]
        train = entry["summary"].get("train", {})
        rows.append({"generation": generation, "minutes": round(entry["elapsed_s"] / 60, 2),
                     "net": str(run / f"gen{generation:04d}" / "train" / "net.pt"),
                     "selfplay_positions": entry["summary"].get("selfplay", {}).get("positions"),
                     **{key: round(value, 4) for key, value in train.items() if key.startswith("loss/")}})  # fmt: skip
    if not rows:
        raise SystemExit(f"{run}/ledger.jsonl: no generation with elapsed_s (a run of zerochess run --hours)")
    return rows


def points(curve: list[dict[str, Any]], minutes: list[float]) -> list[dict[str, Any]]:
    """For each minute mark, the last generation finished by then."""
    chosen = []
    for mark in minutes:
        done = [row for row in curve if row["minutes"] <= mark + 1e-9]
        if not done:
            raise SystemExit(f"no generation finished within {mark:g} minutes")
        if curve[-1]["minutes"] < mark and done[-1] is curve[-1]:
            print(f"note: the run ended at {curve[-1]['minutes']:.1f} min, before the {mark:g}-minute mark")
        chosen.append({"budget_min": mark, **done[-1]})
    return chosen


def cpu_text() -> str:
    """The CPU's model name and its bf16 support (written beside every figure)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown CPU"
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = sorted({flag for flag in ("avx512_bf16", "amx_bf16", "avx512_vnni", "avx2") if f" {flag}" in info})
    return f"{name}, {os.cpu_count()} logical CPUs, flags: {', '.join(flags) or 'none of avx2/avx512_bf16/amx'}"


def rate_net(net: str, simulations: int, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """``zerochess rate NET`` at ``simulations``: its rating.json's figures."""
    command = [sys.executable, "-m", "zerochess", "rate", net, "--preset", "cpu", "--simulations", str(simulations),
               "--set", f"gating.max_plies={RATE_MAX_PLIES}", "--games", str(args.games),
               "--width", str(args.width), "--max-games", str(args.max_games), "--max-levels", str(args.max_levels),
               "--out", str(out), "--no-mlflow"]  # fmt: skip
    print("$ " + " ".join(command[2:]), flush=True)
    subprocess.run(command, cwd=ROOT, check=True)
    report = json.loads((out / "rating.json").read_text())
    return {key: report[key] for key in ("rating", "low", "high", "games", "score")} | {
        "levels": [f"{lv['name']} {lv['wins']}/{lv['draws']}/{lv['losses']}" for lv in report["levels"]]}


def command_rate(args: argparse.Namespace) -> None:
    data_path = Path(args.data)
    curve = ledger_curve(Path(args.run))
    for row in points(curve, args.minutes):
        for simulations in args.simulations:
            if str(simulations) in held_ratings(data_path).get(row["budget_min"], {}):
                continue
            out = Path(args.rate_out) / f"min{row['budget_min']:g}-sims{simulations}"
            rating = rate_net(row["net"], simulations, out, args)
            save(data_path, args, curve, row, str(simulations), rating)


def held_ratings(path: Path) -> dict[float, dict[str, Any]]:
    """The ratings a data file holds, by budget."""
    if not path.exists():
        return {}
    return {point["budget_min"]: point["ratings"] for point in json.loads(path.read_text()).get("points", [])}


def save(path: Path, args: argparse.Namespace, curve: list[dict[str, Any]], row: dict[str, Any], size: str,
         rating: dict[str, Any]) -> None:  # fmt: skip
    """Add one rating to the data file, read again first (several ``rate``
    processes may share one file: each adds its own ratings)."""
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update({"run": str(args.run), "command": args.command or data.get("command", ""),
                 "cpu": data.get("cpu") or cpu_text(),
                 "curve": [{k: v for k, v in r.items() if k != "net"} for r in curve]})  # fmt: skip
    by_budget = {point["budget_min"]: point for point in data.get("points", [])}
    point = by_budget.setdefault(row["budget_min"], {**{k: v for k, v in row.items() if k != "net"}, "ratings": {}})
    point["ratings"][size] = rating
    data["points"] = sorted(by_budget.values(), key=lambda p: p["budget_min"])
    with atomic_write(path) as handle:
        handle.write((json.dumps(data, indent=1) + "\n").encode("utf-8"))


def fit_lines(rows: list[tuple[float, float, float, float]]) -> dict[str, float] | None:
    """Weighted least squares of rating = a + b log2(minutes) [+ c log2(sims)]
    over (minutes, sims, rating, half-width) rows, each rating's standard
    error its 95% half-width / 1.96; the slopes' standard errors follow from
    those (not from the residuals)."""
    import numpy as np

    if len(rows) < 2:
        return None
    two_sizes = len({sims for _, sims, _, _ in rows}) > 1
    design = np.array([[1.0, math.log2(m)] + ([math.log2(s)] if two_sizes else []) for m, s, _, _ in rows])
    target = np.array([r for _, _, r, _ in rows])
    weight = np.array([(1.96 / max(w, 1.0)) ** 2 for _, _, _, w in rows])
    if np.linalg.matrix_rank(design) < design.shape[1]:
        return None
    scaled = design * np.sqrt(weight)[:, None]
    coef, *_ = np.linalg.lstsq(scaled, target * np.sqrt(weight), rcond=None)
    covariance = np.linalg.inv(scaled.T @ scaled)
    fit = {"intercept": float(coef[0]), "per_doubling_time": float(coef[1]),
           "per_doubling_time_se": float(math.sqrt(covariance[1, 1]))}  # fmt: skip
    if two_sizes:
        fit |= {"per_doubling_sims": float(coef[2]), "per_doubling_sims_se": float(math.sqrt(covariance[2, 2])),
                "exchange_rate": float(coef[2] / coef[1]) if coef[1] else float("nan")}  # fmt: skip
    return fit


def rating_rows(data: dict[str, Any]) -> list[tuple[float, float, float, float]]:
    return [(point["budget_min"], float(sims), r["rating"], (r["high"] - r["low"]) / 2)
            for point in data["points"] for sims, r in point["ratings"].items()]  # fmt: skip


def command_page(args: argparse.Namespace) -> None:
    out = Path(args.out)
    datasets = [(Path(path), json.loads(Path(path).read_text())) for path in args.data]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page_text(datasets, Path(args.tactics) if args.tactics else None, out.parent))
    plot(datasets, out.with_suffix(".png"))
    print(f"wrote {out} and {out.with_suffix('.png')}")


def page_text(datasets: list[tuple[Path, dict[str, Any]]], tactics: Path | None, folder: Path) -> str:
    """The page's Markdown, its data files' paths written relative to ``folder`` (the page's own)."""
    lines = [PAGE_HEAD.strip(), ""]
    for path, data in datasets:
        lines += page_section(path, data, folder)
    if tactics:
        lines += tactics_section(tactics, folder)
    return "\n".join(lines).rstrip() + "\n"


PAGE_HEAD = """
# The compute frontier on 2 CPU cores

*Generated by `experiments/frontier.py page` from the data files under
`docs/results/data/`; edit those or the script, not this page.*

Each row is the net a run of the default recipe (`zerochess run --preset cpu
--hours H`, no `--set`) had trained by that minute, rated on Stockfish's
`UCI_Elo` scale by `zerochess rate` (95% intervals; below 1350 the levels are
Stockfish at `nodes=1` playing a share of random moves, measured once against
`UCI_Elo` 1350). One run serves as several budgets: the recipe's schedule does
not depend on the budget.

![ratings against training time](frontier.png)
"""


def page_section(path: Path, data: dict[str, Any], folder: Path) -> list[str]:
    sizes = sorted({int(s) for point in data["points"] for s in point["ratings"]})
    lines = [f"## {path.stem}", "", f"- run: `{data.get('command', '')}`", f"- CPU: {data.get('cpu', '?')}",
             f"- data: `{os.path.relpath(path, folder)}`", ""]  # fmt: skip
    if data.get("note"):
        lines += [data["note"], ""]
    head = "| budget (min) | generation | minutes | " + " | ".join(f"rating at {s} sims" for s in sizes) + " |"
    lines += [head, "|" + "---|" * (3 + len(sizes))]
    for point in data["points"]:
        cells = []
        for size in sizes:
            r = point["ratings"].get(str(size))
            cells.append("–" if r is None else f"{r['rating']:.0f} [{r['low']:.0f}, {r['high']:.0f}] ({r['games']} games)")
        lines.append(f"| {point['budget_min']:g} | {point['generation']} | {point['minutes']:.1f} | " + " | ".join(cells) + " |")
    fit = fit_lines(rating_rows(data))
    lines.append("")
    if fit is None:
        lines.append("Too few ratings for a fit yet.")
    else:
        text = (f"Weighted least-squares fit of rating on log2(minutes) (± one standard error): "
                f"**{fit['per_doubling_time']:+.0f} ± {fit['per_doubling_time_se']:.0f} Elo per doubling of training "
                f"time**.")  # fmt: skip
        if "exchange_rate" in fit:
            text += (f" {fit['per_doubling_sims']:+.0f} ± {fit['per_doubling_sims_se']:.0f} Elo per doubling of "
                     f"play-time simulations: one doubling of simulations is worth {fit['exchange_rate']:.2f} "
                     f"doublings of training time.")  # fmt: skip
        lines.append(text)
    return [*lines, ""]


def tactics_section(path: Path, folder: Path) -> list[str]:
    """The forced-mate results (``experiments/tactics.py solve --data``) as a table."""
    entries = json.loads(path.read_text())
    kinds = sorted({key for entry in entries for key in entry if key.startswith("mate_in_")})
    lines = ["## Forced mates", "", f"Data: `{os.path.relpath(path, folder)}` (`experiments/tactics.py solve`).", "",
             "| player | simulations | search settings | " + " | ".join(k.replace("_", " ") for k in kinds) + " |",
             "|" + "---|" * (3 + len(kinds))]  # fmt: skip
    for entry in entries:
        settings = ", ".join(entry.get("overrides") or []) or "params.yaml"
        lines.append(f"| {entry['label']} | {entry['simulations']} | {settings} | "
                     + " | ".join(entry.get(kind, "–") for kind in kinds) + " |")  # fmt: skip
    return [*lines, ""]


def plot(datasets: list[tuple[Path, dict[str, Any]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.2))
    for source, data in datasets:
        sizes = sorted({int(s) for point in data["points"] for s in point["ratings"]})
        for size in sizes:
            rows = [(p["budget_min"], p["ratings"][str(size)]) for p in data["points"] if str(size) in p["ratings"]]
            x = [m for m, _ in rows]
            y = [r["rating"] for _, r in rows]
            error = [[r["rating"] - r["low"] for _, r in rows], [r["high"] - r["rating"] for _, r in rows]]
            axes.errorbar(x, y, yerr=error, marker="o", capsize=3, label=f"{source.stem}, {size} sims")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("training time on 2 cores (minutes, log scale)")
    axes.set_ylabel("rating on Stockfish's UCI_Elo scale")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    show = sub.add_parser("points", help="the generation and net at each minute mark")
    rate = sub.add_parser("rate", help="rate each point's net at each search size into a data file")
    for each in (show, rate):
        each.add_argument("run", help="the run folder of zerochess run --hours")
        each.add_argument("--minutes", type=number_list(float, 0.1), default=[15.0, 30.0, 60.0, 120.0, 240.0])
    rate.add_argument("--data", required=True, help="the data file (JSON) to write (and resume from)")
    rate.add_argument("--simulations", type=number_list(int, 1), default=[32])
    rate.add_argument("--games", type=int, default=10, help="games of each match (zerochess rate --games)")
    rate.add_argument("--width", type=float, default=75.0, help="zerochess rate --width")
    rate.add_argument("--max-games", type=int, default=200, help="zerochess rate --max-games")
    rate.add_argument("--max-levels", type=int, default=6, help="zerochess rate --max-levels")
    rate.add_argument("--rate-out", default="runs/frontier-rate", help="folder for the ratings' own outputs")
    rate.add_argument("--command", help="the command that made the run (for the record)")
    page = sub.add_parser("page", help="the results page (Markdown and PNG) from data files")
    page.add_argument("data", nargs="+")
    page.add_argument("--out", default=str(ROOT / "docs" / "results" / "frontier.md"))
    page.add_argument("--tactics", help="the forced-mate results (experiments/tactics.py solve --data)")
    args = parser.parse_args(argv)
    if args.action == "points":
        for point in points(ledger_curve(Path(args.run)), args.minutes):
            print(f"{point['budget_min']:g} min: generation {point['generation']} at {point['minutes']:.1f} min, {point['net']}")
    elif args.action == "rate":
        command_rate(args)
    else:
        command_page(args)


if __name__ == "__main__":
    main()
