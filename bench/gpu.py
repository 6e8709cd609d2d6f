"""GPU throughput: the raw forward pass against self-play through the native core.

Two figures for one network, in the same run:

1. the raw forward throughput (positions/s) at batch 256 .. 8192, in float32
   and under bf16 autocast, channels-last, optionally replayed as a CUDA graph
   (``--cuda-graphs``) or compiled (``--compile``: minutes of compiling, so off
   by default);
2. self-play evaluations/s of the same network through
   :class:`models.native_search.SelfPlayDriver` (the native backend of
   :class:`pipeline.selfplay.SelfPlayWorker`) with ``--games`` in flight on
   ``--search-threads`` C++ threads, and its ratio to (1) at the batch size
   the self-play reached (the network-bound share: 1.0 = the search costs
   nothing next to the network).

On a machine without CUDA the GPU figures are unmeasured: the script says so
and runs a tiny CPU smoke version of the same code (so the script is tested).

    .venv/bin/python bench/gpu.py [--net gpu] [--games 2048] [--search-threads 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import torch

from models.net import AlphaZeroNet, NetConfig
from models.net_evaluator import NetEvaluator
from models.search_config import SearchConfig
from pipeline.config import SelfPlayConfig, load_config

BATCHES = (256, 512, 1024, 2048, 4096, 8192)


def net_config(name: str) -> NetConfig:
    """The network of a preset of ``presets/`` (tiny, cpu, gpu, cluster)."""
    return load_config(None, preset=name).net


def forward_fn(net: AlphaZeroNet, batch: int, dtype: torch.dtype | None, graphs: bool) -> Callable[[], None]:
    """One forward pass of a fixed random batch (as a CUDA graph replay when ``graphs``)."""
    device = next(net.parameters()).device
    planes = torch.randint(0, 2, (batch, 119, 8, 8), dtype=torch.uint8, device=device)
    planes = planes.contiguous(memory_format=torch.channels_last)

    def forward() -> None:
        # No autocast weight cache: a CUDA graph must not capture its first-call casts.
        with torch.inference_mode(), torch.autocast(device.type, dtype=dtype or torch.float32,
                                                    enabled=dtype is not None, cache_enabled=False):  # fmt: skip
            net(planes)

    if not graphs:
        return forward
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            forward()  # warm-up on a side stream before capture
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        forward()
    return graph.replay


def forward_rate(run: Callable[[], None], batch: int, seconds: float, cuda: bool) -> float:
    """Positions/s of ``run`` over about ``seconds``, in a worker thread as
    self-play makes its network calls (see bench/selfplay.py's inference_rate)."""

    def measure() -> float:
        run()
        if cuda:
            torch.cuda.synchronize()
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            run()
            count += batch
        if cuda:
            torch.cuda.synchronize()
        return count / (time.perf_counter() - started)

    with ThreadPoolExecutor(max_workers=1) as executor:
        return executor.submit(measure).result()


def selfplay_rate(net: AlphaZeroNet, args: argparse.Namespace, autocast: str | None) -> tuple[float, float, float]:
    """(evaluations/s, moves/s, mean batch) of native self-play with ``net``."""
    from pipeline.selfplay import SelfPlayWorker

    search = SearchConfig(num_simulations=args.simulations, leaves_per_batch=args.leaves_per_batch, backend="native")
    selfplay = replace(
        SelfPlayConfig(),
        games_per_task=args.games,
        max_plies=args.plies,
        full_search_prob=1.0,
        resign_threshold=-1.0,
        search_threads=args.search_threads,
    )
    worker = SelfPlayWorker(NetEvaluator(net, precision="auto", autocast=autocast), search, selfplay)
    started = time.perf_counter()
    worker.play(args.games, seed=0, id_prefix="gpu")
    elapsed = time.perf_counter() - started
    stats = worker.stats
    return stats.evaluations / elapsed, stats.positions / elapsed, stats.evaluations / max(stats.batches, 1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="raw forward vs native self-play throughput on a GPU")
    parser.add_argument("--net", default="gpu", help="preset whose network is measured (default gpu: 10x128 SE)")
    parser.add_argument("--games", type=int, default=2048, help="self-play games in flight")
    parser.add_argument("--plies", type=int, default=8, help="plies per self-play game")
    parser.add_argument("--simulations", type=int, default=64)
    parser.add_argument("--leaves-per-batch", type=int, default=8)
    parser.add_argument("--search-threads", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per forward figure")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cuda-graphs", action="store_true", help="also replay the forward as a CUDA graph")
    parser.add_argument("--compile", action="store_true", help="also measure torch.compile (slow to compile)")
    parser.add_argument("--smoke", action="store_true", help="the CPU smoke version even when CUDA is present")
    args = parser.parse_args(argv)
    cuda = torch.cuda.is_available() and not args.smoke
    if not cuda:
        print("CUDA: not available here, GPU figures unmeasured; running the tiny CPU smoke version")
        args.net, args.games, args.plies, args.simulations = "tiny", 8, 2, 8
        args.search_threads, args.seconds, args.repeats = 1, 0.2, 1
        batches: tuple[int, ...] = (8, 32)
        dtypes: dict[str, torch.dtype | None] = {"fp32": None}
    else:
        batches = BATCHES
        dtypes = {"fp32": None, "bf16": torch.bfloat16}
        # No cudnn.benchmark: it re-tunes for every new input shape, and each
        # self-play batch has its own size (on an H200 it cut self-play from
        # 122k to 38k evaluations/s); self-play never turns it on either.
        torch.backends.cudnn.benchmark = False
    device = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(0)
    config = net_config(args.net)
    net = AlphaZeroNet(config).to(device).eval().to(memory_format=torch.channels_last)
    print(f"net {config.blocks}x{config.filters} (preset {args.net}) on {device}, median of {args.repeats}")

    raw: dict[tuple[str, int], float] = {}
    for name, dtype in dtypes.items():
        variants: dict[str, Callable[[int], Callable[[], None]]] = {
            "": lambda b, d=dtype: forward_fn(net, b, d, graphs=False),
        }
        if cuda and args.cuda_graphs:
            variants[" cuda-graph"] = lambda b, d=dtype: forward_fn(net, b, d, graphs=True)
        if args.compile:
            compiled = torch.compile(net, mode="max-autotune-no-cudagraphs", dynamic=False)
            variants[" compiled"] = lambda b, d=dtype: forward_fn(compiled, b, d, graphs=False)  # type: ignore[arg-type]
        for label, make in variants.items():
            for batch in batches:
                run = make(batch)
                rate = statistics.median(forward_rate(run, batch, args.seconds, cuda) for _ in range(args.repeats))
                if not label:
                    raw[(name, batch)] = rate
                print(f"forward {name}{label:<12} batch {batch:>5} {rate:>12,.0f} positions/s")
                if cuda:
                    torch.cuda.empty_cache()

    precision = "bf16" if cuda else "fp32"
    runs = [selfplay_rate(net, args, "bf16" if cuda else None) for _ in range(args.repeats)]
    evals, moves, batch = (statistics.median(column) for column in zip(*runs))
    nearest = min(batches, key=lambda b: abs(np.log(b) - np.log(max(batch, 1.0))))
    reached = forward_rate(forward_fn(net, max(1, round(batch)), dtypes[precision] if cuda else None, False),
                           max(1, round(batch)), args.seconds, cuda)  # fmt: skip
    print(f"self-play (native, {args.search_threads} threads, {args.games} games in flight, {precision}): "
          f"{evals:,.0f} evaluations/s, {moves:,.1f} moves/s, mean batch {batch:.0f}")  # fmt: skip
    print(f"raw forward {precision} at the reached batch {round(batch)}: {reached:,.0f} positions/s "
          f"(table row at batch {nearest}: {raw[(precision, nearest)]:,.0f})")  # fmt: skip
    print(f"network-bound share (self-play evaluations/s / raw forward): {evals / reached:.2f}")


if __name__ == "__main__":
    main()
