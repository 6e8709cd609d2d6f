"""Chaos tests: a real ``zerochess run`` of the ``tiny`` preset, in each loop
mode, while this process injects faults by watching the run folder and the
process table.

``run.mode: sync`` (two self-play actors, two generations), on a seeded schedule:

a) SIGKILL a ``ray::SelfPlayActor`` worker during self-play: Ray restarts the
   actor and retries its tasks (the restart is read afterwards from Ray's
   worker logs, where the same actor id is created by a second worker);
b) SIGKILL the ``stockfish`` engine of the ladder mid-gate: the player restarts
   it and the gate finishes with no aborted game (the engine is a stand-in,
   ``tests/helpers/doomed_engine.py``, that dies at a chosen ``go`` and logs every
   start, so a gate faster than the watcher cannot slip past the fault);
c) truncate a finished shard: the loop quarantines it and plays its task again
   (same task id) before training, no game is dropped;
d) SIGKILL the driver (the trainer runs in it) after a training checkpoint;
   the same command, run again, resumes training at the checkpoint's step.

Then: every game id of ``games.jsonl`` is in exactly one valid shard; every
MLflow run is FINISHED; no process of the run is left (Ray's temp dir is a
fresh ``RAY_TMPDIR``, and every process the run starts inherits a tag in its
environment).  ``ZEROCHESS_CHAOS_SEED`` picks another schedule.

``run.mode: async`` (a pool, a trainer and a gatekeeper at once, two
candidates), as the run reaches each point: SIGKILL a pool actor, the trainer
(after its first state checkpoint) and the gatekeeper (mid-gate), truncate a
recorded shard, then SIGKILL the driver once the first candidate is gated and
run it again: the same checks, and the log says each role was lost and
resumed.  The helpers both share are in ``tests/helpers/runs.py``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.helpers.runs import (
    FIT_TWO_CPUS,
    TAG_ENV,
    assert_games_once,
    assert_mlflow,
    entries,
    named,
    run_env,
    run_killed_then_resumed,
)

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("ZEROCHESS_CHAOS_SEED", "7"))
GENERATIONS = 2
GAMES = 12
GAMES_PER_TASK = 2
TASKS = GAMES // GAMES_PER_TASK
MAX_STEPS = 200
CHECKPOINT_EVERY = 20
OVERRIDES = {
    "run.generations": GENERATIONS,
    "run.games_per_generation": GAMES,
    "selfplay.games_per_task": GAMES_PER_TASK,
    "selfplay.workers": 2,
    "train.max_steps": MAX_STEPS,
    "train.checkpoint_every": CHECKPOINT_EVERY,
}
RUN_TIMEOUT_S = 600  # both driver runs together; a tiny run takes about a minute


@dataclass
class Schedule:
    """Which fault, where and when (all drawn from one seeded generator)."""

    actor_generation: int
    actor_after_tasks: int  # finished tasks of that generation before the kill
    actor_index: int  # which actor (by process id order)
    truncate_generation: int
    truncate_after_tasks: int
    truncate_pick: int  # which of the finished tasks
    truncate_keep: float  # share of the file's bytes kept
    stockfish_generation: int
    stockfish_after_go: int  # the ladder engine dies on receiving this ``go``
    driver_generation: int
    driver_after_step: int  # checkpoint step the kill waits for

    @classmethod
    def draw(cls, seed: int) -> Schedule:
        rng = random.Random(seed)
        generations = range(1, GENERATIONS + 1)
        return cls(
            actor_generation=rng.choice(generations),
            actor_after_tasks=rng.randint(0, 2),
            actor_index=rng.randrange(2),
            truncate_generation=rng.choice(generations),
            truncate_after_tasks=rng.randint(1, 3),
            truncate_pick=rng.randrange(3),
            truncate_keep=rng.uniform(0.05, 0.95),
            stockfish_generation=rng.choice(generations),
            stockfish_after_go=rng.randint(1, 3),
            driver_generation=rng.choice(generations),
            driver_after_step=rng.choice([CHECKPOINT_EVERY * k for k in (1, 2, 3)]),
        )


@dataclass
class Injector:
    """Fires the schedule's faults as the run reaches them (call ``step`` often)."""

    out: Path
    tag: str
    ray_tmp: str
    schedule: Schedule
    events: dict[str, dict[str, Any]] = field(default_factory=dict)

    def _ours(self, prefix: str) -> list[Any]:
        return named(self.tag, self.ray_tmp, prefix)

    def step(self, driver: subprocess.Popen[bytes]) -> None:
        ledger = entries(self.out / "ledger.jsonl")
        stages = {(entry["generation"], entry["stage"]) for entry in ledger}
        finished = [e["task"] for e in entries(self.out / "games.jsonl")]
        s = self.schedule

        def selfplay_running(generation: int) -> bool:
            return (generation, "start") in stages and (generation, "selfplay") not in stages

        def tasks_done(generation: int) -> list[str]:
            return [task for task in finished if task.startswith(f"gen{generation:04d}-")]

        # a) a self-play actor, while its generation's self-play runs
        if "actor" not in self.events and selfplay_running(s.actor_generation) \
                and len(tasks_done(s.actor_generation)) >= s.actor_after_tasks:  # fmt: skip
            actors = self._ours("ray::SelfPlayActor")
            if len(actors) == 2:
                victim = actors[s.actor_index]
                victim.send_signal(signal.SIGKILL)
                self.events["actor"] = {"pid": victim.pid, "others": [a.pid for a in actors],
                                        "tasks_done": len(tasks_done(s.actor_generation))}  # fmt: skip

        # c) truncate a shard whose task the driver recorded as finished
        done = tasks_done(s.truncate_generation)
        if "truncate" not in self.events and selfplay_running(s.truncate_generation) \
                and len(done) >= s.truncate_after_tasks:  # fmt: skip
            task = done[s.truncate_pick % len(done)]
            path = self.out / "shards" / f"{task}.parquet"
            size = path.stat().st_size
            keep = int(size * s.truncate_keep)
            with open(path, "r+b") as handle:
                handle.truncate(keep)
            self.events["truncate"] = {"task": task, "size": size, "kept": keep}

        # b) the ladder's Stockfish: the doomed engine kills itself (see _doomed_engine)

        # d) the driver, mid-training, once a checkpoint of the step is written
        g = s.driver_generation
        if "driver" not in self.events and (g, "selfplay") in stages and (g, "train") not in stages:
            step = _checkpoint_step(self.out / f"gen{g:04d}" / "train")
            if step is not None and step >= s.driver_after_step:
                driver.send_signal(signal.SIGKILL)
                driver.wait(timeout=60)
                self.events["driver"] = {"pid": driver.pid, "seen_step": step,
                                         "checkpoint_step": _checkpoint_step(self.out / f"gen{g:04d}" / "train")}  # fmt: skip

    def finish(self) -> None:
        """The killed actor's restart, from Ray's own logs (a restart and the end of
        self-play can both fall between two polls of the process table)."""
        if "actor" in self.events:
            restarted = _restarted_actor(self.ray_tmp, self.events["actor"]["pid"])
            if restarted is not None:
                self.events["actor"]["restarted"] = restarted


