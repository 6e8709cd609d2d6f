"""Shard *producers*: stand-ins for the async loop's self-play actors that skip
the search and write valid shards at a set rate (``bench/scale.py``).

A benchmark's stand-in, so it lives here, not in ``actors/``: the Ray workers
cannot import a module of ``bench/``, so whoever makes a Ray actor of these
classes first calls :func:`actors.runtime.send_by_value` on this module.

A producer has :class:`actors.roles.PoolActor`'s interface (``ready()`` and
``play(task, seed, games, version, weights)`` returning the same summary),
so the real driver, trainer and gatekeeper run unchanged around it.  Its
shards are made from a *template*: the rows of a few real self-play games
(:func:`make_template`, played once by the bench with the real worker), tiled
game by game to the task's ``games`` (so a shard has the size of a real one)
with fresh game ids (``{task}-{k:05d}``, the self-play worker's) and the
task's net version.  The producer validates its table and writes it like a
self-play actor (:func:`pipeline.shards.write_shard`) and returns the shard's
digest (:func:`pipeline.shards.store.shard_digest`) for the driver to verify;
it first sleeps until the task is due (the search's time), so that it holds
``rate`` positions per second and a shard lands when its task answers.

Many producers share one process: a :class:`ProducerHub` (one Ray actor,
threaded) hosts the producers of a node, and :class:`HubProducers` hands the
driver one :class:`ProducerHandle` per producer (``ready.remote`` and
``play.remote`` return the hub's object refs), because 256 Ray worker
processes (~100 MB each) do not fit this machine.  The driver's side is the
same as with one actor per producer: one actor task and one result per shard.
"""

from __future__ import annotations

import itertools
import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from actors.roles import Placement, node_id
from pipeline.shards import SHARD_SCHEMA, read_shard, write_shard
from pipeline.shards.store import shard_digest


class ProducerError(ValueError):
    """A producer setting that cannot work: names the setting and the value."""


def make_template(config: dict[str, Any], folder: str, games: int, seed: int = 1) -> str:
    """Play ``games`` real self-play games with ``config`` (plain data) and a
    random net; their shard (``folder/template.parquet``) is the producers' template."""
    from actors.selfplay import SelfPlayActor

    actor = SelfPlayActor(config, None, folder)
    return str(actor.play_task("template", seed, games)["path"])


@dataclass
class _Template:
    """The template's table and, per game, its rows (in order)."""

    table: pa.Table
    games: list[np.ndarray]

    @classmethod
    def load(cls, path: str) -> _Template:
        table = read_shard(path, check_legality=False)
        ids = table.column("game_id").to_pylist()
        order: dict[str, list[int]] = {}
        for row, game in enumerate(ids):
            order.setdefault(game, []).append(row)
        if not order:
            raise ProducerError(f"template shard {path}: no rows")
        return cls(table, [np.asarray(rows, dtype=np.int64) for rows in order.values()])

    def table_for(self, task: str, games: int, version: int) -> pa.Table:
        """``games`` games (template games in turn) with fresh ids and net ``version``."""
        picks = [self.games[k % len(self.games)] for k in range(games)]
        rows = np.concatenate(picks)
        table = self.table.take(pa.array(rows))
        numbers = np.repeat(np.arange(games, dtype=np.int32), [len(p) for p in picks])
        ids = pa.DictionaryArray.from_arrays(pa.array(numbers), pa.array([f"{task}-{k:05d}" for k in range(games)]))
        column = SHARD_SCHEMA.names.index("game_id")
        table = table.set_column(column, SHARD_SCHEMA.field("game_id"), ids.cast(SHARD_SCHEMA.field("game_id").type))
        generation = SHARD_SCHEMA.names.index("generation")
        field = SHARD_SCHEMA.field("generation")
        return table.set_column(generation, field, pa.array(np.full(len(rows), version), type=field.type))


