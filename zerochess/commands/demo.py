"""``zerochess demo``: a few self-play games with PUCT search, printed as PGN.

With no checkpoint the network has random weights: the point is to show the
whole agent working (encoding, network, batched search) in seconds.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from zerochess.commands.common import add_params_arguments, config_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--checkpoint", help="network to play with (default: random weights)")


def run(args: argparse.Namespace) -> int:
    import torch
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from models.net import AlphaZeroNet, pick_device
    from models.net_evaluator import NetEvaluator
    from pipeline.checkpoint import load_net
    from pipeline.selfplay import SelfPlayWorker

    config = config_from_args(args)
    torch.manual_seed(config.selfplay.seed)
    device = pick_device(config.selfplay.device)
    net = load_net(args.checkpoint, device=device) if args.checkpoint else AlphaZeroNet(config.net).to(device)
    evaluator = NetEvaluator(net, precision=config.selfplay.precision, compile=config.selfplay.compile)
    demo = config.demo
    search = replace(config.search, num_simulations=demo.simulations)
    selfplay = replace(config.selfplay, max_plies=demo.max_plies, games_per_task=demo.games)
    worker = SelfPlayWorker(evaluator, search, selfplay)
    started = time.perf_counter()
    with Progress(
        TextColumn("self-play"), BarColumn(), TextColumn("{task.completed} moves"), TimeElapsedColumn(),
        console=Console(stderr=True),
    ) as progress:  # fmt: skip
        task = progress.add_task("moves", total=demo.games * demo.max_plies)
        records = worker.play(demo.games, seed=config.selfplay.seed, id_prefix="demo",
                              on_move=lambda: progress.advance(task))  # fmt: skip
    elapsed = time.perf_counter() - started
    for number, record in enumerate(records, 1):
        print(record.to_pgn({"Round": str(number)}), end="\n\n")
    stats = worker.stats
    print(
        f"{stats.games} games, {stats.positions} moves ({stats.full_searches} full searches), "
        f"{stats.evaluations} network evaluations in {stats.batches} batches "
        f"({stats.evaluations / max(stats.batches, 1):.1f} per batch), "
        f"{stats.evaluations / elapsed:.0f} evaluations/s on {device} ({evaluator.describe()})"
    )
    return 0
