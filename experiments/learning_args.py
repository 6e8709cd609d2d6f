"""The command line of experiments/learning.py: its options and the checks of their combinations."""

from __future__ import annotations

import argparse
from pathlib import Path

from common import number_list  # bench/common.py (learning.py puts bench/ on sys.path)
from endgame_data import backward_rule
from table_dagger import kind_shares

from pipeline.config import load_config
from pipeline.evaluation.gating import RATE_MAX_LEVELS

ROOT = Path(__file__).resolve().parents[1]
ANCHOR_SHARD_POSITIONS = 2000  # --anchor-fraction: label shards this small, so a window draws a varied mix


def build_parser(description: str | None) -> argparse.ArgumentParser:
    """The options of ``experiments/learning.py``."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/learning", help="results folder (rerun to continue)")
    parser.add_argument("--phase", choices=["endgame", "standard", "both"], default="both")
    parser.add_argument("--bootstrap", action="store_true",
                        help="each phase from a supervised start (Stockfish labels + pretrain) instead of a "
                             "random net, within the same time budget; results in OUT/bootstrap (standard) and "
                             "OUT/endgame-bootstrap")
    parser.add_argument("--bootstrap-positions", type=int, default=5000,
                        help="positions Stockfish labels for the supervised start: random play's (standard; "
                             "4-5 a second at depth 8 on a busy 2-core machine), or twice half as many walked-back "
                             "endgame starts and replies plus the first kinds' training starts (endgame)")
    parser.add_argument("--bootstrap-depth", type=int, default=6, help="Stockfish depth of those labels")
    parser.add_argument("--bootstrap-labels", choices=["stockfish", "tablebases"], default="stockfish",
                        help="the endgame phase's labels: Stockfish's, or the distance-to-mate tables' for the "
                             "positions of each start's table-perfect game (zerochess label --tablebases; results "
                             "in OUT/endgame-tablebases)")
    parser.add_argument("--bootstrap-random-positions", type=int, default=0,
                        help="with --bootstrap-labels tablebases: this many random positions of the hardest kinds "
                             "(the strong side to move, any distance from mate) join the walked-back ones")
    parser.add_argument("--bootstrap-replies", type=int, default=0,
                        help="with --bootstrap-labels tablebases: one random move from each of this many positions "
                             "of the table-perfect games (some leave a piece en prise), labelled too")
    parser.add_argument("--bootstrap-blunders", type=int, default=0,
                        help="with --bootstrap-labels tablebases: up to this many positions just after a move that "
                             "throws a won position of those games away (the tables' verdict), labelled too")
    parser.add_argument("--bootstrap-steps", type=int, default=2000, help="pretraining steps on them")
    parser.add_argument("--bootstrap-dagger", type=int, default=0, metavar="ROUNDS",
                        help="with --bootstrap-labels tablebases: this many DAgger rounds after the supervised start "
                             "(the net plays fresh starts of the hardest kinds against Stockfish, the tables label "
                             "the positions it reached, it trains on them; experiments/table_dagger.py)")
    parser.add_argument("--dagger-starts", type=int, default=300,
                        help="each DAgger round's starts (split between the kinds by their weights)")
    parser.add_argument("--dagger-kinds", default="",
                        help="the kinds of the DAgger rounds' starts, each with an optional weight, its share of "
                             "--dagger-starts (e.g. KQKR,KBNK: as many of each; KBBK:2,KQKR:5,KBNK:3); empty: the "
                             "hardest kinds, equal shares (--next-kinds, else --kinds)")
    parser.add_argument("--dagger-steps", type=int, default=1500, help="each DAgger round's training steps")
    parser.add_argument("--dagger-repeat", type=int, default=8,
                        help="each DAgger round's labels join the training data this many times")
    parser.add_argument("--anchor-fraction", type=float, default=0.0,
                        help="with --bootstrap: this share of every self-play training window drawn from the "
                             "supervised start's labels (train.anchor_dir/anchor_fraction; labels cut into shards of "
                             f"{ANCHOR_SHARD_POSITIONS} positions); 0: self-play data only")
    parser.add_argument("--minutes", type=float, default=45.0, help="time budget of the endgame phase")
    parser.add_argument("--minutes-standard", type=float, default=55.0, help="time budget of the standard phase")
    parser.add_argument("--max-generations", type=int, default=1000,
                        help="a cap on generations a phase; at the default the time budget ends a phase first "
                        "(a CPU with native bf16 ran 89 generations of the standard phase in 60 minutes)")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--train-positions", type=int, default=600, help="generated endgame starts for self-play")
    parser.add_argument("--kinds", default="KQK,KRK", help="endgame kinds of the starts (pipeline/endgames.py)")
    parser.add_argument("--max-mate", type=int, default=6,
                        help="endgame starts with a forced mate in at most this many moves (Stockfish; 0: any)")
    parser.add_argument("--next-kinds", default="",
                        help="endgame curriculum: the kinds self-play moves on to once every --kinds kind is mated "
                             "at --master-rate in the held-out starts (e.g. KBBK,KQKR,KBNK); empty: one stage")
    parser.add_argument("--next-max-mate", type=int, default=20, help="the next kinds' starts: mates in at most this many moves")
    parser.add_argument("--next-train-positions", type=int, default=300, help="the next kinds' training starts")
    parser.add_argument("--next-eval-positions", type=int, default=60,
                        help="the next kinds' held-out starts (as many of each), added to the evaluation")
    parser.add_argument("--mate-nodes", type=int, default=200_000,
                        help="Stockfish's node bound for the next kinds' mate labels (walked back from mates)")
    parser.add_argument("--master-rate", type=float, default=0.9,
                        help="the mate rate of each --kinds kind at one evaluation point that ends the first stage")
    parser.add_argument("--keep-first", type=float, default=0.2,
                        help="share of the next stage's training starts taken from the first kinds' (against forgetting)")
    parser.add_argument("--backward", action="store_true",
                        help="with --next-kinds: the next stage as a backward curriculum (pipeline/selfplay/backward.py): "
                             "--next-train-positions unlabelled starts walked back from mates, self-play from those "
                             "within each kind's cap of moves to mate, the cap raised as the frontier is mated")
    parser.add_argument("--label-nodes", type=int, default=0,
                        help="with --backward: label the walked-back starts by Stockfish's mate search within this "
                             "many nodes (the ones it sees no mate in go to the last cap); 0: their nominal distance")
    parser.add_argument("--start-cap", type=int, default=2, help="with --backward: each next kind's first cap (moves to mate)")
    parser.add_argument("--raise-step", type=int, default=2, help="with --backward: moves a cap rises by")
    parser.add_argument("--raise-rate", type=float, default=0.7,
                        help="with --backward: the share of a generation's frontier games (the upper half of the "
                             "cap's distances) mated in self-play that raises the cap")
    parser.add_argument("--endgame-simulations", type=int, default=64, help="search.num_simulations in endgames")
    parser.add_argument("--endgame-temperature-plies", type=int, default=2,
                        help="search.temperature_plies in endgames (sampling by visits; then the most visited)")
    parser.add_argument("--eval-positions", type=int, default=24, help="held-out endgame starts per evaluation, as many of each kind")
    parser.add_argument("--gen0-pairs", type=int, default=50,
                        help="held-out starts (pairs) of the endgame match against generation 0 (0: all)")
    parser.add_argument("--eval-every", type=int, default=1, help="evaluate every this many generations (and the last)")
    parser.add_argument("--standard-pairs", type=int, default=12, help="openings (pairs) per standard evaluation")
    parser.add_argument("--rate", action="store_true",
                        help="also rate the net at each evaluation point on Stockfish's UCI_Elo scale (zerochess "
                             "rate's function; minutes each)")
    parser.add_argument("--rate-games", type=int, default=10, help="with --rate: games against each level")
    parser.add_argument("--rate-levels", type=int, default=RATE_MAX_LEVELS,
                        help="with --rate: levels the rating's bisection plays at most")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="more config overrides")
    parser.add_argument("--plot-dir", help="also copy the plots here (e.g. docs)")
    parser.add_argument("--compare", nargs="+", metavar="LABEL=FOLDER",
                        help="no runs: plot these finished phase folders (OUT/<phase>) against minutes into --plot-dir")
    parser.add_argument("--recheck", metavar="GENS", type=number_list(int, 0),
                        help="no new generations: evaluate these generations again (e.g. 0,10,20) into recheck.json")
    return parser


def check_arguments(args: argparse.Namespace) -> None:
    """Combinations of options that cannot run: ``SystemExit`` naming them."""
    if args.label_nodes < 0:
        raise SystemExit(f"--label-nodes must be >= 0, got {args.label_nodes}")
    if args.bootstrap_random_positions < 0 or (args.bootstrap_random_positions and args.bootstrap_labels != "tablebases"):
        raise SystemExit(f"--bootstrap-random-positions must be >= 0 and goes with --bootstrap-labels tablebases, "
                         f"got {args.bootstrap_random_positions}")  # fmt: skip
    for name in ("replies", "blunders"):
        value = getattr(args, f"bootstrap_{name}")
        if value < 0 or (value and args.bootstrap_labels != "tablebases"):
            raise SystemExit(f"--bootstrap-{name} must be >= 0 and goes with --bootstrap-labels tablebases, got {value}")
    if args.bootstrap_dagger < 0 or (args.bootstrap_dagger and args.bootstrap_labels != "tablebases"):
        raise SystemExit(f"--bootstrap-dagger must be >= 0 and goes with --bootstrap-labels tablebases, "
                         f"got {args.bootstrap_dagger}")  # fmt: skip
    if args.dagger_kinds:
        try:
            kind_shares(args.dagger_kinds)
        except ValueError as error:
            raise SystemExit(f"--dagger-kinds: {error}") from error
        if not args.bootstrap_dagger:
            raise SystemExit("--dagger-kinds goes with --bootstrap-dagger")
    if min(args.dagger_starts, args.dagger_steps, args.dagger_repeat) < 1:
        raise SystemExit(f"--dagger-starts, --dagger-steps and --dagger-repeat must be >= 1, got "
                         f"{args.dagger_starts}, {args.dagger_steps}, {args.dagger_repeat}")  # fmt: skip
    if args.bootstrap_labels == "tablebases" and (not args.bootstrap or args.phase != "endgame"):
        raise SystemExit("--bootstrap-labels tablebases is for --bootstrap --phase endgame (the tables hold endings)")
    if not 0 <= args.anchor_fraction < 1 or (args.anchor_fraction and not args.bootstrap):
        raise SystemExit(f"--anchor-fraction must be in [0, 1) and goes with --bootstrap, got {args.anchor_fraction}")
    if args.backward and not args.next_kinds:
        raise SystemExit("--backward needs --next-kinds (the kinds of its walked-back starts)")
    if args.backward:
        try:
            backward_rule(args)
        except ValueError as error:
            raise SystemExit(f"--start-cap/--raise-step/--raise-rate: {error}") from error
    if not 0 <= args.keep_first < 1 or not 0 < args.master_rate <= 1 or args.next_max_mate < 1:
        raise SystemExit(f"--keep-first must be in [0, 1), --master-rate in (0, 1], --next-max-mate >= 1; got "
                         f"{args.keep_first}, {args.master_rate}, {args.next_max_mate}")  # fmt: skip


def rate_settings(args: argparse.Namespace) -> dict[str, int]:
    """The :class:`Phase` fields of ``--rate`` (none without it); the game
    length is ``params.yaml``'s ``gating.max_plies`` (with ``--set``, without
    the preset)."""
    if not args.rate:
        return {}
    if args.rate_games < 1 or args.rate_levels < 1:
        raise SystemExit(f"--rate-games and --rate-levels must be >= 1, got {args.rate_games}, {args.rate_levels}")
    max_plies = load_config(ROOT / "params.yaml", args.set).gating.max_plies
    return {"rate_games": args.rate_games, "rate_levels": args.rate_levels, "rate_max_plies": max_plies}
