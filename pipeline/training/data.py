"""Batches from the replay window: a deterministic, resumable stream.

Consumers.  Every DataLoader worker of every DDP rank is one *consumer*
(``rank * workers + worker``).  The window's pieces (shard ranges) are dealt
to the consumers after one seeded permutation, so consumers read disjoint
shards (when there are fewer shards than consumers, each shard is cut into
disjoint row ranges instead).

Shuffling.  Each consumer's stream is endless, epoch after epoch.  An epoch
permutes its pieces (seeded by ``(seed, consumer, epoch)``) and cuts them into
groups of at least ``shuffle_buffer`` positions; a group's shards are loaded
together and its rows permuted (seeded by ``(seed, consumer, epoch, group)``)
into whole batches (a remainder smaller than a batch is left out of that
epoch).  A group's columns become numpy arrays once (:class:`GroupArrays`: only the
columns the batch needs are read, the value targets computed for the whole
group) and each batch is decoded from them in one native pass
(:func:`pipeline.shards.decode.decode_rows`; ``decoder="reference"`` keeps
the readable path: Arrow ``take`` and :func:`decode_batch`, the same tensors).
With workers, the Lightning loader passes :class:`CompactBatch` es (history words and
sparse pi, ~1/20 of the bytes) from its workers, and the trainer's process
builds planes and dense pi on its device (:func:`expand_batch`).

Resuming.  The stream is a pure function of the window, the seed, the
consumer count and the batch size, so the position in it is one number:
the batches the training loop consumed (``global_step``).  The DataLoader
hands out worker ``j % workers``'s batches in turn, so on resume each worker
takes the role (consumer) whose batch is due at its turn and skips that
consumer's share (:func:`worker_skip`) without reading the skipped groups.
:class:`ShardDataModule` stores that number and the stream's signature in
the checkpoint, and refuses a checkpoint whose signature differs.
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

from pipeline.shards import (
    decode_planes,
    decode_targets,
    select_training_rows,
    shard_version,
    training_row_groups,
    upgrade_table,
)
from pipeline.training.batches import (
    Batch,
    CompactBatch,
    GroupArrays,
    expand_batch,
    known_ending_columns,
    rescore_rows,
    stream_columns,
)
from pipeline.training.config import TrainConfig
from pipeline.training.targets import (
    MOVES_LEFT_COLUMNS,
    Q_COLUMNS,
    moves_left_targets,
    value_targets,
    wdl_targets,
)
from pipeline.training.window import Piece, TrainDataError, Window, build_window

__all__ = [
    "Batch",
    "CompactBatch",
    "ShardDataModule",
    "StreamSpec",
    "WindowDataset",
    "assign_pieces",
    "batch_stream",
    "expand_batch",
    "worker_skip",
]

log = logging.getLogger(__name__)

TRAINING_COLUMNS = (
    "history",
    "meta",
    "policy_encoding",
    "policy_index",
    "policy_prob",
    "z",
    "full_search",
    *Q_COLUMNS,
    *MOVES_LEFT_COLUMNS,
)
"""The shard columns training reads (a version 1 shard lacks ``root_d`` and
``game_plies``: :func:`pipeline.shards.upgrade_table` fills them)."""
DECODERS = ("fast", "reference")
"""How :func:`batch_stream` decodes: ``fast`` reads only the columns the
batch needs, turns each shuffle group into numpy columns once and decodes a
batch in one native pass (:func:`pipeline.shards.decode.decode_rows`);
``reference`` takes the batch's rows from the Arrow table and decodes them
with :func:`decode_batch` (the readable path).  Both give the same tensors."""

_ASSIGN_STREAM = 0x5EED


def assign_pieces(pieces: tuple[Piece, ...], consumers: int, seed: int) -> list[tuple[Piece, ...]]:
    """Deal ``pieces`` to ``consumers`` disjointly (row ranges when there are too few shards)."""
    if len(pieces) < consumers:
        pieces = tuple(part for piece in pieces for part in _split(piece, consumers))
    order = np.random.default_rng([seed, _ASSIGN_STREAM]).permutation(len(pieces))
    return [tuple(pieces[i] for i in order[c::consumers]) for c in range(consumers)]


def _split(piece: Piece, parts: int) -> list[Piece]:
    bounds = np.linspace(piece.start, piece.stop, parts + 1).astype(int)
    return [
        replace(piece, start=int(a), stop=int(b)) for a, b in itertools.pairwise(bounds) if b > a
    ]


def worker_skip(batches: int, worker: int, workers: int) -> int:
    """Batches worker ``worker`` of ``workers`` produced among the first ``batches`` of its loader."""
    return max(0, (batches - worker + workers - 1) // workers)


@dataclass(frozen=True)
class StreamSpec:
    """One consumer's endless batch stream.

    Attributes:
        pieces: the shard ranges it reads.
        batch_size: positions per batch.
        shuffle_buffer: positions loaded and permuted together (at least).
        seed: the run's seed.
        consumer: its number (seeds its permutations).
        policy_encoding: the network's policy encoding (the size of pi).
        value_target: ``z``, ``q`` or ``mix`` (:mod:`pipeline.training.targets`).
        q_ratio: the weight of q in a ``mix`` target.
        value_head: the network's value head: ``scalar`` (targets ``[B]``) or
            ``wdl`` (targets ``[B, 3]``, :func:`~pipeline.training.targets.wdl_targets`).
        moves_left: the network has a moves-left head: batches carry the
            plies left (:func:`~pipeline.training.targets.moves_left_targets`).
        decoder: one of :data:`DECODERS` (the same batches either way).
        known_endings: rescore the z of known endings (``train.known_endings``).
        tablebases: the folder of the distance-to-mate tables that rescore
            z and the plies left (``train.tablebases``; empty: off).
    """

    pieces: tuple[Piece, ...]
    batch_size: int
    shuffle_buffer: int
    seed: int
    consumer: int
    policy_encoding: str
    value_target: str = "z"
    q_ratio: float = 0.5
    value_head: str = "scalar"
    moves_left: bool = False
    decoder: str = "fast"
    known_endings: bool = False
    tablebases: str = ""

    @property
    def positions(self) -> int:
        return sum(piece.rows for piece in self.pieces)

    def groups(self, epoch: int) -> list[tuple[Piece, ...]]:
        """The epoch's groups of pieces, each of at least ``shuffle_buffer`` positions (but the last)."""
        order = np.random.default_rng([self.seed, self.consumer, epoch]).permutation(
            len(self.pieces)
        )
        target = max(self.shuffle_buffer, self.batch_size)
        groups: list[list[Piece]] = []
        current: list[Piece] = []
        rows = 0
        for index in order:
            current.append(self.pieces[index])
            rows += self.pieces[index].rows
            if rows >= target:
                groups.append(current)
                current, rows = [], 0
        if current:
            if groups and rows < self.batch_size:
                groups[-1].extend(current)
            else:
                groups.append(current)
        return [tuple(group) for group in groups]

    def permutation(self, epoch: int, group: int, rows: int) -> np.ndarray:
        return np.random.default_rng([self.seed, self.consumer, epoch, group + 1]).permutation(rows)


