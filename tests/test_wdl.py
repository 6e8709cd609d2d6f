"""The win/draw/loss value head (``net.value_head: wdl``): outputs, checkpoints,
mismatch errors, targets, the loss, and a tiny net that learns outcomes.

The folded, traced and ONNX nets of a WDL head are checked where the scalar
ones are: ``tests/test_precision.py`` and ``tests/test_export.py``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import chess
import lightning.pytorch as pl
import numpy as np
import pyarrow as pa
import pytest
import torch
import torch.nn.functional as F

from models.net import AlphaZeroNet, NetConfig, net_from_state, net_state
from models.net_evaluator import NetEvaluator
from models.search_backend import search_position
from models.search_config import SearchConfig
from pipeline.checkpoint import load_net, save_net
from pipeline.training.config import TrainConfig
from pipeline.training.data import ShardDataModule
from pipeline.training.losses import loss_terms
from pipeline.training.module import AlphaZeroModule
from pipeline.training.targets import value_targets, wdl_targets
from tests.helpers.nets import binary_planes, head_mismatch_messages, tiny_net
from tests.helpers.shards import make_shards
from tests.helpers.training import fit_logged

pytestmark = pytest.mark.usefixtures("torch_threads")  # one torch thread (tests/conftest.py)

SCALAR = NetConfig.preset("tiny")
WDL = NetConfig.preset("tiny", value_head="wdl")


# ---------------------------------------------------------------- the head


def test_wdl_head_shapes_ranges_and_value_is_win_minus_loss() -> None:
    net = tiny_net(0, WDL)
    with torch.no_grad():
        output = net.forward_heads(binary_planes(5))
        logits, value = net(binary_planes(5))
    assert output.policy_logits.shape == (5, WDL.policy_size)
    assert output.wdl_logits is not None and output.wdl_logits.shape == (5, 3)
    assert value.shape == (5,) and bool(((value >= -1) & (value <= 1)).all())
    probabilities = F.softmax(output.wdl_logits, dim=1)
    torch.testing.assert_close(value, probabilities[:, 0] - probabilities[:, 2])
    torch.testing.assert_close(output.value, value)
    torch.testing.assert_close(output.policy_logits, logits)


def test_a_scalar_net_has_no_wdl_logits_and_the_same_forward() -> None:
    net = tiny_net(0, SCALAR)
    with torch.no_grad():
        output = net.forward_heads(binary_planes(3))
        logits, value = net(binary_planes(3))
    assert output.wdl_logits is None
    assert torch.equal(output.value, value) and torch.equal(output.policy_logits, logits)


def test_the_default_is_scalar_and_the_parameters_differ_only_in_the_last_layer() -> None:
    assert NetConfig().value_head == "scalar"
    scalar, wdl = tiny_net(0, SCALAR).state_dict(), tiny_net(0, WDL).state_dict()
    assert scalar.keys() == wdl.keys()
    differ = sorted(k for k in scalar if scalar[k].shape != wdl[k].shape)
    assert differ == ["value_head.fc2.bias", "value_head.fc2.weight"]


# ---------------------------------------------------------------- checkpoints


def test_state_and_file_round_trip_keep_the_head(tmp_path: Path) -> None:
    net = tiny_net(0, WDL)
    state = net_state(net)
    assert state["config"]["value_head"] == "wdl"
    x = binary_planes(4)
    with torch.no_grad():
        want = net(x)
        for clone in (net_from_state(state), load_net(save_net(net, tmp_path / "net.pt"))):
            assert clone.config.value_head == "wdl"
            got = clone(x)
            assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_an_old_checkpoint_without_the_key_loads_as_scalar(tmp_path: Path) -> None:
    net = tiny_net(0, SCALAR)
    state = net_state(net)
    del state["config"]["value_head"]
    torch.save(state, tmp_path / "old.pt")
    loaded = load_net(tmp_path / "old.pt")
    assert loaded.config.value_head == "scalar"
    with torch.no_grad():
        assert torch.equal(loaded(binary_planes(2))[1], net(binary_planes(2))[1])


@pytest.mark.parametrize(("stored", "model"), [("wdl", "scalar"), ("scalar", "wdl")])
def test_loading_the_other_head_names_value_head_and_both_values(
    tmp_path: Path, stored: str, model: str
) -> None:
    source = tiny_net(0, NetConfig.preset("tiny", value_head=stored))
    target = AlphaZeroNet(NetConfig.preset("tiny", value_head=model))
    expected = rf"value_head: checkpoint '{stored}' vs model '{model}'"
    message, _, resumed = head_mismatch_messages(source, target, expected, tmp_path)  # resumed: a training checkpoint
    assert "\n" not in message and "fc2" not in message and "(1 mismatches)" in message
    assert "\n" not in resumed


# ---------------------------------------------------------------- targets and loss


def _table(root_q: list[float], visits: list[int]) -> pa.Table:
    return pa.table(
        {
            "root_q": pa.array(root_q, pa.float32()),
            "root_visits": pa.array(visits, pa.int32()),
            "termination": pa.array(["checkmate"] * len(root_q)).dictionary_encode(),
        }
    )


def test_wdl_targets_of_z_q_and_mix() -> None:
    table = _table([0.5, -1.0, 0.2, 0.8], [16, 16, 16, 0])  # the last row has no q
    z = np.array([1.0, -1.0, 0.0, 0.0], dtype=np.float32)
    np.testing.assert_array_equal(
        wdl_targets(table, z, "z", 0.5), [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 0]]
    )
    np.testing.assert_allclose(
        wdl_targets(table, z, "q", 0.5),
        [[0.75, 0, 0.25], [0, 0, 1], [0.6, 0, 0.4], [0, 1, 0]],
        rtol=1e-6,
    )
    mix = wdl_targets(table, z, "mix", 0.25)
    np.testing.assert_allclose(
        mix,
        [[0.9375, 0, 0.0625], [0, 0, 1], [0.15, 0.75, 0.1], [0, 1, 0]],
        rtol=1e-6,
    )
    assert mix.dtype == np.float32
    np.testing.assert_allclose(mix.sum(axis=1), 1.0, rtol=1e-6)
    # W - L of the distribution is the scalar head's target.
    for target in ("z", "q", "mix"):
        wdl = wdl_targets(table, z, target, 0.25)
        np.testing.assert_allclose(
            wdl[:, 0] - wdl[:, 2], value_targets(table, z, target, 0.25), atol=1e-6
        )


def test_the_wdl_value_loss_is_the_cross_entropy_and_the_scalar_loss_is_unchanged() -> None:
    torch.manual_seed(0)
    logits = torch.randn(4, 10)
    pi = F.softmax(torch.randn(4, 10), dim=1)
    wdl_logits = torch.randn(4, 3)
    target = torch.tensor([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [0.5, 0.25, 0.25]])
    value = F.softmax(wdl_logits, dim=1)[:, 0] - F.softmax(wdl_logits, dim=1)[:, 2]
    terms = loss_terms(logits, value, pi, target, [], l2=0.0, wdl_logits=wdl_logits)
    by_hand = -(target.double() * F.log_softmax(wdl_logits.double(), dim=1)).sum(1).mean()
    assert float(terms.value) == pytest.approx(float(by_hand), rel=1e-6)
    assert float(terms.total) == pytest.approx(float(terms.policy + terms.value), rel=1e-6)
    # Decisive rows are those whose W - L is not 0: rows 0, 2 and 3.
    correct = (torch.sign(value) == torch.tensor([1.0, 0.0, -1.0, 0.25])) & (
        torch.tensor([True, False, True, True])
    )
    assert float(terms.value_sign_accuracy) == pytest.approx(float(correct.sum()) / 3)
    # The scalar path: exactly the mean squared error, as before.
    z = torch.tensor([1.0, 0.0, -1.0, 0.5])
    scalar = loss_terms(logits, torch.tanh(wdl_logits[:, 0]), pi, z, [], l2=0.0)
    assert torch.equal(scalar.value, (z - torch.tanh(wdl_logits[:, 0])).pow(2).mean())


def test_a_target_of_the_wrong_shape_is_refused() -> None:
    logits, pi = torch.zeros(2, 5), torch.full((2, 5), 0.2)
    with pytest.raises(ValueError, match=r"WDL value head needs targets \[B, 3\], got \(2,\)"):
        loss_terms(
            logits, torch.zeros(2), pi, torch.zeros(2), [], l2=0.0, wdl_logits=torch.zeros(2, 3)
        )
    with pytest.raises(ValueError, match=r"scalar value head needs targets \[B\], got \(2, 3\)"):
        loss_terms(logits, torch.zeros(2), pi, torch.zeros(2, 3), [], l2=0.0)


# ---------------------------------------------------------------- learning


def test_a_tiny_wdl_net_learns_fixed_outcomes() -> None:
    """Six positions, two won, two drawn, two lost: after 150 Adam steps on the
    real loss the predicted distribution puts most mass on each one's outcome."""
    torch.manual_seed(0)
    net = AlphaZeroNet(dataclasses.replace(WDL, blocks=1, filters=8))
    x = binary_planes(6, seed=1)
    outcome = torch.tensor([0, 0, 1, 1, 2, 2])
    target = F.one_hot(outcome, 3).float()
    pi = torch.zeros(6, WDL.policy_size)
    pi[:, 0] = 1.0
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    net.train()
    for _ in range(150):
        output = net.forward_heads(x)
        terms = loss_terms(output.policy_logits, output.value, pi, target, [], l2=0.0,
                           wdl_logits=output.wdl_logits)  # fmt: skip
        optimizer.zero_grad()
        terms.objective.backward()
        optimizer.step()
    net.eval()
    with torch.no_grad():
        output = net.forward_heads(x)
    assert output.wdl_logits is not None
    probabilities = F.softmax(output.wdl_logits, dim=1)
    assert torch.equal(probabilities.argmax(dim=1), outcome)
    assert bool((probabilities[torch.arange(6), outcome] > 0.6).all()), probabilities
    assert bool((output.value[:2] > 0.5).all() and (output.value[4:] < -0.5).all())


