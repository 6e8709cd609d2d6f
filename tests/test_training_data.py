"""The replay window and the batch stream: selection, quarantine, decoding, determinism, resume."""

from __future__ import annotations

import itertools
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
from torch.utils.data import DataLoader

from pipeline.shards import (
    decode_planes,
    decode_targets,
    list_shards,
    read_shard,
    select_training_rows,
)
from pipeline.training.config import TrainConfig
from pipeline.training.data import (
    ShardDataModule,
    WindowDataset,
    assign_pieces,
    load_piece,
    worker_skip,
)
from pipeline.training.window import Piece, TrainDataError, Window, build_window, window_size
from tests.helpers.training import same_batches

CONFIG = TrainConfig(batch_size=4, shuffle_buffer=16, seed=7)


def training_counts(directory: Path) -> list[int]:
    return [select_training_rows(read_shard(path)).num_rows for path in list_shards(directory)]


def test_window_takes_the_newest_shards_and_is_exact(data_dir: Path) -> None:
    counts = training_counts(data_dir)
    paths = list_shards(data_dir)
    wanted = counts[2] + counts[1] // 2
    window = build_window(data_dir, replace(CONFIG, window_positions=wanted), "az4672")
    assert window.positions == wanted and window.size == wanted
    assert window.total_positions == sum(counts)
    newest, older = window.pieces
    assert (newest.path, newest.start, newest.stop) == (paths[2], 0, counts[2])
    assert (older.path, older.stop, older.rows) == (
        paths[1],
        counts[1],
        counts[1] // 2,
    )  # its newest rows
    whole = build_window(data_dir, CONFIG, "az4672")
    assert whole.positions == sum(counts) and len(whole.pieces) == 3


def test_a_piece_reads_the_same_rows_from_either_layout(data_dir: Path, tmp_path: Path) -> None:
    """A trainer reads only a shard's training row groups; a shard written before
    that layout (training rows mixed in among the others) gives the same rows."""
    path = list_shards(data_dir)[1]
    table = read_shard(path)
    old = tmp_path / "old.parquet"
    pq.write_table(table.sort_by([("game_id", "ascending"), ("ply", "ascending")]), old, row_group_size=7)
    training = select_training_rows(table)
    for shard in (path, str(old)):
        piece = Piece(shard, table.num_rows, training.num_rows, 2, training.num_rows - 1)
        rows = load_piece(piece, ("game_id", "ply", "full_search"))
        assert rows.column("full_search").to_pylist() == [True] * piece.rows
        keys = list(zip(rows.column("game_id").to_pylist(), rows.column("ply").to_pylist(), strict=True))
        if shard == path:
            first = keys
        assert sorted(keys) == sorted(first)  # the same positions; the order of rows is each file's
    with pytest.raises(TrainDataError, match="changed since the window was built"):
        load_piece(Piece(str(old), table.num_rows + 1, training.num_rows, 0, 1))


def test_window_file_round_trip(data_dir: Path, tmp_path: Path) -> None:
    window = build_window(data_dir, CONFIG, "az4672")
    window.save(tmp_path / "window.json")
    again = Window.load(tmp_path / "window.json")
    assert again == window and again.digest() == window.digest()
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(TrainDataError, match="bad.json"):
        Window.load(tmp_path / "bad.json")


def test_growing_window_follows_katago() -> None:
    fixed = TrainConfig(window_positions=1000)
    assert [window_size(n, fixed) for n in (10, 1000, 10**6)] == [1000, 1000, 1000]
    growing = TrainConfig(window_positions=1000, window_growth=0.4, window_exponent=0.65)
    assert window_size(500, growing) == 1000  # the data has fewer: all of it is taken anyway
    expected = 1000 * (1 + 0.4 * ((8000 / 1000) ** 0.65 - 1) / 0.65)
    assert window_size(8000, growing) == int(expected)
    sizes = [window_size(n, growing) for n in (2000, 10**4, 10**5, 10**6)]
    assert sizes == sorted(sizes) and all(
        s < n for s, n in zip(sizes, (2000, 10**4, 10**5, 10**6), strict=True)
    )


def test_a_corrupt_shard_is_quarantined_and_the_window_reaches_back(
    data_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "data"
    shutil.copytree(data_dir, folder)
    newest = Path(list_shards(folder)[-1])
    newest.write_bytes(newest.read_bytes()[:-100])  # truncated
    counts = training_counts(data_dir)
    window = build_window(folder, replace(CONFIG, window_positions=counts[2]), "az4672")
    assert newest.name not in [Path(p.path).name for p in window.pieces]
    assert window.positions == counts[2]
    assert (folder / "quarantine" / newest.name).exists()
    assert "Parquet" in (folder / "quarantine" / (newest.name + ".reason.txt")).read_text()


def test_shards_of_another_policy_encoding_are_refused(data_dir: Path) -> None:
    with pytest.raises(TrainDataError, match=r"az4672.*lc0_1858"):
        build_window(data_dir, CONFIG, "lc0_1858")


def test_an_empty_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TrainDataError, match="no training positions"):
        build_window(tmp_path, CONFIG, "az4672")


