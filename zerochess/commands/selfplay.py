"""``zerochess selfplay``: self-play games on Ray actors, written as Parquet shards."""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING

from zerochess.commands.checks import check_output_folder, is_uri, require_at_least
from zerochess.commands.common import add_params_arguments, add_ray_argument, config_from_args

if TYPE_CHECKING:
    from models.net import AlphaZeroNet
    from pipeline.config import Config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--games", type=int, required=True, help="games to play")
    parser.add_argument("--out", required=True, help="shard folder or pyarrow filesystem URI (s3://...)")
    parser.add_argument("--checkpoint", help="network (default: random weights seeded by selfplay.seed)")
    parser.add_argument("--generation", type=int, default=0, help="network generation stored in the shards")
    add_ray_argument(parser)


def run(args: argparse.Namespace) -> int:
    from pipeline.checkpoint import load_net

    config = config_from_args(args)
    require_at_least("--games", args.games)
    require_at_least("--generation", args.generation, 0)
    net = load_net(args.checkpoint) if args.checkpoint else None
    if not is_uri(args.out):
        check_output_folder("--out", args.out)
    if config.selfplay.start_positions:
        from pipeline.selfplay import load_start_positions

        load_start_positions(config.selfplay.start_positions)
    return _play(args, config, net)


def _play(args: argparse.Namespace, config: Config, net: AlphaZeroNet | None) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from actors.runtime import init_ray
    from actors.selfplay import run_selfplay

    init_ray(args.ray_address)
    started = time.perf_counter()
    totals = {"games": 0, "positions": 0, "plies": 0, "resigned": 0}
    console = Console(stderr=True)
    with Progress(
        TextColumn("self-play"), BarColumn(), MofNCompleteColumn(), TextColumn("tasks"),
        TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console,
    ) as progress:  # fmt: skip
        tasks = -(-args.games // config.selfplay.games_per_task)
        bar = progress.add_task("tasks", total=tasks, status="")

        def on_task(summary: dict) -> None:
            for key in totals:
                totals[key] += summary[key]
            elapsed = time.perf_counter() - started
            progress.update(
                bar,
                advance=1,
                status=(
                    f"{totals['games']} games  {totals['positions'] / elapsed:.0f} positions/s  "
                    f"mean length {totals['plies'] / max(totals['games'], 1):.0f}  "
                    f"resign {totals['resigned'] / max(totals['games'], 1):.0%}"
                ),
            )

        report = run_selfplay(config, args.out, args.games, net=net, generation=args.generation, on_task=on_task)
        progress.update(bar, completed=tasks)
    summary = report.summary()
    print(json.dumps({"out": args.out, **summary}, indent=2))
    return 0
