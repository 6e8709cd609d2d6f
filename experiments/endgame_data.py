"""The endgame phase's start files for ``experiments/learning.py``: the training
and held-out starts of each kind, the curriculum's next stage (labelled by
Stockfish or walked back by distance), and the positions of a supervised
start (table-perfect games, random replies, moves that throw a win away).

No network plays here: everything is drawn by a seeded generator, labelled
by Stockfish or the tables, and written once (a rerun keeps the files).
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from typing import Any

import chess

from pipeline.config import Config, load_config
from pipeline.selfplay.backward import BackwardRule, Walked, fen_key, load_caps, save_walked, stage_fens
from pipeline.selfplay.endgames import (
    endgame_fens,
    mate_labels,
    parse_kinds,
    random_replies,
    walked_back_starts,
    write_epd,
)
from pipeline.selfplay.starts import load_start_positions

ROOT = Path(__file__).resolve().parent.parent


def held_out_fens(kinds: str, count: int, max_mate: int, exclude: list[str], seed: int = 2,
                  **drawing: Any) -> list[str]:  # fmt: skip
    """``count`` held-out starts, as many of each kind (so each kind's rate
    has its own tight interval); ``drawing``: :func:`endgame_fens`'s
    ``mate_nodes`` and ``walk_back``."""
    names = [name for name in kinds.split(",") if name.strip()]
    share, extra = divmod(count, len(names))
    fens: list[str] = []
    for index, name in enumerate(names):
        fens += endgame_fens(name, share + (index < extra), seed=seed + index, max_mate=max_mate,
                             exclude=[*exclude, *fens], **drawing)  # fmt: skip
    return fens


def endgame_starts(args: argparse.Namespace, out: Path) -> None:
    """The endgame phase's start files (once: a rerun continues with them):
    training and held-out starts of ``--kinds``, and with ``--next-kinds`` the
    curriculum's next stage (its training starts, walked back from mates and
    labelled by a node-bounded Stockfish search, plus a share of the first
    kinds' starts; with ``--backward``, unlabelled and capped by distance),
    whose held-out starts join the evaluation file."""
    if (out / "endgames_eval.epd").exists():
        return
    train = endgame_fens(args.kinds, args.train_positions, seed=1, max_mate=args.max_mate)
    held_out = held_out_fens(args.kinds, args.eval_positions, args.max_mate, exclude=train)
    label = args.kinds.replace(",", "/")
    write_epd(out / "endgames_train.epd", train, label, header=f"{label}, made by experiments/learning.py")
    if args.next_kinds and getattr(args, "backward", False):
        label = _backward_starts(args, out, train, held_out)
    elif args.next_kinds:
        drawing = {"mate_nodes": args.mate_nodes, "walk_back": True}
        started = time.monotonic()
        later = endgame_fens(args.next_kinds, args.next_train_positions, seed=11, max_mate=args.next_max_mate,
                             **drawing)  # fmt: skip
        held_out += held_out_fens(args.next_kinds, args.next_eval_positions, args.next_max_mate, exclude=later,
                                  seed=21, **drawing)  # fmt: skip
        kept = train[: round(args.keep_first / (1 - args.keep_first) * len(later))]
        next_label = f"{args.next_kinds.replace(',', '/')} + {label}"
        write_epd(out / "endgames_next.epd", later + kept, next_label,
                  header=f"{next_label}, made by experiments/learning.py")  # fmt: skip
        print(f"[endgame] next stage's starts ({args.next_kinds}) in {(time.monotonic() - started) / 60:.1f} min",
              flush=True)  # fmt: skip
        label = f"{label}/{args.next_kinds.replace(',', '/')}"
    write_epd(out / "endgames_eval.epd", held_out, f"held-out {label}", header=f"held-out {label}, made by experiments/learning.py")


def _backward_starts(args: argparse.Namespace, out: Path, train: list[str], held_out: list[str]) -> str:
    """``--backward``: the next kinds' held-out starts (Stockfish-labelled, as
    without it), then their training starts walked back without labels, each
    with its nominal distance (``endgames_walked.json``), none held out; the
    next stage's start file at the starting caps.  Returns the evaluation's label."""
    started = time.monotonic()
    held_out += held_out_fens(args.next_kinds, args.next_eval_positions, args.next_max_mate, exclude=[], seed=21,
                              mate_nodes=args.mate_nodes, walk_back=True)  # fmt: skip
    names = [kind.name for kind in parse_kinds(args.next_kinds)]
    walked = walked_back_starts(names, args.next_train_positions, seed=11, max_distance=args.next_max_mate,
                                exclude=held_out)  # fmt: skip
    distances = [distance for _, distance in walked]
    if getattr(args, "label_nodes", 0):  # Stockfish's short mates; the ones it does not see go to the last cap
        labels = mate_labels([fen for fen, _ in walked], args.next_max_mate, args.label_nodes)
        distances = [min(label or args.next_max_mate, args.next_max_mate) for label in labels]
        print(f"[endgame] walked-back starts labelled: {sum(map(bool, labels))} of {len(labels)} with a mate found "
              f"within {args.label_nodes} nodes", flush=True)  # fmt: skip
    starts = [Walked(fen, endgame_kind(fen), distance) for (fen, _), distance in zip(walked, distances)]
    save_walked(out / "endgames_walked.json", starts)
    rule = backward_rule(args)
    caps = load_caps(out / "endgames_caps.json", names, rule)
    write_epd(out / "endgames_next.epd", stage_fens(starts, caps, train, args.keep_first),
              "backward " + caps_text(caps))  # fmt: skip
    print(f"[endgame] next stage's starts ({args.next_kinds}, walked back) in "
          f"{(time.monotonic() - started) / 60:.1f} min", flush=True)  # fmt: skip
    return f"{args.kinds.replace(',', '/')}/{args.next_kinds.replace(',', '/')}"


def backward_rule(args: argparse.Namespace) -> BackwardRule:
    return BackwardRule(start_cap=args.start_cap, step=args.raise_step, raise_rate=args.raise_rate,
                        max_distance=args.next_max_mate)  # fmt: skip


def caps_text(caps: dict[str, int]) -> str:
    return " ".join(f"{kind}<={cap}" for kind, cap in caps.items())


def endgame_kind(fen: str) -> str:
    """``KQK``, ``KRK``, ... from a start FEN's pieces (strong side first)."""
    board = fen.split()[0]
    white = "K" + "".join(sorted((c for c in board if c in "QRBNP"), key="QRBNP".index))
    black = "K" + "".join(sorted((c.upper() for c in board if c in "qrbnp"), key="QRBNP".index))
    return white + black if len(white) >= len(black) else black + white