def batch_stream(spec: StreamSpec, skip: int = 0, compact: bool = False) -> Iterator[Batch]:
    """The consumer's batches, endlessly, after skipping the first ``skip`` (without reading them).

    With ``compact`` (the ``fast`` decoder only) the batches are
    :class:`CompactBatch` es, to be expanded by :func:`expand_batch`.

    Raises:
        TrainDataError: the consumer has fewer positions than a batch, or a
            shard changed since the window was built.
    """
    if spec.positions < spec.batch_size:
        raise TrainDataError(
            f"consumer {spec.consumer} has {spec.positions} positions, fewer than train.batch_size "
            f"{spec.batch_size}: use a larger window, fewer loader_workers or devices, or a smaller batch"
        )
    if spec.decoder not in DECODERS:
        raise ValueError(f"decoder must be one of {DECODERS}, got {spec.decoder!r}")
    fast = spec.decoder == "fast"
    if compact and not fast:
        raise ValueError("compact batches need the fast decoder")
    columns = stream_columns(spec) if fast else (*TRAINING_COLUMNS, *known_ending_columns(spec))
    epoch = 0
    while True:
        for number, group in enumerate(spec.groups(epoch)):
            rows = sum(piece.rows for piece in group)
            count = rows // spec.batch_size
            if skip >= count:
                skip -= count
                continue
            table = load_group(group, columns)
            order = spec.permutation(epoch, number, rows)
            arrays = GroupArrays.of(table, spec) if fast else None
            for index in range(skip, count):
                rows_of_batch = order[index * spec.batch_size : (index + 1) * spec.batch_size]
                if arrays is not None:
                    yield arrays.compact(rows_of_batch) if compact else arrays.batch(rows_of_batch)
                    continue
                batch = table.take(pa.array(rows_of_batch))
                yield decode_batch(
                    batch, spec.policy_encoding, spec.value_target, spec.q_ratio, spec.value_head,
                    spec.moves_left, spec.known_endings, spec.tablebases,
                )  # fmt: skip
            skip = 0
        epoch += 1


