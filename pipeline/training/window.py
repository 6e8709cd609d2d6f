"""The replay window: which training positions of a shard folder one run reads.

Shards are taken newest first (by name: ``gen0003-task00012.parquet`` sorts
by generation) until the window holds ``train.window_positions`` training
positions (``full_search`` rows); of the oldest shard taken only its last rows
are used, so the window is exact.  With ``train.window_growth`` > 0 the size
grows with the data as KataGo's does (:func:`window_size`).

Every shard taken is validated (:func:`pipeline.shards.read_shard`); a bad one
is moved to ``<data>/quarantine/`` with a ``.reason.txt`` beside it, as
:func:`pipeline.shards.load_shards` does, and the window reaches further back.

With ``train.anchor_fraction`` f > 0, labelled shards of ``train.anchor_dir``
join the window after the self-play pieces: n self-play positions bring
``n * f / (1 - f)`` anchor positions (:func:`anchor_pieces`), so that every
batch keeps about that share of, e.g., a supervised start's labels.

The result is a :class:`Window`: a list of :class:`Piece` (shard path, its
row counts, the training-row range used), saved as JSON in the run folder so
that a resumed run reads exactly the same positions.

A trainer that builds windows again and again (the async loop's) keeps a
:class:`WindowIndex`: the folder's shards with their row counts, kept from one
build to the next, so a build lists the folder and reads only the shards that
landed since (their ``full_search`` and ``policy_encoding`` columns and
footer; their rows were validated by their writer, whose digest the driver
verified); :meth:`WindowIndex.reset` (after the batch path met a bad shard)
makes the next build validate every shard it takes again, as above.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.atomic import atomic_write
from pipeline.shards import ShardError, check_schema, list_shards, quarantine_shard, read_shard
from pipeline.training.config import TrainConfig

__all__ = [
    "Piece",
    "TrainDataError",
    "Window",
    "WindowIndex",
    "anchor_pieces",
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


@dataclass(frozen=True)
class _Counted:
    """A shard as the index knows it: rows, training rows, policy encodings,
    and why it is bad ('' if it read)."""

    rows: int
    training: int
    encodings: tuple[str, ...]
    bad: str = ""


class WindowIndex:
    """The shards of a folder with their row counts, kept between window builds.

    :meth:`refresh` lists the folder and counts only the shards it has not
    seen (their footer and the ``full_search``/``policy_encoding`` columns,
    page checksums verified); the training positions of the whole folder are
    kept as a running total.  :meth:`reset` forgets everything: the next
    build validates every shard it takes in full (:func:`read_shard`).

    ``paths`` is oldest first in the order the shards landed, as refreshes
    first saw them (by name within one refresh, so by name at the start), and
    a window takes the newest arrivals: a shard whose task was handed out
    early but landed late (self-play tasks finish out of order) joins the
    window when it lands, instead of sorting below a window already full of
    shards with later names and never being trained on."""

    def __init__(self, data_dir: str | os.PathLike[str]) -> None:
        self.directory = os.fspath(data_dir)
        self.shards: dict[str, _Counted] = {}
        self.paths: list[str] = []
        self.total = 0
        self.trusted = True  # False after reset(): the next build validates in full

    def refresh(self) -> int:
        """List the folder; count the new shards; returns how many are new."""
        paths = list_shards(self.directory)
        present = set(paths)
        for gone in [path for path in self.shards if path not in present]:
            self.total -= self.shards.pop(gone).training
        new = [path for path in paths if path not in self.shards]
        for path in new:
            counted = _count(path)
            self.shards[path] = counted
            self.total += counted.training
        self.paths = [path for path in self.paths if path in present] + new
        return len(new)

    def reset(self) -> None:
        """Forget the counts; the next build reads the folder again and validates in full."""
        self.shards, self.paths, self.total, self.trusted = {}, [], 0, False

    def take(self, path: str, wanted: int, check_legality: bool, policy_encoding: str) -> Piece | None:
        """The piece of up to ``wanted`` newest training rows of ``path`` (None: empty or bad, quarantined)."""
        counted = self.shards.get(path)
        if counted is None or not self.trusted:
            return _take(path, wanted, check_legality, policy_encoding)
        if counted.bad:
            quarantine(path, counted.bad)
            self.total -= self.shards.pop(path).training
            return None
        _check_encodings(path, list(counted.encodings), policy_encoding)
        if counted.training == 0:
            return None
        used = min(counted.training, wanted)
        return Piece(path, counted.rows, counted.training, counted.training - used, counted.training)


def _count(path: str) -> _Counted:
    """Rows, training rows and policy encodings of a shard from its footer and two small columns."""
    try:
        parquet = pq.ParquetFile(path, page_checksum_verification=True)
        check_schema(parquet.schema_arrow)
        table = parquet.read(columns=["full_search", "policy_encoding"], use_threads=False)
    except (pa.ArrowException, OSError, ValueError) as error:  # ShardTableError is a ValueError
        return _Counted(0, 0, (), f"not a readable shard ({type(error).__name__}: {error})")
    training = int(pc.sum(table.column("full_search")).as_py() or 0)
    encodings = tuple(pc.unique(table.column("policy_encoding").cast(pa.string())).to_pylist())
    return _Counted(table.num_rows, training, encodings)


def build_window(
    data_dir: str | os.PathLike[str], config: TrainConfig, policy_encoding: str, index: WindowIndex | None = None
) -> Window:
    """Select, validate (quarantining bad shards) and describe the replay window.

    With ``index`` (kept by the caller between builds) the folder's shards
    are counted once each and only new ones are read (see :class:`WindowIndex`);
    the caller refreshes it first.

    Raises:
        FileNotFoundError: ``data_dir`` does not exist.
        TrainDataError: no training positions, or a shard's policy encoding
            differs from the network's.
    """
    directory = os.fspath(data_dir)
    if index is None:
        paths = list_shards(directory)
        counts = {path: count_training_rows(path) for path in paths}
        total = sum(count or 0 for count in counts.values())
    else:
        if not index.trusted:
            index.refresh()
        paths, total = index.paths, index.total
    size = window_size(total, config)
    pieces: list[Piece] = []
    taken = 0
    for path in reversed(paths):
        if taken >= size:
            break
        if index is None:
            piece = _take(path, size - taken, config.check_legality, policy_encoding)
        else:
            piece = index.take(path, size - taken, config.check_legality, policy_encoding)
        if piece is not None:
            pieces.append(piece)
            taken += piece.rows
    if index is not None:
        index.trusted = True  # the shards taken are validated now
    if taken == 0:
        raise TrainDataError(
            f"{directory}: no training positions (full_search rows) in {len(paths)} shard(s)"
        )
    if config.anchor_fraction > 0:
        pieces += anchor_pieces(config, taken, total, policy_encoding)
    log.info(
        "replay window: %d positions from %d of %d shards (%d in the folder, window %d)",
        taken,
        len(pieces),
        len(paths),
        total,
        size,
    )
    return Window(directory, total, size, tuple(pieces))


def anchor_pieces(config: TrainConfig, selfplay_rows: int, total: int, policy_encoding: str) -> list[Piece]:
    """The pieces of ``train.anchor_dir`` that join a window of ``selfplay_rows`` self-play positions.

    ``round(selfplay_rows * f / (1 - f))`` positions for f = ``train.anchor_fraction``
    (all of the folder's when it has fewer): whole shards in an order seeded
    by ``train.seed`` and ``total`` (the self-play positions of the data
    folder, so each new window draws another mix), the last one cut short.
    Every shard taken is validated; a bad one is quarantined, as self-play's are.

    Raises:
        TrainDataError: the folder does not exist or holds no training
            positions, or a shard's policy encoding differs from the network's.
    """
    directory = config.anchor_dir
    if not os.path.isdir(directory):
        raise TrainDataError(f"train.anchor_dir {directory!r}: no such folder (labelled shards to mix in)")
    paths = list_shards(directory)
    wanted = round(selfplay_rows * config.anchor_fraction / (1 - config.anchor_fraction))
    order = np.random.default_rng([config.seed, total]).permutation(len(paths))
    pieces: list[Piece] = []
    taken = 0
    for position in order:
        if taken >= wanted:
            break
        piece = _take(paths[position], wanted - taken, config.check_legality, policy_encoding)
        if piece is not None:
            pieces.append(piece)
            taken += piece.rows
    if not pieces:
        raise TrainDataError(
            f"train.anchor_dir {directory!r}: no training positions (full_search rows) in {len(paths)} shard(s)"
        )
    if taken < wanted:
        log.warning("train.anchor_dir %s: %d positions, fewer than the %d wanted; all of them are used",
                    directory, taken, wanted)  # fmt: skip
    log.info("anchor: %d positions from %d of %d shards of %s", taken, len(pieces), len(paths), directory)
    return pieces


def _take(path: str, wanted: int, check_legality: bool, policy_encoding: str) -> Piece | None:
    """The piece of up to ``wanted`` newest training rows of a valid shard; None if empty or bad."""
    try:
        table = read_shard(path, check_legality=check_legality)
    except ShardError as error:
        quarantine(path, error.reason)
        return None
    _check_encodings(path, pc.unique(table.column("policy_encoding")).to_pylist(), policy_encoding)
    rows = int(pc.sum(table.column("full_search")).as_py() or 0)
    if rows == 0:
        return None
    used = min(rows, wanted)
    return Piece(path, table.num_rows, rows, rows - used, rows)


def _check_encodings(path: str, encodings: list[str], policy_encoding: str) -> None:
    if encodings and encodings != [policy_encoding]:
        raise TrainDataError(
            f"shard {path}: policy encoding {encodings} does not match the network's net.policy_encoding "
            f"{policy_encoding!r}"
        )


def quarantine(path: str, reason: str) -> None:
    """Move a bad shard to ``quarantine/`` beside it with a ``.reason.txt``
    (:func:`pipeline.shards.quarantine_shard`; logged, never raises)."""
    try:
        moved = quarantine_shard(path, reason)
    except (OSError, ValueError, pa.ArrowException) as error:
        log.error("bad shard %s could not be quarantined (%s): %s", path, error, reason)
        return
    log.warning("quarantined bad shard %s: %s", moved, reason)


