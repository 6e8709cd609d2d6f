"""The continuous trainer's stream over a moving window (pipeline/training/moving.py):
a move reads only the shards that landed and mixes their rows into the loaded
group; the next group comes from the window as it is then."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from pipeline.shards import list_shards
from pipeline.training.batches import GroupArrays, stream_columns
from pipeline.training.data import StreamSpec, load_group
from pipeline.training.moving import MovingStream
from pipeline.training.window import TrainDataError, build_window
from tests.helpers import ROOT
from tests.helpers.shards import STREAM_BATCH, STREAM_CONFIG, make_shards, stream_spec

pytest.importorskip("models._native")


def row_keys(directory: Path) -> dict[bytes, str]:
    """Each training row's bytes (planes, pi, target) -> its shard, for rows that occur once."""
    owners: dict[bytes, list[str]] = {}
    spec = stream_spec(directory)
    for piece in spec.pieces:
        arrays = GroupArrays.of(load_group((piece,), stream_columns(spec)), spec)
        for key in keys_of(arrays.batch(np.arange(len(arrays.target)))):
            owners.setdefault(key, []).append(Path(piece.path).name)
    return {key: names[0] for key, names in owners.items() if len(names) == 1}


def keys_of(batch: tuple[torch.Tensor, ...]) -> list[bytes]:
    planes, pi, target = batch[:3]
    return [planes[i].numpy().tobytes() + pi[i].numpy().tobytes() + target[i].numpy().tobytes()
            for i in range(planes.shape[0])]  # fmt: skip


@pytest.fixture()
def folders(tmp_path: Path) -> tuple[Path, Path]:
    """(the run's shard folder with 3 shards of generation 0, a folder with 1 of generation 1)."""
    old, new = tmp_path / "shards", tmp_path / "landing"
    old.mkdir()
    new.mkdir()
    make_shards(old, shards=3, games=3, max_plies=14, seed=1)
    make_shards(new, shards=1, games=3, max_plies=14, seed=2, generation=1)
    return old, new


def test_a_move_reads_only_what_landed_and_serves_it_within_the_group(
    folders: tuple[Path, Path],
) -> None:
    old, new = folders
    old_keys, new_keys = row_keys(old), row_keys(new)
    stream = MovingStream(stream_spec(old))
    served = keys_of(next(stream)) + keys_of(next(stream))
    assert stream.groups == 1 and stream.loading is not None
    loaded = len(old_keys)
    stream.loading.thread.join()  # the next group (chosen now, from this window) is read too
    for path in list_shards(old):  # as retention may: both groups are in memory, no file is read again
        Path(path).unlink()
    landed = shutil.copy(list_shards(new)[0], old)
    assert stream.move(build_window(old, STREAM_CONFIG, "az4672")) > 0
    while stream.left >= STREAM_BATCH:
        served += keys_of(next(stream))
    assert stream.groups == 1  # no group was loaded again
    assert len(served) == len(set(served))  # a row at most once per group
    assert set(served) <= set(old_keys) | set(new_keys)  # every row decoded as its shard has it
    from_new = [key for key in served if key in new_keys]
    assert len(from_new) >= len(new_keys) - STREAM_BATCH  # what landed, served before the group ended
    assert len(served) >= loaded + len(new_keys) - STREAM_BATCH
    next(stream)  # the next group: chosen (and read) before the move
    assert stream.groups == 2
    while stream.groups == 2:
        nxt = keys_of(next(stream))  # the one after: chosen from the window as it is now
    assert {new_keys.get(key) for key in nxt} <= {Path(landed).name, None}
    assert any(key in new_keys for key in nxt)


def test_landed_rows_are_spread_over_the_remaining_batches(folders: tuple[Path, Path]) -> None:
    old, new = folders
    stream = MovingStream(stream_spec(old))
    next(stream)
    shutil.copy(list_shards(new)[0], old)
    added = stream.move(build_window(old, STREAM_CONFIG, "az4672"))
    new_keys = row_keys(new)
    batches = []
    while stream.left >= STREAM_BATCH:
        batches.append(sum(key in new_keys for key in keys_of(next(stream))))
    assert sum(batches) >= added - STREAM_BATCH
    assert sum(count > 0 for count in batches) >= 2  # mixed in, not served as one block
    assert max(batches) < STREAM_BATCH


def test_a_move_without_new_shards_loads_nothing(folders: tuple[Path, Path]) -> None:
    old, _ = folders
    stream = MovingStream(stream_spec(old))
    next(stream)
    left = stream.left
    assert stream.move(build_window(old, STREAM_CONFIG, "az4672")) == 0
    assert stream.left == left


def test_groups_follow_the_shuffle_buffer(folders: tuple[Path, Path]) -> None:
    old, _ = folders
    spec = stream_spec(old, batch=8, shuffle=8)  # a group: pieces until 8 positions (one shard here)
    stream = MovingStream(spec)
    first = keys_of(next(stream))
    assert len(first) == 8
    assert stream.left < max(piece.rows for piece in spec.pieces)


def test_a_window_smaller_than_a_batch_is_refused(folders: tuple[Path, Path]) -> None:
    old, _ = folders
    spec = stream_spec(old, batch=100_000)
    with pytest.raises(TrainDataError, match="batch_size 100000"):
        next(MovingStream(spec))


