"""The async loop's trainer (:class:`TrainerRole`, a part of
:class:`actors.async_loop.AsyncLoop`): the ratio control that lets the
trainer actor reach a step only when self-play has produced enough positions,
its restarts, and the candidates it exports (queued for the gatekeeper)."""

from __future__ import annotations

import math
import os
import time
from typing import Any

import ray

from actors.async_pool import kill_quietly
from actors.roles import TrainerActor
from pipeline.loop.records import CandidateEntry, Task
from pipeline.loop.tasks import parse_task, task_seed
from pipeline.shards import QUARANTINE_DIR, SHARD_SUFFIX, shard_exists
from pipeline.training.continuous import TrainerReport


def quarantined_names(shards: str) -> list[str]:
    """Task names of the shards in ``shards/quarantine/`` (none for a URI or no folder)."""
    folder = os.path.join(shards, QUARANTINE_DIR)
    if "://" in shards or not os.path.isdir(folder):
        return []
    with os.scandir(folder) as entries:
        return sorted(e.name.removesuffix(SHARD_SUFFIX) for e in entries if e.name.endswith(SHARD_SUFFIX))


class TrainerRole:
    """The trainer's part of the driver (its state is set up in
    :class:`actors.async_loop.AsyncLoop`'s ``__init__``)."""

    def _totals(self) -> tuple[int, int, int]:
        """(games, positions, training positions) of the recorded tasks (kept as they are recorded)."""
        return self.games.totals()

    def _allowance(self) -> int:
        """The step the ratio control lets the trainer reach now (0: not started)."""
        games, _, training = self._totals()
        batch = self.config.train.batch_size
        if games < self.config.run.games_per_generation or training < batch:
            return 0
        allowed = math.floor(self.config.run.train_samples_per_position * training / batch)
        return min(allowed, self.config.run.generation_limit * self.config.run.candidate_every_steps)

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
        return self.step >= self.config.run.generation_limit * self.config.run.candidate_every_steps

    def _on_train(self, ref: Any) -> None:
        self.trainer_running = False
        try:
            result = TrainerReport.from_dict(ray.get(ref))
        except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as error:
            self.trainer_restarts += 1
            kill_quietly(self.trainer)  # unreachable may still mean alive: never two trainers on one state
            self.trainer = None
            if self.trainer_restarts > self.config.run.role_max_restarts:
                raise RuntimeError(f"the trainer died {self.trainer_restarts} times: {error}") from error
            self.say(f"trainer lost ({type(error).__name__}): a new one resumes from its state")
            self.ledger.append({"generation": 0, "stage": "trainer_restart", "step": self.step})
            return
        self.busy.trainer_s += result.busy_s
        if result.resumed_from is not None and result.resumed_from != self.resumed_seen:
            self.resumed_seen = result.resumed_from
            self.say(f"trainer resumed from its state at step {result.resumed_from}")
        self.step = result.step
        self.trainer_window = (self.trainer, result.window_paths)  # for retention (actors/async_retention.py)
        _, positions, training = self._totals()
        samples = self.step * self.config.train.batch_size
        ratio = samples / training if training else 0.0
        target = self.config.run.train_samples_per_position
        state = "training" if ratio >= 0.5 * target else "self-play ahead (trainer behind)"
        self._trainer_state(state, f" ({ratio:.2f} samples/position, target {target:g})")
        self.board.update(step=self.step, window_positions=result.window_positions,
                          window_shards=result.window_shards, samples_per_position=ratio,
                          losses={**self.board.status.losses, **result.losses})  # fmt: skip
        metrics = {**result.losses, "trainer/samples_per_position": ratio,
                   "trainer/window_positions": result.window_positions}  # fmt: skip
        self.tracker.log_metrics(self.trainer_run_id, metrics, step=self.step)
        self.tracker.log_metrics(self.trainer_run_id, {f"by_positions/{k}": v for k, v in metrics.items()},
                                 step=positions)  # fmt: skip
        for candidate in result.candidates:
            index = candidate.index
            if index in self.candidates or index > self.config.run.generation_limit:
                continue
            entry = CandidateEntry(index, candidate.net, candidate.step, positions, training, result.node)
            self.ledger.append(entry.as_entry())
            self.candidates[index] = entry
            self.gate_queue.append(index)
            self.board.update(candidates=len(self.candidates))
            self.say(f"candidate {index} exported at step {candidate.step} "
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
        """Queue again the recorded tasks whose shard the trainer's window
        quarantined: the names in ``quarantine/`` (a few; not every recorded
        shard) that are recorded, not back in the folder and not queued or in
        flight.  A shard gone some other way is found by the final sweep."""
        recorded = self._recorded()
        waiting = {task.name for task in self.queue}
        waiting |= {info[1].name for kind, info in self.in_flight.values() if kind == "task"}
        for name in quarantined_names(self.shards):
            entry = recorded.get(name)
            if entry is None or name in waiting or name in self._retired():  # retired: removed on purpose
                continue
            if not shard_exists(self.shards, name):
                version, index = parse_task(name) or (entry["generation"], 0)
                task = self.known.get(name) or Task(name, task_seed(self.config.selfplay.seed, version, index),
                                                   entry["game_count"], version)  # fmt: skip
                self.say(f"self-play task {name}: its shard is gone (quarantined): played again")
                self.queue.appendleft(task)

    def _trainer_run(self) -> str:
        entry = self.ledger.find(0, "trainer_run")
        if entry is not None:
            self.tracker.client.update_run(entry["run_id"], status="RUNNING")
            return entry["run_id"]
        run_id = self.tracker.child_run("trainer")
        self.ledger.append({"generation": 0, "stage": "trainer_run", "run_id": run_id})
        return run_id
