"""Forced mates the search must find: does the net help the search or blind it?

``draw`` finds, in Stockfish self-play games (``zerochess sfgames`` PGN,
played from a seed no training run uses), positions where the side to move
mates in exactly N (2 or 3) with one key move only: in a game that ends in
checkmate, the position N moves before the mate, the winner to move, is
kept when Stockfish's MultiPV 2 at a fixed depth scores its best move as
mate in N and the second best as no mate that fast.  At most one position a
game (no near-duplicates).  The set is an EPD file with ``bm`` (the key
move) and ``dm`` (moves to mate) operations.

``solve`` searches each position with the project's search (the recipe in
``params.yaml``, no root noise) and a net, or with uniform priors and zero
values (``--uniform``), and counts the positions whose chosen move is the key.

    .venv/bin/zerochess sfgames --games 3000 --nodes 2000 --seed 101 --out runs/tactics/games.pgn
    .venv/bin/python experiments/tactics.py draw runs/tactics/games.pgn --out data/tactics.epd --count 50
    .venv/bin/python experiments/tactics.py solve data/tactics.epd --checkpoint NET --simulations 800
    .venv/bin/python experiments/tactics.py solve data/tactics.epd --uniform --simulations 800
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import chess
import chess.engine
import chess.pgn

ROOT = Path(__file__).resolve().parents[1]


def key_mate(engine: chess.engine.SimpleEngine, board: chess.Board, depth: int) -> tuple[chess.Move, int] | None:
    """(key move, N) when the side to move mates in N with that move only."""
    infos = engine.analyse(board, chess.engine.Limit(depth=depth), multipv=2)
    if not infos or "pv" not in infos[0]:
        return None
    mate = infos[0]["score"].relative.mate()
    if mate is None or mate <= 0:
        return None
    if len(infos) > 1:
        second = infos[1]["score"].relative.mate()
        if second is not None and 0 < second <= mate:
            return None  # two ways to mate as fast: no single key
    return infos[0]["pv"][0], mate


def draw(args: argparse.Namespace) -> None:
    """Scan the games that end in checkmate: the position N moves before the
    mate, the winner to move, is kept when it is a mate in N with one key."""
    from pipeline.players.stockfish import find_stockfish

    wanted = {n: args.count for n in args.mates}
    found: list[str] = []
    engine = chess.engine.SimpleEngine.popen_uci(find_stockfish(args.stockfish or ""))
    try:
        with open(args.pgn, encoding="utf-8") as handle:
            while any(wanted.values()):
                game = chess.pgn.read_game(handle)
                if game is None:
                    break
                line = picked(engine, game, wanted, args)
                if line is not None:
                    found.append(line)
    finally:
        engine.quit()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(found) + "\n")
    missing = {n: left for n, left in wanted.items() if left}
    print(json.dumps({"out": str(out), "positions": len(found), "short_of": missing}))


def picked(engine: chess.engine.SimpleEngine, game: chess.pgn.Game, wanted: dict[int, int],
           args: argparse.Namespace) -> str | None:  # fmt: skip
    """At most one position of ``game`` (the N still most wanted first) as an EPD line."""
    moves = list(game.mainline_moves())
    final = game.end().board()
    if not final.is_checkmate():
        return None
    for n in sorted(wanted, key=lambda k: -wanted[k]):
        ply = len(moves) - (2 * n - 1)
        if wanted[n] <= 0 or ply < args.skip_plies:
            continue
        board = game.board()
        for move in moves[:ply]:
            board.push(move)
        key = key_mate(engine, board, args.depth)
        if key is not None and key[1] == n:
            wanted[n] -= 1
            return (f"{board.epd()} bm {board.san(key[0])}; dm {n}; "
                    f"id \"{Path(args.pgn).name} game {game.headers.get('Round', '?')} ply {ply}\";")  # fmt: skip
    return None


def read_set(path: str) -> list[tuple[chess.Board, chess.Move, int]]:
    puzzles = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        if not line.strip():
            continue
        board, ops = chess.Board.from_epd(line)
        try:
            puzzles.append((board, ops["bm"][0], int(ops["dm"])))
        except (KeyError, IndexError, TypeError, ValueError) as error:
            raise SystemExit(f"{path}:{number}: needs bm and dm operations ({error})") from error
    return puzzles


def solve(args: argparse.Namespace) -> dict[str, object]:
    from models.evaluation import UniformEvaluator
    from models.net import pick_device
    from models.net_evaluator import NetEvaluator
    from models.search_backend import search_position
    from pipeline.checkpoint import load_net
    from pipeline.config import load_config

    config = load_config(ROOT / "params.yaml", args.set)
    search = replace(config.search, num_simulations=args.simulations)
    if args.uniform:
        evaluator = UniformEvaluator()
    else:
        net = load_net(args.checkpoint, device=pick_device(config.selfplay.device))
        evaluator = NetEvaluator(net, precision=config.selfplay.precision, compile=config.selfplay.compile)
    tally: dict[int, list[int]] = {}
    for board, key, mate in read_set(args.set_file):
        chosen = search_position(board, evaluator, search).best_move
        counts = tally.setdefault(mate, [0, 0])
        counts[0] += chosen == key
        counts[1] += 1
    result = {"player": "uniform" if args.uniform else args.checkpoint, "simulations": args.simulations,
              "set": args.set_file, **{f"mate_in_{n}": f"{c[0]}/{c[1]}" for n, c in sorted(tally.items())}}  # fmt: skip
    print(json.dumps(result))
    if args.data:  # the results page's data: one entry per player, simulations and set
        path = Path(args.data)
        entries = json.loads(path.read_text()) if path.exists() else []
        entry = {**result, "label": args.label or result["player"], "overrides": args.set}
        same = ("label", "simulations", "set", "overrides")
        entries = [e for e in entries if any(e.get(k) != entry[k] for k in same)] + [entry]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(entries, indent=1) + "\n")
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    pick = sub.add_parser("draw", help="mate-in-N positions with one key move from Stockfish games")
    pick.add_argument("pgn")
    pick.add_argument("--out", required=True)
    pick.add_argument("--count", type=int, default=50, help="positions of each N")
    pick.add_argument("--mates", type=lambda text: [int(n) for n in text.split(",")], default=[2, 3])
    pick.add_argument("--depth", type=int, default=14, help="Stockfish's depth for the mate and its uniqueness")
    pick.add_argument("--skip-plies", type=int, default=10, help="plies of each game never used")
    pick.add_argument("--stockfish", help="Stockfish binary (default: on PATH or /usr/games/stockfish)")
    run = sub.add_parser("solve", help="how many key moves the search finds")
    run.add_argument("set_file")
    who = run.add_mutually_exclusive_group(required=True)
    who.add_argument("--checkpoint")
    who.add_argument("--uniform", action="store_true")
    run.add_argument("--simulations", type=int, default=800)
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a parameter override")
    run.add_argument("--data", help="a JSON list to add this result to (the results page's data)")
    run.add_argument("--label", help="the player's name in that list (default: the checkpoint, or uniform)")
    args = parser.parse_args(argv)
    if args.action == "draw":
        draw(args)
    else:
        solve(args)


if __name__ == "__main__":
    sys.exit(main())
