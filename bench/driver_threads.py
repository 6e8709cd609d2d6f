"""How the native self-play driver scales with its C++ threads, the network
taken out: a free evaluator (zero logits, zero values) answers every batch,
so what is left is the search, the rules, the encoding and the driver's own
steps.  For each thread count it prints evaluations/s, the ratio to one
thread, and where the wall time went: ``step`` (the core's lane step, GIL
released), ``batch`` (copying the planes, rows and indices out),
``results`` (handing the evaluation back) and ``finished`` (taking the
finished games into Python).  The evaluation itself is free, so these four
add up to the wall time.  The core's own timers split ``step`` into
``deliver``, ``play``, ``refill`` (ending and starting games), ``collect``,
``cache`` (the cache's writes and touches, in game order on one thread) and
``gather`` (a core built before those timers shows ``nan`` there).

    python bench/driver_threads.py --threads 1,2,4,8,16 --games 2048

On a 2-core machine use ``--threads 1,2``.  Medians of ``--repeats`` runs.
The core measured is the one ``models`` imports (its file is printed): to
compare two builds, point ``PYTHONPATH`` at each checkout in turn.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from common import number_list  # bench/, this script's folder
from models import _native
from models.driver_settings import NO_ADJUDICATION, GamesSettings
from models.native_drivers import native_config
from models.search_config import SearchConfig

PHASES = ("step", "batch", "results", "finished")
# The core's own timers of step()'s parts (DriverStats), as shares of the wall.
STEP_PARTS = ("deliver", "play", "refill", "collect", "cache", "gather")


def free_evaluation(batch: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Zero logits for every listed move and a zero value for every leaf."""
    planes, rows, _ = batch
    return np.zeros(len(rows), dtype=np.float32), np.zeros(len(planes), dtype=np.float32)


def run_once(args: argparse.Namespace, threads: int) -> dict[str, float]:
    """One driver run: evaluations/s, mean batch, and each phase's seconds."""
    search = SearchConfig(num_simulations=args.simulations, leaves_per_batch=args.leaves_per_batch, backend="native")
    games = GamesSettings(games=args.games, games_in_flight=args.games, seed=0, max_plies=args.plies,
                          threads=threads)  # fmt: skip
    core = _native.SelfPlayCore(native_config(games, (search,), NO_ADJUDICATION))
    seconds = dict.fromkeys(PHASES, 0.0)
    pending: list[tuple | None] = [None] * core.lanes

    def timed(phase: str, call, *call_args):  # noqa: ANN001, ANN202
        begun = time.perf_counter()
        value = call(*call_args)
        seconds[phase] += time.perf_counter() - begun
        return value

    started = time.perf_counter()
    while not (core.done() and all(item is None for item in pending)):
        for lane in range(core.lanes):
            item, pending[lane] = pending[lane], None
            if item is not None:
                timed("results", core.set_results, lane, item)
            if timed("step", core.step, lane):
                pending[lane] = free_evaluation(timed("batch", core.batch, lane))
            timed("finished", core.take_finished)
    wall = time.perf_counter() - started
    stats = core.stats()
    return {"evals": stats["evaluations"] / wall, "mean_batch": stats["evaluations"] / max(stats["batches"], 1),
            "wall": wall, **{phase: seconds[phase] / wall for phase in PHASES},
            **{part: stats.get(f"{part}_seconds", np.nan) / wall for part in STEP_PARTS}}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="native self-play driver scaling over C++ threads, free evaluator")
    parser.add_argument("--threads", type=number_list(int, 1), default="1,2",
                        help="thread counts, comma-separated (default 1,2)")
    parser.add_argument("--games", type=int, default=512, help="games, all in flight (two lanes)")
    parser.add_argument("--plies", type=int, default=8, help="plies per game")
    parser.add_argument("--simulations", type=int, default=64)
    parser.add_argument("--leaves-per-batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    counts = args.threads
    if args.games < 1 or args.repeats < 1:
        parser.error("--games and --repeats must be >= 1")
    print(f"{args.games} games in flight, {args.plies} plies, {args.simulations} simulations, "
          f"{args.leaves_per_batch} leaves a batch, free evaluator, median of {args.repeats}")  # fmt: skip
    print(f"core: {_native.__file__}")
    columns = (*PHASES, *STEP_PARTS)
    print("shares of the wall time; step's parts (the core's timers) are inside step")
    print(f"{'threads':>7} {'evals/s':>10} {'x 1st':>6} {'batch':>6} " + " ".join(f"{p:>8}" for p in columns))
    first = None
    for threads in counts:
        runs = [run_once(args, threads) for _ in range(args.repeats)]
        row = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        first = first or row["evals"]
        shares = " ".join(f"{row[p]:>8.1%}" for p in columns)
        print(f"{threads:>7} {row['evals']:>10,.0f} {row['evals'] / first:>6.2f} {row['mean_batch']:>6.0f} {shares}")


if __name__ == "__main__":
    main()