def endgame_bootstrap_positions(args: argparse.Namespace, out: Path, folder: Path) -> Path:
    """The endgame phase's positions for a supervised start (once): starts of
    the hardest kinds (``--next-kinds``, else ``--kinds``) walked back from
    random mates, none of them held out, half of ``--bootstrap-positions``;
    one random reply from each (the weak side to move, some of them with a
    piece just left en prise); and the first kinds' training starts.  With
    ``--bootstrap-labels tablebases``, ``--bootstrap-random-positions``
    random positions of those kinds (the strong side to move, at any
    distance from mate) join them, and each position brings the positions
    of its table-perfect game (:func:`table_lines`); ``--bootstrap-replies
    N`` adds one random move from each of N positions of those games
    (:func:`blunder_replies`), ``--bootstrap-blunders N`` up to N positions
    just after a move that throws a won position away (:func:`losing_moves`)."""
    path = folder / "positions.epd"
    if path.exists():
        return path
    held_out = load_start_positions(out / "endgames_eval.epd")
    first = load_start_positions(out / "endgames_train.epd")
    kinds = [kind.name for kind in parse_kinds(args.next_kinds or args.kinds)]
    maximum = args.next_max_mate if args.next_kinds else max(args.max_mate, 1)
    walked = [fen for fen, _ in walked_back_starts(kinds, max(args.bootstrap_positions // 2, 1), seed=31,
                                                   max_distance=maximum, exclude=[*held_out, *first])]  # fmt: skip
    replies = random_replies(walked + first, seed=32, exclude=held_out)
    fens = walked + replies + first
    if args.bootstrap_labels == "tablebases":
        anywhere = endgame_fens(kinds, args.bootstrap_random_positions, seed=34, exclude=[*held_out, *first]) \
            if args.bootstrap_random_positions else []  # fmt: skip
        config = load_config(ROOT / "params.yaml", args.set)
        fens = table_lines(fens + anywhere, held_out, config)
        fens += blunder_replies(fens, args.bootstrap_replies, held_out) + \
            losing_moves(fens, args.bootstrap_blunders, held_out, config)
    write_epd(path, fens, "bootstrap", header=f"supervised start of the endgame phase ({','.join(kinds)}), "
                                             "made by experiments/learning.py")  # fmt: skip
    return path


def blunder_replies(fens: list[str], count: int, held_out: list[str]) -> list[str]:
    """The position after one random legal move from each of ``count``
    positions drawn from ``fens`` (seeded), none of them already in
    ``fens`` or held out.  A table-perfect game never leaves a piece en
    prise, so without these a net trained on the tables' labels has never
    seen the weak side to move with the queen to take: its value head scores
    such a position as the strong side's win and its policy gives the
    capture almost nothing, and a 32-simulation search then plays the
    blunder (the queen in KQKR)."""
    if count <= 0:
        return []
    drawn = random.Random(35).sample(fens, min(count, len(fens)))
    return random_replies(drawn, seed=36, exclude=[*held_out, *fens])


def losing_moves(fens: list[str], count: int, held_out: list[str], config: Config) -> list[str]:
    """Up to ``count`` positions just after a move that throws a win away:
    from positions of ``fens`` (in a seeded order) that the tables score as
    won for the side to move, the position after each move that the tables
    score as a draw or a loss for the mover (the queen left to a rook's
    skewer, a stalemate-free piece hung, ...), none of them already in
    ``fens`` or held out, none of them over.  Random moves find these
    rarely; the tables' labels then teach the value head that the win is
    gone and the policy the refutation."""
    if count <= 0:
        return []
    from pipeline.supervised.tablebase_labels import NotInTables, move_verdicts
    from pipeline.training.tablebases import tablebase_store

    store = tablebase_store(config.train.tablebase_location())
    seen = {fen_key(fen) for fen in [*fens, *held_out]}
    found: list[str] = []
    for index in random.Random(37).sample(range(len(fens)), len(fens)):
        if len(found) >= count:
            break
        board = chess.Board(fens[index])
        try:
            verdicts = move_verdicts(board, store)
        except NotInTables:
            continue
        if not verdicts or max(verdict.result for _, verdict in verdicts) != 1:
            continue
        for move, verdict in verdicts:
            board.push(move)
            key = fen_key(board.fen())
            if verdict.result != 1 and key not in seen and not board.is_game_over():
                seen.add(key)
                found.append(board.fen())
            board.pop()
    return found[:count]


def table_lines(fens: list[str], held_out: list[str], config: Config) -> list[str]:
    """The positions of each start's table-perfect game (the start first),
    each once, none of them a held-out start."""
    from pipeline.supervised.tablebase_labels import table_line
    from pipeline.training.tablebases import tablebase_store

    store = tablebase_store(config.train.tablebase_location())
    rng = random.Random(33)
    seen = {fen_key(fen) for fen in held_out}
    lines: list[str] = []
    for fen in fens:
        for board in table_line(chess.Board(fen), store, rng):
            key = fen_key(board.fen())
            if key not in seen:
                seen.add(key)
                lines.append(board.fen())
    return lines
