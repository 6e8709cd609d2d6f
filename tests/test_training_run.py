"""Training runs: a tiny net learns, wrong architectures fail clearly, a run folder is not reused by accident."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import lightning.pytorch as pl
import pytest
import torch

from models.net import AlphaZeroNet, ArchitectureMismatchError, NetConfig
from pipeline.checkpoint import save_net
from tests.helpers.cli import set_args
from tests.helpers.nets import TINY_CONFIG, TINY_NET
from zerochess.cli import main
from pipeline.config import load_config
from pipeline.training.config import TrainConfig
from pipeline.training.data import ShardDataModule
from pipeline.training.module import AlphaZeroModule
from pipeline.training.trainer import RunPaths, TrainError, train


class LossRecorder(pl.Callback):
    def __init__(self) -> None:
        self.losses: list[float] = []

    def on_train_batch_end(self, trainer: pl.Trainer, *args: object) -> None:
        self.losses.append(float(trainer.callback_metrics["loss/total"]))


def test_a_tiny_net_learns_a_tiny_dataset(shard_folder: Callable[..., Path], tmp_path: Path) -> None:
    """~100 positions, 150 Adam steps: the loss falls by more than half (it starts near log 4672 = 8.4)."""
    data_dir = shard_folder(shards=2, games=4, max_plies=12)  # every position a full search
    config = TrainConfig(
        batch_size=32,
        max_steps=150,
        optimizer="adam",
        learning_rate=3e-3,
        l2=0.0,
        shuffle_buffer=64,
        log_every=1,
    )
    pl.seed_everything(0, verbose=False)
    module = AlphaZeroModule(NetConfig.preset("tiny"), config)
    data = ShardDataModule(data_dir, tmp_path / "window.json", config, "az4672")
    recorder = LossRecorder()
    trainer = pl.Trainer(
        max_steps=config.max_steps,
        logger=False,
        enable_checkpointing=False,
        accelerator="cpu",
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=[recorder],
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two threads crawl when another process holds a core
    try:
        trainer.fit(module, datamodule=data)
    finally:
        torch.set_num_threads(threads)
    first, last = recorder.losses[0], statistics.median(recorder.losses[-10:])
    assert first > 7.0
    assert last < first / 2.5, (first, last)


def test_an_init_checkpoint_of_another_architecture_fails_clearly(
    data_dir: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.pt"
    save_net(AlphaZeroNet(replace(TINY_CONFIG, filters=4)), other)
    config = load_config(None, TINY_NET)
    with pytest.raises(
        ArchitectureMismatchError,
        match=r"other\.pt.*stem\.conv\.weight: checkpoint \(4, 119, 3, 3\) vs model \(8, 119, 3, 3\)",
    ):
        train(config, data_dir, tmp_path / "run", init_net=other)


def test_the_cli_reports_the_mismatch(
    data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.pt"
    save_net(AlphaZeroNet(replace(TINY_CONFIG, blocks=2)), other)
    args = [
        "train",
        "--params",
        "none",
        "--data",
        str(data_dir),
        "--out",
        str(tmp_path / "run"),
        "--init-checkpoint",
        str(other),
    ]
    args += set_args(TINY_NET)
    assert main(args) == 2
    error = capsys.readouterr().err
    assert (
        "zerochess train: error:" in error
        and "blocks.1.conv1.conv.weight" in error
        and str(other) in error
    )


def test_a_run_folder_with_a_checkpoint_needs_resume(data_dir: Path, tmp_path: Path) -> None:
    paths = RunPaths(tmp_path / "run")
    paths.checkpoint.parent.mkdir(parents=True)
    paths.checkpoint.write_bytes(b"not used")
    with pytest.raises(TrainError, match="--resume"):
        train(load_config(None, TINY_NET), data_dir, paths.out)
