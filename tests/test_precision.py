"""Inference precision and compiled graphs: detection, calibration, fallbacks,
and agreement of every reduced or compiled path with fp32 on a trained net."""

from __future__ import annotations

import logging
import random

import chess
import numpy as np
import pytest
import torch

import models.precision as precision_module
from models.encoding import encode_board
from models.inference_net import compile_for_inference, fold_for_inference, resolve_compile
from models.net import AlphaZeroNet, NetConfig
from models.net_evaluator import NetEvaluator
from models.policy import get_policy_map
from models.precision import PrecisionError, check_precision, choose_precision, cpu_bf16_support
from pipeline.selfplay.adjudication import PIECE_POINTS
from pipeline.training.trainer import resolve_training_precision
from tests.helpers.boards import random_board

TORCH_THREADS = 2
pytestmark = pytest.mark.usefixtures("torch_threads")  # TORCH_THREADS for the module (tests/conftest.py)


def _positions(count: int, seed: int) -> list[chess.Board]:
    """Positions from random games (a few to 60 plies in), not finished."""
    rng = random.Random(seed)
    boards: list[chess.Board] = []
    while len(boards) < count:
        board = random_board(rng, rng.randrange(2, 60))
        if not board.is_game_over():
            boards.append(board)
    return boards


def _targets(board: chess.Board) -> tuple[int, float]:
    """A synthetic teacher: the move capturing the most material (else the
    first legal move in UCI order), and the material balance squashed."""
    moves = sorted(board.legal_moves, key=lambda move: move.uci())
    gain = [PIECE_POINTS.get(board.piece_type_at(m.to_square), 0) if board.is_capture(m) and board.piece_type_at(m.to_square)
            else 0 for m in moves]  # fmt: skip
    best = moves[int(np.argmax(gain))]
    balance = sum(PIECE_POINTS.get(p.piece_type, 0) * (1 if p.color == board.turn else -1) for p in board.piece_map().values())
    return int(get_policy_map("az4672").indices(board, [best])[0]), float(np.tanh(balance / 5))


@pytest.fixture(scope="module")
def trained() -> tuple[AlphaZeroNet, list[chess.Board]]:
    """A 2x16 net trained a few hundred steps on the synthetic teacher, so its
    policy is peaked and its values spread (a random net's near-uniform
    logits would make top-1 agreement meaningless), and held-out positions."""
    torch.manual_seed(0)
    net = AlphaZeroNet(NetConfig.preset("tiny"))
    boards = _positions(384, seed=1)
    planes = torch.from_numpy(np.stack([encode_board(board) for board in boards]))
    targets = [_targets(board) for board in boards]
    policy = torch.tensor([t[0] for t in targets])
    value = torch.tensor([t[1] for t in targets], dtype=torch.float32)
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    generator = torch.Generator().manual_seed(0)
    net.train()
    for _ in range(150):
        batch = torch.randint(0, len(boards), (64,), generator=generator)
        logits, values = net(planes[batch])
        loss = torch.nn.functional.cross_entropy(logits, policy[batch]) + torch.mean((values - value[batch]) ** 2)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return net.eval(), _positions(150, seed=2)


def _outputs(evaluator: NetEvaluator, boards: list[chess.Board]) -> tuple[list[np.ndarray], np.ndarray]:
    """Legal-move logits per board and values, through ``evaluate_batch``."""
    policy_map = get_policy_map("az4672")
    moves = [list(board.legal_moves) for board in boards]
    indices = np.concatenate([policy_map.indices(board, ms) for board, ms in zip(boards, moves)])
    rows = np.repeat(np.arange(len(boards)), [len(ms) for ms in moves])
    planes = np.stack([encode_board(board) for board in boards])
    logits, values = evaluator.evaluate_batch(planes, rows, indices)[:2]  # a WDL net adds its aux
    split = np.cumsum([len(ms) for ms in moves])[:-1]
    return np.split(logits, split), values


def _agreement(reference: NetEvaluator, other: NetEvaluator, boards: list[chess.Board]) -> tuple[float, float]:
    """(top-1 legal move agreement, mean value |difference|)."""
    ref_logits, ref_values = _outputs(reference, boards)
    logits, values = _outputs(other, boards)
    top1 = np.mean([np.argmax(a) == np.argmax(b) for a, b in zip(ref_logits, logits)])
    return float(top1), float(np.mean(np.abs(ref_values - values)))


