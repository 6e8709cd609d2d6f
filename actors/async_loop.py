"""The asynchronous loop (``run.mode: async``): self-play, training and gating
at the same time, each role on its own Ray resources (:mod:`actors.roles`).

* The **self-play pool** (``selfplay.workers`` actors, each with
  ``selfplay.cpus_per_worker``/``gpus_per_worker`` and one unit of
  ``run.selfplay_resource`` when set) never stops: the driver keeps two tasks
  in flight per actor.  A task is named from the net version that plays it
  and a running number (``gen{version:04d}-task{index:05d}``, the shard's
  name), and its positions carry the version in the shard's ``generation``
  column.  When a net is promoted its weights are put in the object store
  once; the next task of every actor names the new version, so the pool
  switches within one task.
* The **trainer** (one actor, ``run.trainer_cpus``/``trainer_gpus`` and the
  ``run.trainer_resource``, e.g. the ``trainer`` node of a cluster) trains on
  the replay window, rebuilt from the shard folder every
  ``run.candidate_every_steps`` steps, and exports a candidate at each of
  them.  The ratio control lets it reach step s only when
  ``s * train.batch_size <= run.train_samples_per_position * P`` (P: training
  positions self-play has produced); it starts once
  ``run.games_per_generation`` games exist.
* The **gatekeeper** (one actor) gates each candidate in order
  (:func:`actors.gate.run_gate`: SPRT against the best, then the Stockfish
  ladder) and promotes it; a candidate whose gate started before another
  promotion is gated again against the new best.

The driver alone writes the bookkeeping, in the run folder ``OUT``:
``ledger.jsonl`` (the initial net, the trainer's MLflow run, each candidate,
each gate), ``games.jsonl`` (one line per self-play task: its game ids and
position counts), ``shards/`` (with ``quarantine/``), ``trainer/`` (the
trainer's state and candidates), ``candNNNN/gate/`` (gate.json and PGNs),
``best.txt``, ``metrics.json`` and the MLflow store.

Faults.  A pool actor that dies (its process, or its whole node) is replaced
(at most ``selfplay.max_restarts`` times per slot) and its tasks go to the
other actors with the same id, seed and version; a replacement waiting for a
node gets no task until it runs.  A dead trainer is started again (at most
``run.role_max_restarts`` times) and resumes from its state file; a dead
gatekeeper is started again and gates the same candidate again.  Each shard
is read back and checked against its task's game ids as it lands; a bad one
is quarantined and its task played again; before the run ends every recorded
task's shard is checked again (the trainer may have quarantined one).  A
killed driver, run again with the same command, continues: the ledgers and
the shards say what is done, the trainer resumes from its state.  MLflow runs
end FINISHED, or FAILED/KILLED on an error, never RUNNING.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray

from actors.loop import GAMES_FILE, Ledger, Tracker, _gate_metrics, _initial_best, _write_best
from actors.roles import GatekeeperActor, PoolActor, TrainerActor
from actors.selfplay import TASKS_IN_FLIGHT_PER_ACTOR, task_id, task_seed
from pipeline.async_status import AsyncStatus, AsyncStatusBoard
from pipeline.atomic import atomic_write
from pipeline.config import Config, ConfigError, to_dict
from pipeline.shards import (
    ShardError,
    list_shards,
    quarantine_shard,
    read_shard,
    remove_stale_temps,
    shard_exists,
    shard_name,
)

log = logging.getLogger(__name__)

UNPLACED_LIMIT = 10
"""Deaths in a row of a pool actor that never ran (placed on a node that was
going away) before its place in the pool is given up; each waits longer."""
TASK_ATTEMPTS = 5
"""Times one self-play task may fail (other than by its actor dying) before the run fails."""
WAIT_S = 0.5
RATE_WINDOW_S = 60.0
LOG_POOL_EVERY_S = 10.0


@dataclass
class Task:
    """A self-play task: its id (shard name), seed, games and net version."""

    name: str
    seed: int
    games: int
    version: int
    attempts: int = 0


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


@dataclass
class Busy:
    """Time each role spent working (for the busy fractions)."""

    selfplay_s: float = 0.0
    trainer_s: float = 0.0
    gate_s: float = 0.0
    started: float = field(default_factory=time.perf_counter)

    def fractions(self, pool_size: int) -> dict[str, float]:
        wall = max(time.perf_counter() - self.started, 1e-9)
        return {"selfplay": self.selfplay_s / (wall * max(pool_size, 1)), "trainer": self.trainer_s / wall,
                "gatekeeper": self.gate_s / wall, "wall_s": wall}  # fmt: skip


def task_name(version: int, index: int) -> str:
    """The id (and shard name) of async self-play task ``index``, played by net ``version``."""
    return task_id(version, index)


def parse_task(name: str) -> tuple[int, int] | None:
    """(version, index) of a task name, or None for another name."""
    try:
        head, tail = name.split("-task")
        return int(head.removeprefix("gen")), int(tail)
    except ValueError:
        return None


def required_resources(config: Config) -> dict[str, float]:
    """The Ray resources the three roles hold at once."""
    run, selfplay, gating = config.run, config.selfplay, config.gating
    need = {
        "CPU": selfplay.workers * selfplay.cpus_per_worker + run.trainer_cpus + run.gate_cpus
        + gating.workers * gating.cpus_per_worker,
        "GPU": selfplay.workers * selfplay.gpus_per_worker + run.trainer_gpus + gating.workers * gating.gpus_per_worker,
    }  # fmt: skip
    for key, amount in ((run.selfplay_resource, selfplay.workers), (run.trainer_resource, 1), (run.gate_resource, 1)):
        if key:
            need[key] = need.get(key, 0) + amount
    return {key: value for key, value in need.items() if value > 0}


def check_resources(config: Config, available: dict[str, float]) -> None:
    """Fail at once, naming the keys, when the cluster cannot hold the three roles
    together (they would wait for each other forever)."""
    keys = {
        "CPU": "selfplay.workers x selfplay.cpus_per_worker + run.trainer_cpus + run.gate_cpus "
        "+ gating.workers x gating.cpus_per_worker",
        "GPU": "selfplay.workers x selfplay.gpus_per_worker + run.trainer_gpus + gating.workers x gating.gpus_per_worker",
    }
    for name, amount in required_resources(config).items():
        have = available.get(name, 0.0)
        if amount > have + 1e-9:
            what = keys.get(name, f"the Ray resource {name!r} (run.selfplay_resource / run.trainer_resource / "
                                  "run.gate_resource)")  # fmt: skip
            raise ConfigError(f"run.mode async needs {amount:g} {name} for its three roles ({what}); "
                              f"the Ray cluster has {have:g}")  # fmt: skip


def run_async(
    config: Config,
    out: str | Path,
    *,
    init_net: str | None = None,
    on_event: Callable[[str], None] | None = None,
    board: AsyncStatusBoard | None = None,
) -> dict[str, Any]:
    """Run the asynchronous loop into ``out`` until ``run.generations``
    candidates are gated (resumable).  Ray must be initialised."""
    from models.net import AlphaZeroNet
    from pipeline.checkpoint import load_weights

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    check_resources(config, ray.cluster_resources())
    board = board or AsyncStatusBoard(AsyncStatus(str(out), config.run.generations), live=False)
    emit = on_event or (lambda text: log.info("%s", text))
    ledger = Ledger(out / "ledger.jsonl")
    if init_net is not None and ledger.find(0, "init") is None:
        load_weights(AlphaZeroNet(config.net), init_net)  # before MLflow records a run
    tracker = Tracker(config, out)
    loop = AsyncLoop(config, out, ledger, tracker, board, emit)
    try:
        return loop.run(init_net)
    except BaseException as error:
        tracker.fail_open_runs("KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED")
        raise
    finally:
        loop.shutdown()


class AsyncLoop:
    """The driver's state and event loop (see the module docstring)."""

    def __init__(self, config: Config, out: Path, ledger: Ledger, tracker: Tracker, board: AsyncStatusBoard,
                 emit: Callable[[str], None]) -> None:  # fmt: skip
        self.config = config
        self.out = out
        self.ledger = ledger
        self.tracker = tracker
        self.board = board
        self.emit = emit
        self.games = Ledger(out / GAMES_FILE)
        self.shards = config.run.shards or str(out / "shards")
        if "://" not in self.shards:
            os.makedirs(self.shards, exist_ok=True)
        self.plain = to_dict(config)
        self.busy = Busy()
        self.slots: list[Slot] = []
        self.in_flight: dict[Any, tuple[str, Any]] = {}
        self.queue: deque[Task] = deque()
        self.known: dict[str, Task] = {}
        self.versions: dict[int, str] = {}
        self.weights: dict[int, Any] = {}
        self.trainer: Any = None
        self.trainer_restarts = 0
        self.trainer_running = False
        self.step = 0
        self.gatekeeper: Any = None
        self.gate_restarts = 0
        self.gate_queue: deque[int] = deque()
        self.gating: dict[int, int] = {}  # candidate -> the version it is gated against
        self.candidates: dict[int, dict[str, Any]] = {}
        self.stopping = False
        self.rates: deque[tuple[float, int, int]] = deque()
        self.last_pool_log = 0.0
        self.trainer_run_id = ""
        self.next_index = 0
        self.resumed_seen: int | None = None
        self.trainer_state = ("", 0.0)  # the last state noted in the events, and when

    # -- the event loop -------------------------------------------------------

    def say(self, text: str) -> None:
        self.board.note(text)
        self.emit(text)

    def run(self, init_net: str | None) -> dict[str, Any]:
        config = self.config
        best = _initial_best(config, self.out, self.ledger, self.tracker, init_net)
        self._restore(best)
        self._sweep(resume=True)
        self.board.update(mlflow=self.tracker.uri, best=self.best, net_version=self.version,
                          pool_workers=config.selfplay.workers,
                          samples_per_position_target=config.run.train_samples_per_position)  # fmt: skip
        self.trainer_run_id = self._trainer_run()
        self.say(f"async loop: pool of {config.selfplay.workers} self-play actors, trainer, gatekeeper; "
                 f"{len(self._gated())} / {config.run.generations} candidates gated so far")  # fmt: skip
        self.stopping = len(self._gated()) >= config.run.generations  # a rerun of a finished run
        self.board.update(stage="running")
        while True:
            self._feed_pool()
            self._feed_trainer()
            self._feed_gatekeeper()
            if self._finished():
                break
            if not self.in_flight:
                if self.queue or any(slot.actor is None for slot in self.slots):
                    time.sleep(WAIT_S)  # tasks to play again, or pool actors to start again
                    continue
                raise RuntimeError("async loop: nothing in flight and the run is not finished")
            done, _ = ray.wait(list(self.in_flight), num_returns=1, timeout=WAIT_S)
            for ref in done:
                self._handle(ref, *self.in_flight.pop(ref))
            self._show()
        return self._finish()

    def _finished(self) -> bool:
        """True once every candidate is gated, self-play drained and every shard checked."""
        if len(self._gated()) < self.config.run.generations:
            return False
        if not self.stopping:
            self.stopping = True
            self.say("every candidate is gated: the pool finishes its tasks")
        if any(kind in ("task", "gate", "train") for kind, _ in self.in_flight.values()):
            return False
        if self.queue:
            return False
        self._sweep(resume=False)
        return not self.queue

    def _handle(self, ref: Any, kind: str, info: Any) -> None:
        if kind == "ready":
            self._on_ready(ref, info)
        elif kind == "task":
            self._on_task(ref, *info)
        elif kind == "train":
            self._on_train(ref)
        elif kind == "gate":
            self._on_gate(ref, info)

    # -- resume ---------------------------------------------------------------

    def _restore(self, best: str) -> None:
        """Versions, candidates and gates from the ledger."""
        self.versions = {0: self.ledger.find(0, "init")["net"]}  # type: ignore[index]
        for entry in self.ledger.entries:
            if entry["stage"] == "candidate":
                self.candidates[entry["generation"]] = entry
            elif entry["stage"] == "gate" and entry.get("promote"):
                self.versions[entry["version"]] = entry["candidate"]
        self.version = max(self.versions)
        self.best = self.versions[self.version]
        if best != self.best:
            log.warning("best.txt names %s, the ledger %s: the ledger wins", best, self.best)
            _write_best(self.out, self.best)
        gated = self._gated()
        self.gate_queue.extend(sorted(index for index in self.candidates if index not in gated))

    def _gated(self) -> set[int]:
        return {entry["generation"] for entry in self.ledger.entries if entry["stage"] == "gate"}

    def _recorded(self) -> dict[str, dict[str, Any]]:
        return {entry["task"]: entry for entry in self.games.entries}

    def _sweep(self, resume: bool) -> None:
        """Check the shards against ``games.jsonl``: record valid unrecorded
        shards (a driver killed between a shard and its record), quarantine bad
        ones and queue their tasks again (same id, seed, version); a recorded
        task whose shard is missing is queued again too.  At the start
        (``resume``) recorded shards are trusted (each was checked when it
        landed); at the end every one is read again.  Temp files older than
        an hour (a writer killed mid-write) are removed."""
        remove_stale_temps(self.shards)
        recorded = self._recorded()
        names = {Path(path).name.removesuffix(".parquet") for path in list_shards(self.shards)}
        for name in sorted(names | set(recorded)):
            parsed = parse_task(name)
            if parsed is None:
                continue
            version, index = parsed
            self.next_index = max(self.next_index, index + 1)
            if resume and name in recorded and name in names:
                continue
            games = len(recorded[name]["games"]) if name in recorded else self.config.selfplay.games_per_task
            task = self.known.get(name) or Task(name, task_seed(self.config.selfplay.seed, version, index), games,
                                               version)  # fmt: skip
            if name in names and self._check(name, recorded.get(name, {}).get("games"), version) is None:
                continue
            if any(queued.name == name for queued in self.queue):
                continue
            self.say(f"self-play task {name} is played again ({'bad shard' if name in names else 'shard missing'})")
            self.queue.appendleft(task)
            self.known[name] = task

    def _check(self, name: str, ids: list[str] | None, version: int) -> str | None:
        """Read shard ``name`` back; None when valid (and recorded), else the
        reason (the shard is quarantined)."""
        path = os.path.join(self.shards, shard_name(name))
        try:
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
                self._record(name, found, positions, training, version)
                return None
            if found == sorted(ids):
                return None
            reason = f"game ids {found} differ from the task's {sorted(ids)}"
        try:
            moved = quarantine_shard(path, reason)
            log.warning("quarantined bad shard %s -> %s: %s", path, moved, reason)
        except FileNotFoundError:
            pass
        return reason

    def _record(self, name: str, ids: list[str], positions: int, training: int, version: int, node: str = "") -> None:
        if name in self._recorded():
            return
        self.games.append({"generation": version, "stage": "games", "task": name, "games": sorted(ids),
                           "positions": positions, "training_positions": training, "node": node,
                           "time": round(time.time(), 3)})  # fmt: skip

    # -- self-play pool -------------------------------------------------------

    def _pool_class(self) -> Any:
        selfplay, run = self.config.selfplay, self.config.run
        return ray.remote(num_cpus=selfplay.cpus_per_worker, num_gpus=selfplay.gpus_per_worker,
                          resources={run.selfplay_resource: 1} if run.selfplay_resource else None,
                          max_restarts=0, max_task_retries=0)(PoolActor)  # fmt: skip

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
        slot.ready, slot.node = True, where["node"]

    def _lost(self, slot: Slot, error: Exception) -> None:
        """A pool actor died: replace it (its tasks are requeued by their own errors)."""
        if slot not in self.slots:
            return
        index = self.slots.index(slot)
        log.warning("self-play actor on node %s lost (ready=%s, restarts=%d, unplaced=%d): %s",
                    slot.node, slot.ready, slot.restarts, slot.unplaced, error)  # fmt: skip
        _kill_quietly(slot.actor)
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
        reason = self._check(task.name, summary["game_ids"], task.version)
        if reason is not None:
            self.say(f"self-play task {task.name}: bad shard ({reason[:120]}): played again")
            self.queue.appendleft(task)
            return
        self._record(task.name, summary["game_ids"], int(summary.get("positions", 0)),
                     int(summary.get("full_searches", 0)), task.version, summary.get("node", ""))  # fmt: skip
        self.rates.append((time.monotonic(), int(summary.get("games", 0)), int(summary.get("positions", 0))))

    # -- trainer --------------------------------------------------------------

    def _totals(self) -> tuple[int, int, int]:
        """(games, positions, training positions) of the recorded tasks."""
        entries = self.games.entries
        return (sum(len(e["games"]) for e in entries), sum(e.get("positions", 0) for e in entries),
                sum(e.get("training_positions", 0) for e in entries))  # fmt: skip

    def _allowance(self) -> int:
        """The step the ratio control lets the trainer reach now (0: not started)."""
        games, _, training = self._totals()
        batch = self.config.train.batch_size
        if games < self.config.run.games_per_generation or training < batch:
            return 0
        allowed = math.floor(self.config.run.train_samples_per_position * training / batch)
        return min(allowed, self.config.run.generations * self.config.run.candidate_every_steps)

    def _trainer_class(self) -> Any:
        run = self.config.run
        return ray.remote(num_cpus=run.trainer_cpus, num_gpus=run.trainer_gpus,
                          resources={run.trainer_resource: 1} if run.trainer_resource else None,
                          max_restarts=0, max_task_retries=0)(TrainerActor)  # fmt: skip

    def _feed_trainer(self) -> None:
        if self.trainer_running or self.stopping or self._trainer_done():
            return
        until = self._allowance()
        if until <= self.step:
            state = "waiting for the first games" if until == 0 else "waiting for self-play (ratio control)"
            self._trainer_state(state)
            return
        if self.trainer is None:
            self.trainer = self._trainer_class().remote(self.plain, self.shards, str(self.out / "trainer"),
                                                        self.versions[0])  # fmt: skip
        every = self.config.run.candidate_every_steps
        chunk = max(1, self.config.train.log_every)
        ref = self.trainer.run.remote(min(until, self.step + chunk), every)
        self.in_flight[ref] = ("train", None)
        self.trainer_running = True

    def _trainer_done(self) -> bool:
        return self.step >= self.config.run.generations * self.config.run.candidate_every_steps

    def _on_train(self, ref: Any) -> None:
        self.trainer_running = False
        try:
            result = ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as error:
            self.trainer_restarts += 1
            _kill_quietly(self.trainer)  # unreachable may still mean alive: never two trainers on one state
            self.trainer = None
            if self.trainer_restarts > self.config.run.role_max_restarts:
                raise RuntimeError(f"the trainer died {self.trainer_restarts} times: {error}") from error
            self.say(f"trainer lost ({type(error).__name__}): a new one resumes from its state")
            self.ledger.append({"generation": 0, "stage": "trainer_restart", "step": self.step})
            return
        self.busy.trainer_s += result["busy_s"]
        if result.get("resumed_from") is not None and result["resumed_from"] != self.resumed_seen:
            self.resumed_seen = result["resumed_from"]
            self.say(f"trainer resumed from its state at step {result['resumed_from']}")
        self.step = result["step"]
        _, positions, training = self._totals()
        samples = self.step * self.config.train.batch_size
        ratio = samples / training if training else 0.0
        target = self.config.run.train_samples_per_position
        state = "training" if ratio >= 0.5 * target else "self-play ahead (trainer behind)"
        self._trainer_state(state, f" ({ratio:.2f} samples/position, target {target:g})")
        self.board.update(step=self.step, window_positions=result["window_positions"],
                          window_shards=result["window_shards"], samples_per_position=ratio,
                          losses={**self.board.status.losses, **result["losses"]})  # fmt: skip
        metrics = {**result["losses"], "trainer/samples_per_position": ratio,
                   "trainer/window_positions": result["window_positions"]}  # fmt: skip
        self.tracker.log_metrics(self.trainer_run_id, metrics, step=self.step)
        self.tracker.log_metrics(self.trainer_run_id, {f"by_positions/{k}": v for k, v in metrics.items()},
                                 step=positions)  # fmt: skip
        for candidate in result["candidates"]:
            index = candidate["index"]
            if index in self.candidates or index > self.config.run.generations:
                continue
            entry = {"generation": index, "stage": "candidate", "net": candidate["net"], "step": candidate["step"],
                     "positions": positions, "training_positions": training, "node": result["node"]}  # fmt: skip
            self.ledger.append(entry)
            self.candidates[index] = entry
            self.gate_queue.append(index)
            self.board.update(candidates=len(self.candidates))
            self.say(f"candidate {index} exported at step {candidate['step']} "
                     f"({training:,} training positions, {ratio:.2f} samples/position)")  # fmt: skip
            self._sweep_missing()

    def _trainer_state(self, state: str, detail: str = "") -> None:
        """Show the trainer's state; note a change in the events (at most every 30 s)."""
        self.board.update(trainer_state=state)
        noted, when = self.trainer_state
        if state != noted and time.monotonic() - when >= 30.0:
            self.trainer_state = (state, time.monotonic())
            self.say(f"trainer: {state}{detail}")

    def _sweep_missing(self) -> None:
        """Queue again the recorded tasks whose shard is gone (quarantined by the trainer's window)."""
        for name, entry in self._recorded().items():
            if not shard_exists(self.shards, name) and not any(task.name == name for task in self.queue):
                version, index = parse_task(name) or (entry["generation"], 0)
                task = self.known.get(name) or Task(name, task_seed(self.config.selfplay.seed, version, index),
                                                   len(entry["games"]), version)  # fmt: skip
                self.say(f"self-play task {name}: its shard is gone (quarantined): played again")
                self.queue.appendleft(task)

    def _trainer_run(self) -> str:
        entry = self.ledger.find(0, "trainer_run")
        if entry is not None:
            self.tracker.client.update_run(entry["run_id"], status="RUNNING")
            return entry["run_id"]
        run = self.tracker.client.create_run(self.tracker.experiment_id, run_name="trainer",
                                             tags={"mlflow.parentRunId": self.tracker.parent_id})  # fmt: skip
        self.ledger.append({"generation": 0, "stage": "trainer_run", "run_id": run.info.run_id})
        return run.info.run_id

    # -- gatekeeper -----------------------------------------------------------

    def _feed_gatekeeper(self) -> None:
        while self.gate_queue and len(self.gating) < self.config.run.gates_in_flight:
            index = self.gate_queue.popleft()
            if self.gatekeeper is None:
                run = self.config.run
                self.gatekeeper = ray.remote(
                    num_cpus=run.gate_cpus, resources={run.gate_resource: 1} if run.gate_resource else None,
                    max_restarts=0, max_task_retries=0, max_concurrency=max(1, run.gates_in_flight),
                )(GatekeeperActor).remote(self.plain)  # fmt: skip
            self._gate_run(index)
            gate_dir = self.out / f"cand{index:04d}" / "gate"
            ref = self.gatekeeper.gate.remote(index, self.candidates[index]["net"], self.best, str(gate_dir))
            self.in_flight[ref] = ("gate", index)
            self.gating[index] = self.version
            self.board.update(gates_in_flight=[f"candidate {i} vs v{v}" for i, v in self.gating.items()])
            self.say(f"gatekeeper: candidate {index} vs best v{self.version}")

    def _gate_run(self, index: int) -> str:
        entry = self.ledger.find(index, "gate_start")
        if entry is not None:
            self.tracker.client.update_run(entry["run_id"], status="RUNNING")
            return entry["run_id"]
        run = self.tracker.client.create_run(self.tracker.experiment_id, run_name=f"candidate{index:04d}",
                                             tags={"mlflow.parentRunId": self.tracker.parent_id})  # fmt: skip
        self.ledger.append({"generation": index, "stage": "gate_start", "run_id": run.info.run_id})
        return run.info.run_id

    def _on_gate(self, ref: Any, index: int) -> None:
        against = self.gating.pop(index)
        self.board.update(gates_in_flight=[f"candidate {i} vs v{v}" for i, v in self.gating.items()])
        try:
            decision = ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as error:
            self.gate_restarts += 1
            _kill_quietly(self.gatekeeper)
            self.gatekeeper = None
            if self.gate_restarts > self.config.run.role_max_restarts:
                raise RuntimeError(f"the gatekeeper died {self.gate_restarts} times: {error}") from error
            self.say(f"gatekeeper lost ({type(error).__name__}): candidate {index} is gated again")
            self.gate_queue.appendleft(index)
            return
        self.busy.gate_s += decision.get("busy_s", 0.0)
        if decision["promote"] and against != self.version:
            self.say(f"candidate {index} beat v{against}, but v{self.version} is the best now: gated again")
            self.gate_queue.appendleft(index)
            return
        run_id = self._gate_run(index)
        gate_dir = self.out / f"cand{index:04d}" / "gate"
        for pgn in sorted(gate_dir.glob("*.pgn")):
            self.tracker.client.log_artifact(run_id, str(pgn), "pgn")
        gated = {"generation": index, "stage": "gate", "candidate": self.candidates[index]["net"],
                 **{k: v for k, v in decision.items() if k not in ("index",)}}  # fmt: skip
        if decision["promote"]:
            gated["version"] = self.version + 1
            gated["model_version"] = self.tracker.register(run_id, self.candidates[index]["net"])
        metrics = _gate_metrics(gated)
        _, positions, _ = self._totals()
        self.tracker.log_metrics(run_id, {**metrics, "candidate/step": self.candidates[index]["step"]})
        self.tracker.finish(run_id)
        self.tracker.log_metrics(self.tracker.parent_id, metrics, step=index)
        self.tracker.log_metrics(self.tracker.parent_id, {f"by_positions/{k}": v for k, v in metrics.items()},
                                 step=positions)  # fmt: skip
        self.ledger.append(gated)
        if decision["promote"]:
            self.version += 1
            self.versions[self.version] = self.candidates[index]["net"]
            self.best = self.versions[self.version]
            _write_best(self.out, self.best)
            self.board.update(best=self.best, net_version=self.version)
            self._drop_old_weights()
        verdict = (f"candidate {index} (step {self.candidates[index]['step']}): "
                   f"{'PROMOTED to v' + str(self.version) if decision['promote'] else 'rejected'} "
                   f"({decision.get('reason', '')})")  # fmt: skip
        self.board.update(verdicts=[*self.board.status.verdicts[-9:], verdict])
        self.say(verdict)
        self._write_metrics()

    # -- status, end ----------------------------------------------------------

    def _show(self) -> None:
        now = time.monotonic()
        while self.rates and now - self.rates[0][0] > RATE_WINDOW_S:
            self.rates.popleft()
        span = max(now - self.rates[0][0], 1.0) if len(self.rates) > 1 else 0.0
        games, positions, training = self._totals()
        rate_games = sum(r[1] for r in list(self.rates)[1:]) / span if span else 0.0
        rate_positions = sum(r[2] for r in list(self.rates)[1:]) / span if span else 0.0
        self.board.update(games=games, positions=positions, training_positions=training, games_per_s=rate_games,
                          positions_per_s=rate_positions, pool_alive=sum(slot.ready for slot in self.slots))  # fmt: skip
        if now - self.last_pool_log >= LOG_POOL_EVERY_S and positions:
            self.last_pool_log = now
            self.tracker.log_metrics(self.tracker.parent_id, {
                "selfplay/games": games, "selfplay/positions": positions, "selfplay/games_per_s": rate_games,
                "selfplay/positions_per_s": rate_positions, "selfplay/net_version": self.version,
                "trainer/step": self.step}, step=positions)  # fmt: skip

    def _write_metrics(self) -> None:
        gates = [e for e in self.ledger.entries if e["stage"] == "gate"]
        games, positions, training = self._totals()
        summary = {
            "candidates": [{"candidate": e["generation"], "promote": e["promote"], "reason": e.get("reason", ""),
                            **_gate_metrics(e)} for e in gates],  # fmt: skip
            "last": {"games": games, "positions": positions, "training_positions": training, "step": self.step,
                     "net_version": self.version,
                     "busy": self.busy.fractions(max(len(self.slots), 1))},  # fmt: skip
        }
        with atomic_write(self.out / "metrics.json") as handle:
            handle.write(json.dumps(summary, indent=2, default=str).encode())

    def _finish(self) -> dict[str, Any]:
        self._write_metrics()
        busy = self.busy.fractions(len(self.slots))
        games, positions, training = self._totals()
        self.tracker.log_metrics(self.tracker.parent_id, {f"busy/{k}": v for k, v in busy.items()})
        self.tracker.finish(self.trainer_run_id)
        self.tracker.finish(self.tracker.parent_id)
        self.board.update(stage="finished")
        self.say(f"async loop finished: {games} games, {positions:,} positions, step {self.step}, "
                 f"best net v{self.version}")  # fmt: skip
        gates = [e for e in self.ledger.entries if e["stage"] == "gate"]
        return {"candidates": gates, "best": self.best, "version": self.version, "mlflow": self.tracker.uri,
                "parent_run": self.tracker.parent_id, "busy": busy, "games": games, "positions": positions,
                "step": self.step}  # fmt: skip

    def shutdown(self) -> None:
        """Kill every actor this loop started (their match actors die with the gatekeeper)."""
        actors = [slot.actor for slot in self.slots] + [a for a in (self.trainer, self.gatekeeper) if a is not None]
        for actor in actors:
            _kill_quietly(actor)
        self.slots, self.trainer, self.gatekeeper = [], None, None


def _kill_quietly(actor: Any) -> None:
    if actor is None:
        return
    try:
        ray.kill(actor)
    except Exception:  # noqa: BLE001 - already gone
        pass
