"""Shared helpers of the training tests: small shard folders made by real self-play.

Imported by the other ``test_training*.py`` modules; it holds no tests itself.
"""

from __future__ import annotations

from pathlib import Path

from models.evaluation import UniformEvaluator
from models.policy import get_policy_map
from models.search_config import SearchConfig
from pipeline.config import SelfPlayConfig
from pipeline.selfplay import SelfPlayWorker, game_positions
from pipeline.shards import records_to_table, write_shard

SEARCH = SearchConfig(num_simulations=16, leaves_per_batch=4)

TINY_NET = ["net.blocks=1", "net.filters=8", "net.value_channels=2", "net.value_hidden=16"]
"""``--set`` overrides of a very small network for the training tests."""


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
    worker = SelfPlayWorker(UniformEvaluator(), SEARCH, selfplay)
    policy_map = get_policy_map(encoding)
    paths = []
    for index in range(shards):
        task = f"gen{generation:04d}-task{index:05d}"
        records = worker.play(games, seed * 1000 + index, id_prefix=task)
        rows = [row for record in records for row in game_positions(record, policy_map, generation)]
        paths.append(write_shard(records_to_table(rows), directory, task))
    return paths
