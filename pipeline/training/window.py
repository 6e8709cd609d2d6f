"""The replay window: which training positions of a shard folder one run reads.

Shards are taken newest first (by name: ``gen0003-task00012.parquet`` sorts
by generation) until the window holds ``train.window_positions`` training
positions (``full_search`` rows); of the oldest shard taken only its last rows
are used, so the window is exact.  With ``train.window_growth`` > 0 the size
grows with the data as KataGo's does (:func:`window_size`).

Every shard taken is validated (:func:`pipeline.shards.read_shard`); a bad one
is moved to ``<data>/quarantine/`` with a ``.reason.txt`` beside it, as
:func:`pipeline.shards.load_shards` does, and the window reaches further back.

The result is a :class:`Window`: a list of :class:`Piece` (shard path, its
row counts, the training-row range used), saved as JSON in the run folder so
that a resumed run reads exactly the same positions.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.atomic import atomic_write
from pipeline.shards import ShardError, list_shards, quarantine_shard, read_shard
from pipeline.training.config import TrainConfig

__all__ = [
    "Piece",
    "TrainDataError",
    "Window",
    "build_window",
    "count_training_rows",
    "window_size",
]

log = logging.getLogger(__name__)

WINDOW_FORMAT = "zerochess-window/1"


class TrainDataError(ValueError):
    """The training data cannot be used: names the folder or shard and the values."""


@dataclass(frozen=True)
class Piece:
    """Training rows ``[start, stop)`` of one shard (counted among its ``full_search`` rows).

    Attributes:
        path: the shard file.
        num_rows: all rows of the shard when the window was built.
        training_rows: its ``full_search`` rows.
        start: first training row used.
        stop: one past the last training row used.
    """

    path: str
    num_rows: int
    training_rows: int
    start: int
    stop: int

    @property
    def rows(self) -> int:
        """Positions this piece contributes."""
        return self.stop - self.start


@dataclass(frozen=True)
class Window:
    """The positions one training run reads (newest shard first).

    Attributes:
        data_dir: the shard folder.
        total_positions: training positions in the whole folder (N of the growing window).
        size: the window size the run asked for.
        pieces: the shard ranges in the window.
    """

    data_dir: str
    total_positions: int
    size: int
    pieces: tuple[Piece, ...] = field(default_factory=tuple)

    @property
    def positions(self) -> int:
        """Positions in the window (``size`` unless the data has fewer)."""
        return sum(piece.rows for piece in self.pieces)

    def digest(self) -> str:
        """A short hash of the pieces: a resumed run checks it reads the same data."""
        text = json.dumps([asdict(p) for p in self.pieces], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        return {"format": WINDOW_FORMAT, **asdict(self), "pieces": [asdict(p) for p in self.pieces]}

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "<window>") -> Window:
        if not isinstance(data, dict) or data.get("format") != WINDOW_FORMAT:
            raise TrainDataError(f"{source}: not a {WINDOW_FORMAT} window file")
        try:
            pieces = tuple(Piece(**piece) for piece in data["pieces"])
            return cls(data["data_dir"], int(data["total_positions"]), int(data["size"]), pieces)
        except (KeyError, TypeError) as error:
            raise TrainDataError(f"{source}: malformed window file ({error})") from error

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the window as JSON, atomically."""
        with atomic_write(path) as handle:
            handle.write(json.dumps(self.to_dict(), indent=1).encode())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Window:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise TrainDataError(f"cannot read window file {path}: {error}") from error
        return cls.from_dict(data, str(path))


def window_size(total_positions: int, config: TrainConfig) -> int:
    """Positions the window should hold when the data has ``total_positions``.

    Fixed (``window_positions``) unless ``window_growth`` > 0; then, with
    c = ``window_positions``, alpha = ``window_exponent``, beta = ``window_growth``:
    N itself while N <= c, else ``c * (1 + beta * ((N / c) ** alpha - 1) / alpha)``
    (KataGo's power-law taper), never more than N.
    """
    c = config.window_positions
    if config.window_growth == 0 or total_positions <= c:
        return c
    alpha, beta = config.window_exponent, config.window_growth
    grown = c * (1 + beta * ((total_positions / c) ** alpha - 1) / alpha)
    return min(total_positions, int(grown))


def count_training_rows(path: str) -> int | None:
    """``full_search`` rows of a shard from that column alone; None if it cannot be read."""
    try:
        column = pq.read_table(path, columns=["full_search"]).column("full_search")
    except (pa.ArrowException, OSError, ValueError, KeyError):
        return None
    return int(pc.sum(column).as_py() or 0)


def build_window(
    data_dir: str | os.PathLike[str], config: TrainConfig, policy_encoding: str
) -> Window:
    """Select, validate (quarantining bad shards) and describe the replay window.

    Raises:
        FileNotFoundError: ``data_dir`` does not exist.
        TrainDataError: no training positions, or a shard's policy encoding
            differs from the network's.
    """
    directory = os.fspath(data_dir)
    paths = list_shards(directory)
    counts = {path: count_training_rows(path) for path in paths}
    total = sum(count or 0 for count in counts.values())
    size = window_size(total, config)
    pieces: list[Piece] = []
    taken = 0
    for path in reversed(paths):
        if taken >= size:
            break
        piece = _take(path, size - taken, config.check_legality, policy_encoding)
        if piece is not None:
            pieces.append(piece)
            taken += piece.rows
    if taken == 0:
        raise TrainDataError(
            f"{directory}: no training positions (full_search rows) in {len(paths)} shard(s)"
        )
    log.info(
        "replay window: %d positions from %d of %d shards (%d in the folder, window %d)",
        taken,
        len(pieces),
        len(paths),
        total,
        size,
    )
    return Window(directory, total, size, tuple(pieces))


def _take(path: str, wanted: int, check_legality: bool, policy_encoding: str) -> Piece | None:
    """The piece of up to ``wanted`` newest training rows of a valid shard; None if empty or bad."""
    try:
        table = read_shard(path, check_legality=check_legality)
    except ShardError as error:
        quarantine(path, error.reason)
        return None
    encodings = pc.unique(table.column("policy_encoding")).to_pylist()
    if encodings and encodings != [policy_encoding]:
        raise TrainDataError(
            f"shard {path}: policy encoding {encodings} does not match the network's net.policy_encoding "
            f"{policy_encoding!r}"
        )
    rows = int(pc.sum(table.column("full_search")).as_py() or 0)
    if rows == 0:
        return None
    used = min(rows, wanted)
    return Piece(path, table.num_rows, rows, rows - used, rows)


def quarantine(path: str, reason: str) -> None:
    """Move a bad shard to ``quarantine/`` beside it with a ``.reason.txt``
    (:func:`pipeline.shards.quarantine_shard`; logged, never raises)."""
    try:
        moved = quarantine_shard(path, reason)
    except (OSError, ValueError, pa.ArrowException) as error:
        log.error("bad shard %s could not be quarantined (%s): %s", path, error, reason)
        return
    log.warning("quarantined bad shard %s: %s", moved, reason)


