"""Self-play on Ray: a pool of actors, each a :class:`SelfPlayWorker` with its
own network, writing one Parquet shard per task.

The driver cuts the games into tasks and names each task (and so its shard)
from the generation and the task number, so a task that Ray retries after its
actor died rewrites the same shard instead of adding a second one.  Tasks
whose shard already exists are skipped, which makes a rerun resume.  At most
two tasks per actor are in flight (back-pressure through ``ray.wait``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
import torch

from models.net import AlphaZeroNet, net_from_state, net_state, pick_device
from models.net_evaluator import NetEvaluator
from models.policy import get_policy_map
from pipeline.config import Config, from_dict, to_dict
from pipeline.loop.tasks import plan_tasks, task_seed
from pipeline.quiet import native_stderr_muted
from pipeline.selfplay import SelfPlayWorker, check_adjudication, game_positions, start_fens_for
from pipeline.shards import records_to_table, shard_exists, write_shard

log = logging.getLogger(__name__)

TASKS_IN_FLIGHT_PER_ACTOR = 2


class SelfPlayActor:
    """Plays self-play tasks and writes their shards (wrapped by ``ray.remote``).

    Args:
        config: the config as plain data (``pipeline.config.to_dict``).
        weights: ``models.net.net_state`` of the network, or ``None`` for a
            random network seeded from ``selfplay.seed`` (the same in every actor).
        out: shard folder or pyarrow filesystem URI.
        generation: the network generation stored with every position.
        crash_marker: test hook: when set and the file does not exist, create
            it and kill the process right after the first shard is written.
    """

    def __init__(
        self,
        config: dict[str, Any],
        weights: dict[str, Any] | None,
        out: str,
        generation: int = 0,
        crash_marker: str | None = None,
        mate_rates: dict[int, float] | None = None,
    ) -> None:
        self.config: Config = from_dict(Config, config, source="actor config")
        selfplay = self.config.selfplay
        torch.set_num_threads(selfplay.threads_per_worker)
        device = pick_device(selfplay.device)
        if weights is None:
            torch.manual_seed(selfplay.seed)
            net = AlphaZeroNet(self.config.net).to(device)
        else:
            net = net_from_state(weights, device=device)
        start_fens = start_fens_for(selfplay, generation, mate_rates)  # selfplay.start_positions, or the curriculum's
        evaluator = NetEvaluator(net, precision=selfplay.precision, compile=selfplay.compile)
        log.info("self-play actor network: %s", evaluator.describe())
        self.inference = {"precision": evaluator.precision.name, "compile": evaluator.compiled.mode}
        self.worker = SelfPlayWorker(evaluator, self.config.search, selfplay, start_fens)
        self.policy_map = get_policy_map(net.config.policy_encoding)
        self.out = out
        self.generation = generation
        self.crash_marker = crash_marker

    def play_task(self, task: str, seed: int, games: int) -> dict[str, Any]:
        """Play ``games`` games, write them as shard ``task``; return a summary."""
        started = time.perf_counter()
        before = dict(vars(self.worker.stats))
        records = self.worker.play(games, seed, id_prefix=task)
        positions = [row for record in records for row in game_positions(record, self.policy_map, self.generation)]
        path = write_shard(records_to_table(positions), self.out, task)
        if self.crash_marker and not Path(self.crash_marker).exists():
            Path(self.crash_marker).touch()
            os._exit(1)  # die after writing, before returning: Ray retries the task
        stats = {key: value - before[key] for key, value in vars(self.worker.stats).items()}
        return {
            "task": task,
            "path": path,
            "game_ids": [record.game_id for record in records],
            "seconds": time.perf_counter() - started,
            "plies": sum(record.num_plies for record in records),
            "inference": self.inference,
            **stats,
        }


@dataclass
class SelfPlayReport:
    """What a self-play run produced (sums over its tasks)."""

    tasks: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def total(self, key: str) -> float:
        return sum(task[key] for task in self.tasks)

    def inference(self) -> str:
        """What the actors' networks computed in, e.g. ``fp32, compile jit``
        (several entries when actors on different hardware chose differently)."""
        seen = sorted({f"{task['inference']['precision']}, compile {task['inference']['compile']}"
                       for task in self.tasks if "inference" in task})  # fmt: skip
        return "; ".join(seen) or "-"

    def summary(self) -> dict[str, float]:
        games = self.total("games")
        positions = self.total("positions")
        return {
            "tasks": len(self.tasks),
            "tasks_skipped": len(self.skipped),
            "games": games,
            "positions": positions,
            "positions_per_s": positions / self.seconds if self.seconds else 0.0,
            "mean_game_length": positions / games if games else 0.0,
            "full_search_share": self.total("full_searches") / positions if positions else 0.0,
            "resign_rate": self.total("resigned") / games if games else 0.0,
            "false_resign_rate": (
                self.total("false_resigns") / self.total("playthrough") if self.total("playthrough") else 0.0
            ),
            "draw_adjudicated_rate": self.total("draws_adjudicated") / games if games else 0.0,
            "false_draw_rate": (
                self.total("false_draws") / self.total("draw_playthrough") if self.total("draw_playthrough") else 0.0
            ),
            "mean_batch": self.total("evaluations") / max(self.total("batches"), 1),
        }


def run_selfplay(
    config: Config,
    out: str,
    games: int,
    *,
    net: AlphaZeroNet | None = None,
    generation: int = 0,
    on_task: Callable[[dict[str, Any]], None] | None = None,
    crash_marker: str | None = None,
    mate_rates: dict[int, float] | None = None,
) -> SelfPlayReport:
    """Play ``games`` self-play games on a pool of Ray actors into ``out``.

    Ray must be initialised (:func:`actors.runtime.init_ray`).  ``on_task`` gets each task's
    summary as it finishes (for a progress display).  ``mate_rates``: the
    measured mate rates of earlier generations, for a curriculum stage that
    ends on one (``selfplay.curriculum[].until_mate_rate``).
    """
    selfplay = config.selfplay
    if games < 1:
        raise ValueError(f"games must be >= 1, got {games}")
    start_fens_for(selfplay, generation, mate_rates)  # fail on the driver, not in every actor
    check_adjudication(selfplay)
    todo: list[tuple[str, int, int]] = []
    report = SelfPlayReport()
    for index, (task, size) in enumerate(plan_tasks(games, selfplay.games_per_task, generation)):
        if shard_exists(out, task):
            report.skipped.append(task)
        else:
            todo.append((task, task_seed(selfplay.seed, generation, index), size))
    if not todo:
        return report
    weights_ref = ray.put(net_state(net)) if net is not None else None
    actor_class = ray.remote(
        num_cpus=selfplay.cpus_per_worker,
        num_gpus=selfplay.gpus_per_worker,
        max_restarts=selfplay.max_restarts,
        max_task_retries=selfplay.max_task_retries,
    )(SelfPlayActor)
    # Ray's C++ core warns that restarted actors need weights_ref: it lives as long as they do.
    with native_stderr_muted(enabled=not log.isEnabledFor(logging.DEBUG)):
        actors = [
            actor_class.remote(to_dict(config), weights_ref, out, generation, crash_marker, mate_rates)
            for _ in range(min(selfplay.workers, len(todo)))
        ]
    started = time.perf_counter()
    try:
        _drain(actors, todo, report, on_task)
    finally:
        for actor in actors:
            ray.kill(actor)
    report.seconds = time.perf_counter() - started
    return report


def _drain(
    actors: list[Any],
    todo: list[tuple[str, int, int]],
    report: SelfPlayReport,
    on_task: Callable[[dict[str, Any]], None] | None,
) -> None:
    """Keep every actor busy with at most TASKS_IN_FLIGHT_PER_ACTOR tasks."""
    queue = list(reversed(todo))
    in_flight: dict[Any, Any] = {}
    load = {id(actor): 0 for actor in actors}
    while queue or in_flight:
        for actor in actors:
            while queue and load[id(actor)] < TASKS_IN_FLIGHT_PER_ACTOR:
                task, seed, size = queue.pop()
                in_flight[actor.play_task.remote(task, seed, size)] = actor
                load[id(actor)] += 1
        done, _ = ray.wait(list(in_flight), num_returns=1)
        for ref in done:
            actor = in_flight.pop(ref)
            load[id(actor)] -= 1
            summary = ray.get(ref)
            report.tasks.append(summary)
            if on_task is not None:
                on_task(summary)
