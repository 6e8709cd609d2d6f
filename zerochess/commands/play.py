"""``zerochess play``: a game against the network in the terminal."""

from __future__ import annotations

import argparse
import random
import sys
from typing import TYPE_CHECKING

from zerochess.commands.uci import DEFAULT_THREADS, add_network_arguments, engine_config, load_from_args

if TYPE_CHECKING:  # torch and the search load when the command runs, not for --help
    import chess


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from pipeline.play import game_help  # python-chess only: no torch for --help

    add_network_arguments(parser)
    parser.epilog = game_help("During the game, type")
    parser.formatter_class = _with_epilog_lines(parser.formatter_class)
    parser.add_argument(
        "--color",
        choices=("white", "black", "random"),
        default="white",
        help="your side (default white)",
    )
    limit = parser.add_mutually_exclusive_group()
    limit.add_argument(
        "--simulations",
        type=int,
        help="the net's simulations per move (default: search.num_simulations)",
    )
    limit.add_argument(
        "--movetime", type=float, help="the net's seconds per move instead of a node count"
    )
    parser.add_argument("--fen", help="start position (default: the standard one)")
    parser.add_argument(
        "--threads", type=int, default=DEFAULT_THREADS,
        help=f"torch threads for the network (default {DEFAULT_THREADS}: faster than 2 on a busy 2-core machine)",
    )
    parser.add_argument("--unicode", action="store_true", help="draw the pieces as Unicode symbols")


def _with_epilog_lines(formatter: type[argparse.HelpFormatter]) -> type[argparse.HelpFormatter]:
    """``formatter`` keeping the line breaks of the description and epilog
    (argparse refills them into one paragraph otherwise)."""
    return type(f"Raw{formatter.__name__}", (argparse.RawDescriptionHelpFormatter, formatter), {})


def run(args: argparse.Namespace) -> int:
    import chess

    from models.search_config import SearchError
    from pipeline.play import PlaySession
    from pipeline.uci.player import NetPlayer, SearchControl

    config = engine_config(args)
    board = _start_board(args.fen)
    if args.simulations is not None and args.simulations < 1:
        raise SearchError(f"--simulations must be >= 1, got {args.simulations}")
    if args.movetime is not None and not args.movetime > 0:
        raise SearchError(f"--movetime must be > 0, got {args.movetime}")
    if args.threads < 1:
        raise SearchError(f"--threads must be >= 1, got {args.threads}")
    loaded = load_from_args(args, config)
    print(f"Network: {loaded.description}", flush=True)
    player = NetPlayer(loaded.evaluator, config.search, seed=config.selfplay.seed)
    nodes = args.simulations or config.search.num_simulations

    def limits() -> SearchControl:
        if args.movetime is not None:
            return SearchControl(time_s=args.movetime)
        return SearchControl(nodes=nodes)

    color = args.color if args.color != "random" else random.choice(("white", "black"))
    session = PlaySession(
        player,
        human=chess.WHITE if color == "white" else chess.BLACK,
        limits=limits,
        reader=sys.stdin,
        writer=sys.stdout,
        board=board,
        unicode=args.unicode,
    )
    session.run()
    return 0


def _start_board(fen: str | None) -> chess.Board:
    import chess

    from models.search_config import SearchError

    if fen is None:
        return chess.Board()
    try:
        board = chess.Board(fen)
    except ValueError as error:
        raise SearchError(f"invalid FEN {fen!r}: {error}") from error
    if not board.is_valid():
        raise SearchError(f"not a legal chess position: {fen!r} ({board.status().name})")
    return board
