"""Where the supervised phase reads and writes: the PGN inputs, the
``OUT/train`` and ``OUT/heldout`` folders, and which split a game goes to
(a stable hash of its start position and moves, see :mod:`pipeline.supervised.convert`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import chess

from pipeline.shards import list_shards

__all__ = [
    "DROPPED_DIR",
    "HELDOUT",
    "MANIFEST",
    "PGN_SUFFIXES",
    "TRAIN",
    "SupervisedDataError",
    "find_pgn_files",
    "is_heldout",
    "prepare_output",
    "split_dirs",
    "split_key",
]

TRAIN: Final = "train"
HELDOUT: Final = "heldout"
MANIFEST: Final = "pgn2shards.json"
DROPPED_DIR: Final = "dropped"
PGN_SUFFIXES: Final = (".pgn", ".pgn.gz", ".pgn.bz2", ".pgn.zst", ".pgn.zstd")


class SupervisedDataError(ValueError):
    """Input or output of the supervised phase is unusable; names the path and the value."""


def find_pgn_files(inputs: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The PGN files named by ``inputs``: a file as is, a folder searched recursively.

    In a folder, files ending in one of :data:`PGN_SUFFIXES` are taken, sorted
    by path. Duplicates are removed, the order of ``inputs`` kept.

    Raises:
        SupervisedDataError: an input does not exist, or no PGN file is found.
    """
    found: list[Path] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*")
                                if p.is_file() and p.name.lower().endswith(PGN_SUFFIXES)))
        elif path.is_file():
            found.append(path)
        else:
            raise SupervisedDataError(f"--pgn {os.fspath(item)!r}: no such file or folder")
    unique = list(dict.fromkeys(p.resolve() for p in found))
    if not unique:
        raise SupervisedDataError(f"no PGN files ({', '.join(PGN_SUFFIXES)}) in "
                                  f"{[os.fspath(i) for i in inputs]}")
    return unique


def split_dirs(out: str | os.PathLike[str]) -> dict[str, Path]:
    """``{"train": OUT/train, "heldout": OUT/heldout}``."""
    return {TRAIN: Path(out) / TRAIN, HELDOUT: Path(out) / HELDOUT}


def prepare_output(out: str | os.PathLike[str], overwrite: bool = False) -> None:
    """Creates ``OUT/train`` and ``OUT/heldout``; refuses folders that hold shards.

    With ``overwrite`` the shards, drop reports and manifest of an earlier
    run are removed first (nothing else in ``OUT`` is touched).

    Raises:
        SupervisedDataError: a split folder already holds shards and
            ``overwrite`` is False.
    """
    for directory in split_dirs(out).values():
        if directory.is_dir() and list_shards(directory):
            if not overwrite:
                raise SupervisedDataError(
                    f"{directory} already holds shards: pass --overwrite to replace them, "
                    "or choose another --out")
            for shard in list_shards(directory):
                os.unlink(shard)
        directory.mkdir(parents=True, exist_ok=True)
    if overwrite:
        shutil.rmtree(Path(out) / DROPPED_DIR, ignore_errors=True)
        (Path(out) / MANIFEST).unlink(missing_ok=True)


def is_heldout(key: str, fraction: float) -> bool:
    """Whether the game with split key ``key`` belongs to the held-out split.

    The first 8 bytes of SHA-256(key) as a number in [0, 1) below ``fraction``.
    """
    if fraction <= 0.0:
        return False
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64 < fraction


def split_key(start: chess.Board, moves: Sequence[chess.Move]) -> str:
    """The split key of a game: its start FEN and UCI moves."""
    return start.fen() + " " + " ".join(move.uci() for move in moves)
