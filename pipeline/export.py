"""Export an :class:`~models.net.AlphaZeroNet` to ONNX, for ONNX Runtime and
other inference engines (``zerochess export --onnx``).

The file's graph:

* input ``planes``: ``float32 [batch, 119, 8, 8]``, the encoder's raw
  ``uint8`` plane values (:mod:`models.encoding`) cast to float, *not*
  scaled: the multiplication of the two count planes (ply count, plane 113,
  by 1/255; no-progress clock, plane 118, by 1/100; the net's
  ``input_scale`` buffer) is inside the graph;
* output ``policy``: ``float32 [batch, policy_size]``, raw logits (no
  softmax) in the net's policy encoding: for ``az4672`` index
  ``plane * 64 + rank * 8 + file`` (73 move planes, squares from the side to
  move's view), for ``lc0_1858`` lc0's 1858 moves;
* output ``value``: ``float32 [batch]`` in ``[-1, 1]`` from the side to
  move's view: the ``tanh`` of a scalar value head, or ``P(win) - P(loss)``
  of a win/draw/loss head (``net.value_head: wdl``; the three probabilities
  are not an output: the graph keeps the two outputs every consumer reads).

``batch`` is a dynamic axis.  Batch norm is folded into the convolutions
first (:func:`fold_batch_norm`), so the graph holds no BatchNormalization.
The model's ``metadata_props`` hold ``format`` (:data:`ONNX_FORMAT`),
``net_config`` (the JSON of :meth:`models.net.NetConfig.to_dict`, with the
policy encoding), ``policy_encoding``, ``policy_size``, ``input`` and
``outputs``.

Exporter: torch's TorchScript-based exporter, ``torch.onnx.export(...,
dynamo=False)`` (:data:`EXPORTER`).  It is deprecated since torch 2.9 but
still present in 2.13; it needs no package besides ``onnx`` (used here to add
the metadata), works offline, takes well under a second for these nets,
writes a dynamic batch axis through ``dynamic_axes`` and writes opsets 7 to
23 as asked.  The ``torch.export``-based exporter (``dynamo=True``, torch's
default) also works offline but needs ``onnxscript``; tried with torch 2.13
and onnxscript 0.7.2, it took ~11 s for the tiny net, printed progress and,
asked for opset 17, failed to convert its opset-18 graph down (printing a
traceback) and wrote opset 18.  Should a later torch drop the TorchScript
exporter, switch :func:`models.inference_net.onnx_bytes` to ``dynamo=True`` with
``dynamic_shapes={"planes": {0: torch.export.Dim("batch")}}`` and
``.model_proto``, and add ``onnxscript`` to the ``export`` extra.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from models.inference_net import ONNX_INPUT, ONNX_OUTPUTS, fold_batch_norm, onnx_bytes
from models.net import INPUT_PLANES, AlphaZeroNet
from pipeline.atomic import atomic_write, unwritable_reason

__all__ = [
    "DEFAULT_OPSET",
    "VERIFY_TOLERANCE",
    "EXPORTER",
    "INPUT_NAME",
    "ONNX_FORMAT",
    "OUTPUT_NAMES",
    "ExportError",
    "check_out_path",
    "export_onnx",
    "fold_batch_norm",
    "onnx_metadata",
    "onnxruntime_outputs",
    "sample_planes",
    "supported_opsets",
    "verify_onnx",
]

ONNX_FORMAT = "zerochess-onnx/1"
"""Value of the ``format`` metadata property of exported files."""

INPUT_NAME = ONNX_INPUT
"""Name of the graph's one input."""

OUTPUT_NAMES = ONNX_OUTPUTS
"""Names of the graph's outputs, in order."""

DEFAULT_OPSET = 17
"""ONNX opset exported by default (ONNX Runtime has run it since 1.11)."""

EXPORTER = "torchscript"
"""The torch exporter used (``torch.onnx.export(dynamo=False)``)."""

INPUT_DESCRIPTION = (
    f"{INPUT_NAME}: float32 [batch, {INPUT_PLANES}, 8, 8], the raw uint8 plane values "
    "cast to float (count planes 113 and 118 unscaled: the graph scales them)"
)
"""The ``input`` metadata property."""


