"""Checks of command-line values made before a command starts any work
(Ray, engines, files): each failure is a :class:`UsageError` naming the option."""

from __future__ import annotations

import os
from pathlib import Path


class UsageError(ValueError):
    """A command-line value is unusable; the message names the option."""


def require_at_least(option: str, value: float | None, minimum: float = 1) -> None:
    """``value`` (None: not given) must be >= ``minimum``."""
    if value is not None and value < minimum:
        raise UsageError(f"{option} must be >= {minimum:g}, got {value:g}")


def require_positive(option: str, value: float | None) -> None:
    """``value`` (None: not given) must be > 0."""
    if value is not None and not value > 0:
        raise UsageError(f"{option} must be > 0, got {value:g}")


def check_output_folder(option: str, path: str | os.PathLike[str]) -> None:
    """``path`` must be a folder or creatable as one: a probe folder is made
    and removed in its nearest existing ancestor (see
    :func:`pipeline.atomic.unwritable_reason`), so ``/proc/x`` or a read-only
    mount is refused before Ray or any engine starts."""
    from pipeline.atomic import unwritable_reason

    target = Path(path)
    if target.exists() and not target.is_dir():
        raise UsageError(f"{option} {os.fspath(path)}: is a file, not a folder")
    reason = unwritable_reason(target)
    if reason is not None:
        raise UsageError(f"{option} {os.fspath(path)}: {reason}")


def check_input_file(option: str, path: str | os.PathLike[str]) -> None:
    """``path`` must be an existing, readable, non-empty file."""
    target = Path(path)
    if not target.exists():
        raise UsageError(f"{option} {os.fspath(path)}: no such file")
    if target.is_dir():
        raise UsageError(f"{option} {os.fspath(path)}: is a folder, not a file")
    if not os.access(target, os.R_OK):
        raise UsageError(f"{option} {os.fspath(path)}: not readable")
    if target.stat().st_size == 0:
        raise UsageError(f"{option} {os.fspath(path)}: is empty")


def is_uri(path: str) -> bool:
    """Whether ``path`` is a filesystem URI (``s3://...``) rather than a local path."""
    return "://" in path
