"""Whole-batch numpy views and decoding of shard tables for training (planes, policy, targets).

Part of :mod:`pipeline.shards` (import from there)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from models.encoding import HISTORY_STEPS, META_SIZE, ROW_WIDTH, encode_snapshots
from models.policy import PolicyError, get_policy_map
from pipeline.shards.schema import LE_U64, ShardTableError, first_true

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
    flat = _fixed_binary_numpy(table, "history", LE_U64)
    return flat.reshape(table.num_rows, HISTORY_STEPS, ROW_WIDTH)


def decode_meta(table: pa.Table) -> npt.NDArray[np.uint8]:
    """The meta vectors of every position: (B, 7) uint8 (a read-only buffer view)."""
    flat = _fixed_binary_numpy(table, "meta", np.dtype(np.uint8))
    return flat.reshape(table.num_rows, META_SIZE)


def list_numpy(table: pa.Table, column: str) -> tuple[npt.NDArray[np.int64], np.ndarray]:
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


def list_row_ids(offsets: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Row number of every flat list value."""
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))


def string_categories(table: pa.Table, column: str) -> tuple[list[str], npt.NDArray[np.int32]]:
    """(distinct values, per-row code) of a string column via dictionary encoding."""
    encoded = table.column(column).combine_chunks().dictionary_encode()
    return encoded.dictionary.to_pylist(), encoded.indices.to_numpy(zero_copy_only=False)


# ---------------------------------------------------------------------------
# Decoding for training
# ---------------------------------------------------------------------------


def decode_planes(table: pa.Table) -> npt.NDArray[np.uint8]:
    """The network inputs of every position: (B, 119, 8, 8) uint8, one vectorised pass."""
    return encode_snapshots(decode_history(table), decode_meta(table))


def take_list_items(
    offsets: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The list rows ``rows`` of a list column given as ``offsets``: their new
    offsets (len(rows) + 1) and the flat indices of their items, in order."""
    starts = offsets[rows]
    lengths = offsets[rows + 1] - starts
    taken = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=taken[1:])
    items = np.arange(int(taken[-1]), dtype=np.int64) + np.repeat(starts - taken[:-1], lengths)
    return taken, items


def decode_rows_reference(
    history: npt.NDArray[np.uint64],
    meta: npt.NDArray[np.uint8],
    offsets: npt.NDArray[np.int64],
    index: npt.NDArray[np.uint16],
    prob: npt.NDArray[np.float32],
    rows: npt.NDArray[np.int64],
    policy_size: int,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """(planes (B, 119, 8, 8) uint8, dense pi (B, policy_size) float32) of the
    rows ``rows`` of a group's columns: history (N, 8, 14), meta (N, 7), and
    the policy lists as offsets (N + 1,) into ``index``/``prob``.

    The readable reference of the native ``models._native.decode_rows``
    (:func:`decode_rows`): the same as :func:`decode_planes` and
    :func:`decode_policy` of the table of those rows.
    """
    rows = np.asarray(rows, dtype=np.int64)
    planes = encode_snapshots(history[rows], meta[rows])
    taken, items = take_list_items(offsets, rows)
    row_ids = np.repeat(np.arange(len(rows), dtype=np.int64), np.diff(taken))
    columns = index[items].astype(np.intp)
    if columns.size and columns.max() >= policy_size:
        bad = int(np.flatnonzero(columns >= policy_size)[0])
        raise ShardTableError("policy_index", f"index >= policy size {policy_size}",
                              row=int(rows[row_ids[bad]]), value=int(columns[bad]))
    dense = np.zeros((len(rows), policy_size), dtype=np.float32)
    np.add.at(dense, (row_ids, columns), prob[items])
    return planes, dense


def decode_rows(
    history: npt.NDArray[np.uint64],
    meta: npt.NDArray[np.uint8],
    offsets: npt.NDArray[np.int64],
    index: npt.NDArray[np.uint16],
    prob: npt.NDArray[np.float32],
    rows: npt.NDArray[np.int64],
    policy_size: int,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.float32]]:
    """:func:`decode_rows_reference` in one native pass (the GIL released) when
    the native core is built, else the reference itself; ShardTableError
    (a ValueError) on bad input."""
    native = _native_decode_rows()
    if native is None:
        return decode_rows_reference(history, meta, offsets, index, prob, rows, policy_size)
    try:
        return native(history, meta, offsets, index, prob, np.asarray(rows, dtype=np.int64), policy_size)
    except ValueError as error:
        raise ShardTableError("policy_index", str(error)) from error


def _native_decode_rows() -> Any:
    """``models._native.decode_rows``, or None without the native core."""
    try:
        from models import _native
    except ImportError:
        return None
    return getattr(_native, "decode_rows", None)


def policy_sizes(encodings: list[str], codes: np.ndarray | None = None) -> dict[str, int]:
    """Policy size of each encoding name; ShardTableError for an unknown name.

    ``codes`` (per-row positions in ``encodings``) locates the offending row.
    """
    sizes = {}
    for position, name in enumerate(encodings):
        try:
            sizes[name] = get_policy_map(name).size
        except PolicyError:
            row = first_true(codes == position) if codes is not None else None
            raise ShardTableError("policy_encoding", "unknown policy encoding", row=row,
                                  value=name) from None
    return sizes


def decode_policy(table: pa.Table, size: int) -> npt.NDArray[np.float32]:
    """Dense pi: (B, size) float32; every row's encoding must have ``size`` entries."""
    names, codes = string_categories(table, "policy_encoding")
    for name, name_size in policy_sizes(names, codes).items():
        if name_size != size:
            row = int(np.flatnonzero(codes == names.index(name))[0])
            raise ShardTableError("policy_encoding", f"has {name_size} entries, "
                                                     f"cannot decode at size {size}",
                                  row=row, value=name)
    offsets, index = list_numpy(table, "policy_index")
    _, prob = list_numpy(table, "policy_prob")
    if len(index) != len(prob):
        raise ShardTableError("policy_prob", "list lengths differ from policy_index")
    rows = list_row_ids(offsets)
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
        names, _ = string_categories(table, "policy_encoding")
        if len(names) != 1:
            raise ShardTableError("policy_encoding", "need exactly one encoding to infer "
                                                     "the policy size", value=names)
        encoding = names[0]
    size = policy_sizes([encoding])[encoding]
    z = table.column("z").to_numpy().astype(np.float32)
    return decode_policy(table, size), z


def select_training_rows(table: pa.Table) -> pa.Table:
    """The rows that are training targets (``full_search``, playout cap randomization);
    ``table`` itself when every row is one (the training part of a shard)."""
    mask = table.column("full_search")
    if table.num_rows and pc.all(mask).as_py():
        return table
    return table.filter(mask)


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
