"""Simulations per second of zerochess's PUCT search against OpenSpiel's MCTSBot.

All run on the same fixed positions with a dummy evaluator (uniform priors,
value 0), so the figure is the cost of the search itself: tree policy, move
generation, expansion and backup.  Rows:

* OpenSpiel's MCTSBot (Python search over OpenSpiel's C++ chess), when
  ``pip install -e '.[bench]'`` could install it;
* zerochess's python reference search, without and with encoding every leaf
  into the 119 input planes (what a network would need);
* zerochess's native core (``NativeTree`` + ``run_native_searches``, one
  thread), which always encodes every leaf and hands the batch to
  ``UniformEvaluator.evaluate_batch``.

A second table plays self-play games through ``SelfPlayDriver`` (native core,
uniform evaluator) on 1 and 2 C++ threads, and prints the scaling ratio.

    .venv/bin/pip install -e '.[bench]'   # OpenSpiel (optional)
    .venv/bin/python bench/search.py [--simulations 800] [--repeats 5] [--games 32]

Each figure is the median over ``--repeats`` runs of the total simulations
divided by the total time over all positions.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import chess
import numpy as np

from models.evaluation import UniformEvaluator
from models.search_config import SearchConfig
from models.search_drivers import run_search

POSITIONS = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "r1bq1rk1/ppp2ppp/2np1n2/2b1p3/2B1P3/2PP1N2/PP3PPP/RNBQ1RK1 w - - 0 7",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",
]


def zerochess_runner(simulations: int, encode: bool, leaves_per_batch: int) -> Callable[[str], None]:
    config = SearchConfig(num_simulations=simulations, leaves_per_batch=leaves_per_batch, backend="python")

    def run(fen: str) -> None:
        result = run_search(chess.Board(fen), UniformEvaluator(encode=encode), config)
        assert int(result.visits.sum()) == simulations

    return run


def native_runner(simulations: int, leaves_per_batch: int) -> Callable[[str], None]:
    """The native core on one position: one tree, one thread, leaf encoding included."""
    from models.native_tree import NativeCache, NativeTree, run_native_searches

    config = SearchConfig(num_simulations=simulations, leaves_per_batch=leaves_per_batch, backend="native")

    def run(fen: str) -> None:
        tree = NativeTree(chess.Board(fen), config, cache=NativeCache(config.cache_size))
        tree.start()
        run_native_searches([tree], UniformEvaluator())
        assert int(tree.result().visits.sum()) == simulations

    return run


def driver_rate(threads: int, games: int, simulations: int, plies: int) -> tuple[float, float]:
    """(simulations/s, moves/s) of native self-play on ``threads`` C++ threads."""
    from models.driver_settings import NO_ADJUDICATION, GamesSettings
    from models.native_drivers import SelfPlayDriver

    config = SearchConfig(num_simulations=simulations, backend="native")
    settings = GamesSettings(games=games, games_in_flight=games, seed=0, max_plies=plies, threads=threads)
    driver = SelfPlayDriver(config, settings, NO_ADJUDICATION)
    started = time.perf_counter()
    played = driver.play(UniformEvaluator())
    elapsed = time.perf_counter() - started
    moves = sum(len(game.moves) for game in played)
    return moves * simulations / elapsed, moves / elapsed


def openspiel_runner(simulations: int) -> Callable[[str], None] | None:
    try:
        import pyspiel
        from open_spiel.python.algorithms import mcts
    except ImportError:
        return None

    class DummyEvaluator(mcts.Evaluator):
        def evaluate(self, state):  # noqa: ANN001, ANN202
            return np.zeros(2)

        def prior(self, state):  # noqa: ANN001, ANN202
            actions = state.legal_actions()
            return [(action, 1.0 / len(actions)) for action in actions]

    game = pyspiel.load_game("chess")
    bot = mcts.MCTSBot(
        game,
        uct_c=2.0,
        max_simulations=simulations,
        evaluator=DummyEvaluator(),
        solve=False,
        random_state=np.random.RandomState(0),
    )

    def run(fen: str) -> None:
        root = bot.mcts_search(game.new_initial_state(fen))
        assert root.explore_count == simulations

    return run


def measure(run: Callable[[str], None], simulations: int, repeats: int) -> float:
    rates = []
    for _ in range(repeats):
        started = time.perf_counter()
        for fen in POSITIONS:
            run(fen)
        rates.append(simulations * len(POSITIONS) / (time.perf_counter() - started))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=800)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--games", type=int, default=32, help="self-play games of the thread-scaling table")
    parser.add_argument("--plies", type=int, default=8, help="plies per game of that table")
    args = parser.parse_args()

    runners: dict[str, Callable[[str], None] | None] = {
        "openspiel MCTSBot (python, C++ chess)": openspiel_runner(args.simulations),
        "zerochess PUCT, batch 1": zerochess_runner(args.simulations, False, 1),
        "zerochess PUCT, batch 8": zerochess_runner(args.simulations, False, 8),
        "zerochess PUCT + leaf encoding, batch 8": zerochess_runner(args.simulations, True, 8),
        "zerochess native + leaf encoding, batch 1": native_runner(args.simulations, 1),
        "zerochess native + leaf encoding, batch 8": native_runner(args.simulations, 8),
    }
    print(f"{len(POSITIONS)} positions x {args.simulations} simulations, median of {args.repeats} runs")
    baseline = None
    for name, run in runners.items():
        if run is None:
            print(f"{name:<42} skipped (pip install -e '.[bench]')")
            continue
        rate = measure(run, args.simulations, args.repeats)
        baseline = baseline or rate
        print(f"{name:<42} {rate:>9,.0f} sims/s   x{rate / baseline:.2f} of the first row")

    print(f"\nnative self-play (SelfPlayDriver, uniform evaluator): {args.games} games x {args.plies} plies "
          f"x {args.simulations} simulations, median of {args.repeats}")  # fmt: skip
    rates = {}
    for threads in (1, 2):
        runs = [driver_rate(threads, args.games, args.simulations, args.plies) for _ in range(args.repeats)]
        rates[threads] = statistics.median(r[0] for r in runs)
        moves = statistics.median(r[1] for r in runs)
        print(f"{f'{threads} thread(s)':<42} {rates[threads]:>9,.0f} sims/s   {moves:,.1f} moves/s")
    print(f"{'scaling 2 threads / 1 thread':<42} {rates[2] / rates[1]:>9.2f}")


if __name__ == "__main__":
    main()
