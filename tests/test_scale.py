"""The async driver's scale path (``bench/scale.py``, issue 23):

* a producer (``bench/producer.py``) writes a valid shard of real rows with
  fresh game ids and answers with a digest that the driver's check accepts;
  a truncated or rewritten shard fails the check;
* ``games.jsonl`` kept compact: batched lines, totals kept as lines are
  added, a torn last line dropped, ids read back from the file;
* the trainer's window index counts only the shards that landed since its
  last build and quarantines a bad new one;
* (slow) the real driver with producers in place of self-play actors records
  their shards and stops cleanly on ``stop``; a resumed run finds nothing to redo.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pipeline.config import load_config, to_dict
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def producer_module(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    """``bench/producer.py``, sent to Ray's workers by value (they cannot import it)."""
    from actors.runtime import send_by_value

    module = bench_script("producer")
    send_by_value(module)
    return module


@pytest.fixture(scope="module")
def template(producer_module: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two real self-play games (tiny net, 24 plies at most)."""
    config = to_dict(load_config(ROOT / "params.yaml", preset="tiny", overrides=["selfplay.max_plies=24"]))
    return producer_module.make_template(config, str(tmp_path_factory.mktemp("template")), 2)


def test_a_producer_writes_a_valid_shard_the_driver_accepts(
    producer_module: ModuleType, template: str, tmp_path: Path
) -> None:
    Producer = producer_module.Producer
    from pipeline.shards import ShardError, read_shard
    from pipeline.shards.store import ShardDigest, verify_shard

    producer = Producer({}, str(tmp_path), template, rate=0.0)
    first = producer.play("gen0002-task00007", 1, 5, 2, [])
    second = producer.play("gen0002-task00008", 2, 5, 2, [])
    table = read_shard(first["path"], check_legality=True)
    assert first["game_ids"] == [f"gen0002-task00007-{k:05d}" for k in range(5)]
    assert sorted(set(table.column("game_id").to_pylist())) == first["game_ids"]
    assert set(table.column("generation").to_pylist()) == {2}
    assert table.num_rows == first["positions"] and first["full_searches"] == sum(table.column("full_search").to_pylist())
    assert not set(first["game_ids"]) & set(second["game_ids"])
    digest = ShardDigest.from_dict(first["digest"])
    verify_shard(first["path"], digest)  # the driver's check: no error
    with pytest.raises(ShardError, match="footer digest"):
        verify_shard(second["path"], digest)  # another shard
    with open(first["path"], "r+b") as handle:
        handle.truncate(digest.size // 2)
    with pytest.raises(ShardError, match="footer|bytes"):
        verify_shard(first["path"], digest)


def test_a_producer_rate_below_zero_names_the_setting(
    producer_module: ModuleType, template: str, tmp_path: Path
) -> None:
    Producer, ProducerError = producer_module.Producer, producer_module.ProducerError

    with pytest.raises(ProducerError, match="rate"):
        Producer({}, str(tmp_path), template, rate=-1.0)


def test_the_bench_rejects_what_the_cluster_cannot_host(bench_script: Callable[[str], ModuleType]) -> None:
    from pipeline.config import ConfigError

    bench = bench_script("scale")
    check_rate, parse = bench.check_rate, bench.parse
    args = parse(["--producer-cpus", "0.25", "--nodes", "2", "--node-producers", "4"])
    check_rate(400.0, 8, 20e-6, args)
    with pytest.raises(ConfigError, match=r"--rate .*--producer-cpus"):
        check_rate(100_000.0, 8, 20e-6, args)
    with pytest.raises(ConfigError, match=r"--producers 9 .*--nodes 2 x --node-producers 4"):
        check_rate(400.0, 9, 20e-6, args)


def _entry(task: str, games: int, positions: int, digest: dict[str, Any] | None = None) -> dict[str, Any]:
    from pipeline.loop.records import TaskRecord

    ids = [f"{task}-{k:05d}" for k in range(games)]
    return TaskRecord(0, task, ids, positions, positions // 2, digest=digest).as_entry()


def test_the_games_book_batches_lines_and_keeps_totals(tmp_path: Path) -> None:
    from pipeline.loop.games import GamesBook

    path = tmp_path / "games.jsonl"
    book = GamesBook(path)
    book.append(_entry("gen0000-task00000", 3, 100, {"size": 1, "rows": 100, "footer": "x"}))
    book.append(_entry("gen0000-task00001", 2, 60))
    book.append(_entry("gen0000-task00001", 2, 60))  # recorded once
    assert not path.exists() and book.totals() == (5, 160, 80)
    assert book.ids("gen0000-task00001") == ["gen0000-task00001-00000", "gen0000-task00001-00001"]
    book.flush()
    assert len(path.read_text().splitlines()) == 2
    assert "games" not in book["gen0000-task00000"] and book["gen0000-task00000"]["game_count"] == 3
    with open(path, "a") as handle:
        handle.write('{"generation": 0, "stage": "games", "task": "gen0')  # a kill mid-write
    again = GamesBook(path)
    assert again.totals() == (5, 160, 80) and set(again) == {"gen0000-task00000", "gen0000-task00001"}
    assert again["gen0000-task00000"]["digest"]["rows"] == 100
    assert again.ids_of({"gen0000-task00000"}) == {"gen0000-task00000": [f"gen0000-task00000-{k:05d}" for k in range(3)]}


def test_the_window_index_reads_only_new_shards(
    producer_module: ModuleType, template: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Producer = producer_module.Producer
    from pipeline.training import window
    from pipeline.training.config import TrainConfig
    from pipeline.training.window import WindowIndex, build_window

    shards = tmp_path / "shards"
    producer = Producer({}, str(shards), template, rate=0.0)
    for index in range(3):
        producer.play(f"gen0000-task{index:05d}", index, 2, 0, [])
    counted: list[str] = []
    real = window._count
    monkeypatch.setattr(window, "_count", lambda path: counted.append(Path(path).name) or real(path))
    index = WindowIndex(shards)
    assert index.refresh() == 3 and len(counted) == 3
    config = TrainConfig(window_positions=10**6)
    first = build_window(shards, config, "az4672", index)
    assert len(first.pieces) == 3
    producer.play("gen0000-task00003", 3, 2, 0, [])
    (shards / "gen0000-task00004.parquet").write_bytes(b"not parquet")
    assert index.refresh() == 2 and counted[3:] == ["gen0000-task00003.parquet", "gen0000-task00004.parquet"]
    second = build_window(shards, config, "az4672", index)
    assert Path(second.pieces[0].path).name == "gen0000-task00003.parquet"
    assert second.total_positions == first.total_positions + second.pieces[0].training_rows
    assert (shards / "quarantine" / "gen0000-task00004.parquet").exists()
    assert index.refresh() == 0


def test_the_window_takes_the_shards_that_landed_last(
    producer_module: ModuleType, template: str, tmp_path: Path
) -> None:
    """A task handed out early that lands late is the newest shard for the window,
    not one sorted below a window already full of later task names."""
    Producer = producer_module.Producer
    from pipeline.training.config import TrainConfig
    from pipeline.training.window import WindowIndex, build_window

    shards = tmp_path / "shards"
    producer = Producer({}, str(shards), template, rate=0.0)
    for number in (1, 2):
        producer.play(f"gen0000-task{number:05d}", number, 2, 0, [])
    index = WindowIndex(shards)
    index.refresh()
    one = build_window(shards, TrainConfig(window_positions=10**6), "az4672", index).pieces[0].training_rows
    config = TrainConfig(window_positions=one)  # the newest shard only (all shards hold the same games)
    assert Path(build_window(shards, config, "az4672", index).pieces[0].path).name == "gen0000-task00002.parquet"
    producer.play("gen0000-task00000", 0, 2, 0, [])  # landed last
    assert index.refresh() == 1
    window = build_window(shards, config, "az4672", index)
    assert [Path(piece.path).name for piece in window.pieces] == ["gen0000-task00000.parquet"]
    fresh = WindowIndex(shards)  # a new index (a restarted trainer) has only the names to go by
    fresh.refresh()
    assert Path(build_window(shards, config, "az4672", fresh).pieces[0].path).name == "gen0000-task00002.parquet"


@pytest.mark.slow
def test_the_driver_records_producer_shards_and_stops(
    local_ray: Any, producer_module: ModuleType, template: str, tmp_path: Path
) -> None:
    """The real driver with producers as its pool: shards recorded with their
    digests in batched lines; ``stop`` ends the run resumable."""
    from tests.helpers.runs import FIT_TWO_CPUS

    from actors.async_loop import run_async
    Producer = producer_module.Producer

    overrides = [f"{k}={v}" for k, v in FIT_TWO_CPUS.items()]
    config = load_config(ROOT / "params.yaml", preset="tiny", overrides=[*overrides, "selfplay.cpus_per_worker=0.25",
                                                                         "selfplay.workers=2", "run.generations=50"])  # fmt: skip
    out = tmp_path / "run"
    games = out / "games.jsonl"
    stop = threading.Event()

    class Fast(Producer):
        def __init__(self, config: dict[str, Any], shards: str) -> None:
            super().__init__(config, shards, template, rate=2000.0)

    def watch() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not games.exists() or len(games.read_text().splitlines()) < 6):
            time.sleep(0.2)
        stop.set()

    threading.Thread(target=watch, daemon=True).start()
    result = run_async(config, out, pool_actor=Fast, stop=stop)
    assert result["stopped"]
    lines = [json.loads(line) for line in games.read_text().splitlines()]
    assert len(lines) >= 6 and all("digest" in line for line in lines)
    for line in lines:
        assert os.path.getsize(out / "shards" / f"{line['task']}.parquet") == line["digest"]["size"]
    assert len({line["task"] for line in lines}) == len(lines)
