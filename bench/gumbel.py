"""Gumbel AlphaZero against PUCT at small simulation budgets (2-32).

Both searches run on the native core with the same scripted evaluator, so
the only difference is the search algorithm:

* value: material balance from the side to move, ``tanh(material / 5)``
  (pawn 1, knight and bishop 3, rook 5, queen 9), read from the input planes;
* policy: uniform (``--priors uniform``, the default: an untrained network's
  view) or hashed pseudo-random logits in [-3, 3] (``--priors hash``: an
  opinionated but uninformed network).

With ``--net PATH`` (a checkpoint of ``models/net.py``) the network is the
evaluator instead (CPU, float32).

Two measurements:

1. **Known answers** (bandit-like positions): 16 positions from random games
   in which exactly one move takes the opponent's queen for free (no other
   capture), and 14 in which exactly one move mates (solver off, so only
   the search algorithm finds it).  The share of searches whose chosen move
   is that move, for PUCT (no noise; with Dirichlet noise, ``--seeds``
   draws) and Gumbel (no noise: Gumbel-top-k by the policy; with Gumbel
   noise, ``--seeds`` draws).
2. **Match**: Gumbel against PUCT at equal simulations, both without noise
   (as in evaluation games: Gumbel-top-k by the policy), ``--games`` games
   per budget from the start position plus ``--random-plies`` random moves
   (the only variety), sides alternating.  Games last at most
   ``--max-plies`` plies; an unfinished game is scored by material
   (bench-only adjudication: +3 or more wins).  Score of Gumbel with a 95%
   interval, and the Elo difference.

Measured (2 cores, ``--games 400 --seeds 16``): see the closing report of
issue 13; with uniform priors Gumbel finds the free queen in 0.62 of the
searches at 16 simulations where PUCT finds it in 0.00 (0.05 with Dirichlet
noise), and scores 0.59 (+65 Elo) at 16 and 0.75 (+190) at 32 simulations.

    .venv/bin/python bench/gumbel.py [--sims 2 4 8 16 32] [--games 100] [--priors uniform]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import chess
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from models.driver_settings import GamesSettings  # noqa: E402
from models.native_drivers import MatchDriver  # noqa: E402
from models.native_tree import NativeTree, run_native_searches  # noqa: E402
from models.search_config import SearchConfig  # noqa: E402
from tests.helpers.search_positions import FREE_QUEEN, MATE_IN_ONE, MATERIAL, MaterialEvaluator  # noqa: E402


def config(algorithm: str, sims: int, *, solver: bool = False) -> SearchConfig:
    """The compared search: native, one leaf per evaluation, no temperature."""
    return SearchConfig(
        num_simulations=sims,
        algorithm=algorithm,
        solver=solver,
        leaves_per_batch=1,
        cache_size=0,
        temperature_plies=0,
    )


VARIANTS = [
    ("PUCT", "puct", False),
    ("PUCT+Dirichlet", "puct", True),
    ("Gumbel (g=0)", "gumbel", False),
    ("Gumbel", "gumbel", True),
]


def known_answer_rate(
    positions: list[tuple[str, str]],
    evaluator: MaterialEvaluator,
    algorithm: str,
    sims: int,
    noise: bool,
    seeds: int,
) -> float:
    """Share of searches (positions x noise draws) that choose the known answer."""
    found = total = 0
    for seed in range(seeds if noise else 1):
        trees = []
        for index, (fen, _) in enumerate(positions):
            tree = NativeTree(chess.Board(fen), config(algorithm, sims), seed=1000 * seed + index)
            tree.start(add_noise=noise)
            trees.append(tree)
        run_native_searches(trees, evaluator)
        for tree, (_, answer) in zip(trees, positions):
            found += tree.result().best_move.uci() == answer
            total += 1
    return found / total


def adjudicate(start_fen: str, moves: list[str], result: str) -> float:
    """White's score: the result, or material (+3 or more) for an unfinished game."""
    if result != "1/2-1/2":
        return 1.0 if result == "1-0" else 0.0
    board = chess.Board(start_fen)
    for uci in moves:
        board.push_uci(uci)
    if board.outcome(claim_draw=True) is not None:
        return 0.5
    balance = sum(
        MATERIAL[p.piece_type] * (1 if p.color == chess.WHITE else -1)
        for p in board.piece_map().values()
    )
    return 1.0 if balance >= 3 else 0.0 if balance <= -3 else 0.5


