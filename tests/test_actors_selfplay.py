"""Self-play on a real local Ray cluster: actors, shards, retries after a crash."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from models.search_config import SearchConfig
from pipeline.config import Config, SelfPlayConfig
from pipeline.shards import list_shards, load_shards
from tests.helpers.nets import TINY_CONFIG

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.slow

TINY = Config(
    net=TINY_CONFIG,
    search=SearchConfig(num_simulations=8, leaves_per_batch=4),
    selfplay=SelfPlayConfig(
        games_per_task=2, max_plies=10, workers=2, cpus_per_worker=1.0, fast_simulations=2, resign_threshold=-1.0
    ),
)


def test_two_actors_write_valid_shards_and_a_rerun_skips_them(local_ray: None, tmp_path: Path) -> None:
    from actors.selfplay import run_selfplay

    out = str(tmp_path / "shards")
    report = run_selfplay(TINY, out, games=6)
    assert sorted(task["task"] for task in report.tasks) == [f"gen0000-task{i:05d}" for i in range(3)]
    tables, bad = load_shards(out)
    assert bad == [] and len(tables) == 3
    positions = sum(table.num_rows for table in tables)
    assert positions == report.total("plies") == report.total("positions")
    game_ids = {gid for table in tables for gid in table.column("game_id").to_pylist()}
    assert len(game_ids) == 6
    again = run_selfplay(TINY, out, games=6)
    assert again.tasks == [] and len(again.skipped) == 3


def test_a_worker_killed_after_writing_leaves_one_shard_per_task(local_ray: None, tmp_path: Path) -> None:
    from actors.selfplay import run_selfplay

    out = str(tmp_path / "shards")
    marker = tmp_path / "crashed"
    config = replace(TINY, selfplay=replace(TINY.selfplay, workers=1))
    report = run_selfplay(config, out, games=4, crash_marker=str(marker))
    assert marker.exists()  # the actor did die once, after writing its first shard
    assert len(report.tasks) == 2
    names = [Path(path).name for path in list_shards(out)]
    assert names == ["gen0000-task00000.parquet", "gen0000-task00001.parquet"]
    tables, bad = load_shards(out)
    assert bad == []
    for table in tables:
        plies = table.column("ply").to_pylist()
        games = table.column("game_id").to_pylist()
        assert len(set(zip(games, plies))) == table.num_rows  # no position twice
        assert pc.all(pc.is_in(table.column("z"), value_set=pa.array([-1, 0, 1], type=pa.int8()))).as_py()
