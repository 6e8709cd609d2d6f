"""int8 post-training quantization (pipeline.quantize) of the exported net.

The agreement test trains a tiny net briefly on the synthetic targets of
``bench/int8.py`` (a fixed move preference, material as value: it only makes
the outputs peaked), quantizes its ONNX export with real-game calibration
positions and compares it with the float32 net on positions of other games,
against issue 20's thresholds.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from models.net import NetConfig
from pipeline.export import export_onnx
from pipeline.quantize import (
    TOP1_MIN,
    VALUE_DELTA_MAX,
    PlanesReader,
    agreement,
    branch_nodes,
    head_output_nodes,
    ort_outputs,
    ort_session,
    quantize_onnx_int8,
)

@pytest.fixture(scope="module")
def bench(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("int8")


@pytest.fixture(scope="module")
def quantized(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A briefly trained tiny net, its fp32 and int8 ONNX files, and the
    game positions (with legal moves) to compare them on."""
    folder = tmp_path_factory.mktemp("int8")
    net = bench.train_synthetic(NetConfig.preset("tiny"), steps=150, positions=1024)
    fp32 = export_onnx(net, folder / "fp32.onnx")
    calibration = bench.encode(bench.game_boards(range(40), 256, seed=1))
    int8 = quantize_onnx_int8(fp32, folder / "int8.onnx", calibration)
    boards = bench.game_boards(range(200, 240), 512, seed=2)
    return {
        "net": net,
        "fp32": fp32,
        "int8": int8,
        "planes": bench.encode(boards),
        "legal": bench.legal_indices(boards),
        "bench": bench,
    }


def test_int8_agrees_with_fp32_within_issue_thresholds(quantized: dict[str, Any]) -> None:
    bench = quantized["bench"]
    reference = bench.torch_fp32_runner(quantized["net"])(quantized["planes"])
    session = ort_session(quantized["int8"], threads=2)
    result = agreement(reference, ort_outputs(session, quantized["planes"]), quantized["legal"])
    assert result.positions == 512
    assert result.top1 >= TOP1_MIN, result.line()
    assert result.value_mean <= VALUE_DELTA_MAX, result.line()
    assert result.holds()
    assert 0.0 < result.tv_mean < 0.05  # int8 is not a copy of fp32, and close


def test_trained_net_is_peaked(quantized: dict[str, Any]) -> None:
    """The synthetic training makes top-1 agreement meaningful: the best
    legal move's probability is well above uniform (~1/30)."""
    bench = quantized["bench"]
    boards = bench.game_boards(range(200, 210), 64, seed=3)
    assert bench.peakedness(bench.torch_fp32_runner(quantized["net"]), boards) > 0.2


def test_fp32_onnx_agrees_exactly_enough(quantized: dict[str, Any]) -> None:
    bench = quantized["bench"]
    reference = bench.torch_fp32_runner(quantized["net"])(quantized["planes"])
    got = ort_outputs(ort_session(quantized["fp32"], threads=1), quantized["planes"])
    result = agreement(reference, got, quantized["legal"])
    assert result.top1 == 1.0 and result.value_max < 1e-4 and result.tv_max < 1e-4


def test_quantized_graph_leaves_input_scale_and_outputs_float(quantized: dict[str, Any]) -> None:
    model = onnx.load(quantized["int8"])
    ops = [node.op_type for node in model.graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    producers = {out: node for node in model.graph.node for out in node.output}
    mul = next(node for node in model.graph.node if node.op_type == "Mul")
    assert all(
        producers[name].op_type != "DequantizeLinear" for name in mul.input if name in producers
    )
    for name in head_output_nodes(onnx.load(quantized["fp32"])):
        node = next(n for n in model.graph.node if n.name == name)
        weight = node.input[1]
        assert weight not in producers or producers[weight].op_type != "DequantizeLinear", name
    assert [i.name for i in model.graph.input] == ["planes"]
    assert [o.name for o in model.graph.output] == ["policy", "value"]


def test_head_output_and_branch_nodes(quantized: dict[str, Any]) -> None:
    model = onnx.load(quantized["fp32"])
    kinds = {n.name: n.op_type for n in model.graph.node}
    heads = head_output_nodes(model)
    assert [kinds[name] for name in heads] == ["Conv", "Gemm"]
    value = branch_nodes(model, "value")
    assert heads[1] in value and sum(kinds[n] == "Conv" for n in value) == 1
    assert sum(kinds[n] == "Gemm" for n in value) == 2


def test_planes_reader_batches_as_float32() -> None:
    planes = np.ones((130, 119, 8, 8), dtype=np.uint8)
    feeds = list(PlanesReader(planes, batch=64))
    assert [f["planes"].shape[0] for f in feeds] == [64, 64, 2]
    assert all(f["planes"].dtype == np.float32 for f in feeds)
    reader = PlanesReader(planes[:1])
    assert reader.get_next() is not None and reader.get_next() is None


def test_agreement_metrics_by_hand() -> None:
    policy = np.zeros((2, 8), dtype=np.float32)
    policy[0, 1], policy[1, 3] = 5.0, 5.0
    legal = [np.array([1, 2]), np.array([2, 3, 4])]
    values = np.array([0.5, -0.5], dtype=np.float32)
    same = agreement((policy, values), (policy.copy(), values.copy()), legal)
    assert (same.top1, same.tv_max, same.value_max) == (1.0, 0.0, 0.0)
    swapped = policy.copy()
    swapped[0, 1], swapped[0, 2] = 0.0, 5.0
    other = agreement((policy, values), (swapped, values + np.float32(0.25)), legal)
    assert other.top1 == 0.5
    assert other.value_mean == pytest.approx(0.25) and other.value_max == pytest.approx(0.25)
    p = 1.0 / (1.0 + np.exp(-5.0))
    assert other.tv_max == pytest.approx(p - (1 - p), rel=1e-6)
    assert not other.holds()
    with pytest.raises(ValueError):
        agreement((policy, values), (policy[:1], values[:1]), legal)