def test_the_trained_net_is_peaked(trained) -> None:
    net, boards = trained
    logits, _ = _outputs(NetEvaluator(net), boards)
    top = [np.max(np.exp(x - x.max()) / np.exp(x - x.max()).sum()) for x in logits]
    assert np.median(top) > 0.3  # far from uniform over ~30 moves


@pytest.mark.parametrize("setting", ["bf16:eager", "bf16:jit", "fp32:jit", "fp32:onnxruntime"])
def test_reduced_and_compiled_paths_agree_with_fp32(trained, setting: str) -> None:
    net, boards = trained
    precision, compiled = setting.split(":")
    reference = NetEvaluator(net, precision="fp32", compile="eager")
    other = NetEvaluator(net, precision=precision, compile=compiled, calibration_batch=8)
    assert other.precision.name == precision
    top1, value_delta = _agreement(reference, other, boards)
    assert top1 >= 0.97, setting
    assert value_delta <= 0.01, setting
    if precision == "fp32":  # a graph of the same arithmetic: equal up to rounding
        assert top1 == 1.0 and value_delta < 1e-5


@pytest.mark.slow
def test_inductor_buckets_agree_with_eager_at_every_size(trained) -> None:
    net, boards = trained
    reference = NetEvaluator(net, compile="eager")
    compiled = NetEvaluator(net, compile="inductor", calibration_batch=16)
    if compiled.compiled.fallback:
        pytest.skip(f"inductor unavailable here: {compiled.compiled.fallback}")
    for size in (1, 5, 16, 17, 40):
        ref_logits, ref_values = _outputs(reference, boards[:size])
        logits, values = _outputs(compiled, boards[:size])
        np.testing.assert_allclose(np.concatenate(logits), np.concatenate(ref_logits), atol=1e-4)
        np.testing.assert_allclose(values, ref_values, atol=1e-5)


