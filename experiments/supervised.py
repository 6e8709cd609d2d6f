"""The supervised start at scale: Stockfish's own games as the expert, pretraining, a rating.

Seed 001's supervised phase with Stockfish in the human experts' place (no game
database ships offline).  A run is three commands, timed, and a rating:

    zerochess sfgames --games 5000 --nodes 300 --seed 7 --out OUT/games.pgn
    zerochess pgn2shards --pgn OUT/games.pgn --out OUT/shards --set supervised.heldout_fraction=0.02
    zerochess pretrain --data OUT/shards --out OUT/pre --set train.max_steps=3600 ...

then

    python experiments/supervised.py record --shards OUT/shards --pretrain OUT/pre \\
        --seconds sfgames=1031,pgn2shards=76,pretrain=2700 --command "..." --data docs/results/data/supervised-s7.json
    python experiments/supervised.py rate OUT/pre/net.pt --simulations 32,800 --data docs/results/data/supervised-s7.json
    python experiments/supervised.py page docs/results/data/supervised-*.json --out docs/results/supervised.md

``record`` gathers what the stages wrote (positions, held-out accuracy, the
net's size and steps) with the wall time of each stage; ``rate`` rates the net
exactly as ``experiments/frontier.py`` rates the zero nets (``zerochess rate``
with the ``cpu`` preset's search, 400 plies); ``page`` draws the table from
the data files alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "bench"))  # common.py
from common import number_list  # noqa: E402 - bench/common.py
from frontier import cpu_text, rate_net  # noqa: E402 - experiments/, this script's folder

from pipeline.atomic import atomic_write  # noqa: E402
from pipeline.checkpoint import load_net_config  # noqa: E402

STAGES = ("sfgames", "pgn2shards", "pretrain")


def parse_seconds(text: str) -> dict[str, float]:
    """``sfgames=1031,pretrain=2700`` -> ``{"sfgames": 1031.0, ...}``; stages outside :data:`STAGES` are errors."""
    seconds = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        if name not in STAGES or not value:
            raise argparse.ArgumentTypeError(f"expected STAGE=SECONDS with STAGE in {', '.join(STAGES)}, got {item!r}")
        seconds[name] = float(value)
    return seconds


def read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.exists() else {}


def write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as handle:
        handle.write((json.dumps(data, indent=1) + "\n").encode())


def command_record(args: argparse.Namespace) -> None:
    shards = read(Path(args.shards) / "pgn2shards.json")["totals"]
    held_out = read(Path(args.pretrain) / "heldout.json")
    net = load_net_config(held_out["net"])
    data = read(Path(args.data))
    data.update({
        "commands": args.command, "cpu": data.get("cpu") or cpu_text(), "seconds": args.seconds,
        "games": shards["games"], "train_positions": shards["train_positions"],
        "heldout_positions": shards["heldout_positions"], "steps": held_out["steps"],
        "heldout": held_out["heldout"],
        "net": {"blocks": net.blocks, "filters": net.filters, "value_head": net.value_head}, "note": args.note or data.get("note", ""),
        "rating_note": args.rating_note or data.get("rating_note", ""),
    })  # fmt: skip
    write(Path(args.data), data)


def rated_figures(folder: Path) -> dict[str, Any]:
    """The figures of a finished ``zerochess rate --out FOLDER`` (as :func:`frontier.rate_net` keeps them)."""
    report = json.loads((folder / "rating.json").read_text())
    return {key: report[key] for key in ("rating", "low", "high", "games", "score")} | {
        "levels": [f"{lv['name']} {lv['wins']}/{lv['draws']}/{lv['losses']}" for lv in report["levels"]]}


def command_rate(args: argparse.Namespace) -> None:
    path = Path(args.data)
    for simulations in args.simulations:
        if str(simulations) in read(path).get("ratings", {}):
            continue
        folder = Path(args.rate_out) / f"sims{simulations}"
        done = args.rated and (folder / "rating.json").is_file()  # rated already by the same command
        rating = rated_figures(folder) if done else rate_net(args.net, simulations, folder, args)
        data = read(path)
        data.setdefault("ratings", {})[str(simulations)] = rating
        write(path, data)


def page_section(path: Path, data: dict[str, Any]) -> list[str]:
    seconds = data.get("seconds", {})
    total = sum(seconds.values())
    held = data["heldout"]
    net = data.get("net", {})
    lines = [f"## {path.stem}", "", f"- CPU: {data['cpu']}", f"- data: `data/{path.name}`",
             f"- net: {net.get('blocks')}x{net.get('filters')}, {net.get('value_head')} value head", ""]
    lines += ["```sh", *data.get("commands", []), "```", ""]
    if data.get("note"):
        lines += [data["note"], ""]
    lines += ["| stage | minutes | what it made |", "|---|---|---|"]
    made = {"sfgames": f"{data['games']} games", "pgn2shards": f"{data['train_positions']} training and "
            f"{data['heldout_positions']} held-out positions", "pretrain": f"{data['steps']} steps"}  # fmt: skip
    lines += [f"| {stage} | {seconds[stage] / 60:.1f} | {made[stage]} |" for stage in STAGES if stage in seconds]
    lines += [f"| **all** | **{total / 60:.1f}** | |", ""]
    lines += ["| held-out positions | top-1 | top-5 | uniform top-1 | uniform top-5 | value MSE |",
              "|---|---|---|---|---|---|",
              f"| {held['positions']} | {held['top1']:.3f} | {held['top5']:.3f} | {held['uniform_top1']:.3f} | "
              f"{held['uniform_top5']:.3f} | {held['value_mse']:.3f} |", ""]  # fmt: skip
    ratings = data.get("ratings", {})
    if ratings:
        lines += ["| simulations a move | rating | games | levels (wins/draws/losses) |", "|---|---|---|---|"]
        for size, rating in sorted(ratings.items(), key=lambda item: int(item[0])):
            lines.append(f"| {size} | {rating['rating']:.0f} [{rating['low']:.0f}, {rating['high']:.0f}] | "
                         f"{rating['games']} | {'; '.join(rating['levels'])} |")  # fmt: skip
        lines.append("")
    if data.get("rating_note"):
        lines += [data["rating_note"], ""]
    return lines


def command_page(args: argparse.Namespace) -> None:
    Path(args.out).write_text(page_text([Path(name) for name in args.data]))


def page_text(paths: list[Path]) -> str:
    """The page's Markdown from the data files at ``paths``."""
    lines = ["# The supervised start", "",
             "*Generated by `experiments/supervised.py page` from the data files under `docs/results/data/`;",
             "edit those or the script, not this page.*", "",
             "Seed 001's supervised phase with Stockfish as the expert: `zerochess sfgames` plays Stockfish",
             "against itself at a node limit from seeded random starts, with its evaluation on every move;",
             "`zerochess pgn2shards` makes shards whose policy target is the move played and whose `root_q`",
             "is the evaluation; `zerochess pretrain` trains on them (`train.value_target: mix`). Every",
             "minute of it counts in the budget. The net is rated as the zero nets of",
             "[the compute frontier](frontier.md) are.", ""]  # fmt: skip
    for path in paths:
        lines += page_section(path, read(path))
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="action", required=True)
    record = sub.add_parser("record", help="gather a finished run's figures into a data file")
    record.add_argument("--shards", required=True)
    record.add_argument("--pretrain", required=True)
    record.add_argument("--seconds", type=parse_seconds, required=True, help="STAGE=SECONDS,... wall time")
    record.add_argument("--command", action="append", default=[], help="a command of the run (repeatable)")
    record.add_argument("--note", help="what the reader should know about the run")
    record.add_argument("--rating-note", help="what the reader should know about its ratings")
    record.add_argument("--data", required=True)
    rate = sub.add_parser("rate", help="rate the net at each search size into the data file")
    rate.add_argument("net")
    rate.add_argument("--simulations", type=number_list(int, 1), default=[32, 800])
    rate.add_argument("--data", required=True)
    rate.add_argument("--rate-out", default="runs/supervised-rate", help="zerochess rate's folders: OUT/simsN")
    rate.add_argument("--rated", action="store_true", help="take a size's rating from its finished folder")
    rate.add_argument("--games", type=int, default=10)
    rate.add_argument("--width", type=float, default=0.0)
    rate.add_argument("--max-games", type=int, default=200)
    rate.add_argument("--max-levels", type=int, default=4)
    page = sub.add_parser("page", help="the results page from data files")
    page.add_argument("data", nargs="+")
    page.add_argument("--out", default=str(ROOT / "docs" / "results" / "supervised.md"))
    args = parser.parse_args(argv)
    {"record": command_record, "rate": command_rate, "page": command_page}[args.action](args)


if __name__ == "__main__":
    main()
