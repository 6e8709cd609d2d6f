"""Training samples/s: the full path (Parquet window -> batches -> Lightning step) beside baselines.

Three ways to train the same model at the same batch size, interleaved in one run:

* ``plain``: a plain PyTorch loop (forward, the AlphaZero loss, backward, SGD
  step) on batches already decoded in memory;
* ``lightning``: the Lightning module and Trainer on the same in-memory batches;
* ``parquet``: the Lightning module and Trainer reading the replay window of
  Parquet shards through :class:`pipeline.training.data.ShardDataModule`.

``parquet / lightning`` is what the data path costs (goal >= 0.95) and
``lightning / plain`` what Lightning costs (goal >= 0.95).  Each figure is the
median of ``--repeats`` runs; the first ``--warmup`` steps of a run are not
timed.  The shards are a few real self-play games (uniform evaluator) repeated
to ``--positions`` rows: decoding does not depend on the content.

    .venv/bin/python bench/train.py [--steps 20] [--repeats 3] [--batch 256] [--blocks 6] [--filters 64] [--workers 0]
"""

from __future__ import annotations

import argparse
import itertools
import logging
import statistics
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import lightning.pytorch as pl
import pyarrow as pa
import torch
from torch.utils.data import DataLoader, IterableDataset

from models.evaluation import UniformEvaluator
from models.net import NetConfig
from models.policy import get_policy_map
from models.search_config import SearchConfig
from pipeline.config import SelfPlayConfig
from pipeline.selfplay import SelfPlayWorker, game_positions
from pipeline.shards import records_to_table, write_shard
from pipeline.training.config import TrainConfig
from pipeline.training.data import Batch, ShardDataModule, WindowDataset
from pipeline.training.module import AlphaZeroModule
from pipeline.training.optim import build_optimizer
from pipeline.training.trainer import quiet_lightning_logging
from pipeline.training.window import build_window


