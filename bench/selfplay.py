"""Self-play throughput against the raw network at the same batch size.

The full path is search + leaf encoding + batched inference + shard writing
(:class:`pipeline.selfplay.SelfPlayWorker`, then the Parquet shard).  The
baseline is the same network's forward pass alone, in the same run, at the
batch size the self-play actually reached.  Their ratio is the
"network-bound share": 1.0 would mean the search and bookkeeping cost nothing.
Beside it, the share of the wall time spent inside the network calls (a
figure that load from other processes moves less).

Each network (the default 6x64, ``NetConfig.preset("cpu")``, and the 2x32 of
``presets/cpu.yaml``) is measured on both search backends side by side: the
python reference (before) and the native core (after), with moves/s.
The last rows play through Ray with 1 actor x 2 threads and 2 actors x 1
thread (native backend).

Each evaluator setting of ``--variants`` (``PRECISION[:COMPILE]``: ``fp32``,
``auto``, ``bf16``, with ``eager``, ``jit`` or ``inductor``) is measured side by
side in the same run, the first as the baseline of the ratios; the raw
forward is the same evaluator's (its folded or compiled network at its
precision), so the share compares like with like.

    .venv/bin/python bench/selfplay.py [--games 64] [--plies 16] [--repeats 3] [--no-ray] [--overlap]
    .venv/bin/python bench/selfplay.py --backends native --variants fp32 auto fp32:jit --no-ray
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np
import torch

from models.net import AlphaZeroNet, NetConfig
from models.net_evaluator import NetEvaluator
from pipeline.config import Config, SelfPlayConfig, load_config
from pipeline.selfplay import SelfPlayWorker, game_positions
from pipeline.shards import records_to_table, write_shard
from models.policy import get_policy_map
from models.precision import cpu_bf16_support


def bench_config(
    games: int, plies: int, simulations: int, overlap: bool, backend: str = "native", net: NetConfig | None = None
) -> Config:
    base = Config()
    return replace(
        base,
        net=net or NetConfig.preset("cpu"),
        search=replace(base.search, num_simulations=simulations, backend=backend),
        selfplay=replace(
            SelfPlayConfig(),
            games_per_task=games,
            max_plies=plies,
            full_search_prob=1.0,
            resign_threshold=-1.0,
            overlap_inference=overlap,
        ),
    )


class TimedEvaluator:
    """A :class:`NetEvaluator` that adds up the seconds spent inside its calls."""

    def __init__(self, evaluator: NetEvaluator) -> None:
        self.inner = evaluator
        self.needs_planes = evaluator.needs_planes
        self.policy_encoding = evaluator.policy_encoding
        self.seconds = 0.0

    def evaluate(self, leaves):  # noqa: ANN001, ANN201
        started = time.perf_counter()
        try:
            return self.inner.evaluate(leaves)
        finally:
            self.seconds += time.perf_counter() - started

    def evaluate_batch(self, planes, rows, indices):  # noqa: ANN001, ANN201
        started = time.perf_counter()
        try:
            return self.inner.evaluate_batch(planes, rows, indices)
        finally:
            self.seconds += time.perf_counter() - started


def selfplay_rate(config: Config, inner: NetEvaluator, games: int, out: str) -> tuple[float, float, float, float]:
    """(network evaluations/s, positions written/s, mean batch, share of the
    wall time spent inside the network calls) of one task."""
    evaluator = TimedEvaluator(inner)
    worker = SelfPlayWorker(evaluator, config.search, config.selfplay)
    started = time.perf_counter()
    records = worker.play(games, seed=0, id_prefix="bench")
    rows = [row for record in records for row in game_positions(record, get_policy_map("az4672"), 0)]
    write_shard(records_to_table(rows), out, "bench")
    elapsed = time.perf_counter() - started
    stats = worker.stats
    return (stats.evaluations / elapsed, stats.positions / elapsed, stats.evaluations / stats.batches,
            evaluator.seconds / elapsed)  # fmt: skip


def inference_rate(evaluator: NetEvaluator, batch: int, seconds: float = 3.0) -> float:
    """Positions/s of the evaluator's forward alone (the uint8 planes cast to
    its input, its folded/compiled network, its precision) at ``batch``, run in
    a worker thread as self-play runs its network calls (on this 2-core
    machine, forward passes with 2 torch threads called from the main thread
    were measured ~20x slower than from a worker thread while other processes
    kept the cores busy)."""

    def run() -> float:
        planes = np.random.default_rng(0).integers(0, 2, (batch, 119, 8, 8), dtype=np.uint8)
        with torch.inference_mode():
            evaluator._forward(planes)
            count, started = 0, time.perf_counter()
            while time.perf_counter() - started < seconds:
                evaluator._forward(planes)
                count += batch
        return count / (time.perf_counter() - started)

    with ThreadPoolExecutor(max_workers=1) as executor:
        return executor.submit(run).result()


def ray_rate(config: Config, games: int, workers: int, threads: int) -> float:
    from actors.runtime import init_ray
    from actors.selfplay import run_selfplay

    init_ray(address="local", num_cpus=2)
    selfplay = replace(config.selfplay, workers=workers, threads_per_worker=threads,
                       games_per_task=max(1, games // workers))  # fmt: skip
    with tempfile.TemporaryDirectory() as out:
        report = run_selfplay(replace(config, selfplay=selfplay), out, games)
    return report.total("positions") / report.seconds


def measure_once(config: Config, evaluator: NetEvaluator, games: int, batch_guess: int, out: str) -> tuple[float, ...]:
    """(evaluations/s, moves/s, mean batch, raw positions/s, share, network busy) of one run."""
    # Inference measured just before and just after the self-play run, so
    # load from other processes drifts into both sides alike.
    before = inference_rate(evaluator, batch_guess)
    evals, positions, batch, busy = selfplay_rate(config, evaluator, games, out)
    raw = (before + inference_rate(evaluator, int(round(batch)))) / 2
    return evals, positions, batch, raw, evals / raw, busy


def parse_variant(text: str) -> tuple[str, str]:
    """``PRECISION[:COMPILE]`` (``auto``, ``fp32:jit``, ``bf16:inductor``); the
    compile mode defaults to ``auto`` for ``auto`` and to ``eager`` otherwise."""
    precision, _, compiled = text.partition(":")
    return precision, compiled or ("auto" if precision == "auto" else "eager")


def main() -> None:
    parser = argparse.ArgumentParser(description="self-play vs raw inference throughput")
    parser.add_argument("--games", type=int, default=64)
    parser.add_argument("--plies", type=int, default=16)
    parser.add_argument("--simulations", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=["python", "native"], choices=["python", "native"])
    parser.add_argument("--variants", nargs="+", default=["fp32"], metavar="PRECISION[:COMPILE]",
                        help="evaluator settings measured side by side, e.g. fp32 auto fp32:jit "
                             "(the first is the baseline of the ratios)")  # fmt: skip
    parser.add_argument("--nets", nargs="+", default=["6x64", "2x32"], choices=["6x64", "2x32"])
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--overlap", action="store_true", help="two lanes: network and search in parallel")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{args.games} games x {args.plies} plies, {args.simulations} simulations/move, "
          f"{args.threads} torch threads, overlap {args.overlap} (python backend; native: selfplay.overlap_inference or CUDA), "
          f"median of {args.repeats}; CPU: {cpu_name()}, native bf16: {cpu_bf16_support() or 'none'}")  # fmt: skip
    nets = {"6x64": ("6x64 (default)", NetConfig.preset("cpu")),
            "2x32": ("2x32 (presets/cpu.yaml)", load_config(None, preset="cpu").net)}  # fmt: skip
    with tempfile.TemporaryDirectory() as out:
        for key in args.nets:
            label, net_config = nets[key]
            torch.manual_seed(0)
            net = AlphaZeroNet(net_config).eval()
            print(f"\n{label} net")
            evaluators = {}
            for variant in args.variants:
                precision, compiled = parse_variant(variant)
                evaluators[variant] = NetEvaluator(net, precision=precision, compile=compiled)
                print(f"  {variant:<14} {evaluators[variant].describe()}")
            # Backends and variants take turns within each repeat, so drifting load hits all alike.
            runs: dict[tuple[str, str], list[tuple[float, ...]]] = {
                (backend, variant): [] for backend in args.backends for variant in args.variants}
            for _ in range(args.repeats):
                for (backend, variant), done in runs.items():
                    config = bench_config(args.games, args.plies, args.simulations, args.overlap, backend, net_config)
                    guess = round(done[-1][2]) if done else args.games * config.search.leaves_per_batch
                    done.append(measure_once(config, evaluators[variant], args.games, guess, out))
            report(runs)
    config = bench_config(args.games, args.plies, args.simulations, args.overlap)
    if not args.no_ray:
        one = statistics.median(ray_rate(config, args.games, 1, 2) for _ in range(args.repeats))
        two = statistics.median(ray_rate(config, args.games, 2, 1) for _ in range(args.repeats))
        print(f"{'Ray, 1 actor x 2 threads':<40} {one:>9,.1f} moves/s")
        print(f"{'Ray, 2 actors x 1 thread':<40} {two:>9,.1f} moves/s   x{two / one:.2f}")


def report(runs: dict[tuple[str, str], list[tuple[float, ...]]]) -> None:
    """Medians per (backend, variant), with ratios to the first row."""
    base_evals = base_moves = None
    for (backend, variant), done in runs.items():
        evals, positions, batch, raw, share, busy = (statistics.median(column) for column in zip(*done))
        base_evals, base_moves = base_evals or evals, base_moves or positions
        name = f"{backend} {variant}"
        print(f"  {name:<22} raw forward at batch {round(batch):<5} {raw:>9,.0f} positions/s")
        print(f"  {name:<22} self-play {evals:>9,.0f} evaluations/s (x{evals / base_evals:.2f})  "
              f"{positions:,.1f} moves/s (x{positions / base_moves:.2f})")  # fmt: skip
        print(f"  {name:<22} network-bound share {share:.2f}   (wall time inside the network calls: {busy:.2f})")


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``), for the figures' record."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


if __name__ == "__main__":
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    main()
