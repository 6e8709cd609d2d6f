"""Chaos test: a real ``zerochess run`` (tiny preset, two self-play actors, two
generations) while a seeded schedule injects faults from this process, by
watching the run folder and the process table:

a) SIGKILL a ``ray::SelfPlayActor`` worker during self-play: Ray restarts the
   actor and retries its tasks;
b) SIGKILL the ``stockfish`` engine of the ladder mid-gate: the player restarts
   it and the gate finishes with no aborted game;
c) truncate a finished shard: the loop quarantines it and plays its task again
   (same task id) before training, no game is dropped;
d) SIGKILL the driver (the trainer runs in it) after a training checkpoint;
   the same command, run again, resumes training at the checkpoint's step.

Then: every game id of ``games.jsonl`` is in exactly one valid shard; every
MLflow run is FINISHED; no process of the run is left (Ray's temp dir is a
fresh ``RAY_TMPDIR``, and every process the run starts inherits a tag in its
environment).  ``ZEROCHESS_CHAOS_SEED`` picks another schedule.
"""

from __future__ import annotations

import json
import os
import random
import shutil
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

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
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
TAG_ENV = "ZEROCHESS_CHAOS_TAG"


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
    stockfish_delay_s: float  # after the engine is first seen
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
            stockfish_delay_s=rng.uniform(0.0, 0.1),
            driver_generation=rng.choice(generations),
            driver_after_step=rng.choice([CHECKPOINT_EVERY * k for k in (1, 2, 3)]),
        )


def _entries(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of an append-only ledger (a torn last line is skipped)."""
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            pass
    return entries


def _tagged(tag: str, ray_tmp: str) -> list[Any]:
    """Processes of this run: the tag in their environment, or Ray's temp dir in
    their command line, and their descendants (never this process or its ancestors)."""
    import psutil

    spare = {os.getpid()} | {p.pid for p in psutil.Process().parents()}
    found: dict[int, Any] = {}
    for proc in psutil.process_iter(["cmdline", "environ"]):
        if proc.pid in spare:
            continue
        environ = proc.info["environ"] or {}
        cmdline = " ".join(proc.info["cmdline"] or [])
        if environ.get(TAG_ENV) == tag or environ.get("RAY_TMPDIR") == ray_tmp or ray_tmp in cmdline:
            found[proc.pid] = proc
            try:
                found.update({c.pid: c for c in proc.children(recursive=True) if c.pid not in spare})
            except psutil.Error:
                pass
    return list(found.values())


def _describe(procs: list[Any]) -> list[str]:
    import psutil

    lines = []
    for proc in procs:
        try:
            lines.append(f"{proc.pid} {' '.join(proc.cmdline())[:150]}")
        except psutil.Error:
            pass
    return lines


def _assert_none_left(tag: str, ray_tmp: str, when: str, grace_s: float = 30.0) -> None:
    leftovers = _tagged(tag, ray_tmp)
    give_up = time.monotonic() + grace_s
    while leftovers and time.monotonic() < give_up:
        time.sleep(0.5)
        leftovers = _tagged(tag, ray_tmp)
    assert not leftovers, f"processes of the run alive {grace_s:.0f} s {when}: {_describe(leftovers)}"


def _kill_all(procs: list[Any]) -> None:
    import psutil

    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(procs, timeout=10)


@dataclass
class Injector:
    """Fires the schedule's faults as the run reaches them (call ``step`` often)."""

    out: Path
    tag: str
    ray_tmp: str
    schedule: Schedule
    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    _stockfish_seen: float | None = None

    def _ours(self, prefix: str) -> list[Any]:
        import psutil

        found = []
        for proc in _tagged(self.tag, self.ray_tmp):
            try:
                name = (proc.cmdline() or [""])[0]
            except psutil.Error:
                continue
            if os.path.basename(name).startswith(prefix):
                found.append(proc)
        return sorted(found, key=lambda proc: proc.pid)

    def step(self, driver: subprocess.Popen[bytes]) -> None:
        ledger = _entries(self.out / "ledger.jsonl")
        stages = {(entry["generation"], entry["stage"]) for entry in ledger}
        finished = [e["task"] for e in _entries(self.out / "games.jsonl")]
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
        elif "actor" in self.events and "restarted" not in self.events["actor"] \
                and selfplay_running(s.actor_generation):  # fmt: skip
            known = set(self.events["actor"]["others"])
            fresh = [proc.pid for proc in self._ours("ray::SelfPlayActor") if proc.pid not in known]
            if fresh:
                self.events["actor"]["restarted"] = fresh[0]

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

        # b) the ladder's Stockfish, while the gate runs
        gating = (s.stockfish_generation, "train") in stages and (s.stockfish_generation, "gate") not in stages
        if "stockfish" not in self.events and gating:
            engines = self._ours("stockfish")
            if engines and self._stockfish_seen is None:
                self._stockfish_seen = time.monotonic()
            if engines and time.monotonic() - self._stockfish_seen >= s.stockfish_delay_s:
                engines[0].send_signal(signal.SIGKILL)
                self.events["stockfish"] = {"pid": engines[0].pid}
        elif "stockfish" in self.events and "restarted" not in self.events["stockfish"] and gating:
            fresh = [p.pid for p in self._ours("stockfish") if p.pid != self.events["stockfish"]["pid"]]
            if fresh:
                self.events["stockfish"]["restarted"] = fresh[0]

        # d) the driver, mid-training, once a checkpoint of the step is written
        g = s.driver_generation
        if "driver" not in self.events and (g, "selfplay") in stages and (g, "train") not in stages:
            step = _checkpoint_step(self.out / f"gen{g:04d}" / "train")
            if step is not None and step >= s.driver_after_step:
                driver.send_signal(signal.SIGKILL)
                driver.wait(timeout=60)
                self.events["driver"] = {"pid": driver.pid, "seen_step": step,
                                         "checkpoint_step": _checkpoint_step(self.out / f"gen{g:04d}" / "train")}  # fmt: skip


def _checkpoint_step(train_dir: Path) -> int | None:
    from pipeline.training.checkpointing import read_checkpoint

    path = train_dir / "checkpoints" / "last.ckpt"
    if not path.exists():
        return None
    return int(read_checkpoint(path)["global_step"])


def _command(out: Path) -> list[str]:
    script = Path(sys.executable).with_name("zerochess")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "pipeline"]
    sets = [arg for key, value in OVERRIDES.items() for arg in ("--set", f"{key}={value}")]
    return [*head, "run", "--preset", "tiny", "--out", str(out), "--no-live", *sets]


