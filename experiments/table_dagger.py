"""DAgger over the distance-to-mate tables: the data side of ``experiments/learning.py --bootstrap-dagger``.

A supervised start learns the table-perfect games, and the net then plays
positions those games never reach: a king step that lets the rook check and
skewer the queen, a rook offered next to a king that has no other square.
DAgger (Ross, Gordon and Bagnell, 2011) labels the positions the learner
itself reaches with the expert's choice, and trains on them too.  One round:

1. :func:`dagger_starts`: fresh starts of the harder kinds, drawn from the
   supervised start's positions (the strong side to move, won within the
   kinds' mate bound by the tables' verdict, none of them held out);
2. the net plays them against Stockfish's defence, as the evaluation does
   (``experiments/learning.py``'s ``mate_rate``);
3. :func:`visited_positions`: every position of the net's games, either side
   to move;
4. ``zerochess label --tablebases`` labels them (policy, value, plies left);
5. :func:`mix_folder`: the supervised start's shards with every round's new
   ones repeated ``repeat`` times (a few thousand new positions against a
   hundred thousand or more), and the net trains on from where it was
   (``zerochess pretrain --init-checkpoint``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import chess
import chess.pgn

from pipeline.selfplay.endgames import parse_kind
from pipeline.supervised.tablebase_labels import NotInTables, probe
from pipeline.training.tablebases import TablebaseStore

PIECE_WEIGHTS = {chess.QUEEN: 9, chess.ROOK: 5, chess.BISHOP: 3, chess.KNIGHT: 3, chess.PAWN: 1, chess.KING: 0}


def strong_colour(board: chess.Board) -> chess.Color | None:
    """The side with more material (``None`` when equal)."""
    totals = {colour: sum(PIECE_WEIGHTS[piece.piece_type] for piece in board.piece_map().values()
                          if piece.color == colour) for colour in (chess.WHITE, chess.BLACK)}  # fmt: skip
    if totals[chess.WHITE] == totals[chess.BLACK]:
        return None
    return chess.WHITE if totals[chess.WHITE] > totals[chess.BLACK] else chess.BLACK


def kind_shares(text: str) -> tuple[list[str], list[int]]:
    """``KIND[:WEIGHT],...`` (``--dagger-kinds``) as the kinds' names (as
    :func:`parse_kind` spells them) and their weights, 1 where none is
    given: ``"KBBK:2,kqkr:5"`` is ``(["KBBK", "KQKR"], [2, 5])``.  An
    unknown kind or none at all, a weight that is not a whole number >= 1,
    a weight with no kind or a kind named twice raises ``ValueError``
    naming it."""
    kinds: list[str] = []
    weights: list[int] = []
    for item in (part.strip() for part in text.split(",") if part.strip()):
        name, _, weight = (part.strip() for part in item.partition(":"))
        if not name:
            raise ValueError(f"no kind before the weight in {item!r}")
        name = parse_kind(name).name
        try:
            value = int(weight) if weight else 1
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"weight of {name!r} must be a whole number >= 1, got {weight!r}")
        if name in kinds:
            raise ValueError(f"kind {name!r} named twice")
        kinds.append(name)
        weights.append(value)
    if not kinds:
        raise ValueError(f"no endgame kinds given in {text!r} (e.g. KQKR:2,KBNK)")
    return kinds, weights


def kind_quotas(count: int, weights: Sequence[int]) -> list[int]:
    """``count`` split in proportion to ``weights``, each share rounded up
    (equal weights: as many of each kind)."""
    total = sum(weights)
    return [-(-count * weight // total) for weight in weights]


def dagger_starts(fens: Iterable[str], kind_of: Callable[[str], str], kinds: Sequence[str], count: int,
                  max_plies: int, held_out: Sequence[str], store: TablebaseStore, seed: int,
                  weights: Sequence[int] | None = None) -> list[str]:  # fmt: skip
    """Up to ``count`` starts, each of ``kinds`` given its share of them
    (:func:`kind_quotas` of ``weights``, equal shares by default) as far as
    there are: positions of ``fens`` with the strong side to move and a win
    in at most ``max_plies`` plies by the tables, their piece placement not
    one of ``held_out``'s, mirrored where Black is strong (the bench's
    matches give the net White).  ``kind_of`` names a White-strong FEN's
    kind (``experiments/learning.py``'s ``endgame_kind``); drawn in an order seeded
    by ``seed``, so each round draws others."""
    if count < 1 or max_plies < 1:
        raise ValueError(f"dagger starts: count and max_plies must be >= 1, got {count}, {max_plies}")
    weights = list(weights) if weights is not None else [1] * len(kinds)
    if len(weights) != len(kinds) or min(weights, default=1) < 1:
        raise ValueError(f"dagger starts: one weight >= 1 for each of {list(kinds)}, got {weights}")
    pool = list(dict.fromkeys(fens))
    random.Random(seed).shuffle(pool)
    excluded = {fen.split()[0] for fen in held_out}
    quota = dict(zip(kinds, kind_quotas(count, weights), strict=True))
    chosen: dict[str, list[str]] = {kind: [] for kind in kinds}
    for fen in pool:
        board = chess.Board(fen)
        strong = strong_colour(board)
        if strong is None or board.turn != strong:
            continue
        if strong == chess.BLACK:
            board = board.mirror()
        kind = kind_of(board.fen())
        if kind not in chosen or len(chosen[kind]) >= quota[kind] or board.board_fen() in excluded:
            continue
        try:
            verdict = probe(board, store)
        except NotInTables:
            continue
        if verdict.result == 1 and verdict.plies is not None and verdict.plies <= max_plies:
            chosen[kind].append(board.fen())
            if sum(map(len, chosen.values())) >= count:
                break
    return [fen for kind in kinds for fen in chosen[kind]]


def visited_positions(pgn: Path, player_prefix: str = "net:") -> list[str]:
    """Every position (FEN, once each, in order) before a move of the games in
    ``pgn`` whose White player's name starts with ``player_prefix``; a
    missing file gives none."""
    if not pgn.exists():
        return []
    seen: dict[str, str] = {}
    with pgn.open(encoding="utf-8") as handle:
        while (game := chess.pgn.read_game(handle)) is not None:
            if not game.headers.get("White", "").startswith(player_prefix):
                continue
            board = game.board()
            for move in game.mainline_moves():
                seen.setdefault(board.epd(), board.fen())
                board.push(move)
    return list(seen.values())


def mix_folder(folder: Path, base: Path, rounds: Sequence[Path], repeat: int) -> Path:
    """``folder`` with ``train/`` and ``heldout/`` of links: ``base``'s shards
    (a ``zerochess label`` output), and each of ``rounds``' ``train`` shards
    ``repeat`` times.  Its links are made anew at each call."""
    if repeat < 1:
        raise ValueError(f"dagger repeat must be >= 1, got {repeat}")
    for part in ("train", "heldout"):
        target = folder / part
        target.mkdir(parents=True, exist_ok=True)
        for old in target.iterdir():
            if old.is_symlink():  # only the links it made: a quarantine folder stays
                old.unlink()
        for shard in sorted((base / part).glob("*.parquet")):
            os.symlink(shard.resolve(), target / shard.name)
    for number, labels in enumerate(rounds):
        for shard in sorted((labels / "train").glob("*.parquet")):
            for copy in range(repeat):
                os.symlink(shard.resolve(), folder / "train" / f"dagger{number}-{copy}-{shard.name}")
    return folder
