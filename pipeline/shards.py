"""Parquet shards of (s, pi, z) training data: the one owner of their layout.

A *shard* is one Parquet file ``<batch_id>.parquet`` holding the positions of
a batch of self-play games, one row per searched position, with the columns of
:data:`SHARD_SCHEMA` (schema metadata ``zerochess_shard_version = "1"``).

Positions are stored as the encoder's compact inputs, not as planes: the
(8, 14) ``uint64`` snapshot rows of ``PlaneHistory.snapshot()`` (896 bytes)
and the 7 meta values of ``board_meta`` (7 bytes). :func:`decode_planes`
rebuilds the exact (119, 8, 8) planes the search saw with one
``encode_snapshots`` call for the whole batch. The policy target pi is stored
sparse (indices + probabilities in the row's policy encoding) and densified
by :func:`decode_policy`.

Writing (:func:`write_shard`) is atomic: readers never see a partial file.
On a local directory: temporary file in the same folder, fsync,
``os.replace``, directory fsync. On any other ``pyarrow.fs`` filesystem
(``s3://...``, ``gs://...`` URIs or a ``filesystem=`` object): temporary key
in the same prefix, then ``FileSystem.move``; object stores publish an object
atomically (a reader sees the whole old or the whole new object), but the
move itself is a copy + delete, so a crash may leave a temporary key behind
(hidden: its name starts with a dot and it does not end in ``.parquet``).
``file://`` URIs resolve to the local filesystem and take the local path.

Reading (:func:`read_shard`) verifies page checksums, compares the file
schema to :data:`SHARD_SCHEMA` column by column (names, types, order,
nullability; a missing or extra column is an error, never filled with
nulls), then validates every row (:func:`validate_table`). Any problem raises
:class:`ShardError` naming the file, the column, the row and the value.
:func:`load_shards` reads a whole directory and moves bad shards to
``<directory>/quarantine/`` with a ``<name>.reason.txt`` sidecar.

Decoding (:func:`decode_planes`, :func:`decode_policy`) is whole-batch numpy
on the Arrow buffers, with no per-row Python. Validation needs one Python step
per row for the FEN (~10 us), plus legal-move generation with
``check_legality`` (~90 us per distinct position).
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import time
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Final, cast

import chess
import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from models.encoding import (
    HISTORY_STEPS,
    MAX_COUNT,
    META_SIZE,
    PIECE_PLANES,
    ROW_WIDTH,
    board_row,
    encode_snapshots,
    meta_values,
)
from models.policy import PolicyError, get_policy_map
from pipeline.atomic import atomic_write, fsync_directory

__all__ = [
    "HISTORY_BYTES",
    "PROB_SUM_TOLERANCE",
    "QUARANTINE_DIR",
    "RESULTS",
    "SHARD_SCHEMA",
    "SHARD_SUFFIX",
    "SHARD_VERSION",
    "SHARD_VERSION_KEY",
    "PositionRecord",
    "ShardError",
    "ShardNameError",
    "ShardTableError",
    "check_schema",
    "decode_history",
    "decode_meta",
    "decode_planes",
    "decode_policy",
    "decode_targets",
    "list_shards",
    "load_shards",
    "read_shard",
    "records_to_table",
    "select_training_rows",
    "shard_exists",
    "shard_name",
    "quarantine_shard",
    "shard_stats",
    "table_from_columns",
    "table_to_records",
    "validate_table",
    "write_shard",
]

log = logging.getLogger(__name__)

SHARD_VERSION: Final = "1"
SHARD_VERSION_KEY: Final = "zerochess_shard_version"
SHARD_SUFFIX: Final = ".parquet"
QUARANTINE_DIR: Final = "quarantine"
REASON_SUFFIX: Final = ".reason.txt"
HISTORY_BYTES: Final = HISTORY_STEPS * ROW_WIDTH * 8  # 896
PROB_SUM_TOLERANCE: Final = 1e-4
RESULTS: Final[tuple[str, ...]] = ("1-0", "0-1", "1/2-1/2")
_WHITE_SCORE: Final[dict[str, int]] = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}
ROW_GROUP_ROWS: Final = 16_384
"""Rows per Parquet row group (~18 MB in memory, ~1.5 MB zstd-compressed)."""
ZSTD_LEVEL: Final = 3
SHARD_FILE_MODE: Final = 0o644

_BATCH_ID: Final = re.compile(r"[A-Za-z0-9_.-]{1,200}")
_LE_U64: Final = np.dtype("<u8")
_ROW_STRIDE: Final = 1 << 16  # > any uint16 policy index: row * stride + index is unique


def _field(name: str, type_: pa.DataType) -> pa.Field:
    """A non-nullable schema field (every shard column is required)."""
    return pa.field(name, type_, nullable=False)


def _list_type(value_type: pa.DataType) -> pa.ListType:
    """List of non-null items, child named "element" as Parquet writes it (exact round trip)."""
    return pa.list_(pa.field("element", value_type, nullable=False))


_INDEX_LIST: Final = _list_type(pa.uint16())
_PROB_LIST: Final = _list_type(pa.float32())


SHARD_SCHEMA: Final = pa.schema(
    [
        _field("game_id", pa.string()),
        _field("ply", pa.int32()),
        _field("fen", pa.string()),
        _field("history", pa.binary(HISTORY_BYTES)),
        _field("meta", pa.binary(META_SIZE)),
        _field("policy_encoding", pa.string()),
        _field("policy_index", _INDEX_LIST),
        _field("policy_prob", _PROB_LIST),
        _field("z", pa.int8()),
        _field("root_q", pa.float32()),
        _field("root_visits", pa.int32()),
        _field("full_search", pa.bool_()),
        _field("generation", pa.int32()),
        _field("result", pa.string()),
        _field("termination", pa.string()),
    ],
    metadata={SHARD_VERSION_KEY: SHARD_VERSION},
)
"""Arrow schema of a shard; all columns are required (not null)."""

_WRITE_OPTIONS: Final[dict[str, Any]] = {
    "compression": "zstd",
    "compression_level": ZSTD_LEVEL,
    "write_page_checksum": True,
    "row_group_size": ROW_GROUP_ROWS,
    "use_dictionary": ["game_id", "policy_encoding", "result", "termination"],
    # Min/max statistics only where they are small and useful. For the 896-byte
    # history values they would put ~1.8 KB of min/max into every page header
    # (outside the page CRC) and into the footer of every row group.
    "write_statistics": ["game_id", "ply", "z", "root_visits", "full_search", "generation"],
}


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


class ShardTableError(ValueError):
    """The content of a shard table is invalid: names the column, row and value."""

    def __init__(
        self,
        column: str,
        reason: str,
        *,
        row: int | None = None,
        value: object = None,
        context: str = "",
    ) -> None:
        where = f"column {column!r}" + (f" row {row}" if row is not None else "")
        where += f" ({context})" if context else ""
        shown = f"; value {_short(value)}" if value is not None else ""
        super().__init__(f"{where}: {reason}{shown}")
        self.column = column
        self.row = row
        self.value = value
        self.reason = reason


class ShardError(ValueError):
    """A shard file is unreadable or invalid; ``.path`` names it, ``.reason`` says why.

    ``.column`` and ``.row`` are set when the problem is in one cell.
    """

    def __init__(
        self, path: str, reason: str, *, column: str | None = None, row: int | None = None
    ) -> None:
        super().__init__(f"shard {path}: {reason}")
        self.path = path
        self.reason = reason
        self.column = column
        self.row = row


class ShardNameError(ValueError):
    """A batch id cannot be used as a shard file name."""

    def __init__(self, batch_id: object) -> None:
        super().__init__(
            f"invalid batch_id {batch_id!r}: use 1-200 characters of [A-Za-z0-9_.-], "
            "not starting with '.' (no path separators)"
        )
        self.batch_id = batch_id


def _short(value: object, limit: int = 120) -> str:
    """repr of ``value`` cut to ``limit`` characters for error messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------
