"""``zerochess endgames``: write endgame start positions (KQK, KRK, KBNK...) as an EPD file.

The file is for ``selfplay.start_positions``, a curriculum stage's
``start_positions`` or ``gating.openings``::

    zerochess endgames --out data/endgames.epd --kinds KQK,KRK --count 600 --max-mate 6 --seed 1
    zerochess endgames --out eval.epd --kinds KQK,KRK --count 100 --max-mate 6 --seed 2 --exclude data/endgames.epd
    zerochess endgames --out kbnk.epd --kinds KBNK --count 40 --max-mate 20 --walk-back --mate-nodes 200000

Long mates (KBNK's) need ``--walk-back`` (candidates a few un-moves before
random checkmates, instead of random placements) and ``--mate-nodes`` (a
node-bounded mate search instead of depth ``2 * max_mate + 4``).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from zerochess.commands.checks import UsageError, check_input_file, check_output_folder, require_at_least


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="EPD file to write")
    parser.add_argument("--kinds", default="KQK,KRK",
                        help="comma-separated kinds K<strong>K<weak>: KQK, KRK, KBBK, KBNK, KPK, KQKR, ...")  # fmt: skip
    parser.add_argument("--count", type=int, default=600, help="positions to write")
    parser.add_argument("--seed", type=int, default=0, help="the same seed writes the same positions")
    parser.add_argument("--max-mate", type=int, default=0,
                        help="keep positions where Stockfish sees a mate in 1..N moves, as many at each "
                             "distance (0: any legal placement, no Stockfish)")  # fmt: skip
    parser.add_argument("--walk-back", action="store_true",
                        help="draw candidates by walking back from random checkmates (needs --max-mate; no pawns)")
    parser.add_argument("--mate-nodes", type=int, default=0,
                        help="bound Stockfish's mate search by this many nodes instead of depth 2*N+4 (0: depth)")
    parser.add_argument("--strong", choices=["white", "black", "random"], default="white",
                        help="the strong side, always to move")  # fmt: skip
    parser.add_argument("--exclude", action="append", default=[], metavar="FILE",
                        help="EPD/FEN file whose positions are left out (e.g. the training starts); repeatable")  # fmt: skip
    parser.add_argument("--stockfish", default="", help="Stockfish binary (default: PATH, then /usr/games/stockfish)")


def run(args: argparse.Namespace) -> int:
    from pipeline.selfplay.endgames import endgame_fens, parse_kinds, write_epd
    from pipeline.selfplay.starts import load_start_positions

    out = Path(args.out)
    if out.is_dir():
        raise UsageError(f"--out {args.out}: is a folder, not a file")
    check_output_folder("--out", out.parent)  # checked before minutes of Stockfish searches
    require_at_least("--count", args.count)
    require_at_least("--max-mate", args.max_mate, 0)
    require_at_least("--mate-nodes", args.mate_nodes, 0)
    if args.walk_back and not args.max_mate:
        raise UsageError("--walk-back needs --max-mate N (Stockfish labels the walked-back positions)")
    parse_kinds(args.kinds)
    for path in args.exclude:
        check_input_file("--exclude", path)
    excluded = {fen for path in args.exclude for fen in load_start_positions(path)}
    fens = endgame_fens(args.kinds, args.count, args.seed, max_mate=args.max_mate, strong=args.strong,
                        exclude=excluded, stockfish_path=args.stockfish, mate_nodes=args.mate_nodes,
                        walk_back=args.walk_back)  # fmt: skip
    command = (f"zerochess endgames --out {shlex.quote(args.out)} --kinds {args.kinds} --count {args.count} "
               f"--seed {args.seed} --max-mate {args.max_mate} --strong {args.strong}"
               + (" --walk-back" if args.walk_back else "")
               + (f" --mate-nodes {args.mate_nodes}" if args.mate_nodes else "")
               + "".join(f" --exclude {shlex.quote(path)}" for path in args.exclude))  # fmt: skip
    label = args.kinds.replace(",", "/")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_epd(out, fens, label, header=f"{len(fens)} {label} starts, made by: {command}")
    print(f"{args.out}: {len(fens)} positions ({label})")
    return 0
