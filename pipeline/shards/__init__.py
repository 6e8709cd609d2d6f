"""Parquet shards of (s, pi, z) training data: the one owner of their layout.

A *shard* is one Parquet file ``<batch_id>.parquet`` holding the positions of
a batch of self-play games, one row per searched position, with the columns of
:data:`SHARD_SCHEMA` (schema metadata ``zerochess_shard_version = "2"``).
Version 2 added ``root_d`` (the search root's draw probability) and
``game_plies`` (the game's length, for the moves-left target); shards of
version 1 are still read, with ``root_d`` 0 and ``game_plies``
:data:`UNKNOWN_PLIES` (:func:`upgrade_table`).

Positions are stored as the encoder's compact inputs, not as planes: the
(8, 14) ``uint64`` snapshot rows of ``PlaneHistory.snapshot()`` (896 bytes)
and the 7 meta values of ``board_meta`` (7 bytes). :func:`decode_planes`
rebuilds the exact (119, 8, 8) planes the search saw with one
``encode_snapshots`` call for the whole batch. The policy target pi is stored
sparse (indices + probabilities in the row's policy encoding) and densified
by :func:`decode_policy`.

Rows are written training first: the ``full_search`` rows (the training
targets, playout cap randomization) in row groups of their own, then the
others, each part in game order (:func:`training_first`); a trainer reads only
the row groups :func:`training_row_groups` names (every group of a shard
written before that layout).

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

The package holds one module per concern: :mod:`~pipeline.shards.schema`,
:mod:`~pipeline.shards.records`, :mod:`~pipeline.shards.decode`,
:mod:`~pipeline.shards.validation`, :mod:`~pipeline.shards.store` (writing,
reading, listing) and :mod:`~pipeline.shards.quarantine`; import the names
from ``pipeline.shards``.
"""

from __future__ import annotations

from pipeline.shards.schema import (
    HISTORY_BYTES,
    PROB_SUM_TOLERANCE,
    QUARANTINE_DIR,
    READABLE_VERSIONS,
    RESULTS,
    SHARD_SCHEMA,
    SHARD_SCHEMA_V1,
    SHARD_SUFFIX,
    SHARD_VERSION,
    SHARD_VERSION_KEY,
    UNKNOWN_PLIES,
    ShardError,
    ShardNameError,
    ShardTableError,
    check_schema,
    shard_version,
    upgrade_table,
)
from pipeline.shards.decode import (
    decode_history,
    decode_meta,
    decode_planes,
    decode_policy,
    decode_targets,
    select_training_rows,
    shard_stats,
)
from pipeline.shards.records import (
    PositionRecord,
    records_to_table,
    table_from_columns,
    table_to_records,
)
from pipeline.shards.validation import (
    validate_table,
)
from pipeline.shards.store import (
    list_shards,
    read_shard,
    remove_stale_temps,
    shard_exists,
    shard_name,
    shard_order_key,
    training_first,
    training_row_groups,
    write_shard,
)
from pipeline.shards.quarantine import (
    load_shards,
    quarantine_shard,
)

__all__ = [
    "HISTORY_BYTES",
    "PROB_SUM_TOLERANCE",
    "QUARANTINE_DIR",
    "READABLE_VERSIONS",
    "RESULTS",
    "SHARD_SCHEMA",
    "SHARD_SCHEMA_V1",
    "SHARD_SUFFIX",
    "SHARD_VERSION",
    "SHARD_VERSION_KEY",
    "UNKNOWN_PLIES",
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
    "remove_stale_temps",
    "records_to_table",
    "select_training_rows",
    "shard_exists",
    "shard_name",
    "shard_order_key",
    "quarantine_shard",
    "shard_stats",
    "shard_version",
    "table_from_columns",
    "table_to_records",
    "training_first",
    "training_row_groups",
    "upgrade_table",
    "validate_table",
    "write_shard",
]
