"""``zerochess gate``: promote a candidate network only on statistical evidence.

Exit status: 0 promoted, 10 not promoted, 2 on an error (bad input).
``--no-fail`` exits 0 either way (a DVC stage must not fail on a rejection),
and ``--best-out PATH`` copies the network that is best after the gate (the
candidate when promoted, else ``--best``) to PATH.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from zerochess.commands.checks import UsageError, check_output_folder
from zerochess.commands.common import add_params_arguments, add_ray_argument, config_from_args

if TYPE_CHECKING:
    from pipeline.config import Config

EXIT_PROMOTED = 0
EXIT_REJECTED = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--candidate", required=True, help="the new network (checkpoint)")
    parser.add_argument("--best", help="the current best network (omit when there is none)")
    parser.add_argument("--out", default="runs/gate", help="folder for gate.json and the games' PGNs")
    add_ray_argument(parser)
    parser.add_argument("--no-fail", action="store_true",
                        help="exit 0 when the candidate is not promoted too (for DVC)")  # fmt: skip
    parser.add_argument("--best-out", metavar="PATH",
                        help="copy the best net after this gate (the candidate if promoted, else --best) to PATH")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    check_gate_inputs(config, args.candidate, args.best)
    check_output_folder("--out", args.out)
    if args.best_out:
        check_output_folder("--best-out", str(Path(args.best_out).parent))
    return _gate(args, config)


def check_gate_inputs(config: Config, candidate: str, best: str | None) -> None:
    """The networks, the opening book and Stockfish, checked before any game
    is sent to Ray (each error names the file)."""
    from pipeline.checkpoint import load_net
    from pipeline.players.stockfish import find_stockfish

    load_net(candidate, device="cpu")
    if best is not None:
        load_net(best, device="cpu")
        if Path(candidate).resolve() == Path(best).resolve():
            raise UsageError(f"--candidate and --best are the same file: {candidate}")
    from pipeline.evaluation.match import load_book
    load_book(config.gating.book)
    if config.gating.ladder:
        find_stockfish(config.gating.stockfish_path)


def _gate(args: argparse.Namespace, config: Config) -> int:
    from rich.console import Console
    from rich.progress import Progress, TextColumn, TimeElapsedColumn

    from actors.evaluation import run_tournament
    from actors.runtime import init_ray
    from pipeline.evaluation.gating import run_gate

    init_ray(args.ray_address)
    with Progress(TextColumn("gate"), TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                  console=Console(stderr=True)) as progress:  # fmt: skip
        bar = progress.add_task("gate", status="starting")

        def on_pair(stage: str, report) -> None:  # noqa: ANN001
            pairing = next(iter(report.pairings.values()))
            sprt = f" LLR {report.sprt.llr:+.2f}" if report.sprt is not None else ""
            status = f"{stage}: +{pairing.wins} ={pairing.draws} -{pairing.losses}{sprt}"
            progress.update(bar, status=status)

        decision = run_gate(config, args.candidate, args.best, args.out, on_pair=on_pair, play=run_tournament)
    print(json.dumps(decision.as_dict(), indent=2, default=str))
    if args.best_out:
        winner = args.candidate if decision.promote or args.best is None else args.best
        _copy_best(winner, args.best_out)
    return EXIT_PROMOTED if decision.promote or args.no_fail else EXIT_REJECTED


def _copy_best(source: str, target: str) -> None:
    """Atomically copy the network file ``source`` to ``target``."""
    import shutil

    from pipeline.atomic import atomic_write

    with open(source, "rb") as reader, atomic_write(target) as writer:
        shutil.copyfileobj(reader, writer)
