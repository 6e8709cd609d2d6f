"""The run folder's append-only ledgers (``ledger.jsonl``, ``games.jsonl``)
and its best-network pointer (``best.txt``)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from pipeline.atomic import atomic_write

log = logging.getLogger(__name__)

LEDGER_FILE = "ledger.jsonl"
GAMES_FILE = "games.jsonl"
BEST_FILE = "best.txt"


class Ledger:
    """Append-only record of finished stages (one JSON object a line)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[dict[str, Any]] = []
        if path.exists():
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    self.entries.append(json.loads(line))
                except json.JSONDecodeError:
                    # Only the last line can be torn (a kill mid-append): drop it.
                    log.warning("%s:%d: unreadable ledger line dropped", path, number)

    def find(self, generation: int, stage: str) -> dict[str, Any] | None:
        """The first line of ``stage`` for ``generation`` (None: not done yet)."""
        for entry in self.entries:
            if entry["generation"] == generation and entry["stage"] == stage:
                return entry
        return None

    def append(self, entry: dict[str, Any]) -> None:
        """Append ``entry`` as one JSON line, flushed to disk before it counts."""
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry, default=str) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self.entries.append(entry)


def write_best(out: Path, best: str) -> None:
    """Point ``OUT/best.txt`` at ``best`` (atomically)."""
    with atomic_write(out / BEST_FILE) as handle:
        handle.write(best.encode())
