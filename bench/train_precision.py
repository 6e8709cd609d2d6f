"""Training in bf16 beside fp32: steps/s and the loss curve on the same shards.

The same Lightning module and Trainer train the same network from the same
initial weights on the same Parquet window (a fixed set of shards, the same
batch order: the data stream is seeded), once per precision, the precisions
taking turns within each of ``--repeats`` rounds.  It prints samples/s (median
of the rounds, the first ``--warmup`` steps untimed) with the ratio to
``32-true``, then the two loss curves (the total loss, averaged over blocks of
``--every`` steps, over the rounds) and their largest difference beside the
spread of the fp32 curves between rounds (seeds): the noise.

``bf16-mixed`` pays only where the CPU computes bf16 natively (AMX-BF16 or
AVX512-BF16; ``train.precision: auto`` picks it there): on an AVX2-only CPU it
is emulated and 20-35x slower, so keep ``--steps`` small there.
``--accelerator cuda`` (or ``auto``, which takes CUDA when present) runs the
same comparison on the GPU, the steps timed between CUDA synchronisations.

    .venv/bin/python bench/train_precision.py [--steps 60] [--repeats 3] [--blocks 6] [--filters 64] [--accelerator cpu]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from train import make_window  # noqa: E402 - the bench folder's own helper

from models.net import NetConfig  # noqa: E402
from models.precision import cpu_bf16_support  # noqa: E402
from pipeline.training.config import TrainConfig  # noqa: E402
from pipeline.training.data import ShardDataModule  # noqa: E402
from pipeline.training.module import AlphaZeroModule  # noqa: E402
from pipeline.training.trainer import quiet_lightning_logging  # noqa: E402


class LossClock(pl.Callback):
    """Records the loss of every step and times the steps after the warm-up."""

    def __init__(self, warmup: int) -> None:
        self.warmup = warmup
        self.losses: list[float] = []
        self.start = 0.0
        self.end = 0.0

    def on_train_batch_start(self, trainer: pl.Trainer, *args: object) -> None:
        if trainer.global_step == self.warmup:
            synchronize()
            self.start = time.perf_counter()

    def on_train_batch_end(self, trainer: pl.Trainer, module: pl.LightningModule, outputs: Any, *args: object) -> None:
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs
        self.losses.append(float(loss))

    def on_train_end(self, trainer: pl.Trainer, module: pl.LightningModule) -> None:
        synchronize()
        self.end = time.perf_counter()


def synchronize() -> None:
    """Waits for the GPU's queued work, so a clock read covers it (nothing on a CPU)."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def run_once(net: NetConfig, config: TrainConfig, window: Path, seed: int, precision: str,
             steps: int, warmup: int, accelerator: str = "cpu") -> tuple[float, list[float]]:  # fmt: skip
    """(samples/s, per-step losses) of one run: initial weights and batch
    order from ``seed``, so the precisions of one round see the same ones."""
    config = replace(config, seed=seed)
    torch.manual_seed(seed)
    module = AlphaZeroModule(net, config)
    data = ShardDataModule(window, window / "window.json", config, net.policy_encoding)
    clock = LossClock(warmup)
    trainer = pl.Trainer(max_steps=steps, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, accelerator=accelerator, devices=1, precision=precision,  # type: ignore[arg-type]
                         callbacks=[clock], num_sanity_val_steps=0)  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.fit(module, datamodule=data)
    return (steps - warmup) * config.batch_size / (clock.end - clock.start), clock.losses


def blocks(values: list[float], every: int) -> list[float]:
    return [statistics.fmean(values[i : i + every]) for i in range(0, len(values), every)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--every", type=int, default=10, help="steps averaged per point of the loss curve")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--blocks", type=int, default=6)
    parser.add_argument("--filters", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precisions", nargs="+", default=["32-true", "bf16-mixed"])
    parser.add_argument("--accelerator", choices=["cpu", "cuda", "auto"], default="cpu",
                        help="where the steps run (auto: CUDA when present)")
    args = parser.parse_args(argv)
    if args.accelerator == "auto":
        args.accelerator = "cuda" if torch.cuda.is_available() else "cpu"
    if args.accelerator == "cuda" and not torch.cuda.is_available():
        parser.error("--accelerator cuda: no CUDA device here")
    torch.set_num_threads(args.threads)
    quiet_lightning_logging()
    net = NetConfig(blocks=args.blocks, filters=args.filters)
    config = TrainConfig(batch_size=args.batch, max_steps=args.steps, shuffle_buffer=4096, seed=0)
    bf16 = cpu_bf16_support() or "none"
    where = torch.cuda.get_device_name() if args.accelerator == "cuda" else f"native bf16: {bf16}"
    print(f"{args.blocks}x{args.filters} net, batch {args.batch}, {args.steps} steps, {args.threads} threads, "
          f"median of {args.repeats}; {args.accelerator} ({where})")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        window = Path(folder) / "shards"
        window.mkdir()
        make_window(window, positions=16_384, shards=4)
        runs: dict[str, list[tuple[float, list[float]]]] = {p: [] for p in args.precisions}
        for seed in range(args.repeats):
            for precision, done in runs.items():
                done.append(run_once(net, config, window, seed, precision, args.steps, args.warmup, args.accelerator))
    base = statistics.median(rate for rate, _ in runs[args.precisions[0]])
    curves = {p: blocks([statistics.fmean(step) for step in zip(*(l for _, l in done))], args.every)
              for p, done in runs.items()}  # fmt: skip
    reference = runs[args.precisions[0]]
    spread = max(max(abs(a - b) for a, b in zip(blocks(x[1], args.every), blocks(y[1], args.every)))
                 for x in reference for y in reference)  # fmt: skip
    for precision, done in runs.items():
        rate = statistics.median(r for r, _ in done)
        gap = max(abs(a - b) for a, b in zip(curves[precision], curves[args.precisions[0]]))
        print(f"  {precision:<11} {rate:>8,.0f} samples/s (x{rate / base:.2f})  loss curve "
              f"{' '.join(f'{v:.3f}' for v in curves[precision])}  max gap to {args.precisions[0]} {gap:.3f}")
    print(f"  {args.precisions[0]} spread between its own rounds (seeds 0..{args.repeats - 1}): {spread:.3f}")


if __name__ == "__main__":
    main()
