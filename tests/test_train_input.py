"""The fast training input: the same batches as the reference decoder, and bad input refused.

The ``fast`` decoder of :func:`pipeline.training.data.batch_stream` (numpy
columns per shuffle group, the native ``decode_rows``) must give exactly the
tensors of the ``reference`` decoder (Arrow ``take`` + :func:`decode_batch`)
on the same shards and seed, with every value target, value head and the
moves-left head, and after a resume skip.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from pipeline.shards import ShardTableError, list_shards, read_shard, select_training_rows
from pipeline.shards.decode import (
    decode_history,
    decode_meta,
    decode_rows,
    decode_rows_reference,
    list_numpy,
)
from pipeline.training.batches import CompactBatch, expand_batch, expand_torch
from pipeline.training.config import TrainConfig
from pipeline.training.data import ShardDataModule, WindowDataset, batch_stream
from pipeline.training.window import build_window
from tests.helpers.training import same_batches

CONFIG = TrainConfig(batch_size=8, shuffle_buffer=24, seed=3)

native = pytest.importorskip("models._native")
if not hasattr(native, "decode_rows"):
    pytest.skip("the native core predates decode_rows: rebuild it", allow_module_level=True)


@pytest.fixture(scope="module")
def columns(data_dir: Path) -> tuple[np.ndarray, ...]:
    """(history, meta, offsets, index, prob) of every training row of the shards."""
    import pyarrow as pa

    table = pa.concat_tables(
        [select_training_rows(read_shard(path)) for path in list_shards(data_dir)]
    ).combine_chunks()
    offsets, index = list_numpy(table, "policy_index")
    _, prob = list_numpy(table, "policy_prob")
    return decode_history(table), decode_meta(table), offsets, index, prob


def test_native_rows_equal_the_python_reference(columns: tuple[np.ndarray, ...]) -> None:
    history, meta, offsets, index, prob = columns
    rows = np.random.default_rng(0).permutation(len(history))
    rows = np.concatenate([rows, rows[:5]])  # repeated rows too
    assert meta[rows, 0].any() and not meta[rows, 0].all()  # both sides to move
    planes, pi = native.decode_rows(history, meta, offsets, index, prob, rows, 4672)
    ref_planes, ref_pi = decode_rows_reference(history, meta, offsets, index, prob, rows, 4672)
    assert planes.dtype == np.uint8 and planes.shape == (len(rows), 119, 8, 8)
    np.testing.assert_array_equal(planes, ref_planes)
    np.testing.assert_array_equal(pi, ref_pi)
    empty = native.decode_rows(history, meta, offsets, index, prob, rows[:0], 4672)
    assert empty[0].shape == (0, 119, 8, 8) and empty[1].shape == (0, 4672)


@pytest.mark.parametrize(
    ("target", "head", "moves_left"),
    [("z", "scalar", False), ("mix", "scalar", True), ("q", "wdl", False), ("z", "wdl", True)],
)
def test_fast_stream_equals_the_reference_stream(
    data_dir: Path, target: str, head: str, moves_left: bool
) -> None:
    config = replace(CONFIG, value_target=target)
    window = build_window(data_dir, config, "az4672")

    def batches(decoder: str, skip: int = 0, count: int = 12) -> list[tuple[torch.Tensor, ...]]:
        dataset = WindowDataset(window, config, "az4672", value_head=head, moves_left=moves_left, decoder=decoder)
        stream = batch_stream(dataset.spec(0, 1), skip)
        return list(itertools.islice(stream, count))

    assert same_batches(batches("fast"), batches("reference"))  # more than one epoch
    assert same_batches(batches("fast", skip=5, count=4), batches("reference", skip=5, count=4))
    assert same_batches(batches("fast", skip=5, count=4), batches("fast")[5:9])


def test_an_unknown_decoder_is_refused(data_dir: Path) -> None:
    window = build_window(data_dir, CONFIG, "az4672")
    spec = replace(WindowDataset(window, CONFIG, "az4672").spec(0, 1), decoder="turbo")
    with pytest.raises(ValueError, match="turbo"):
        next(batch_stream(spec))


def test_bad_input_raises_instead_of_crashing(columns: tuple[np.ndarray, ...]) -> None:
    history, meta, offsets, index, prob = columns
    rows = np.arange(4)
    count = len(history)
    bad_cases = {
        "row": (history, meta, offsets, index, prob, np.array([0, count]), 4672),
        "negative row": (history, meta, offsets, index, prob, np.array([-1]), 4672),
        "shape": (history[:, :7], meta, offsets, index, prob, rows, 4672),
        "meta": (history, meta[:-1], offsets, index, prob, rows, 4672),
        "offsets": (history, meta, offsets[:-1], index, prob, rows, 4672),
        "offset range": (history, meta, offsets + len(index), index, prob, rows, 4672),
        "prob length": (history, meta, offsets, index, prob[:-1], rows, 4672),
        "policy size": (history, meta, offsets, index, prob, rows, 10),
        "zero size": (history, meta, offsets, index, prob, rows, 0),
    }
    for name, arguments in bad_cases.items():
        with pytest.raises(ValueError):
            native.decode_rows(*arguments)
        with pytest.raises(ShardTableError):
            decode_rows(*arguments)
        if name == "policy size":
            with pytest.raises(ShardTableError, match="policy size 10"):
                decode_rows_reference(*arguments)


def test_compact_batches_expand_to_the_same_batches(data_dir: Path) -> None:
    """What the loader workers pass (CompactBatch), expanded natively or with
    torch ops (the GPU path, run here on the CPU), is the reference batch."""
    config = replace(CONFIG, value_target="mix")
    window = build_window(data_dir, config, "az4672")
    spec = WindowDataset(window, config, "az4672", moves_left=True).spec(0, 1)
    compact = list(itertools.islice(batch_stream(spec, 2, compact=True), 6))
    reference = list(itertools.islice(batch_stream(replace(spec, decoder="reference"), 2), 6))
    assert all(isinstance(batch, CompactBatch) for batch in compact)
    assert same_batches([expand_batch(batch) for batch in compact], reference)
    torch_planes = [(*expand_torch(batch), *reference[i][2:]) for i, batch in enumerate(compact)]
    assert same_batches(torch_planes, reference)
    with pytest.raises(ValueError, match="fast decoder"):
        next(batch_stream(replace(spec, decoder="reference"), compact=True))


def test_the_data_module_loader_passes_compact_batches(data_dir: Path, tmp_path: Path) -> None:
    """One loader worker: compact batches cross the process boundary and the
    module's on_after_batch_transfer expands them to the reference batches."""
    module = ShardDataModule(data_dir, tmp_path / "window.json", replace(CONFIG, loader_workers=1), "az4672")
    module.prepare_data()
    module.setup("fit")
    got = [module.on_after_batch_transfer(batch, 0) for batch in itertools.islice(module.train_dataloader(), 5)]
    spec = WindowDataset(module.window, replace(CONFIG, loader_workers=1), "az4672", decoder="reference").spec(0, 1)
    assert same_batches(got, list(itertools.islice(batch_stream(spec), 5)))
