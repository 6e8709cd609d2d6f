"""The moves-left head (``net.moves_left: true``): outputs, checkpoints,
mismatch errors, the evaluator's auxiliary outputs in every compile mode, the
two search backends on a net with the head, and a tiny net that learns the
plies left."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import chess
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from models.net import (
    AlphaZeroNet,
    ArchitectureMismatchError,
    NetConfig,
    load_weights_into,
    net_state,
)
from models.net_evaluator import NetEvaluator
from models.net_heads import MOVES_LEFT_SCALE
from models.search_backend import search_position
from models.search_config import SearchConfig
from pipeline.checkpoint import load_net, save_net
from tests.helpers.nets import binary_planes, head_mismatch_messages, tiny_net

pytestmark = pytest.mark.usefixtures("torch_threads")  # one torch thread (tests/conftest.py)

TINY = NetConfig.preset("tiny")
HEAD = NetConfig.preset("tiny", moves_left=True)


# ---------------------------------------------------------------- the head


def test_the_head_predicts_non_negative_plies_and_forward_is_unchanged() -> None:
    net = tiny_net(0, HEAD)
    x = binary_planes(6)
    with torch.no_grad():
        output = net.forward_heads(x)
        forward = net(x)
    assert output.moves_left is not None and output.moves_left.shape == (6,)
    assert bool((output.moves_left >= 0).all())
    assert len(forward) == 2
    assert torch.equal(forward[0], output.policy_logits) and torch.equal(forward[1], output.value)
    assert tiny_net(0, TINY).forward_heads(x).moves_left is None


def test_the_default_has_no_head_and_the_head_adds_only_its_own_parameters() -> None:
    assert NetConfig().moves_left is False
    plain, head = tiny_net(0, TINY).state_dict(), tiny_net(0, HEAD).state_dict()
    assert set(head) - set(plain) and all(key.startswith("moves_left_head.") for key in set(head) - set(plain))
    assert set(plain) <= set(head)
    with pytest.raises(ValueError, match="NetConfig.moves_left"):
        NetConfig(moves_left="yes")  # type: ignore[arg-type]


# ---------------------------------------------------------------- checkpoints


def test_checkpoints_record_the_head(tmp_path: Path) -> None:
    net = tiny_net(0, HEAD)
    assert net_state(net)["config"]["moves_left"] is True
    loaded = load_net(save_net(net, tmp_path / "net.pt"))
    assert loaded.config.moves_left
    with torch.no_grad():
        x = binary_planes(3)
        assert torch.equal(loaded.forward_heads(x).moves_left, net.forward_heads(x).moves_left)


def test_an_old_checkpoint_without_the_key_loads_without_the_head(tmp_path: Path) -> None:
    state = net_state(tiny_net(0, TINY))
    del state["config"]["moves_left"]
    torch.save(state, tmp_path / "old.pt")
    assert load_net(tmp_path / "old.pt").config.moves_left is False


@pytest.mark.parametrize(("stored", "model"), [(True, False), (False, True)])
def test_loading_the_other_kind_names_moves_left(tmp_path: Path, stored: bool, model: bool) -> None:
    source = tiny_net(0, NetConfig.preset("tiny", moves_left=stored))
    target = AlphaZeroNet(NetConfig.preset("tiny", moves_left=model))
    expected = rf"moves_left: checkpoint {stored} vs model {model}"
    direct, _, _ = head_mismatch_messages(source, target, expected, tmp_path)
    assert "(1 mismatches)" in direct and "moves_left_head." not in direct


def test_both_heads_differing_are_named_on_one_line_each() -> None:
    source = tiny_net(0, NetConfig.preset("tiny", moves_left=True, value_head="wdl"))
    with pytest.raises(ArchitectureMismatchError) as caught:
        load_weights_into(AlphaZeroNet(TINY), source.state_dict())
    assert caught.value.mismatches == (
        "moves_left: checkpoint True vs model False",
        "value_head: checkpoint 'wdl' vs model 'scalar'",
    )


# ---------------------------------------------------------------- the evaluator


@pytest.mark.parametrize("compile_mode", ["eager", "jit"])
@pytest.mark.parametrize(("value_head", "moves_left"), [("scalar", True), ("wdl", False), ("wdl", True)])
def test_the_evaluator_returns_draw_and_plies_left(compile_mode: str, value_head: str, moves_left: bool) -> None:
    net = tiny_net(0, NetConfig.preset("tiny", value_head=value_head, moves_left=moves_left))
    x = binary_planes(5, seed=2)
    with torch.no_grad():
        output = net.forward_heads(x)
    evaluator = NetEvaluator(net, compile=compile_mode, calibration_batch=8)
    assert evaluator.compiled.mode == compile_mode
    rows, indices = np.array([0, 0, 4], dtype=np.int64), np.array([1, 7, 30], dtype=np.int64)
    logits, values, aux = evaluator.evaluate_batch(x.numpy(), rows, indices)
    assert aux.dtype == np.float32 and aux.shape == (5, 2)
    draw = F.softmax(output.wdl_logits, dim=1)[:, 1] if output.wdl_logits is not None else torch.zeros(5)
    plies = output.moves_left if output.moves_left is not None else torch.zeros(5)
    np.testing.assert_allclose(aux[:, 0], draw.numpy(), atol=1e-5)
    np.testing.assert_allclose(aux[:, 1], plies.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(values, output.value.numpy(), atol=1e-5)
    np.testing.assert_allclose(logits, output.policy_logits[rows, indices].numpy(), atol=1e-4)


def test_a_scalar_net_without_the_head_gives_the_pair_as_before() -> None:
    evaluator = NetEvaluator(tiny_net(0, TINY), calibration_batch=8)
    assert len(evaluator.evaluate_batch(binary_planes(2).numpy(), np.zeros(1, np.int64), np.zeros(1, np.int64))) == 2


def test_both_backends_search_a_net_with_the_head_with_the_utility_on() -> None:
    """The evaluator hands the search D and M: the python reference and the
    native core give the same visits and the same root D and M."""
    evaluator = NetEvaluator(tiny_net(0, dataclasses.replace(HEAD, value_head="wdl", blocks=1, filters=8)))
    board = chess.Board("8/8/8/4k3/8/8/3QK3/8 w - - 0 1")
    results = {}
    for backend in ("python", "native"):
        config = SearchConfig(num_simulations=64, leaves_per_batch=2, backend=backend,
                              moves_left_threshold=0.0, moves_left_slope=0.01)  # fmt: skip
        results[backend] = search_position(board, evaluator, config)
        assert results[backend].root_moves_left > 0 and 0 < results[backend].root_draw < 1
    python, native = results["python"], results["native"]
    assert dict(zip(python.moves, python.visits.tolist())) == dict(zip(native.moves, native.visits.tolist()))
    assert native.root_moves_left == pytest.approx(python.root_moves_left, rel=1e-9)
    assert native.root_draw == pytest.approx(python.root_draw, rel=1e-9)


# ---------------------------------------------------------------- learning


def test_a_tiny_net_learns_the_plies_left() -> None:
    """Eight positions with 0 to 140 plies left: after 200 Adam steps of a
    Huber loss on plies / MOVES_LEFT_SCALE the head is within 10 plies of each."""
    torch.manual_seed(0)
    net = AlphaZeroNet(dataclasses.replace(HEAD, blocks=1, filters=8))
    x = binary_planes(8, seed=3)
    plies = torch.tensor([0.0, 4.0, 10.0, 20.0, 40.0, 70.0, 100.0, 140.0])
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    net.train()
    for _ in range(200):
        predicted = net.forward_heads(x).moves_left
        assert predicted is not None
        loss = F.huber_loss(predicted / MOVES_LEFT_SCALE, plies / MOVES_LEFT_SCALE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    net.eval()
    with torch.no_grad():
        predicted = net.forward_heads(x).moves_left
    assert predicted is not None
    assert float((predicted - plies).abs().max()) < 10.0, predicted
