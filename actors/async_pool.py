"""The async loop's self-play pool (:class:`PoolRole`, a part of
:class:`actors.async_loop.AsyncLoop`): the pool actors and their slots, the
task queue, the object-store copies of the nets, and the check of every shard
against ``games.jsonl`` as it lands and when the run resumes or ends."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray

from actors.roles import PoolActor
from actors.selfplay import TASKS_IN_FLIGHT_PER_ACTOR
from pipeline.loop.records import Task, TaskRecord
from pipeline.loop.tasks import parse_task, task_name, task_seed
from pipeline.shards import (
    ShardError,
    list_shards,
    quarantine_shard,
    read_shard,
    remove_stale_temps,
    shard_name,
)
from pipeline.shards.store import ShardDigest, shard_digest, verify_shard

log = logging.getLogger(__name__)

UNPLACED_LIMIT = 10
"""Deaths in a row of a pool actor that never ran (placed on a node that was
going away) before its place in the pool is given up; each waits longer."""
TASK_ATTEMPTS = 5
"""Times one self-play task may fail (other than by its actor dying) before the run fails."""


@dataclass
class Slot:
    """One place in the pool: its actor (None until ``start_after``), whether it
    runs, tasks in flight, restarts after running, deaths before running."""

    actor: Any
    ready: bool = False
    load: int = 0
    restarts: int = 0
    node: str = ""
    unplaced: int = 0
    start_after: float = 0.0


def kill_quietly(actor: Any) -> None:
    """``ray.kill`` an actor that may be gone already (or None)."""
    if actor is None:
        return
    try:
        ray.kill(actor)
    except Exception:  # noqa: BLE001 - already gone
        pass


class PoolRole:
    """The self-play pool's part of the driver (its state is set up in
    :class:`actors.async_loop.AsyncLoop`'s ``__init__``)."""

    def _sweep(self, resume: bool) -> None:
        """Check the shards against ``games.jsonl``: record valid unrecorded
        shards (a driver killed between a shard and its record), quarantine bad
        ones and queue their tasks again (same id, seed, version); a recorded
        task whose shard is missing is queued again too.  At the start
        (``resume``) recorded shards are trusted (each was checked when it
        landed); at the end every one is checked again: against its digest
        (size and footer, no decoding), or read back when its line has none.
        Temp files older than an hour (a writer killed mid-write) are removed."""
        remove_stale_temps(self.shards)
        recorded = self._recorded()
        names = {Path(path).name.removesuffix(".parquet") for path in list_shards(self.shards)}
        undigested = set() if resume else {name for name in names if "digest" not in recorded.get(name, {"digest": 0})}
        ids = self.games.ids_of(undigested) if undigested else {}
        for name in sorted(names | set(recorded)):
            parsed = parse_task(name)
            if parsed is None:
                continue
            version, index = parsed
            self.next_index = max(self.next_index, index + 1)
            if name in self._retired():  # removed on purpose by run.retain_positions
                continue
            if resume and name in recorded and name in names:
                continue
            entry = recorded.get(name)
            games = entry["game_count"] if entry else self.config.selfplay.games_per_task
            task = self.known.get(name) or Task(name, task_seed(self.config.selfplay.seed, version, index), games,
                                               version)  # fmt: skip
            if name in names and self._check(name, ids.get(name, []) if entry else None, version,
                                             entry.get("digest") if entry else None, reread=True) is None:  # fmt: skip
                continue
            if any(queued.name == name for queued in self.queue):
                continue
            self.say(f"self-play task {name} is played again ({'bad shard' if name in names else 'shard missing'})")
            self.queue.appendleft(task)
            self.known[name] = task

    def _check(self, name: str, ids: list[str] | None, version: int, digest: dict[str, Any] | None = None,
               reread: bool = False) -> str | None:  # fmt: skip
        """Check shard ``name``; None when valid (and recorded), else the reason
        (the shard is quarantined).  With its writer's ``digest`` (the writer
        validated the rows) the driver verifies the file's size and footer
        only (:func:`pipeline.shards.store.verify_shard`); without one it reads
        the shard back and compares its game ids with ``ids`` (None: record it).
        ``reread``: a recorded shard that differs from its digest is read back
        instead of quarantined (a task played again writes the same games, not
        always the same bytes)."""
        path = os.path.join(self.shards, shard_name(name))
        try:
            if digest is not None and "://" not in self.shards:
                try:
                    verify_shard(path, ShardDigest.from_dict(digest))
                    return None
                except ShardError:
                    if not reread:
                        raise
                    ids = self.games.ids(name) or []
            table = read_shard(path, check_legality=self.config.train.check_legality)
        except ShardError as error:
            reason = error.reason
        except FileNotFoundError:
            return "missing"
        else:
            found = sorted(set(table.column("game_id").to_pylist()))
            if ids is None:
                positions = table.num_rows
                training = int(sum(table.column("full_search").to_pylist()))
                digest = shard_digest(path).as_dict() if "://" not in self.shards else None
                self._record(name, found, positions, training, version, digest=digest)
                return None
            if found == sorted(ids):
                if name in self.games and "://" not in self.shards:
                    self.games.note_digest(name, shard_digest(path).as_dict())
                return None
            reason = f"game ids {found} differ from the task's {sorted(ids)}"
        try:
            moved = quarantine_shard(path, reason)
            log.warning("quarantined bad shard %s -> %s: %s", path, moved, reason)
        except FileNotFoundError:
            pass
        return reason

    def _record(self, name: str, ids: list[str], positions: int, training: int, version: int, node: str = "",
                digest: dict[str, Any] | None = None) -> None:  # fmt: skip
        """Record a task in ``games.jsonl`` (written at the end of the loop's turn)."""
        if name in self.games:  # a task played again: its shard now
            if digest is not None:
                self.games.note_digest(name, digest)
            return
        self.games.append(TaskRecord(version, name, ids, positions, training, node, digest=digest).as_entry())
        self.known.pop(name, None)

    def _pool_class(self) -> Any:
        selfplay, run = self.config.selfplay, self.config.run
        if self.pool_actor is not None and hasattr(self.pool_actor, "remote"):
            return self.pool_actor  # already remote, or a factory of handles
        return ray.remote(num_cpus=selfplay.cpus_per_worker, num_gpus=selfplay.gpus_per_worker,
                          resources={run.selfplay_resource: 1} if run.selfplay_resource else None,
                          max_restarts=0, max_task_retries=0)(self.pool_actor or PoolActor)  # fmt: skip

    def _new_slot(self, restarts: int = 0, unplaced: int = 0, delay_s: float = 0.0) -> Slot:
        slot = Slot(None, restarts=restarts, unplaced=unplaced, start_after=time.monotonic() + delay_s)
        if delay_s <= 0:
            self._start(slot)
        return slot

    def _start(self, slot: Slot) -> None:
        slot.actor = self._pool_class().remote(self.plain, self.shards)
        self.in_flight[slot.actor.ready.remote()] = ("ready", slot)

    def _on_ready(self, ref: Any, slot: Slot) -> None:
        try:
            where = ray.get(ref)
        except ray.exceptions.RayError as error:
            self._lost(slot, error)
            return
        slot.ready, slot.node = True, where.node

    def _lost(self, slot: Slot, error: Exception) -> None:
        """A pool actor died: replace it (its tasks are requeued by their own errors)."""
        if slot not in self.slots:
            return
        index = self.slots.index(slot)
        log.warning("self-play actor on node %s lost (ready=%s, restarts=%d, unplaced=%d): %s",
                    slot.node, slot.ready, slot.restarts, slot.unplaced, error)  # fmt: skip
        kill_quietly(slot.actor)
        # An actor that ran counts against selfplay.max_restarts; one that never
        # ran (its node was going away) is started again later, with a back-off.
        restarts, unplaced = (slot.restarts + 1, 0) if slot.ready else (slot.restarts, slot.unplaced + 1)
        if restarts > self.config.selfplay.max_restarts or unplaced > UNPLACED_LIMIT:
            self.slots.pop(index)
            self.say(f"self-play actor lost for good ({type(error).__name__}); {len(self.slots)} left")
            if not self.slots:
                raise RuntimeError(f"every self-play actor died; the last error: {error}") from error
            return
        delay = 1.0 if slot.ready else min(2.0**unplaced, 30.0)
        self.slots[index] = self._new_slot(restarts, unplaced, delay)
        if slot.ready:
            self.say(f"self-play actor lost ({type(error).__name__}): a new one is started")

    def _weights(self, version: int) -> list[Any]:
        if version not in self.weights:
            from models.net import net_state
            from pipeline.checkpoint import load_net

            self.weights[version] = ray.put(net_state(load_net(self.versions[version])))
        return [self.weights[version]]

    def _drop_old_weights(self) -> None:
        """Release the object-store copies of nets no task still needs."""
        needed = {self.version} | {task.version for task in self.queue}
        needed |= {info[1].version for kind, info in self.in_flight.values() if kind == "task"}
        for version in [v for v in self.weights if v not in needed]:
            del self.weights[version]

    def _feed_pool(self) -> None:
        if not self.slots and (self.queue or not self.stopping):
            self.slots = [self._new_slot() for _ in range(self.config.selfplay.workers)]
        for slot in self.slots:
            if slot.actor is None and time.monotonic() >= slot.start_after:
                self._start(slot)
        for slot in self.slots:
            while slot.ready and slot.load < TASKS_IN_FLIGHT_PER_ACTOR:
                task = self._next_task()
                if task is None:
                    return
                ref = slot.actor.play.remote(task.name, task.seed, task.games, task.version, self._weights(task.version))
                self.in_flight[ref] = ("task", (slot, task))
                slot.load += 1

    def _next_task(self) -> Task | None:
        if self.queue:
            return self.queue.popleft()
        if self.stopping:
            return None
        index = self.next_index
        self.next_index += 1
        name = task_name(self.version, index)
        task = Task(name, task_seed(self.config.selfplay.seed, self.version, index),
                    self.config.selfplay.games_per_task, self.version)  # fmt: skip
        self.known[name] = task
        return task

    def _on_task(self, ref: Any, slot: Slot, task: Task) -> None:
        slot.load -= 1
        try:
            summary = ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as error:
            self.queue.appendleft(task)
            self._lost(slot, error)
            return
        except ray.exceptions.RayError as error:
            task.attempts += 1
            if task.attempts >= TASK_ATTEMPTS:
                raise RuntimeError(f"self-play task {task.name} failed {task.attempts} times: {error}") from error
            log.warning("self-play task %s failed (%s): played again", task.name, error)
            self.queue.appendleft(task)
            return
        self.busy.selfplay_s += summary.get("busy_s", 0.0)
        reason = self._check(task.name, summary["game_ids"], task.version, summary.get("digest"))
        if reason is not None:
            self.say(f"self-play task {task.name}: bad shard ({reason[:120]}): played again")
            self.queue.appendleft(task)
            return
        self._record(task.name, summary["game_ids"], int(summary.get("positions", 0)),
                     int(summary.get("full_searches", 0)), task.version, summary.get("node", ""),
                     summary.get("digest"))  # fmt: skip
        games, positions = int(summary.get("games", 0)), int(summary.get("positions", 0))
        if self.rates:  # the first entry only starts the span
            self.rate_sums[0] += games
            self.rate_sums[1] += positions
        self.rates.append((time.monotonic(), games, positions))
