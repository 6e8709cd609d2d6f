"""How often a knowledge-free search proves a forced mate (the MCTS-solver).

Generates KQK/KRK starts whose shortest forced mate is exactly 2 or 3 moves
(the project's endgame generator, labelled by Stockfish at depth 24), then
runs one native search per start with the ``UniformEvaluator`` (uniform
priors, value 0: the search knows nothing but the rules) and counts the
roots the solver proves won with a mate of exactly that length.  Each budget
in ``--simulations`` and each algorithm runs on the same starts, so the rows
compare side by side.  ``--threats`` runs each row twice, with
``search.solver_threats`` off and on (moves that allow a mate in one proven
lost at expansion), in a ``threats`` column.

    .venv/bin/python bench/solver.py [--positions 40] [--simulations 800 3200] [--seed 7] [--threats]

Needs Stockfish (``/usr/games/stockfish`` or on PATH) for the labels only.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import chess
import chess.engine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.evaluation import UniformEvaluator  # noqa: E402
from models.native_tree import NativeTree, run_native_searches  # noqa: E402
from models.search_config import SearchConfig  # noqa: E402
from pipeline.selfplay.endgames import endgame_fens  # noqa: E402


def labelled_starts(count: int, seed: int, depth: int = 24) -> dict[int, list[str]]:
    """``count`` starts with a shortest mate of exactly 2 and of exactly 3 moves."""
    found: dict[int, list[str]] = {2: [], 3: []}
    with chess.engine.SimpleEngine.popen_uci(_stockfish()) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        for attempt in range(20):
            if min(len(fens) for fens in found.values()) >= count:
                break
            for fen in endgame_fens("KQK,KRK", 3 * count, seed=seed + attempt, max_mate=3):
                mate = engine.analyse(chess.Board(fen), chess.engine.Limit(depth=depth))["score"].white().mate()
                if mate in found and len(found[mate]) < count and fen not in found[mate]:
                    found[mate].append(fen)
    return found


def _stockfish() -> str:
    import shutil

    return shutil.which("stockfish") or "/usr/games/stockfish"


def proven(fens: list[str], mate: int, config: SearchConfig) -> int:
    """Roots proven won by a mate in exactly ``mate`` moves."""
    trees = []
    for fen in fens:
        tree = NativeTree(chess.Board(fen), config)
        tree.start()
        trees.append(tree)
    run_native_searches(trees, UniformEvaluator())
    return sum(tree.root.proof == 1 and tree.root.proof_plies == 2 * mate - 1 for tree in trees)


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--positions", type=int, default=40, help="starts of each mate length")
    parser.add_argument("--simulations", type=int, nargs="+", default=[800, 3200])
    parser.add_argument("--algorithms", nargs="+", default=["puct", "gumbel"], choices=["puct", "gumbel"])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--threats", action="store_true", help="each row with search.solver_threats off and on"
    )
    args = parser.parse_args(argv)
    if args.positions < 1 or min(args.simulations) < 1:
        parser.error("--positions and --simulations must be >= 1")
    starts = labelled_starts(args.positions, args.seed)
    print(f"starts: {len(starts[2])} mates in 2, {len(starts[3])} mates in 3 (KQK/KRK, seed {args.seed})")
    settings = [False, True] if args.threats else [False]
    print(
        f"{'algorithm':>9} {'sims':>6} {'threats':>7} {'mate in 2':>22} {'mate in 3':>22} {'seconds':>8}"
    )
    for algorithm in args.algorithms:
        for sims in args.simulations:
            for threats in settings:
                config = SearchConfig(
                    num_simulations=sims,
                    algorithm=algorithm,
                    leaves_per_batch=1,
                    cache_size=10_000,
                    solver_threats=threats,
                )
                begun = time.perf_counter()
                cells = []
                for mate in (2, 3):
                    fens = starts[mate]
                    hits = proven(fens, mate, config)
                    low, high = wilson(hits, len(fens))
                    cells.append(f"{hits:3d}/{len(fens)} [{low:.2f}, {high:.2f}]")
                print(
                    f"{algorithm:>9} {sims:6d} {'on' if threats else 'off':>7} {cells[0]:>22} {cells[1]:>22}"
                    f" {time.perf_counter() - begun:8.1f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
