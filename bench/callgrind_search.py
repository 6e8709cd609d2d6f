"""A fixed, deterministic native-search workload to count instructions with callgrind.

Runs ``--searches`` PUCT searches of ``--simulations`` each (one NativeTree
per position, all stepped together by ``run_native_searches`` on the calling
thread) with the ``search`` section of ``params.yaml``, ``--solver on|off``
``--threats on|off`` (``search.solver_threats``, off by default) and
``--twofold on|off`` (``search.twofold_draw``, off by default).
The evaluator is ``HashEvaluator`` (logits and values hashed from the input
planes: no network, no torch), so the same build gives the same instruction
count run after run (see shared/docs/field-notes.md).  The positions are 8
fixed FENs (openings, middlegames, endgames with mates to find) followed by
positions of seeded random playouts from the start.

    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.solver-on.out \\
        .venv/bin/python bench/callgrind_search.py --solver on --searches 16 --simulations 2000
    callgrind_annotate /tmp/cg.solver-on.out | head -30    # "PROGRAM TOTALS": the Ir total

The count includes Python's start-up and imports (the same for every run):
compare ``--solver on`` with ``--solver off``, ``--threats on`` with
``--threats off``, or two builds of the core, on the same arguments.  The last line printed is a digest of every root's visit
counts, values and proofs, so two builds can be checked to search identically.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import random
import sys
from pathlib import Path

import chess
import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout this script lives in, whatever is installed

from models.hash_evaluator import HashEvaluator  # noqa: E402
from models.native_tree import NativeCache, NativeTree, run_native_searches  # noqa: E402
from models.search_config import SearchConfig  # noqa: E402

FIXED_FENS = [
    chess.STARTING_FEN,
    "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
    "r1bq1rk1/ppp2ppp/2np1n2/2b1p3/2B1P3/2PP1N2/PP3PPP/RNBQ1RK1 w - - 0 7",
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
    "6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1",  # back-rank mate in 1
    "8/8/8/8/1R6/7k/8/5K2 w - - 0 1",  # rook mate in 2
    "k1K1R3/8/8/8/8/8/8/8 w - - 0 1",
]


def positions(count: int) -> list[chess.Board]:
    """The fixed FENs, then seeded random playouts (never a finished game)."""
    boards = [chess.Board(fen) for fen in FIXED_FENS[:count]]
    seed = 0
    while len(boards) < count:
        rng = random.Random(seed)
        board = chess.Board()
        for _ in range(10 + (7 * seed) % 60):
            legal = list(board.legal_moves)
            if not legal:
                break
            board.push(rng.choice(legal))
        seed += 1
        if not board.is_game_over(claim_draw=True):
            boards.append(chess.Board(board.fen()))
    return boards


def project_search_config() -> SearchConfig:
    """``params.yaml``'s search section (read directly: pipeline.config imports torch)."""
    data = yaml.safe_load((ROOT / "params.yaml").read_text())
    return SearchConfig(**data["search"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solver", choices=("on", "off"), default="on")
    parser.add_argument("--threats", choices=("on", "off"), default="off", help="search.solver_threats")
    parser.add_argument("--twofold", choices=("on", "off"), default="off",
                        help="search.twofold_draw (a build without it: leave off)")
    parser.add_argument("--searches", type=int, default=16)
    parser.add_argument("--simulations", type=int, default=2000)
    args = parser.parse_args(argv)

    config = dataclasses.replace(
        project_search_config(),
        num_simulations=args.simulations,
        solver=args.solver == "on",
        solver_threats=args.threats == "on",
        **({"twofold_draw": True} if args.twofold == "on" else {}),
        backend="native",
        algorithm="puct",
    )
    trees = []
    for index, board in enumerate(positions(args.searches)):
        tree = NativeTree(board, config, cache=NativeCache(config.cache_size), seed=index)
        tree.start(add_noise=False)
        trees.append(tree)
    evaluator = HashEvaluator(seed=0)
    calls = run_native_searches(trees, evaluator)

    digest = hashlib.sha256()
    proven = 0
    for tree in trees:
        result = tree.result()
        digest.update(result.visits.astype(np.int64).tobytes())
        digest.update(np.float64(result.root_value).tobytes())
        digest.update(result.best_move.uci().encode())
        if result.proof is not None:
            digest.update(np.nan_to_num(result.proof, nan=9.0).tobytes())
            proven += int(np.count_nonzero(~np.isnan(result.proof)))
    print(
        f"{len(trees)} searches x {args.simulations} simulations, solver {args.solver}, "
        f"threats {args.threats}, twofold {args.twofold}: "
        f"{evaluator.positions} leaves in {calls} evaluator calls, {proven} proven root moves"
    )
    print(f"digest {digest.hexdigest()[:16]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
