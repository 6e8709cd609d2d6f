"""The async loop's ``games.jsonl`` as the driver keeps it: one compact
record per task in memory, running totals, and lines written in batches.

The file holds one JSON line per finished self-play task (its game ids,
positions, training positions, node, time and, from writers that give one,
the shard's digest: :class:`pipeline.loop.records.TaskRecord`).  The driver
needs the ids only to check a shard whose writer gave no digest, which is
rare (a shard found on resume that no line records, or a line written
before digests), so memory holds per task only its counts and digest
(:meth:`GamesBook.ids` reads a task's ids back from the file), and the
totals are kept as lines are added instead of summed each time.

Lines are appended to a buffer and written together by :meth:`flush`, one
write and one fsync for all the tasks the driver handled in one turn of its
loop.  A driver killed before a flush loses those lines, not their shards:
on resume the sweep finds each valid shard that no line records and records
it (:meth:`actors.async_pool.PoolRole._sweep`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

COMPACT_KEYS = ("generation", "task", "positions", "training_positions", "node", "digest")
"""What memory keeps of a line (plus ``game_count``, the number of its game ids)."""


def compact(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A line's record in memory: its counts and digest, its game ids counted."""
    kept = {key: entry[key] for key in COMPACT_KEYS if key in entry}
    kept["game_count"] = len(entry.get("games", ()))
    return kept


class GamesBook(Mapping[str, dict[str, Any]]):
    """``games.jsonl``: task name -> compact record (a read-only mapping), totals,
    batched appends.  A torn last line (a kill mid-write) is dropped on load."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.records: dict[str, dict[str, Any]] = {}
        self.pending: list[str] = []
        self.games = self.positions = self.training = 0
        if path.exists():
            for entry in self._lines():
                self._add(entry)

    def _lines(self) -> Iterator[dict[str, Any]]:
        with open(self.path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    log.warning("%s:%d: unreadable ledger line dropped", self.path, number)

    def _add(self, entry: Mapping[str, Any]) -> bool:
        task = entry["task"]
        if task in self.records:
            return False
        record = compact(entry)
        self.records[task] = record
        self.games += record["game_count"]
        self.positions += int(record.get("positions", 0))
        self.training += int(record.get("training_positions", 0))
        return True

    # -- the mapping ----------------------------------------------------------

    def __getitem__(self, task: str) -> dict[str, Any]:
        return self.records[task]

    def __iter__(self) -> Iterator[str]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def totals(self) -> tuple[int, int, int]:
        """(games, positions, training positions) of the recorded tasks."""
        return self.games, self.positions, self.training

    # -- writing --------------------------------------------------------------

    def append(self, entry: dict[str, Any]) -> None:
        """Record a task (once: a task recorded already is ignored); its line is
        written by the next :meth:`flush`."""
        if self._add(entry):
            self.pending.append(json.dumps(entry, default=str) + "\n")

    def flush(self) -> None:
        """Write the pending lines: one write, one fsync."""
        if not self.pending:
            return
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write("".join(self.pending))
            handle.flush()
            os.fsync(handle.fileno())
        self.pending.clear()

    def note_digest(self, task: str, digest: dict[str, Any]) -> None:
        """The digest of a recorded task's shard written again (memory only: a
        resumed driver that finds the first digest reads the shard back)."""
        self.records[task]["digest"] = digest

    # -- reading back ---------------------------------------------------------

    def ids(self, task: str) -> list[str] | None:
        """The game ids ``games.jsonl`` recorded for ``task`` (read back from the
        file; the pending lines first); None if not recorded."""
        if task not in self.records:
            return None
        return self.ids_of({task}).get(task)

    def ids_of(self, tasks: set[str]) -> dict[str, list[str]]:
        """The game ids of each recorded task in ``tasks`` (one pass over the file)."""
        found: dict[str, list[str]] = {}
        if self.path.exists():
            for entry in self._lines():
                if entry["task"] in tasks:
                    found.setdefault(entry["task"], list(entry.get("games", [])))
        for line in self.pending:
            entry = json.loads(line)
            if entry["task"] in tasks:
                found.setdefault(entry["task"], list(entry["games"]))
        return found
