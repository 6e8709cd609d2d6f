"""The exported moving average of the weights (train.weight_average_decay,
pipeline.training.averaging)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from models.net import AlphaZeroNet, NetConfig
from pipeline.config import ConfigError, load_config
from pipeline.training.averaging import WeightAverage
from pipeline.training.config import TrainConfig
from pipeline.training.module import AlphaZeroModule

TINY = NetConfig.preset("tiny")


def _nudge(net: AlphaZeroNet, amount: float) -> None:
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.add_(amount)


def test_the_average_follows_the_ema_recurrence_once_per_step() -> None:
    torch.manual_seed(0)
    net = AlphaZeroNet(TINY)
    start = [p.detach().clone() for p in net.parameters()]
    average = WeightAverage(net, decay=0.9)
    average.update(net, 0)  # the weights training starts from
    _nudge(net, 1.0)
    average.update(net, 1)
    average.update(net, 1)  # the same step again: skipped
    average.update(net, 0)  # an older one: skipped
    _nudge(net, 1.0)
    average.update(net, 2)
    for first, got in zip(start, average.net().parameters(), strict=True):
        # 0.9 * (0.9 * w + 0.1 * (w + 1)) + 0.1 * (w + 2)
        torch.testing.assert_close(got, first + 0.9 * 0.1 + 0.2)
    assert int(average.steps_seen) == 2


def test_batch_norm_statistics_are_averaged_too() -> None:
    net = AlphaZeroNet(TINY)
    average = WeightAverage(net, decay=0.5)
    average.update(net, 0)
    with torch.no_grad():
        net.stem.bn.running_mean.fill_(2.0)
    average.update(net, 1)
    torch.testing.assert_close(average.net().stem.bn.running_mean, torch.full_like(net.stem.bn.running_mean, 1.0))


def test_the_module_exports_the_average_only_when_asked() -> None:
    torch.manual_seed(1)
    plain = AlphaZeroModule(TINY, TrainConfig())
    assert plain.average is None
    exported = plain.exported_net(5)
    assert exported is not plain.net and not exported.training
    averaged = AlphaZeroModule(TINY, TrainConfig(weight_average_decay=0.5))
    averaged.update_average(0)
    _nudge(averaged.net, 2.0)
    net = averaged.exported_net(1)  # averages in the final weights first
    raw = dict(averaged.net.named_parameters())
    for name, parameter in net.named_parameters():
        torch.testing.assert_close(parameter, raw[name] - 1.0)
    assert any(key.startswith("average.") for key in averaged.state_dict())  # kept in checkpoints


def test_a_training_step_updates_the_average_with_the_previous_weights() -> None:
    torch.manual_seed(2)
    module = AlphaZeroModule(TINY, replace(TrainConfig(), weight_average_decay=0.5))
    planes = torch.randint(0, 2, (4, 119, 8, 8), dtype=torch.uint8)
    pi = torch.softmax(torch.randn(4, TINY.policy_size), dim=1)
    batch = (planes, pi, torch.tensor([1.0, -1.0, 0.0, 1.0]))
    module.log_dict = lambda *args, **kwargs: None  # type: ignore[method-assign]  # no trainer attached
    module.log = lambda *args, **kwargs: None  # type: ignore[method-assign]
    module.optimizers = lambda: torch.optim.SGD(module.net.parameters(), lr=0.1)  # type: ignore[method-assign]
    module.training_step(batch, 0)
    assert int(module.average.steps_seen) == 0  # type: ignore[union-attr]


def test_the_decay_is_checked() -> None:
    with pytest.raises(ConfigError, match="train.weight_average_decay"):
        load_config(None, ["train.weight_average_decay=1.0"])
    with pytest.raises(ValueError, match="weight_average_decay"):
        WeightAverage(AlphaZeroNet(TINY), decay=0.0)
