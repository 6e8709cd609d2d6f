"""``zerochess analyse``: search one position and show the root statistics
(on ``search.backend``: the native core unless ``--set search.backend=python``)."""

from __future__ import annotations

import argparse
from dataclasses import replace

from zerochess.commands.common import add_params_arguments, config_from_args

# Not chess.STARTING_FEN: --help must not import chess, torch or the models.
START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--fen", default=START_FEN, help="position to search (default: start)")
    parser.add_argument("--simulations", type=int, help="simulations (default: search.num_simulations)")
    parser.add_argument("--checkpoint", help="network (default: random weights)")
    parser.add_argument("--uniform", action="store_true", help="uniform priors and zero values, no network")
    parser.add_argument("--top", type=int, default=10, help="moves to list (default 10)")
    parser.add_argument("--precision", choices=("auto", "fp32", "bf16"),
                        help="number format of the network (default: selfplay.precision)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    import chess
    import numpy as np

    from models.evaluation import UniformEvaluator
    from models.net import AlphaZeroNet, pick_device
    from models.net_evaluator import NetEvaluator
    from models.search_backend import search_position
    from models.search_config import SearchError
    from pipeline.checkpoint import load_net

    config = config_from_args(args)
    try:
        board = chess.Board(args.fen)
    except ValueError as error:
        raise SearchError(f"invalid FEN {args.fen!r}: {error}") from error
    search = config.search
    if args.simulations is not None:
        search = replace(search, num_simulations=args.simulations)
    if args.uniform:
        evaluator = UniformEvaluator()
    else:
        device = pick_device(config.selfplay.device)
        net = load_net(args.checkpoint, device=device) if args.checkpoint else AlphaZeroNet(config.net).to(device)
        evaluator = NetEvaluator(net, precision=args.precision or config.selfplay.precision,
                                 compile=config.selfplay.compile)  # fmt: skip
    result = search_position(board, evaluator, search)
    print(f"{board.fen()}  root Q={result.root_value:+.3f}  best={board.san(result.best_move)}")
    order = np.argsort(-result.visits, kind="stable")[: args.top]
    for index in order:
        move = result.moves[index]
        q = result.q_values[index]
        print(
            f"{board.san(move):>8} visits={result.visits[index]:>6} "
            f"pi={result.policy[index]:.3f} prior={result.priors[index]:.3f} q={q:+.3f}"
        )
    return 0