VERIFY_TOLERANCE = 1e-3
"""Largest accepted ``|onnx - torch|`` of :func:`verify_onnx`, relative to
``max(1, max |torch output|)`` (folding and ONNX Runtime's kernels change the
float32 rounding, not the result)."""

MAX_SAMPLE_PLIES = 80
"""Random games of :func:`sample_planes` stop after at most this many plies."""


class ExportError(ValueError):
    """The network cannot be exported or the file cannot be written; the
    message names the file."""


_VALUE_OUTPUTS = {
    "scalar": "value: float32 [batch] tanh value for the side to move",
    "wdl": "value: float32 [batch] P(win) - P(loss) of the WDL head for the side to move",
}


# --------------------------------------------------------------------------
# ONNX export
# --------------------------------------------------------------------------


def onnx_metadata(net: AlphaZeroNet) -> dict[str, str]:
    """The ``metadata_props`` written into the file: format tag, the net's
    config as JSON, its policy encoding and size, and the input's meaning."""
    return {
        "format": ONNX_FORMAT,
        "net_config": json.dumps(net.config.to_dict(), sort_keys=True),
        "policy_encoding": net.config.policy_encoding,
        "policy_size": str(net.config.policy_size),
        "input": INPUT_DESCRIPTION,
        "outputs": "policy: float32 [batch, policy_size] raw logits; "
        + _VALUE_OUTPUTS[net.config.value_head],
    }


def _onnx_module() -> Any:
    """The ``onnx`` package, or an :class:`ExportError` saying how to install it."""
    try:
        import onnx
    except ImportError as error:
        raise ExportError(
            "exporting to ONNX needs the onnx package: pip install 'zerochess[export]'"
        ) from error
    return onnx


def supported_opsets() -> range:
    """The opsets torch's exporter writes (7 to 23 in torch 2.13), read from
    torch so that an unknown one is refused before the exporter starts (it
    prints its whole graph when it fails)."""
    try:
        from torch.onnx import _constants  # private, but there since torch 1.13
    except ImportError:
        return range(7, 24)
    low = getattr(_constants, "ONNX_MIN_OPSET", 7)
    return range(low, getattr(_constants, "ONNX_MAX_OPSET", 23) + 1)


def onnx_model_bytes(net: AlphaZeroNet, opset: int = DEFAULT_OPSET) -> bytes:
    """The ONNX file's bytes for ``net``: batch norm folded, float32 on CPU,
    metadata added, checked by ``onnx.checker``.

    Raises:
        ExportError: ``opset`` is not in :func:`supported_opsets`, ``onnx``
            is missing, or the exporter or checker failed.
        TypeError: ``net`` is not an :class:`~models.net.AlphaZeroNet`.
    """
    opsets = supported_opsets()
    if opset not in opsets:
        raise ExportError(
            f"ONNX opset {opset} is not supported: use {opsets.start} to {opsets.stop - 1}"
        )
    onnx = _onnx_module()
    folded = fold_batch_norm(net).to(device="cpu", dtype=torch.float32)
    try:
        model = onnx.load_from_string(onnx_bytes(folded, opset))
        onnx.helper.set_model_props(model, onnx_metadata(net))
        onnx.checker.check_model(model)
    except (RuntimeError, ValueError, onnx.checker.ValidationError) as error:
        raise ExportError(f"ONNX export (opset {opset}) failed: {error}") from error
    return model.SerializeToString()


def check_out_path(out_path: str | os.PathLike[str]) -> Path:
    """``out_path`` as a ``Path`` if an ONNX file can be written there: not a
    folder, and its nearest existing parent is a writable folder.

    Raises:
        ExportError: naming ``out_path`` and what is in the way.
    """
    target = Path(out_path)
    if target.is_dir():
        raise ExportError(
            f"{target}: is a folder; give the ONNX file's path, e.g. {target / 'net.onnx'}"
        )
    reason = unwritable_reason(target.absolute().parent)
    if reason is not None:
        raise ExportError(f"{target}: cannot write the ONNX file ({reason})")
    return target


