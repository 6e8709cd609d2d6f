"""``zerochess sfgames``: Stockfish self-play games as PGN, for the supervised phase.

Stockfish plays itself at a node limit from seeded random starts; every move
carries its evaluation (``[%eval ...]``).  ``zerochess pgn2shards`` turns the
file into shards whose policy target is the move played, ``z`` the outcome
and ``root_q`` the evaluation (``train.value_target: q`` or ``mix`` trains on
it), and ``zerochess pretrain`` trains on them: the project's stand-in for a
human game database (:mod:`pipeline.supervised.stockfish_games`).  The file
is written atomically (:func:`pipeline.atomic.atomic_write`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from zerochess.commands.checks import UsageError, check_output_folder, require_at_least
from zerochess.commands.common import add_params_arguments, config_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--games", type=int, required=True, help="games to play")
    parser.add_argument("--nodes", type=int, default=1000, help="Stockfish nodes a move")
    parser.add_argument("--random-plies", type=int, default=8,
                        help="random legal moves before each recorded game starts (its FEN header)")  # fmt: skip
    parser.add_argument("--max-plies", type=int, default=300, help="a longer game is a draw")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random starts")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="Stockfish processes at once")
    parser.add_argument("--stockfish", metavar="PATH",
                        help="Stockfish binary (default supervised.stockfish_path, else stockfish on PATH "
                             "or /usr/games/stockfish)")  # fmt: skip
    parser.add_argument("--out", default="runs/sfgames/games.pgn", help="the PGN file to write")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from pipeline.atomic import atomic_write
    from pipeline.players.stockfish import find_stockfish
    from pipeline.supervised.stockfish_games import GamePlan, stockfish_games

    config = config_from_args(args)
    for option, value, minimum in (("--games", args.games, 1), ("--nodes", args.nodes, 1),
                                   ("--random-plies", args.random_plies, 0), ("--max-plies", args.max_plies, 1),
                                   ("--workers", args.workers, 1)):  # fmt: skip
        require_at_least(option, value, minimum)
    out = Path(args.out)
    if out.is_dir():
        raise UsageError(f"--out {out}: is a folder; name the PGN file to write")
    check_output_folder("--out", out.parent)
    path = find_stockfish(args.stockfish or config.supervised.stockfish_path)
    plan = GamePlan(nodes=args.nodes, random_plies=args.random_plies, max_plies=args.max_plies, seed=args.seed)
    totals = {"games": 0, "positions": 0}
    results: dict[str, int] = {}
    started = time.perf_counter()
    with atomic_write(out) as handle, Progress(
        TextColumn("sfgames"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(), console=Console(stderr=True),
    ) as progress:  # fmt: skip
        bar = progress.add_task("games", total=args.games, status="")
        for played in stockfish_games(args.games, plan, path, args.workers):
            handle.write((played.text + "\n\n").encode("utf-8"))
            totals["games"] += 1
            totals["positions"] += played.plies
            results[played.result] = results.get(played.result, 0) + 1
            rate = totals["positions"] / max(time.perf_counter() - started, 1e-9)
            progress.update(bar, completed=totals["games"], status=f"{rate:.0f} positions/s")
    seconds = time.perf_counter() - started
    print(json.dumps({"out": str(out), **totals, "results": results, "seconds": round(seconds, 1),
                      "positions_per_s": round(totals["positions"] / max(seconds, 1e-9), 1),
                      "nodes": args.nodes, "workers": args.workers, "seed": args.seed}, indent=2))  # fmt: skip
    return 0