def match(
    sims: int,
    games: int,
    evaluator: MaterialEvaluator,
    random_plies: int,
    max_plies: int,
    seed: int,
) -> tuple[float, float]:
    """Gumbel (A) against PUCT (B), no noise: Gumbel's mean score and its 95%
    half-interval."""
    gumbel, puct = config("gumbel", sims), config("puct", sims)
    settings = GamesSettings(games=games, games_in_flight=min(games, 64), seed=seed, random_plies=random_plies,
                             max_plies=max_plies, threads=2)  # fmt: skip
    driver = MatchDriver(gumbel, puct, settings)
    played = driver.play(evaluator, evaluator)
    scores = []
    for game in played:
        white = adjudicate(game.start_fen, game.moves, game.result)
        scores.append(white if game.a_is_white else 1.0 - white)
    mean = float(np.mean(scores))
    half = (
        1.96 * float(np.std(scores, ddof=1)) / math.sqrt(len(scores))
        if len(scores) > 1
        else float("nan")
    )
    return mean, half


def elo(score: float) -> float:
    score = min(max(score, 1e-3), 1 - 1e-3)
    return -400.0 * math.log10(1.0 / score - 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, nargs="+", default=[2, 4, 8, 16, 32])
    parser.add_argument("--seeds", type=int, default=8, help="noise draws per position")
    parser.add_argument(
        "--games", type=int, default=100, help="match games per budget (0: no match)"
    )
    parser.add_argument("--priors", choices=["uniform", "hash"], default="uniform")
    parser.add_argument("--random-plies", type=int, default=8)
    parser.add_argument("--max-plies", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--net", default="", help="checkpoint to evaluate with instead of the scripted evaluator"
    )
    args = parser.parse_args()
    evaluator = MaterialEvaluator(args.priors)
    if args.net:
        from models.net_evaluator import NetEvaluator
        from pipeline.checkpoint import load_net

        net = load_net(args.net, "cpu")
        evaluator = NetEvaluator(net, autocast=None)  # type: ignore[assignment]
        args.priors = f"net {args.net}"
    started = time.perf_counter()
    for title, positions in (
        ("free queen (16 positions)", FREE_QUEEN),
        ("mate in one (14 positions)", MATE_IN_ONE),
    ):
        print(f"\nKnown answer found, {title}, priors={args.priors}, solver off")
        print(f"{'sims':>5} " + " ".join(f"{name:>15}" for name, _, _ in VARIANTS))
        for sims in args.sims:
            rates = [
                known_answer_rate(positions, evaluator, alg, sims, noise, args.seeds)
                for _, alg, noise in VARIANTS
            ]
            print(f"{sims:>5} " + " ".join(f"{rate:>15.2f}" for rate in rates))
    if args.games:
        print(
            f"\nMatch: Gumbel vs PUCT at equal simulations, {args.games} games each, "
            f"priors={args.priors}, {args.random_plies} random plies, max {args.max_plies} plies "
            "(material adjudication)"
        )
        print(f"{'sims':>5} {'Gumbel score':>14} {'95% CI':>8} {'Elo':>7}")
        for sims in args.sims:
            score, half = match(
                sims, args.games, evaluator, args.random_plies, args.max_plies, args.seed
            )
            print(f"{sims:>5} {score:>14.3f} {half:>8.3f} {elo(score):>+7.0f}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