def load_group(group: tuple[Piece, ...], columns: tuple[str, ...] = TRAINING_COLUMNS) -> pa.Table:
    """The training rows of a group's pieces, concatenated in piece order."""
    tables = [load_piece(piece, columns) for piece in group]
    return pa.concat_tables(tables).combine_chunks()


def load_piece(piece: Piece, columns: tuple[str, ...] = TRAINING_COLUMNS) -> pa.Table:
    """The training rows ``[start, stop)`` of a shard (validated when the window was built),
    its ``columns`` that the shard has (:func:`~pipeline.shards.upgrade_table` adds the rest).
    Only the row groups that may hold training rows are read
    (:func:`~pipeline.shards.training_row_groups`).

    Raises:
        TrainDataError: the shard's row counts differ from the window's.
    """
    with pq.ParquetFile(piece.path, page_checksum_verification=True) as parquet:
        schema = parquet.schema_arrow
        rows = parquet.metadata.num_rows
        table = parquet.read_row_groups(
            training_row_groups(parquet.metadata),
            columns=[name for name in columns if name in schema.names],
            use_threads=False,
        )
    table = upgrade_table(table, shard_version(schema))
    training = select_training_rows(table)
    if rows != piece.num_rows or training.num_rows != piece.training_rows:
        raise TrainDataError(
            f"shard {piece.path} changed since the window was built: {rows} rows "
            f"({training.num_rows} training), the window has {piece.num_rows} ({piece.training_rows})"
        )
    return training.slice(piece.start, piece.rows)


def decode_batch(
    table: pa.Table,
    policy_encoding: str,
    value_target: str = "z",
    q_ratio: float = 0.5,
    value_head: str = "scalar",
    moves_left: bool = False,
    known_endings: bool = False,
    tablebases: str = "",
) -> Batch:
    """(planes uint8, dense pi, value target[, plies left]) tensors of a table
    of training rows (the target of a ``wdl`` value head is a (win, draw,
    loss) distribution; the plies left come with ``moves_left``; with
    ``known_endings`` the z of known endings is rescored first, and with
    ``tablebases`` (a folder) the positions its tables hold)."""
    planes = decode_planes(table)
    pi, z = decode_targets(table, policy_encoding)
    plies_left = moves_left_targets(table) if moves_left else None
    z, plies_left = rescore_rows(table, z, plies_left, known_endings, tablebases)
    targets = wdl_targets if value_head == "wdl" else value_targets
    target = targets(table, z, value_target, q_ratio)
    batch = (torch.from_numpy(planes), torch.from_numpy(pi), torch.from_numpy(target))
    if plies_left is not None:
        return (*batch, torch.from_numpy(plies_left))
    return batch


