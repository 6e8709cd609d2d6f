"""Where shards live (local paths, URIs, pyarrow filesystems) and writing, reading and listing them.

Part of :mod:`pipeline.shards` (import from there)."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import secrets
import time
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pipeline.atomic import atomic_write
from pipeline.shards.schema import (
    ROW_GROUP_ROWS,
    SHARD_FILE_MODE,
    SHARD_SCHEMA,
    SHARD_SUFFIX,
    ZSTD_LEVEL,
    ShardError,
    ShardNameError,
    ShardTableError,
    check_schema,
    shard_version,
    upgrade_table,
)
from pipeline.shards.validation import validate_table

log = logging.getLogger("pipeline.shards")

_BATCH_ID: Final = re.compile(r"[A-Za-z0-9_.-]{1,200}")

PARQUET_OPTIONS: Final[dict[str, Any]] = {  # how shards are written (bench/train_input.py writes the old layout with them)
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
# Locations: local paths, URIs and pyarrow filesystems
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """A resolved directory or file: pyarrow filesystem, path in it, how to show it."""

    fs: pafs.FileSystem
    path: str
    local: bool  # plain local path: use os-level atomic operations
    shown: str  # the caller's spelling (URI or path), used in messages and results

    def child(self, name: str) -> Location:
        """The entry ``name`` inside this directory."""
        path = os.path.join(self.path, name) if self.local else _join_key(self.path, name)
        plain_local = self.local and "://" not in self.shown
        shown = os.path.join(self.shown, name) if plain_local else _join_key(self.shown, name)
        return Location(self.fs, path, self.local, shown)


def _join_key(prefix: str, name: str) -> str:
    """``prefix/name`` with one slash (URIs, object-store keys); ``name`` if no prefix."""
    return f"{prefix.rstrip('/')}/{name}" if prefix else name


def resolve_location(location: str | os.PathLike[str], filesystem: pafs.FileSystem | None) -> Location:
    """Resolves a local path, a filesystem URI, or a path inside ``filesystem``."""
    text = os.fspath(location)
    if filesystem is not None:
        return Location(filesystem, text, isinstance(filesystem, pafs.LocalFileSystem), text)
    if "://" in text:
        fs, path = pafs.FileSystem.from_uri(text)
        return Location(fs, path, isinstance(fs, pafs.LocalFileSystem), text)
    return Location(pafs.LocalFileSystem(), text, True, text)


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


def training_first(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The shard's rows as written: its ``full_search`` (training) rows, then the
    others, each part in the table's order (a stable partition)."""
    mask = table.column("full_search")
    return table.filter(mask), table.filter(pc.invert(mask))


def _write_parquet(table: pa.Table, sink: Any) -> None:
    """The training rows, then the other rows, in row groups of their own: a
    trainer reads only the first part (:func:`training_row_groups`)."""
    options = {key: value for key, value in PARQUET_OPTIONS.items() if key != "row_group_size"}
    with pq.ParquetWriter(sink, table.schema, **options) as writer:
        parts = [part for part in training_first(table) if part.num_rows] or [table]
        for part in parts:
            writer.write_table(part, row_group_size=ROW_GROUP_ROWS)


def training_row_groups(metadata: pq.FileMetaData) -> list[int]:
    """The row groups of a shard that may hold training rows: all but those whose
    ``full_search`` statistics say false throughout (a shard written before the
    training-first layout has mixed groups, and every one is read)."""
    column = metadata.schema.names.index("full_search")
    groups = []
    for number in range(metadata.num_row_groups):
        stats = metadata.row_group(number).column(column).statistics
        if stats is None or not stats.has_min_max or stats.max:
            groups.append(number)
    return groups


def _write_local(table: pa.Table, target: Location) -> None:
    """Temp file in the target's folder, fsync, os.replace, directory fsync."""
    with atomic_write(target.path, SHARD_FILE_MODE) as handle:
        _write_parquet(table, handle)


