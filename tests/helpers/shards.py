"""Shard folders made by real self-play (uniform evaluator, a short search),
and a stream spec over the training rows of such a folder."""

from __future__ import annotations

from pathlib import Path

from models.evaluation import UniformEvaluator
from models.policy import get_policy_map
from pipeline.config import SelfPlayConfig
from pipeline.selfplay import SelfPlayWorker, game_positions
from pipeline.shards import records_to_table, write_shard
from pipeline.training.config import TrainConfig
from pipeline.training.data import StreamSpec
from pipeline.training.window import build_window

from .searches import TINY_SEARCH


def make_shards(
    directory: Path,
    shards: int = 2,
    games: int = 4,
    max_plies: int = 12,
    full_search_prob: float = 1.0,
    seed: int = 0,
    generation: int = 0,
    encoding: str = "az4672",
) -> list[str]:
    """Write ``shards`` shards of ``games`` self-play games each (uniform evaluator) into ``directory``."""
    selfplay = SelfPlayConfig(
        resign_threshold=-1.0,
        full_search_prob=full_search_prob,
        games_per_task=games,
        max_plies=max_plies,
        fast_simulations=4,
    )
    worker = SelfPlayWorker(UniformEvaluator(), TINY_SEARCH, selfplay)
    policy_map = get_policy_map(encoding)
    paths = []
    for index in range(shards):
        task = f"gen{generation:04d}-task{index:05d}"
        records = worker.play(games, seed * 1000 + index, id_prefix=task)
        rows = [row for record in records for row in game_positions(record, policy_map, generation)]
        paths.append(write_shard(records_to_table(rows), directory, task))
    return paths


STREAM_BATCH = 16
"""The batch size of :func:`stream_spec` (and :data:`STREAM_CONFIG`)."""
STREAM_CONFIG = TrainConfig(batch_size=STREAM_BATCH, window_positions=100_000, shuffle_buffer=100_000, seed=3)
"""A window that takes every shard of a test folder, for the continuous trainer's stream."""


def stream_spec(directory: Path, batch: int = STREAM_BATCH, shuffle: int = 100_000) -> StreamSpec:
    """The continuous trainer's stream spec over every training row of ``directory`` (seed 3, consumer 0)."""
    window = build_window(directory, STREAM_CONFIG, "az4672")
    return StreamSpec(window.pieces, batch, shuffle, seed=3, consumer=0, policy_encoding="az4672")