class WindowDataset(IterableDataset):
    """The batches of one DDP rank; each DataLoader worker streams its own consumer.

    Use with ``DataLoader(dataset, batch_size=None)``: items are whole batches.

    Args:
        window: the replay window.
        config: batch size, shuffle buffer and seed.
        policy_encoding: the network's policy encoding.
        rank: this process's DDP rank.
        world_size: DDP processes.
        start_batch: batches this rank's loader already handed out (resume).
        value_head: the network's value head (``scalar`` or ``wdl``).
        moves_left: the network has a moves-left head (batches carry its target).
        decoder: one of :data:`DECODERS`.
        compact: yield :class:`CompactBatch` es (the trainer's process expands
            them, on its device: :func:`expand_batch`).
    """

    def __init__(
        self,
        window: Window,
        config: TrainConfig,
        policy_encoding: str,
        rank: int = 0,
        world_size: int = 1,
        start_batch: int = 0,
        value_head: str = "scalar",
        moves_left: bool = False,
        decoder: str = "fast",
        compact: bool = False,
    ) -> None:
        super().__init__()
        self.decoder = decoder
        self.compact = compact
        self.window = window
        self.config = config
        self.policy_encoding = policy_encoding
        self.rank = rank
        self.world_size = world_size
        self.start_batch = start_batch
        self.value_head = value_head
        self.moves_left = moves_left

    def spec(self, worker: int, workers: int) -> StreamSpec:
        """The stream of worker ``worker`` of ``workers`` on this rank."""
        consumers = self.world_size * workers
        consumer = self.rank * workers + worker
        pieces = assign_pieces(self.window.pieces, consumers, self.config.seed)[consumer]
        return StreamSpec(
            pieces,
            self.config.batch_size,
            self.config.shuffle_buffer,
            self.config.seed,
            consumer,
            self.policy_encoding,
            self.config.value_target,
            self.config.q_ratio,
            self.value_head,
            self.moves_left,
            self.decoder,
            self.config.known_endings,
            self.config.tablebase_folder(),
        )

    def __iter__(self) -> Iterator[Batch]:
        info = get_worker_info()
        worker, workers = (info.id, info.num_workers) if info is not None else (0, 1)
        # A new loader starts its turns at worker 0, but batch ``start_batch`` is
        # due from worker ``start_batch % workers``: shift the roles to match.
        role = (worker + self.start_batch) % workers
        skip = worker_skip(self.start_batch, role, workers)
        return batch_stream(self.spec(role, workers), skip, compact=self.compact)


