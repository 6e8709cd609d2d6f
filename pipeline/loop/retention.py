"""Shard retention (``run.retain_positions``): which self-play shards a long
run may delete, and deleting them.

The rule (:func:`select_removals`, pure) walks the shards newest first, in
the order the replay window takes them (by name: ``gen0003-task00012``
sorts by net version / generation, then task), and keeps:

* every shard among the newest ``retain_positions`` training positions
  (the shard that crosses the boundary included);
* every shard not recorded in ``games.jsonl`` (not validated yet, or not
  self-play's: it counts as 0 positions in the walk, so it only makes the
  kept part reach further back);
* every shard of a live replay window (the pieces the trainer reads now).

Everything else (recorded, older, in no live window) is removed.  With
``retain_positions`` >= ``train.window_positions`` (:func:`pipeline.loop_config.check_retention`)
a window built later from the newest shards never needs a removed one: a
shard outside the newest ``retain_positions`` has at least that many newer
training positions, all kept, so a window stops before reaching it.

Each removal is appended to ``OUT/retention.jsonl`` *before* the file is
deleted (a line per shard: task, positions, training positions, time), and
logged; a resumed run reads the file (:func:`load_retired`) so that its
checks of ``games.jsonl`` against the shard folder do not play a retired
task again.  Shards on a pyarrow filesystem URI (``s3://...``) are deleted
with the filesystem's ``delete_file``; local ones with ``os.remove``.

When it may run is the caller's business: the sync loop after a
generation's training (its window protected), the async driver only while
the trainer is idle and has reported its window since it (re)started
(:mod:`actors.async_retention`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from pipeline.loop.ledger import Ledger
from pipeline.shards import SHARD_SUFFIX, list_shards, shard_name, shard_order_key
from pipeline.shards.store import resolve_location

if TYPE_CHECKING:
    from pipeline.config import Config

log = logging.getLogger(__name__)

RETENTION_FILE = "retention.jsonl"


@dataclass(frozen=True)
class ShardInfo:
    """One shard in the folder: its name (the task's), its training positions
    (``full_search`` rows) and whether ``games.jsonl`` records it (validated)."""

    name: str
    training_positions: int
    recorded: bool
    positions: int = 0


def shard_stem(path: str) -> str:
    """The shard's name without folder and suffix (its task's name)."""
    return path.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(SHARD_SUFFIX)


def select_removals(
    shards: Iterable[ShardInfo], live: Iterable[str], retain_positions: int
) -> list[ShardInfo]:
    """The shards to remove, oldest first (see the module docstring).

    Args:
        shards: every shard in the folder (any order).
        live: the shards of every replay window still in use (names or paths).
        retain_positions: training positions kept in the newest shards; 0
            removes nothing.
    """
    if retain_positions <= 0:
        return []
    protected = {shard_stem(name) for name in live}
    kept = 0
    removals: list[ShardInfo] = []
    for shard in sorted(shards, key=lambda shard: shard_order_key(shard.name), reverse=True):
        newer = kept
        kept += shard.training_positions if shard.recorded else 0
        if newer < retain_positions or not shard.recorded or shard.name in protected:
            continue
        removals.append(shard)
    return removals[::-1]


def load_retired(out: str | os.PathLike[str]) -> set[str]:
    """The tasks whose shards retention removed on purpose (``OUT/retention.jsonl``)."""
    path = Path(out) / RETENTION_FILE
    return (
        {entry["task"] for entry in Ledger(path).entries if "task" in entry}
        if path.exists()
        else set()
    )


def remove_shard(directory: str, name: str, *, filesystem: pafs.FileSystem | None = None) -> bool:
    """Delete shard ``name`` of ``directory`` (a folder or a URI); False if it was gone already."""
    target = resolve_location(directory, filesystem).child(shard_name(name))
    try:
        if target.local:
            os.remove(target.path)
        else:
            target.fs.delete_file(target.path)
    except FileNotFoundError:
        return False
    return True


def folder_shards(
    directory: str,
    recorded: Mapping[str, Mapping[str, Any]],
    *,
    filesystem: pafs.FileSystem | None = None,
) -> list[ShardInfo]:
    """The shards in ``directory`` with their training positions: from their
    ``games.jsonl`` entry (``recorded``, by task) when it has them (the async
    loop's), else counted in the file (the sync loop's entries hold only game
    ids); an unrecorded shard counts 0 (never read)."""
    from pipeline.training.window import count_training_rows

    infos = []
    for path in list_shards(directory, filesystem=filesystem):
        name = shard_stem(path)
        entry = recorded.get(name)
        if entry is None:
            infos.append(ShardInfo(name, 0, False))
            continue
        training = entry.get("training_positions")
        if training is None:
            training = count_training_rows(path) or 0
        infos.append(ShardInfo(name, int(training), True, int(entry.get("positions", 0))))
    return infos


def retain_shards(
    directory: str,
    out: str | os.PathLike[str],
    recorded: Mapping[str, Mapping[str, Any]],
    live: Iterable[str],
    retain_positions: int,
    *,
    filesystem: pafs.FileSystem | None = None,
) -> list[ShardInfo]:
    """Apply retention to the shard folder ``directory``: select
    (:func:`select_removals`), note each in ``OUT/retention.jsonl``, then delete
    it; returns the shards removed.

    Args:
        directory: the shard folder or URI.
        out: the run folder (``retention.jsonl``).
        recorded: ``games.jsonl``'s entries by task (the validated shards).
        live: the shards of every replay window in use (paths or names).
        retain_positions: ``run.retain_positions`` (0: nothing is removed).
    """
    if retain_positions <= 0:
        return []
    live = list(live)
    removals = select_removals(
        folder_shards(directory, recorded, filesystem=filesystem), live, retain_positions
    )
    if not removals:
        return []
    ledger = Ledger(Path(out) / RETENTION_FILE)
    noted = {entry.get("task") for entry in ledger.entries}
    removed = []
    for shard in removals:
        if (
            shard.name not in noted
        ):  # noted first: a crash before the delete leaves a shard to remove again
            ledger.append({"stage": "retired", "task": shard.name, "positions": shard.positions,
                           "training_positions": shard.training_positions, "retain_positions": retain_positions,
                           "live_shards": len(live), "time": round(time.time(), 3)})  # fmt: skip
        try:
            remove_shard(directory, shard.name, filesystem=filesystem)
        except OSError as error:  # housekeeping: never stops the run; the next pass tries again
            log.error("retention: cannot remove shard %s: %s", shard.name, error)
            continue
        log.info("retention: removed shard %s (%d training positions, %d positions; keeping the newest %d)",
                 shard.name, shard.training_positions, shard.positions, retain_positions)  # fmt: skip
        removed.append(shard)
    return removed


def retain_generation(
    config: Config,
    out: Path,
    shards: str,
    games: Ledger,
    generation: int,
    say: Callable[[str], None],
) -> list[ShardInfo]:
    """The sync loop's pass after ``generation`` trained (``run.retain_positions``):
    that training's window (``OUT/genNNNN/train/window.json``) is protected;
    the next generation's window is built later, from the newest shards.  A
    window file that cannot be read means nothing is removed this time."""
    from pipeline.training.trainer import RunPaths
    from pipeline.training.window import TrainDataError, Window

    retain = config.run.retain_positions
    if retain <= 0:
        return []
    window_file = RunPaths(out / f"gen{generation:04d}" / "train").window
    try:
        live = [piece.path for piece in Window.load(window_file).pieces]
    except TrainDataError as error:
        log.warning(
            "retention skipped after generation %d: its window is unknown (%s)", generation, error
        )
        return []
    recorded = {entry["task"]: entry for entry in games.entries if "task" in entry}
    removed = retain_shards(shards, out, recorded, live, retain)
    if removed:
        say(f"generation {generation}: retention removed {len(removed)} shard(s) "
            f"({sum(s.training_positions for s in removed):,} training positions; the newest {retain:,} kept)")  # fmt: skip
    return removed