def _restarted_actor(ray_tmp: str, victim: int) -> int | None:
    """Another worker that created the same actor as worker ``victim`` (the lowest
    pid), per the ``Creating actor actor_id=...`` line of each worker's core log."""
    created: dict[int, set[str]] = {}
    for log in Path(ray_tmp).glob("**/session_*/logs/python-core-worker-*.log"):
        pid = int(log.stem.rsplit("_", 1)[1])
        created[pid] = {line.split("actor_id=")[1].split()[0] for line in log.read_text(errors="replace").splitlines()
                        if "Creating actor actor_id=" in line}  # fmt: skip
    mine = created.get(victim, set())
    return min((pid for pid, actors in created.items() if pid != victim and mine & actors), default=None)


def _checkpoint_step(train_dir: Path) -> int | None:
    from pipeline.training.checkpointing import read_checkpoint

    path = train_dir / "checkpoints" / "last.ckpt"
    if not path.exists():
        return None
    return int(read_checkpoint(path)["global_step"])


def _doomed_engine(tmp_path: Path, out: Path, schedule: Schedule) -> tuple[Path, dict[str, str]]:
    """A launcher of ``tests/helpers/doomed_engine.py`` (for ``gating.stockfish_path``)
    and its settings, for the environment; its log is ``tmp_path/engines.jsonl``."""
    from pipeline.players.stockfish import find_stockfish

    launcher = tmp_path / "doomed-stockfish"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{ROOT / "tests" / "helpers" / "doomed_engine.py"}" "$@"\n')
    launcher.chmod(0o755)
    settings = {
        "ZC_DOOMED_ENGINE": find_stockfish(),
        "ZC_DOOMED_LEDGER": str(out / "ledger.jsonl"),
        "ZC_DOOMED_GENERATION": str(schedule.stockfish_generation),
        "ZC_DOOMED_AFTER_GO": str(schedule.stockfish_after_go),
        "ZC_DOOMED_LOG": str(tmp_path / "engines.jsonl"),
    }
    return launcher, settings