class ShardDataModule(pl.LightningDataModule):
    """The replay window of a shard folder as a Lightning data module.

    ``prepare_data`` (one process) builds and validates the window and saves
    it to ``window_path`` (or keeps the saved one when ``reuse_window``);
    ``setup`` (every rank) loads it.  The checkpoint holds the batches
    consumed and the stream's signature.  With loader workers the loader
    hands out :class:`CompactBatch` es (cheap to pass from the workers and to
    copy to a GPU); :meth:`on_after_batch_transfer` builds the planes and
    dense pi on the trainer's device (:func:`expand_batch`).

    Args:
        data_dir: the shard folder.
        window_path: where the window is saved (in the run folder).
        config: the training parameters.
        policy_encoding: the network's policy encoding.
        reuse_window: keep an existing ``window_path`` (resume).
        pin_memory: pin batches for CUDA.
        value_head: the network's value head (``scalar`` or ``wdl``).
        moves_left: the network has a moves-left head (batches carry its target).
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        window_path: str | os.PathLike[str],
        config: TrainConfig,
        policy_encoding: str,
        reuse_window: bool = False,
        pin_memory: bool = False,
        value_head: str = "scalar",
        moves_left: bool = False,
    ) -> None:
        super().__init__()
        self.data_dir = os.fspath(data_dir)
        self.window_path = Path(window_path)
        self.config = config
        self.policy_encoding = policy_encoding
        self.reuse_window = reuse_window
        self.pin_memory = pin_memory
        self.value_head = value_head
        self.moves_left = moves_left
        self.window: Window | None = None
        self.start_batch = 0
        self.prepare_data_per_node = False  # one process in the whole job builds the window

    def prepare_data(self) -> None:
        if self.reuse_window and self.window_path.exists():
            saved = Window.load(self.window_path)
            missing = [
                p.path for p in saved.pieces if "://" not in p.path and not os.path.exists(p.path)
            ]
            if missing:
                raise TrainDataError(
                    f"{self.window_path}: shards of the saved window are gone: {missing[:4]}"
                )
            if os.path.abspath(saved.data_dir) != os.path.abspath(self.data_dir):
                log.warning(
                    "resuming on the window of %s saved in %s, not on %s",
                    saved.data_dir,
                    self.window_path,
                    self.data_dir,
                )
            log.info("reusing the replay window saved in %s", self.window_path)
            return
        build_window(self.data_dir, self.config, self.policy_encoding).save(self.window_path)

    def setup(self, stage: str) -> None:
        self.window = Window.load(self.window_path)
        workers = max(1, self.config.loader_workers)
        consumers = self._world_size() * workers
        for consumer, pieces in enumerate(
            assign_pieces(self.window.pieces, consumers, self.config.seed)
        ):
            rows = sum(piece.rows for piece in pieces)
            if rows < self.config.batch_size:
                raise TrainDataError(
                    f"{self.data_dir}: the window has {self.window.positions} positions; consumer {consumer} of "
                    f"{consumers} gets {rows}, fewer than train.batch_size {self.config.batch_size}"
                )

    def _world_size(self) -> int:
        return self.trainer.world_size if self.trainer is not None else 1

    def train_dataloader(self) -> DataLoader:
        if self.window is None:
            raise RuntimeError("ShardDataModule.setup was not called")
        rank = self.trainer.global_rank if self.trainer is not None else 0
        dataset = WindowDataset(
            self.window,
            self.config,
            self.policy_encoding,
            rank,
            self._world_size(),
            self.start_batch,
            self.value_head,
            self.moves_left,
            compact=self.config.loader_workers > 0,
        )
        workers = self.config.loader_workers
        return DataLoader(
            dataset,
            batch_size=None,
            num_workers=workers,
            pin_memory=self.pin_memory,
            prefetch_factor=4 if workers else None,
            persistent_workers=False,
        )

    def on_after_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        """Planes and dense pi built on the trainer's device from the compact batch."""
        return expand_batch(batch) if isinstance(batch, CompactBatch) else batch

    def signature(self) -> dict[str, Any]:
        """What the stream depends on besides the position in it."""
        if self.window is None:
            raise RuntimeError("ShardDataModule.setup was not called")
        return {
            "window": self.window.digest(),
            "batch_size": self.config.batch_size,
            "shuffle_buffer": self.config.shuffle_buffer,
            "seed": self.config.seed,
            "loader_workers": max(1, self.config.loader_workers),
            "world_size": self._world_size(),
        }

    def state_dict(self) -> dict[str, Any]:
        consumed = self.trainer.global_step if self.trainer is not None else self.start_batch
        return {"batches_consumed": int(consumed), "signature": self.signature()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        saved = state_dict.get("signature", {})
        for key, value in self.signature().items():
            if saved.get(key) != value:
                raise TrainDataError(
                    f"cannot resume: the checkpoint's data stream has {key}={saved.get(key)!r}, this run "
                    f"{value!r} (resume with the same window, batch size, seed, workers and devices)"
                )
        self.start_batch = int(state_dict["batches_consumed"])
        log.info("data stream resumes after %d batches", self.start_batch)
