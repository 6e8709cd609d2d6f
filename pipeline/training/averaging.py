"""An exponential moving average of the network's weights, for the net that plays.

The weights after each optimizer step are noisy around where the loss is
going; lczero-training exports a stochastic weight average instead of the
last weights for the same reason.  With ``train.weight_average_decay`` d > 0
the exported net (``net.pt``, the async trainer's candidates) is the moving
average ``avg <- d * avg + (1 - d) * weights`` taken after every step (its
first value: the weights training started from), batch-norm statistics
included; training itself goes on from the raw weights.  The average is part
of the training checkpoint, so a resumed run continues it.

Each update names the number of optimizer steps its weights have seen, and
an update for a count already taken is skipped: the trainers update at the
start of every step and once more before exporting, and a resume neither
misses nor repeats a step.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from models.net import AlphaZeroNet

__all__ = ["WeightAverage"]


class WeightAverage(nn.Module):
    """The moving average of ``net``'s parameters and buffers with per-step ``decay``."""

    def __init__(self, net: AlphaZeroNet, decay: float) -> None:
        super().__init__()
        if not 0.0 < decay < 1.0:
            raise ValueError(f"train.weight_average_decay must be in (0, 1) to average, got {decay!r}")
        self.averaged = AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(decay), use_buffers=True)
        self.register_buffer("steps_seen", torch.tensor(-1, dtype=torch.long))

    def update(self, net: AlphaZeroNet, steps: int) -> None:
        """Average in ``net``'s weights after ``steps`` optimizer steps (once per count)."""
        if steps <= int(self.steps_seen):
            return
        self.averaged.update_parameters(net)
        self.steps_seen.fill_(steps)

    def net(self) -> AlphaZeroNet:
        """A copy of the averaged network (an :class:`AlphaZeroNet`, eval mode)."""
        module = self.averaged.module
        assert isinstance(module, AlphaZeroNet)
        return copy.deepcopy(module).eval()
