"""One net's mates against Stockfish from held-out ending starts, under
several search settings side by side (the first row, with no ``--try``, is
the baseline).

    .venv/bin/python experiments/mate_rate.py runs/endings/endgame-tablebases/pretrain/net.pt \
        --starts runs/endings/endgames_eval.epd --kinds KBBK,KQKR,KBNK \
        --set net.value_head=wdl --set net.moves_left=true --set net.soft_policy=true \
        --try "search.moves_left_slope=0.0027 search.moves_left_cap=0.0345" \
        --try "search.moves_left_slope=0.1 search.moves_left_cap=1.0"

Each start is played once, the net White (the strong side) against
Stockfish's defence (``experiments/learning.py``'s ``mate_rate``: depth 10, a
mate within 50 moves counts), with the endgame phase's search settings
(Gumbel unless ``--set`` says otherwise, an unvisited move's Q 0, two-fold
repetition a draw in the tree).  The same settings twice can differ by a
few games (the same net, lc0's moves-left settings: 13 and 11 KBBK mates of
30).  The cause is not traced; the games run in parallel, in an order
that varies from run to run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the checkout this script lives in, whatever is installed

from actors.runtime import init_ray
from pipeline.config import load_config
from pipeline.evaluation.gating import match_settings
from pipeline.evaluation.match import load_openings

ENDGAME_SEARCH = ("search.algorithm=gumbel", "search.fpu_mode=absolute", "search.fpu_value=0",
                  "search.twofold_draw=true")  # fmt: skip


def learning_bench() -> Any:
    """``experiments/learning.py`` as a module (its ``mate_rate`` and ``endgame_kind``)."""
    spec = importlib.util.spec_from_file_location("bench_learning", ROOT / "experiments" / "learning.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_learning"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("net", help="the net (a net.pt)")
    parser.add_argument("--starts", required=True, help="EPD file of starts, the strong side to move "
                                                        "(experiments/learning.py's OUT/endgames_eval.epd)")
    parser.add_argument("--kinds", default="", help="only starts of these kinds (e.g. KBBK,KQKR,KBNK); empty: all")
    parser.add_argument("--simulations", type=int, default=32, help="the net's simulations a move")
    parser.add_argument("--preset", default="endgame")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="settings of every row")
    parser.add_argument("--try", dest="tries", action="append", default=[], metavar="'KEY=VALUE ...'",
                        help="a row's own settings, space-separated (repeatable)")
    parser.add_argument("--out", default="runs/mate-rate", help="folder of the games' PGN files")
    args = parser.parse_args(argv)
    if args.simulations < 1:
        raise SystemExit(f"--simulations must be >= 1, got {args.simulations}")
    if not os.path.isfile(args.net) or not os.path.isfile(args.starts):
        raise SystemExit(f"no such file: {args.net if not os.path.isfile(args.net) else args.starts}")
    learning = learning_bench()
    kinds = {kind.strip() for kind in args.kinds.split(",") if kind.strip()}
    openings = [opening for opening in load_openings(args.starts)
                if not kinds or learning.endgame_kind(opening.fen) in kinds]  # fmt: skip
    if not openings:
        raise SystemExit(f"{args.starts}: no start of the kinds {sorted(kinds)}")
    init_ray("local")
    rows = [("baseline", [])] + [(text, text.split()) for text in args.tries]
    print(f"{len(openings)} starts from {args.starts}, {args.simulations} simulations, net {args.net}")
    for number, (label, extra) in enumerate(rows):
        simulations = [f"search.num_simulations={args.simulations}", f"gating.simulations={args.simulations}"]
        config = load_config(ROOT / "params.yaml", [*ENDGAME_SEARCH, *simulations, *args.set, *extra],
                             preset=args.preset)  # fmt: skip
        settings = replace(match_settings(config), event="bench mate_rate")
        folder = Path(args.out) / f"row{number}"
        folder.mkdir(parents=True, exist_ok=True)
        result = learning.mate_rate(f"net:{args.net}:sims={args.simulations}", openings, settings, folder / "mate.pgn")
        by_kind = "  ".join(f"{kind} {k['mates']}/{k['games']}" for kind, k in result["kinds"].items())
        print(f"{label:<60} mates {result['mates']}/{result['games']} "
              f"[{result['rate_low']:.2f}, {result['rate_high']:.2f}]  {by_kind}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
