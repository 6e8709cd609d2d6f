"""Post-training int8 quantization of the exported inference net (ONNX Runtime),
and how far a reduced-precision net's outputs are from float32's.

:func:`quantize_onnx_int8` turns an ONNX file written by
:func:`pipeline.export.export_onnx` into a statically quantized one
(``onnxruntime.quantization.quantize_static``, QDQ format, per-channel int8
weights, activation ranges calibrated with MinMax on real positions).  What it
leaves in float32, and why:

* the input-scale ``Mul`` (planes 113 and 118 times 1/255 and 1/100): its
  input holds raw plane values (0/1 bits next to counts up to 255), which one
  8-bit scale cannot hold both of (a 1 would become ~1.2); after the ``Mul``
  everything lies in [0, 1] and quantizes exactly to 1/255 steps;
* the two output layers (:func:`head_output_nodes`: the policy head's 1x1
  convolution and the value head's last ``Gemm``): quantizing their outputs
  would round the policy logits to 256 levels over their whole range (ties
  among the best moves) and the value before ``tanh``; they are a few
  percent of the multiply-adds.

:func:`agreement` compares two sets of outputs on the legal moves of the
same positions (top-1 move, total variation of the legal-move softmax,
value difference); :data:`TOP1_MIN` and :data:`VALUE_DELTA_MAX` are the
thresholds a reduced format must meet (issue 20) before ``auto`` may use it.
"""

from __future__ import annotations

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


def _float_nodes(model: Any, keep_heads_float: bool) -> list[str]:
    """Nodes quantize_static must leave in float32 (see the module docstring)."""
    mul = [node.name for node in model.graph.node if node.op_type == "Mul"]
    return mul + (head_output_nodes(model) if keep_heads_float else [])


def quantize_onnx_int8(
    fp32_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    calibration: npt.ArrayLike,
    *,
    keep_heads_float: bool = True,
    activation: str = "QUInt8",
    reduce_range: bool = False,
) -> Path:
    """Write the static int8 quantization of the ONNX file ``fp32_path`` to
    ``out_path`` (QDQ, per-channel signed int8 weights, MinMax ranges of
    ``activation`` activations, ``QUInt8`` or ``QInt8``, from ``calibration``:
    raw planes ``[N, 119, 8, 8]`` of real positions, a few hundred suffice).

    Raises:
        ImportError: ``onnx`` or ``onnxruntime`` is missing.
    """
    import onnx
    from onnxruntime import quantization as q

    model = onnx.load(os.fspath(fp32_path))
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
        nodes_to_exclude=_float_nodes(model, keep_heads_float),
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
