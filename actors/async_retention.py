"""The async loop's shard retention (:class:`RetentionRole`, a part of
:class:`actors.async_loop.AsyncLoop`): ``run.retain_positions`` applied by the
driver with :func:`pipeline.loop.retention.retain_shards`.

When it runs decides what is safe.  The trainer actor reads the window of
its current segment while newer shards land, and a new trainer (after a
SIGKILL, a lost node or a driver restart) resumes the window saved in its
state file, which may be one it never reported.  So a pass runs only

* after a trainer report (``TrainerReport.window_paths``, noted by the
  driver with the trainer that sent it), from *that* trainer: never between
  a trainer's (re)start and its first report, which names the window it
  resumed;
* while the trainer is idle (no ``run`` call in flight), so its window is
  exactly the reported one; its next call either keeps that window or
  builds one from the newest shards, which retention never removes;
* at most once per report and every :attr:`RetentionRole.retain_every_s`.

A removed task is listed in ``OUT/retention.jsonl`` and skipped by the
pool's checks of ``games.jsonl`` against the shard folder (``_sweep``,
``_sweep_missing``), so it is never played again.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from pipeline.loop.retention import load_retired, retain_shards

log = logging.getLogger(__name__)

RETAIN_EVERY_S = 5.0


class RetentionRole:
    """Shard retention's part of the driver (state kept on first use, so the
    driver's ``__init__`` needs nothing for it)."""

    retain_every_s: float = RETAIN_EVERY_S
    """Seconds between two retention passes at least (a pass lists the shard folder)."""

    def _retired(self) -> set[str]:
        """The tasks whose shards retention removed (``OUT/retention.jsonl``, read once)."""
        names = self.__dict__.get("_retired_names")
        if names is None:
            names = self.__dict__["_retired_names"] = load_retired(self.out)
        return names

    def _retain(self) -> None:
        """One retention pass, when it is safe and due (see the module docstring)."""
        retain = self.config.run.retain_positions
        report: Any = getattr(self, "trainer_window", None)
        if retain <= 0 or report is None or self.trainer_running:
            return
        owner, paths = report
        if (
            owner is None
            or owner is not self.trainer
            or report is self.__dict__.get("_retained_report")
        ):
            return  # a trainer (re)started since that report: it may read its saved window
        now = time.monotonic()
        if now - self.__dict__.get("_retained_at", float("-inf")) < self.retain_every_s:
            return
        self.__dict__["_retained_report"], self.__dict__["_retained_at"] = report, now
        try:
            self.games.flush()  # only shards whose games.jsonl line is on disk count as recorded
            removed = retain_shards(self.shards, self.out, self._recorded(), paths, retain)
        except OSError as error:  # housekeeping: never stops the run
            log.warning("retention: the shard folder %s could not be read: %s", self.shards, error)
            return
        if removed:
            self._retired().update(shard.name for shard in removed)
            self.say(f"retention: removed {len(removed)} shard(s) "
                     f"({sum(s.training_positions for s in removed):,} training positions); "
                     f"keeping the newest {retain:,} and the trainer's window of {len(paths)} shard(s)")  # fmt: skip
