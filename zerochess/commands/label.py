"""``zerochess label``: Stockfish MultiPV labels for positions, as train/held-out shards.

``--tablebases`` labels them from the native distance-to-mate tables instead
(pawnless endings with up to four pieces: exact results, the distance to mate
for the moves-left head, the fastest mates as the policy;
:mod:`pipeline.supervised.tablebase_labels`).

Positions come from an EPD/FEN file (``--positions``), from random play
(``--random N``) or from existing shards (``--shards DIR``, e.g. self-play).
pi is a softmax over Stockfish's MultiPV scores and the value target comes
from its evaluation: :mod:`pipeline.supervised.labelling` documents both.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import asdict, replace
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from zerochess.commands.checks import check_input_file, check_output_folder, require_at_least
from zerochess.commands.common import add_params_arguments, config_from_args

if TYPE_CHECKING:
    from pipeline.config import Config
    from pipeline.supervised.config import SupervisedConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--positions", metavar="FILE", help="EPD or FEN file, one position a line")
    source.add_argument("--random", type=int, metavar="N",
                        help="N positions reached by random moves from the start "
                             "(supervised.label_random_max_plies, seed supervised.label_seed)")
    source.add_argument("--shards", metavar="DIR", help="the positions of a shard folder")
    parser.add_argument("--tablebases", action="store_true",
                        help="label from the distance-to-mate tables (pawnless, up to four pieces; built into "
                             "train.tablebase_dir, else ~/.cache/zerochess/tablebases, on first use) instead of "
                             "Stockfish; positions no table holds are skipped (no-table)")
    parser.add_argument("--depth", type=int, help="Stockfish depth (supervised.label_depth)")
    parser.add_argument("--nodes", type=int, help="Stockfish nodes instead of a depth")
    parser.add_argument("--multipv", type=int, help="moves scored (supervised.label_multipv)")
    parser.add_argument("--out", default="runs/label",
                        help="output folder: OUT/train, OUT/heldout, OUT/label.json "
                             "(default runs/label)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the shards of an earlier run in OUT")


def _positions(args: argparse.Namespace, settings):
    from pipeline.supervised import labelling
    from pipeline.supervised.splits import SupervisedDataError

    if args.positions:
        if not os.path.isfile(args.positions):
            raise SupervisedDataError(f"--positions {args.positions!r}: no such file")
        return labelling.positions_from_file(args.positions), None
    if args.random is not None:
        if args.random < 1:
            raise ValueError(f"--random must be >= 1, got {args.random}")
        return labelling.random_positions(args.random, settings.label_seed,
                                          settings.label_random_max_plies), args.random
    if not os.path.isdir(args.shards):
        raise SupervisedDataError(f"--shards {args.shards!r}: no such folder")
    return labelling.positions_from_shards(args.shards), None


def _labeller(args: argparse.Namespace, config: Config, settings: SupervisedConfig):
    """Stockfish with ``settings``, or the tables with ``--tablebases``."""
    if not args.tablebases:
        from pipeline.supervised.labelling import StockfishLabeller

        return StockfishLabeller(settings)
    from pipeline.supervised.tablebase_labels import TablebaseLabeller

    return TablebaseLabeller(config.train.tablebase_location(), config.supervised.label_temperature_plies)


def run(args: argparse.Namespace) -> int:
    from pipeline.supervised.labelling import label_positions
    from pipeline.supervised.splits import prepare_output

    config = config_from_args(args)
    for option in ("depth", "nodes", "multipv"):
        require_at_least(f"--{option}", getattr(args, option))
    if args.positions:
        check_input_file("--positions", args.positions)
    settings = config.supervised
    if args.depth is not None:
        settings = replace(settings, label_depth=args.depth)
    if args.multipv is not None:
        settings = replace(settings, label_multipv=args.multipv)
    if args.nodes is not None:
        settings = replace(settings, label_nodes=args.nodes)
    if args.tablebases and any(getattr(args, name) is not None for name in ("depth", "nodes", "multipv")):
        raise ValueError("--tablebases takes no --depth, --nodes or --multipv (no Stockfish is run)")
    positions, total = _positions(args, settings)
    check_output_folder("--out", args.out)
    prepare_output(args.out, overwrite=args.overwrite)
    started = time.perf_counter()
    with _labeller(args, config, settings) as labeller, Progress(
        TextColumn("label"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(), console=Console(stderr=True),
    ) as progress:  # fmt: skip
        bar = progress.add_task("positions", total=total, status="")

        def on_position(report) -> None:
            rate = report.positions / max(time.perf_counter() - started, 1e-9)
            progress.update(bar, completed=report.positions, status=f"{rate:.1f} positions/s")

        report = label_positions(positions, labeller, args.out, settings,
                                 config.net.policy_encoding, on_position=on_position)
    print(json.dumps({"out": args.out, **asdict(report),
                      "positions_per_s": report.positions_per_s}, indent=2))
    return 1 if sum(report.labelled.values()) == 0 else 0
