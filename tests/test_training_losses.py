"""The AlphaZero loss, its L2 term, the optimizer, the schedule and the train config."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from models.net import AlphaZeroNet, NetConfig
from pipeline.config import ConfigError, load_config
from pipeline.training.config import TrainConfig
from pipeline.training.losses import decayed_weights, loss_terms
from pipeline.training.module import AlphaZeroModule
from pipeline.training.optim import StepSchedule, build_optimizer
from tests.helpers.nets import binary_planes
from tests.helpers.training import fit_logged

TINY = NetConfig.preset("tiny")
L2 = 1e-3  # large enough to matter next to the other terms


def two_positions() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A batch of 2: random planes, a spread pi and a peaked pi, z = +1 and -1."""
    planes = binary_planes(2, seed=3)
    pi = torch.zeros(2, TINY.policy_size)
    pi[0, [10, 200, 3000]] = torch.tensor([0.5, 0.3, 0.2])
    pi[1, 77] = 1.0
    return planes, pi, torch.tensor([1.0, -1.0])


def by_hand(net: AlphaZeroNet, batch: tuple[torch.Tensor, ...], c: float) -> dict[str, float]:
    """The loss terms in float64 numpy, from the network's outputs and its named parameters."""
    planes, pi, z = batch
    with torch.no_grad():
        logits, value = (t.double().numpy() for t in net(planes))
    pi_np, z_np = pi.double().numpy(), z.double().numpy()
    log_p = (
        logits
        - np.log(np.exp(logits - logits.max(1, keepdims=True)).sum(1, keepdims=True))
        - logits.max(1, keepdims=True)
    )
    policy = float(np.mean(-(pi_np * log_p).sum(1)))
    value_mse = float(np.mean((z_np - value) ** 2))
    # Conv and linear weights are the parameters with 2+ dimensions; BN scales/shifts and biases have one.
    l2 = c * sum(float((p.detach().double() ** 2).sum()) for p in net.parameters() if p.dim() >= 2)
    return {
        "loss/policy": policy,
        "loss/value": value_mse,
        "loss/l2": l2,
        "loss/total": policy + value_mse + l2,
        "metrics/policy_top1": float(np.mean(logits.argmax(1) == pi_np.argmax(1))),
        "metrics/value_sign_accuracy": float(np.mean(np.sign(value) == z_np)),
    }


@pytest.mark.parametrize("l2_mode", ["loss", "optimizer"])
def test_logged_loss_terms_equal_a_hand_computation(l2_mode: str) -> None:
    torch.manual_seed(0)
    config = TrainConfig(batch_size=2, max_steps=1, l2=L2, l2_mode=l2_mode, log_every=1)
    module = AlphaZeroModule(TINY, config)
    batch = two_positions()
    expected = by_hand(
        module.net, batch, L2
    )  # train mode (batch statistics), as the training step sees it
    logged = fit_logged(module, DataLoader([batch], batch_size=None), 1)[0]
    for key, value in expected.items():
        assert logged[key] == pytest.approx(value, rel=1e-5, abs=1e-7), key
    assert logged["lr"] == pytest.approx(config.learning_rate)


def test_l2_covers_conv_and_linear_weights_only() -> None:
    net = AlphaZeroNet(replace(TINY, se_ratio=4))
    decayed = {id(p) for p in decayed_weights(net)}
    names = {name for name, p in net.named_parameters() if id(p) in decayed}
    assert names == {name for name, p in net.named_parameters() if p.dim() >= 2}
    assert not any(".bn." in name or name.endswith(".bias") for name in names)
    assert (
        "stem.conv.weight" in names
        and "value_head.fc2.weight" in names
        and "blocks.0.se.fc1.weight" in names
    )

    batch = two_positions()
    logits, value = net(batch[0])

    def l2_now() -> float:
        return float(
            loss_terms(logits, value, batch[1], batch[2], decayed_weights(net), l2=L2).l2.detach()
        )

    before = l2_now()
    with torch.no_grad():
        net.stem.bn.weight.mul_(5.0)
        net.stem.bn.bias.add_(3.0)
        net.policy_head.out.bias.add_(3.0)
    assert l2_now() == before
    with torch.no_grad():
        net.stem.conv.weight.mul_(2.0)
    assert l2_now() > before


def test_weight_decay_in_the_optimizer_is_the_same_l2() -> None:
    """One SGD step with L2 in the loss equals one with weight_decay = 2c on the same weights."""
    batch = two_positions()
    nets = []
    for mode in ("loss", "optimizer"):
        torch.manual_seed(1)
        config = TrainConfig(l2=L2, l2_mode=mode, learning_rate=0.1)
        module = AlphaZeroModule(TINY, config)
        optimizer = build_optimizer(module.net, config)
        module.losses(batch).objective.backward()
        optimizer.step()
        nets.append(module.net)
    for (name, a), b in zip(
        nets[0].state_dict().items(), nets[1].state_dict().values(), strict=True
    ):
        assert torch.allclose(a, b, atol=1e-6), name


def test_decisive_free_batch_has_no_value_sign_accuracy() -> None:
    planes, pi, _ = two_positions()
    logits, value = AlphaZeroNet(TINY)(planes)
    terms = loss_terms(logits, value, pi, torch.zeros(2), [], l2=0.0)
    assert math.isnan(float(terms.value_sign_accuracy))
    assert float(terms.l2) == 0.0


def test_step_schedules_of_the_papers() -> None:
    alphazero = StepSchedule(milestones=(100, 200, 300), decay=0.1)
    rates = [0.2 * alphazero(step) for step in (0, 99, 100, 199, 200, 300, 10_000)]
    assert rates == pytest.approx([0.2, 0.2, 0.02, 0.02, 0.002, 0.0002, 0.0002])
    alphago = StepSchedule(step_size=50, decay=0.1)
    assert [0.003 * alphago(step) for step in (0, 49, 50, 100)] == pytest.approx(
        [0.003, 0.003, 0.0003, 0.00003]
    )
    assert StepSchedule()(12345) == 1.0


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("train.optimizer=rmsprop", "train.optimizer"),
        ("train.lr_milestones=[300, 200]", "train.lr_milestones"),
        ("train.lr_milestones=[100]", None),
        ("train.momentum=1.0", "train.momentum"),
        ("train.l2_mode=both", "train.l2_mode"),
        ("train.window_exponent=0", "train.window_exponent"),
        ("train.batch_size=0", "train.batch_size"),
        ("train.precision=8-bit", "train.precision"),
    ],
)
def test_train_config_validation_names_the_key(override: str, message: str | None) -> None:
    if message is None:
        assert load_config(None, [override]).train.lr_milestones == (100,)
        return
    with pytest.raises(ConfigError, match=message):
        load_config(None, [override])
    with pytest.raises(ConfigError, match="train.lr_step_size"):
        load_config(None, ["train.lr_milestones=[10]", "train.lr_step_size=5"])
