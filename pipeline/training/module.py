"""The LightningModule around :class:`~models.net.AlphaZeroNet`.

``AlphaZeroModule`` holds the plain network as ``self.net`` (so its state
dict keys are ``net.<name>``), computes the AlphaZero loss term by term
(:func:`pipeline.training.losses.loss_terms`) and logs, every step:
``loss/policy``, ``loss/value``, ``loss/l2``, ``loss/total``,
``metrics/policy_top1`` (argmax of the logits equals argmax pi),
``metrics/value_sign_accuracy`` (sign(v) == z over decisive positions; left
out when a batch has none), the value term being the cross-entropy of the
win/draw/loss logits for a WDL value head (``net.value_head: wdl``; same names), ``lr`` and ``throughput/samples_per_s``
(positions per second over the steps since the previous log, data loading
included, all devices), and ``loss/moves_left`` for a net with a moves-left
head (``net.moves_left``).

Every checkpoint carries the network's :class:`~models.net.NetConfig` under
``"net_config"`` (and the format key under ``"net_format"``), so a net can be
rebuilt from a checkpoint alone (:func:`net_from_checkpoint`).
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Mapping
from typing import Any

import lightning.pytorch as pl
import torch

from models.net import NET_STATE_FORMAT, AlphaZeroNet, NetConfig, load_weights_into
from pipeline.training.averaging import WeightAverage
from pipeline.training.config import TrainConfig
from pipeline.training.data import Batch
from pipeline.training.losses import LossTerms, decayed_weights, loss_terms
from pipeline.training.optim import build_optimizer, build_scheduler

__all__ = ["AlphaZeroModule", "net_from_checkpoint"]

NET_PREFIX = "net."


class AlphaZeroModule(pl.LightningModule):
    """Trains an :class:`AlphaZeroNet` on (planes, pi, z) batches.

    Args:
        net_config: the architecture.
        config: the training parameters.
        net: start from this network (its config must be ``net_config``);
            default: a fresh one initialised from torch's current seed.
    """

    def __init__(
        self, net_config: NetConfig, config: TrainConfig, net: AlphaZeroNet | None = None
    ) -> None:
        super().__init__()
        if net is not None and net.config != net_config:
            raise ValueError(f"net has config {net.config}, expected {net_config}")
        self.net = net if net is not None else AlphaZeroNet(net_config)
        self.config = config
        # The weight average is a submodule: the training checkpoint keeps it.
        decay = config.weight_average_decay
        self.average = WeightAverage(self.net, decay) if decay > 0 else None
        self._decayed = decayed_weights(self.net)
        self._window_start: float | None = None
        self._window_samples = 0

    def forward(self, planes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.net(planes)

    def losses(self, batch: Batch) -> LossTerms:
        """The loss terms of ``batch`` with the current weights."""
        planes, pi, z = batch[:3]
        plies_left = batch[3] if len(batch) > 3 else None
        output = self.net.forward_heads(planes)
        return loss_terms(
            output.policy_logits,
            output.value,
            pi,
            z,
            self._decayed,
            l2=self.config.l2,
            value_weight=self.config.value_weight,
            l2_in_loss=self.config.l2_mode == "loss",
            wdl_logits=output.wdl_logits,
            soft_logits=output.soft_policy_logits if self.config.soft_policy_weight > 0 else None,
            soft_weight=self.config.soft_policy_weight,
            moves_left=output.moves_left,
            plies_left=plies_left,
            moves_left_weight=self.config.moves_left_weight,
        )

    def training_step(self, batch: Batch, batch_idx: int) -> torch.Tensor:
        self.update_average(self.global_step)  # the weights after the previous step
        terms = self.losses(batch)
        size = int(batch[0].shape[0])
        metrics = {
            "loss/policy": terms.policy.detach(),
            "loss/value": terms.value.detach(),
            "loss/l2": terms.l2.detach(),
            "loss/total": terms.total.detach(),
            "metrics/policy_top1": terms.policy_top1,
            **({"loss/soft_policy": terms.soft_policy.detach()} if self.config.soft_policy_weight > 0 else {}),
            **({"loss/moves_left": terms.moves_left.detach()} if terms.moves_left is not None else {}),
            "lr": torch.tensor(self.optimizers().param_groups[0]["lr"]),  # type: ignore[union-attr]
        }
        # Only on logged steps: float() waits for the device.
        if self._logs_this_step() and not math.isnan(float(terms.value_sign_accuracy)):
            metrics["metrics/value_sign_accuracy"] = terms.value_sign_accuracy
        throughput = self._throughput(size)
        if throughput is not None:
            metrics["throughput/samples_per_s"] = torch.tensor(throughput)
        self.log_dict(metrics, on_step=True, on_epoch=False, batch_size=size)
        self.log(
            "loss",
            terms.total.detach(),
            prog_bar=True,
            logger=False,
            on_step=True,
            on_epoch=False,
            batch_size=size,
        )
        return terms.objective

    def _throughput(self, size: int) -> float | None:
        """Positions/s of the steps since the previous logged step (None on a process's first step)."""
        now = time.perf_counter()
        rate = None
        if self._window_start is not None and now > self._window_start and self._window_samples:
            rate = self._window_samples / (now - self._window_start)
        if self._window_start is None or self._logs_this_step():
            self._window_start, self._window_samples = now, 0
        world = self.trainer.world_size if self._trainer is not None else 1
        self._window_samples += size * world
        return rate

    def _logs_this_step(self) -> bool:
        """Whether Lightning sends this step's metrics to the logger."""
        log_every = self.trainer.log_every_n_steps if self._trainer is not None else 1
        return (self.global_step + 1) % log_every == 0

    def configure_optimizers(self) -> dict[str, Any]:
        optimizer = build_optimizer(self.net, self.config)
        scheduler = build_scheduler(optimizer, self.config)
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "step"},
        }

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["net_format"] = NET_STATE_FORMAT
        checkpoint["net_config"] = self.net.config.to_dict()

    def update_average(self, steps: int) -> None:
        """Average in the weights after ``steps`` optimizer steps (no-op without averaging)."""
        if self.average is not None:
            self.average.update(self.net, steps)

    def exported_net(self, steps: int) -> AlphaZeroNet:
        """The net to export after ``steps`` steps: the weight average
        (``train.weight_average_decay``) or a copy of the trained net, in eval mode."""
        if self.average is None:
            return copy.deepcopy(self.net).eval()
        self.update_average(steps)
        return self.average.net()

    def net_state_dict(self) -> dict[str, torch.Tensor]:
        """The plain network's state dict (keys without the ``net.`` prefix)."""
        return self.net.state_dict()


def net_from_checkpoint(checkpoint: Mapping[str, Any]) -> AlphaZeroNet:
    """Rebuild the network of a loaded Lightning checkpoint from its own ``net_config``.

    Raises:
        ValueError: no ``net_config`` in the checkpoint.
        ArchitectureMismatchError: its weights do not fit its config.
    """
    if "net_config" not in checkpoint:
        raise ValueError("checkpoint has no net_config: not written by zerochess training")
    net = AlphaZeroNet(NetConfig.from_dict(checkpoint["net_config"]))
    state = {
        k[len(NET_PREFIX) :]: v
        for k, v in checkpoint["state_dict"].items()
        if k.startswith(NET_PREFIX)
    }
    load_weights_into(net, state)
    return net