def _write_remote(table: pa.Table, target: Location) -> None:
    """Temp key in the target's prefix, then ``fs.move`` into place."""
    directory, _, name = target.path.rpartition("/")
    if directory:
        target.fs.create_dir(directory, recursive=True)
    tmp_name = f".{name}.tmp-{secrets.token_hex(8)}"
    tmp = _join_key(directory, tmp_name) if directory else tmp_name
    try:
        with target.fs.open_output_stream(tmp) as stream:
            _write_parquet(table, stream)
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
    zstd-compressed with page checksums, the training (``full_search``) rows
    first in row groups of their own, then the other rows, each part in the
    table's order (:func:`training_first`): a trainer reads only the first part.
    """
    name = shard_name(batch_id)
    check_schema(table.schema, require_version=False)
    table = table.replace_schema_metadata(SHARD_SCHEMA.metadata)
    if validate:
        validate_table(table, check_legality=False)
    target = resolve_location(directory, filesystem).child(name)
    started = time.perf_counter()
    (_write_local if target.local else _write_remote)(table, target)
    log.info("wrote shard %s: %d rows in %.3f s", target.shown, table.num_rows,
             time.perf_counter() - started)
    return target.shown


# ---------------------------------------------------------------------------
# Reading
# ---------------------------------------------------------------------------


def _fetch(source: Location) -> pa.Buffer:
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
        version = shard_version(schema)
    except ShardTableError as exc:
        raise ShardError(shown, str(exc), column=exc.column) from exc
    try:
        table = parquet.read(use_threads=False)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise ShardError(shown, f"corrupt Parquet data ({type(exc).__name__}: {exc})") from exc
    return upgrade_table(table, version)  # an older version as the current one


def read_validated(source: Location, check_legality: bool) -> pa.Table:
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
    return read_validated(resolve_location(path, filesystem), check_legality)


_DIGITS: Final = re.compile(r"(\d+)")


def shard_order_key(name: str) -> tuple[tuple[int, int | str], ...]:
    """The sort key of a shard name, oldest first: runs of digits compare as numbers,
    so ``gen0001-task100000`` comes after ``gen0001-task99999`` (a long run's task
    numbers outgrow their zero padding; by plain string order the newest shards
    would sort as the oldest)."""
    return tuple((1, int(part)) if part.isdigit() else (0, part) for part in _DIGITS.split(name) if part)


def list_shard_names(directory: Location) -> list[str]:
    """Shard file names directly inside ``directory``, oldest first
    (:func:`shard_order_key`; FileNotFoundError if missing)."""
    if directory.local:
        with os.scandir(directory.path) as entries:
            names = [e.name for e in entries if e.is_file() and _is_shard_name(e.name)]
    else:
        selector = pafs.FileSelector(directory.path, recursive=False)
        infos = directory.fs.get_file_info(selector)
        names = [i.base_name for i in infos
                 if i.type == pafs.FileType.File and _is_shard_name(i.base_name)]
    return sorted(names, key=shard_order_key)


def list_shards(
    directory: str | os.PathLike[str], *, filesystem: pafs.FileSystem | None = None
) -> list[str]:
    """Paths of the shards in ``directory``, oldest first (by name, numbers as numbers:
    :func:`shard_order_key`).

    Temp files, other files and the quarantine folder are ignored; a missing
    directory raises FileNotFoundError. Paths are spelled like ``directory``.
    """
    location = resolve_location(directory, filesystem)
    return [location.child(name).shown for name in list_shard_names(location)]


STALE_TEMP_S = 3600.0
"""Age after which a shard temp file is taken as left by a crashed writer."""


def _is_temp_name(name: str) -> bool:
    """Temp files of :func:`write_shard`: ``.<shard>.parquet.tmp-<random>``."""
    return name.startswith(".") and f"{SHARD_SUFFIX}.tmp-" in name


def remove_stale_temps(
    directory: str | os.PathLike[str],
    *,
    filesystem: pafs.FileSystem | None = None,
    older_than_s: float = STALE_TEMP_S,
) -> list[str]:
    """Delete shard temp files in ``directory`` older than ``older_than_s``;
    returns their paths.

    A writer killed between its temp file and the rename (SIGKILL, a lost
    node) leaves the temp file behind, locally and as a hidden key on object
    storage; nothing reads it, so without this it would stay forever.  Younger
    ones may belong to a writer still running and are kept.  A missing
    directory has nothing to remove.
    """
    location = resolve_location(directory, filesystem)
    selector = pafs.FileSelector(location.path, recursive=False, allow_not_found=True)
    cutoff = time.time() - older_than_s
    removed = []
    for info in location.fs.get_file_info(selector):
        if info.type != pafs.FileType.File or not _is_temp_name(info.base_name):
            continue
        if info.mtime is not None and info.mtime.timestamp() > cutoff:
            continue
        child = location.child(info.base_name)
        with suppress(FileNotFoundError):
            location.fs.delete_file(child.path)
            removed.append(child.shown)
            log.warning("removed a stale shard temp file left by a crashed writer: %s", child.shown)
    return removed


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
    target = resolve_location(directory, filesystem).child(shard_name(batch_id))
    if target.local:
        return os.path.isfile(target.path)
    return bool(target.fs.get_file_info(target.path).type == pafs.FileType.File)


# ---------------------------------------------------------------------------
# Digests: the writer validates, a reader of the bookkeeping verifies cheaply
# ---------------------------------------------------------------------------

_MAGIC: Final = b"PAR1"


@dataclass(frozen=True)
class ShardDigest:
    """What identifies a written shard without reading its rows: its size in
    bytes, its rows and a hash of its Parquet footer (which holds every column
    chunk's offset, size and statistics, so a truncated, rewritten or other
    file differs; the pages carry their own CRCs, checked when they are read).

    The writer, which validated the rows, returns it; the async driver checks
    a landed shard against it (:func:`verify_shard`) instead of decoding it."""

    size: int
    rows: int
    footer: str

    def as_dict(self) -> dict[str, Any]:
        return {"size": self.size, "rows": self.rows, "footer": self.footer}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ShardDigest:
        return cls(int(data["size"]), int(data["rows"]), str(data["footer"]))


def _footer(path: str) -> tuple[int, bytes]:
    """(file size, footer bytes) of a local Parquet file; ShardError if it has none."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < 12:
            raise ShardError(path, f"not a readable Parquet file ({size} bytes)")
        handle.seek(size - 8)
        tail = handle.read(8)
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != _MAGIC or length > size - 12:
            raise ShardError(path, "not a readable Parquet file (no footer)")
        handle.seek(size - 8 - length)
        return size, handle.read(length)


def shard_digest(path: str) -> ShardDigest:
    """The digest of the local shard at ``path`` (its writer's answer)."""
    size, footer = _footer(path)
    rows = pq.read_metadata(path).num_rows
    return ShardDigest(size, rows, hashlib.blake2b(footer, digest_size=16).hexdigest())


def verify_shard(path: str, expected: ShardDigest) -> None:
    """Check the local shard at ``path`` against its writer's digest (size and
    footer hash: two reads of a few KB, no decoding).  Raises ShardError naming
    what differs; FileNotFoundError propagates."""
    size, footer = _footer(path)
    if size != expected.size:
        raise ShardError(path, f"{size} bytes, its writer wrote {expected.size}")
    found = hashlib.blake2b(footer, digest_size=16).hexdigest()
    if found != expected.footer:
        raise ShardError(path, f"footer digest {found} differs from its writer's {expected.footer}")
