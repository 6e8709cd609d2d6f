"""The network behind the search: both evaluation protocols.

* ``evaluate_batch(planes, rows, indices)`` (the native core's
  :class:`~models.native_search.BatchEvaluator`): the core hands over the
  ``(N, 119, 8, 8)`` uint8 planes of a batch of leaves and, for every legal
  move of every leaf, the leaf's row and the move's policy index.  One forward
  pass, the logits of those moves gathered on the device with one indexing
  operation, and the raw logits and values go back as float32 arrays; the core
  applies each leaf's softmax.  No Python object per leaf or per move.
* ``evaluate(leaves)`` (the python search's
  :class:`~models.evaluation.Evaluator`): the leaves are encoded here, and the
  priors are the softmax over each leaf's legal moves.

On CUDA the forward runs under bf16 autocast by default (``autocast``), the
planes travel from pinned memory without blocking, and the net uses the
channels-last memory format.  On a CPU everything stays float32: bf16 is
20-35x slower there on AVX2 machines.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from models.evaluation import Leaf, encode_leaves
from models.net import AlphaZeroNet
from models.policy import get_policy_map


class NetEvaluator:
    """Evaluates leaves with an :class:`AlphaZeroNet` on its device.

    Args:
        net: the network; it is put in eval mode.
        channels_last: use the channels-last memory format (faster on CPU and
            with cuDNN's tensor-core kernels).
        autocast: ``"bf16"`` (the default) or ``"fp16"`` runs the forward under
            CUDA autocast in that precision; ``None`` keeps float32.  Ignored
            on a CPU, which always computes in float32.
    """

    needs_planes = True

    def __init__(self, net: AlphaZeroNet, channels_last: bool = True, autocast: str | None = "bf16") -> None:
        if autocast not in (None, "bf16", "fp16"):
            raise ValueError(f"autocast must be None, 'bf16' or 'fp16', got {autocast!r}")
        self.net = net.eval()
        self.device = next(net.parameters()).device
        self.policy_encoding = net.config.policy_encoding
        self.policy_map = get_policy_map(self.policy_encoding)
        self.memory_format = torch.channels_last if channels_last else torch.contiguous_format
        if channels_last:
            self.net.to(memory_format=torch.channels_last)
        cuda = self.device.type == "cuda"
        self.autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(autocast or "") if cuda else None
        self.pin_memory = cuda
        self.positions = 0
        self.calls = 0

    def _forward(self, planes: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and values of a ``(N, 119, 8, 8)`` uint8 batch (call under inference mode)."""
        tensor = torch.from_numpy(planes)
        if self.pin_memory:
            tensor = tensor.pin_memory()
        tensor = tensor.to(self.device, non_blocking=True).contiguous(memory_format=self.memory_format)
        if self.autocast_dtype is None:
            return self.net(tensor)
        with torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype):
            return self.net(tensor)

    @torch.inference_mode()
    def evaluate_batch(
        self, planes: np.ndarray, rows: np.ndarray, indices: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Raw logits of the listed moves and values of the leaves (float32),
        as the native core's ``BatchEvaluator`` protocol asks."""
        logits, values = self._forward(np.ascontiguousarray(planes, dtype=np.uint8))
        rows_t = torch.from_numpy(np.asarray(rows, dtype=np.int64)).to(self.device, non_blocking=True)
        indices_t = torch.from_numpy(np.asarray(indices, dtype=np.int64)).to(self.device, non_blocking=True)
        picked = logits[rows_t, indices_t].float().cpu().numpy()
        values_np = values.float().reshape(-1).cpu().numpy()
        self.positions += len(planes)
        self.calls += 1
        return picked, values_np

    @torch.inference_mode()
    def evaluate(self, leaves: Sequence[Leaf]) -> list[tuple[np.ndarray, float]]:
        logits, values = self._forward(encode_leaves(leaves))
        counts = [len(leaf.moves) for leaf in leaves]
        indices = np.concatenate([self.policy_map.indices(leaf.board, leaf.moves) for leaf in leaves])
        rows = np.repeat(np.arange(len(leaves)), counts)
        picked = logits[torch.from_numpy(rows).to(self.device), torch.from_numpy(indices).to(self.device)]
        picked_np = picked.float().cpu().numpy().astype(np.float64)
        values_np = values.float().reshape(-1).cpu().numpy().astype(np.float64)
        self.positions += len(leaves)
        self.calls += 1
        results = []
        offset = 0
        for count, value in zip(counts, values_np):
            segment = picked_np[offset : offset + count]
            offset += count
            segment = np.exp(segment - segment.max())
            results.append((segment / segment.sum(), float(value)))
        return results
