"""The ``zerochess`` command line (also ``python -m pipeline``).

Each subcommand lives in a module of :mod:`pipeline.commands` with
``add_arguments(parser)`` and ``run(args) -> int``; commands that need Ray
import it inside ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

# name -> (module under pipeline.commands, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("run", "the whole loop: self-play -> training -> gating, generation after generation (resumable)"),
    "demo": ("demo", "play a few self-play games with PUCT search and print them as PGN"),
    "analyse": ("analyse", "search one position (FEN) and print the moves' visits, priors and values"),
    "selfplay": ("selfplay", "play self-play games on Ray actors and write (s, pi, z) Parquet shards"),
    "evaluate": ("evaluate", "play a match or round-robin between players (net, stockfish, uct, random) on Ray"),
    "gate": ("gate", "play a candidate net against the best and a Stockfish ladder; promote on SPRT evidence"),
    "train": ("train", "train the network on a window of shards (Lightning), log to MLflow, export net.pt"),
    "pgn2shards": ("pgn2shards", "convert PGN games (plain, .gz, .bz2, .zst) into train/held-out shards"),
    "label": ("label", "label positions with Stockfish MultiPV into train/held-out shards"),
    "pretrain": ("pretrain", "train on supervised shards, report held-out top-1/top-5 move accuracy"),
    "params": ("params", "validate params.yaml (plus --set overrides) and print the flattened config"),
    "stage": ("stage", "steps of the DVC pipeline (dvc.yaml): initial net, self-play, window, report"),
    "uci": ("uci", "run the network as a UCI engine on stdin/stdout (for GUIs and cutechess-cli)"),
    "play": ("play", "play a game against the network in the terminal"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="zerochess",
        description="AlphaZero for chess: self-play with PUCT search, training and evaluation.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        _command_module(module).add_arguments(command)
    return parser


def _command_module(module: str):  # noqa: ANN202 - a module object
    return importlib.import_module(f"pipeline.commands.{module}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Lightning prints its records through its own handler: not a second time through ours.
    logging.getLogger("lightning").propagate = False
    module = _command_module(COMMANDS[args.command][0])
    try:
        return int(module.run(args))
    except ValueError as error:
        # Domain errors carry their context (file, key, FEN): show it plainly.
        print(f"zerochess {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
