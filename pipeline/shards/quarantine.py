"""Bad shards moved aside with the reason beside them, and loading a whole folder of shards.

Part of :mod:`pipeline.shards` (import from there)."""

from __future__ import annotations

import logging
import os

import pyarrow as pa
import pyarrow.fs as pafs

from pipeline.atomic import fsync_directory
from pipeline.shards.schema import QUARANTINE_DIR, REASON_SUFFIX, ShardError
from pipeline.shards.store import Location, list_shard_names, read_validated, resolve_location

log = logging.getLogger("pipeline.shards")


def _quarantine(directory: Location, name: str, reason: str) -> str:
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
    return _quarantine(resolve_location(directory or ".", filesystem), name, reason)


def _load_one(
    directory: Location, name: str, check_legality: bool, quarantine: bool
) -> tuple[pa.Table | None, str | None]:
    """(table, None) for a valid shard, (None, reason) otherwise; never raises."""
    source = directory.child(name)
    try:
        return read_validated(source, check_legality), None
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


def _report_bad(directory: Location, name: str, reason: str, quarantine: bool) -> None:
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
    location = resolve_location(directory, filesystem)
    tables: list[pa.Table] = []
    bad: list[tuple[str, str]] = []
    for name in list_shard_names(location):
        table, reason = _load_one(location, name, check_legality, quarantine)
        if table is not None:
            tables.append(table)
        else:
            bad.append((location.child(name).shown, reason or ""))
    log.info("loaded %d shards from %s (%d skipped)", len(tables), location.shown, len(bad))
    return tables, bad
