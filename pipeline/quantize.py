"""Post-training int8 quantization of the exported inference net (ONNX Runtime),
and how far a reduced-precision net's outputs are from float32's.

:func:`quantize_onnx_int8` turns an ONNX file written by
:func:`pipeline.export.export_onnx` into a statically quantized one
(``onnxruntime.quantization.quantize_static``, QDQ format, uint8
activations with MinMax ranges calibrated on real positions, per-channel
int8 weights).  Choices, measured with ``bench/int8.py`` on an AVX2 CPU:

* uint8 activations x int8 weights (U8S8) is the combination ONNX Runtime's
  x86 kernels are fast at; int8 activations (S8S8) ran ~1.4x *slower* than
  float32 there;
* ``reduce_range`` (weights in 7 bits) is on by default: without VNNI the
  U8S8 kernels multiply with ``VPMADDUBSW``, whose 16-bit pair sums saturate
  with full-range weights (ONNX Runtime's own advice for AVX2/AVX512 CPUs);
  it lowered the value error and made top-1 agreement steadier at no cost
  in speed;
* the input-scale ``Mul`` (planes 113 and 118 times 1/255 and 1/100) stays
  float: its input holds raw plane values (0/1 bits next to counts up to
  255), which one 8-bit scale cannot hold both of (a 1 would become ~1.2);
  after the ``Mul`` everything lies in [0, 1] and quantizes to 1/255 steps;
* the policy's output convolution (:func:`head_output_nodes`) stays float:
  quantizing its output would round the logits to 256 levels over their
  whole range, i.e. ties among the best moves;
* the whole value head (:func:`branch_nodes`, ``float_value_head``) stays
  float: a few percent of the multiply-adds, no measurable speed cost, and
  a smaller value error on narrow nets.

:func:`agreement` compares two sets of outputs on the legal moves of the
same positions (top-1 move, total variation of the legal-move softmax,
value difference); :data:`TOP1_MIN` and :data:`VALUE_DELTA_MAX` are the
thresholds a reduced format must meet (issue 20) before ``auto`` may use it.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "TOP1_MIN",
    "VALUE_DELTA_MAX",
    "Agreement",
    "PlanesReader",
    "agreement",
    "head_output_nodes",
    "ort_outputs",
    "ort_session",
    "quantize_onnx_int8",
]

TOP1_MIN = 0.97
"""Least share of positions whose best legal move must equal float32's."""

VALUE_DELTA_MAX = 0.01
"""Largest accepted mean ``|value - value_fp32|``."""

QUANTIZED_OPS = ("Conv", "Gemm", "Relu", "Add")
"""Op types quantized (``Mul``, the input scale, is left in float32)."""

PASS_THROUGH_OPS = frozenset({"Flatten", "Reshape", "Squeeze", "Unsqueeze", "Tanh", "Identity"})
"""Ops :func:`head_output_nodes` looks through on its way up from an output."""

COMPUTE_OPS = frozenset({"Conv", "Gemm", "MatMul"})
"""Ops whose weights make an output layer."""

Array = npt.NDArray[np.float32]


class PlanesReader:
    """Calibration data for ``quantize_static``: ``planes`` (raw plane values,
    ``[N, 119, 8, 8]``) as float32 batches of ``batch`` under ``input_name``.

    Implements ONNX Runtime's ``CalibrationDataReader`` protocol
    (``get_next`` returns one feed dict, then None when exhausted).
    """

    def __init__(self, planes: npt.ArrayLike, input_name: str = "planes", batch: int = 64) -> None:
        data = np.asarray(planes, dtype=np.float32)
        self._batches: Iterator[dict[str, Array]] = iter(
            [{input_name: data[i : i + batch]} for i in range(0, len(data), batch)]
        )

    def get_next(self) -> dict[str, Array] | None:
        """The next feed, or None when all batches have been read."""
        return next(self._batches, None)

    def __iter__(self) -> PlanesReader:
        return self

    def __next__(self) -> dict[str, Array]:
        feed = self.get_next()
        if feed is None:
            raise StopIteration
        return feed


def _producers(graph: Any) -> dict[str, Any]:
    """Map from tensor name to the node that writes it."""
    return {out: node for node in graph.node for out in node.output}


def head_output_nodes(model: Any) -> list[str]:
    """Names of the nodes computing each graph output: from each output walk
    up through :data:`PASS_THROUGH_OPS` to the first ``Conv``/``Gemm``/``MatMul``."""
    producers = _producers(model.graph)
    names = []
    for output in model.graph.output:
        node = producers.get(output.name)
        while node is not None and node.op_type in PASS_THROUGH_OPS:
            node = producers.get(node.input[0])
        if node is not None and node.op_type in COMPUTE_OPS:
            names.append(node.name)
    return names


def branch_nodes(model: Any, output: str) -> list[str]:
    """Names of the nodes that only the graph output ``output`` depends on:
    from its producer up to (not including) the first tensor that another
    node also reads (for a net's value output: the whole value head)."""
    producers = _producers(model.graph)
    readers: dict[str, int] = {}
    for node in model.graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1
    names, node = [], producers.get(output)
    while node is not None:
        names.append(node.name)
        activations = [
            name
            for name in node.input
            if name in producers and producers[name].op_type != "Constant"
        ]
        if len(activations) != 1 or readers.get(activations[0], 0) != 1:
            break
        node = producers[activations[0]]
    return names


def _float_nodes(model: Any, keep_heads_float: bool, float_value_head: bool) -> list[str]:
    """Nodes quantize_static must leave in float32 (see the module docstring)."""
    names = [node.name for node in model.graph.node if node.op_type == "Mul"]
    if keep_heads_float:
        names += head_output_nodes(model)
    if float_value_head:
        names += branch_nodes(model, model.graph.output[-1].name)
    return sorted(set(names))