def export_onnx(
    net: AlphaZeroNet, out_path: str | os.PathLike[str], opset: int = DEFAULT_OPSET
) -> Path:
    """Write ``net`` as an ONNX file at ``out_path`` (see the module's
    docstring for the graph); return the path.

    The write is atomic (:func:`pipeline.atomic.atomic_write`: a temp file in
    the same folder, fsync, ``os.replace``): an existing file at ``out_path``
    is replaced whole or left as it was.  Parent folders are created.

    Raises:
        ExportError: ``out_path`` is a folder or cannot be written (checked
            first, :func:`check_out_path`; the message names it), ``onnx`` is
            missing, or the export failed.
    """
    target = check_out_path(out_path)
    data = onnx_model_bytes(net, opset)
    try:
        with atomic_write(target) as handle:
            handle.write(data)
    except OSError as error:
        reason = error.strerror or error
        raise ExportError(f"{target}: cannot write the ONNX file ({reason})") from error
    return target


# --------------------------------------------------------------------------
# Verification with ONNX Runtime
# --------------------------------------------------------------------------


def sample_planes(count: int, seed: int = 0) -> npt.NDArray[np.uint8]:
    """Input planes ``uint8 [count, 119, 8, 8]`` of positions reached by
    random legal moves from the start (0 to :data:`MAX_SAMPLE_PLIES` plies,
    both sides to move, repetitions and counters as in play); the same for
    the same ``seed``.

    Raises:
        ValueError: ``count`` < 1.
    """
    import random

    import chess

    from models.encoding import encode_board

    if count < 1:
        raise ValueError(f"sample_planes needs count >= 1, got {count}")
    rng = random.Random(seed)
    planes = []
    for _ in range(count):
        board = chess.Board()
        for _ in range(rng.randint(0, MAX_SAMPLE_PLIES)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        planes.append(encode_board(board))
    return np.stack(planes)


def onnxruntime_outputs(
    path: str | os.PathLike[str], planes: npt.ArrayLike
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """``(policy, value)`` of the ONNX file at ``path`` run by ONNX Runtime
    (CPU) on ``planes`` (raw plane values, cast to float32 here).

    Raises:
        ExportError: ``onnxruntime`` is missing or cannot load or run the file.
    """
    try:
        import onnxruntime
    except ImportError as error:
        raise ExportError(
            "checking the ONNX file needs onnxruntime: pip install 'zerochess[export]'"
        ) from error
    inputs = {INPUT_NAME: np.asarray(planes, dtype=np.float32)}
    try:
        session = onnxruntime.InferenceSession(os.fspath(path), providers=["CPUExecutionProvider"])
        policy, value = session.run(list(OUTPUT_NAMES), inputs)
    except Exception as error:  # onnxruntime raises its own (non-ValueError) exception types
        raise ExportError(
            f"{os.fspath(path)}: ONNX Runtime cannot run the file ({error})"
        ) from error
    return policy, value


def verify_onnx(
    path: str | os.PathLike[str], net: AlphaZeroNet, planes: npt.ArrayLike
) -> tuple[float, float]:
    """Run the ONNX file at ``path`` and ``net`` (eval mode, CPU, float32) on
    ``planes``; return the largest ``|onnx - torch|`` of the policy logits and
    of the values.

    Raises:
        ExportError: ONNX Runtime cannot run the file, the outputs' shapes
            differ, or a difference exceeds :data:`VERIFY_TOLERANCE` (relative
            to ``max(1, max |torch output|)``); the message names the file.
    """
    batch = np.asarray(planes)
    reference = copy.deepcopy(net).to(device="cpu", dtype=torch.float32).eval()
    with torch.no_grad():
        policy_ref, value_ref = (t.numpy() for t in reference(torch.from_numpy(batch)))
    policy, value = onnxruntime_outputs(path, batch)
    diffs = []
    for name, got, want in (("policy", policy, policy_ref), ("value", value, value_ref)):
        if got.shape != want.shape:
            raise ExportError(
                f"{os.fspath(path)}: ONNX {name} has shape {got.shape}, torch {want.shape}"
            )
        diff = float(np.max(np.abs(got - want)))
        if not diff <= VERIFY_TOLERANCE * max(1.0, float(np.max(np.abs(want)))):
            raise ExportError(
                f"{os.fspath(path)}: ONNX {name} differs from torch by {diff:.3g} "
                f"(tolerance {VERIFY_TOLERANCE:g} relative)"
            )
        diffs.append(diff)
    return diffs[0], diffs[1]