# Records and table construction
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class PositionRecord:
    """One searched position: the row of a shard (see :data:`SHARD_SCHEMA`)."""

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
    row = _first(lengths != prob_lengths)
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
                                 type=_INDEX_LIST),
        pa.ListArray.from_arrays(offsets_array, pa.array(flat_prob, type=pa.float32()),
                                 type=_PROB_LIST),
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
) -> pa.Table:
    """Builds a shard table from columns (history (B, 8, 14) uint64, meta (B, 7) uint8).

    Checks shapes, dtypes and integer ranges (raising ShardTableError); the
    content itself is checked by :func:`validate_table` (``write_shard`` does).
    """
    index_list, prob_list = _policy_lists(policy_index, policy_prob)
    arrays = [
        pa.array(game_id, type=pa.string()),
        _int_column(ply, np.int32, "ply"),
        pa.array(fen, type=pa.string()),
        _fixed_binary(history, (HISTORY_STEPS, ROW_WIDTH), _LE_U64, "history"),
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
    index_offsets, index_values = _list_numpy(table, "policy_index")
    _, prob_values = _list_numpy(table, "policy_prob")
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


# ---------------------------------------------------------------------------
# Schema
# ---------------------------------------------------------------------------


def _same_type(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Type equality that ignores list child field names ("item" vs Parquet's "element")."""
    if pa.types.is_list(expected):
        return (
            pa.types.is_list(actual)
            and actual.value_field.nullable == expected.value_field.nullable
            and _same_type(actual.value_type, expected.value_type)
        )
    return bool(actual.equals(expected))


def check_schema(schema: pa.Schema, *, require_version: bool = True) -> None:
    """Raises ShardTableError unless ``schema`` matches :data:`SHARD_SCHEMA` exactly.

    Compares column names (missing, extra, duplicated), order, types and
    nullability explicitly, then the ``zerochess_shard_version`` metadata
    (unless ``require_version`` is False).
    """
    expected_names = SHARD_SCHEMA.names
    names = schema.names
    for name in expected_names:
        if name not in names:
            raise ShardTableError(name, "missing column")
    for name in names:
        if name not in expected_names:
            raise ShardTableError(name, "unexpected column")
        if names.count(name) > 1:
            raise ShardTableError(name, "duplicated column")
    for position, (name, expected) in enumerate(zip(names, expected_names, strict=True)):
        if name != expected:
            raise ShardTableError(name, f"column order differs: position {position} "
                                        f"should be {expected!r}", value=names)
    for field, expected in zip(schema, SHARD_SCHEMA, strict=True):
        if not _same_type(field.type, expected.type):
            raise ShardTableError(field.name, f"wrong type, expected {expected.type}",
                                  value=str(field.type))
        if field.nullable != expected.nullable:
            raise ShardTableError(field.name, "column must be declared not null")
    if require_version:
        _check_version(schema)


def _check_version(schema: pa.Schema) -> None:
    """Raises ShardTableError unless the schema metadata holds the supported shard version."""
    metadata = schema.metadata or {}
    version = metadata.get(SHARD_VERSION_KEY.encode())
    if version is None:
        raise ShardTableError(SHARD_VERSION_KEY, "schema metadata key missing")
    if version != SHARD_VERSION.encode():
        raise ShardTableError(SHARD_VERSION_KEY, f"unsupported shard version, "
                                                 f"expected {SHARD_VERSION!r}",
                              value=version.decode(errors="replace"))


# ---------------------------------------------------------------------------
# Column access (numpy views of the Arrow buffers)
# ---------------------------------------------------------------------------


def _fixed_binary_numpy(table: pa.Table, column: str, dtype: np.dtype[Any]) -> np.ndarray:
    """Flat read-only numpy view of a fixed_size_binary column's bytes as ``dtype``."""
    array = table.column(column).combine_chunks()
    if array.null_count:
        raise ShardTableError(column, "null values cannot be decoded")
    width = array.type.byte_width
    count = len(array) * width // dtype.itemsize
    if count == 0:
        return np.zeros(0, dtype=dtype)
    return np.frombuffer(array.buffers()[1], dtype=dtype, count=count,
                         offset=array.offset * width)


def decode_history(table: pa.Table) -> npt.NDArray[np.uint64]:
    """The snapshot rows of every position: (B, 8, 14) uint64 (a read-only buffer view)."""
    flat = _fixed_binary_numpy(table, "history", _LE_U64)
    return flat.reshape(table.num_rows, HISTORY_STEPS, ROW_WIDTH)


def decode_meta(table: pa.Table) -> npt.NDArray[np.uint8]:
    """The meta vectors of every position: (B, 7) uint8 (a read-only buffer view)."""
    flat = _fixed_binary_numpy(table, "meta", np.dtype(np.uint8))
    return flat.reshape(table.num_rows, META_SIZE)


def _list_numpy(table: pa.Table, column: str) -> tuple[npt.NDArray[np.int64], np.ndarray]:
    """(offsets (B + 1,) starting at 0, flat values) of a list column."""
    array = table.column(column).combine_chunks()
    if len(array) == 0:
        value_dtype = array.type.value_type.to_pandas_dtype()
        return np.zeros(1, dtype=np.int64), np.zeros(0, dtype=value_dtype)
    offsets = array.offsets.to_numpy().astype(np.int64)
    start, stop = int(offsets[0]), int(offsets[-1])
    values = array.values.slice(start, stop - start)
    if values.null_count:
        raise ShardTableError(column, "null list items cannot be decoded")
    return offsets - start, values.to_numpy(zero_copy_only=False)


def _row_ids(offsets: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Row number of every flat list value."""
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))


def _categories(table: pa.Table, column: str) -> tuple[list[str], npt.NDArray[np.int32]]:
    """(distinct values, per-row code) of a string column via dictionary encoding."""
    encoded = table.column(column).combine_chunks().dictionary_encode()
    return encoded.dictionary.to_pylist(), encoded.indices.to_numpy(zero_copy_only=False)


# ---------------------------------------------------------------------------
# Decoding for training
# ---------------------------------------------------------------------------


def decode_planes(table: pa.Table) -> npt.NDArray[np.uint8]:
    """The network inputs of every position: (B, 119, 8, 8) uint8, one vectorised pass."""
    return encode_snapshots(decode_history(table), decode_meta(table))


def _policy_size(encodings: list[str], codes: np.ndarray | None = None) -> dict[str, int]:
    """Policy size of each encoding name; ShardTableError for an unknown name.

    ``codes`` (per-row positions in ``encodings``) locates the offending row.
    """
    sizes = {}
    for position, name in enumerate(encodings):
        try:
            sizes[name] = get_policy_map(name).size
        except PolicyError:
            row = _first(codes == position) if codes is not None else None
            raise ShardTableError("policy_encoding", "unknown policy encoding", row=row,
                                  value=name) from None
    return sizes


def decode_policy(table: pa.Table, size: int) -> npt.NDArray[np.float32]:
    """Dense pi: (B, size) float32; every row's encoding must have ``size`` entries."""
    names, codes = _categories(table, "policy_encoding")
    for name, name_size in _policy_size(names, codes).items():
        if name_size != size:
            row = int(np.flatnonzero(codes == names.index(name))[0])
            raise ShardTableError("policy_encoding", f"has {name_size} entries, "
                                                     f"cannot decode at size {size}",
                                  row=row, value=name)
    offsets, index = _list_numpy(table, "policy_index")
    _, prob = _list_numpy(table, "policy_prob")
    if len(index) != len(prob):
        raise ShardTableError("policy_prob", "list lengths differ from policy_index")
    rows = _row_ids(offsets)
    dense = np.zeros((table.num_rows, size), dtype=np.float32)
    np.add.at(dense, (rows, index.astype(np.intp)), prob)
    return dense


def decode_targets(
    table: pa.Table, encoding: str | None = None
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """(dense pi (B, size) float32, z (B,) float32).

    ``size`` comes from ``encoding``, or from the table's single encoding when
    None (a table mixing encodings, or an empty one without ``encoding``, raises).
    """
    if encoding is None:
        names, _ = _categories(table, "policy_encoding")
        if len(names) != 1:
            raise ShardTableError("policy_encoding", "need exactly one encoding to infer "
                                                     "the policy size", value=names)
        encoding = names[0]
    size = _policy_size([encoding])[encoding]
    z = table.column("z").to_numpy().astype(np.float32)
    return decode_policy(table, size), z


def select_training_rows(table: pa.Table) -> pa.Table:
    """The rows that are training targets (``full_search``, playout cap randomization)."""
    return table.filter(table.column("full_search"))


def shard_stats(table: pa.Table) -> dict[str, float | int]:
    """Cheap summary for logs: positions, games, full-search count and fraction, mean |z|."""
    rows = table.num_rows
    full = int(pc.sum(table.column("full_search")).as_py() or 0)
    z = table.column("z").to_numpy().astype(np.float64)
    return {
        "positions": rows,
        "games": len(pc.unique(table.column("game_id"))),
        "full_search": full,
        "full_search_fraction": full / rows if rows else 0.0,
        "mean_abs_z": float(np.abs(z).mean()) if rows else 0.0,
    }


# ---------------------------------------------------------------------------
# Row validation
# ---------------------------------------------------------------------------


def _first(mask: np.ndarray) -> int | None:
    """Index of the first True in ``mask``, or None."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None


def _check_nulls(table: pa.Table) -> None:
    """No nulls in any column (all are required)."""
    for name in SHARD_SCHEMA.names:
        column = table.column(name)
        if column.null_count:
            row = _first(pc.is_null(column).to_numpy(zero_copy_only=False))
            raise ShardTableError(name, "null value in a required column", row=row)


def _check_policy(table: pa.Table) -> tuple[npt.NDArray[np.int64], np.ndarray, np.ndarray]:
    """Checks pi's structure and values; returns (row ids, flat indices, flat probs)."""
    index_offsets, index = _list_numpy(table, "policy_index")
    prob_offsets, prob = _list_numpy(table, "policy_prob")
    row = _first(np.diff(index_offsets) != np.diff(prob_offsets))
    if row is not None:
        raise ShardTableError("policy_prob", "list length differs from policy_index", row=row,
                              value=(int(np.diff(prob_offsets)[row]),
                                     int(np.diff(index_offsets)[row])))
    rows = _row_ids(index_offsets)
    for bad, reason in ((~np.isfinite(prob), "probability is not finite"),
                        (prob < 0, "probability is negative")):
        k = _first(bad)
        if k is not None:
            raise ShardTableError("policy_prob", reason, row=int(rows[k]), value=float(prob[k]))
    sums = np.bincount(rows, weights=prob.astype(np.float64), minlength=table.num_rows)
    row = _first(np.abs(sums - 1.0) > PROB_SUM_TOLERANCE)
    if row is not None:
        raise ShardTableError("policy_prob", f"probabilities sum to {sums[row]:.6g}, "
                                             f"not 1 (tolerance {PROB_SUM_TOLERANCE})", row=row,
                              value=float(sums[row]))
    _check_policy_indices(table, rows, index)
    return rows, index, prob


def _check_policy_indices(table: pa.Table, rows: np.ndarray, index: np.ndarray) -> None:
    """Indices are in range for the row's encoding and unique within the row."""
    names, codes = _categories(table, "policy_encoding")
    sizes = _policy_size(names, codes)
    row_size = np.array([sizes[name] for name in names], dtype=np.int64)[codes]
    k = _first(index.astype(np.int64) >= row_size[rows])
    if k is not None:
        row = int(rows[k])
        raise ShardTableError("policy_index", f"out of range for {names[codes[row]]} "
                                              f"(size {row_size[row]})", row=row,
                              value=int(index[k]))
    keys = np.sort(rows * _ROW_STRIDE + index)
    k = _first(np.diff(keys) == 0)
    if k is not None:
        raise ShardTableError("policy_index", "duplicated index in one row",
                              row=int(keys[k] // _ROW_STRIDE), value=int(keys[k] % _ROW_STRIDE))


def _check_scalars(table: pa.Table) -> None:
    """z in {-1, 0, 1}, known result, non-negative counters, finite root_q."""
    z = table.column("z").to_numpy()
    checks: list[tuple[str, np.ndarray, np.ndarray, str]] = [
        ("z", z, ~np.isin(z, (-1, 0, 1)), "z must be -1, 0 or 1"),
    ]
    for name in ("ply", "root_visits", "generation"):
        values = table.column(name).to_numpy()
        checks.append((name, values, values < 0, "must be >= 0"))
    root_q = table.column("root_q").to_numpy()
    checks.append(("root_q", root_q, ~np.isfinite(root_q), "must be finite"))
    for name, values, bad, reason in checks:
        row = _first(bad)
        if row is not None:
            raise ShardTableError(name, reason, row=row, value=values[row].item())
    names, codes = _categories(table, "result")
    for position, name in enumerate(names):
        if name not in _WHITE_SCORE:
            row = _first(codes == position)
            raise ShardTableError("result", f"must be one of {', '.join(RESULTS)}", row=row,
                                  value=name)


# --- positions: a vectorised fast path, python-chess as the authority ----------------
#
# The fast path reads each FEN's short fields in Python (split, compare with
# meta), expands every placement to 64 characters, and turns the whole batch
# into bitboards with numpy; it accepts a row only if they equal the step-0
# history bitboards (after undoing the encoder's en passant marker) and pass
# cheap validity checks (one king per side, no pawn on a back rank, castling
# rights only with king and rook at home; python-chess ``is_valid`` is not run
# on these rows: three independent representations already agree). Every other
# row goes to ``_checked_board`` (``chess.Board(fen)``), which accepts it or
# raises the precise error. About 10 us per row instead of ~90 us.

_FEN_SLOTS: Final = np.full(256, -1, dtype=np.int8)
for _slot, _symbol in enumerate("PNBRQKpnbrqk."):
    _FEN_SLOTS[ord(_symbol)] = _slot  # 12 = empty square
_DIGIT_RUNS: Final = tuple((str(n), "." * n) for n in range(8, 0, -1))
_TWO_DIGITS: Final = re.compile(r"[1-8]{2}")
_RANK_SEPARATORS: Final = "/" * 7
_FILES: Final = "abcdefgh"
# Column k of an expanded placement (rank 8 first) is square (7 - k // 8) * 8 + k % 8.
_SQUARE_TO_FEN: Final = np.array([(7 - s // 8) * 8 + s % 8 for s in range(64)], dtype=np.intp)
_META_FLAGS: Final = (0, 2, 3, 4, 5)  # meta entries that are 0/1 flags
Words = list[int]
_U64_ONE: Final = np.uint64(1)
# (king home, rook corner) per meta castling flag, for white then black: K, Q, k, q.
_CASTLING_HOMES: Final = (
    (chess.BB_E1, chess.BB_H1), (chess.BB_E1, chess.BB_A1),
    (chess.BB_E8, chess.BB_H8), (chess.BB_E8, chess.BB_A8),
)  # fmt: skip


@dataclass(frozen=True)
class _FenFields:
    """The parts of one FEN the fast path uses."""

    placement: str  # 64 characters, rank 8 first, '.' = empty
    ep_file: int  # -1 when the FEN has no en passant square
    halfmove: int
    fullmove: int


def _castling_field(meta: list[int]) -> str:
    """The FEN castling field implied by meta (our/their flags, side to move in meta[0])."""
    key = (meta[0], meta[2], meta[3], meta[4], meta[5])
    field = _CASTLING_FIELDS.get(key)
    if field is None:
        white, black = _white_black_castling(meta)
        field = "".join(c for c, flag in zip("KQkq", white + black, strict=True) if flag) or "-"
        _CASTLING_FIELDS[key] = field
    return field


_CASTLING_FIELDS: dict[tuple[int, ...], str] = {}
"""Memo of ``_castling_field`` (at most 32 keys: meta flags are checked to be 0/1 first)."""


def _white_black_castling(meta: list[int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """((white K, white Q), (black k, black q)) castling flags from side-relative meta."""
    our, their = (meta[2], meta[3]), (meta[4], meta[5])
    return (their, our) if meta[0] else (our, their)


def _read_fen(fen: str, meta: list[int]) -> _FenFields | None:
    """The fast-path fields of ``fen`` if its turn, castling and clocks agree with meta.

    None for anything unusual or inconsistent (python-chess then decides).
    """
    fields = fen.split(" ")
    if len(fields) != 6 or fields[1] != ("b" if meta[0] else "w"):
        return None
    halfmove, fullmove = _counter(fields[4]), _counter(fields[5])
    if halfmove is None or not fullmove or fields[2] != _castling_field(meta):
        return None
    if min(halfmove, MAX_COUNT) != meta[6] or min(2 * fullmove - 2 + meta[0], MAX_COUNT) != meta[1]:
        return None
    ep_file = _ep_file(fields[3], bool(meta[0]))
    placement = fields[0]
    expanded = _expand_digits(placement)
    if ep_file is None or len(expanded) != 71 or expanded[8::9] != _RANK_SEPARATORS \
            or not expanded.isascii() or _TWO_DIGITS.search(placement):
        return None
    return _FenFields(expanded.replace("/", ""), ep_file, halfmove, fullmove)


def _expand_digits(placement: str) -> str:
    """The placement with every digit n replaced by n dots (str.replace beats translate 5x)."""
    for digit, dots in _DIGIT_RUNS:
        placement = placement.replace(digit, dots)
    return placement


def _counter(text: str) -> int | None:
    """A non-negative FEN counter, or None."""
    return int(text) if text.isdigit() and len(text) <= 9 else None


def _ep_file(field: str, black: bool) -> int | None:
    """File of the en passant square (-1 for "-"), None if malformed for the side to move."""
    if field == "-":
        return -1
    if len(field) == 2 and field[0] in _FILES and field[1] == ("3" if black else "6"):
        return _FILES.index(field[0])
    return None


def _placement_words(placements: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(bitboards (n, 12) uint64 white P..K black P..K, ok (n,)) of expanded placements."""
    if not placements:
        return np.zeros((0, PIECE_PLANES), dtype=np.uint64), np.zeros(0, dtype=bool)
    chars = np.frombuffer("".join(placements).encode("ascii"), dtype=np.uint8)
    slots = _FEN_SLOTS[chars].reshape(len(placements), 64)[:, _SQUARE_TO_FEN]
    ok: np.ndarray = np.asarray((slots >= 0).all(axis=1))
    masks = slots[:, None, :] == np.arange(PIECE_PLANES, dtype=np.int8)[None, :, None]
    packed = np.packbits(masks, axis=2, bitorder="little")  # (n, 12, 8) bytes, a1 first
    return packed.view(_LE_U64).reshape(len(placements), PIECE_PLANES).astype(np.uint64), ok


def _undo_ep_marker(
    history: np.ndarray, ep_file: np.ndarray, black: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(real step-0 bitboards, ok): moves the encoder's en passant marker pawn back.

    The encoder draws the pawn capturable en passant on the last rank of its
    file; ``ok`` is False where the FEN names an ep square but the marker is absent.
    """
    words = history.copy()
    rows = np.flatnonzero(ep_file >= 0)
    file = ep_file[rows].astype(np.uint64)
    row_black = black[rows]
    slot = np.where(row_black, 0, 6)
    marker = np.where(row_black, file, file + np.uint64(56))
    real = np.where(row_black, file + np.uint64(24), file + np.uint64(32))
    ok = np.ones(len(history), dtype=bool)
    ok[rows] = (words[rows, slot] >> marker) & _U64_ONE == _U64_ONE
    words[rows, slot] ^= (_U64_ONE << marker) | (_U64_ONE << real)
    return words, ok


def _plausible(words: np.ndarray, meta: np.ndarray) -> np.ndarray:
    """(n,) bool: one king per side, no pawn on a back rank, castling flags have king + rook."""
    ok = (np.bitwise_count(words[:, 5]) == 1) & (np.bitwise_count(words[:, 11]) == 1)
    back_ranks = np.uint64(chess.BB_BACKRANKS)
    ok &= ((words[:, 0] | words[:, 6]) & back_ranks) == 0
    black = meta[:, 0] != 0
    white_flags = np.where(black[:, None], meta[:, 4:6], meta[:, 2:4])
    black_flags = np.where(black[:, None], meta[:, 2:4], meta[:, 4:6])
    flags = np.concatenate([white_flags, black_flags], axis=1) != 0
    for column, (king, rook) in enumerate(_CASTLING_HOMES):
        colour = 0 if column < 2 else 6
        home = ((words[:, colour + 5] & np.uint64(king)) != 0) \
            & ((words[:, colour + 3] & np.uint64(rook)) != 0)
        ok &= ~flags[:, column] | home
    return np.asarray(ok, dtype=bool)


def _board_from_words(words: Words, meta: list[int], fen: _FenFields) -> chess.Board:
    """A python-chess board from 12 absolute bitboards, meta and the FEN's ep and clocks."""
    board = chess.Board(None)
    white_pieces, black_pieces = words[:6], words[6:]
    board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings = (
        w | b for w, b in zip(white_pieces, black_pieces, strict=True)
    )
    board.occupied_co[chess.WHITE] = _union(white_pieces)
    board.occupied_co[chess.BLACK] = _union(black_pieces)
    board.occupied = board.occupied_co[chess.WHITE] | board.occupied_co[chess.BLACK]
    black = bool(meta[0])
    board.turn = chess.BLACK if black else chess.WHITE
    white_castling, black_castling = _white_black_castling(meta)
    flags = white_castling + black_castling
    board.castling_rights = _union(
        rook for (_, rook), flag in zip(_CASTLING_HOMES, flags, strict=True) if flag
    )
    if fen.ep_file >= 0:
        board.ep_square = fen.ep_file + (16 if black else 40)
    board.halfmove_clock, board.fullmove_number = fen.halfmove, fen.fullmove
    return board


def _union(words: Any) -> int:
    """Bitwise or of bitboards."""
    result = 0
    for word in words:
        result |= word
    return result


def _checked_board(fen: str, row: int, history: Words, meta: list[int]) -> chess.Board:
    """The board of ``fen`` via python-chess; ShardTableError unless it is valid and
    matches meta and the step-0 history bitboards (the authority behind the fast path)."""
    try:
        board = chess.Board(fen)
    except ValueError as exc:
        raise ShardTableError("fen", f"does not parse ({exc})", row=row, value=fen) from None
    if not board.is_valid():
        raise ShardTableError("fen", f"invalid position (status {board.status()!r})", row=row,
                              value=fen)
    expected_meta = list(meta_values(board))
    if expected_meta != meta:
        raise ShardTableError("meta", f"does not match fen {fen!r} (expected {expected_meta})",
                              row=row, value=meta)
    if list(board_row(board)[:PIECE_PLANES]) != history:
        raise ShardTableError("history", "step-0 piece bitboards do not match fen", row=row,
                              value=fen)
    return board


def _fast_rows(
    fens: list[str], history: np.ndarray, meta: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[_FenFields | None]]:
    """(accepted (B,) bool, real bitboards (B, 12), per-row FEN fields) of the fast path."""
    metas = meta.tolist()
    parsed = [_read_fen(fen, m) for fen, m in zip(fens, metas, strict=True)]
    rows = np.array([i for i, p in enumerate(parsed) if p is not None], dtype=np.intp)
    fields = [p for p in parsed if p is not None]
    placement, ok = _placement_words([f.placement for f in fields])
    ep_file = np.array([f.ep_file for f in fields], dtype=np.int64)
    real, marker_ok = _undo_ep_marker(history[rows], ep_file, meta[rows, 0] != 0)
    ok &= marker_ok & (placement == real).all(axis=1) & _plausible(real, meta[rows])
    accepted = np.zeros(len(fens), dtype=bool)
    accepted[rows[ok]] = True
    words = np.zeros((len(fens), PIECE_PLANES), dtype=np.uint64)
    words[rows] = real
    return accepted, words, parsed


def _check_positions(table: pa.Table, need_boards: bool) -> list[chess.Board | None]:
    """FENs parse to valid positions; meta and the step-0 history bitboards match them.

    Returns a board per row when ``need_boards`` (for the legality check), else
    only the rows the fast path could not settle have one.
    """
    meta = decode_meta(table)
    row = _first(np.asarray((meta[:, _META_FLAGS] > 1).any(axis=1)))
    if row is not None:
        raise ShardTableError("meta", "turn and castling entries must be 0 or 1", row=row,
                              value=meta[row].tolist())
    fens = table.column("fen").to_pylist()
    history = decode_history(table)[:, 0, :PIECE_PLANES]
    accepted, words, parsed = _fast_rows(fens, history, meta)
    boards: list[chess.Board | None] = [None] * len(fens)
    for row in np.flatnonzero(~accepted).tolist():
        boards[row] = _checked_board(fens[row], row, history[row].tolist(), meta[row].tolist())
    if need_boards:
        for row in np.flatnonzero(accepted).tolist():
            fields = cast(_FenFields, parsed[row])
            boards[row] = _board_from_words(words[row].tolist(), meta[row].tolist(), fields)
    return boards


def _check_z_matches_result(table: pa.Table) -> None:
    """z is the result seen from the side to move (meta[0] = black to move)."""
    names, codes = _categories(table, "result")
    white_score = np.array([_WHITE_SCORE[name] for name in names], dtype=np.int64)[codes]
    black_to_move = decode_meta(table)[:, 0].astype(np.int64)
    expected = white_score * (1 - 2 * black_to_move)
    z = table.column("z").to_numpy().astype(np.int64)
    row = _first(z != expected)
    if row is not None:
        raise ShardTableError("z", f"does not match result {names[codes[row]]!r} for the side "
                                   f"to move (expected {int(expected[row])})", row=row,
                              value=int(z[row]))


def _check_legality(
    table: pa.Table, boards: list[chess.Board | None], rows: np.ndarray, index: np.ndarray,
    prob: np.ndarray,
) -> None:
    """Every policy index with mass is a legal move of the row's FEN.

    One legal-move generation per distinct position (cached on the FEN's
    first four fields), then one vectorised ``np.isin`` over all rows.
    """
    names, codes = _categories(table, "policy_encoding")
    maps = [get_policy_map(name) for name in names]
    fens = table.column("fen").to_pylist()
    cache: dict[tuple[int, str], np.ndarray] = {}
    legal_keys = []
    for row, maybe_board in enumerate(boards):
        board = maybe_board if maybe_board is not None else chess.Board(fens[row])
        code = int(codes[row])
        key = (code, fens[row].rsplit(" ", 2)[0])
        legal = cache.get(key)
        if legal is None:
            legal = maps[code].indices(board, list(board.legal_moves))
            cache[key] = legal
        legal_keys.append(legal + row * _ROW_STRIDE)
    allowed = np.concatenate(legal_keys) if legal_keys else np.zeros(0, dtype=np.int64)
    with_mass = prob > 0
    support = rows[with_mass] * _ROW_STRIDE + index[with_mass]
    k = _first(~np.isin(support, allowed))
    if k is not None:
        row = int(support[k] // _ROW_STRIDE)
        raise ShardTableError("policy_index", f"mass {float(prob[with_mass][k]):.4g} on an "
                                              f"index that is not a legal move in "
                                              f"{fens[row]!r} ({names[codes[row]]})", row=row,
                              value=int(support[k] % _ROW_STRIDE))


def _row_context(table: pa.Table, row: int) -> str:
    """'game_id=..., ply=...' of a row, for error messages ('' if unavailable)."""
    try:
        return f"game_id={table.column('game_id')[row].as_py()!r}, " \
               f"ply={table.column('ply')[row].as_py()}"
    except (KeyError, IndexError, pa.ArrowException):
        return ""


def validate_table(table: pa.Table, *, check_legality: bool = True) -> None:
    """Raises ShardTableError (column, row, value) unless every row of ``table`` is valid.

    Checks: schema; no nulls; pi lists of equal length, finite, >= 0, summing
    to 1 within 1e-4, indices in range and unique; z in {-1, 0, 1} and equal
    to the result from the side to move; FEN parses and is valid; meta and the
    step-0 history bitboards match the FEN; with ``check_legality`` every
    index with mass is a legal move (the slow part: ~legal-move generation per
    distinct position).
    """
    check_schema(table.schema)
    try:
        _check_nulls(table)
        rows, index, prob = _check_policy(table)
        _check_scalars(table)
        boards = _check_positions(table, need_boards=check_legality)
        _check_z_matches_result(table)
        if check_legality:
            _check_legality(table, boards, rows, index, prob)
    except ShardTableError as err:
        if err.row is None:
            raise
        raise ShardTableError(err.column, err.reason, row=err.row, value=err.value,
                              context=_row_context(table, err.row)) from None


# ---------------------------------------------------------------------------
# Locations: local paths, URIs and pyarrow filesystems
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Location:
    """A resolved directory or file: pyarrow filesystem, path in it, how to show it."""

    fs: pafs.FileSystem
    path: str
    local: bool  # plain local path: use os-level atomic operations
    shown: str  # the caller's spelling (URI or path), used in messages and results

    def child(self, name: str) -> _Location:
        """The entry ``name`` inside this directory."""
        path = os.path.join(self.path, name) if self.local else _join_key(self.path, name)
        plain_local = self.local and "://" not in self.shown
        shown = os.path.join(self.shown, name) if plain_local else _join_key(self.shown, name)
        return _Location(self.fs, path, self.local, shown)


def _join_key(prefix: str, name: str) -> str:
    """``prefix/name`` with one slash (URIs, object-store keys); ``name`` if no prefix."""
    return f"{prefix.rstrip('/')}/{name}" if prefix else name


def _resolve(location: str | os.PathLike[str], filesystem: pafs.FileSystem | None) -> _Location:
    """Resolves a local path, a filesystem URI, or a path inside ``filesystem``."""
    text = os.fspath(location)
    if filesystem is not None:
        return _Location(filesystem, text, isinstance(filesystem, pafs.LocalFileSystem), text)
    if "://" in text:
        fs, path = pafs.FileSystem.from_uri(text)
        return _Location(fs, path, isinstance(fs, pafs.LocalFileSystem), text)
    return _Location(pafs.LocalFileSystem(), text, True, text)


def shard_name(batch_id: str) -> str:
    """File name of the shard of ``batch_id``: ``f"{batch_id}.parquet"``.

    Raises ShardNameError unless ``batch_id`` is 1-200 characters of
    ``[A-Za-z0-9_.-]`` not starting with '.' (hidden names are temp files).
    """
    if not isinstance(batch_id, str) or not _BATCH_ID.fullmatch(batch_id) \
            or batch_id.startswith("."):
        raise ShardNameError(batch_id)
    return f"{batch_id}{SHARD_SUFFIX}"


def _is_shard_name(name: str) -> bool:
    """True for visible ``*.parquet`` names (temp files start with '.')."""
    return name.endswith(SHARD_SUFFIX) and not name.startswith(".")


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------


def _write_local(table: pa.Table, target: _Location) -> None:
    """Temp file in the target's folder, fsync, os.replace, directory fsync."""
    with atomic_write(target.path, SHARD_FILE_MODE) as handle:
        pq.write_table(table, handle, **_WRITE_OPTIONS)


def _write_remote(table: pa.Table, target: _Location) -> None:
    """Temp key in the target's prefix, then ``fs.move`` into place."""
    directory, _, name = target.path.rpartition("/")
    if directory:
        target.fs.create_dir(directory, recursive=True)
    tmp_name = f".{name}.tmp-{secrets.token_hex(8)}"
    tmp = _join_key(directory, tmp_name) if directory else tmp_name
    try:
        with target.fs.open_output_stream(tmp) as stream:
            pq.write_table(table, stream, **_WRITE_OPTIONS)
        target.fs.move(tmp, target.path)
    except BaseException:
        with suppress(Exception):
            target.fs.delete_file(tmp)
        raise


def write_shard(
    table: pa.Table,
    directory: str | os.PathLike[str],
    batch_id: str,
    *,
    filesystem: pafs.FileSystem | None = None,
    validate: bool = True,
) -> str:
    """Atomically writes ``table`` as ``<directory>/<batch_id>.parquet``; returns its path.

    ``directory`` is a local path, a ``pyarrow.fs`` URI (``s3://bucket/prefix``,
    ``file:///abs/path``) or a path inside ``filesystem``. The schema must match
    :data:`SHARD_SCHEMA` (ShardTableError otherwise); with ``validate`` the rows
    are checked too (:func:`validate_table` without legality). Rewriting the
    same batch_id replaces the file, so retried tasks are idempotent. Written
    zstd-compressed with page checksums.
    """
    name = shard_name(batch_id)
    check_schema(table.schema, require_version=False)
    table = table.replace_schema_metadata(SHARD_SCHEMA.metadata)
    if validate:
        validate_table(table, check_legality=False)
    target = _resolve(directory, filesystem).child(name)
    started = time.perf_counter()
    (_write_local if target.local else _write_remote)(table, target)
    log.info("wrote shard %s: %d rows in %.3f s", target.shown, table.num_rows,
             time.perf_counter() - started)
    return target.shown


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def _fetch(source: _Location) -> pa.Buffer:
    """The whole file's bytes. I/O errors (OSError, FileNotFoundError) propagate as is.

    Reading the bytes first separates I/O failures (maybe transient: never
    quarantine for them) from corrupt content (parsed from memory below).
    """
    with source.fs.open_input_file(source.path) as handle:
        return handle.read_buffer()


def _parse(data: pa.Buffer, shown: str) -> pa.Table:
    """Parses Parquet bytes with page checksum verification and an explicit schema check."""
    try:
        parquet = pq.ParquetFile(pa.BufferReader(data), page_checksum_verification=True)
        schema = parquet.schema_arrow
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise ShardError(shown, f"not a readable Parquet file ({type(exc).__name__}: {exc})") \
            from exc
    try:
        check_schema(schema)
    except ShardTableError as exc:
        raise ShardError(shown, str(exc), column=exc.column) from exc
    try:
        table = parquet.read(use_threads=False)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise ShardError(shown, f"corrupt Parquet data ({type(exc).__name__}: {exc})") from exc
    return table.replace_schema_metadata(SHARD_SCHEMA.metadata)


def _read_validated(source: _Location, check_legality: bool) -> pa.Table:
    """Fetches, parses and validates one shard; ShardError on bad content."""
    table = _parse(_fetch(source), source.shown)
    try:
        validate_table(table, check_legality=check_legality)
    except ShardTableError as exc:
        raise ShardError(source.shown, str(exc), column=exc.column, row=exc.row) from exc
    return table


def read_shard(
    path: str | os.PathLike[str],
    *,
    check_legality: bool = True,
    filesystem: pafs.FileSystem | None = None,
) -> pa.Table:
    """Reads and validates one shard (local path, URI, or path in ``filesystem``).

    Raises ShardError (path, column, row, value in the message) for a
    truncated, empty, corrupt (page checksums are verified), wrongly shaped or
    invalid shard; I/O errors such as FileNotFoundError propagate unchanged.
    """
    return _read_validated(_resolve(path, filesystem), check_legality)


def _list_names(directory: _Location) -> list[str]:
    """Sorted shard file names directly inside ``directory`` (FileNotFoundError if missing)."""
    if directory.local:
        with os.scandir(directory.path) as entries:
            names = [e.name for e in entries if e.is_file() and _is_shard_name(e.name)]
    else:
        selector = pafs.FileSelector(directory.path, recursive=False)
        infos = directory.fs.get_file_info(selector)
        names = [i.base_name for i in infos
                 if i.type == pafs.FileType.File and _is_shard_name(i.base_name)]
    return sorted(names)


def list_shards(
    directory: str | os.PathLike[str], *, filesystem: pafs.FileSystem | None = None
) -> list[str]:
    """Paths of the shards in ``directory``, sorted by name.

    Temp files, other files and the quarantine folder are ignored; a missing
    directory raises FileNotFoundError. Paths are spelled like ``directory``.
    """
    location = _resolve(directory, filesystem)
    return [location.child(name).shown for name in _list_names(location)]


def shard_exists(
    directory: str | os.PathLike[str],
    batch_id: str,
    *,
    filesystem: pafs.FileSystem | None = None,
) -> bool:
    """True if ``<directory>/<batch_id>.parquet`` exists (a quarantined one does not count).

    Lets a driver skip tasks whose shard was already written; the file is not
    validated (:func:`load_shards` does that).
    """
    target = _resolve(directory, filesystem).child(shard_name(batch_id))
    if target.local:
        return os.path.isfile(target.path)
    return bool(target.fs.get_file_info(target.path).type == pafs.FileType.File)


def _quarantine(directory: _Location, name: str, reason: str) -> str:
    """Moves a bad shard to ``quarantine/<name>`` with a ``<name>.reason.txt``; returns it."""
    folder = directory.child(QUARANTINE_DIR)
    source, target = directory.child(name), folder.child(name)
    note = folder.child(name + REASON_SUFFIX)
    text = (reason + "\n").encode()
    if directory.local:
        os.makedirs(folder.path, exist_ok=True)
        os.replace(source.path, target.path)
        with open(note.path, "wb") as handle:
            handle.write(text)
        fsync_directory(folder.path)
        fsync_directory(directory.path)
    else:
        folder.fs.create_dir(folder.path, recursive=True)
        folder.fs.move(source.path, target.path)
        with folder.fs.open_output_stream(note.path) as stream:
            stream.write(text)
    return target.shown


def quarantine_shard(
    path: str | os.PathLike[str], reason: str, *, filesystem: pafs.FileSystem | None = None
) -> str:
    """Move the shard at ``path`` (local or a filesystem URI) to ``quarantine/``
    beside it, with a ``<name>.reason.txt`` holding ``reason``; returns where it went."""
    directory, _, name = os.fspath(path).rstrip("/").rpartition("/")
    return _quarantine(_resolve(directory or ".", filesystem), name, reason)


def _load_one(
    directory: _Location, name: str, check_legality: bool, quarantine: bool
) -> tuple[pa.Table | None, str | None]:
    """(table, None) for a valid shard, (None, reason) otherwise; never raises."""
    source = directory.child(name)
    try:
        return _read_validated(source, check_legality), None
    except ShardError as err:
        reason = err.reason
    except OSError as exc:  # I/O problem, not the content: skip but do not quarantine
        log.warning("skipping shard %s (not quarantined): %s", source.shown, exc)
        return None, f"I/O error, not quarantined: {type(exc).__name__}: {exc}"
    except Exception as exc:  # never crash, never train on it
        log.exception("unexpected error validating shard %s (not quarantined)", source.shown)
        return None, f"unexpected error, not quarantined: {type(exc).__name__}: {exc}"
    _report_bad(directory, name, reason, quarantine)
    return None, reason


def _report_bad(directory: _Location, name: str, reason: str, quarantine: bool) -> None:
    """Logs a bad shard and moves it to quarantine if asked (errors are logged, not raised)."""
    shown = directory.child(name).shown
    if not quarantine:
        log.warning("bad shard %s (left in place): %s", shown, reason)
        return
    try:
        moved = _quarantine(directory, name, reason)
    except Exception as exc:  # a failed move must not stop the loader
        log.error("bad shard %s could not be quarantined (%s): %s", shown, exc, reason)
        return
    log.warning("quarantined bad shard %s -> %s: %s", shown, moved, reason)


def load_shards(
    directory: str | os.PathLike[str],
    *,
    check_legality: bool = True,
    quarantine: bool = True,
    filesystem: pafs.FileSystem | None = None,
) -> tuple[list[pa.Table], list[tuple[str, str]]]:
    """Reads and validates every shard of ``directory``; never raises for a bad shard.

    Returns (valid tables in name order, [(path, reason)] of the skipped ones).
    A shard with bad content is moved to ``<directory>/quarantine/<name>``
    with ``<name>.reason.txt`` (unless ``quarantine`` is False) and logged
    with ``logging.warning``. A shard that cannot be read for an I/O reason
    is skipped and reported but left in place. A missing directory raises
    FileNotFoundError.
    """
    location = _resolve(directory, filesystem)
    tables: list[pa.Table] = []
    bad: list[tuple[str, str]] = []
    for name in _list_names(location):
        table, reason = _load_one(location, name, check_legality, quarantine)
        if table is not None:
            tables.append(table)
        else:
            bad.append((location.child(name).shown, reason or ""))
    log.info("loaded %d shards from %s (%d skipped)", len(tables), location.shown, len(bad))
    return tables, bad