def test_batches_hold_exactly_the_window_rows(data_dir: Path) -> None:
    window = build_window(data_dir, CONFIG, "az4672")
    config = replace(CONFIG, batch_size=1)
    stream = iter(WindowDataset(window, config, "az4672"))
    epoch = [next(stream) for _ in range(window.positions)]
    assert epoch[0][0].dtype == torch.uint8 and epoch[0][0].shape == (1, 119, 8, 8)
    got = Counter(
        planes.numpy().tobytes() + pi.numpy().tobytes() + z.numpy().tobytes()
        for planes, pi, z in epoch
    )
    expected: Counter[bytes] = Counter()
    for path in list_shards(data_dir):
        table = select_training_rows(read_shard(path))
        pi, z = decode_targets(table)
        planes = decode_planes(table)
        expected.update(
            planes[i : i + 1].tobytes() + pi[i : i + 1].tobytes() + z[i : i + 1].tobytes()
            for i in range(table.num_rows)
        )
    assert got == expected


def test_the_stream_is_deterministic_under_the_seed(data_dir: Path) -> None:
    window = build_window(data_dir, CONFIG, "az4672")

    def first(config: TrainConfig, count: int = 25) -> list:
        return list(itertools.islice(iter(WindowDataset(window, config, "az4672")), count))

    assert same_batches(first(CONFIG), first(CONFIG))
    assert not same_batches(first(CONFIG), first(replace(CONFIG, seed=8)))


def test_resuming_skips_exactly_the_consumed_batches(data_dir: Path) -> None:
    window = build_window(data_dir, CONFIG, "az4672")
    fresh = list(itertools.islice(iter(WindowDataset(window, CONFIG, "az4672")), 30))
    resumed = list(
        itertools.islice(iter(WindowDataset(window, CONFIG, "az4672", start_batch=17)), 13)
    )
    assert same_batches(resumed, fresh[17:])


def test_resuming_with_loader_workers(data_dir: Path) -> None:
    """Two DataLoader workers hand out batches in turn; a resumed loader continues that sequence."""
    window = build_window(data_dir, CONFIG, "az4672")

    def loader(start: int) -> DataLoader:
        dataset = WindowDataset(window, CONFIG, "az4672", start_batch=start)
        return DataLoader(dataset, batch_size=None, num_workers=2)

    fresh = list(itertools.islice(iter(loader(0)), 12))
    resumed = list(itertools.islice(iter(loader(5)), 7))
    assert same_batches(resumed, fresh[5:])
    assert [worker_skip(5, w, 2) for w in (0, 1)] == [3, 2]


def test_consumers_get_disjoint_shards_or_disjoint_rows() -> None:
    pieces = tuple(Piece(f"s{i}.parquet", 100, 50, 0, 50) for i in range(5))
    dealt = assign_pieces(pieces, 2, seed=0)
    paths = [p.path for part in dealt for p in part]
    assert sorted(paths) == sorted(p.path for p in pieces) and len(set(paths)) == 5
    assert assign_pieces(pieces, 2, seed=0) == dealt
    few = assign_pieces(pieces[:2], 3, seed=0)  # fewer shards than consumers: row ranges
    ranges = sorted((p.path, p.start, p.stop) for part in few for p in part)
    for path in ("s0.parquet", "s1.parquet"):
        spans = [(a, b) for name, a, b in ranges if name == path]
        assert spans[0][0] == 0 and spans[-1][1] == 50
        assert all(b1 == a2 for (_, b1), (a2, _) in itertools.pairwise(spans))


def test_too_few_positions_for_a_batch(data_dir: Path) -> None:
    window = build_window(data_dir, CONFIG, "az4672")
    with pytest.raises(TrainDataError, match="fewer than train.batch_size"):
        next(
            iter(WindowDataset(window, replace(CONFIG, batch_size=window.positions + 1), "az4672"))
        )


def test_a_checkpoint_of_another_stream_is_refused(data_dir: Path, tmp_path: Path) -> None:
    module = ShardDataModule(data_dir, tmp_path / "window.json", CONFIG, "az4672")
    module.prepare_data()
    module.setup("fit")
    state = {"batches_consumed": 12, "signature": module.signature()}
    module.load_state_dict(state)
    assert module.start_batch == 12
    other = ShardDataModule(
        data_dir,
        tmp_path / "window.json",
        replace(CONFIG, batch_size=8),
        "az4672",
        reuse_window=True,
    )
    other.prepare_data()
    other.setup("fit")
    with pytest.raises(TrainDataError, match="batch_size=4.*8"):
        other.load_state_dict(state)
