"""How the loops cut self-play into tasks: each task's id (its shard's name,
``gen{generation:04d}-task{index:05d}``; the async loop puts the net version
in place of the generation), its seed and its games."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.config import Config


def task_id(generation: int, index: int) -> str:
    """The id (and shard name) of self-play task ``index`` of ``generation``."""
    return f"gen{generation:04d}-task{index:05d}"


def plan_tasks(games: int, games_per_task: int, generation: int) -> list[tuple[str, int]]:
    """How ``games`` self-play games of ``generation`` are cut into tasks:
    ``(task id, games)`` pairs, ``games_per_task`` each, the last one shorter."""
    count = math.ceil(games / games_per_task)
    return [(task_id(generation, index), min(games_per_task, games - index * games_per_task)) for index in range(count)]


def task_seed(base_seed: int, generation: int, index: int) -> int:
    """A distinct, reproducible seed per task."""
    return (base_seed * 1_000_003 + generation * 10_007 + index) % 2**63


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


def generation_tasks(config: Config, generation: int) -> list[str]:
    """The self-play task ids (and shard names) of ``generation``, as ``run_selfplay`` cuts them."""
    return [task for task, _ in plan_tasks(config.run.games_per_generation, config.selfplay.games_per_task, generation)]
