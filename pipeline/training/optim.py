"""Optimizer and learning-rate schedule from :class:`TrainConfig`.

The schedule is piecewise constant, as in the papers: the rate starts at
``learning_rate`` and is multiplied by ``lr_decay`` at each of
``lr_milestones`` (AlphaZero: 0.2 -> 0.02 -> 0.002 -> 0.0002), or every
``lr_step_size`` steps (the supervised AlphaGo recipe: 0.003, x0.1 per step
size). It is a callable object rather than a closure so that ``LambdaLR``
stores its fields in the checkpoint.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import torch
from torch import nn

from pipeline.training.config import TrainConfig
from pipeline.training.losses import split_decay_groups

__all__ = ["StepSchedule", "build_optimizer", "build_scheduler"]


@dataclass
class StepSchedule:
    """Learning-rate multiplier of optimizer step ``step`` (for ``LambdaLR``).

    Attributes:
        milestones: steps at which the multiplier drops by ``decay``.
        step_size: drop every this many steps instead (0 = off).
        decay: the factor of each drop.
    """

    milestones: tuple[int, ...] = ()
    step_size: int = 0
    decay: float = 0.1

    def __call__(self, step: int) -> float:
        drops = (
            step // self.step_size if self.step_size else bisect.bisect_right(self.milestones, step)
        )
        return float(self.decay**drops)


def build_optimizer(net: nn.Module, config: TrainConfig) -> torch.optim.Optimizer:
    """SGD with momentum, Adam or AdamW over two groups: conv/linear weights and the rest.

    With ``l2_mode: optimizer`` the first group gets ``weight_decay = 2 * l2``
    (the gradient of ``l2 * ||w||^2``); otherwise no group decays and the loss
    carries the L2 term.
    """
    decayed, others = split_decay_groups(net)
    decay = 2.0 * config.l2 if config.l2_mode == "optimizer" else 0.0
    groups = [
        {"params": decayed, "weight_decay": decay, "name": "decayed"},
        {"params": others, "weight_decay": 0.0, "name": "not_decayed"},
    ]
    if config.optimizer == "sgd":
        return torch.optim.SGD(
            groups,
            lr=config.learning_rate,
            momentum=config.momentum,
            nesterov=config.nesterov and config.momentum > 0,
        )
    if config.optimizer == "adam":
        return torch.optim.Adam(groups, lr=config.learning_rate)
    return torch.optim.AdamW(groups, lr=config.learning_rate)


def build_scheduler(
    optimizer: torch.optim.Optimizer, config: TrainConfig
) -> torch.optim.lr_scheduler.LambdaLR:
    """The step schedule of ``config`` (stepped once per optimizer step)."""
    schedule = StepSchedule(tuple(config.lr_milestones), config.lr_step_size, config.lr_decay)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
