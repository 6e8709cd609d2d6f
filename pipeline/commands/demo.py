"""``zerochess demo``: a few self-play games with PUCT search, printed as PGN.

With no checkpoint the network has random weights: the point is to show the
whole agent working (encoding, network, batched search) in seconds.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
import torch
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from models.net_evaluator import NetEvaluator
from models.net import AlphaZeroNet, pick_device
from pipeline.checkpoint import load_net
from pipeline.commands.common import add_params_arguments, config_from_args
from pipeline.selfplay import play_games


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--checkpoint", help="network to play with (default: random weights)")


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    torch.manual_seed(config.selfplay.seed)
    device = pick_device(config.selfplay.device)
    if args.checkpoint:
        net = load_net(args.checkpoint, device=device)
    else:
        net = AlphaZeroNet(config.net).to(device)
    evaluator = NetEvaluator(net)
    search = replace(config.search, num_simulations=config.demo.simulations)
    rng = np.random.default_rng(config.selfplay.seed)
    total = config.demo.games * config.demo.max_plies
    started = time.perf_counter()
    with Progress(
        TextColumn("self-play"), BarColumn(), MofNCompleteColumn(), TextColumn("moves"), TimeElapsedColumn(),
        console=Console(stderr=True),
    ) as progress:
        task = progress.add_task("moves", total=total)
        records = play_games(
            evaluator,
            search,
            games=config.demo.games,
            max_plies=config.demo.max_plies,
            rng=rng,
            on_ply=lambda moves: progress.advance(task, moves),
        )
    elapsed = time.perf_counter() - started
    for number, record in enumerate(records, 1):
        print(record.to_pgn({"Round": str(number)}), end="\n\n")
    plies = sum(len(record.plies) for record in records)
    print(
        f"{len(records)} games, {plies} moves, {evaluator.positions} network evaluations "
        f"in {evaluator.calls} batches ({evaluator.positions / max(evaluator.calls, 1):.1f} per batch), "
        f"{plies * search.num_simulations / elapsed:.0f} simulations/s on {device}"
    )
    return 0
