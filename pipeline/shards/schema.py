"""The shard schema: the layout's constants, the Parquet schema and its check, and the errors.

Part of :mod:`pipeline.shards` (import from there)."""

from __future__ import annotations

from typing import Final

import numpy as np
import pyarrow as pa

from models.encoding import HISTORY_STEPS, META_SIZE, ROW_WIDTH

SHARD_VERSION: Final = "2"
"""The version written.  Version 2 added ``root_d`` and ``game_plies``; shards
of version 1 are still read, the two columns filled by :func:`upgrade_table`."""
READABLE_VERSIONS: Final = ("1", "2")
SHARD_VERSION_KEY: Final = "zerochess_shard_version"
UNKNOWN_PLIES: Final = -1
"""``game_plies`` of a row whose game length is unknown (version 1 shards,
positions taken from PGN games): training skips its moves-left target."""
SHARD_SUFFIX: Final = ".parquet"
QUARANTINE_DIR: Final = "quarantine"
REASON_SUFFIX: Final = ".reason.txt"
HISTORY_BYTES: Final = HISTORY_STEPS * ROW_WIDTH * 8  # 896
PROB_SUM_TOLERANCE: Final = 1e-4
RESULTS: Final[tuple[str, ...]] = ("1-0", "0-1", "1/2-1/2")
WHITE_SCORE: Final[dict[str, int]] = {"1-0": 1, "0-1": -1, "1/2-1/2": 0}
"""The game result of each of :data:`RESULTS` from White's point of view."""
ROW_GROUP_ROWS: Final = 16_384
"""Rows per Parquet row group (~18 MB in memory, ~1.5 MB zstd-compressed)."""
ZSTD_LEVEL: Final = 3
SHARD_FILE_MODE: Final = 0o644

LE_U64: Final = np.dtype("<u8")
"""Little-endian uint64: the byte order of the ``history`` column."""


def _field(name: str, type_: pa.DataType) -> pa.Field:
    """A non-nullable schema field (every shard column is required)."""
    return pa.field(name, type_, nullable=False)


def _list_type(value_type: pa.DataType) -> pa.ListType:
    """List of non-null items, child named "element" as Parquet writes it (exact round trip)."""
    return pa.list_(pa.field("element", value_type, nullable=False))


INDEX_LIST: Final = _list_type(pa.uint16())
"""Arrow type of the ``policy_index`` column."""
PROB_LIST: Final = _list_type(pa.float32())
"""Arrow type of the ``policy_prob`` column."""


SHARD_SCHEMA: Final = pa.schema(
    [
        _field("game_id", pa.string()),
        _field("ply", pa.int32()),
        _field("fen", pa.string()),
        _field("history", pa.binary(HISTORY_BYTES)),
        _field("meta", pa.binary(META_SIZE)),
        _field("policy_encoding", pa.string()),
        _field("policy_index", INDEX_LIST),
        _field("policy_prob", PROB_LIST),
        _field("z", pa.int8()),
        _field("root_q", pa.float32()),
        _field("root_visits", pa.int32()),
        _field("full_search", pa.bool_()),
        _field("generation", pa.int32()),
        _field("result", pa.string()),
        _field("termination", pa.string()),
        _field("root_d", pa.float32()),
        _field("game_plies", pa.int32()),
    ],
    metadata={SHARD_VERSION_KEY: SHARD_VERSION},
)
"""Arrow schema of a shard; all columns are required (not null).  ``root_d``:
the search root's draw probability D (0 when the evaluator gave none);
``game_plies``: the plies of the game the row belongs to, from its recorded
start (:data:`UNKNOWN_PLIES` when unknown), so ``game_plies - ply`` is the
plies left to its end."""

V2_COLUMNS: Final = ("root_d", "game_plies")
"""The columns version 2 added at the end of the schema."""
SHARD_SCHEMA_V1: Final = pa.schema(
    [field for field in SHARD_SCHEMA if field.name not in V2_COLUMNS], metadata={SHARD_VERSION_KEY: "1"}
)
"""Arrow schema of a version 1 shard."""


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------


class _ShardProblem(ValueError):
    """What the shard errors carry: ``.reason`` says why, ``.column`` and
    ``.row`` name the cell when the problem is in one."""

    def __init__(self, message: str, reason: str, column: str | None, row: int | None) -> None:
        super().__init__(message)
        self.reason = reason
        self.column = column
        self.row = row


class ShardTableError(_ShardProblem):
    """The content of a shard table is invalid: names the column, row and value."""

    column: str

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
        super().__init__(f"{where}: {reason}{shown}", reason, column, row)
        self.value = value


class ShardError(_ShardProblem):
    """A shard file is unreadable or invalid; ``.path`` names it, ``.reason`` says why.

    ``.column`` and ``.row`` are set when the problem is in one cell.
    """

    def __init__(
        self, path: str, reason: str, *, column: str | None = None, row: int | None = None
    ) -> None:
        super().__init__(f"shard {path}: {reason}", reason, column, row)
        self.path = path


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
    """Raises ShardTableError unless ``schema`` matches the schema of its
    version exactly: :data:`SHARD_SCHEMA`, or :data:`SHARD_SCHEMA_V1` for a
    version 1 shard (without ``require_version``: :data:`SHARD_SCHEMA`).

    Checks the ``zerochess_shard_version`` metadata (unless ``require_version``
    is False), then compares column names (missing, extra, duplicated),
    order, types and nullability explicitly.
    """
    version = shard_version(schema) if require_version else SHARD_VERSION
    expected_schema = SHARD_SCHEMA_V1 if version == "1" else SHARD_SCHEMA
    expected_names = expected_schema.names
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
    for field, expected in zip(schema, expected_schema, strict=True):
        if not _same_type(field.type, expected.type):
            raise ShardTableError(field.name, f"wrong type, expected {expected.type}",
                                  value=str(field.type))
        if field.nullable != expected.nullable:
            raise ShardTableError(field.name, "column must be declared not null")


def shard_version(schema: pa.Schema) -> str:
    """The shard version in the schema metadata; ShardTableError unless it is
    one of :data:`READABLE_VERSIONS`."""
    metadata = schema.metadata or {}
    version = metadata.get(SHARD_VERSION_KEY.encode())
    if version is None:
        raise ShardTableError(SHARD_VERSION_KEY, "schema metadata key missing")
    text = version.decode(errors="replace")
    if text not in READABLE_VERSIONS:
        raise ShardTableError(SHARD_VERSION_KEY, f"unsupported shard version, "
                                                 f"expected one of {', '.join(READABLE_VERSIONS)}",
                              value=text)
    return text


def upgrade_table(table: pa.Table, version: str) -> pa.Table:
    """A table of shard version ``version`` as the current version: a version 1
    table gains ``root_d`` = 0 (no draw probability was stored) and
    ``game_plies`` = :data:`UNKNOWN_PLIES`; columns already there are kept.
    The result carries :data:`SHARD_SCHEMA`'s metadata."""
    if version == "1":
        rows = table.num_rows
        defaults = {
            "root_d": pa.array(np.zeros(rows, dtype=np.float32), type=pa.float32()),
            "game_plies": pa.array(np.full(rows, UNKNOWN_PLIES, dtype=np.int32), type=pa.int32()),
        }
        for name, column in defaults.items():
            if name not in table.column_names:
                table = table.append_column(SHARD_SCHEMA.field(name), column)
    return table.replace_schema_metadata(SHARD_SCHEMA.metadata)


def first_true(mask: np.ndarray) -> int | None:
    """Index of the first True in ``mask``, or None."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None
