"""KataGo's auxiliary soft-policy target: the net's second policy output
(net.soft_policy), its target pi^(1/4) renormalised and its loss
(train.soft_policy_weight)."""

from __future__ import annotations

import pytest
import torch

from models.net import AlphaZeroNet, ArchitectureMismatchError, NetConfig, load_weights_into
from pipeline.config import ConfigError, load_config
from pipeline.training.losses import decayed_weights, loss_terms, soft_policy_target

TINY = NetConfig.preset("tiny")
SOFT = NetConfig.preset("tiny", soft_policy=True)


def _planes(batch: int, seed: int = 0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, 2, (batch, 119, 8, 8), generator=generator, dtype=torch.uint8)


def test_the_target_flattens_the_policy_and_keeps_zeros() -> None:
    pi = torch.tensor([[0.9, 0.1, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    soft = soft_policy_target(pi)
    expected = torch.tensor([0.9**0.25, 0.1**0.25, 0.0, 0.0])
    torch.testing.assert_close(soft[0], expected / expected.sum())
    torch.testing.assert_close(soft[1], pi[1])
    assert soft[0, 1] / soft[0, 0] > pi[0, 1] / pi[0, 0]  # the unlikely move gains


@pytest.mark.parametrize("encoding", ["az4672", "lc0_1858"])
def test_the_soft_output_is_for_training_only(encoding: str) -> None:
    torch.manual_seed(0)
    net = AlphaZeroNet(NetConfig.preset("tiny", soft_policy=True, policy_encoding=encoding)).eval()
    planes = _planes(3)
    output = net.forward_heads(planes)
    assert output.soft_policy_logits is not None
    assert output.soft_policy_logits.shape == output.policy_logits.shape == (3, net.policy_size)
    assert not torch.allclose(output.soft_policy_logits, output.policy_logits)
    logits, value = net(planes)
    torch.testing.assert_close(logits, output.policy_logits)
    torch.testing.assert_close(value, output.value)
    assert net.forward_heads(planes, auxiliary=False).soft_policy_logits is None
    assert AlphaZeroNet(TINY).forward_heads(planes).soft_policy_logits is None


def test_a_checkpoint_of_the_other_kind_is_named() -> None:
    with pytest.raises(ArchitectureMismatchError, match="soft_policy: checkpoint True vs model False"):
        load_weights_into(AlphaZeroNet(TINY), AlphaZeroNet(SOFT).state_dict())
    with pytest.raises(ArchitectureMismatchError, match="soft_policy: checkpoint False vs model True"):
        load_weights_into(AlphaZeroNet(SOFT), AlphaZeroNet(TINY).state_dict())


def test_the_weight_needs_the_output() -> None:
    with pytest.raises(ConfigError, match="train.soft_policy_weight"):
        load_config(None, ["train.soft_policy_weight=8"])
    config = load_config(None, ["train.soft_policy_weight=8", "net.soft_policy=true"])
    assert config.train.soft_policy_weight == 8.0


def test_the_loss_adds_the_weighted_term() -> None:
    torch.manual_seed(1)
    net = AlphaZeroNet(SOFT)
    output = net.forward_heads(_planes(4))
    pi = torch.softmax(torch.randn(4, net.policy_size), dim=1)
    z = torch.tensor([1.0, -1.0, 0.0, 1.0])
    common = {"weights": decayed_weights(net), "l2": 1e-4}
    plain = loss_terms(output.policy_logits, output.value, pi, z, **common)
    weighted = loss_terms(output.policy_logits, output.value, pi, z, **common,
                          soft_logits=output.soft_policy_logits, soft_weight=8.0)  # fmt: skip
    expected = -(soft_policy_target(pi) * torch.log_softmax(output.soft_policy_logits, dim=1)).sum(1).mean()
    torch.testing.assert_close(weighted.soft_policy, expected)
    torch.testing.assert_close(weighted.total, plain.total + 8.0 * expected)
    assert float(plain.soft_policy) == 0.0


def test_a_tiny_net_learns_the_soft_target() -> None:
    """Trained on the soft term alone, the soft output comes to rank the
    unlikely moves of a fixed policy target as pi^(1/4) does."""
    torch.manual_seed(2)
    net = AlphaZeroNet(SOFT)
    planes = _planes(4, seed=5)
    pi = torch.zeros(4, net.policy_size)
    pi[:, :4] = torch.tensor([0.85, 0.1, 0.04, 0.01])
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    target = soft_policy_target(pi)

    def divergence() -> float:
        with torch.no_grad():
            log_q = torch.log_softmax(net.forward_heads(planes).soft_policy_logits, dim=1)
            return float((target * (torch.log(target.clamp(min=1e-12)) - log_q)).sum(1).mean())

    before = divergence()
    for _ in range(150):
        output = net.forward_heads(planes)
        terms = loss_terms(output.policy_logits, output.value, pi, torch.zeros(4), [], l2=0.0,
                           value_weight=0.0, soft_logits=output.soft_policy_logits, soft_weight=1.0)  # fmt: skip
        optimizer.zero_grad()
        (terms.soft_policy).backward()
        optimizer.step()
    assert divergence() < 0.1 * before
    net.eval()
    with torch.no_grad():
        probabilities = torch.softmax(net.forward_heads(planes).soft_policy_logits, dim=1)[0, :4]
    assert probabilities[0] > probabilities[1] > probabilities[2] > probabilities[3]
    assert probabilities[3] > 0.1  # pi gives the last move 1%, its target 17%