def _run(out: Path, env: dict[str, str], injector: Injector, logs: Path, deadline: float) -> tuple[int, str]:
    """One driver run while the injector watches; its return code and stderr."""
    with open(logs.with_suffix(".out"), "wb") as stdout, open(logs.with_suffix(".err"), "wb") as stderr:
        driver = subprocess.Popen(_command(out), cwd=ROOT, env=env, stdout=stdout, stderr=stderr)
        try:
            while driver.poll() is None:
                if time.monotonic() > deadline:
                    pytest.fail(f"the run did not finish in {RUN_TIMEOUT_S} s; events so far: {injector.events}")
                injector.step(driver)
                time.sleep(0.05)
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait(timeout=60)
    return driver.returncode, logs.with_suffix(".err").read_text(errors="replace")


def test_chaos_schedule(tmp_path: Path) -> None:
    import psutil  # noqa: F401 - fail early when missing
    from mlflow.tracking import MlflowClient

    from pipeline.shards import list_shards, read_shard
    from pipeline.training import checkpointing  # noqa: F401 - imported now, not while the trainer runs

    schedule = Schedule.draw(SEED)
    print(f"chaos seed {SEED}: {schedule}")
    out = tmp_path / "run"
    ray_tmp = tempfile.mkdtemp(prefix="zc-chaos-", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    tag = uuid.uuid4().hex
    env = {**os.environ, "RAY_TMPDIR": ray_tmp, "RAY_AUTH_MODE": "disabled", TAG_ENV: tag}
    for name in ("MLFLOW_TRACKING_URI", "RAY_ADDRESS"):
        env.pop(name, None)
    injector = Injector(out, tag, ray_tmp, schedule)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        code, first_err = _run(out, env, injector, tmp_path / "first", deadline)
        assert "driver" in injector.events, f"the driver kill never fired (exit {code}): {first_err[-3000:]}"
        assert code == -signal.SIGKILL, first_err[-3000:]
        # Nothing the killed driver started outlives it for long (Ray's agents alone
        # would linger a minute or two: init_ray's reaper ends them).
        _assert_none_left(tag, ray_tmp, "after the driver was killed")
        code, second_err = _run(out, env, injector, tmp_path / "second", deadline)
        assert code == 0, second_err[-5000:]
        _assert_none_left(tag, ray_tmp, "after the run finished")
    finally:
        _kill_all(_tagged(tag, ray_tmp))
        shutil.rmtree(ray_tmp, ignore_errors=True)

    events = injector.events
    print(f"events: {events}")
    assert set(events) == {"actor", "truncate", "stockfish", "driver"}, events
    ledger = _entries(out / "ledger.jsonl")
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
    recorded = [game for entry in _entries(out / "games.jsonl") for game in entry["games"]]
    assert len(recorded) == len(set(recorded)) == GENERATIONS * GAMES
    owner: dict[str, str] = {}
    for path in list_shards(out / "shards"):
        table = read_shard(path, check_legality=False)
        games, plies = table.column("game_id").to_pylist(), table.column("ply").to_pylist()
        assert len(set(zip(games, plies))) == table.num_rows, f"{path}: a position twice"
        for game in set(games):
            assert game not in owner, f"game {game} in {owner.get(game)} and {path}"
            owner[game] = path
    assert sorted(owner) == sorted(recorded)
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
