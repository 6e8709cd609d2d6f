"""``zerochess evaluate``: an ad-hoc match or round-robin between any players.

Players are specs: ``net:PATH[:sims=N]``, ``stockfish[:skill=S][:elo=E][:nodes=N][:depth=D][:movetime=T]``,
``uct[:rollouts=N][:rave=1][:c=C][:k=K][:plies=P]``, ``random``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pipeline.commands.common import add_params_arguments, config_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--player", action="append", required=True, metavar="SPEC",
                        help="a player (repeat: two for a match, more for a round-robin)")  # fmt: skip
    parser.add_argument("--games", type=int, default=20, help="games per pairing (played in colour-swapped pairs)")
    parser.add_argument("--movetime", type=float, help="seconds per move for every player")
    parser.add_argument("--nodes", type=int, help="nodes/simulations/rollouts per move for every player")
    parser.add_argument("--max-plies", type=int, help="draw after this many plies (default gating.max_plies)")
    parser.add_argument("--openings", help="EPD book (default gating.openings)")
    parser.add_argument("--sprt", metavar="ELO0,ELO1", help="stop a two-player match once an SPRT decides")
    parser.add_argument("--out", default="runs/evaluate", help="folder for games.pgn and result.json")
    parser.add_argument("--ray-address", help="Ray cluster to join, e.g. auto (default: RAY_ADDRESS, else start a local one)")


def run(args: argparse.Namespace) -> int:
    from actors.evaluation import run_tournament
    from actors.gate import match_settings
    from actors.selfplay import init_ray
    from pipeline.evaluation.match import load_openings
    from pipeline.evaluation.tournament import TournamentReport, sprt_from
    from pipeline.players.base import Limits

    config = config_from_args(args)
    gating = config.gating
    if args.openings:
        gating = replace(gating, openings=args.openings)
    if args.max_plies:
        gating = replace(gating, max_plies=args.max_plies)
    settings = replace(match_settings(replace(config, gating=gating)), event="zerochess evaluate")
    if args.movetime or args.nodes:
        settings = replace(settings, limits=Limits(nodes=args.nodes, movetime_s=args.movetime))
    sprt = None
    if args.sprt:
        elo0, elo1 = (float(x) for x in args.sprt.split(","))
        sprt = sprt_from(replace(gating, sprt_elo0=elo0, sprt_elo1=elo1))
    openings = load_openings(gating.book)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    init_ray(args.ray_address)
    pairs = max(1, -(-args.games // 2))
    total_games = pairs * 2 * len(args.player) * (len(args.player) - 1) // 2
    with Progress(TextColumn("match"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[score]}"),
                  TimeElapsedColumn(), console=Console(stderr=True)) as progress:  # fmt: skip
        bar = progress.add_task("games", total=total_games, score="")

        def on_pair(report: TournamentReport) -> None:
            text = "  ".join(_score_text(p) for p in report.pairings.values())
            progress.update(bar, completed=len(report.games), score=text)

        report = run_tournament(args.player, openings, pairs, settings, sprt=sprt,
                                pgn_path=str(out / "games.pgn"), on_pair=on_pair)  # fmt: skip
    summary = report.summary()
    (out / "result.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    return 0


def _score_text(pairing) -> str:  # noqa: ANN001
    points = pairing.wins + pairing.draws / 2
    return f"{pairing.a.split(':')[0]} {points:g}/{pairing.games} vs {pairing.b.split(':')[0]}"
