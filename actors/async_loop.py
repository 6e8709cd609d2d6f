"""The asynchronous loop (``run.mode: async``): self-play, training and gating
at the same time, each role on its own Ray resources (:mod:`actors.roles`).
The driver (:class:`AsyncLoop`, here: its event loop, resume and status) is
made of one part per role: :mod:`actors.async_pool`,
:mod:`actors.async_trainer` and :mod:`actors.async_gate`.

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
  (:func:`pipeline.evaluation.gating.run_gate`: SPRT against the best, then the Stockfish
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
is checked as it lands: its writer validated its rows and returned a digest
(size, rows, a hash of the Parquet footer) that the driver verifies (a shard
on a URI, or one without a digest, is read back and checked against its
task's game ids); a bad one is quarantined and its task played again; before
the run ends every recorded task's shard is checked again (the trainer may
have quarantined one).  A
killed driver, run again with the same command, continues: the ledgers and
the shards say what is done, the trainer resumes from its state.  MLflow runs
end FINISHED, or FAILED/KILLED on an error, never RUNNING.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ray

from actors.async_gate import GateRole
from actors.async_pool import PoolRole, Slot, kill_quietly
from actors.async_retention import RetentionRole
from actors.async_trainer import TrainerRole
from pipeline.async_status import AsyncStatus, AsyncStatusBoard
from pipeline.atomic import atomic_write
from pipeline.config import Config, to_dict
from pipeline.loop.budget import RunClock, spent_before
from pipeline.loop.games import GamesBook
from pipeline.loop.ledger import GAMES_FILE, Ledger, write_best
from pipeline.loop.records import Busy, CandidateEntry, Task
from pipeline.loop.resources import check_resources
from pipeline.loop.start import initial_best, open_run, runs_ended_on_error
from pipeline.loop.text import gate_metrics
from pipeline.loop.tracker import Tracker

log = logging.getLogger(__name__)

WAIT_S = 0.5
RATE_WINDOW_S = 60.0
LOG_POOL_EVERY_S = 10.0


def run_async(
    config: Config,
    out: str | Path,
    *,
    init_net: str | None = None,
    on_event: Callable[[str], None] | None = None,
    board: AsyncStatusBoard | None = None,
    pool_actor: Any = None,
    stop: threading.Event | None = None,
) -> dict[str, Any]:
    """Run the asynchronous loop into ``out`` until ``run.generations``
    candidates are gated or ``run.hours`` are spent, whichever comes first
    (resumable; a larger count or budget goes on).  Ray must be initialised.

    ``pool_actor``: the self-play pool's actor class instead of
    :class:`actors.roles.PoolActor` (same interface: ``ready()`` and ``play(...)``;
    wrapped with the pool's resources), or anything whose ``remote(config,
    shards)`` returns such a handle (``bench/scale.py``'s producers).  ``stop``:
    when set, the run stops at once as a killed driver would (resumable), its
    shards, ledgers and MLflow runs consistent."""
    check_resources(config, ray.cluster_resources())
    out, ledger, tracker = open_run(config, out, init_net)
    board = board or AsyncStatusBoard(AsyncStatus(str(out), config.run.generations), live=False)
    emit = on_event or (lambda text: log.info("%s", text))
    loop = AsyncLoop(config, out, ledger, tracker, board, emit)
    loop.pool_actor, loop.stop = pool_actor, stop
    try:
        with runs_ended_on_error(tracker):
            return loop.run(init_net)
    finally:
        loop.shutdown()


class AsyncLoop(PoolRole, TrainerRole, GateRole, RetentionRole):
    """The driver's state and event loop (see the module docstring)."""

    def __init__(self, config: Config, out: Path, ledger: Ledger, tracker: Tracker, board: AsyncStatusBoard,
                 emit: Callable[[str], None]) -> None:  # fmt: skip
        self.config, self.out, self.ledger, self.tracker, self.board = config, out, ledger, tracker, board
        self.emit = emit
        self.games = GamesBook(out / GAMES_FILE)
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
        self.candidates: dict[int, CandidateEntry] = {}
        self.stopping = False
        self.rates: deque[tuple[float, int, int]] = deque()
        self.rate_sums = [0, 0]  # games and positions of self.rates after its first entry
        self.last_pool_log = 0.0
        self.trainer_run_id = ""
        self.next_index = 0
        self.resumed_seen: int | None = None
        self.trainer_state = ("", 0.0)  # the last state noted in the events, and when
        self.pool_actor: Any = None  # run_async's pool_actor
        self.stop: threading.Event | None = None
        self.clock = RunClock(config.run.hours, spent_before(ledger.entries))

    # -- the event loop -------------------------------------------------------

    def say(self, text: str) -> None:
        self.board.note(text)
        self.emit(text)

    def run(self, init_net: str | None) -> dict[str, Any]:
        config = self.config
        best = initial_best(config, self.out, self.ledger, self.tracker, init_net)
        self._restore(best)
        self._sweep(resume=True)
        self.games.flush()
        self.board.update(mlflow=self.tracker.uri, best=self.best, net_version=self.version,
                          pool_workers=config.selfplay.workers,
                          samples_per_position_target=config.run.train_samples_per_position,
                          deadline=self.clock.deadline(), budget_s=self.clock.budget_s)  # fmt: skip
        self.trainer_run_id = self._trainer_run()
        self.say(f"async loop: pool of {config.selfplay.workers} self-play actors, trainer, gatekeeper; "
                 f"{len(self._gated())} / {config.run.generations or 'no limit'} candidates gated so far")  # fmt: skip
        self.stopping = self._ended()  # a rerun of a finished run
        if self.stopping and self.clock.spent():
            self._say_budget()
        self.board.update(stage="running")
        while True:
            if self.stop is not None and self.stop.is_set():
                return self._stopped()
            self._feed_pool()
            self._retain()  # run.retain_positions: only while the trainer is idle (actors/async_retention.py)
            self._feed_trainer()
            self._feed_gatekeeper()
            if self._finished():
                break
            if not self.in_flight:
                if self.queue or any(slot.actor is None for slot in self.slots):
                    time.sleep(WAIT_S)  # tasks to play again, or pool actors to start again
                    continue
                raise RuntimeError("async loop: nothing in flight and the run is not finished")
            refs = list(self.in_flight)
            done, rest = ray.wait(refs, num_returns=1, timeout=WAIT_S)
            if done and rest:  # every other result that is ready too: one turn handles them all
                done += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            for ref in done:
                self._handle(ref, *self.in_flight.pop(ref))
            self.games.flush()  # the turn's games.jsonl lines: one write, one fsync
            self._show()
        return self._finish()

    def _ended(self) -> bool:
        """Every candidate the run asks for is gated, or its time budget is spent."""
        return len(self._gated()) >= self.config.run.generation_limit or self.clock.spent()

    def _finished(self) -> bool:
        """True once every candidate is gated (or the time budget is spent),
        self-play drained and every shard checked."""
        if not self.stopping and not self._ended():
            return False
        if not self.stopping:
            self.stopping = True
            if self.clock.spent():
                self._say_budget()
            else:
                self.say("every candidate is gated: the pool finishes its tasks")
        if any(kind in ("task", "gate", "train") for kind, _ in self.in_flight.values()):
            return False
        if self.queue:
            return False
        self._sweep(resume=False)
        self.games.flush()
        return not self.queue

    def _say_budget(self) -> None:
        self.say(f"time budget of {self.config.run.hours:g} h spent ({self.clock.elapsed_s() / 60:.1f} min): "
                 f"no new task, gate or training step; the pool finishes its tasks")  # fmt: skip

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
                self.candidates[entry["generation"]] = CandidateEntry.from_entry(entry)
            elif entry["stage"] == "gate" and entry.get("promote"):
                self.versions[entry["version"]] = entry["candidate"]
        self.version = max(self.versions)
        self.best = self.versions[self.version]
        if best != self.best:
            log.warning("best.txt names %s, the ledger %s: the ledger wins", best, self.best)
            write_best(self.out, self.best)
        gated = self._gated()
        self.gate_queue.extend(sorted(index for index in self.candidates if index not in gated))

    def _gated(self) -> set[int]:
        return {entry["generation"] for entry in self.ledger.entries if entry["stage"] == "gate"}

    def _recorded(self) -> GamesBook:
        """Task -> its ``games.jsonl`` record (counts and digest; ids: ``self.games.ids``)."""
        return self.games

    # -- status, end ----------------------------------------------------------

    def _show(self) -> None:
        now = time.monotonic()
        while self.rates and now - self.rates[0][0] > RATE_WINDOW_S:
            self.rates.popleft()
            if self.rates:  # the new first entry leaves the sums
                self.rate_sums[0] -= self.rates[0][1]
                self.rate_sums[1] -= self.rates[0][2]
        span = max(now - self.rates[0][0], 1.0) if len(self.rates) > 1 else 0.0
        games, positions, training = self._totals()
        rate_games = self.rate_sums[0] / span if span else 0.0
        rate_positions = self.rate_sums[1] / span if span else 0.0
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
                            **gate_metrics(e)} for e in gates],  # fmt: skip
            "last": {"games": games, "positions": positions, "training_positions": training, "step": self.step,
                     "net_version": self.version,
                     "busy": self.busy.fractions(max(len(self.slots), 1))},  # fmt: skip
        }
        with atomic_write(self.out / "metrics.json") as handle:
            handle.write(json.dumps(summary, indent=2, default=str).encode())

    def _finish(self) -> dict[str, Any]:
        if self.clock.spent():  # the budget ended the run: a resumed run's clock starts here
            self.ledger.append({"generation": 0, "stage": "clock", **self.clock.stamp()})
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
                "experiment_id": self.tracker.experiment_id, "parent_run": self.tracker.parent_id, "busy": busy,
                "games": games, "positions": positions, "step": self.step}  # fmt: skip

    def _stopped(self) -> dict[str, Any]:
        """``stop`` was set: end here as a killed driver would, MLflow's runs KILLED."""
        games, positions, _ = self._totals()
        self._write_metrics()
        self.tracker.fail_open_runs("KILLED")
        self.say(f"async loop stopped: {games} games, {positions:,} positions, step {self.step}")
        return {"candidates": [e for e in self.ledger.entries if e["stage"] == "gate"], "best": self.best,
                "version": self.version, "mlflow": self.tracker.uri, "busy": self.busy.fractions(len(self.slots)),
                "games": games, "positions": positions, "step": self.step, "stopped": True}  # fmt: skip

    def shutdown(self) -> None:
        """Kill every actor this loop started (their match actors die with the gatekeeper)."""
        try:
            self.games.flush()  # lines of a turn an error cut short (resume would find their shards anyway)
        except OSError as error:
            log.warning("games.jsonl could not be written: %s", error)
        actors = [slot.actor for slot in self.slots] + [a for a in (self.trainer, self.gatekeeper) if a is not None]
        for actor in actors:
            kill_quietly(actor)
        self.slots, self.trainer, self.gatekeeper = [], None, None