@contextlib.contextmanager
def _quiet_root_logger() -> Iterator[None]:
    """Raise the root logger to ERROR for the block (ONNX Runtime's
    quantization logs its advice there), then restore its level."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        root.setLevel(level)


def quantize_onnx_int8(
    fp32_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    calibration: npt.ArrayLike,
    *,
    keep_heads_float: bool = True,
    activation: str = "QUInt8",
    reduce_range: bool = True,
    float_value_head: bool = True,
) -> Path:
    """Write the static int8 quantization of the ONNX file ``fp32_path`` to
    ``out_path`` (QDQ, per-channel signed int8 weights, MinMax ranges of
    ``activation`` activations, ``QUInt8`` or ``QInt8``, from ``calibration``:
    raw planes ``[N, 119, 8, 8]`` of real positions, a few hundred suffice).
    ``keep_heads_float`` leaves the two output layers float,
    ``float_value_head`` the whole value head, ``reduce_range`` quantizes the
    weights to 7 bits (see the module docstring for each).

    Raises:
        ImportError: ``onnx`` or ``onnxruntime`` is missing.
    """
    import onnx
    from onnxruntime import quantization as q

    model = onnx.load(os.fspath(fp32_path))
    with _quiet_root_logger():  # "consider pre-processing": the exporter's graph needs none
        q.quantize_static(
            model,
            os.fspath(out_path),
            PlanesReader(calibration, model.graph.input[0].name),
            quant_format=q.QuantFormat.QDQ,
            op_types_to_quantize=list(QUANTIZED_OPS),
            per_channel=True,
            reduce_range=reduce_range,
            activation_type=getattr(q.QuantType, activation),
            weight_type=q.QuantType.QInt8,
            nodes_to_exclude=_float_nodes(model, keep_heads_float, float_value_head),
            calibrate_method=q.CalibrationMethod.MinMax,
        )
    return Path(out_path)


def ort_session(path: str | os.PathLike[str], threads: int = 0) -> Any:
    """A CPU ``onnxruntime.InferenceSession`` for ``path`` with ``threads``
    intra-op threads (0: ONNX Runtime's default) and one inter-op thread."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return onnxruntime.InferenceSession(
        os.fspath(path), options, providers=["CPUExecutionProvider"]
    )


def ort_outputs(session: Any, planes: npt.ArrayLike) -> tuple[Array, Array]:
    """``(policy logits, values)`` of ``session`` on raw ``planes``."""
    feed = {session.get_inputs()[0].name: np.asarray(planes, dtype=np.float32)}
    policy, value = session.run(None, feed)
    return policy, value


@dataclass(frozen=True)
class Agreement:
    """How a variant's outputs compare with the float32 reference's.

    Attributes:
        positions: positions compared.
        top1: share whose best legal move (highest logit) is the reference's.
        tv_mean, tv_max: total variation distance between the two softmaxes
            over the legal moves (0: same, 1: disjoint), mean and largest.
        value_mean, value_max: ``|value - value_ref|``, mean and largest.
    """

    positions: int
    top1: float
    tv_mean: float
    tv_max: float
    value_mean: float
    value_max: float

    def holds(self, top1_min: float = TOP1_MIN, value_max: float = VALUE_DELTA_MAX) -> bool:
        """Whether top-1 agreement and mean value difference meet the thresholds."""
        return self.top1 >= top1_min and self.value_mean <= value_max

    def line(self) -> str:
        """One line for a report."""
        return (
            f"top1 {self.top1:.4f}  TV mean {self.tv_mean:.4f} max {self.tv_max:.4f}  "
            f"|dv| mean {self.value_mean:.4f} max {self.value_max:.4f}  "
            f"(n={self.positions}) -> {'holds' if self.holds() else 'FAILS'}"
        )


def _legal_softmax(logits: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    shifted = np.exp(logits.astype(np.float64) - logits.max())
    return shifted / shifted.sum()


def _compare_one(ref: npt.NDArray[Any], got: npt.NDArray[Any]) -> tuple[bool, float]:
    """(same best move, total variation) for one position's legal logits."""
    same = int(np.argmax(ref)) == int(np.argmax(got))
    return same, 0.5 * float(np.abs(_legal_softmax(ref) - _legal_softmax(got)).sum())


def agreement(
    ref: tuple[npt.ArrayLike, npt.ArrayLike],
    got: tuple[npt.ArrayLike, npt.ArrayLike],
    legal: Sequence[npt.NDArray[np.int64]],
) -> Agreement:
    """Compare ``got`` = (policy logits, values) with the reference ``ref``
    on positions whose legal-move policy indices are ``legal`` (one array
    per position, non-empty).

    Raises:
        ValueError: the shapes or the number of positions differ.
    """
    ref_policy, got_policy = np.asarray(ref[0]), np.asarray(got[0])
    ref_value, got_value = np.asarray(ref[1]).reshape(-1), np.asarray(got[1]).reshape(-1)
    if ref_policy.shape != got_policy.shape or len(ref_policy) != len(legal):
        raise ValueError(
            f"policy shapes {ref_policy.shape} and {got_policy.shape} for {len(legal)} positions"
        )
    pairs = [_compare_one(r[idx], g[idx]) for r, g, idx in zip(ref_policy, got_policy, legal)]
    tv = np.array([p[1] for p in pairs])
    dv = np.abs(got_value.astype(np.float64) - ref_value)
    return Agreement(
        positions=len(legal),
        top1=float(np.mean([p[0] for p in pairs])),
        tv_mean=float(tv.mean()),
        tv_max=float(tv.max()),
        value_mean=float(dv.mean()),
        value_max=float(dv.max()),
    )
