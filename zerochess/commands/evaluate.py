"""``zerochess evaluate``: an ad-hoc match or round-robin between any players.

Players are specs: ``net:PATH[:sims=N]``, ``stockfish[:skill=S][:elo=E][:nodes=N][:depth=D][:movetime=T]``,
``uct[:rollouts=N][:rave=1][:c=C][:k=K][:plies=P]``, ``random``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from zerochess.commands.checks import (
    UsageError,
    check_output_folder,
    require_at_least,
    require_positive,
)
from zerochess.commands.common import add_params_arguments, add_ray_argument, config_from_args

if TYPE_CHECKING:
    from pipeline.evaluation.match import Opening
    from pipeline.evaluation.settings import MatchSettings
    from pipeline.stats import SprtConfig


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
    add_ray_argument(parser)


def run(args: argparse.Namespace) -> int:
    from pipeline.evaluation.gating import match_settings
    from pipeline.evaluation.tournament import sprt_from
    from pipeline.players.base import Limits
    from pipeline.players.spec import check_player

    config = config_from_args(args)
    _check_counts(args)
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
        elo0, elo1 = _sprt_bounds(args.sprt)
        sprt = sprt_from(replace(gating, sprt_elo0=elo0, sprt_elo1=elo1))
    for spec in args.player:  # before any work goes to Ray: one line per bad spec
        check_player(spec, settings.context)
    from pipeline.evaluation.match import load_book
    openings = load_book(gating.book, "--openings" if args.openings else "gating.openings")
    check_output_folder("--out", args.out)
    return _play(args, settings, openings, sprt)


def _check_counts(args: argparse.Namespace) -> None:
    require_at_least("--games", args.games)
    require_at_least("--nodes", args.nodes)
    require_at_least("--max-plies", args.max_plies)
    require_positive("--movetime", args.movetime)
    if len(args.player) < 2:
        raise UsageError(f"--player: at least two players are needed, got {len(args.player)}")
    if args.sprt and len(args.player) != 2:
        raise UsageError(f"--sprt needs exactly two players, got {len(args.player)}")


def _sprt_bounds(text: str) -> tuple[float, float]:
    try:
        elo0, elo1 = (float(x) for x in text.split(","))
    except ValueError as error:
        raise UsageError(f"--sprt expects ELO0,ELO1 (e.g. 0,10), got {text!r}") from error
    if not elo0 < elo1:
        raise UsageError(f"--sprt: ELO0 must be below ELO1, got {text!r}")
    return elo0, elo1


def _play(args: argparse.Namespace, settings: MatchSettings, openings: list[Opening], sprt: SprtConfig | None) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from actors.evaluation import run_tournament
    from actors.runtime import init_ray
    from pipeline.evaluation.tournament import TournamentReport

    init_ray(args.ray_address)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pairs = -(-args.games // 2)
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
