"""A backward curriculum over mate distance: self-play starts near the mate
first, further back as each kind's mates are learnt.

Self-play from a KBNK start fifteen moves from mate almost never ends in
mate while the network is weak, so its value head sees only draws and the
strong side learns nothing (``experiments/learning.py``: KBNK stayed at the random
network's 2-5 of 30 held-out mates for 45 minutes of self-play from starts
spread evenly over 1..20 moves).  Here each kind has a *cap*: its self-play
starts are the walked-back starts (:func:`~pipeline.selfplay.endgames.walked_back_starts`)
of nominal distance at most the cap.  After each generation, the games that
began in the upper half of a kind's range (distance above ``cap // 2``) are
counted; when the strong side mated in ``raise_rate`` of them (and there were
``min_games``), the cap rises by ``step``, up to ``max_distance``.

The start file balances the distances within a kind (each distance's starts
repeated to the most numerous one's count: mates in one are common among
walked-back starts and would crowd out the frontier) and the kinds (each
kind's list repeated to the longest kind's), so a kind whose cap lags is not
also played less.  The
caps are state: :func:`load_caps` / :func:`save_caps` keep them in a JSON
file (atomic writes), so a rerun goes on from the caps it reached.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import chess

from pipeline.atomic import atomic_write
from pipeline.config_errors import ConfigError

__all__ = [
    "BackwardRule",
    "Walked",
    "fen_key",
    "frontier_mates",
    "load_caps",
    "load_walked",
    "raise_caps",
    "save_caps",
    "save_walked",
    "stage_fens",
    "started_games",
]


@dataclass(frozen=True)
class BackwardRule:
    """When a kind's cap rises: ``raise_rate`` of at least ``min_games``
    frontier games mated, then by ``step``, from ``start_cap`` to ``max_distance``."""

    start_cap: int = 2
    step: int = 2
    raise_rate: float = 0.7
    max_distance: int = 20
    min_games: int = 8

    def __post_init__(self) -> None:
        if not 1 <= self.start_cap <= self.max_distance:
            raise ConfigError(f"backward start_cap must be in 1..max_distance ({self.max_distance}), got {self.start_cap}")
        if self.step < 1:
            raise ConfigError(f"backward step must be >= 1, got {self.step}")
        if not 0.0 < self.raise_rate <= 1.0:
            raise ConfigError(f"backward raise_rate must be in (0, 1], got {self.raise_rate}")
        if self.min_games < 1:
            raise ConfigError(f"backward min_games must be >= 1, got {self.min_games}")


@dataclass(frozen=True)
class Walked:
    """A training start: its FEN, its kind's name and its nominal mate distance."""

    fen: str
    kind: str
    distance: int


def fen_key(fen: str) -> str:
    """The position part of a FEN (board, side, castling, en passant): starts
    and recorded positions compare on it, whatever their move counters."""
    return " ".join(fen.split()[:4])


def save_walked(path: str | Path, starts: Iterable[Walked]) -> None:
    rows = [{"fen": s.fen, "kind": s.kind, "distance": s.distance} for s in starts]
    with atomic_write(path) as handle:
        handle.write(json.dumps(rows, indent=0).encode())


def load_walked(path: str | Path) -> list[Walked]:
    """The starts :func:`save_walked` wrote; ConfigError naming the file and field when malformed."""
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
        starts = [Walked(str(row["fen"]), str(row["kind"]), int(row["distance"])) for row in rows]
    except (OSError, ValueError, TypeError, KeyError) as error:
        raise ConfigError(f"{path}: not a list of walked-back starts (fen, kind, distance): {error!r}") from error
    for index, start in enumerate(starts):
        if start.distance < 1:
            raise ConfigError(f"{path}: start {index} has distance {start.distance} (must be >= 1)")
    return starts


def load_caps(path: str | Path, kinds: Sequence[str], rule: BackwardRule) -> dict[str, int]:
    """The caps saved at ``path``, else ``rule.start_cap`` for each kind."""
    saved: dict[str, int] = {}
    if Path(path).exists():
        try:
            saved = {str(k): int(v) for k, v in json.loads(Path(path).read_text(encoding="utf-8")).items()}
        except (ValueError, TypeError, AttributeError) as error:
            raise ConfigError(f"{path}: not a JSON object of kind -> cap: {error!r}") from error
    return {kind: saved.get(kind, rule.start_cap) for kind in kinds}


