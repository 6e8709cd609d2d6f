"""Rows as :class:`PositionRecord` objects, and Arrow tables built from records or columns.

Part of :mod:`pipeline.shards` (import from there)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from models.encoding import HISTORY_STEPS, META_SIZE, ROW_WIDTH
from pipeline.shards.decode import decode_history, decode_meta, list_numpy
from pipeline.shards.schema import (
    INDEX_LIST,
    LE_U64,
    PROB_LIST,
    SHARD_SCHEMA,
    UNKNOWN_PLIES,
    ShardTableError,
    first_true,
)

# ---------------------------------------------------------------------------
# Records and table construction
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class PositionRecord:
    """One searched position: the row of a shard (see :data:`SHARD_SCHEMA`;
    ``root_d`` 0 and ``game_plies`` :data:`UNKNOWN_PLIES` when not known)."""

    game_id: str
    ply: int
    fen: str
    history: npt.NDArray[np.uint64]  # (8, 14) PlaneHistory.snapshot()
    meta: npt.NDArray[np.uint8]  # (7,) board_meta(board)
    policy_encoding: str
    policy_index: npt.NDArray[np.integer]
    policy_prob: npt.NDArray[np.floating]
    z: int
    root_q: float
    root_visits: int
    full_search: bool
    generation: int
    result: str
    termination: str
    root_d: float = 0.0
    game_plies: int = UNKNOWN_PLIES


def _int_column(values: npt.ArrayLike, dtype: type[np.integer], column: str) -> pa.Array:
    """Arrow integer array of ``values``; raises ShardTableError if one does not fit ``dtype``."""
    array = np.asarray(values)
    if array.ndim != 1 or not (np.issubdtype(array.dtype, np.integer) or array.dtype == bool):
        raise ShardTableError(column, f"expected a 1-D integer sequence, got {array.dtype}")
    info = np.iinfo(dtype)
    bad = np.flatnonzero((array < info.min) | (array > info.max))
    if bad.size:
        row = int(bad[0])
        raise ShardTableError(column, f"does not fit {info.dtype}", row=row, value=array[row])
    return pa.array(array.astype(dtype), type=pa.from_numpy_dtype(dtype))


def _fixed_binary(
    values: npt.ArrayLike, shape: tuple[int, ...], dtype: np.dtype[Any], column: str
) -> pa.FixedSizeBinaryArray:
    """Arrow fixed_size_binary array from a (B, *shape) integer array, one row per entry."""
    array = np.asarray(values)
    if array.ndim != len(shape) + 1 or array.shape[1:] != shape:
        raise ShardTableError(column, f"expected shape (B, {', '.join(map(str, shape))})",
                              value=array.shape)
    if array.dtype.kind not in "ui" or array.dtype.itemsize != dtype.itemsize:
        raise ShardTableError(column, f"expected dtype {dtype.name}", value=str(array.dtype))
    data = np.ascontiguousarray(array.astype(dtype, copy=False))
    width = int(np.prod(shape)) * dtype.itemsize
    return pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(width), len(array), [None, pa.py_buffer(data.tobytes())]
    )


def _policy_lists(
    index: Sequence[npt.ArrayLike], prob: Sequence[npt.ArrayLike]
) -> tuple[pa.ListArray, pa.ListArray]:
    """Arrow list<uint16> / list<float32> arrays of the sparse policies, checked per row."""
    indices = [np.asarray(row).reshape(-1) for row in index]
    probs = [np.asarray(row, dtype=np.float32).reshape(-1) for row in prob]
    if len(indices) != len(probs):
        raise ShardTableError("policy_prob", "row count differs from policy_index",
                              value=(len(indices), len(probs)))
    lengths = np.array([len(row) for row in indices], dtype=np.int64)
    prob_lengths = np.array([len(row) for row in probs], dtype=np.int64)
    row = first_true(lengths != prob_lengths)
    if row is not None:
        raise ShardTableError("policy_prob", f"{prob_lengths[row]} probabilities for "
                                             f"{lengths[row]} indices", row=row)
    offsets = np.zeros(len(indices) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    flat_index = np.concatenate(indices) if indices else np.zeros(0, dtype=np.int64)
    flat_prob = np.concatenate(probs) if probs else np.zeros(0, dtype=np.float32)
    row_ids = np.repeat(np.arange(len(indices)), lengths)
    if flat_index.size and not np.issubdtype(flat_index.dtype, np.integer):
        raise ShardTableError("policy_index", "expected integer indices",
                              value=str(flat_index.dtype))
    bad = np.flatnonzero((flat_index < 0) | (flat_index > np.iinfo(np.uint16).max))
    if bad.size:
        k = int(bad[0])
        raise ShardTableError("policy_index", "does not fit uint16", row=int(row_ids[k]),
                              value=int(flat_index[k]))
    offsets_array = pa.array(offsets, type=pa.int32())
    return (
        pa.ListArray.from_arrays(offsets_array, pa.array(flat_index.astype(np.uint16)),
                                 type=INDEX_LIST),
        pa.ListArray.from_arrays(offsets_array, pa.array(flat_prob, type=pa.float32()),
                                 type=PROB_LIST),
    )


def table_from_columns(
    *,
    game_id: Sequence[str],
    ply: npt.ArrayLike,
    fen: Sequence[str],
    history: npt.ArrayLike,
    meta: npt.ArrayLike,
    policy_encoding: Sequence[str],
    policy_index: Sequence[npt.ArrayLike],
    policy_prob: Sequence[npt.ArrayLike],
    z: npt.ArrayLike,
    root_q: npt.ArrayLike,
    root_visits: npt.ArrayLike,
    full_search: npt.ArrayLike,
    generation: npt.ArrayLike,
    result: Sequence[str],
    termination: Sequence[str],
    root_d: npt.ArrayLike | None = None,
    game_plies: npt.ArrayLike | None = None,
) -> pa.Table:
    """Builds a shard table from columns (history (B, 8, 14) uint64, meta (B, 7) uint8).

    ``root_d`` defaults to 0 and ``game_plies`` to :data:`UNKNOWN_PLIES` for
    every row.  Checks shapes, dtypes and integer ranges (raising
    ShardTableError); the content itself is checked by :func:`validate_table`
    (``write_shard`` does).
    """
    rows = len(game_id)
    if root_d is None:
        root_d = np.zeros(rows, dtype=np.float32)
    if game_plies is None:
        game_plies = np.full(rows, UNKNOWN_PLIES, dtype=np.int64)
    index_list, prob_list = _policy_lists(policy_index, policy_prob)
    arrays = [
        pa.array(game_id, type=pa.string()),
        _int_column(ply, np.int32, "ply"),
        pa.array(fen, type=pa.string()),
        _fixed_binary(history, (HISTORY_STEPS, ROW_WIDTH), LE_U64, "history"),
        _fixed_binary(meta, (META_SIZE,), np.dtype(np.uint8), "meta"),
        pa.array(policy_encoding, type=pa.string()),
        index_list,
        prob_list,
        _int_column(z, np.int8, "z"),
        pa.array(np.asarray(root_q, dtype=np.float32), type=pa.float32()),
        _int_column(root_visits, np.int32, "root_visits"),
        pa.array(np.asarray(full_search, dtype=bool), type=pa.bool_()),
        _int_column(generation, np.int32, "generation"),
        pa.array(result, type=pa.string()),
        pa.array(termination, type=pa.string()),
        pa.array(np.asarray(root_d, dtype=np.float32), type=pa.float32()),
        _int_column(game_plies, np.int32, "game_plies"),
    ]
    lengths = {field.name: len(array) for field, array in zip(SHARD_SCHEMA, arrays, strict=True)}
    if len(set(lengths.values())) > 1:
        raise ShardTableError("<columns>", "columns have different lengths", value=lengths)
    return pa.Table.from_arrays(arrays, schema=SHARD_SCHEMA)


def records_to_table(records: Sequence[PositionRecord]) -> pa.Table:
    """Builds a shard table from records (one columnar build, see :func:`table_from_columns`)."""
    empty_history = np.zeros((0, HISTORY_STEPS, ROW_WIDTH), dtype=np.uint64)
    empty_meta = np.zeros((0, META_SIZE), dtype=np.uint8)
    for row, record in enumerate(records):
        _check_record_shapes(record, row)
    return table_from_columns(
        game_id=[r.game_id for r in records],
        ply=np.array([r.ply for r in records], dtype=np.int64),
        fen=[r.fen for r in records],
        history=np.stack([r.history for r in records]) if records else empty_history,
        meta=np.stack([r.meta for r in records]) if records else empty_meta,
        policy_encoding=[r.policy_encoding for r in records],
        policy_index=[r.policy_index for r in records],
        policy_prob=[r.policy_prob for r in records],
        z=np.array([r.z for r in records], dtype=np.int64),
        root_q=np.array([r.root_q for r in records], dtype=np.float32),
        root_visits=np.array([r.root_visits for r in records], dtype=np.int64),
        full_search=np.array([r.full_search for r in records], dtype=bool),
        generation=np.array([r.generation for r in records], dtype=np.int64),
        result=[r.result for r in records],
        termination=[r.termination for r in records],
        root_d=np.array([r.root_d for r in records], dtype=np.float32),
        game_plies=np.array([r.game_plies for r in records], dtype=np.int64),
    )


def _check_record_shapes(record: PositionRecord, row: int) -> None:
    """Raises ShardTableError if a record's history or meta array has the wrong shape."""
    history_shape = np.shape(record.history)
    if history_shape != (HISTORY_STEPS, ROW_WIDTH):
        raise ShardTableError("history", f"expected shape ({HISTORY_STEPS}, {ROW_WIDTH})",
                              row=row, value=history_shape)
    if np.shape(record.meta) != (META_SIZE,):
        raise ShardTableError("meta", f"expected shape ({META_SIZE},)", row=row,
                              value=np.shape(record.meta))


def table_to_records(table: pa.Table) -> list[PositionRecord]:
    """Converts a shard table back to records (per-row Python: for inspection and tests)."""
    history = decode_history(table)
    meta = decode_meta(table)
    index_offsets, index_values = list_numpy(table, "policy_index")
    _, prob_values = list_numpy(table, "policy_prob")
    columns = {name: table.column(name).to_pylist() for name in SHARD_SCHEMA.names
               if name not in ("history", "meta", "policy_index", "policy_prob")}
    records = []
    for row in range(table.num_rows):
        span = slice(index_offsets[row], index_offsets[row + 1])
        records.append(PositionRecord(
            **{name: values[row] for name, values in columns.items()},
            history=history[row].copy(),
            meta=meta[row].copy(),
            policy_index=index_values[span].copy(),
            policy_prob=prob_values[span].copy(),
        ))  # fmt: skip
    return records
