"""Endgame start positions: seeded, legal, playable, optionally filtered by
Stockfish's mate distance.

A *kind* names the material as ``K<strong pieces>K<weak pieces>`` with the
piece letters ``Q R B N P``: ``KQK`` (king and queen against king), ``KRK``,
``KBBK`` (the two bishops always on opposite colours), ``KBNK``, ``KPK``,
``KQKR``...  The strong side (the pieces after the first ``K``) is to move.

A generated position is legal (``chess.Board.is_valid``), not over, and no
strong piece stands en prise to the weak side (a queen next to the lone king
teaches nothing but how to lose it).  With ``max_mate`` the positions are kept
only when Stockfish sees a forced mate for the strong side in 1..``max_mate``
moves, as many at each distance: uniformly random placements rarely end in
mate in self-play from a random network (``experiments/learning.py``: 2 mates in
192 games), mates in at most 6 moves often enough to be learnt from.

``zerochess endgames --out FILE.epd --kinds KQK,KRK --count 600 --max-mate 6``
writes such a file for ``selfplay.start_positions`` or ``gating.openings``;
:mod:`pipeline.selfplay.curriculum` generates starts per generation without Stockfish.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import chess

from pipeline.atomic import atomic_write
from pipeline.config_errors import ConfigError
from pipeline.selfplay.backward import fen_key
from pipeline.selfplay.retro import bishops_on_both_colours, walk_back

__all__ = [
    "DEFAULT_KINDS",
    "EndgameKind",
    "endgame_fens",
    "mate_labels",
    "parse_kind",
    "parse_kinds",
    "random_endgame",
    "random_replies",
    "walked_back_starts",
    "write_epd",
]

DEFAULT_KINDS = ("KQK", "KRK")
"""The easiest mates (the curriculum's first stage)."""

SIDES = ("white", "black", "random")
_LETTERS = {"Q": chess.QUEEN, "R": chess.ROOK, "B": chess.BISHOP, "N": chess.KNIGHT, "P": chess.PAWN}
_MAX_PIECES = 7  # besides the two kings: more than any ending worth a curriculum


@dataclass(frozen=True)
class EndgameKind:
    """Material of an ending: the strong side's pieces and the weak side's (kings aside)."""

    name: str
    strong: tuple[chess.PieceType, ...]
    weak: tuple[chess.PieceType, ...]


def parse_kind(name: str) -> EndgameKind:
    """``KQK`` -> queen against nothing; ``KQKR`` -> queen against rook.

    Raises :class:`~pipeline.config_errors.ConfigError` naming the kind."""
    text = name.strip().upper()
    if not text.startswith("K") or text.count("K") != 2:
        raise ConfigError(f"endgame kind {name!r} must read K<pieces>K<pieces>, e.g. KQK, KRK, KBNK, KQKR")
    strong_text, weak_text = text[1:].split("K")
    letters = strong_text + weak_text
    unknown = sorted({letter for letter in letters if letter not in _LETTERS})
    if unknown:
        raise ConfigError(f"endgame kind {name!r}: unknown piece letter(s) {', '.join(unknown)} (use Q R B N P)")
    if not strong_text:
        raise ConfigError(f"endgame kind {name!r}: the strong side needs at least one piece besides its king")
    if len(letters) > _MAX_PIECES:
        raise ConfigError(f"endgame kind {name!r}: at most {_MAX_PIECES} pieces besides the kings")
    return EndgameKind(text, tuple(_LETTERS[c] for c in strong_text), tuple(_LETTERS[c] for c in weak_text))


def parse_kinds(kinds: str | Iterable[str]) -> list[EndgameKind]:
    """Kinds from ``"KQK,KRK"`` or a list of names (at least one)."""
    names = [part for part in (kinds.split(",") if isinstance(kinds, str) else kinds) if part.strip()]
    if not names:
        raise ConfigError("no endgame kinds given (e.g. KQK,KRK)")
    return [parse_kind(name) for name in names]


def random_endgame(rng: random.Random, kind: EndgameKind, strong: chess.Color = chess.WHITE) -> chess.Board | None:
    """One random placement of ``kind`` with the ``strong`` side to move, or
    None when it is illegal, over, or leaves a strong piece en prise."""
    pieces = [(chess.KING, chess.WHITE), (chess.KING, chess.BLACK)]
    pieces += [(piece, chess.WHITE) for piece in kind.strong] + [(piece, chess.BLACK) for piece in kind.weak]
    squares = rng.sample(range(64), len(pieces))
    board = chess.Board(None)
    for square, (piece, colour) in zip(squares, pieces):
        board.set_piece_at(square, chess.Piece(piece, colour))
    if not bishops_on_both_colours(board, kind):
        return None
    board.turn = chess.WHITE
    if not board.is_valid() or board.is_game_over():
        return None
    if _strong_piece_en_prise(board):
        return None
    return board if strong == chess.WHITE else board.mirror()


def _strong_piece_en_prise(board: chess.Board) -> bool:
    """Could the weak side (Black here), were it to move, capture a strong piece?"""
    weak_to_move = board.copy(stack=False)
    weak_to_move.turn = chess.BLACK
    if not weak_to_move.is_valid():  # White would be in check with Black to move: a capture is possible
        return True
    return any(weak_to_move.color_at(move.to_square) == chess.WHITE for move in weak_to_move.legal_moves)


def endgame_fens(
    kinds: str | Sequence[str],
    count: int,
    seed: int,
    *,
    max_mate: int = 0,
    strong: str = "white",
    exclude: Iterable[str] = (),
    stockfish_path: str = "",
    max_attempts: int = 0,
    mate_nodes: int = 0,
    walk_back: bool = False,
) -> list[str]:
    """``count`` distinct starts of the given kinds (in turn: as many of each), seeded.

    Args:
        kinds: ``"KQK,KRK"`` or a list of kind names.
        count: positions wanted (>= 1).
        seed: the same seed gives the same positions (with ``max_mate``: on
            the same Stockfish build, which searches on one thread).
        max_mate: when > 0, keep a position only when Stockfish finds a
            forced mate for the strong side in 1..``max_mate`` moves (search
            depth ``2 * max_mate + 4``), as many at each distance.
        strong: ``white``, ``black`` or ``random``: the strong side (always to move).
        exclude: FENs not to return (e.g. the training starts, for held-out ones).
        stockfish_path: the Stockfish binary (empty: PATH, then /usr/games/stockfish).
        max_attempts: give up (ConfigError) after this many placements; 0:
            ``2000 * count`` without a filter, ``20000 * count`` with one.
        mate_nodes: when > 0, Stockfish's mate search is bounded by nodes
            instead of depth (``go mate N nodes K``: it stops at the first
            mate in at most N moves); needed for long mates (KBNK's 20 moves
            would be depth 44).
        walk_back: draw candidates by walking back from random checkmates
            (:mod:`pipeline.selfplay.retro`; needs ``max_mate``, no pawns)
            instead of random placements: ``2d - 1`` un-moves for a distance
            ``d`` whose bucket is not full.  Stockfish labels them the same way.

    Raises:
        ConfigError: bad arguments, or not enough positions found.
    """
    parsed = parse_kinds(kinds)
    if count < 1:
        raise ConfigError(f"endgame count must be >= 1, got {count}")
    if max_mate < 0:
        raise ConfigError(f"max_mate must be >= 0, got {max_mate}")
    if strong not in SIDES:
        raise ConfigError(f"strong side must be one of {', '.join(SIDES)}, got {strong!r}")
    if mate_nodes < 0:
        raise ConfigError(f"mate_nodes must be >= 0, got {mate_nodes}")
    if walk_back and not max_mate:
        raise ConfigError("walk_back needs max_mate > 0 (Stockfish labels the walked-back positions)")
    limit = max_attempts or count * (20000 if max_mate else 2000)
    if max_mate:
        import chess.engine

        with chess.engine.SimpleEngine.popen_uci(_stockfish(stockfish_path)) as engine:
            # one thread, a fixed hash: the same positions in the same order give the same answers
            engine.configure({"Threads": 1, "Hash": 16})
            search = _Search(engine, mate_nodes, walk_back)
            return _generate(parsed, count, seed, max_mate, strong, set(exclude), limit, search)
    return _generate(parsed, count, seed, 0, strong, set(exclude), limit, None)


def walked_back_starts(
    kinds: str | Sequence[str],
    count: int,
    seed: int,
    max_distance: int,
    *,
    exclude: Iterable[str] = (),
    max_attempts: int = 0,
) -> list[tuple[str, int]]:
    """``count`` distinct starts walked back from random mates, without
    Stockfish: ``(fen, d)`` pairs, ``d`` the *nominal* distance (the walk made
    ``2d - 1`` un-moves, so the strong side, White, is to move), as many at
    each ``d`` in ``1..max_distance`` and of each kind, seeded.

    The nominal distance is no proof: the walk's moves need not be forced,
    so the true mate may be nearer or further (at ``d = 1`` it is a mate in
    one).  Thousands of starts take seconds, where Stockfish's labels take
    seconds a start for KBNK: the curriculum's training starts, ordered by how
    far back they were walked; the held-out starts stay Stockfish-labelled
    (:func:`endgame_fens` with ``walk_back``).

    Raises:
        ConfigError: bad arguments, or not enough starts in ``max_attempts`` walks.
    """
    parsed = parse_kinds(kinds)
    if count < 1:
        raise ConfigError(f"walked-back count must be >= 1, got {count}")
    if max_distance < 1:
        raise ConfigError(f"walked-back max_distance must be >= 1, got {max_distance}")
    rng = random.Random(seed)
    seen = set(exclude)
    cells = [(kind, d) for d in range(1, max_distance + 1) for kind in parsed]
    share, extra = divmod(count, len(cells))
    wanted = {cell: share + (index < extra) for index, cell in enumerate(cells)}
    found: list[tuple[str, int]] = []
    for _ in range(max_attempts or 50 * count):
        open_cells = [cell for cell, left in wanted.items() if left]
        if not open_cells:
            break
        kind, d = rng.choice(open_cells)
        board = _walked_back(rng, kind, chess.WHITE, [d])
        if board is None or board.fen() in seen:
            continue
        seen.add(board.fen())
        wanted[(kind, d)] -= 1
        found.append((board.fen(), d))
    if len(found) < count:
        names = ",".join(kind.name for kind in parsed)
        raise ConfigError(f"found only {len(found)} of {count} walked-back {names} starts (max_distance {max_distance})")
    return found


def random_replies(fens: Sequence[str], seed: int, exclude: Iterable[str] = ()) -> list[str]:
    """The position after one uniformly random legal move from each of
    ``fens`` (seeded), so that the other side is to move; a move that ends the
    game (mate, stalemate, a capture down to bare kings) and positions already
    over give none, and a repeated result or one in ``exclude`` is dropped.
    With the strong side to move in ``fens``, the replies are the weak side's
    positions a value head must also score, including those where the strong
    side has just left a piece en prise.

    Raises:
        ConfigError: an invalid FEN (named).
    """
    rng = random.Random(seed)
    seen = {fen_key(fen) for fen in exclude}
    replies: list[str] = []
    for fen in fens:
        try:
            board = chess.Board(fen)
        except ValueError as error:
            raise ConfigError(f"random replies: invalid FEN {fen!r}: {error}") from error
        moves = list(board.legal_moves)
        if not moves or board.is_game_over():
            continue
        board.push(rng.choice(moves))
        key = fen_key(board.fen())
        if board.is_game_over() or key in seen:
            continue
        seen.add(key)
        replies.append(board.fen())
    return replies


def mate_labels(fens: Sequence[str], max_mate: int, nodes: int, stockfish_path: str = "") -> list[int]:
    """Moves to the side to move's forced mate in each position, as a
    node-bounded Stockfish mate search sees it (``go mate max_mate nodes
    nodes``: it stops at the first mate found, which may be longer than
    ``max_mate`` when the node bound ends the search first); 0 where it sees none.  Cheap for short mates: the curriculum's distances for
    :func:`walked_back_starts`, whose nominal distance is no proof.

    Raises:
        ConfigError: ``max_mate`` or ``nodes`` below 1, no Stockfish.
    """
    if max_mate < 1 or nodes < 1:
        raise ConfigError(f"mate labels need max_mate >= 1 and nodes >= 1, got {max_mate} and {nodes}")
    import chess.engine

    with chess.engine.SimpleEngine.popen_uci(_stockfish(stockfish_path)) as engine:
        engine.configure({"Threads": 1, "Hash": 16})
        search = _Search(engine, nodes, True)
        return [_mate_distance(search, chess.Board(fen), max_mate) for fen in fens]


@dataclass(frozen=True)
class _Search:
    """How candidates are drawn and labelled: the engine, its node bound (0:
    depth ``2 * max_mate + 4``), and walking back from mates."""

    engine: object
    mate_nodes: int = 0
    walk_back: bool = False


def _generate(
    kinds: list[EndgameKind],
    count: int,
    seed: int,
    max_mate: int,
    strong: str,
    seen: set[str],
    limit: int,
    search: _Search | None,
) -> list[str]:
    rng = random.Random(seed)
    buckets: dict[int, list[str]] = {}
    per_bucket = math.ceil(count / max(max_mate, 1))
    found = turn = 0  # the kinds take turns: the next one after each position kept (or a full bucket)
    for _ in range(limit):
        side = chess.WHITE if strong == "white" else chess.BLACK if strong == "black" else rng.random() < 0.5
        kind = kinds[turn % len(kinds)]
        if search is not None and search.walk_back:
            board = _walked_back(rng, kind, side, _open_distances(buckets, per_bucket, max_mate))
        else:
            board = random_endgame(rng, kind, side)
        if board is None or board.fen() in seen:
            continue
        seen.add(board.fen())
        needed = _needed(buckets, per_bucket, max_mate)
        distance = _mate_distance(search, board, needed) if search else 0
        if max_mate and not 0 < distance <= max_mate:
            continue
        turn += 1
        bucket = buckets.setdefault(distance, [])
        if len(bucket) < per_bucket:
            bucket.append(board.fen())
            found += 1
            if found >= count:
                break
    fens = [fen for distance in sorted(buckets) for fen in buckets[distance]][:count]
    if len(fens) < count:
        names = ",".join(kind.name for kind in kinds)
        raise ConfigError(
            f"found only {len(fens)} of {count} {names} starts in {limit} placements"
            + (f" with a mate in at most {max_mate} moves" if max_mate else "")
        )
    rng.shuffle(fens)
    return fens


def _open_distances(buckets: dict[int, list[str]], per_bucket: int, max_mate: int) -> list[int]:
    """Mate distances whose bucket is not full yet."""
    return [d for d in range(1, max_mate + 1) if len(buckets.get(d, ())) < per_bucket] or [max_mate]


def _needed(buckets: dict[int, list[str]], per_bucket: int, max_mate: int) -> int:
    """The longest mate distance whose bucket is not full yet (the search need not see further)."""
    return max(_open_distances(buckets, per_bucket, max_mate))


def _walked_back(rng: random.Random, kind: EndgameKind, strong: chess.Color, distances: list[int]) -> chess.Board | None:
    """A candidate ``2d - 1`` un-moves before a random mate (``d`` one of the
    open ``distances``), with the same filter as a random placement."""
    board = walk_back(rng, kind, 2 * rng.choice(distances) - 1)
    if board is None or board.is_game_over() or _strong_piece_en_prise(board):
        return None
    return board if strong == chess.WHITE else board.mirror()


def _mate_distance(search: _Search, board: chess.Board, max_mate: int) -> int:
    """Moves to the strong side's (the side to move's) forced mate as Stockfish
    sees it (at depth ``2 * max_mate + 4``, or within ``search.mate_nodes``
    nodes); 0 when it sees none (or none within ``max_mate`` moves).  A mate
    in one is found without Stockfish."""
    import chess.engine

    if max_mate == 1:
        return int(any(board.is_checkmate() for board in _after_each_move(board)))
    if search.mate_nodes:
        limit = chess.engine.Limit(mate=max_mate, nodes=search.mate_nodes)
    else:
        limit = chess.engine.Limit(depth=2 * max_mate + 4)
    info = search.engine.analyse(board, limit)  # type: ignore[attr-defined]
    return info["score"].pov(board.turn).mate() or 0


def _after_each_move(board: chess.Board) -> list[chess.Board]:
    boards = []
    for move in board.legal_moves:
        after = board.copy(stack=False)
        after.push(move)
        boards.append(after)
    return boards


def _stockfish(configured: str) -> str:
    from pipeline.players.base import PlayerError
    from pipeline.players.stockfish import find_stockfish

    try:
        return find_stockfish(configured)
    except PlayerError as error:
        raise ConfigError(f"the mate-distance filter (max_mate) needs Stockfish: {error}") from error


def write_epd(path: str | Path, fens: Sequence[str], label: str, header: str = "") -> None:
    """Write ``fens`` as an EPD file (``id "LABEL N"``; atomically), with ``# header`` lines
    (e.g. the command that made it), readable by ``selfplay.start_positions``
    and ``gating.openings``."""
    lines = [f"# {line}" for line in (header or f"{label}, made by pipeline/selfplay/endgames.py").splitlines()]
    lines += [f'{" ".join(fen.split()[:4])} id "{label} {i + 1}";' for i, fen in enumerate(fens)]
    with atomic_write(path) as handle:  # self-play may read it between generations: never a torn file
        handle.write(("\n".join(lines) + "\n").encode("utf-8"))