def make_window(folder: Path, positions: int, shards: int) -> None:
    """``shards`` shards of ``positions`` rows in all, repeating a few real games."""
    selfplay = SelfPlayConfig(
        resign_threshold=-1.0, full_search_prob=1.0, games_per_task=8, max_plies=40
    )
    records = SelfPlayWorker(UniformEvaluator(), SearchConfig(num_simulations=16), selfplay).play(
        8, seed=0
    )
    rows = [
        row for record in records for row in game_positions(record, get_policy_map("az4672"), 0)
    ]
    table = records_to_table(rows)
    per_shard = positions // shards
    repeated = pa.concat_tables([table] * (per_shard // table.num_rows + 1)).slice(0, per_shard)
    for index in range(shards):
        write_shard(repeated, folder, f"gen0000-task{index:05d}")


class Cycle(IterableDataset):
    """In-memory batches, endlessly."""

    def __init__(self, batches: list[Batch]) -> None:
        self.batches = batches

    def __iter__(self) -> Iterator[Batch]:
        return itertools.cycle(self.batches)


class StepClock(pl.Callback):
    """Times the steps after the warm-up."""

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.start = 0.0
        self.end = 0.0

    def on_train_batch_start(self, trainer: pl.Trainer, *args: object) -> None:
        if trainer.global_step == self.warmup:
            self.start = time.perf_counter()

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.end = time.perf_counter()


def plain_rate(
    net_config: NetConfig, config: TrainConfig, batches: list[Batch], steps: int, warmup: int
) -> float:
    """Samples/s of a plain PyTorch loop on in-memory batches."""
    torch.manual_seed(0)
    module = AlphaZeroModule(net_config, config)
    optimizer = build_optimizer(module.net, config)
    module.net.train()
    start = 0.0
    for step, batch in zip(range(steps), itertools.cycle(batches), strict=False):
        if step == warmup:
            start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        module.losses(batch).objective.backward()
        optimizer.step()
    return (steps - warmup) * config.batch_size / (time.perf_counter() - start)


def lightning_rate(
    net_config: NetConfig,
    config: TrainConfig,
    steps: int,
    warmup: int,
    *,
    batches: list[Batch] | None = None,
    data: ShardDataModule | None = None,
) -> float:
    """Samples/s of the Lightning module and Trainer on in-memory batches or on the Parquet window."""
    torch.manual_seed(0)
    module = AlphaZeroModule(net_config, config)
    clock = StepClock(warmup)
    trainer = pl.Trainer(
        max_steps=steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        accelerator="cpu",
        callbacks=[clock],
    )
    if data is not None:
        trainer.fit(module, datamodule=data)
    else:
        trainer.fit(module, DataLoader(Cycle(batches or []), batch_size=None))
    return (steps - warmup) * config.batch_size / (clock.end - clock.start)


def decode_rate(
    data: ShardDataModule, net_config: NetConfig, config: TrainConfig, count: int
) -> float:
    """Positions/s of the batch stream alone (read, shuffle, decode)."""
    assert data.window is not None
    stream = iter(WindowDataset(data.window, config, net_config.policy_encoding))
    started = time.perf_counter()
    for _ in range(count):
        next(stream)
    return count * config.batch_size / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20, help="steps per timed run")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps at the start of a run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--filters", type=int, default=64)
    parser.add_argument(
        "--workers", type=int, default=0, help="DataLoader workers of the parquet path"
    )
    parser.add_argument("--positions", type=int, default=16_384, help="positions in the window")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = default)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    quiet_lightning_logging()
    logging.getLogger("lightning").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", ".*does not have many workers.*")
    warnings.filterwarnings("ignore", ".*LeafSpec.*")
    if args.threads:
        torch.set_num_threads(args.threads)
    net_config = NetConfig(blocks=args.blocks, filters=args.filters)
    config = TrainConfig(
        batch_size=args.batch, shuffle_buffer=8192, loader_workers=args.workers, log_every=10
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_window(folder / "shards", args.positions, shards=4)
        data = ShardDataModule(
            folder / "shards", folder / "window.json", config, net_config.policy_encoding
        )
        data.prepare_data()
        data.setup("fit")
        stream = iter(
            WindowDataset(build_window(folder / "shards", config, "az4672"), config, "az4672")
        )
        batches = [next(stream) for _ in range(8)]
        print(
            f"net {args.blocks}x{args.filters}, batch {args.batch}, {args.steps} steps ({args.warmup} untimed), "
            f"{args.repeats} repeats, torch threads {torch.get_num_threads()}, loader workers {args.workers}"
        )
        print(
            f"batch stream alone (read + shuffle + decode): {decode_rate(data, net_config, config, 30):,.0f} positions/s"
        )
        rates: dict[str, list[float]] = {"plain": [], "lightning": [], "parquet": []}
        for _ in range(args.repeats):
            rates["plain"].append(plain_rate(net_config, config, batches, args.steps, args.warmup))
            rates["lightning"].append(
                lightning_rate(net_config, config, args.steps, args.warmup, batches=batches)
            )
            data = ShardDataModule(
                folder / "shards",
                folder / "window.json",
                config,
                net_config.policy_encoding,
                reuse_window=True,
            )
            rates["parquet"].append(
                lightning_rate(net_config, config, args.steps, args.warmup, data=data)
            )
    medians = {name: statistics.median(values) for name, values in rates.items()}
    print(f"{'path':<44}{'samples/s (median)':>20}   runs")
    labels = {
        "plain": "plain PyTorch loop, in-memory tensors",
        "lightning": "Lightning step, in-memory tensors",
        "parquet": "Lightning step, Parquet window (full path)",
    }
    for name, label in labels.items():
        runs = ", ".join(f"{value:.0f}" for value in rates[name])
        print(f"{label:<44}{medians[name]:>20.1f}   [{runs}]")
    print(
        f"data path ratio  parquet / lightning = {medians['parquet'] / medians['lightning']:.3f}  (goal >= 0.95)"
    )
    print(
        f"Lightning ratio  lightning / plain   = {medians['lightning'] / medians['plain']:.3f}  (goal >= 0.95)"
    )


if __name__ == "__main__":
    main()
