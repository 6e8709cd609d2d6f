"""The shard schema: the layout's constants, the Parquet schema and its check, and the errors.

Part of :mod:`pipeline.shards` (import from there)."""

from __future__ import annotations

from typing import Final

import numpy as np
import pyarrow as pa

from models.encoding import HISTORY_STEPS, META_SIZE, ROW_WIDTH

SHARD_VERSION: Final = "1"
SHARD_VERSION_KEY: Final = "zerochess_shard_version"
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
    ],
    metadata={SHARD_VERSION_KEY: SHARD_VERSION},
)
"""Arrow schema of a shard; all columns are required (not null)."""


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


def first_true(mask: np.ndarray) -> int | None:
    """Index of the first True in ``mask``, or None."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.size else None