class Producer:
    """One producer: writes task shards from the template at ``rate`` positions/s.

    Args:
        config: the config as plain data (``selfplay``, ``train.check_legality``).
        out: the shard folder.
        template: the template shard's path.
        rate: positions per second this producer holds (0: as fast as it can).
    """

    def __init__(self, config: dict[str, Any], out: str, template: str | _Template, rate: float) -> None:
        if rate < 0:
            raise ProducerError(f"producer rate must be >= 0 positions/s, got {rate}")
        self.out = out
        self.rate = rate
        self.check_legality = bool(config.get("train", {}).get("check_legality", False))
        self.template = _Template.load(template) if isinstance(template, str) else template
        self.due: float | None = None  # when the last task was due (None: no task yet)
        self.lock = threading.Lock()

    def ready(self) -> Placement:
        return Placement(node_id(), os.getpid())

    def play(self, task: str, seed: int, games: int, version: int, weights: list[Any]) -> dict[str, Any]:
        """Write shard ``task`` (``games`` games); the self-play actor's summary plus the digest."""
        del seed, weights  # no search, no net
        table = self.template.table_for(task, games, version)
        self._wait(table.num_rows)  # the search's time: the shard lands (and the task answers) when it is due
        started = time.perf_counter()
        if self.check_legality:  # write_shard validates rows; legality is the expensive extra
            from pipeline.shards import validate_table

            validate_table(table, check_legality=True)
        path = write_shard(table, self.out, task)
        digest = shard_digest(path)
        positions = table.num_rows
        training = int(pc.sum(table.column("full_search")).as_py() or 0)
        busy = time.perf_counter() - started
        return {"task": task, "path": path, "game_ids": [f"{task}-{k:05d}" for k in range(games)], "games": games,
                "positions": positions, "full_searches": training, "seconds": time.perf_counter() - started,
                "version": version, "node": node_id(), "busy_s": busy, "digest": digest.as_dict()}  # fmt: skip


    def _wait(self, positions: int) -> None:
        """Hold the rate: a task is due positions/rate after the previous one."""
        if self.rate <= 0:
            return
        with self.lock:
            interval = positions / self.rate
            now = time.monotonic()
            # the first task at a random phase, so that producers started together do not land together
            self.due = now + interval * random.random() if self.due is None else \
                max(self.due, now - interval) + interval  # fmt: skip
            due = self.due
        time.sleep(max(0.0, due - time.monotonic()))


class ProducerHub:
    """The producers of one node in one process (a threaded Ray actor): the
    calls of producer ``k`` go to its own :class:`Producer`."""

    def __init__(self, config: dict[str, Any], out: str, template: str, rate: float) -> None:
        self.args = (config, out, template, rate)
        self.producers: dict[int, Producer] = {}
        self.lock = threading.Lock()
        self.template = _Template.load(template)

    def _producer(self, key: int) -> Producer:
        with self.lock:
            if key not in self.producers:
                config, out, _, rate = self.args
                self.producers[key] = Producer(config, out, self.template, rate)
            return self.producers[key]

    def ready(self, key: int) -> Placement:
        self._producer(key)
        return Placement(node_id(), os.getpid())

    def play(self, key: int, task: str, seed: int, games: int, version: int, weights: list[Any]) -> dict[str, Any]:
        return self._producer(key).play(task, seed, games, version, weights)

    def cpu_s(self) -> float:
        """CPU seconds this process has used (user + system)."""
        times = os.times()
        return times.user + times.system


class _Method:
    def __init__(self, hub: Any, name: str, key: int) -> None:
        self.hub, self.name, self.key = hub, name, key

    def remote(self, *args: Any) -> Any:
        return getattr(self.hub, self.name).remote(self.key, *args)


class ProducerHandle:
    """What the driver holds for one producer: ``ready.remote()`` and ``play.remote(...)``."""

    def __init__(self, hub: Any, key: int) -> None:
        self.ready = _Method(hub, "ready", key)
        self.play = _Method(hub, "play", key)


class HubProducers:
    """The pool's actor class for ``run_async(pool_actor=...)``: ``remote(config,
    shards)`` returns the next producer, round robin over the hubs."""

    def __init__(self, hubs: list[Any]) -> None:
        if not hubs:
            raise ProducerError("no producer hubs")
        self.hubs = hubs
        self.keys = itertools.count()

    def remote(self, config: dict[str, Any], shards: str) -> ProducerHandle:
        del config, shards  # the hubs were made with them
        key = next(self.keys)
        return ProducerHandle(self.hubs[key % len(self.hubs)], key)


def footer_rows(path: str) -> int:
    """Rows of a shard from its footer (for tests and the bench)."""
    return pq.read_metadata(path).num_rows
