"""The synchronous loop's check of a generation's shards against
``games.jsonl`` (every recorded game id in exactly one valid shard)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from pipeline.config import Config
from pipeline.loop.ledger import GAMES_FILE, Ledger
from pipeline.loop.tasks import generation_tasks
from pipeline.shards import (
    ShardError,
    quarantine_shard,
    read_shard,
    remove_stale_temps,
    shard_exists,
    shard_name,
)

log = logging.getLogger(__name__)


def record_games(games: Ledger, generation: int) -> Callable[[dict[str, Any]], None]:
    """``run_selfplay``'s ``on_task``: append the finished task's game ids to ``games``
    (once per task: a task played again after its shard was quarantined has the same ids)."""

    def on_task(summary: dict[str, Any]) -> None:
        if not any(entry["task"] == summary["task"] for entry in games.entries):
            append_games(games, generation, summary["task"], summary["game_ids"])

    return on_task


def append_games(games: Ledger, generation: int, task: str, ids: list[str]) -> None:
    """Record the game ids of a finished task of ``generation`` in ``games``."""
    games.append({"generation": generation, "stage": "games", "task": task, "games": sorted(ids)})


def check_shards(config: Config, shards: str, generation: int, games: Ledger) -> dict[str, str]:
    """Read and validate every shard of ``generation``; returns ``{task: reason}``
    of the tasks to play again.

    A shard that does not read back (truncated, corrupt, invalid rows) or whose
    game ids differ from those ``games`` recorded for its task is quarantined
    (``shards/quarantine/`` with a ``.reason.txt``); a missing shard is reported
    as missing.  A valid shard whose task ``games`` lacks (the driver died
    between the shard and its summary) has its ids recorded now.  I/O errors
    propagate: they say nothing about the shard."""
    recorded = {entry["task"]: entry["games"] for entry in games.entries}
    remove_stale_temps(shards)  # left by writers killed mid-write
    redo: dict[str, str] = {}
    for task in generation_tasks(config, generation):
        if not shard_exists(shards, task):
            redo[task] = "missing"
            continue
        path = os.path.join(shards, shard_name(task))
        try:
            table = read_shard(path, check_legality=config.train.check_legality)
        except ShardError as error:
            reason = error.reason
        else:
            ids = sorted(set(table.column("game_id").to_pylist()))
            if task not in recorded:
                append_games(games, generation, task, ids)
                continue
            if ids == sorted(recorded[task]):
                continue
            reason = f"game ids {ids} differ from the ids {GAMES_FILE} recorded: {sorted(recorded[task])}"
        moved = quarantine_shard(path, reason)
        log.warning("quarantined bad shard %s -> %s: %s", path, moved, reason)
        redo[task] = reason
    return redo
