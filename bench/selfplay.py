"""Self-play throughput against the raw network at the same batch size.

The full path is search + leaf encoding + batched inference + shard writing
(:class:`pipeline.selfplay.SelfPlayWorker`, then the Parquet shard).  The
baseline is the same network's forward pass alone, in the same run, at the
batch size the self-play actually reached.  Their ratio is the
"network-bound share": 1.0 would mean the search and bookkeeping cost nothing.
The last rows play through Ray with 1 actor x 2 threads and 2 actors x 1 thread.

    .venv/bin/python bench/selfplay.py [--games 64] [--plies 16] [--repeats 3] [--no-ray] [--overlap]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import replace

import numpy as np
import torch

from models.net import AlphaZeroNet, NetConfig
from models.net_evaluator import NetEvaluator
from pipeline.config import Config, SelfPlayConfig
from pipeline.selfplay import SelfPlayWorker, game_positions
from pipeline.shards import records_to_table, write_shard
from models.policy import get_policy_map


def bench_config(games: int, plies: int, simulations: int, overlap: bool) -> Config:
    base = Config()
    return replace(
        base,
        net=NetConfig.preset("cpu"),
        search=replace(base.search, num_simulations=simulations),
        selfplay=replace(
            SelfPlayConfig(),
            games_per_task=games,
            max_plies=plies,
            full_search_prob=1.0,
            resign_threshold=-1.0,
            overlap_inference=overlap,
        ),
    )


def selfplay_rate(config: Config, net: AlphaZeroNet, games: int, out: str) -> tuple[float, float, float]:
    """(network evaluations/s, positions written/s, mean batch) of one task."""
    evaluator = NetEvaluator(net)
    worker = SelfPlayWorker(evaluator, config.search, config.selfplay)
    started = time.perf_counter()
    records = worker.play(games, seed=0, id_prefix="bench")
    rows = [row for record in records for row in game_positions(record, get_policy_map("az4672"), 0)]
    write_shard(records_to_table(rows), out, "bench")
    elapsed = time.perf_counter() - started
    stats = worker.stats
    return stats.evaluations / elapsed, stats.positions / elapsed, stats.evaluations / stats.batches


def inference_rate(net: AlphaZeroNet, batch: int, seconds: float = 3.0) -> float:
    planes = torch.from_numpy(np.random.default_rng(0).integers(0, 2, (batch, 119, 8, 8), dtype=np.uint8))
    planes = planes.contiguous(memory_format=torch.channels_last)
    with torch.inference_mode():
        net(planes)
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            net(planes)
            count += batch
    return count / (time.perf_counter() - started)


def ray_rate(config: Config, games: int, workers: int, threads: int) -> float:
    from actors.selfplay import init_ray, run_selfplay

    init_ray(address="local", num_cpus=2)
    selfplay = replace(config.selfplay, workers=workers, threads_per_worker=threads,
                       games_per_task=max(1, games // workers))  # fmt: skip
    with tempfile.TemporaryDirectory() as out:
        report = run_selfplay(replace(config, selfplay=selfplay), out, games)
    return report.total("positions") / report.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description="self-play vs raw inference throughput")
    parser.add_argument("--games", type=int, default=64)
    parser.add_argument("--plies", type=int, default=16)
    parser.add_argument("--simulations", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--overlap", action="store_true", help="two lanes: network and search in parallel")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    config = bench_config(args.games, args.plies, args.simulations, args.overlap)
    torch.manual_seed(0)
    net = AlphaZeroNet(config.net).eval().to(memory_format=torch.channels_last)
    runs = []
    with tempfile.TemporaryDirectory() as out:
        batch_guess = args.games * config.search.leaves_per_batch
        for _ in range(args.repeats):
            # Inference measured just before and just after each self-play
            # run, so load from other processes drifts into both sides alike.
            before = inference_rate(net, batch_guess)
            evals, positions, batch = selfplay_rate(config, net, args.games, out)
            batch_guess = int(round(batch))
            raw = (before + inference_rate(net, batch_guess)) / 2
            runs.append((evals, positions, batch, raw, evals / raw))
    evals, positions, batch, raw, share = (statistics.median(column) for column in zip(*runs))
    print(f"6x64 net, {args.games} games x {args.plies} plies, {args.simulations} simulations/move, "
          f"{args.threads} threads, overlap {args.overlap}, median of {args.repeats}")  # fmt: skip
    print(f"{'raw inference at batch ' + str(round(batch)):<40} {raw:>9,.0f} positions/s")
    print(f"{'self-play (search+encode+net+shard)':<40} {evals:>9,.0f} evaluations/s  "
          f"{positions:,.1f} moves/s")  # fmt: skip
    print(f"{'network-bound share':<40} {share:>9.2f}")
    if not args.no_ray:
        one = statistics.median(ray_rate(config, args.games, 1, 2) for _ in range(args.repeats))
        two = statistics.median(ray_rate(config, args.games, 2, 1) for _ in range(args.repeats))
        print(f"{'Ray, 1 actor x 2 threads':<40} {one:>9,.1f} moves/s")
        print(f"{'Ray, 2 actors x 1 thread':<40} {two:>9,.1f} moves/s   x{two / one:.2f}")


if __name__ == "__main__":
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    main()