@pytest.mark.parametrize("value_target", ["z", "mix"])
def test_a_training_step_through_the_lightning_module(tmp_path: Path, value_target: str) -> None:
    make_shards(tmp_path / "shards", shards=1, games=2, max_plies=8)
    config = TrainConfig(batch_size=8, max_steps=2, shuffle_buffer=8, log_every=1, l2=0.0,
                         value_target=value_target)  # fmt: skip
    pl.seed_everything(0, verbose=False)
    module = AlphaZeroModule(WDL, config)
    data = ShardDataModule(tmp_path / "shards", tmp_path / "window.json", config, "az4672",
                           value_head="wdl")  # fmt: skip
    data.prepare_data()
    data.setup("fit")
    _, _, target = next(iter(data.train_dataloader()))
    assert target.shape == (8, 3)
    torch.testing.assert_close(target.sum(dim=1), torch.ones(8))
    before = module.net.value_head.fc2.weight.detach().clone()
    logged = fit_logged(module, data, 2)[0]
    assert {"loss/policy", "loss/value", "loss/l2", "loss/total"} <= set(logged)
    assert np.isfinite(logged["loss/value"]) and logged["loss/value"] > 0
    assert not torch.equal(module.net.value_head.fc2.weight, before)


# ---------------------------------------------------------------- search


def test_both_search_backends_search_with_a_wdl_net() -> None:
    """The evaluator hands the search W - L: the python reference and the
    native core give the same visits from it."""
    evaluator = NetEvaluator(tiny_net(0, dataclasses.replace(WDL, blocks=1, filters=8)))
    board = chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R b KQkq - 0 1")
    results = {}
    for backend in ("python", "native"):
        config = SearchConfig(num_simulations=48, leaves_per_batch=1, backend=backend)
        results[backend] = search_position(board, evaluator, config)
        assert results[backend].best_move in board.legal_moves
        assert int(results[backend].visits.sum()) == 48
        assert -1.0 <= results[backend].root_value <= 1.0
    python, native = results["python"], results["native"]
    assert dict(zip(python.moves, python.visits.tolist())) == dict(
        zip(native.moves, native.visits.tolist())
    )
