"""Tests for models.net: shapes, input handling, config, state helpers, learning."""

from __future__ import annotations

import dataclasses
import importlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from models.net import (
    MOVE_COUNT_PLANE,
    MOVE_COUNT_SCALE,
    NET_STATE_FORMAT,
    NO_PROGRESS_PLANE,
    NO_PROGRESS_SCALE,
    POLICY_SIZES,
    PRESETS,
    AlphaZeroNet,
    ArchitectureMismatchError,
    NetConfig,
    NetStateError,
    config_from_state,
    count_parameters,
    load_weights_into,
    net_from_state,
    net_state,
    pick_device,
)
from tests.helpers.nets import random_planes, tiny_net

TINY = PRESETS["tiny"]


pytestmark = pytest.mark.usefixtures("torch_threads")  # one torch thread (tests/conftest.py)


def lc0_gather_index() -> torch.Tensor:
    """The lc0 1858 gather index, skipping the test while models.policy is absent."""
    try:
        policy = importlib.import_module("models.policy")
    except ImportError:
        pytest.skip("models.policy not available yet")
    if not hasattr(policy, "get_policy_map"):
        pytest.skip("models.policy.get_policy_map not available yet")
    index = policy.get_policy_map("lc0_1858").gather_index
    return torch.from_numpy(np.array(index, dtype=np.int64))


# ----------------------------------------------------------------- forward


@pytest.mark.parametrize("se_ratio", [0, 4])
@pytest.mark.parametrize("encoding", ["az4672", "lc0_1858"])
def test_output_shapes_and_value_range(encoding: str, se_ratio: int) -> None:
    if encoding == "lc0_1858":
        lc0_gather_index()
    net = tiny_net(config=TINY, policy_encoding=encoding, se_ratio=se_ratio)
    with torch.no_grad():
        policy, value = net(random_planes(5))
    assert policy.shape == (5, POLICY_SIZES[encoding]) == (5, net.policy_size)
    assert value.shape == (5,)
    assert torch.isfinite(policy).all()
    assert (value.abs() <= 1).all()


def test_lc0_logits_are_gathered_from_az_logits() -> None:
    index = lc0_gather_index()
    az = tiny_net(config=TINY)
    lc0 = AlphaZeroNet(dataclasses.replace(TINY, policy_encoding="lc0_1858")).eval()
    load_weights_into(lc0, az.state_dict())  # identical parameters
    x = random_planes(3)
    with torch.no_grad():
        (p_az, v_az), (p_lc0, v_lc0) = az(x), lc0(x)
    torch.testing.assert_close(p_lc0, p_az[:, index])
    torch.testing.assert_close(v_lc0, v_az)


def test_uint8_float_and_numpy_inputs_agree() -> None:
    net = tiny_net(config=TINY, se_ratio=2)
    planes = random_planes(4)
    with torch.no_grad():
        p8, v8 = net(planes)
        pf, vf = net(planes.float())
        pn, vn = net(planes.numpy())
    torch.testing.assert_close(pf, p8)
    torch.testing.assert_close(vf, v8)
    torch.testing.assert_close(pn, p8)
    torch.testing.assert_close(vn, v8)


def test_count_planes_are_scaled_by_documented_constants() -> None:
    net = tiny_net(config=TINY)
    scale = net.input_scale.flatten()
    assert scale[MOVE_COUNT_PLANE] == pytest.approx(MOVE_COUNT_SCALE)
    assert scale[NO_PROGRESS_PLANE] == pytest.approx(NO_PROGRESS_SCALE)
    others = torch.ones(119, dtype=torch.bool)
    others[[MOVE_COUNT_PLANE, NO_PROGRESS_PLANE]] = False
    assert (scale[others] == 1).all()
    assert "input_scale" not in net.state_dict()


@pytest.mark.parametrize("shape", [(2, 118, 8, 8), (119, 8, 8), (2, 119, 8, 7)])
def test_wrong_input_shape_is_rejected(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"\(B, 119, 8, 8\)"):
        tiny_net(config=TINY)(torch.zeros(shape, dtype=torch.uint8))


def test_channels_last_matches_contiguous() -> None:
    net = tiny_net(config=TINY, se_ratio=4)
    x = random_planes(3)
    with torch.no_grad():
        p_ref, v_ref = net(x)
        net = net.to(memory_format=torch.channels_last)
        assert net.stem.conv.weight.is_contiguous(memory_format=torch.channels_last)
        p_cl, v_cl = net(x)
    torch.testing.assert_close(p_cl, p_ref, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(v_cl, v_ref, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("blocks", 0),
        ("filters", -3),
        ("filters", 2.5),
        ("se_ratio", -1),
        ("se_ratio", 17),
        ("value_channels", 0),
        ("value_hidden", True),
        ("policy_encoding", "uci"),
        ("value_head", "wdl3"),
    ],
)
def test_config_validation_names_field_and_value(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"NetConfig\.{field}.*{repr(value)}"):
        dataclasses.replace(TINY, **{field: value})


def test_from_dict_rejects_unknown_keys() -> None:
    with pytest.raises(ValueError, match=r"\['colour', 'layers'\]"):
        NetConfig.from_dict({"blocks": 2, "layers": 3, "colour": 1})


def test_from_dict_defaults_and_presets() -> None:
    assert NetConfig.from_dict({}) == NetConfig()
    assert NetConfig.preset("cpu") == NetConfig(blocks=6, filters=64)
    assert (PRESETS["tiny"].blocks, PRESETS["tiny"].filters) == (2, 16)
    assert (PRESETS["paper"].blocks, PRESETS["paper"].filters) == (20, 256)
    assert NetConfig.preset("tiny", se_ratio=4).se_ratio == 4
    with pytest.raises(ValueError, match="'huge'"):
        NetConfig.preset("huge")


