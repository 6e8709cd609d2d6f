"""Training in the tests: a Lightning fit on the CPU that keeps every step's
logged metrics, and the comparison of two lists of batches."""

from __future__ import annotations

from collections.abc import Mapping

import lightning.pytorch as pl
import torch
from lightning.pytorch.loggers.logger import Logger


class CaptureLogger(Logger):
    """Keeps every logged metric in memory."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: dict[int, dict[str, float]] = {}

    @property
    def name(self) -> str:
        return "capture"

    @property
    def version(self) -> str:
        return "0"

    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        self.steps.setdefault(step or 0, {}).update(metrics)

    def log_hyperparams(self, params: object, *args: object, **kwargs: object) -> None:
        pass


def fit_logged(module: pl.LightningModule, data: object, steps: int) -> dict[int, dict[str, float]]:
    """Fit ``module`` for ``steps`` steps on CPU (no checkpoints, no bars) and
    return every step's logged metrics."""
    logger = CaptureLogger()
    trainer = pl.Trainer(max_steps=steps, logger=logger, log_every_n_steps=1, accelerator="cpu",
                         enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)  # fmt: skip
    if isinstance(data, pl.LightningDataModule):
        trainer.fit(module, datamodule=data)
    else:
        trainer.fit(module, data)
    return logger.steps


def same_batches(left: list[tuple[torch.Tensor, ...]], right: list[tuple[torch.Tensor, ...]]) -> bool:
    """Whether two lists of batches hold the same tensors (dtype, shape and values), in the same order."""
    return len(left) == len(right) and all(
        len(one) == len(two)
        and all(x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y) for x, y in zip(one, two, strict=True))
        for one, two in zip(left, right, strict=True)
    )
