"""Training targets rescored from distance-to-mate tables (``train.tablebases``).

lc0 rescores the positions of its training games that the Syzygy tables
hold: the value target becomes the table's result, and the moves-left
target its distance.  Syzygy cannot be downloaded here; the native core
builds distance-to-mate tables of pawnless endings with up to four pieces
(:mod:`models.tablebase`), and this module keeps them in a folder (one
``NAME.npy`` each, written atomically the first time a position needs it)
and rescores a shard's rows:

* ``z`` becomes the table's result for the side to move (+1, 0, -1);
* with a moves-left head, the plies left become the distance to mate of a
  won or lost position (a drawn one keeps its game's plies left).

A won or lost position whose fifty-move counter plus its distance to mate
exceeds 100 plies keeps both targets: the table ignores the fifty-move rule
and the game may well have been drawn by it.  Positions no table holds
(pawns, five or more pieces, castling rights) keep theirs.

Unlike ``train.known_endings``, which scores a whole ending as won, the
distance tells the value head's neighbour which positions are nearer mate:
the search's moves-left term then prefers the moves that shorten it.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from models.tablebase import TableEntry, build_tables, decode_entry, table_entry
from pipeline.atomic import atomic_write

__all__ = ["TablebaseError", "TablebaseStore", "default_tablebase_dir", "rescore_tablebases",
           "tablebase_store"]  # fmt: skip

log = logging.getLogger(__name__)

FIFTY_MOVE_PLIES = 100


class TablebaseError(ValueError):
    """A table file that is not a table (its path and what is wrong with it)."""


def default_tablebase_dir() -> Path:
    """``$XDG_CACHE_HOME/zerochess/tablebases`` (``~/.cache`` when unset)."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "zerochess" / "tablebases"


class TablebaseStore:
    """The tables of one folder, built and saved on first use, memory-mapped after."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self._tables: dict[str, npt.NDArray[np.int8]] = {}

    def table(self, name: str) -> npt.NDArray[np.int8]:
        """The table ``name`` (``KBNvK``): read from ``folder/name.npy``, or built and written there."""
        if name not in self._tables:
            path = self.folder / f"{name}.npy"
            if not path.exists():
                log.info("building the %s distance-to-mate table into %s", name, path)
                built = build_tables([name])[name]
                with atomic_write(path) as handle:
                    np.save(handle, built, allow_pickle=False)
            self._tables[name] = _load(path, name)
        return self._tables[name]

    def entry(self, entry: TableEntry) -> int:
        return int(self.table(entry.name)[entry.index])


@functools.lru_cache(maxsize=4)
def tablebase_store(folder: str) -> TablebaseStore:
    """The process's store of ``folder`` (one per folder, so each table is read once)."""
    return TablebaseStore(folder)


def rescore_tablebases(
    fens: Sequence[str],
    z: npt.NDArray[np.float32],
    plies_left: npt.NDArray[np.float32] | None,
    store: TablebaseStore,
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32] | None]:
    """``z`` and ``plies_left`` (new arrays; None stays None) with each row
    a table holds rescored (see the module's text)."""
    z = z.astype(np.float32, copy=True)
    plies_left = None if plies_left is None else plies_left.astype(np.float32, copy=True)
    for row, fen in enumerate(fens):
        entry = table_entry(fen)
        probe = None if entry is None else decode_entry(store.entry(entry))
        if probe is None:
            continue
        if probe.plies is not None:
            if _halfmove_clock(fen) + probe.plies > FIFTY_MOVE_PLIES:
                continue
            if plies_left is not None:
                plies_left[row] = probe.plies
        z[row] = probe.result
    return z, plies_left


def _halfmove_clock(fen: str) -> int:
    fields = fen.split()
    return int(fields[4]) if len(fields) > 4 and fields[4].isdigit() else 0


def _load(path: Path, name: str) -> npt.NDArray[np.int8]:
    try:
        table = np.load(path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as error:
        raise TablebaseError(f"tablebase file {path}: not a table ({error}); delete it to rebuild it") from error
    pieces = len(name) - 1  # the name's letters but its 'v'
    expected = 2 * 64**pieces
    if table.dtype != np.int8 or table.shape != (expected,):
        raise TablebaseError(
            f"tablebase file {path}: {table.dtype} {table.shape}, expected int8 ({expected},) for {name}; "
            "delete it to rebuild it"
        )
    return table