@settings(max_examples=30, deadline=None)
@given(
    blocks=st.integers(1, 40),
    filters=st.integers(1, 512),
    se=st.integers(0, 512),
    encoding=st.sampled_from(sorted(POLICY_SIZES)),
)
def test_config_dict_round_trip(blocks: int, filters: int, se: int, encoding: str) -> None:
    se_ratio = se % (filters + 1)
    cfg = NetConfig(blocks=blocks, filters=filters, se_ratio=se_ratio, policy_encoding=encoding)
    assert NetConfig.from_dict(cfg.to_dict()) == cfg


# ----------------------------------------------------------------- state


def test_state_round_trip_gives_identical_outputs() -> None:
    net = tiny_net(config=TINY, se_ratio=4)
    state = net_state(net)
    assert state["format"] == NET_STATE_FORMAT
    assert state["config"] == net.config.to_dict()
    clone = net_from_state(state)
    assert clone.config == net.config and not clone.training
    x = random_planes(4)
    with torch.no_grad():
        for a, b in zip(net(x), clone(x), strict=True):
            assert torch.equal(a, b)


@pytest.mark.parametrize(
    ("mutate", "match"),
    [
        (lambda s: s.update(format="zerochess-net/0"), "format"),
        (lambda s: s.pop("format"), "format"),
        (lambda s: s["config"].update(depth=3), "depth"),
        (lambda s: s.pop("state_dict"), "state_dict"),
    ],
)
def test_malformed_state_is_rejected(mutate: object, match: str) -> None:
    state = net_state(tiny_net(config=TINY))
    state["config"] = dict(state["config"])
    mutate(state)  # type: ignore[operator]
    with pytest.raises(NetStateError, match=match):
        net_from_state(state)
    with pytest.raises(NetStateError):
        config_from_state(["not", "a", "mapping"])  # type: ignore[arg-type]


def test_loading_other_architecture_names_both_shapes() -> None:
    small = tiny_net(config=TINY)
    wide = AlphaZeroNet(dataclasses.replace(TINY, filters=32))
    with pytest.raises(ArchitectureMismatchError) as info:
        load_weights_into(wide, small.state_dict())
    message = str(info.value)
    assert "stem.conv.weight: checkpoint (16, 119, 3, 3) vs model (32, 119, 3, 3)" in message
    assert isinstance(info.value, ValueError)
    assert info.value.mismatches[0].startswith("stem.conv.")


def test_missing_and_unexpected_keys_are_named() -> None:
    with_se = tiny_net(config=TINY, se_ratio=4)
    plain = tiny_net(config=TINY)
    with pytest.raises(ArchitectureMismatchError, match=r"blocks\.0\.se\.fc1\.weight: unexpected"):
        load_weights_into(plain, with_se.state_dict())
    with pytest.raises(ArchitectureMismatchError, match=r"blocks\.0\.se\.fc1\.weight: missing"):
        load_weights_into(with_se, plain.state_dict())


def test_stored_state_inconsistent_with_config_is_rejected() -> None:
    state = net_state(tiny_net(config=TINY))
    state["config"] = {**state["config"], "blocks": 3}
    with pytest.raises(ArchitectureMismatchError, match=r"blocks\.2\.conv1\.conv\.weight: missing"):
        net_from_state(state)


# ----------------------------------------------------------------- utilities


def test_pick_device() -> None:
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert pick_device().type == expected
    assert pick_device("auto").type == expected
    assert pick_device("cpu") == torch.device("cpu")
    for bad in ("tpu", "gpu!", "mps"):
        with pytest.raises(ValueError, match=bad.replace("!", r"\!")):
            pick_device(bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present")
def test_pick_cuda_without_cuda_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="CUDA is not available"):
        pick_device("cuda")


def test_count_parameters() -> None:
    net = tiny_net(config=TINY)
    assert count_parameters(net) == sum(p.numel() for p in net.parameters())
    net.stem.conv.weight.requires_grad_(False)
    assert count_parameters(net, trainable_only=True) == count_parameters(net) - 16 * 119 * 9


# ----------------------------------------------------------------- learning


def sparse_targets(n: int, size: int, gen: torch.Generator) -> torch.Tensor:
    """Random policy targets with 3 non-zero entries per row."""
    pi = torch.zeros(n, size)
    for row in range(n):
        moves = torch.randperm(size, generator=gen)[:3]
        pi[row, moves] = torch.distributions.Dirichlet(torch.ones(3)).sample()
    return pi


def test_tiny_net_overfits_a_few_samples() -> None:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    states = random_planes(8, seed=2)
    pi = sparse_targets(8, 4672, gen)
    z = torch.tensor([-1.0, 0.0, 1.0, 1.0, -1.0, 0.0, 1.0, -1.0])
    net = AlphaZeroNet(TINY)
    optimiser = torch.optim.Adam(net.parameters(), lr=1e-2)
    for _ in range(200):
        logits, value = net(states)
        policy_loss = -(pi * F.log_softmax(logits, dim=1)).sum(1).mean()
        loss = policy_loss + F.mse_loss(value, z)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    net.eval()
    with torch.no_grad():
        logits, value = net(states)
    cross_entropy = -(pi * F.log_softmax(logits, dim=1)).sum(1).mean()
    entropy = -(pi * pi.clamp_min(1e-12).log()).sum(1).mean()
    assert cross_entropy - entropy < 0.1
    assert F.mse_loss(value, z) < 0.05
