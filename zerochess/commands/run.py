"""``zerochess run``: the whole loop, generation after generation of
self-play -> training -> gating (resumable; see ``actors/loop.py``).

Its output, on stdout: the report (generation 0's measure, then one line a
generation, as the README shows for ``make demo``), then a gating game as PGN
and the MLflow store.  On a terminal the live status screen (stderr) shows the
progress; ``--verbose`` adds each stage's line (off the screen) and the log
records below warnings, the workers' included.  Warnings and errors always show."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from zerochess.commands.checks import check_output_folder
from zerochess.commands.common import (
    add_params_arguments,
    add_ray_argument,
    config_from_args,
    print_event,
)

if TYPE_CHECKING:
    from pipeline.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--out", default="runs/pipeline",
                        help="run folder (rerun the same command to resume; default: runs/pipeline)")
    parser.add_argument("--init-checkpoint", help="start generation 0 from this net (e.g. zerochess pretrain's)")
    parser.add_argument("--hours", metavar="H",
                        help="wall-clock budget of the whole loop in hours (sets run.hours; beside run.generations, "
                             "whichever comes first ends the run; rerun with a larger budget to go on)")  # fmt: skip
    add_ray_argument(parser)
    parser.add_argument("--no-live", action="store_true",
                        help="no live status screen, as off a terminal")


def run(args: argparse.Namespace) -> int:
    if args.hours is not None:  # checked before anything starts: a bad budget is one line, exit 2
        from pipeline.loop.budget import parse_hours

        args.overrides = [*args.overrides, f"run.hours={parse_hours(args.hours)!r}"]
    config = config_from_args(args)
    check_output_folder("--out", args.out)
    if args.init_checkpoint:
        from pipeline.checkpoint import check_init_net

        check_init_net(config.net, args.init_checkpoint)
    from pipeline.evaluation.match import load_book
    load_book(config.gating.book)  # the gate's inputs fail now, not after a generation of work
    if config.gating.ladder:
        from pipeline.players.stockfish import find_stockfish

        find_stockfish(config.gating.stockfish_path)
    return _run(args, config)


def _run(args: argparse.Namespace, config: Config) -> int:
    if not args.verbose:
        from pipeline.quiet import report_only

        report_only()
    if config.run.mode == "async":  # the three roles at once: actors/async_loop.py
        from zerochess.commands.run_async import run_async_command

        return run_async_command(args, config)
    from rich.console import Console

    from actors.loop import run_pipeline
    from actors.runtime import init_ray
    from pipeline.status import RunStatus, StatusBoard
    from pipeline.training.tracking import mlflow_ui_hint

    console = Console(stderr=True)
    init_ray(args.ray_address, verbose=args.verbose)
    board = StatusBoard(RunStatus(str(args.out), config.run.generations), console=console,
                        live=False if args.no_live else None)  # fmt: skip

    def on_event(text: str) -> None:
        if args.verbose and not board.live:  # the live screen lists recent events itself
            print_event(console, text)

    with board:
        result = run_pipeline(config, args.out, init_net=args.init_checkpoint, on_event=on_event, board=board,
                              on_report=_print_line)  # fmt: skip
    _print_last_game(args.out, result)
    print(json.dumps({"best": result["best"], "mlflow": result["mlflow"], "parent_run": result["parent_run"]}))
    print(mlflow_ui_hint(result["mlflow"], result["experiment_id"]))
    return 0


def _print_line(text: str) -> None:
    """A report line on stdout, at once (``make demo > log`` fills the log as it goes)."""
    print(text, flush=True)


def _print_last_game(out: str, result: dict) -> None:
    """The first gating game of the last generation, as PGN."""
    import io
    from pathlib import Path

    import chess.pgn

    if not result["generations"]:
        return
    last = result["generations"][-1]["generation"]
    for name in ("vs_best.pgn", "ladder_0.pgn"):
        path = Path(out) / f"gen{last:04d}" / "gate" / name
        if path.exists():
            game = chess.pgn.read_game(io.StringIO(path.read_text()))
            if game is not None:
                print(f"\nA gating game of generation {last} ({name}):\n{game}\n")
                return