def save_caps(path: str | Path, caps: Mapping[str, int]) -> None:
    with atomic_write(path) as handle:
        handle.write(json.dumps(dict(caps), sort_keys=True).encode())


def stage_fens(starts: Sequence[Walked], caps: Mapping[str, int], kept: Sequence[str] = (),
               keep_share: float = 0.0) -> list[str]:  # fmt: skip
    """The self-play starts for ``caps``: each kind's starts within its cap,
    every distance equally often, repeated to the same count for every kind,
    plus ``kept`` (cycled) as a ``keep_share`` of the whole (starts of kinds
    learnt earlier)."""
    if not 0.0 <= keep_share < 1.0:
        raise ConfigError(f"keep_share must be in [0, 1), got {keep_share}")
    by_kind = {kind: _by_distance([s for s in starts if s.kind == kind and s.distance <= cap])
               for kind, cap in caps.items()}  # fmt: skip
    empty = sorted(kind for kind, fens in by_kind.items() if not fens)
    if empty:
        raise ConfigError(f"no walked-back starts within the cap for {', '.join(empty)} (caps {dict(caps)})")
    longest = max(len(fens) for fens in by_kind.values())
    fens = [fens[i % len(fens)] for fens in by_kind.values() for i in range(longest)]
    if kept and keep_share > 0.0:
        copies = max(1, round(keep_share / (1.0 - keep_share) * len(fens)))
        fens += [kept[i % len(kept)] for i in range(copies)]
    return fens


def _by_distance(starts: Sequence[Walked]) -> list[str]:
    """One kind's starts with every distance equally often (each distance's
    starts cycled to the largest distance's count): the mates in one, which
    are many, do not crowd out the frontier."""
    groups: dict[int, list[str]] = {}
    for start in starts:
        groups.setdefault(start.distance, []).append(start.fen)
    most = max((len(fens) for fens in groups.values()), default=0)
    return [fens[i % len(fens)] for _, fens in sorted(groups.items()) for i in range(most)]


def frontier_mates(games: Iterable[tuple[str, str]], starts: Sequence[Walked],
                   caps: Mapping[str, int]) -> dict[str, tuple[int, int]]:  # fmt: skip
    """``kind -> (mates, games)`` over ``games`` (start FEN, PGN result) that
    began at a walked-back start in the upper half of its kind's range
    (distance above ``cap // 2``): the strong side is the side to move at the start."""
    where = {fen_key(s.fen): s for s in starts}
    counts = {kind: [0, 0] for kind in caps}
    for fen, result in games:
        start = where.get(fen_key(fen))
        if start is None or start.kind not in caps or start.distance <= caps[start.kind] // 2:
            continue
        strong_white = chess.Board(fen).turn == chess.WHITE
        counts[start.kind][1] += 1
        counts[start.kind][0] += result == ("1-0" if strong_white else "0-1")
    return {kind: (mates, total) for kind, (mates, total) in counts.items()}


def raise_caps(caps: Mapping[str, int], mates: Mapping[str, tuple[int, int]], rule: BackwardRule) -> dict[str, int]:
    """The caps after one generation: each kind whose frontier games were mated
    at ``rule.raise_rate`` (of at least ``rule.min_games``) moves ``rule.step`` further back."""
    raised = dict(caps)
    for kind, cap in caps.items():
        won, total = mates.get(kind, (0, 0))
        if total >= rule.min_games and won >= math.ceil(rule.raise_rate * total - 1e-9) and cap < rule.max_distance:
            raised[kind] = min(cap + rule.step, rule.max_distance)
    return raised


def started_games(shards: Iterable[str | Path]) -> list[tuple[str, str]]:
    """``(start FEN, result)`` of each game recorded in these self-play shards
    (its lowest recorded ply's position; the shards' ``fen`` and ``result`` columns)."""
    import pyarrow.parquet as pq

    first: dict[str, tuple[int, str, str]] = {}
    for shard in shards:
        try:
            table = pq.read_table(shard, columns=["game_id", "ply", "fen", "result"])
        except (OSError, ValueError, KeyError) as error:  # pyarrow's ArrowInvalid is a ValueError
            raise ConfigError(f"{shard}: cannot read the self-play games' starts: {error}") from error
        for game, ply, fen, result in zip(*(table.column(name).to_pylist() for name in ("game_id", "ply", "fen", "result"))):
            if game not in first or ply < first[game][0]:
                first[game] = (ply, fen, result)
    return [(fen, result) for _, fen, result in first.values()]
