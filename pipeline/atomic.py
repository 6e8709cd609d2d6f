"""Atomic local file writes: a temp file in the same folder, fsync, ``os.replace``,
then fsync of the folder, so a reader sees the old file or the new one, never
a torn one (field notes: a plain write killed mid-way left corrupt files)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

FILE_MODE = 0o644


def fsync_directory(directory: str | os.PathLike[str]) -> None:
    """Flush a folder's entries to disk (no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def nearest_existing(path: str | os.PathLike[str]) -> Path:
    """``path`` itself if it exists, else its nearest existing ancestor."""
    ancestor = Path(path).absolute()
    while not ancestor.exists() and ancestor.parent != ancestor:
        ancestor = ancestor.parent
    return ancestor


def unwritable_reason(path: str | os.PathLike[str]) -> str | None:
    """Why a folder could not be made at ``path`` (None: it could), found by
    trying: a probe folder is made in the nearest existing ancestor and removed
    at once.  Permission bits alone say yes to root for ``/proc``, a read-only
    mount or a full disk, where the first real write would fail after minutes."""
    ancestor = nearest_existing(path)
    if not ancestor.is_dir():
        return f"{ancestor} is not a folder"
    try:
        probe = tempfile.mkdtemp(prefix=".zerochess-probe-", dir=ancestor)
    except OSError as error:
        return f"{ancestor} is not writable ({error.strerror or error})"
    with suppress(OSError):
        os.rmdir(probe)
    return None


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: int = FILE_MODE) -> Iterator[BinaryIO]:
    """Yield a binary file that replaces ``path`` when the block ends without
    an exception; on any exception the temp file is removed and an existing
    ``path`` is left as it was.  Parent folders are created."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_directory(target.parent)