def _engine_event(log: Path) -> dict[str, Any]:
    """The engine starts and the kill, from the doomed engine's log: the killed
    pid and the first engine started after it."""
    lines = entries(log)
    kills = [i for i, line in enumerate(lines) if "killed" in line]
    assert len(kills) == 1, lines
    assert [line["pid"] for line in lines if line.get("doomed")] == [lines[kills[0]]["killed"]], lines
    later = [line["pid"] for line in lines[kills[0] + 1:] if "pid" in line]
    return {**lines[kills[0]], **({"restarted": later[0]} if later else {})}


def test_chaos_schedule(tmp_path: Path) -> None:
    import psutil  # noqa: F401 - fail early when missing
    from mlflow.tracking import MlflowClient

    from pipeline.training import checkpointing  # noqa: F401 - imported now, not while the trainer runs

    schedule = Schedule.draw(SEED)
    print(f"chaos seed {SEED}: {schedule}")
    out = tmp_path / "run"
    ray_tmp = tempfile.mkdtemp(prefix="zc-chaos-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    tag = uuid.uuid4().hex
    launcher, engine_env = _doomed_engine(tmp_path, out, schedule)
    env = run_env(RAY_TMPDIR=ray_tmp, **{TAG_ENV: tag}, **engine_env)
    injector = Injector(out, tag, ray_tmp, schedule)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    overrides = {**OVERRIDES, "gating.stockfish_path": launcher}
    first_err, second_err = run_killed_then_resumed(overrides, out, env, injector, tmp_path, deadline, tag, ray_tmp,
                                                    exit_by_sigkill=True)  # fmt: skip

    events = {**injector.events, "stockfish": _engine_event(tmp_path / "engines.jsonl")}
    print(f"events: {events}")
    assert set(events) == {"actor", "truncate", "stockfish", "driver"}, events
    ledger = entries(out / "ledger.jsonl")
    stages = [(entry["generation"], entry["stage"]) for entry in ledger]
    for generation in range(1, GENERATIONS + 1):
        for stage in ("selfplay", "train", "gate", "generation"):
            assert stages.count((generation, stage)) == 1, (generation, stage, stages)

    # a) the actor died mid self-play; Ray restarted it and retried its tasks: all tasks
    # finished in that run, and none had to be played again by the loop.
    assert "restarted" in events["actor"], events["actor"]
    selfplay = next(e for e in ledger if e["stage"] == "selfplay" and e["generation"] == schedule.actor_generation)
    assert selfplay["tasks"] + selfplay["tasks_skipped"] == TASKS and selfplay["games"] == GAMES, selfplay

    # c) the truncated shard was quarantined with its reason and played again.
    task = events["truncate"]["task"]
    quarantined = out / "shards" / "quarantine" / f"{task}.parquet"
    assert quarantined.stat().st_size == events["truncate"]["kept"]
    assert (out / "shards" / "quarantine" / f"{task}.parquet.reason.txt").read_text().strip()
    regenerated = [e for e in ledger if e["stage"] == "regenerate"]
    assert [list(e["tasks"]) for e in regenerated] == [[task]], regenerated
    assert regenerated[0]["generation"] == schedule.truncate_generation

    # b) Stockfish died mid-gate, was restarted, and the gate played every ladder game.
    assert "restarted" in events["stockfish"], events["stockfish"]
    gate = next(e for e in ledger if e["stage"] == "gate" and e["generation"] == schedule.stockfish_generation)
    ladder = gate["ladder"][0]
    assert ladder["games"] == 2 and ladder["aborted"] == 0, ladder

    # d) the second run resumed training at the checkpoint the kill left.
    step = events["driver"]["checkpoint_step"]
    assert 0 < step < MAX_STEPS, events["driver"]
    train = next(e for e in ledger if e["stage"] == "train" and e["generation"] == schedule.driver_generation)
    assert train["resumed_from_step"] == step and train["steps"] == MAX_STEPS, train
    assert f"training resumes from its checkpoint at step {step}" in second_err
    assert "Restored all states from the checkpoint" in second_err

    # Every finished game id is in exactly one valid shard, once; none lost, none extra.
    owner = assert_games_once(out)
    assert len(owner) == GENERATIONS * GAMES
    assert os.path.basename(owner[f"{task}-00000"]) == f"{task}.parquet"

    # Every MLflow run of the pipeline is FINISHED: the parent, the generations, the trainings.
    client = MlflowClient(f"sqlite:///{out}/mlflow.db")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    names = sorted(run.info.run_name for run in runs)
    assert names == sorted([f"pipeline {out.name}", *(f"gen{g:04d}" for g in range(GENERATIONS + 1)),
                            *["train"] * GENERATIONS]), names  # fmt: skip
    assert {run.info.run_name: run.info.status for run in runs if run.info.status != "FINISHED"} == {}
    killed = json.loads((out / f"gen{schedule.driver_generation:04d}" / "train" / "run.json").read_text())
    history = client.get_metric_history(killed["run_id"], "loss/total")
    steps = [metric.step for metric in history]
    assert len(steps) == len(set(steps)) and max(steps) <= MAX_STEPS, steps


# -- run.mode: async ---------------------------------------------------------------

ASYNC = {**FIT_TWO_CPUS, "run.generations": 2, "run.candidate_every_steps": 30, "train.checkpoint_every": 10,
         "selfplay.games_per_task": 8, "run.train_samples_per_position": 1.0}  # fmt: skip
ASYNC_TIMEOUT_S = 420  # both driver runs together


@dataclass
class AsyncInjector:
    """Fires the async run's faults as the run reaches them (call ``step`` often)."""

    out: Path
    tag: str
    ray_tmp: str
    events: dict[str, dict[str, Any]] = field(default_factory=dict)

    def finish(self) -> None:
        pass  # every async fault is checked in the driver's log and the run folder

    def _kill(self, event: str, prefix: str, **info: Any) -> None:
        victims = named(self.tag, self.ray_tmp, prefix)
        if victims:
            victims[0].send_signal(signal.SIGKILL)
            self.events[event] = {"pid": victims[0].pid, **info}

    def step(self, driver: subprocess.Popen[bytes]) -> None:
        ledger = entries(self.out / "ledger.jsonl")
        tasks = [entry["task"] for entry in entries(self.out / "games.jsonl")]
        state = self.out / "trainer" / "state.pt"
        if "pool" not in self.events and len(tasks) >= 2:
            self._kill("pool", "ray::PoolActor", tasks_done=len(tasks))
        if "truncate" not in self.events and len(tasks) >= 4:
            path = self.out / "shards" / f"{tasks[1]}.parquet"
            size = path.stat().st_size
            with open(path, "r+b") as handle:
                handle.truncate(size // 3)
            self.events["truncate"] = {"task": tasks[1], "kept": size // 3}
        if "trainer" not in self.events and state.exists() and not any(e["stage"] == "candidate" for e in ledger):
            self._kill("trainer", "ray::TrainerActor")
        if "gatekeeper" not in self.events and any(e["stage"] == "gate_start" for e in ledger):
            self._kill("gatekeeper", "ray::GatekeeperActor")
        if "driver" not in self.events and "gatekeeper" in self.events and "trainer" in self.events \
                and any(e["stage"] == "gate" and e["generation"] == 1 for e in ledger):  # fmt: skip
            driver.send_signal(signal.SIGKILL)
            driver.wait(timeout=60)
            self.events["driver"] = {"pid": driver.pid}


def test_async_chaos(tmp_path: Path) -> None:
    import psutil  # noqa: F401 - fail early when missing

    out = tmp_path / "run"
    ray_tmp = tempfile.mkdtemp(prefix="zc-achaos-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    tag = uuid.uuid4().hex
    env = run_env(RAY_TMPDIR=ray_tmp, **{TAG_ENV: tag})
    injector = AsyncInjector(out, tag, ray_tmp)
    deadline = time.monotonic() + ASYNC_TIMEOUT_S
    first_err, second_err = run_killed_then_resumed(ASYNC, out, env, injector, tmp_path, deadline, tag, ray_tmp,
                                                    exit_by_sigkill=False)  # fmt: skip

    events = injector.events
    print(f"events: {events}")
    assert set(events) == {"pool", "truncate", "trainer", "gatekeeper", "driver"}, events
    assert "self-play actor lost" in first_err
    assert "trainer lost" in first_err and "trainer resumed from its state at step" in first_err + second_err
    assert "gatekeeper lost" in first_err and "candidate 1 is gated again" in first_err
    assert "trainer resumed from its state at step" in second_err  # after the driver kill
    ledger = entries(out / "ledger.jsonl")
    stages = [(entry["generation"], entry["stage"]) for entry in ledger]
    for index in (1, 2):
        assert stages.count((index, "candidate")) == 1 and stages.count((index, "gate")) == 1, stages
    assert [e["step"] for e in ledger if e["stage"] == "candidate"] == [30, 60]
    # the truncated shard was quarantined with its reason and its task played again
    task = events["truncate"]["task"]
    quarantine = out / "shards" / "quarantine"
    assert (quarantine / f"{task}.parquet").stat().st_size == events["truncate"]["kept"]
    assert (quarantine / f"{task}.parquet.reason.txt").read_text().strip()
    owner = assert_games_once(out)
    assert os.path.basename(owner[f"{task}-00000"]) == f"{task}.parquet"
    assert_mlflow(out, 2)