def test_the_folded_net_equals_the_net_and_leaves_it_unchanged(trained) -> None:
    net, boards = trained
    before = {key: value.clone() for key, value in net.state_dict().items()}
    folded = fold_for_inference(net)
    planes = torch.from_numpy(np.stack([encode_board(board) for board in boards[:20]]))
    with torch.inference_mode():
        (logits, values), (ref_logits, ref_values) = folded(planes), net(planes)
    torch.testing.assert_close(logits, ref_logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(values, ref_values, atol=1e-5, rtol=1e-4)
    assert all(torch.equal(before[key], value) for key, value in net.state_dict().items())


def test_auto_picks_what_this_cpu_computes_natively() -> None:
    """On a CPU without AMX-BF16/AVX512-BF16 ``auto`` is fp32 and says why;
    with them it is whatever the calibration measured faster."""
    net = AlphaZeroNet(NetConfig.preset("tiny"))
    evaluator = NetEvaluator(net, precision="auto", calibration_batch=8)
    if cpu_bf16_support() is None:
        assert evaluator.precision.name == "fp32"
        assert "no AMX-BF16/AVX512-BF16" in evaluator.precision.reason
        assert evaluator.precision.calibration == ()
    else:
        rates = dict(evaluator.precision.calibration)
        assert evaluator.precision.name == max(rates, key=rates.get)


@pytest.mark.parametrize("faster", ["bf16", "fp32"])
def test_calibration_decides_on_a_native_bf16_cpu(monkeypatch, faster: str) -> None:
    monkeypatch.setattr(precision_module, "cpu_bf16_support", lambda: "AMX-BF16")
    calls: list[torch.dtype | None] = []
    clock = [0.0]

    def forward(dtype: torch.dtype | None) -> None:
        calls.append(dtype)
        clock[0] += 1.0 if (dtype is None) == (faster == "fp32") else 3.0

    monkeypatch.setattr(precision_module.time, "perf_counter", lambda: clock[0])
    choice = choose_precision("auto", "cpu", forward)
    assert choice.name == faster
    assert "AMX-BF16" in choice.reason and "calibration" in choice.reason
    assert {None, torch.bfloat16} == set(calls)


def test_forced_bf16_without_native_support_warns_and_runs(caplog) -> None:
    if cpu_bf16_support() is not None:
        pytest.skip("this CPU computes bf16 natively")
    with caplog.at_level(logging.WARNING, logger="models.precision"):
        evaluator = NetEvaluator(AlphaZeroNet(NetConfig.preset("tiny")), precision="bf16", calibration_batch=8)
    assert evaluator.precision.name == "bf16"
    assert any("AMX-BF16 or AVX512-BF16" in record.getMessage() for record in caplog.records)


def test_cuda_keeps_its_autocast() -> None:
    assert choose_precision("auto", "cuda").name == "bf16"
    assert choose_precision("auto", "cuda", cuda_autocast="fp16").name == "fp16"
    assert choose_precision("fp32", "cuda").name == "fp32"
    assert resolve_compile("auto", torch.device("cuda")) == "eager"
    assert resolve_compile("auto", torch.device("cpu")) == "jit"


def test_unknown_settings_name_the_key_and_the_allowed_values() -> None:
    with pytest.raises(PrecisionError, match=r"selfplay.precision must be one of auto, fp32, bf16, got 'fp16'"):
        check_precision("selfplay.precision", "fp16")
    with pytest.raises(ValueError, match="precision must be one of"):
        NetEvaluator(AlphaZeroNet(NetConfig.preset("tiny")), precision="int4")
    with pytest.raises(ValueError, match="compile must be one of auto, eager, jit, inductor, onnxruntime, got 'fast'"):
        NetEvaluator(AlphaZeroNet(NetConfig.preset("tiny")), compile="fast")


def test_a_failed_compilation_falls_back_to_the_eager_net(monkeypatch, caplog) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("tracer exploded")

    monkeypatch.setattr(torch.jit, "trace", broken)
    net = fold_for_inference(AlphaZeroNet(NetConfig.preset("tiny")))
    with caplog.at_level(logging.WARNING, logger="models.inference_net"):
        compiled = compile_for_inference(net, "jit", torch.zeros(4, 119, 8, 8))
    assert compiled.mode == "eager" and compiled.requested == "jit"
    assert "tracer exploded" in compiled.fallback
    assert any("compile=jit failed" in record.getMessage() for record in caplog.records)
    logits, values = compiled(torch.zeros(3, 119, 8, 8))
    assert logits.shape == (3, 4672) and values.shape == (3,)


def test_training_precision_auto() -> None:
    expected = "bf16-mixed" if cpu_bf16_support() else "32-true"
    assert resolve_training_precision("auto", "cpu") == expected
    assert resolve_training_precision("32-true", "cpu") == "32-true"


@pytest.mark.parametrize(("value_head", "soft_policy"), [("scalar", False), ("wdl", False), ("wdl", True)])
def test_folded_and_traced_nets_give_the_eager_policy_and_value(value_head: str, soft_policy: bool) -> None:
    """A net with non-trivial batch-norm statistics, folded (eager) and traced
    (jit): the legal logits and the values (a WDL head's W - L) of the net
    (a soft-policy output, which only training reads, changes neither)."""
    torch.manual_seed(0)
    net = AlphaZeroNet(NetConfig.preset("tiny", value_head=value_head, soft_policy=soft_policy))
    with torch.no_grad():
        for module in net.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.2, 3.0)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.3, 0.3)
    net.eval()
    boards = _positions(12, seed=3)
    planes = torch.from_numpy(np.stack([encode_board(board) for board in boards]))
    with torch.inference_mode():
        ref_logits, ref_values = net(planes)
    policy_map = get_policy_map("az4672")
    want = [
        ref_logits[row, policy_map.indices(board, list(board.legal_moves))].numpy()
        for row, board in enumerate(boards)
    ]
    for mode in ("eager", "jit"):
        evaluator = NetEvaluator(net, compile=mode, calibration_batch=8)
        assert evaluator.compiled.mode == mode
        logits, values = _outputs(evaluator, boards)
        np.testing.assert_allclose(
            np.concatenate(logits), np.concatenate(want), atol=1e-4, rtol=1e-4
        )
        np.testing.assert_allclose(values, ref_values.numpy(), atol=1e-5)
