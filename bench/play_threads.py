"""How many torch threads ``zerochess play`` and ``uci`` should use: the time
of the net's first move and of its next moves with 1 and with 2 threads.

Each trial is a fresh process, as a user's ``zerochess play`` is: it loads the
net of ``params.yaml`` (random weights: the speed does not depend on them),
warms it up as ``play`` does, then times the net's first ``--moves`` moves of
a game against itself from the standard position at ``--simulations``.  The
two thread counts alternate within each round, and ``--busy K`` keeps K
processes spinning meanwhile, as on a machine that also runs a test suite or
a training run.  It prints the medians side by side with their ratio.

    .venv/bin/python bench/play_threads.py --rounds 5
    .venv/bin/python bench/play_threads.py --rounds 5 --busy 1
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

THREADS = (1, 2)


def spin(stop_at: float) -> None:
    """Keep one core busy until ``stop_at`` (``time.time()``)."""
    count = 0
    while time.time() < stop_at:
        count += 1


def child(threads: int, simulations: int, moves: int) -> dict[str, float]:
    """One trial in this process: seconds of the first move and the median of the rest."""
    import chess
    import torch

    from pipeline.config import load_config
    from pipeline.play import warm_up
    from pipeline.uci.loading import load_player
    from pipeline.uci.player import NetPlayer, SearchControl

    config = load_config("params.yaml" if Path("params.yaml").is_file() else None, [])
    loaded = load_player(config, checkpoint=None, seed=0)
    torch.set_num_threads(threads)
    player = NetPlayer(loaded.evaluator, config.search, seed=0)
    board = chess.Board()
    player.set_position(board)
    warm_up(player.evaluator, config.search.leaves_per_batch)
    times = []
    for _ in range(moves):
        start = time.perf_counter()
        report = player.search(SearchControl(nodes=simulations))
        times.append(time.perf_counter() - start)
        board.push(report.best_move)
        player.set_position(board)
    return {"first_s": times[0], "next_s": statistics.median(times[1:]) if len(times) > 1 else times[0]}


def trial(threads: int, args: argparse.Namespace) -> dict[str, float]:
    command = [sys.executable, __file__, "--child", str(threads),
               "--simulations", str(args.simulations), "--moves", str(args.moves)]  # fmt: skip
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(args: argparse.Namespace) -> dict[int, list[dict[str, float]]]:
    results: dict[int, list[dict[str, float]]] = {count: [] for count in THREADS}
    spinners = [multiprocessing.Process(target=spin, args=(time.time() + 3600,), daemon=True)
                for _ in range(args.busy)]  # fmt: skip
    for process in spinners:
        process.start()
    try:
        for round_index in range(args.rounds):
            order = THREADS if round_index % 2 == 0 else tuple(reversed(THREADS))
            for count in order:
                results[count].append(trial(count, args))
    finally:
        for process in spinners:
            process.terminate()
    return results


def report(results: dict[int, list[dict[str, float]]], args: argparse.Namespace) -> None:
    print(f"cpu: {os.cpu_count()} logical cores; busy spinners: {args.busy}; {args.rounds} rounds; "
          f"{args.simulations} simulations a move; params.yaml's net")  # fmt: skip
    medians = {count: {key: statistics.median(row[key] for row in rows) for key in ("first_s", "next_s")}
               for count, rows in results.items()}  # fmt: skip
    print(f"{'threads':>8} {'first move s':>13} {'next moves s':>13}")
    for count, row in medians.items():
        print(f"{count:>8} {row['first_s']:>13.3f} {row['next_s']:>13.3f}")
    one, two = medians[1], medians[2]
    print(f"ratio 2/1: first {two['first_s'] / one['first_s']:.2f}, next {two['next_s'] / one['next_s']:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--simulations", type=int, default=200)
    parser.add_argument("--moves", type=int, default=4)
    parser.add_argument("--busy", type=int, default=0, help="spinning processes during the trials")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rounds < 1 or args.moves < 1 or args.simulations < 1 or args.busy < 0:
        parser.error("--rounds, --moves and --simulations must be >= 1, --busy >= 0")
    if args.child is not None:
        print(json.dumps(child(args.child, args.simulations, args.moves)))
        return
    report(measure(args), args)


if __name__ == "__main__":
    main()
