"""The network behind the search: both evaluation protocols.

* ``evaluate_batch(planes, rows, indices)`` (the native core's
  :class:`~models.native_tree.BatchEvaluator`): the core hands over the
  ``(N, 119, 8, 8)`` uint8 planes of a batch of leaves and, for every legal
  move of every leaf, the leaf's row and the move's policy index.  One forward
  pass, the logits of those moves gathered with one ``take`` over the flat
  logits, and the raw logits and values go back as float32 arrays; the core
  applies each leaf's softmax.  No Python object per leaf or per move.
* ``evaluate(leaves)`` (the python search's
  :class:`~models.evaluation.Evaluator`): the leaves are encoded here, and the
  priors are the softmax over each leaf's legal moves.

A net with a WDL or a moves-left head also hands the search each leaf's
auxiliary outputs (:func:`models.inference_net.has_aux`): ``aux [N, 2]``, the
draw probability of the WDL head (0 for a scalar head) and the plies left of
the moves-left head (0 without one); a scalar net without the head returns
``(logits, values)`` as before.

The forward runs a copy of the network prepared for inference
(:func:`models.inference_net.fold_for_inference`: batch norm and the input
scale folded into the convolutions, channels-last), optionally traced and
frozen or compiled (``compile``), in the number format ``precision`` resolves
to (:mod:`models.precision`: float32, or bf16/fp16 autocast).  On CUDA the
planes travel from pinned memory without blocking.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np
import torch

from models.evaluation import Leaf, encode_leaves
from models.evaluation import LeafEvaluation
from models.inference_net import (
    COMPILE_MODES,
    AuxOutputs,
    CompiledNet,
    compile_for_inference,
    fold_for_inference,
    has_aux,
)
from models.net import INPUT_PLANES, AlphaZeroNet
from models.policy import get_policy_map
from models.precision import PrecisionChoice, check_precision, choose_precision

log = logging.getLogger(__name__)

CALIBRATION_BATCH = 256
"""Batch size of the start-up calibration (``precision: auto`` on a CPU with
native bf16) and of the example a compiled graph is built from."""


class NetEvaluator:
    """Evaluates leaves with an :class:`AlphaZeroNet` on its device.

    Args:
        net: the network; it is put in eval mode and is not changed (the
            evaluator runs its own folded copy: weights loaded into ``net``
            later do not reach it).
        channels_last: use the channels-last memory format (faster on CPU and
            with cuDNN's tensor-core kernels).
        precision: ``fp32`` (the default here: tests and reproducible runs),
            ``bf16`` or ``auto`` (:func:`models.precision.choose_precision`).
        compile: ``eager`` (the default here), ``jit``, ``inductor`` or ``auto``
            (:func:`models.inference_net.compile_for_inference`); a failed
            compilation falls back to ``eager`` with a warning.
        autocast: what ``precision: auto`` means on CUDA: ``"bf16"`` (the
            default), ``"fp16"``, or ``None`` for float32.
        calibration_batch: batch size of the calibration and compile example.
    """

    needs_planes = True

    def __init__(
        self,
        net: AlphaZeroNet,
        channels_last: bool = True,
        precision: str = "fp32",
        compile: str = "eager",  # noqa: A002 - the setting's name
        autocast: str | None = "bf16",
        calibration_batch: int = CALIBRATION_BATCH,
    ) -> None:
        if autocast not in (None, "bf16", "fp16"):
            raise ValueError(f"autocast must be None, 'bf16' or 'fp16', got {autocast!r}")
        check_precision("precision", precision)
        if compile not in COMPILE_MODES:
            raise ValueError(f"compile must be one of {', '.join(COMPILE_MODES)}, got {compile!r}")
        self.net = net.eval()
        self.device = next(net.parameters()).device
        self.policy_encoding = net.config.policy_encoding
        self.policy_map = get_policy_map(self.policy_encoding)
        self.policy_size = net.config.policy_size
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        self.aux = has_aux(net.config)
        folded = fold_for_inference(net).to(memory_format=self.memory_format)
        self.inference_net: AlphaZeroNet | AuxOutputs = AuxOutputs(folded) if self.aux else folded
        self.pin_memory = self.device.type == "cuda"
        example = self._prepare(np.zeros((calibration_batch, INPUT_PLANES, 8, 8), dtype=np.uint8))
        self.precision: PrecisionChoice = choose_precision(
            precision, self.device, self._calibration(example), cuda_autocast=autocast or "fp32"
        )
        self.autocast_dtype = self.precision.autocast_dtype
        with self._autocast():
            self.compiled: CompiledNet = compile_for_inference(self.inference_net, compile, example)
        self.positions = 0
        self.calls = 0

    def describe(self) -> str:
        """One line for logs and status screens: precision, compile mode, why."""
        compiled = self.compiled.mode + (f" (asked {self.compiled.requested}: {self.compiled.fallback})"
                                         if self.compiled.fallback else "")  # fmt: skip
        return f"precision {self.precision.name}, compile {compiled}; {self.precision.reason}"

    def _autocast(self) -> torch.autocast:
        return torch.autocast(self.device.type, dtype=self.autocast_dtype or torch.bfloat16,
                              enabled=self.autocast_dtype is not None)  # fmt: skip

    def _prepare(self, planes: np.ndarray) -> torch.Tensor:
        """A ``(N, 119, 8, 8)`` uint8 batch as the float32 input of the folded
        network, in its memory format, on its device (one conversion)."""
        tensor = torch.from_numpy(planes)
        if self.pin_memory:
            tensor = tensor.pin_memory()
        tensor = tensor.to(self.device, non_blocking=True)
        return tensor.to(dtype=torch.float32, memory_format=self.memory_format)

    def _calibration(self, example: torch.Tensor) -> Callable[[torch.dtype | None], None]:
        def forward(dtype: torch.dtype | None) -> None:
            with torch.inference_mode(), torch.autocast(self.device.type, dtype=dtype or torch.bfloat16,
                                                        enabled=dtype is not None):  # fmt: skip
                self.inference_net(example)

        return forward

    def _forward(self, planes: np.ndarray) -> tuple[torch.Tensor, ...]:
        """Logits, values (and aux, see the module docstring) of a ``(N, 119,
        8, 8)`` uint8 batch (call under inference mode)."""
        tensor = self._prepare(planes)
        if self.autocast_dtype is None:
            return self.compiled(tensor)
        with self._autocast():
            return self.compiled(tensor)

    @torch.inference_mode()
    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Raw logits of the listed moves and values of the leaves (float32),
        as the native core's ``BatchEvaluator`` protocol asks, and the
        leaves' aux ``[N, 2]`` (draw probability, plies left) for a net with
        a WDL or moves-left head."""
        outputs = self._forward(np.ascontiguousarray(planes, dtype=np.uint8))
        logits, values = outputs[0], outputs[1]
        flat = np.asarray(rows, dtype=np.int64) * self.policy_size + np.asarray(indices, dtype=np.int64)
        picked = torch.take(logits, torch.from_numpy(flat).to(self.device, non_blocking=True))
        self.positions += len(planes)
        self.calls += 1
        if self.aux:
            return _float32_numpy(picked), _float32_numpy(values.reshape(-1)), _float32_numpy(outputs[2])
        return _float32_numpy(picked), _float32_numpy(values.reshape(-1))

    @torch.inference_mode()
    def evaluate(self, leaves: Sequence[Leaf]) -> list[LeafEvaluation]:
        counts = [len(leaf.moves) for leaf in leaves]
        indices = np.concatenate([self.policy_map.indices(leaf.board, leaf.moves) for leaf in leaves])
        rows = np.repeat(np.arange(len(leaves)), counts)
        outputs = self.evaluate_batch(encode_leaves(leaves), rows, indices)
        picked_np, values_np = outputs[0], outputs[1]
        aux = outputs[2].astype(np.float64) if len(outputs) == 3 else None  # type: ignore[misc]
        results: list[LeafEvaluation] = []
        offset = 0
        for row, (count, value) in enumerate(zip(counts, values_np.astype(np.float64))):
            segment = picked_np[offset : offset + count].astype(np.float64)
            offset += count
            segment = np.exp(segment - segment.max())
            priors = segment / segment.sum()
            if aux is None:
                results.append((priors, float(value)))
            else:
                results.append((priors, float(value), (float(aux[row, 0]), float(aux[row, 1]))))
        return results


def _float32_numpy(tensor: torch.Tensor) -> np.ndarray:
    """A float32 numpy array of ``tensor`` (no copy for a float32 CPU tensor)."""
    if tensor.dtype != torch.float32:
        tensor = tensor.float()
    return tensor.cpu().numpy()