def test_only_the_fast_decoder_is_taken(folders: tuple[Path, Path]) -> None:
    from dataclasses import replace

    with pytest.raises(ValueError, match="fast decoder"):
        MovingStream(replace(stream_spec(folders[0]), decoder="reference"))


def test_the_continuous_trainer_moves_its_stream_without_reloading(
    folders: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from models.net import AlphaZeroNet
    from pipeline import config as config_module
    from pipeline.checkpoint import save_net
    from pipeline.training import continuous

    old, new = folders
    config = config_module.load_config(ROOT / "params.yaml", preset="tiny", overrides=[
        "run.mode=async", f"train.batch_size={STREAM_BATCH}", "train.shuffle_buffer=100000",
        "train.window_positions=100000", "train.checkpoint_every=1000"])  # fmt: skip
    init = save_net(AlphaZeroNet(config.net), tmp_path / "init.pt")
    trainer = continuous.ContinuousTrainer(config, str(old), tmp_path / "trainer", str(init))
    first = trainer.run(until_step=2, every=1000)
    assert first.step == 2 and trainer.stream is not None and trainer.stream.stream.groups == 1
    landed = Path(shutil.copy(list_shards(new)[0], old)).name
    monkeypatch.setattr(continuous, "WINDOW_REFRESH_S", 0.0)  # look at the folder before every step
    report = trainer.run(until_step=4, every=1000)
    assert report.step == 4 and landed in {Path(path).name for path in report.window_paths}
    window = json.loads((tmp_path / "trainer" / continuous.WINDOW_FILE).read_text())
    assert landed in {Path(piece["path"]).name for piece in window["pieces"]}
    import time

    stream = (
        trainer.stream.stream
    )  # behind the prefetch thread, which moves it before its next batch
    deadline = time.monotonic() + 30
    while not stream.moved_positions and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stream.groups == 1 and stream.moved_positions > 0  # what landed, not a new group
    trainer.stream.close()


def test_a_restored_stream_takes_the_same_batches(folders: tuple[Path, Path]) -> None:
    old, new = folders
    spec = stream_spec(old, shuffle=60)  # groups of about two shards: several groups in the run
    straight, stopped = MovingStream(spec), MovingStream(spec)
    for stream in (straight, stopped):
        for _ in range(5):
            next(stream)
    shutil.copy(list_shards(new)[0], old)
    moved = build_window(old, STREAM_CONFIG, "az4672")
    for stream in (straight, stopped):
        stream.move(moved)
        next(stream)
    import json

    state = json.loads(json.dumps(stopped.state()))  # as the trainer's checkpoint holds it
    resumed = MovingStream.restore(replace_seed(spec, moved), state)
    for _ in range(12):
        expected, got = next(straight), next(resumed)
        assert all(torch.equal(a, b) for a, b in zip(expected, got, strict=True))
    assert resumed.groups == straight.groups > 1


def replace_seed(spec: StreamSpec, window: object) -> StreamSpec:
    """The spec a resumed trainer builds: its saved window, another seed (the stream's state has its own)."""
    from dataclasses import replace

    return replace(spec, pieces=window.pieces, seed=spec.seed + 100)  # type: ignore[attr-defined]


@pytest.mark.parametrize("preload", [True, False])
def test_preloading_the_next_group_changes_no_batch(folders: tuple[Path, Path], preload: bool) -> None:
    old, _ = folders
    spec = stream_spec(old, shuffle=40)  # groups of one or two shards: a group starts every few batches
    reference, stream = MovingStream(spec, preload=False), MovingStream(spec, preload=preload)
    for _ in range(15):
        assert all(torch.equal(a, b) for a, b in zip(next(reference), next(stream), strict=True))
    assert stream.groups == reference.groups >= 3


def test_a_next_group_that_cannot_load_fails_when_it_is_needed(folders: tuple[Path, Path]) -> None:
    old, _ = folders
    stream = MovingStream(stream_spec(old, shuffle=40))
    next(stream)
    assert stream.loading is not None
    stream.loading.thread.join()
    for piece in stream.next_pieces:
        Path(piece.path).write_bytes(b"gone bad")  # too late for the loaded copy: still served
    served_groups = stream.groups
    while stream.groups == served_groups:
        next(stream)  # the preloaded group was read before the files went bad
    for path in list_shards(old):
        Path(path).write_bytes(b"gone bad")
    stream.loading.thread.join()
    with pytest.raises((ValueError, OSError)):
        while True:
            next(stream)


def test_moved_rows_are_held_to_one_shuffle_buffer(folders: tuple[Path, Path], tmp_path: Path) -> None:
    old, new = folders
    make_shards(new, shards=3, games=3, max_plies=14, seed=5, generation=2)  # 4 shards land at once
    spec = stream_spec(old, shuffle=50)
    stream = MovingStream(spec)
    next(stream)
    for path in list_shards(new):
        shutil.copy(path, old)
    window = build_window(old, STREAM_CONFIG, "az4672")
    added = stream.move(window)
    newest = [piece for piece in window.pieces if piece.path not in {p.path for p in spec.pieces}]
    assert len(newest) == 4 and 0 < added < sum(piece.rows for piece in newest)  # not all of it
    assert stream.moved_left == added and added < 50 + max(piece.rows for piece in newest)
    moved = stream.state()["events"][-1][1]
    assert [piece["path"] for piece in moved] == [piece.path for piece in newest[: len(moved)]]  # newest first
    assert stream.move(window) == 0  # the rest is left to later groups, not read on the next move
