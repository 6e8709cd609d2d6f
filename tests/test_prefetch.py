"""The continuous trainer's prefetch thread (pipeline/training/prefetch.py): the
same batches as the stream, the state of the last batch served, errors raised
in the trainer's thread, a clean stop."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from pipeline.shards import list_shards
from pipeline.training.moving import MovingStream
from pipeline.training.prefetch import Prefetched
from pipeline.training.window import build_window
from tests.helpers.shards import STREAM_BATCH, STREAM_CONFIG, make_shards, stream_spec

pytest.importorskip("models._native")


@pytest.fixture()
def shards(tmp_path: Path) -> Path:
    directory = tmp_path / "shards"
    directory.mkdir()
    make_shards(directory, shards=3, games=3, max_plies=14, seed=1)
    return directory


def same(a: tuple[torch.Tensor, ...], b: tuple[torch.Tensor, ...]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


def test_prefetched_batches_and_states_are_the_streams(shards: Path) -> None:
    spec = stream_spec(shards, shuffle=60)
    plain, ahead = MovingStream(spec), Prefetched(MovingStream(spec), depth=3)
    try:
        for _ in range(10):
            assert same(next(plain), next(ahead))
            assert ahead.state() == plain.state()  # the batch served, not the ones made ahead
    finally:
        ahead.close()
    assert not ahead.thread.is_alive()


def test_a_move_reaches_the_stream_before_its_next_batch(shards: Path, tmp_path: Path) -> None:
    landing = tmp_path / "landing"
    landing.mkdir()
    make_shards(landing, shards=1, games=3, max_plies=14, seed=2, generation=1)
    ahead = Prefetched(MovingStream(stream_spec(shards)), depth=1)
    try:
        next(ahead)
        shutil.copy(list_shards(landing)[0], shards)
        ahead.move(build_window(shards, STREAM_CONFIG, "az4672"))
        for _ in range(3):  # the batches made before the move, then one after it
            next(ahead)
        assert any(event[0] == "move" for event in ahead.state()["events"])
    finally:
        ahead.close()


def test_an_error_in_the_thread_is_raised_by_next(shards: Path) -> None:
    spec = stream_spec(shards)
    for path in list_shards(shards):
        Path(path).write_bytes(b"not parquet")  # the group load fails in the thread
    ahead = Prefetched(MovingStream(spec))
    with pytest.raises((ValueError, OSError)):
        next(ahead)
    with pytest.raises(RuntimeError, match="failed earlier"):
        next(ahead)
    ahead.close()
    assert not ahead.thread.is_alive()


def test_a_depth_below_one_is_refused(shards: Path) -> None:
    with pytest.raises(ValueError, match="depth must be >= 1, got 0"):
        Prefetched(MovingStream(stream_spec(shards)), depth=0)


def test_close_stops_a_thread_blocked_on_a_full_queue(shards: Path) -> None:
    ahead = Prefetched(MovingStream(stream_spec(shards, batch=STREAM_BATCH)), depth=1)
    next(ahead)
    ahead.close()
    assert not ahead.thread.is_alive()
